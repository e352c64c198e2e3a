// SPDX-License-Identifier: Apache-2.0
// SdkVersion: a vendor SDK's version (QNN's "2.37.0.250724") parsed into numbers, so versions
// compare numerically (3.0 is newer than 2.39) instead of as text.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "staticlm/core/result.h"

namespace staticlm {

struct SdkVersion {
  int64_t major = 0;
  int64_t minor = 0;
  int64_t patch = 0;
  int64_t build = 0;  // QNN's date stamp (250724); compared after patch

  // Parses "MAJOR[.MINOR[.PATCH[.BUILD]]]": one to four dot-separated decimal numbers, missing
  // parts 0, with an optional leading 'v'. Fails with InvalidArgument quoting the text.
  static Result<SdkVersion> parse(std::string_view text);

  // "2.37.0.250724"; the build part only when non-zero ("2.39.0").
  std::string to_string() const;

  auto operator<=>(const SdkVersion&) const = default;
  bool operator==(const SdkVersion&) const = default;
};

// What a backend knows about the SDK its version-gated options depend on. `name` is empty for a
// backend without an SDK. `version` is unset when it could not be found; `unknown_reason` then
// says why and how to fix it.
struct SdkInfo {
  std::string name;  // "QNN SDK"
  std::optional<SdkVersion> version;
  std::string version_source;  // "QNN_SDK_VERSION", "$QNN_SDK_ROOT/sdk.yaml", ...
  std::string unknown_reason;  // set when version is unset
};

}  // namespace staticlm
