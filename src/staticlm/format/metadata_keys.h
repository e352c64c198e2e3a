// SPDX-License-Identifier: Apache-2.0
// Metadata keys any program may carry, whatever its contract: which contract it implements and
// the partitioner's placement report (and the compile spec naming a delegate's settings). Contract-specific keys live
// with their contract (contracts/).
#pragma once

#include <string_view>

namespace staticlm {

inline constexpr std::string_view kContractKey = "contract";                 // string: the I/O contract's name
inline constexpr std::string_view kContractVersionKey = "contract_version";  // int: its version
inline constexpr std::string_view kPlacementMetadataKey = "placement";       // string: JSON placement report
// The compile spec every delegate carries: its backend's effective settings as JSON bytes.
inline constexpr std::string_view kEffectiveSettingsSpecKey = "effective_settings";

}  // namespace staticlm
