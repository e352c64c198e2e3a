// SPDX-License-Identifier: Apache-2.0
// The command line's bad-input catalogue (docs/security.md): flags, files and programs a user gets
// wrong, each run as the user would (under a time limit, so a hang fails instead of stalling the
// suite), each answered with one line that names what is wrong and a non-zero exit.
#include <sched.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;
using testing::count_lines;
using testing::test_temp_path;

// A command that does not end within this long has hung.
constexpr int kTimeLimitSeconds = 60;

testing::CommandResult run_limited(const std::string& args) {
  return testing::run_cli(args, "timeout -s KILL " + std::to_string(kTimeLimitSeconds) + " " STATICLM_CLI);
}

class CliBadInputTest : public ::testing::Test {
 protected:
  // Once per process (run_cli names its output files after the running test).
  void SetUp() override {
    if (!program_.empty()) {
      return;
    }
    dir_ = (fs::path(::testing::TempDir()) / "cli_bad_input").string();
    fs::create_directories(dir_);
    const std::string program = dir_ + "/llama.slm";
    const auto exported =
        testing::run_cli("export " + testing::fixture_dir("llama") + " -o " + program + " --max-cache-len 64");
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    program_ = program;
    text_ = dir_ + "/text.txt";
    std::ofstream(text_) << "the quick brown fox jumps over the lazy dog, and the dog sleeps on. ";
  }

  // Refused with exit code `code` and one line on stderr holding `expected`.
  static void expect_refused(const std::string& args, const std::string& expected, int code = 1) {
    SCOPED_TRACE(args);
    const testing::CommandResult result = run_limited(args);
    ASSERT_NE(result.exit_code, 128 + 9) << "killed after " << kTimeLimitSeconds << " s: it hung";
    EXPECT_EQ(result.exit_code, code) << result.err;
    EXPECT_EQ(count_lines(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }

  static std::string dir_;
  static std::string program_;
  static std::string text_;
};

std::string CliBadInputTest::dir_;
std::string CliBadInputTest::program_;
std::string CliBadInputTest::text_;

// The stride's flag note holds the word "stride": annotating it used to loop without end.
TEST_F(CliBadInputTest, AnErrorNamingAParameterWhoseFlagHoldsItsNameEnds) {
  expect_refused("eval " + program_ + " --text " + text_ + " --stride 1000",
                 "the step 'stride' (--stride) must be in [1, 64] (at most the window length), found 1000");
  expect_refused("eval " + program_ + " --text " + text_ + " --ctx 16 --stride 128", "'stride' (--stride)");
  expect_refused("eval " + program_ + " --text " + text_ + " --ctx 65", "'ctx' (--ctx) must be in [2, 64]");
}

TEST_F(CliBadInputTest, EveryFileAFlagNamesIsCheckedTheSameWay) {
  const std::string missing = dir_ + "/no_such_file";
  expect_refused("eval " + program_ + " --text " + dir_, "--text: '" + dir_ + "' is a directory, not a file");
  expect_refused("eval " + program_ + " --text " + missing, "--text: '" + missing + "': no such file");
  expect_refused("export " + testing::fixture_dir("llama") + " -o " + dir_ + "/x.slm --options " + dir_,
                 "--options: '" + dir_ + "' is a directory, not a file");
  expect_refused("tokenize --tokenizer " + dir_ + " hello", "--tokenizer: '" + dir_ + "' is a directory, not a file");
  expect_refused("serve " + program_ + " --port 0 --api-key-file " + dir_,
                 "--api-key-file: '" + dir_ + "' is a directory, not a file");
  expect_refused("serve " + program_ + " --port 0 --chat-template " + missing,
                 "--chat-template: '" + missing + "': no such file");
  expect_refused("run " + program_ + " --chat --chat-template " + dir_,
                 "--chat-template: '" + dir_ + "' is a directory, not a file");
  expect_refused("run " + program_ + " -f " + dir_ + " -n 2", "--file: '" + dir_ + "' is a directory, not a file");
  expect_refused("run " + program_ + " --chat --system-file " + missing,
                 "--system-file: '" + missing + "': no such file");
  expect_refused("run " + program_ + " -p hi -f " + text_, "give -p/--prompt or -f/--file, not both");
  expect_refused("embed " + program_ + " -f " + dir_, "--file: '" + dir_ + "' is a directory, not a file");
}

TEST_F(CliBadInputTest, EmbedSaysWhatItNeeds) {
  expect_refused("embed " + program_, "give the texts to embed with -p TEXT (repeatable) or -f FILE");
  expect_refused("embed " + program_ + " -p hi -f " + text_, "or -f FILE (one per line), not both");
  expect_refused("embed " + program_ + " -p hi",
                 "'" + program_ + "' has no embeddings method: export it with --embeddings mean|last");
  expect_refused("embed " + program_ + " -p hi --pooling cls",
                 "--pooling: expected the pooling mean, last or none, found 'cls'");
}

TEST_F(CliBadInputTest, APromptFileIsThePromptAsItIs) {
  const std::string prompt = dir_ + "/prompt.txt";
  std::ofstream(prompt) << "the quick brown";
  const testing::CommandResult from_file = run_limited("run " + program_ + " -f " + prompt + " -n 6 --temp 0 -q");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  const testing::CommandResult inline_prompt =
      run_limited("run " + program_ + " -p 'the quick brown' -n 6 --temp 0 -q");
  ASSERT_EQ(inline_prompt.exit_code, 0) << inline_prompt.err;
  EXPECT_EQ(from_file.out, inline_prompt.out);
  EXPECT_FALSE(from_file.out.empty());
}

TEST_F(CliBadInputTest, ANegativeCountNamesItsFlag) {
  expect_refused("run " + program_ + " -p hi -n -5", "max_new_tokens (-n) must be >= 0, found -5");
}

TEST_F(CliBadInputTest, AnUnknownCommandListsTheCommands) {
  expect_refused("frobnicate " + program_,
                 "'frobnicate' is not a staticlm command; the commands are: backends, bench, ", 2);
  expect_refused("",
                 "no command given; the commands are: backends, bench, embed, eval, export, inspect, logits, run, "
                 "serve, tokenize",
                 2);
}

TEST_F(CliBadInputTest, ThreadsBeyondTheCpusWarnOnce) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const std::string threads = std::to_string(CPU_COUNT(&set) + 1);
  const testing::CommandResult result = run_limited("run " + program_ + " -p hi -n 2 -q -t " + threads);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find("warning: --threads " + threads + " is more than the "), std::string::npos) << result.err;
  const testing::CommandResult within = run_limited("run " + program_ + " -p hi -n 2 -q -t 1");
  EXPECT_EQ(within.err.find("warning"), std::string::npos) << within.err;
}

TEST_F(CliBadInputTest, TokenIdsToDecodeMaySeparateBySpacesOrCommas) {
  const testing::CommandResult commas = run_limited("tokenize " + program_ + " --decode 40,41,42");
  ASSERT_EQ(commas.exit_code, 0) << commas.err;
  for (const char* ids : {"'40 41 42'", "'40, 41,42'", "40 --decode '41 42'", "40 41 42"}) {
    const testing::CommandResult spaced = run_limited("tokenize " + program_ + " --decode " + ids);
    ASSERT_EQ(spaced.exit_code, 0) << ids << ": " << spaced.err;
    EXPECT_EQ(spaced.out, commas.out) << ids;
  }
  expect_refused("tokenize --decode 40 41 " + program_,
                 "give a program file (or --tokenizer FILE) before --decode, which takes the arguments after it");
  expect_refused("tokenize " + program_ + " --decode '40 x'",
                 "--decode: expected token ids (non-negative integers) separated by commas or spaces, found 'x'");
}

TEST_F(CliBadInputTest, RunningWhatIsNotAProgramSaysWhatToDo) {
  expect_refused("run " + testing::fixture_dir("llama") + " -p hi",
                 "is a Hugging Face checkpoint directory, not a program: make one with `staticlm export " +
                     testing::fixture_dir("llama") + " -o model.slm`");
  const std::string gguf = dir_ + "/model.gguf";
  std::ofstream(gguf, std::ios::binary) << "GGUF" << std::string(60, '\3');
  expect_refused("run " + gguf + " -p hi", "a GGUF file (llama.cpp's format), not a staticlm program");
  expect_refused("inspect " + testing::fixture_dir("llama") + "/model.safetensors",
                 "a safetensors file, not a staticlm program");
}

TEST_F(CliBadInputTest, IntOptionValuesTheBackendDoesNotTakeAreRefusedAtExport) {
  expect_refused("export " + testing::fixture_dir("llama") + " -o " + dir_ +
                     "/q.slm --option weight_dtype=int4 --option group_size=33",
                 "option 'group_size' (--option): expected one of 16, 32, 64, 128, found '33'");
}

// A checkpoint without a tokenizer made a program that failed in every command that takes text.
TEST_F(CliBadInputTest, ExportWithoutATokenizerIsRefusedUnlessAskedFor) {
  const fs::path bare = fs::path(dir_) / "no_tokenizer";
  fs::create_directories(bare);
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors"}) {
    fs::copy_file(fs::path(testing::fixture_dir("llama")) / name, bare / name, fs::copy_options::overwrite_existing);
  }
  const std::string program = dir_ + "/ids_only.slm";
  fs::remove(program);
  expect_refused("export " + bare.string() + " -o " + program,
                 "'" + bare.string() +
                     "' has no tokenizer: looked for tokenizer.json and tokenizer.model there; a "
                     "program without one runs on token ids only (option 'no_tokenizer' (--no-tokenizer))");
  EXPECT_FALSE(fs::exists(program)) << "nothing is written for a refused export";

  const testing::CommandResult exported = run_limited("export " + bare.string() + " -o " + program + " --no-tokenizer");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("tokenizer: none (--no-tokenizer): the program takes token ids only"), std::string::npos)
      << exported.out;
  const testing::CommandResult inspected = run_limited("inspect " + program);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("tokenizer: none: the program takes token ids only"), std::string::npos)
      << inspected.out;
  expect_refused("run " + program + " -p hi",
                 "embeds no tokenizer (tokenizer.json or tokenizer.model), so it takes "
                 "token ids only: `staticlm logits --tokens 1,2,3`");
  const testing::CommandResult logits = run_limited("logits " + program + " --tokens 1,2,3");
  EXPECT_EQ(logits.exit_code, 0) << logits.err;
  const testing::CommandResult inspected_json = run_limited("inspect " + program + " --json");
  ASSERT_EQ(inspected_json.exit_code, 0) << inspected_json.err;
  EXPECT_TRUE(nlohmann::json::parse(inspected_json.out)["tokenizer"].is_null());
  const testing::CommandResult with_tokenizer = run_limited("inspect " + program_ + " --json");
  EXPECT_EQ(nlohmann::json::parse(with_tokenizer.out)["tokenizer"], "tokenizer.json");
}

// A checkpoint whose final norm is NaN: every logit is NaN, as a damaged file would make them.
TEST_F(CliBadInputTest, NanLogitsPointAtVerify) {
  const fs::path broken = fs::path(dir_) / "nan_norm";
  fs::create_directories(broken);
  for (const fs::directory_entry& entry : fs::directory_iterator(testing::fixture_dir("llama"))) {
    fs::copy_file(entry.path(), broken / entry.path().filename(), fs::copy_options::overwrite_existing);
  }
  std::string bytes = testing::read_file((broken / "model.safetensors").string());
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), sizeof(header_size));
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_size));
  const nlohmann::json& norm = header["model.norm.weight"];
  ASSERT_EQ(norm["dtype"], "BF16");
  for (uint64_t at = norm["data_offsets"][0].get<uint64_t>(); at < norm["data_offsets"][1].get<uint64_t>(); at += 2) {
    bytes[8 + header_size + at] = static_cast<char>(0xc0);  // bf16 quiet NaN, 0x7fc0, little-endian
    bytes[8 + header_size + at + 1] = static_cast<char>(0x7f);
  }
  std::ofstream(broken / "model.safetensors", std::ios::binary) << bytes;
  const std::string program = dir_ + "/nan.slm";
  const testing::CommandResult exported = run_limited("export " + broken.string() + " -o " + program);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  expect_refused("run " + program + " -p hi -n 4",
                 "generated token 0: the program computed NaN (damaged weights? `staticlm inspect PROGRAM --verify` "
                 "checks every byte against its checksums): logits contain NaN at index 0");
}

}  // namespace
}  // namespace staticlm
