// SPDX-License-Identifier: Apache-2.0
#include "cli_runner.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace staticlm::testing {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::string test_temp_path(const std::string& name) {
  // ctest runs tests in parallel processes: keep each test's files apart.
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return (std::filesystem::path(::testing::TempDir()) / (test + "_" + name)).string();
}

CommandResult run_cli(const std::string& args, const std::string& binary, const std::string& stdin_path) {
  const std::string out_path = test_temp_path("stdout.txt");
  const std::string err_path = test_temp_path("stderr.txt");
  const std::string command = binary + " " + args + " >" + out_path + " 2>" + err_path + " <" + stdin_path;
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

}  // namespace staticlm::testing
