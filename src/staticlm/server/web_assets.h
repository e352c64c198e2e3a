// SPDX-License-Identifier: Apache-2.0
// The chat page's files (web/), compiled into the binary so `serve` needs nothing beside it.
#pragma once

#include <optional>
#include <string_view>

namespace staticlm::server {

struct WebAsset {
  std::string_view content_type;
  std::string_view body;
};

// The file served at `path` ("/" is index.html), or nullopt.
std::optional<WebAsset> find_web_asset(std::string_view path);

}  // namespace staticlm::server
