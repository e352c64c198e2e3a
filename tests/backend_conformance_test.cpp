// SPDX-License-Identifier: Apache-2.0
// The backend conformance suite (like ggml's test-backend-ops or IREE's HAL CTS): every case of
// the op table (conformance/op_cases.h) runs as a one-op program on every registered backend, in
// each of its runtime configurations (the cpu backend at every ISA cap), and must give what the
// portable kernels give, outputs and in-place updated inputs alike. A backend that cannot run
// here says why (QNN without its SDK) and is skipped, never passed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "staticlm/builtin/builtin_export.h"
#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/core/cpu_features.h"
#include "staticlm/core/half.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/lowering/lower_program.h"
#include "staticlm/partition/partitioner.h"

#include "conformance/op_cases.h"
#include "export_helpers.h"

namespace staticlm {
namespace {

using conformance::CaseInput;
using conformance::Fill;
using conformance::OpCase;

// A backend under test: its id, the export options it needs, and one runtime configuration.
struct BackendConfig {
  std::string name;  // for test names
  std::string backend;
  std::vector<std::pair<std::string, std::string>> export_options;
  std::vector<std::pair<std::string, std::string>> runtime_options;
};

void PrintTo(const BackendConfig& config, std::ostream* out) {
  *out << config.name;
}

// Every backend this build registers, each in the runtime configurations that choose different
// kernels: the cpu backend at every `isa` cap of this build's architecture that leaves this CPU
// other features than the caps before it (on a CPU without AVX-512, avx512 is avx2 again; under
// an emulated Cortex-A53, every AArch64 cap but portable is neon). A backend missing here fails
// BackendConformanceCoverage below.
std::vector<BackendConfig> backend_configs() {
  std::vector<BackendConfig> configs;
  std::vector<CpuFeatures> seen;
  for (const IsaCap& cap : isa_caps()) {
    const CpuFeatures features = cpu_features_for_isa(cap.name).value();
    if (std::find(seen.begin(), seen.end(), features) != seen.end()) {
      continue;
    }
    seen.push_back(features);
    configs.push_back({"cpu_isa_" + std::string(cap.name), "cpu", {}, {{"isa", std::string(cap.name)}}});
  }
  configs.push_back({"qnn_htp", "qnn", {{"soc_model", "SM8650"}}, {}});
  return configs;
}

OptionMap option_map(const std::vector<std::pair<std::string, std::string>>& entries) {
  OptionMap map;
  for (const auto& [key, value] : entries) map.emplace(key, RawOptionValue::text(value));
  return map;
}

// Bytes of a random tensor of `spec` (block-quantized ones quantized from uniform floats).
std::vector<uint8_t> random_bytes(const CaseInput& input, std::mt19937& rng) {
  const TensorSpec& spec = input.spec;
  const int64_t count = num_elements(spec.shape);
  std::vector<uint8_t> bytes(*tensor_bytes(spec.dtype, spec.shape));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  if (input.fill != Fill::kUniform) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t value = input.fill == Fill::kIds ? static_cast<int64_t>(rng() % static_cast<uint64_t>(input.limit))
                                                     : input.values[static_cast<size_t>(i)];
      if (spec.dtype == DType::kI32) {
        const auto narrow = static_cast<int32_t>(value);
        std::memcpy(bytes.data() + i * 4, &narrow, 4);
      } else {
        std::memcpy(bytes.data() + i * 8, &value, 8);
      }
    }
    return bytes;
  }
  switch (spec.dtype) {
    case DType::kF32:
      for (int64_t i = 0; i < count; ++i) {
        const float value = uniform(rng);
        std::memcpy(bytes.data() + i * 4, &value, 4);
      }
      break;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < count; ++i) {
        const float value = uniform(rng);
        const uint16_t bits = spec.dtype == DType::kF16 ? f32_to_f16(value) : f32_to_bf16(value);
        std::memcpy(bytes.data() + i * 2, &bits, 2);
      }
      break;
    case DType::kQ8_0:
    case DType::kQ4_0: {
      // Symmetric per-block scales, the formats docs/ops.md defines.
      const bool q8 = spec.dtype == DType::kQ8_0;
      const size_t block_bytes = q8 ? 34 : 18;
      for (int64_t b = 0; b < count / 32; ++b) {
        float values[32];
        float amax = 0.0f;
        for (float& v : values) {
          v = uniform(rng);
          amax = std::max(amax, std::abs(v));
        }
        const float scale = amax / (q8 ? 127.0f : 7.0f);
        uint8_t* block = bytes.data() + static_cast<size_t>(b) * block_bytes;
        const uint16_t scale_bits = f32_to_f16(scale);
        std::memcpy(block, &scale_bits, 2);
        for (int j = 0; j < 32; ++j) {
          const float q = std::round(values[j] / scale);
          if (q8) {
            block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
          } else {
            const auto nibble = static_cast<uint8_t>(std::clamp(q, -8.0f, 7.0f) + 8.0f);
            block[2 + j % 16] = static_cast<uint8_t>(j < 16 ? (block[2 + j % 16] & 0xF0) | nibble
                                                            : (block[2 + j % 16] & 0x0F) | (nibble << 4));
          }
        }
      }
      break;
    }
    default: ADD_FAILURE() << "no random fill for " << dtype_name(spec.dtype);
  }
  return bytes;
}

// The case as a one-method program: inputs and constants, the op, every output; an in-place
// update is read back through a reshape so the method has an output of its own.
struct CaseProgram {
  std::unique_ptr<Graph> graph;
  std::vector<std::vector<uint8_t>> input_bytes;  // per graph input, in input order
};

Result<CaseProgram> build_case(const OpCase& c) {
  CaseProgram out;
  auto constants = std::make_shared<ConstantTable>();
  out.graph = std::make_unique<Graph>(constants);
  Graph& g = *out.graph;
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  std::vector<ValueId> operands;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const CaseInput& input = c.inputs[i];
    std::vector<uint8_t> bytes = random_bytes(input, rng);
    if (input.constant) {
      STATICLM_ASSIGN_OR_RETURN(ConstantId id, constants->add(str_cat("w", i), input.spec.dtype, input.spec.shape,
                                                              make_owned_source(std::move(bytes))));
      STATICLM_ASSIGN_OR_RETURN(ValueId value, g.use_constant(id));
      operands.push_back(value);
    } else {
      STATICLM_ASSIGN_OR_RETURN(ValueId value, g.add_input(str_cat("x", i), input.spec.dtype, input.spec.shape));
      operands.push_back(value);
      out.input_bytes.push_back(std::move(bytes));
    }
  }
  STATICLM_ASSIGN_OR_RETURN(std::vector<ValueId> results, g.add_node(c.op, operands, c.attributes, c.name));
  for (size_t i = 0; i < results.size(); ++i) {
    ValueId result = results[i];
    const std::vector<InPlaceUpdate> updates = in_place_updates(c.op, c.attributes);
    if (std::any_of(updates.begin(), updates.end(), [i](const InPlaceUpdate& u) { return u.output == i; })) {
      STATICLM_ASSIGN_OR_RETURN(result, g.add(OpKind::kReshape, {result}, {{"shape", Shape{-1}}}));
    }
    STATICLM_RETURN_IF_ERROR(g.add_output(str_cat("y", i), result));
  }
  return out;
}

// What a run leaves: every output, then every input (in-place updates show there).
using RunBytes = std::vector<std::vector<uint8_t>>;

Result<RunBytes> run_program(const ProgramSpec& spec, const std::string& path, const CaseProgram& program,
                             const EngineRuntime& runtime, const OptionMap& runtime_options,
                             const std::string& backend) {
  STATICLM_RETURN_IF_ERROR(write_program(spec, path).status());
  LoadOptions load;
  load.kernels = runtime.kernels.get();
  load.backends = runtime.backends.get();
  load.num_threads = 2;
  if (!backend.empty()) {
    load.backend_options[backend] = runtime_options;
  }
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const Program> loaded, Program::load(path, std::move(load)));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<MethodSession> session, loaded->new_session("forward"));
  RunBytes inputs = program.input_bytes;
  RunBytes outputs;
  for (size_t i = 0; i < session->inputs().size(); ++i) {
    const IoTensorInfo& info = session->inputs()[i];
    STATICLM_RETURN_IF_ERROR(session->bind_input(info.name, info.dtype, inputs[i].data(), inputs[i].size()));
  }
  for (const IoTensorInfo& info : session->outputs()) {
    outputs.emplace_back(info.nbytes, 0xAB);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const IoTensorInfo& info = session->outputs()[i];
    STATICLM_RETURN_IF_ERROR(session->bind_output(info.name, info.dtype, outputs[i].data(), outputs[i].size()));
  }
  STATICLM_RETURN_IF_ERROR(session->execute());
  for (std::vector<uint8_t>& input : inputs) outputs.push_back(std::move(input));
  return outputs;
}

// Element i of a tensor as a double (the dtypes ops produce).
double element(const std::vector<uint8_t>& bytes, DType dtype, size_t i) {
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, bytes.data() + i * 4, 4);
      return v;
    }
    case DType::kF16:
    case DType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + i * 2, 2);
      return dtype == DType::kF16 ? f16_to_f32(bits) : bf16_to_f32(bits);
    }
    case DType::kQ8_0: {  // a cache written by kv_cache_update / qkv_rope_cache: its dequantized value
      const uint8_t* block = bytes.data() + i / 32 * 34;
      uint16_t bits;
      std::memcpy(&bits, block, 2);
      return static_cast<double>(f16_to_f32(bits)) * static_cast<int8_t>(block[2 + i % 32]);
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, bytes.data() + i * 4, 4);
      return v;
    }
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, bytes.data() + i * 8, 8);
      return static_cast<double>(v);
    }
    default: return NAN;
  }
}

void expect_same(const RunBytes& actual, const RunBytes& expected, const std::vector<TensorSpec>& specs,
                 double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    const TensorSpec& spec = specs[t];
    const auto count = static_cast<size_t>(num_elements(spec.shape));
    ASSERT_EQ(actual[t].size(), expected[t].size()) << "tensor " << t;
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      const double want = element(expected[t], spec.dtype, i);
      const double got = element(actual[t], spec.dtype, i);
      if (!(std::abs(got - want) <= tolerance * std::max(1.0, std::abs(want))) && bad++ < 3) {
        ADD_FAILURE() << "tensor " << t << " (" << dtype_name(spec.dtype) << shape_string(spec.shape) << ") element "
                      << i << ": backend " << got << ", portable " << want;
      }
    }
  }
}

class BackendConformanceTest : public ::testing::TestWithParam<std::tuple<BackendConfig, size_t>> {};

TEST_P(BackendConformanceTest, MatchesThePortableKernels) {
  const BackendConfig& config = std::get<0>(GetParam());
  const OpCase& c = conformance::op_cases()[std::get<1>(GetParam())];
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  auto backend = registry.get(config.backend);
  ASSERT_TRUE(backend.ok()) << backend.status().to_string();
  auto runtime = builtin_engine_runtime();
  ASSERT_TRUE(runtime.ok());

  auto reference_case = build_case(c);
  ASSERT_TRUE(reference_case.ok()) << reference_case.status().to_string();
  const std::vector<MethodGraph> plain = {{"forward", reference_case->graph.get()}};
  auto reference_spec = lower_to_program(plain, {});
  ASSERT_TRUE(reference_spec.ok()) << reference_spec.status().to_string();

  auto partitioner = Partitioner::from_options(**backend, option_map(config.export_options));
  ASSERT_TRUE(partitioner.ok()) << partitioner.status().to_string();
  auto delegated_case = build_case(c);
  ASSERT_TRUE(delegated_case.ok());
  const std::vector<PartitionMethod> methods = {{"forward", delegated_case->graph.get()}};
  auto delegated = partitioner->run(methods, LowerOptions{});
  if (!delegated.ok() && delegated.status().code() == StatusCode::kUnavailable) {
    GTEST_SKIP() << config.backend << " cannot build delegates here: " << delegated.status().message();
  }
  ASSERT_TRUE(delegated.ok()) << delegated.status().to_string();
  for (const NodePlacement& node : delegated->report.methods[0].nodes) {
    if (node.delegate < 0 && node.op == op_name(c.op)) {
      GTEST_SKIP() << config.backend << " does not take this case: " << node.reason;
    }
  }

  const std::string stem = testing::temp_path(config.name + "_" + c.name);
  auto expected = run_program(*reference_spec, stem + "_portable.slm", *reference_case, *runtime, {}, "");
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  auto actual = run_program(delegated->spec, stem + "_backend.slm", *delegated_case, *runtime,
                            option_map(config.runtime_options), config.backend);
  if (!actual.ok() && actual.status().code() == StatusCode::kUnavailable) {
    GTEST_SKIP() << config.backend << " cannot run delegates here: " << actual.status().message();
  }
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  std::vector<TensorSpec> specs;
  for (const GraphOutput& output : reference_case->graph->outputs()) {
    specs.push_back(reference_case->graph->spec(output.value));
  }
  for (const GraphInput& input : reference_case->graph->inputs()) {
    specs.push_back(reference_case->graph->spec(input.value));
  }
  expect_same(*actual, *expected, specs, c.tolerance);
}

std::vector<size_t> case_indices() {
  std::vector<size_t> indices(conformance::op_cases().size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

INSTANTIATE_TEST_SUITE_P(Ops, BackendConformanceTest,
                         ::testing::Combine(::testing::ValuesIn(backend_configs()),
                                            ::testing::ValuesIn(case_indices())),
                         [](const auto& test_info) {
                           return std::get<0>(test_info.param).name + "_" +
                                  conformance::op_cases()[std::get<1>(test_info.param)].name;
                         });

TEST(BackendConformanceCoverage, EveryRegisteredBackendAndEveryOpIsCovered) {
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  std::set<std::string> configured;
  for (const BackendConfig& config : backend_configs()) configured.insert(config.backend);
  for (const Backend* backend : registry.all()) {
    EXPECT_EQ(configured.count(std::string(backend->id())), 1u)
        << "backend '" << backend->id() << "' is not in the suite";
  }
  std::set<OpKind> ops;
  std::set<std::string> names;
  for (const OpCase& c : conformance::op_cases()) {
    ops.insert(c.op);
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
  }
  for (const OpDef& def : all_ops()) {
    EXPECT_EQ(ops.count(def.kind), 1u) << "op '" << def.name << "' has no conformance case";
  }
}

}  // namespace
}  // namespace staticlm
