// SPDX-License-Identifier: Apache-2.0
// The qnn schema through resolve_options (what Partitioner::from_options calls): the routing,
// refusals and SDK-version rules the issue lists, the compile specs built from valid settings,
// and the "QNN SDK not found" refusals of preprocess and init.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/backends/qnn/export/qnn_backend.h"
#include "staticlm/backends/qnn/export/qnn_compile_specs.h"
#include "staticlm/backends/qnn/export/qnn_schema.h"
#include "staticlm/backends/qnn/runtime/qnn_runtime.h"

namespace staticlm {
namespace {

QnnSdk sdk_at(const char* version, std::string root = "") {
  QnnSdk sdk;
  sdk.info.name = "QNN SDK";
  if (version != nullptr) {
    sdk.info.version = *SdkVersion::parse(version);
    sdk.info.version_source = "QNN_SDK_VERSION";
  } else {
    sdk.info.unknown_reason = "QNN_SDK_VERSION is not set and QNN_SDK_ROOT is not set";
  }
  sdk.root = std::move(root);
  sdk.root_problem = sdk.root.empty() ? "QNN_SDK_ROOT is not set" : "";
  return sdk;
}

QnnBackend backend_with(const char* version, std::string root = "") {
  QnnSdk sdk = sdk_at(version, std::move(root));
  return QnnBackend([sdk] { return sdk; });
}

OptionMap texts(std::initializer_list<std::pair<std::string, std::string>> entries) {
  OptionMap map;
  for (const auto& [key, value] : entries) map.emplace(key, RawOptionValue::text(value, "--option"));
  return map;
}

Result<ResolvedOptions> resolve(const QnnBackend& backend, const OptionMap& options) {
  return resolve_options(backend.option_schema(), options, backend.sdk());
}

Status refusal(const QnnBackend& backend, const OptionMap& options) {
  auto resolved = resolve(backend, options);
  EXPECT_FALSE(resolved.ok()) << "expected a refusal";
  return resolved.ok() ? ok_status() : resolved.status();
}

void expect_message(const Status& status, std::string_view expected) {
  EXPECT_NE(status.message().find(expected), std::string::npos) << "message: " << status.message();
}

const CompileSpecEntry* find_spec(const std::vector<CompileSpecEntry>& specs, std::string_view key) {
  for (const CompileSpecEntry& spec : specs) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

nlohmann::json spec_json(const std::vector<CompileSpecEntry>& specs, std::string_view key) {
  const CompileSpecEntry* spec = find_spec(specs, key);
  EXPECT_NE(spec, nullptr) << key;
  return spec == nullptr ? nlohmann::json() : nlohmann::json::parse(spec->value);
}

TEST(QnnOptionsTest, SchemaIsConsistent) {
  EXPECT_TRUE(check_schema(qnn_option_schema()).ok());
  // The LPAI chipsets are the ones Qualcomm's table gives an LPAI version.
  std::vector<std::string> lpai;
  for (const QnnChipset& chipset : qnn_chipsets()) {
    if (chipset.lpai_version > 0) lpai.emplace_back(chipset.name);
  }
  EXPECT_EQ(lpai, (std::vector<std::string>{"SM8850", "SAR2230P"}));
}

TEST(QnnOptionsTest, ValidHtpSpecRoutesToTheHtpBuilder) {
  QnnBackend backend = backend_with("2.37.0.250724");
  auto resolved = resolve(backend, texts({{"soc_model", "SM8650"},
                                          {"use_fp16", "false"},
                                          {"htp_performance_mode", "high_performance"},
                                          {"use_weight_sharing", "true"},
                                          {"profile_level", "detailed"}}));
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  EXPECT_EQ(resolved->selected_type(), "htp");
  EXPECT_EQ(resolved->find("use_weight_sharing")->route, "htp");
  EXPECT_EQ(resolved->find("profile_level")->route, "common");
  EXPECT_EQ(resolved->find("precision"), nullptr) << "GPU options are not in effect under htp";
  auto compile = qnn_compile_options(*resolved);
  ASSERT_TRUE(compile.ok()) << compile.status().to_string();
  const std::vector<CompileSpecEntry> specs = build_qnn_compile_specs(*compile);
  const CompileSpecEntry* soc = find_spec(specs, "qnn.soc_model");
  ASSERT_NE(soc, nullptr);
  EXPECT_EQ(std::string(soc->value.begin(), soc->value.end()), "SM8650");
  nlohmann::json htp = spec_json(specs, "qnn.htp");
  EXPECT_EQ(htp["use_fp16"], false);
  EXPECT_EQ(htp["performance_mode"], "high_performance");
  EXPECT_EQ(htp["use_weight_sharing"], true);
  EXPECT_EQ(htp["use_dlbc"], false);  // defaulted
  EXPECT_EQ(spec_json(specs, "qnn.common")["profile_level"], "detailed");
  EXPECT_EQ(find_spec(specs, "qnn.gpu"), nullptr);
}

TEST(QnnOptionsTest, ValidGpuSpecRoutesToTheGpuBuilder) {
  QnnBackend backend = backend_with(nullptr);
  auto resolved = resolve(backend, texts({{"soc_model", "SM8550"},
                                          {"backend", "gpu"},
                                          {"precision", "fp16"},
                                          {"use_queue_recording", "false"},
                                          {"use_weight_sharing", "true"}}));
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  EXPECT_EQ(resolved->find("use_weight_sharing")->route, "gpu");
  EXPECT_EQ(resolved->find("use_fp16"), nullptr);
  const std::vector<CompileSpecEntry> specs = build_qnn_compile_specs(*qnn_compile_options(*resolved));
  nlohmann::json gpu = spec_json(specs, "qnn.gpu");
  EXPECT_EQ(gpu["precision"], "fp16");
  EXPECT_EQ(gpu["use_queue_recording"], false);
  EXPECT_EQ(gpu["use_memory_optimizations"], true);
  EXPECT_EQ(gpu["use_weight_sharing"], true);
  EXPECT_EQ(find_spec(specs, "qnn.htp"), nullptr);
}

TEST(QnnOptionsTest, UnknownNamesGetSuggestions) {
  QnnBackend backend = backend_with("2.37");
  Status status = refusal(backend, texts({{"soc_model", "SM8650"}, {"use_fp61", "true"}}));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  expect_message(status, "unknown option 'use_fp61' for backend 'qnn' (did you mean 'use_fp16'?)");
  expect_message(refusal(backend, texts({{"soc_modle", "SM8650"}})), "did you mean 'soc_model'?");
  expect_message(refusal(backend, texts({{"soc_model", "SM865"}})),
                 "option 'soc_model' (--option): 'SM865' is not one of SA8295");
  expect_message(refusal(backend, texts({{"soc_model", "SM865"}})), "(did you mean 'SM8650'");
  expect_message(refusal(backend, texts({{"soc_model", "SM8650"}, {"htp_performance_mode", "brust"}})),
                 "(did you mean 'burst'?)");
}

TEST(QnnOptionsTest, WrongTypesAreRefused) {
  QnnBackend backend = backend_with("2.39");
  expect_message(refusal(backend, texts({{"soc_model", "SM8650"}, {"use_fp16", "maybe"}})),
                 "option 'use_fp16' (--option): expected a bool (true or false), found 'maybe'");
  expect_message(refusal(backend, texts({{"soc_model", "SM8850"}, {"backend", "lpai"}, {"fps", "fast"}})),
                 "option 'fps' (--option): expected an int, found 'fast'");
  OptionMap json_options = texts({{"soc_model", "SM8650"}});
  RawOptionValue fp16;
  fp16.form = RawOptionValue::Form::kString;
  fp16.value = std::string("true");
  fp16.origin = "qnn.json";
  json_options.emplace("use_fp16", fp16);
  expect_message(refusal(backend, json_options),
                 "option 'use_fp16' (qnn.json): expected a bool (true or false), "
                 "found JSON string \"true\"");
}

TEST(QnnOptionsTest, OptionsOfAnotherBackendTypeAreRefused) {
  QnnBackend backend = backend_with("2.37");
  Status htp_under_gpu = refusal(backend, texts({{"soc_model", "SM8650"}, {"backend", "gpu"}, {"use_fp16", "true"}}));
  EXPECT_EQ(htp_under_gpu.code(), StatusCode::kInvalidArgument);
  expect_message(htp_under_gpu, "option 'use_fp16' applies to backend htp, not backend gpu");
  expect_message(refusal(backend, texts({{"soc_model", "SM8650"}, {"precision", "fp16"}})),
                 "option 'precision' applies to backend gpu, not backend htp (the default)");
  expect_message(
      refusal(backend, texts({{"soc_model", "SM8650"}, {"backend", "gpu"}, {"htp_performance_mode", "burst"}})),
      "option 'htp_performance_mode' applies to backend htp, not backend gpu");
}

TEST(QnnOptionsTest, ConflictingOptionsAreRefused) {
  QnnBackend backend = backend_with("2.39.0.250925");
  Status multi =
      refusal(backend, texts({{"soc_model", "SM8650"}, {"online_prepare", "true"}, {"use_multi_contexts", "true"}}));
  EXPECT_EQ(multi.code(), StatusCode::kInvalidArgument);
  expect_message(multi, "option 'online_prepare' conflicts with 'use_multi_contexts'");
  expect_message(refusal(backend, texts({{"soc_model", "SM8850"}, {"backend", "lpai"}, {"online_prepare", "true"}})),
                 "option 'online_prepare' conflicts with 'backend' = 'lpai': LPAI graphs are prepared at export only");
  EXPECT_TRUE(resolve(backend, texts({{"soc_model", "SM8650"}, {"online_prepare", "true"}})).ok());
}

TEST(QnnOptionsTest, LpaiNeedsSdk239AndAChipsetWithAnLpai) {
  const OptionMap lpai = texts({{"soc_model", "SM8850"}, {"backend", "lpai"}, {"fps", "30"}});
  Status old_sdk = refusal(backend_with("2.37.0.250724"), lpai);
  EXPECT_EQ(old_sdk.code(), StatusCode::kFailedPrecondition);
  expect_message(old_sdk,
                 "option 'backend' = 'lpai' needs QNN SDK >= 2.39.0, found 2.37.0.250724 (from QNN_SDK_VERSION)");

  for (const char* version : {"2.39", "2.39.0.250925", "3.0"}) {
    QnnBackend backend = backend_with(version);
    auto resolved = resolve(backend, lpai);
    ASSERT_TRUE(resolved.ok()) << version << ": " << resolved.status().to_string();
    const std::vector<CompileSpecEntry> specs = build_qnn_compile_specs(*qnn_compile_options(*resolved));
    nlohmann::json options = spec_json(specs, "qnn.lpai");
    EXPECT_EQ(options["fps"], 30);
    EXPECT_EQ(options["ftrt_ratio"], 10);
    EXPECT_EQ(options["target_env"], "arm");
  }

  Status no_lpai = refusal(backend_with("2.40"), texts({{"soc_model", "SM8650"}, {"backend", "lpai"}}));
  EXPECT_EQ(no_lpai.code(), StatusCode::kInvalidArgument);
  expect_message(no_lpai,
                 "option 'backend' = 'lpai' requires 'soc_model' to be one of SM8850, SAR2230P (found "
                 "'SM8650'): only these chipsets have an LPAI core");
}

TEST(QnnOptionsTest, AnUnknownSdkVersionIsSaidSoNeverTooOld) {
  Status unknown = refusal(backend_with(nullptr), texts({{"soc_model", "SM8850"}, {"backend", "lpai"}}));
  EXPECT_EQ(unknown.code(), StatusCode::kFailedPrecondition);
  expect_message(unknown, "QNN SDK version unknown (QNN_SDK_VERSION is not set and QNN_SDK_ROOT is not set)");
  EXPECT_EQ(unknown.message().find("found"), std::string::npos) << unknown.message();
  // Options without a version gate need no SDK version.
  EXPECT_TRUE(resolve(backend_with(nullptr), texts({{"soc_model", "SM8650"}})).ok());
}

TEST(QnnOptionsTest, SocModelIsRequired) {
  Status missing = refusal(backend_with("2.37"), texts({{"backend", "htp"}}));
  expect_message(missing, "option 'soc_model' is required for backend 'qnn' (one of SA8295, SA8540");
}

// A one-node partition for preprocess.
struct OneNode {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>(std::make_shared<ConstantTable>());
  OneNode() {
    ValueId x = *graph->add_input("input_0", DType::kF32, {4});
    EXPECT_TRUE(graph->add_output("output_0", *graph->add(OpKind::kSilu, {x})).ok());
  }
};

TEST(QnnOptionsTest, PreprocessAndInitNeverPretendWithoutTheSdk) {
  QnnBackend backend = backend_with("2.37");
  auto resolved = resolve(backend, texts({{"soc_model", "SM8650"}}));
  ASSERT_TRUE(resolved.ok());
  OneNode partition;
  PartitionSubgraph subgraph{"prefill", 0, partition.graph.get(), {0}};
  EXPECT_TRUE(backend.supports(*partition.graph, 0, *resolved).supported);
  auto payload = backend.preprocess(subgraph, *resolved);
  ASSERT_FALSE(payload.ok());
  EXPECT_EQ(payload.status().code(), StatusCode::kUnavailable);
  expect_message(payload.status(), "QNN SDK not found (QNN_SDK_ROOT is not set)");

  QnnBackend with_sdk = backend_with("2.37", "/opt/qairt/2.37.0.250724");
  auto unbuilt = with_sdk.preprocess(subgraph, *resolved);
  ASSERT_FALSE(unbuilt.ok());
  EXPECT_EQ(unbuilt.status().code(), StatusCode::kUnimplemented);
  expect_message(unbuilt.status(), "QNN SDK found at '/opt/qairt/2.37.0.250724', but this build cannot compose");

  QnnBackendRuntime runtime([] { return QnnSdk{}; });
  ASSERT_TRUE(check_schema(runtime.runtime_options()).ok());
  auto runtime_options = resolve_options(runtime.runtime_options(), {}, runtime.sdk());
  ASSERT_TRUE(runtime_options.ok());
  DelegateInit init;
  init.options = &*runtime_options;
  auto handle = runtime.init(init);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), StatusCode::kUnavailable);
  expect_message(handle.status(), "QNN SDK not found");
  EXPECT_EQ(runtime.preferred_allocator(), "rpcmem");
}

TEST(QnnOptionsTest, RuntimeOptionsAreValidatedLikeExportOptions) {
  QnnBackendRuntime runtime([] { return QnnSdk{}; });
  auto resolved = resolve_options(runtime.runtime_options(), texts({{"htp_performance_mode", "power_saver"}}), {});
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  EXPECT_EQ(*resolved->get_string("htp_performance_mode"), "power_saver");
  EXPECT_EQ(*resolved->get_string("log_level"), "warn");
  auto unknown = resolve_options(runtime.runtime_options(), texts({{"htp_performance_mod", "burst"}}), {});
  ASSERT_FALSE(unknown.ok());
  expect_message(unknown.status(), "did you mean 'htp_performance_mode'?");
  auto bad_value = resolve_options(runtime.runtime_options(), texts({{"profile_level", "everything"}}), {});
  ASSERT_FALSE(bad_value.ok());
  expect_message(bad_value.status(), "profile_level");
}

TEST(QnnOptionsTest, SixtyFourBitIntegersStayOffQnn) {
  auto graph = std::make_unique<Graph>(std::make_shared<ConstantTable>());
  ValueId ids = *graph->add_input("ids", DType::kI64, {4});
  ValueId cast = *graph->add(OpKind::kCast, {ids}, {{"dtype", std::string("f32")}});
  ASSERT_TRUE(graph->add_output("out", cast).ok());
  QnnBackend backend = backend_with("2.37");
  auto resolved = resolve(backend, texts({{"soc_model", "SM8650"}}));
  ASSERT_TRUE(resolved.ok());
  NodeSupport support = backend.supports(*graph, 0, *resolved);
  EXPECT_FALSE(support.supported);
  EXPECT_EQ(support.reason, "QNN has no 64-bit integer tensors");
}

}  // namespace
}  // namespace staticlm
