// SPDX-License-Identifier: Apache-2.0
// Delegated export end to end: every fixture family exported with `--backend cpu` gives the
// undelegated program's logits (and the PyTorch reference's); a backend whose delegate produces
// its outputs in reversed internal order still binds them to the right program values; corrupt
// blobs and output maps are refused at load; random skip sets over a block with an in-place
// cache keep results exact; a delegate may write only writable inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/cpu/export/swiglu_fusion.h"
#include "staticlm/backends/cpu/runtime/cpu_runtime.h"
#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/core/float_convert.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/metadata.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/llm/contract.h"
#include "staticlm/llm/generator.h"
#include "staticlm/ops/panel_quant.h"
#include "staticlm/ops/weight_layout.h"
#include "staticlm/partition/partitioner.h"
#include "staticlm/runtime/program.h"

#include "delegated_export_helpers.h"
#include "example_program.h"
#include "export_helpers.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

using testing::cpu_backend;
using testing::expect_near;
using testing::kSummationOrderTolerance;
using testing::run_prompt;
using testing::small_options;
using testing::temp_path;

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
  expect_near(actual, expected, kSummationOrderTolerance, name + " cpu vs undelegated");
  expect_near(actual, ref.logits, 1e-4, name + " cpu vs PyTorch");
}

INSTANTIATE_TEST_SUITE_P(
    Families, CpuConformanceTest,
    ::testing::Values(FamilyCase{"llama", KvUpdateForm::kInPlace}, FamilyCase{"llama", KvUpdateForm::kReturned},
                      FamilyCase{"llama3", KvUpdateForm::kInPlace}, FamilyCase{"llama_sharded", KvUpdateForm::kInPlace},
                      FamilyCase{"qwen2", KvUpdateForm::kInPlace}, FamilyCase{"mistral", KvUpdateForm::kReturned},
                      FamilyCase{"qwen3", KvUpdateForm::kInPlace}, FamilyCase{"gemma3", KvUpdateForm::kInPlace},
                      FamilyCase{"gemma3", KvUpdateForm::kReturned}, FamilyCase{"gemma2", KvUpdateForm::kInPlace},
                      FamilyCase{"gemma2", KvUpdateForm::kReturned}, FamilyCase{"phi3", KvUpdateForm::kInPlace},
                      FamilyCase{"phi3", KvUpdateForm::kReturned}, FamilyCase{"smollm3", KvUpdateForm::kInPlace},
                      FamilyCase{"smollm3", KvUpdateForm::kReturned}, FamilyCase{"granite", KvUpdateForm::kInPlace},
                      FamilyCase{"granite", KvUpdateForm::kReturned}, FamilyCase{"olmo2", KvUpdateForm::kInPlace},
                      FamilyCase{"olmo2", KvUpdateForm::kReturned},
                      FamilyCase{"mistral_window", KvUpdateForm::kInPlace},
                      FamilyCase{"qwen2_window", KvUpdateForm::kReturned}),
    [](const auto& test_info) {
      return test_info.param.family + (test_info.param.kv_update == KvUpdateForm::kInPlace ? "_in_place" : "_returned");
    });

// Where a program runs: the portable kernels, the cpu delegate, or both (the cpu delegate with
// rope and attention left to the portable kernels: several delegate calls, each told what is read
// of its outputs).
enum class Placement { kPortable, kCpu, kSplit };

struct LastLogitsCase {
  Placement placement;
  KvUpdateForm kv_update;
  LogitsMode program;  // what the program outputs; the test reads the last token's logits alone
};

class LastLogitsTest : public ::testing::TestWithParam<LastLogitsCase> {};

// Where a prompt's last token's logits are all that is read (a program that keeps only the last
// position's, or a prefill asked for PrefillLogits::kLast), only the last chunk computes logits,
// for its last row: the earlier chunks skip the head and the last layer after its attention, on
// the portable kernels and inside the cpu delegate alike, and still fill every layer's cache (the
// decode steps after them match PyTorch).
TEST_P(LastLogitsTest, OnlyThePromptsLastChunkComputesLogits) {
  const LastLogitsCase& param = GetParam();
  testing::FixtureReference ref = testing::load_fixture_reference("mistral");
  HfStaticExportOptions options = small_options(param.kv_update);
  options.logits = param.program;
  auto backend = cpu_backend();
  if (param.placement != Placement::kPortable) {
    options.backend = backend.get();
    options.no_fallback = param.placement == Placement::kCpu;
  }
  if (param.placement == Placement::kSplit) {
    options.backend_options = testing::text_options({{"skip_node_op_set", "rope,attention"}});
  }
  const std::string path =
      temp_path(str_cat("mistral_", logits_mode_name(param.program), "_", static_cast<int>(param.placement), "_",
                        kv_update_form_name(param.kv_update), ".slm"));
  ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok());
  OpProfile profile;
  SessionOptions session_options;
  session_options.op_profile = &profile;
  auto opened = testing::open_test_session(path, session_options);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  LlmSession& session = *opened->session;
  EXPECT_EQ(session.prefill_returns_all_logits(), param.program == LogitsMode::kAll);

  // 13 tokens: chunks of 8 (tokens 0-7) and 5 (8-12, left-padded).
  std::vector<std::pair<int64_t, std::vector<float>>> rows;
  Status status = session.prefill(
      std::span(ref.prompt_tokens).first(13),
      [&](int64_t i, std::span<const float> row) { rows.emplace_back(i, std::vector<float>(row.begin(), row.end())); },
      PrefillLogits::kLast);
  ASSERT_TRUE(status.ok()) << status.to_string();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].first, 12);
  const auto vocab = static_cast<size_t>(ref.vocab);
  expect_near(rows[0].second, std::span(ref.logits).subspan(12 * vocab, vocab), 1e-4, "last logits");

  // Kernel calls by the chunk's real rows: the first chunk ran the last layer's attention and
  // two norms (its post-attention one and the final one) fewer than the second.
  auto calls = [&](std::string_view op, int64_t chunk_rows) {
    int64_t count = 0;
    for (const OpProfile::Entry& e : profile.entries()) {
      count += e.op == op && e.rows == chunk_rows ? e.calls : 0;
    }
    return count;
  };
  EXPECT_GT(calls("attention", 5), 0);
  EXPECT_EQ(calls("attention", 8), calls("attention", 5) - 1);
  EXPECT_EQ(calls("rms_norm", 8), calls("rms_norm", 5) - 2);

  // The rest of the prompt through decode reads every layer's cache rows of both chunks.
  for (size_t i = 13; i < ref.prompt_tokens.size(); ++i) {
    status = session.decode(ref.prompt_tokens[i], [&](int64_t, std::span<const float> row) {
      expect_near(row, std::span(ref.logits).subspan(i * vocab, vocab), 1e-4, "decode " + std::to_string(i));
    });
    ASSERT_TRUE(status.ok()) << status.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Programs, LastLogitsTest,
    ::testing::Values(LastLogitsCase{Placement::kPortable, KvUpdateForm::kInPlace, LogitsMode::kLast},
                      LastLogitsCase{Placement::kPortable, KvUpdateForm::kReturned, LogitsMode::kLast},
                      LastLogitsCase{Placement::kCpu, KvUpdateForm::kInPlace, LogitsMode::kLast},
                      LastLogitsCase{Placement::kCpu, KvUpdateForm::kReturned, LogitsMode::kLast},
                      LastLogitsCase{Placement::kSplit, KvUpdateForm::kReturned, LogitsMode::kLast},
                      LastLogitsCase{Placement::kPortable, KvUpdateForm::kInPlace, LogitsMode::kAll},
                      LastLogitsCase{Placement::kPortable, KvUpdateForm::kReturned, LogitsMode::kAll},
                      LastLogitsCase{Placement::kCpu, KvUpdateForm::kInPlace, LogitsMode::kAll},
                      LastLogitsCase{Placement::kCpu, KvUpdateForm::kReturned, LogitsMode::kAll},
                      LastLogitsCase{Placement::kSplit, KvUpdateForm::kInPlace, LogitsMode::kAll}),
    [](const auto& test_info) {
      const Placement placement = test_info.param.placement;
      return str_cat(
          logits_mode_name(test_info.param.program), "_logits_",
          placement == Placement::kPortable ? "portable_" : (placement == Placement::kCpu ? "cpu_" : "split_"),
          test_info.param.kv_update == KvUpdateForm::kInPlace ? "in_place" : "returned");
    });

// A method asked for its logits' last row computes that row alone: inside the cpu delegate the
// head and the last layer after its attention run with every other row as padding, leaving the
// other rows of the output as they were. The row equals the one a whole run computes.
TEST(CpuConformance, ALastRowNeedLeavesTheOtherRowsUnwritten) {
  testing::FixtureReference ref = testing::load_fixture_reference("llama3");
  auto backend = cpu_backend();
  HfStaticExportOptions options = small_options();
  options.backend = backend.get();
  options.no_fallback = true;
  const std::string path = temp_path("llama3_last_row_need.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok());
  auto runtimes = std::make_shared<testing::TestRuntimes>();
  ASSERT_TRUE(runtimes->status.ok());
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok());
  auto program = Program::from_file(std::move(file).value(), runtimes->load_options());
  ASSERT_TRUE(program.ok()) << program.status().to_string();

  // Two sessions of the prefill method, each with zeroed caches, fed the same 8 tokens.
  auto run = [&](bool last_row, std::vector<float>& logits) {
    auto session = (*program)->new_session("prefill");
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    MethodSession& s = **session;
    std::vector<std::vector<uint8_t>> buffers;
    for (const IoTensorInfo& info : s.inputs()) {
      buffers.emplace_back(info.nbytes, 0);
      std::vector<uint8_t>& bytes = buffers.back();
      if (info.name == "input_ids" || info.name == "cache_position") {
        for (int64_t i = 0; i < 8; ++i) {
          const int64_t v = info.name == "input_ids" ? ref.prompt_tokens[static_cast<size_t>(i)] : i;
          std::memcpy(bytes.data() + i * 8, &v, 8);
        }
      }
      ASSERT_TRUE(s.bind_input(info.name, info.dtype, bytes.data(), bytes.size()).ok());
    }
    ASSERT_EQ(s.outputs().size(), 1u);
    ASSERT_TRUE(s.bind_output("logits", DType::kF32, logits.data(), logits.size() * sizeof(float)).ok());
    const std::vector<RowNeed> needs = {last_row ? RowNeed::kLastRow : RowNeed::kAll};
    Status status = s.execute(needs);
    ASSERT_TRUE(status.ok()) << status.to_string();
  };
  const auto vocab = static_cast<size_t>(ref.vocab);
  std::vector<float> whole(8 * vocab, NAN);
  std::vector<float> last(8 * vocab, 12345.0f);
  run(false, whole);
  run(true, last);
  for (size_t i = 0; i < 7 * vocab; ++i) {
    ASSERT_EQ(last[i], 12345.0f) << "element " << i << " of a row before the last";
  }
  expect_near(std::span(last).subspan(7 * vocab), std::span(whole).subspan(7 * vocab), kSummationOrderTolerance,
              "last row");
}

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

TEST(CpuConformance, AShortPromptInAPaddedChunkMatchesFeedingItOneTokenAtATime) {
  // 3 tokens in a chunk of 8: the cpu kernels compute only the 3 real rows of every linear.
  testing::FixtureReference ref = testing::load_fixture_reference("llama3");
  auto backend = cpu_backend();
  HfStaticExportOptions options = small_options();
  options.backend = backend.get();
  const std::string path = temp_path("llama3_short_prompt_cpu.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok());
  const std::vector<int32_t> prompt(ref.prompt_tokens.begin(), ref.prompt_tokens.begin() + 3);
  auto by_prefill = testing::open_test_session(path);
  auto by_decode = testing::open_test_session(path);
  ASSERT_TRUE(by_prefill.ok() && by_decode.ok());
  expect_near(testing::feed_prompt(*by_prefill->session, prompt, prompt.size()),
              testing::feed_prompt(*by_decode->session, prompt, 0), kSummationOrderTolerance,
              "padded prefill vs decode");
}

TEST(CpuConformance, GreedyContinuationsEqualThePortableBackends) {
  for (const std::string family : {"llama3", "qwen2", "mistral"}) {
    SCOPED_TRACE(family);
    testing::FixtureReference ref = testing::load_fixture_reference(family);
    const std::string plain = temp_path(family + "_greedy_plain.slm");
    const std::string delegated = temp_path(family + "_greedy_cpu.slm");
    ASSERT_TRUE(export_hf_static(ref.dir, plain, small_options()).ok());
    auto backend = cpu_backend();
    HfStaticExportOptions options = small_options();
    options.backend = backend.get();
    ASSERT_TRUE(export_hf_static(ref.dir, delegated, options).ok());
    GenerationOptions greedy;
    greedy.max_new_tokens = 24;
    std::vector<std::vector<int32_t>> continuations;
    for (const std::string& path : {plain, delegated}) {
      auto opened = testing::open_test_session(path);
      ASSERT_TRUE(opened.ok()) << opened.status().to_string();
      auto result = generate_tokens(*opened->session, ref.prompt_tokens, greedy);
      ASSERT_TRUE(result.ok()) << result.status().to_string();
      continuations.push_back(result->tokens);
    }
    EXPECT_EQ(continuations[0].size(), 24u);
    EXPECT_EQ(continuations[1], continuations[0]);
  }
}

TEST(CpuConformance, SkipSetsSplitTheGraphAndStillMatch) {
  testing::FixtureReference ref = testing::load_fixture_reference("llama3");
  const std::string plain = temp_path("llama3_skip_plain.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, plain, small_options()).ok());
  auto backend = cpu_backend();
  HfStaticExportOptions options = small_options();
  options.backend = backend.get();
  options.backend_options =
      testing::text_options({{"skip_node_op_set", "rope,attention"}, {"skip_node_id_set", "decode:0"}});
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
  expect_near(run_prompt(split, ref.prompt_tokens), run_prompt(plain, ref.prompt_tokens), kSummationOrderTolerance,
              "split vs plain");
}

TEST(CpuConformance, WeightDtypeStoresTheMatricesAsTheExporterWouldHaveWrittenThem) {
  // An f32 export delegated with weight_dtype=bf16 (f16) is the --dtype bf16 (f16) export: the
  // same matrices, rounded the same way, stored once each, the f32 originals not at all.
  for (const std::string family : {"llama", "llama3"}) {  // untied and tied embeddings
    for (const DType dtype : {DType::kBF16, DType::kF16}) {
      const std::string name = str_cat(family, "_", dtype_name(dtype));
      SCOPED_TRACE(name);
      testing::FixtureReference ref = testing::load_fixture_reference(family);
      auto backend = cpu_backend();
      HfStaticExportOptions by_exporter = small_options();
      by_exporter.backend = backend.get();
      by_exporter.weight_dtype = dtype;
      const std::string exported = temp_path(name + "_by_exporter.slm");
      ASSERT_TRUE(export_hf_static(ref.dir, exported, by_exporter).ok());
      HfStaticExportOptions by_option = small_options();
      by_option.backend = backend.get();
      by_option.backend_options = testing::text_options({{"weight_dtype", std::string(dtype_name(dtype))}});
      const std::string optioned = temp_path(name + "_by_option.slm");
      auto summary = export_hf_static(ref.dir, optioned, by_option);
      ASSERT_TRUE(summary.ok()) << summary.status().to_string();

      expect_near(run_prompt(optioned, ref.prompt_tokens), run_prompt(exported, ref.prompt_tokens), 0.0,
                  "weight_dtype option vs --dtype");
      auto file = ProgramFile::open(optioned);
      ASSERT_TRUE(file.ok()) << file.status().to_string();
      auto checkpoint = SafetensorsCheckpoint::open(ref.dir);
      ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
      size_t matrices = 0;
      for (const std::string& tensor_name : checkpoint->names()) {
        const SafetensorsTensor& tensor = **checkpoint->get(tensor_name);
        const std::string key = cpu_named_data_key(sanitize_constant_name(tensor.name));
        const auto elements = static_cast<uint64_t>(num_elements(tensor.shape));
        if (tensor.shape.size() == 2) {
          ++matrices;
          // Packed after conversion where a linear reads it (an untied table is only gathered).
          const bool packed = family == "llama3" || tensor.name.find("embed_tokens") == std::string::npos;
          const std::string converted_key =
              str_cat(key, ".", dtype_name(dtype), packed ? str_cat(".", kPanel32Layout) : std::string());
          const uint64_t stored =
              packed ? static_cast<uint64_t>(PanelLayout::of(tensor.shape[0], tensor.shape[1], dtype).elements())
                     : elements;
          auto converted = (*file)->named_data(converted_key);
          ASSERT_TRUE(converted.has_value()) << converted_key;
          EXPECT_EQ(converted->size(), stored * 2) << converted_key;
          EXPECT_FALSE((*file)->named_data(key).has_value()) << key << " is stored at f32 as well";
        } else {
          auto kept = (*file)->named_data(key);
          ASSERT_TRUE(kept.has_value()) << key;
          EXPECT_EQ(kept->size(), elements * 4) << key << ": 1-D weights stay f32";
        }
      }
      EXPECT_GT(matrices, 0u);
      auto recorded = metadata_string(**file, hf_static_v1::key::kWeightDtype);
      ASSERT_TRUE(recorded.ok()) << recorded.status().to_string();
      EXPECT_EQ(*recorded, dtype_name(dtype)) << "the metadata names the stored dtype";
      EXPECT_EQ(summary->named_data_bytes, export_hf_static(ref.dir, exported, by_exporter)->named_data_bytes);
    }
  }
  HfStaticExportOptions bad = small_options();
  auto backend = cpu_backend();
  bad.backend = backend.get();
  bad.backend_options = testing::text_options({{"weight_dtype", "int2"}});
  auto refused = export_hf_static(testing::load_fixture_reference("llama").dir, temp_path("bad_dtype.slm"), bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("weight_dtype"), std::string::npos) << refused.status().to_string();
}

// A backend that runs cpu blobs but produces its outputs in reversed internal order, recording
// that in output_order, so the runtime must bind by the map to get the outputs right.
class ReversedCpuBackend final : public Backend {
 public:
  ReversedCpuBackend() {
    schema_.backend_id = "cpu_reversed";
    schema_.options = partitioner_option_specs();
  }
  std::string_view id() const override { return "cpu_reversed"; }
  std::string_view summary() const override { return "cpu blobs, outputs reversed"; }
  const OptionSchema& option_schema() const override { return schema_; }
  NodeSupport supports(const Graph&, size_t, const ResolvedOptions&) const override { return NodeSupport::yes(); }
  // The cpu backend's passes, so both programs run the same kernels and must agree bit for bit.
  std::vector<std::unique_ptr<GraphPass>> passes(const ResolvedOptions& options) const override {
    return cpu_backend()->passes(options);
  }
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition, const ResolvedOptions&) const override {
    std::vector<uint32_t> reversed;
    for (size_t i = partition.graph->outputs().size(); i > 0; --i) reversed.push_back(static_cast<uint32_t>(i - 1));
    return lower_cpu_partition(partition, reversed);
  }
  // Its run side: the cpu runtime under this backend's id.
  static std::shared_ptr<const BackendRuntime> runtime() { return *CpuBackendRuntime::create("cpu_reversed"); }

 private:
  OptionSchema schema_;
};

TEST(DelegateOutputOrder, ReversedInternalOrderStillBindsProgramOutputs) {
  testing::FixtureReference ref = testing::load_fixture_reference("llama");
  // The same kernels in the usual order: the logits must be identical, bit for bit.
  const std::string plain = temp_path("llama_order_plain.slm");
  auto cpu = cpu_backend();
  HfStaticExportOptions plain_options = small_options(KvUpdateForm::kReturned);
  plain_options.backend = cpu.get();
  ASSERT_TRUE(export_hf_static(ref.dir, plain, plain_options).ok());
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

  expect_near(run_prompt(reversed, ref.prompt_tokens, ReversedCpuBackend::runtime()),
              run_prompt(plain, ref.prompt_tokens), 0.0, "reversed internal order");
}

Result<HfStaticBuild> build_cpu(const std::string& family, KvUpdateForm kv_update, const Backend& backend) {
  HfStaticExportOptions options = small_options(kv_update);
  options.backend = &backend;
  return build_hf_static(testing::fixture_dir(family), options);
}

Status load_program(const std::string& path, std::shared_ptr<const BackendRuntime> extra = nullptr) {
  std::vector<std::shared_ptr<const BackendRuntime>> extras;
  if (extra) extras.push_back(std::move(extra));
  testing::TestRuntimes runtimes(std::move(extras));
  STATICLM_RETURN_IF_ERROR(runtimes.status);
  return Program::load(path, runtimes.load_options()).status();
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
  Status refused = load_program(swapped, ReversedCpuBackend::runtime());
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
       "corrupt method blob"},
      {std::vector<uint8_t>(256, 0x42), "not a method blob"},
      {{}, "not a method blob"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    build->spec.delegates[0].blob = make_owned_source(cases[i].first);
    const std::string path = temp_path("corrupt_blob_" + std::to_string(i) + ".slm");
    ASSERT_TRUE(write_program(build->spec, path).ok());
    Status refused = load_program(path);
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

// `delegated`: run the cpu delegates on the portable kernels (isa=portable), so any difference
// from the undelegated block is a binding error, not a summation order.
Result<BlockRun> run_block(const ProgramSpec& spec, const std::string& path, bool delegated = false) {
  STATICLM_RETURN_IF_ERROR(write_program(spec, path).status());
  testing::TestRuntimes runtimes;
  LoadOptions load = runtimes.load_options();
  if (delegated) {
    load.backend_options["cpu"].emplace("isa", RawOptionValue::text("portable"));
  }
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const Program> program, Program::load(path, load));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<MethodSession> method, program->new_session("forward"));
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
  // Skip sets name nodes as they are after the backend's passes (its fusions merge some).
  auto fused = testing::build_example_graph(weights);
  ASSERT_TRUE(fused.ok());
  auto resolved = resolve_options(backend->option_schema(), {}, {});
  ASSERT_TRUE(resolved.ok());
  for (const std::unique_ptr<GraphPass>& pass : backend->passes(*resolved)) {
    ASSERT_TRUE(pass->run(**fused).ok());
  }
  const size_t num_nodes = (*fused)->nodes().size();
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
    auto actual = run_block(partitioned->spec, temp_path("block_split.slm"), /*delegated=*/true);
    ASSERT_TRUE(actual.ok()) << "skip " << join(skipped, ",") << ": " << actual.status().to_string();
    EXPECT_EQ(actual->logits, expected->logits) << "skip " << join(skipped, ",");
    EXPECT_EQ(actual->cache, expected->cache) << "skip " << join(skipped, ",");
  }
}

Status load_forward(const ProgramSpec& spec, const std::string& path) {
  STATICLM_RETURN_IF_ERROR(write_program(spec, path).status());
  return load_program(path);
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
      {cache.dtype, cache.shape, ValueStorage::kConstant, static_cast<uint64_t>(constant.constants.size() - 1), {}});
  auto& call = std::get<DelegateCallSpec>(constant.methods[0].instructions[0]);
  std::replace(call.inputs.begin(), call.inputs.end(), cache_value,
               static_cast<uint32_t>(constant.methods[0].values.size() - 1));
  refused = load_forward(constant, temp_path("writable_constant.slm"));
  EXPECT_NE(refused.message().find("which is a constant"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace staticlm
