// SPDX-License-Identifier: Apache-2.0
// The placement report: for every node of every method (after the backend's passes), the
// backend that runs it and, for a node left to the portable kernels, why. The partitioner
// returns it and stores it in the program as metadata "placement" (a JSON string) so that
// `staticlm inspect` can show it; each delegate also carries the backend's effective settings
// as compile spec "effective_settings" (JSON bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/format/metadata_keys.h"

namespace staticlm {

// kPlacementMetadataKey and kEffectiveSettingsSpecKey: format/metadata_keys.h.
// What the report calls the kernels every program can fall back to.
inline constexpr std::string_view kFallbackBackendName = "portable";

struct NodePlacement {
  int32_t node = 0;
  std::string op;
  std::string name;       // the node's name, often empty
  int32_t delegate = -1;  // the program delegate running it, or -1: the portable kernels
  std::string reason;     // why it stayed on the portable kernels
  std::string format;     // how its matrices are stored ("int4_g32", "bf16", "f32+q8_0"); "" for none
};

struct MethodPlacement {
  std::string method;
  std::vector<NodePlacement> nodes;
  std::vector<uint32_t> delegates;  // program delegates this method calls, in call order
  size_t delegated_nodes() const;
};

struct PlacementReport {
  std::string backend;
  std::string settings_json;  // ResolvedOptions::to_json()
  std::vector<MethodPlacement> methods;

  size_t delegated_nodes() const;
  size_t total_nodes() const;
  // {"backend":..,"settings":{..},"methods":[{"name":..,"delegates":[..],"nodes":[{"node":0,
  //  "op":"embedding","on":"cpu","delegate":0} | {..,"on":"portable","reason":".."}]}]}; a node
  //  that reads matrices also has "format".
  std::string to_json() const;
  // "prefill: 57 of 57 nodes on cpu (1 delegate); decode: ..."
  std::string summary() const;
  // The nodes that read matrices, by format: "prefill: int4_g32 x 90, bf16 x 1; decode: ...", or "".
  std::string formats_summary() const;
};

}  // namespace staticlm
