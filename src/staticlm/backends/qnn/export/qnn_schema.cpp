// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/export/qnn_schema.h"

#include <array>

#include "staticlm/backends/api/backend.h"

namespace staticlm {
namespace {

// Qualcomm's SoC table (QcomChipset / _soc_info_table): HTP arch, VTCM size, LPAI version.
constexpr std::array<QnnChipset, 21> kChipsets = {{
    {"SA8295", 68, 8, 0},   {"SA8540", 68, 8, 0},   {"SA8797", 81, 16, 0},  {"SM8350", 68, 4, 0},
    {"SM8450", 69, 8, 0},   {"SM8475", 69, 8, 0},   {"SM8550", 73, 8, 0},   {"SA8255", 73, 8, 0},
    {"SM8650", 75, 8, 0},   {"SM8750", 79, 8, 0},   {"SM8845", 81, 8, 0},   {"SM8850", 81, 8, 6},
    {"SSG2115P", 73, 2, 0}, {"SSG2125P", 73, 2, 0}, {"SXR1230P", 73, 2, 0}, {"SXR2230P", 69, 8, 0},
    {"SXR2330P", 79, 8, 0}, {"QCS9100", 73, 8, 0},  {"QCM6490", 68, 2, 0},  {"SAR2230P", 81, 4, 6},
    {"SW6100", 81, 4, 0},
}};

}  // namespace

std::span<const QnnChipset> qnn_chipsets() {
  return kChipsets;
}

const QnnChipset* find_qnn_chipset(std::string_view name) {
  for (const QnnChipset& chipset : kChipsets) {
    if (chipset.name == name) {
      return &chipset;
    }
  }
  return nullptr;
}

OptionSchema qnn_option_schema() {
  OptionSchema schema;
  schema.backend_id = "qnn";
  schema.selector = "backend";
  const std::vector<std::string> htp = {"htp"};
  const std::vector<std::string> gpu = {"gpu"};
  const std::vector<std::string> lpai = {"lpai"};

  OptionSpec soc;
  soc.name = "soc_model";
  soc.type = OptionType::kEnum;
  soc.required = true;
  soc.route = std::string(kQnnRouteCommon);
  soc.doc = "target chipset";
  std::vector<std::string> lpai_chipsets;
  for (const QnnChipset& chipset : kChipsets) {
    std::string doc = str_cat("HTP v", chipset.htp_arch, ", ", chipset.vtcm_mb, " MB VTCM");
    if (chipset.lpai_version > 0) {
      doc += str_cat(", LPAI v", chipset.lpai_version);
      lpai_chipsets.emplace_back(chipset.name);
    }
    soc.allowed.push_back({std::string(chipset.name), doc, std::nullopt});
  }

  OptionSpec backend = enum_option("backend", "htp",
                                   {{"htp", "Hexagon tensor processor (NPU)", std::nullopt},
                                    {"gpu", "Adreno GPU", std::nullopt},
                                    {"lpai", "low-power AI core", kQnnLpaiMinSdk}},
                                   kQnnRouteCommon, {}, "QNN backend type; selects which builder's options apply");
  backend.constraints.push_back({OptionConstraint::Kind::kRequires,
                                 {"lpai"},
                                 "soc_model",
                                 lpai_chipsets,
                                 "only these chipsets have an LPAI core"});

  OptionSpec online_prepare = bool_option("online_prepare", false, kQnnRouteCommon, {},
                                          "compose the QNN graph on the device at init, not at export");
  online_prepare.constraints.push_back(
      {OptionConstraint::Kind::kConflicts, {}, "backend", {"lpai"}, "LPAI graphs are prepared at export only"});
  online_prepare.constraints.push_back({OptionConstraint::Kind::kConflicts,
                                        {},
                                        "use_multi_contexts",
                                        {},
                                        "multiple contexts are built at export; disable online_prepare"});

  OptionSpec weight_sharing = bool_option("use_weight_sharing", false, kRouteSelectedType, {"htp", "gpu"},
                                          "share weights between the graphs (prefill, decode) of one context");

  std::vector<OptionSpec> lpai_options = {
      int_option("fps", 1, 1, 1000, kQnnRouteLpai, lpai, "expected inferences per second"),
      int_option("ftrt_ratio", 10, 1, 1000, kQnnRouteLpai, lpai, "faster-than-real-time ratio"),
      enum_option("client_perf_type", "real_time", allowed_values({"real_time", "non_real_time"}), kQnnRouteLpai, lpai,
                  "scheduling class of the client"),
      enum_option("affinity", "soft", allowed_values({"soft", "hard"}), kQnnRouteLpai, lpai, "core affinity"),
      int_option("core_selection", 0, 0, 15, kQnnRouteLpai, lpai, "LPAI core to run on"),
      enum_option("target_env", "arm", allowed_values({"arm", "adsp", "x86"}), kQnnRouteLpai, lpai,
                  "where the LPAI graph is prepared to run"),
  };
  for (OptionSpec& spec : lpai_options) {
    spec.min_sdk_version = kQnnLpaiMinSdk;
  }

  schema.options = {
      soc,
      backend,
      // Common.
      bool_option("debug", false, kQnnRouteCommon, {}, "QNN logs at debug level"),
      bool_option("saver", false, kQnnRouteCommon, {}, "record the graph with QNN Saver instead of running it"),
      online_prepare,
      enum_option("profile_level", "off", allowed_values({"off", "basic", "detailed", "optrace"}), kQnnRouteCommon, {},
                  "QNN profiling detail"),
      bool_option("shared_buffer", false, kQnnRouteCommon, {}, "bind I/O as shared (rpcmem) buffers, no copies"),
      bool_option("dump_intermediate_outputs", false, kQnnRouteCommon, {},
                  "dump every intermediate tensor (debugging)"),
      // HTP.
      bool_option("use_fp16", true, kQnnRouteHtp, htp, "run float graphs in fp16 (false: the graph must be quantized)"),
      bool_option("use_dlbc", false, kQnnRouteHtp, htp, "deep learning bandwidth compression of weights"),
      bool_option("use_multi_contexts", false, kQnnRouteHtp, htp, "split a large graph over several contexts"),
      weight_sharing,
      bool_option("use_slc_allocator", false, kQnnRouteHtp, htp, "allocate from the system-level cache"),
      enum_option("htp_performance_mode", "burst",
                  allowed_values({"default", "sustained_high_performance", "burst", "high_performance", "power_saver",
                                  "low_power_saver", "high_power_saver", "low_balanced", "balanced"}),
                  kQnnRouteHtp, htp, "HTP power / performance vote"),
      // GPU.
      enum_option("precision", "user_provided", allowed_values({"fp32", "fp16", "hybrid", "user_provided"}),
                  kQnnRouteGpu, gpu, "GPU arithmetic precision"),
      bool_option("use_memory_optimizations", true, kQnnRouteGpu, gpu, "GPU memory optimizations"),
      bool_option("use_node_optimizations", true, kQnnRouteGpu, gpu, "GPU node fusions"),
      bool_option("use_queue_recording", true, kQnnRouteGpu, gpu, "record the GPU command queue once and replay it"),
  };
  schema.options.insert(schema.options.end(), lpai_options.begin(), lpai_options.end());
  for (OptionSpec& spec : partitioner_option_specs()) {
    schema.options.push_back(std::move(spec));
  }
  return schema;
}

}  // namespace staticlm
