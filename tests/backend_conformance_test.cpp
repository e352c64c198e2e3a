// Delegate backends end to end: every fixture family exported with `--backend cpu` gives the
// undelegated program's logits (and the PyTorch reference's); a backend whose delegate produces
// its outputs in reversed internal order still binds them to the right program values; corrupt
// blobs and output maps are refused at load; random skip sets over a block with an in-place
// cache keep results exact; and the CLI shows backends, placement and honest QNN refusals.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "staticlm/backends/cpu/cpu_backend.h"
#include "staticlm/backends/cpu/cpu_blob.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/metadata.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/llm/contract.h"
#include "staticlm/partition/partitioner.h"
#include "staticlm/runtime/program.h"

#include "example_program.h"
#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

// Every runtime a test program may need: the cpu backend's, plus an extra one.
struct Runtimes {
  std::unique_ptr<KernelRegistry> kernels = std::make_unique<KernelRegistry>();
  std::unique_ptr<BackendRuntimeRegistry> backends = std::make_unique<BackendRuntimeRegistry>();

  explicit Runtimes(std::shared_ptr<const BackendRuntime> extra = nullptr) {
    EXPECT_TRUE(register_portable_kernels(*kernels).ok());
    auto cpu = CpuBackendRuntime::create();
    EXPECT_TRUE(cpu.ok());
    EXPECT_TRUE(backends->add(*cpu).ok());
    if (extra) {
      EXPECT_TRUE(backends->add(std::move(extra)).ok());
    }
  }
  LoadOptions load_options() const {
    LoadOptions load;
    load.kernels = kernels.get();
    load.backends = backends.get();
    load.num_threads = 2;
    return load;
  }
};

struct Session {
  std::unique_ptr<Runtimes> runtimes;
  std::unique_ptr<ContractRegistry> contracts;
  std::unique_ptr<Program> program;
  std::unique_ptr<LlmSession> session;
};

Result<Session> open_session(const std::string& path, std::shared_ptr<const BackendRuntime> extra = nullptr) {
  Session out;
  out.runtimes = std::make_unique<Runtimes>(std::move(extra));
  out.contracts = std::make_unique<ContractRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_contracts(*out.contracts));
  STATICLM_ASSIGN_OR_RETURN(out.program, Program::load(path, out.runtimes->load_options()));
  STATICLM_ASSIGN_OR_RETURN(const LlmContract* contract, out.contracts->select(out.program->file()));
  STATICLM_ASSIGN_OR_RETURN(out.session, contract->open(*out.program, SessionOptions{}));
  return out;
}

// The logits of every prompt token: the first 12 through prefill (a full chunk of 8 and a
// partial one), the rest through decode.
std::vector<float> run_prompt(const std::string& path, const std::vector<int32_t>& tokens,
                              std::shared_ptr<const BackendRuntime> extra = nullptr) {
  auto opened = open_session(path, std::move(extra));
  EXPECT_TRUE(opened.ok()) << opened.status().to_string();
  if (!opened.ok()) return {};
  return testing::feed_prompt(*opened->session, tokens, std::min<size_t>(12, tokens.size()));
}

void expect_near(std::span<const float> actual, std::span<const float> expected, double relative,
                 const std::string& what) {
  testing::expect_logits_near(actual, expected, relative, what);
}

HfStaticExportOptions small_options(KvUpdateForm kv_update = KvUpdateForm::kInPlace) {
  HfStaticExportOptions options;
  options.prefill_len = 8;
  options.max_cache_len = 64;
  options.kv_update = kv_update;
  return options;
}

std::shared_ptr<CpuBackend> cpu_backend() {
  auto backend = CpuBackend::create();
  EXPECT_TRUE(backend.ok());
  return *backend;
}

OptionMap texts(std::initializer_list<std::pair<std::string, std::string>> entries) {
  OptionMap map;
  for (const auto& [key, value] : entries) map.emplace(key, RawOptionValue::text(value));
  return map;
}

struct FamilyCase {
  std::string family;
  KvUpdateForm kv_update;
};

class CpuConformanceTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(CpuConformanceTest, DelegatedLogitsEqualTheUndelegatedProgramAndPyTorch) {
  const FamilyCase& param = GetParam();
  testing::FixtureReference ref = testing::load_fixture_reference(param.family);
  ASSERT_FALSE(ref.logits.empty()) << ref.dir;
  const std::string name = param.family + (param.kv_update == KvUpdateForm::kInPlace ? "_in_place" : "_returned");
  const std::string plain = temp_path(name + "_plain.slm");
  const std::string delegated = temp_path(name + "_cpu.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, plain, small_options(param.kv_update)).ok());
  auto backend = cpu_backend();
  HfStaticExportOptions options = small_options(param.kv_update);
  options.backend = backend.get();
  options.no_fallback = true;
  auto summary = export_hf_static(ref.dir, delegated, options);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(summary->placement.delegated_nodes(), summary->placement.total_nodes());

  const std::vector<float> expected = run_prompt(plain, ref.prompt_tokens);
  const std::vector<float> actual = run_prompt(delegated, ref.prompt_tokens);
  expect_near(actual, expected, 1e-6, name + " cpu vs undelegated");
  expect_near(actual, ref.logits, 1e-4, name + " cpu vs PyTorch");
}

INSTANTIATE_TEST_SUITE_P(
    Families, CpuConformanceTest,
    ::testing::Values(FamilyCase{"llama", KvUpdateForm::kInPlace}, FamilyCase{"llama", KvUpdateForm::kReturned},
                      FamilyCase{"llama3", KvUpdateForm::kInPlace}, FamilyCase{"llama_sharded", KvUpdateForm::kInPlace},
                      FamilyCase{"qwen2", KvUpdateForm::kInPlace}, FamilyCase{"mistral", KvUpdateForm::kReturned},
                      FamilyCase{"qwen3", KvUpdateForm::kInPlace}),
    [](const auto& test_info) {
      return test_info.param.family + (test_info.param.kv_update == KvUpdateForm::kInPlace ? "_in_place" : "_returned");
    });

TEST(CpuConformance, AFullyDelegatedMethodIsOneCallOverItsBoundary) {
  testing::FixtureReference ref = testing::load_fixture_reference("qwen2");
  auto backend = cpu_backend();
  HfStaticExportOptions options = small_options();
  options.backend = backend.get();
  const std::string path = temp_path("qwen2_one_call.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok());
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const fb::Program& program = (*file)->program();
  ASSERT_EQ(program.delegates()->size(), 2u);  // one per method
  for (const fb::Method* method : *program.methods()) {
    ASSERT_EQ(method->instructions()->size(), 1u) << method->name()->str();
    EXPECT_NE(method->instructions()->Get(0)->instruction_as_DelegateCall(), nullptr);
    // Intermediates belong to the delegate: the method keeps only inputs, constants, outputs.
    EXPECT_EQ(method->memory_plan()->arena_size(), 0u);
    for (const fb::Value* value : *method->values()) {
      EXPECT_NE(value->storage(), fb::StorageKind::Arena);
    }
  }
  auto placement = metadata_string(**file, "placement");
  ASSERT_TRUE(placement.ok());
  nlohmann::json report = nlohmann::json::parse(*placement);
  EXPECT_EQ(report["backend"], "cpu");
  EXPECT_EQ(report["methods"][0]["nodes"][0]["on"], "cpu");
}

TEST(CpuConformance, SkipSetsSplitTheGraphAndStillMatch) {
  testing::FixtureReference ref = testing::load_fixture_reference("llama3");
  const std::string plain = temp_path("llama3_skip_plain.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, plain, small_options()).ok());
  auto backend = cpu_backend();
  HfStaticExportOptions options = small_options();
  options.backend = backend.get();
  options.backend_options = texts({{"skip_node_op_set", "rope,attention"}, {"skip_node_id_set", "decode:0"}});
  const std::string split = temp_path("llama3_skip_cpu.slm");
  auto summary = export_hf_static(ref.dir, split, options);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  const PlacementReport& placement = summary->placement;
  EXPECT_GT(placement.methods[0].delegates.size(), 2u);
  EXPECT_EQ(placement.methods[1].nodes[0].reason, "skip_node_id_set has 'decode:0'");
  for (const MethodPlacement& method : placement.methods) {
    for (const NodePlacement& node : method.nodes) {
      if (node.op == "rope" || node.op == "attention") {
        EXPECT_EQ(node.delegate, -1) << node.node;
      }
    }
  }
  expect_near(run_prompt(split, ref.prompt_tokens), run_prompt(plain, ref.prompt_tokens), 1e-6, "split vs plain");
}

// A backend that runs cpu blobs but produces its outputs in reversed internal order, recording
// that in output_order, so the runtime must bind by the map to get the outputs right.
class ReversedCpuBackend final : public Backend {
 public:
  ReversedCpuBackend() {
    schema_.backend_id = "cpu_reversed";
    schema_.options = partitioner_option_specs();
    runtime_ = *CpuBackendRuntime::create("cpu_reversed");
  }
  std::string_view id() const override { return "cpu_reversed"; }
  std::string_view summary() const override { return "cpu blobs, outputs reversed"; }
  const OptionSchema& option_schema() const override { return schema_; }
  NodeSupport supports(const Graph&, size_t, const ResolvedOptions&) const override { return NodeSupport::yes(); }
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition, const ResolvedOptions&) const override {
    DelegatePayload payload;
    const Graph& graph = *partition.graph;
    for (size_t v = 0; v < graph.num_values(); ++v) {
      if (graph.value(static_cast<ValueId>(v)).kind == ValueKind::kConstant) {
        payload.runtime_constants.push_back(graph.value(static_cast<ValueId>(v)).constant);
      }
    }
    for (size_t i = graph.outputs().size(); i > 0; --i) payload.output_order.push_back(static_cast<uint32_t>(i - 1));
    STATICLM_ASSIGN_OR_RETURN(std::vector<uint8_t> blob,
                              write_cpu_blob(graph, payload.runtime_constants, payload.output_order));
    payload.blob = make_owned_source(std::move(blob));
    return payload;
  }
  std::shared_ptr<const BackendRuntime> runtime() const override { return runtime_; }

 private:
  OptionSchema schema_;
  std::shared_ptr<const BackendRuntime> runtime_;
};

TEST(DelegateOutputOrder, ReversedInternalOrderStillBindsProgramOutputs) {
  testing::FixtureReference ref = testing::load_fixture_reference("llama");
  const std::string plain = temp_path("llama_order_plain.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, plain, small_options(KvUpdateForm::kReturned)).ok());
  ReversedCpuBackend backend;
  HfStaticExportOptions options = small_options(KvUpdateForm::kReturned);
  options.backend = &backend;
  const std::string reversed = temp_path("llama_order_reversed.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, reversed, options).ok());

  auto file = ProgramFile::open(reversed);
  ASSERT_TRUE(file.ok());
  const fb::Delegate* delegate = (*file)->program().delegates()->Get(0);
  ASSERT_EQ(delegate->output_order()->size(), 5u);  // logits + two caches per layer
  EXPECT_EQ(delegate->output_order()->Get(0), 4u);
  EXPECT_EQ(delegate->output_order()->Get(4), 0u);

  expect_near(run_prompt(reversed, ref.prompt_tokens, backend.runtime()), run_prompt(plain, ref.prompt_tokens), 0.0,
              "reversed internal order");
}

Result<HfStaticBuild> build_cpu(const std::string& family, KvUpdateForm kv_update, const Backend& backend) {
  HfStaticExportOptions options = small_options(kv_update);
  options.backend = &backend;
  return build_hf_static(testing::fixture_dir(family), options);
}

Status load_prefill(const std::string& path, std::shared_ptr<const BackendRuntime> extra = nullptr) {
  Runtimes runtimes(std::move(extra));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, Program::load(path, runtimes.load_options()));
  return program->load_method("prefill").status();
}

TEST(DelegateOutputOrder, ACorruptedMapIsRefusedAtLoad) {
  ReversedCpuBackend backend;
  auto build = build_cpu("llama", KvUpdateForm::kReturned, backend);
  ASSERT_TRUE(build.ok()) << build.status().to_string();
  // A valid permutation that binds the logits to a new-key output: the runtime's dtype / size check.
  std::vector<uint32_t>& order = build->spec.delegates[0].output_order;
  std::reverse(order.begin(), order.end());
  const std::string swapped = temp_path("order_swapped.slm");
  ASSERT_TRUE(write_program(build->spec, swapped).ok());
  Status refused = load_prefill(swapped, backend.runtime());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("delegate output 0 is f32[1,8,320] but is bound to value"), std::string::npos)
      << refused.message();

  // Out of range and repeated entries: the file reader refuses them before any runtime sees
  // them. The writer would not write them, so patch a distinctive valid map in the bytes.
  std::iota(order.begin(), order.end(), 0u);
  std::reverse(order.begin(), order.end());  // back to 4 3 2 1 0
  std::vector<uint32_t>& decode_order = build->spec.delegates[1].output_order;
  std::iota(decode_order.begin(), decode_order.end(), 0u);  // so the pattern below is unique
  const std::string good = temp_path("order_good.slm");
  ASSERT_TRUE(write_program(build->spec, good).ok());
  std::ifstream in(good, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint32_t pattern[] = {5, 4, 3, 2, 1, 0};  // length, then the entries
  const auto* first = reinterpret_cast<const uint8_t*>(pattern);
  auto at = std::search(bytes.begin(), bytes.end(), first, first + sizeof(pattern));
  ASSERT_NE(at, bytes.end());
  ASSERT_EQ(std::search(at + 1, bytes.end(), first, first + sizeof(pattern)), bytes.end()) << "ambiguous";
  const size_t entry0 = static_cast<size_t>(at - bytes.begin()) + 4;
  for (const auto& [value, what] :
       std::vector<std::pair<uint32_t, std::string>>{{7, "out of range"}, {3, "duplicate"}}) {
    std::vector<uint8_t> patched = bytes;
    std::memcpy(patched.data() + entry0, &value, 4);
    auto opened = ProgramFile::from_bytes(patched, what);
    ASSERT_FALSE(opened.ok()) << what;
    EXPECT_NE(opened.status().message().find("delegate 0: output_order is not a permutation of [0, 5) (entry "),
              std::string::npos)
        << opened.status().message();
  }
}

TEST(CpuConformance, ACorruptedBlobIsRefusedAtLoad) {
  auto backend = cpu_backend();
  auto build = build_cpu("llama", KvUpdateForm::kInPlace, *backend);
  ASSERT_TRUE(build.ok()) << build.status().to_string();
  const std::shared_ptr<ByteSource> original = build->spec.delegates[0].blob;
  std::vector<uint8_t> blob(original->size_bytes());
  ASSERT_TRUE(original->read(blob).ok());
  const std::vector<std::pair<std::vector<uint8_t>, std::string>> cases = {
      {std::vector<uint8_t>(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(blob.size() / 2)),
       "cpu delegate blob: the flatbuffer is corrupt"},
      {std::vector<uint8_t>(256, 0x42), "not a cpu delegate blob"},
      {{}, "not a cpu delegate blob"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    build->spec.delegates[0].blob = make_owned_source(cases[i].first);
    const std::string path = temp_path("corrupt_blob_" + std::to_string(i) + ".slm");
    ASSERT_TRUE(write_program(build->spec, path).ok());
    Status refused = load_prefill(path);
    EXPECT_FALSE(refused.ok()) << i;
    EXPECT_NE(refused.message().find(cases[i].second), std::string::npos) << refused.message();
    EXPECT_NE(refused.message().find("method 'prefill' instruction 0 (delegate 0, backend 'cpu')"), std::string::npos)
        << refused.message();
  }
}

// The example attention block (an in-place cache updated by one node and read by another)
// with random nodes kept off the cpu backend: every split must compute exactly what the
// undelegated program does, cache included.
struct BlockRun {
  std::vector<float> logits;
  std::vector<float> cache;
};

Result<BlockRun> run_block(const ProgramSpec& spec, const std::string& path) {
  STATICLM_RETURN_IF_ERROR(write_program(spec, path).status());
  Runtimes runtimes;
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, Program::load(path, runtimes.load_options()));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Method> method, program->load_method("forward"));
  using W = testing::ExampleWeights;
  BlockRun run;
  run.cache.assign(W::kKvHeads * W::kCacheLen * W::kHeadDim, 0.0f);
  run.logits.assign(W::kSeq * W::kVocab, 0.0f);
  std::vector<int32_t> tokens = {3, 1, 4, 1};
  std::vector<int32_t> positions = {0, 1, 2, 3};
  STATICLM_RETURN_IF_ERROR(method->bind_input("tokens", DType::kI32, tokens.data(), tokens.size() * 4));
  STATICLM_RETURN_IF_ERROR(method->bind_input("positions", DType::kI32, positions.data(), positions.size() * 4));
  STATICLM_RETURN_IF_ERROR(method->bind_input("cache", DType::kF32, run.cache.data(), run.cache.size() * 4));
  STATICLM_RETURN_IF_ERROR(method->bind_output("logits", DType::kF32, run.logits.data(), run.logits.size() * 4));
  STATICLM_RETURN_IF_ERROR(method->execute());
  tokens = {5, 9, 2, 6};
  positions = {4, 5, 6, 7};
  STATICLM_RETURN_IF_ERROR(method->execute());
  return run;
}

TEST(CpuConformance, RandomSkipSetsOverAnInPlaceCacheBlockStayExact) {
  const testing::ExampleWeights weights = testing::ExampleWeights::random(5);
  auto reference_graph = testing::build_example_graph(weights);
  ASSERT_TRUE(reference_graph.ok());
  const std::vector<MethodGraph> plain_methods = {{"forward", reference_graph->get()}};
  auto plain_spec = lower_to_program(plain_methods, LowerOptions{});
  ASSERT_TRUE(plain_spec.ok());
  auto expected = run_block(*plain_spec, temp_path("block_plain.slm"));
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();

  auto backend = cpu_backend();
  std::mt19937 rng(3);
  const size_t num_nodes = (*reference_graph)->nodes().size();
  for (int trial = 0; trial < 24; ++trial) {
    std::vector<std::string> skipped;
    for (size_t n = 0; n < num_nodes; ++n) {
      if (rng() % 3 == 0) skipped.push_back(std::to_string(n));
    }
    auto graph = testing::build_example_graph(weights);
    ASSERT_TRUE(graph.ok());
    OptionMap options;
    if (!skipped.empty()) options.emplace("skip_node_id_set", RawOptionValue::text(join(skipped, ",")));
    auto partitioner = Partitioner::from_options(*backend, options);
    ASSERT_TRUE(partitioner.ok()) << partitioner.status().to_string();
    const std::vector<PartitionMethod> methods = {{"forward", graph->get()}};
    auto partitioned = partitioner->run(methods, LowerOptions{});
    ASSERT_TRUE(partitioned.ok()) << "skip " << join(skipped, ",") << ": " << partitioned.status().to_string();
    auto actual = run_block(partitioned->spec, temp_path("block_split.slm"));
    ASSERT_TRUE(actual.ok()) << "skip " << join(skipped, ",") << ": " << actual.status().to_string();
    EXPECT_EQ(actual->logits, expected->logits) << "skip " << join(skipped, ",");
    EXPECT_EQ(actual->cache, expected->cache) << "skip " << join(skipped, ",");
  }
}

Status load_forward(const ProgramSpec& spec, const std::string& path) {
  STATICLM_RETURN_IF_ERROR(write_program(spec, path).status());
  Runtimes runtimes;
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, Program::load(path, runtimes.load_options()));
  return program->load_method("forward").status();
}

TEST(CpuConformance, ADelegateMayUpdateOnlyWritableInputs) {
  auto graph = testing::build_example_graph(testing::ExampleWeights::random(9));
  ASSERT_TRUE(graph.ok());
  auto backend = cpu_backend();
  auto partitioner = Partitioner::from_options(*backend, {});
  ASSERT_TRUE(partitioner.ok());
  const std::vector<PartitionMethod> methods = {{"forward", graph->get()}};
  auto partitioned = partitioner->run(methods, LowerOptions{});
  ASSERT_TRUE(partitioned.ok()) << partitioned.status().to_string();
  ProgramSpec& spec = partitioned->spec;
  MethodSpec& method = spec.methods[0];
  ASSERT_TRUE(method.inputs[2].is_mutable);  // the cache, which the delegate updates in place
  ASSERT_TRUE(load_forward(spec, temp_path("writable_ok.slm")).ok());

  ProgramSpec not_mutable = spec;
  not_mutable.methods[0].inputs[2].is_mutable = false;
  Status refused = load_forward(not_mutable, temp_path("writable_not_mutable.slm"));
  EXPECT_NE(refused.message().find("which is an input not marked mutable"), std::string::npos) << refused.message();

  // The same call reading a constant in the cache's place: writing it would hit read-only memory.
  ProgramSpec constant = spec;
  const uint32_t cache_value = method.inputs[2].value;
  const ValueSpec& cache = method.values[cache_value];
  auto bytes = tensor_bytes(cache.dtype, cache.shape);
  constant.constants.push_back(
      {"fake_cache", cache.dtype, cache.shape, make_owned_source(std::vector<uint8_t>(*bytes))});
  constant.methods[0].values.push_back(
      {cache.dtype, cache.shape, ValueStorage::kConstant, static_cast<uint64_t>(constant.constants.size() - 1)});
  auto& call = std::get<DelegateCallSpec>(constant.methods[0].instructions[0]);
  std::replace(call.inputs.begin(), call.inputs.end(), cache_value,
               static_cast<uint32_t>(constant.methods[0].values.size() - 1));
  refused = load_forward(constant, temp_path("writable_constant.slm"));
  EXPECT_NE(refused.message().find("which is a constant"), std::string::npos) << refused.message();
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs the CLI without any QNN SDK in its environment, whatever the caller's is.
CommandResult run_cli(const std::string& args) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string out_path = temp_path("backends_cli_stdout_" + test + ".txt");
  const std::string err_path = temp_path("backends_cli_stderr_" + test + ".txt");
  const std::string command = "env -u QNN_SDK_ROOT -u QNN_SDK_VERSION " + std::string(STATICLM_CLI) + " " + args +
                              " >" + out_path + " 2>" + err_path;
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_all(out_path);
  result.err = read_all(err_path);
  return result;
}

void expect_contains(const std::string& text, std::string_view expected) {
  EXPECT_NE(text.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << text;
}

TEST(BackendsCli, ListsEveryBackendAndItsSchema) {
  CommandResult all = run_cli("backends");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  expect_contains(all.out, "backends: cpu, qnn");
  expect_contains(all.out, "    skip_node_op_set  string set  default {}  route partitioner");
  CommandResult qnn = run_cli("backends qnn");
  ASSERT_EQ(qnn.exit_code, 0) << qnn.err;
  EXPECT_EQ(qnn.out.find("cpu:"), std::string::npos);
  expect_contains(qnn.out, "    soc_model  enum  required  route common");
  expect_contains(qnn.out, "SM8850 (HTP v81, 8 MB VTCM, LPAI v6)");
  expect_contains(qnn.out, "    use_fp16  bool  default true  route htp  for backend=htp");
  expect_contains(qnn.out,
                  "    fps  int  default 1  range [1, 1000]  route lpai  for backend=lpai  needs SDK >= 2.39.0");
  expect_contains(qnn.out, "conflicts with use_multi_contexts");
  expect_contains(qnn.out, "sdk: QNN SDK version unknown");
  CommandResult unknown = run_cli("backends qnnn");
  EXPECT_NE(unknown.exit_code, 0);
  expect_contains(unknown.err, "unknown backend 'qnnn' (did you mean 'qnn'?)");
}

TEST(BackendsCli, ExportsForCpuAndInspectShowsThePlacement) {
  const std::string path = temp_path("cli_cpu.slm");
  const std::string options = temp_path("cli_cpu_options.json");
  std::ofstream(options) << R"({"skip_node_op_set": ["rope"]})";
  CommandResult exported = run_cli("export " + testing::fixture_dir("qwen3") + " -o " + path +
                                   " --prefill-len 8 --max-cache-len 64 --backend cpu --options " + options +
                                   " --option skip_node_id_set=prefill:0");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  expect_contains(exported.out, "placement: prefill: ");
  expect_contains(exported.out,
                  "cpu settings: skip_node_id_set={prefill:0} (given), skip_node_op_set={rope} (given), "
                  "skip_mutable_buffer=false");
  CommandResult inspected = run_cli("inspect " + path);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  expect_contains(inspected.out, "placement (backend cpu):");
  expect_contains(inspected.out, "node 0 (embedding): skip_node_id_set has 'prefill:0'");
  expect_contains(inspected.out, "(rope): skip_node_op_set has 'rope'");
  expect_contains(inspected.out, "skip_node_op_set=[\"rope\"] (given)");
  CommandResult as_json = run_cli("inspect --json " + path);
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  nlohmann::json doc = nlohmann::json::parse(as_json.out);
  EXPECT_EQ(doc["placement"]["backend"], "cpu");
  EXPECT_EQ(doc["delegates"][0]["settings"]["backend"], "cpu");
  EXPECT_FALSE(doc["metadata"].contains("placement"));
}

TEST(BackendsCli, RefusalsAreOneLineAndNameTheProblem) {
  const std::string dir = testing::fixture_dir("llama");
  const std::string out = " -o " + temp_path("cli_refused.slm") + " --prefill-len 8 --max-cache-len 64";
  CommandResult qnn = run_cli("export " + dir + out + " --backend qnn --option soc_model=SM8650");
  EXPECT_NE(qnn.exit_code, 0);
  expect_contains(qnn.err, "QNN SDK not found");
  CommandResult typo =
      run_cli("export " + dir + out + " --backend qnn --option soc_model=SM8650 --option use_fp61=true");
  expect_contains(typo.err, "unknown option 'use_fp61' for backend 'qnn' (did you mean 'use_fp16'?)");
  CommandResult fallback =
      run_cli("export " + dir + out + " --backend cpu --option skip_node_op_set=rope --no-fallback");
  EXPECT_NE(fallback.exit_code, 0);
  expect_contains(fallback.err, "stay on the portable kernels: method 'prefill' node ");
  HfStaticExportOptions no_backend = small_options();
  no_backend.backend_options = texts({{"soc_model", "SM8650"}});
  Status library = export_hf_static(dir, temp_path("no_backend.slm"), no_backend).status();
  expect_contains(library.message(), "backend options and no-fallback need a backend");
  CommandResult orphan = run_cli("export " + dir + out + " --option soc_model=SM8650");
  expect_contains(orphan.err, "need --backend NAME");
  for (const CommandResult* result : {&qnn, &typo, &fallback, &orphan}) {
    EXPECT_EQ(std::count(result->err.begin(), result->err.end(), '\n'), 1) << result->err;
  }
}

}  // namespace
}  // namespace staticlm
