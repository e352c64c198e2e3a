// SPDX-License-Identifier: Apache-2.0
// `staticlm inspect` as a user runs it: on a good file, on --json, and on broken files, where it
// must exit non-zero with exactly one line on stderr.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/core/cpu_topology.h"

#include "cli_runner.h"
#include "example_program.h"

namespace staticlm {
namespace {

using testing::CommandResult;
using testing::count_lines;
using testing::read_file;
using testing::run_cli;

class CliInspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = (std::filesystem::path(::testing::TempDir()) / ("cli_example_" + test + ".slm")).string();
    ASSERT_TRUE(testing::write_example_program(testing::ExampleWeights::random(3), path_).ok());
  }
  std::string write_variant(const std::string& name, const std::string& bytes) {
    const std::string path = (std::filesystem::path(::testing::TempDir()) / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string path_;
};

TEST_F(CliInspectTest, PrintsMethodsConstantsAndFiles) {
  CommandResult result = run_cli("inspect " + path_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("forward:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("cache"), std::string::npos);
  EXPECT_NE(result.out.find("(mutable)"), std::string::npos);
  EXPECT_NE(result.out.find("f32[1,4,16]"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("constants: 4"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("notes.txt"), std::string::npos);
  EXPECT_NE(result.out.find("example = \"attention block\""), std::string::npos) << result.out;
  // The threads a run takes here by default, and on which cores (cpu_topology.h).
  EXPECT_NE(result.out.find("threads here: " + describe_core_choice(default_cores()) + " by default"),
            std::string::npos)
      << result.out;
}

TEST_F(CliInspectTest, JsonIsAParseableDescription) {
  CommandResult result = run_cli("inspect --json " + path_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json doc = nlohmann::json::parse(result.out);
  ASSERT_EQ(doc["methods"].size(), 1u);
  EXPECT_EQ(doc["methods"][0]["name"], "forward");
  EXPECT_EQ(doc["methods"][0]["inputs"][2]["name"], "cache");
  EXPECT_EQ(doc["methods"][0]["inputs"][2]["mutable"], true);
  EXPECT_EQ(doc["methods"][0]["outputs"][0]["shape"], nlohmann::json({1, 4, 16}));
  EXPECT_EQ(doc["constants"]["count"], 4);
  EXPECT_EQ(doc["embedded_files"][0]["name"], "notes.txt");
  EXPECT_EQ(doc["metadata"]["example"], "attention block");
  // Weights are what the file maps; a session's own memory is its in-place inputs (the cache).
  uint64_t in_place = 0;
  for (const nlohmann::json& input : doc["methods"][0]["inputs"]) {
    if (input["mutable"] == true) {
      uint64_t elements = 1;
      for (int64_t dim : input["shape"].get<std::vector<int64_t>>()) elements *= static_cast<uint64_t>(dim);
      ASSERT_EQ(input["dtype"], "f32");
      in_place += elements * 4;
    }
  }
  EXPECT_GT(in_place, 0u);
  EXPECT_EQ(doc["memory"]["cache_bytes"], in_place);
  EXPECT_EQ(doc["memory"]["weight_bytes"],
            doc["constants"]["bytes"].get<uint64_t>() + doc["named_data"]["bytes"].get<uint64_t>());
  CommandResult text = run_cli("inspect " + path_);
  EXPECT_NE(text.out.find("memory: weights "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" per session (the methods' in-place inputs)"), std::string::npos) << text.out;
}

// A program without delegates runs every node on the portable kernels it is loaded with.
TEST_F(CliInspectTest, KernelsNamesTheKernelOfEachCall) {
  CommandResult result = run_cli("inspect --kernels " + path_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("  forward:\n    kernel calls outside delegates: "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(" portable.attention "), std::string::npos) << result.out;
  CommandResult as_json = run_cli("inspect --kernels --json " + path_);
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const nlohmann::json method = nlohmann::json::parse(as_json.out)["kernels"]["methods"][0];
  EXPECT_EQ(method["name"], "forward");
  EXPECT_TRUE(method["delegate_calls"].empty());
  ASSERT_FALSE(method["kernel_calls"]["nodes"].empty());
  for (const nlohmann::json& node : method["kernel_calls"]["nodes"]) {
    EXPECT_EQ(node["kernel"], "portable." + node["op"].get<std::string>()) << node.dump();
  }
}

TEST_F(CliInspectTest, BrokenFilesGiveOneLineAndNonZeroExit) {
  const std::string good = read_file(path_);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated_header.slm", good.substr(0, 20)},
      {"truncated_body.slm", good.substr(0, good.size() / 2)},
      {"garbage.slm", std::string(4096, 'x')},
      {"empty.slm", ""},
  };
  for (const auto& [name, bytes] : cases) {
    CommandResult result = run_cli("inspect " + write_variant(name, bytes));
    EXPECT_NE(result.exit_code, 0) << name;
    EXPECT_EQ(count_lines(result.err), 1u) << name << ": " << result.err;
    EXPECT_NE(result.err.find("staticlm inspect: error: "), std::string::npos) << result.err;
    EXPECT_TRUE(result.out.empty()) << name;
  }
  CommandResult missing = run_cli("inspect /nonexistent/model.slm");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(count_lines(missing.err), 1u) << missing.err;
  EXPECT_NE(missing.err.find("no such file"), std::string::npos) << missing.err;
}

TEST_F(CliInspectTest, UsageErrorsAreOneLine) {
  CommandResult result = run_cli("inspect");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  // Runtime options only matter to the load --kernels does.
  CommandResult orphan = run_cli("inspect --runtime-option cpu.isa=portable " + path_);
  EXPECT_NE(orphan.exit_code, 0);
  EXPECT_EQ(count_lines(orphan.err), 1u) << orphan.err;
  EXPECT_NE(orphan.err.find("--runtime-option requires --kernels"), std::string::npos) << orphan.err;
}

}  // namespace
}  // namespace staticlm
