// SPDX-License-Identifier: Apache-2.0
// The qnn backend's typed settings and the compile-spec builders that serialize them into the
// program, one per route: the chipset and backend type, the common options, and the options of
// the selected backend type (HTP, GPU or LPAI). Each entry's value is JSON bytes, so the runtime
// side (and `staticlm inspect`) reads them without this build's structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "staticlm/format/program_spec.h"
#include "staticlm/options/option_schema.h"

namespace staticlm {

struct QnnCommonOptions {
  bool debug = false;
  bool saver = false;
  bool online_prepare = false;
  std::string profile_level = "off";
  bool shared_buffer = false;
  bool dump_intermediate_outputs = false;
};

struct QnnHtpOptions {
  bool use_fp16 = true;
  bool use_dlbc = false;
  bool use_multi_contexts = false;
  bool use_weight_sharing = false;
  bool use_slc_allocator = false;
  std::string performance_mode = "burst";
};

struct QnnGpuOptions {
  std::string precision = "user_provided";
  bool use_memory_optimizations = true;
  bool use_node_optimizations = true;
  bool use_queue_recording = true;
  bool use_weight_sharing = false;
};

struct QnnLpaiOptions {
  int64_t fps = 1;
  int64_t ftrt_ratio = 10;
  std::string client_perf_type = "real_time";
  std::string affinity = "soft";
  int64_t core_selection = 0;
  std::string target_env = "arm";
};

struct QnnCompileOptions {
  std::string soc_model;
  std::string backend = "htp";
  QnnCommonOptions common;
  QnnHtpOptions htp;    // meaningful under backend=htp
  QnnGpuOptions gpu;    // backend=gpu
  QnnLpaiOptions lpai;  // backend=lpai
};

// Reads settings that resolve_options produced from qnn_option_schema(). Fails with Internal
// when they came from another schema.
Result<QnnCompileOptions> qnn_compile_options(const ResolvedOptions& settings);

// Compile specs "qnn.soc_model", "qnn.backend", "qnn.common" and one of "qnn.htp", "qnn.gpu",
// "qnn.lpai" (the selected type's), values as JSON bytes.
std::vector<CompileSpecEntry> build_qnn_compile_specs(const QnnCompileOptions& options);

}  // namespace staticlm
