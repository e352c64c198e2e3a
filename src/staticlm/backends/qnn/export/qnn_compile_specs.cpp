// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/export/qnn_compile_specs.h"

#include <nlohmann/json.hpp>

namespace staticlm {
namespace {

CompileSpecEntry entry(std::string key, const std::string& text) {
  return {std::move(key), std::vector<uint8_t>(text.begin(), text.end())};
}

CompileSpecEntry json_entry(std::string key, const nlohmann::json& value) {
  return entry(std::move(key), value.dump());
}

}  // namespace

Result<QnnCompileOptions> qnn_compile_options(const ResolvedOptions& s) {
  QnnCompileOptions o;
  STATICLM_ASSIGN_OR_RETURN(o.soc_model, s.get_string("soc_model"));
  STATICLM_ASSIGN_OR_RETURN(o.backend, s.get_string("backend"));
  STATICLM_ASSIGN_OR_RETURN(o.common.debug, s.get_bool("debug"));
  STATICLM_ASSIGN_OR_RETURN(o.common.saver, s.get_bool("saver"));
  STATICLM_ASSIGN_OR_RETURN(o.common.online_prepare, s.get_bool("online_prepare"));
  STATICLM_ASSIGN_OR_RETURN(o.common.profile_level, s.get_string("profile_level"));
  STATICLM_ASSIGN_OR_RETURN(o.common.shared_buffer, s.get_bool("shared_buffer"));
  STATICLM_ASSIGN_OR_RETURN(o.common.dump_intermediate_outputs, s.get_bool("dump_intermediate_outputs"));
  if (o.backend == "htp") {
    STATICLM_ASSIGN_OR_RETURN(o.htp.use_fp16, s.get_bool("use_fp16"));
    STATICLM_ASSIGN_OR_RETURN(o.htp.use_dlbc, s.get_bool("use_dlbc"));
    STATICLM_ASSIGN_OR_RETURN(o.htp.use_multi_contexts, s.get_bool("use_multi_contexts"));
    STATICLM_ASSIGN_OR_RETURN(o.htp.use_weight_sharing, s.get_bool("use_weight_sharing"));
    STATICLM_ASSIGN_OR_RETURN(o.htp.use_slc_allocator, s.get_bool("use_slc_allocator"));
    STATICLM_ASSIGN_OR_RETURN(o.htp.performance_mode, s.get_string("htp_performance_mode"));
  } else if (o.backend == "gpu") {
    STATICLM_ASSIGN_OR_RETURN(o.gpu.precision, s.get_string("precision"));
    STATICLM_ASSIGN_OR_RETURN(o.gpu.use_memory_optimizations, s.get_bool("use_memory_optimizations"));
    STATICLM_ASSIGN_OR_RETURN(o.gpu.use_node_optimizations, s.get_bool("use_node_optimizations"));
    STATICLM_ASSIGN_OR_RETURN(o.gpu.use_queue_recording, s.get_bool("use_queue_recording"));
    STATICLM_ASSIGN_OR_RETURN(o.gpu.use_weight_sharing, s.get_bool("use_weight_sharing"));
  } else if (o.backend == "lpai") {
    STATICLM_ASSIGN_OR_RETURN(o.lpai.fps, s.get_int("fps"));
    STATICLM_ASSIGN_OR_RETURN(o.lpai.ftrt_ratio, s.get_int("ftrt_ratio"));
    STATICLM_ASSIGN_OR_RETURN(o.lpai.client_perf_type, s.get_string("client_perf_type"));
    STATICLM_ASSIGN_OR_RETURN(o.lpai.affinity, s.get_string("affinity"));
    STATICLM_ASSIGN_OR_RETURN(o.lpai.core_selection, s.get_int("core_selection"));
    STATICLM_ASSIGN_OR_RETURN(o.lpai.target_env, s.get_string("target_env"));
  } else {
    return internal_error("qnn: unknown backend type '", o.backend, "'");
  }
  return o;
}

std::vector<CompileSpecEntry> build_qnn_compile_specs(const QnnCompileOptions& o) {
  std::vector<CompileSpecEntry> specs = {entry("qnn.soc_model", o.soc_model), entry("qnn.backend", o.backend)};
  const QnnCommonOptions& c = o.common;
  specs.push_back(json_entry("qnn.common", {{"debug", c.debug},
                                            {"saver", c.saver},
                                            {"online_prepare", c.online_prepare},
                                            {"profile_level", c.profile_level},
                                            {"shared_buffer", c.shared_buffer},
                                            {"dump_intermediate_outputs", c.dump_intermediate_outputs}}));
  if (o.backend == "htp") {
    const QnnHtpOptions& h = o.htp;
    specs.push_back(json_entry("qnn.htp", {{"use_fp16", h.use_fp16},
                                           {"use_dlbc", h.use_dlbc},
                                           {"use_multi_contexts", h.use_multi_contexts},
                                           {"use_weight_sharing", h.use_weight_sharing},
                                           {"use_slc_allocator", h.use_slc_allocator},
                                           {"performance_mode", h.performance_mode}}));
  } else if (o.backend == "gpu") {
    const QnnGpuOptions& g = o.gpu;
    specs.push_back(json_entry("qnn.gpu", {{"precision", g.precision},
                                           {"use_memory_optimizations", g.use_memory_optimizations},
                                           {"use_node_optimizations", g.use_node_optimizations},
                                           {"use_queue_recording", g.use_queue_recording},
                                           {"use_weight_sharing", g.use_weight_sharing}}));
  } else {
    const QnnLpaiOptions& l = o.lpai;
    specs.push_back(json_entry("qnn.lpai", {{"fps", l.fps},
                                            {"ftrt_ratio", l.ftrt_ratio},
                                            {"client_perf_type", l.client_perf_type},
                                            {"affinity", l.affinity},
                                            {"core_selection", l.core_selection},
                                            {"target_env", l.target_env}}));
  }
  return specs;
}

}  // namespace staticlm
