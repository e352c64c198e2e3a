// SPDX-License-Identifier: Apache-2.0
// Runs the staticlm binary as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <string>

namespace staticlm::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `args` is appended to the binary's path as a shell command line (the full `staticlm` CLI
// unless another binary is named); stdin reads `stdin_path`.
CommandResult run_cli(const std::string& args, const std::string& binary = STATICLM_CLI,
                      const std::string& stdin_path = "/dev/null");
std::string read_file(const std::string& path);
size_t count_lines(const std::string& text);
// A path in the test temp dir, unique per running test.
std::string test_temp_path(const std::string& name);

}  // namespace staticlm::testing
