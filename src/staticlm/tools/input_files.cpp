// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/input_files.h"

namespace staticlm::cli {

Result<std::string> read_input_file(std::string_view flag, const std::string& path, uint64_t max_bytes) {
  if (path.empty()) {
    return invalid_argument(flag, ": expected a file path, found an empty one");
  }
  auto text = read_text_file(path, max_bytes);
  if (!text.ok()) {
    return text.status().with_context(flag);
  }
  return text;
}

}  // namespace staticlm::cli
