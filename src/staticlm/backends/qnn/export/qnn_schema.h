// SPDX-License-Identifier: Apache-2.0
// The qnn backend's option schema, mirroring Qualcomm's compile-spec builders (ExecuTorch's
// generate_htp / gpu / lpai_compiler_spec and generate_qnn_executorch_compiler_spec): the
// chipset, the QNN backend type (htp | gpu | lpai) that selects which builder's options apply,
// the common options, and the partitioner's. docs/backends.md lists every option.
#pragma once

#include <span>
#include <string_view>

#include "staticlm/options/option_schema.h"

namespace staticlm {

struct QnnChipset {
  std::string_view name;  // soc_model value
  int htp_arch;           // Hexagon tensor processor version (v68 -> 68)
  int vtcm_mb;
  int lpai_version;  // 0: no LPAI (low-power AI) core
};

// Every chipset soc_model accepts, as Qualcomm's SoC table lists them.
std::span<const QnnChipset> qnn_chipsets();
const QnnChipset* find_qnn_chipset(std::string_view name);

// LPAI needs this SDK version or newer.
inline constexpr SdkVersion kQnnLpaiMinSdk{2, 39, 0, 0};

// Route names of the compile-spec builders.
inline constexpr std::string_view kQnnRouteCommon = "common";
inline constexpr std::string_view kQnnRouteHtp = "htp";
inline constexpr std::string_view kQnnRouteGpu = "gpu";
inline constexpr std::string_view kQnnRouteLpai = "lpai";

OptionSchema qnn_option_schema();

}  // namespace staticlm
