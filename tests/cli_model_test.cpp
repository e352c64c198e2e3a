// SPDX-License-Identifier: Apache-2.0
// The model commands as a user runs them: export, logits, run, bench, tokenize — results checked
// against the fixture's PyTorch reference and tokenizer, errors as one line and a non-zero exit.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/core/cpu_features.h"
#include "staticlm/core/cpu_topology.h"
#include "staticlm/core/emulation_signs.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

#include "cli_runner.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

using testing::count_lines;
using testing::run_cli;
using testing::test_temp_path;

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    out += (i == 0 ? "" : ",") + std::to_string(ids[i]);
  }
  return out;
}

// The text of `text` between `before` and the next `after`: a figure in a line of output.
std::string field(const std::string& text, const std::string& before, const std::string& after) {
  const size_t at = text.find(before);
  if (at == std::string::npos) return "(missing)";
  const size_t begin = at + before.size();
  return text.substr(begin, text.find(after, begin) - begin);
}

class CliModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ref_ = testing::load_fixture_reference("llama3");
    program_ = test_temp_path("llama3.slm");
    auto result = run_cli("export " + ref_.dir + " -o " + program_ + " --prefill-len 8 --max-cache-len 64");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    exported_ = result.out;
  }
  testing::FixtureReference ref_;
  std::string program_;
  std::string exported_;
};

TEST_F(CliModelTest, ExportPrintsASummary) {
  EXPECT_NE(exported_.find("exported LlamaForCausalLM -> " + program_), std::string::npos) << exported_;
  EXPECT_NE(exported_.find("prefill (chunk 8), decode (1); max cache length 64"), std::string::npos) << exported_;
  EXPECT_NE(exported_.find("embedded files: tokenizer.json, tokenizer_config.json"), std::string::npos) << exported_;
  // The cpu backend by default; --backend none keeps every node on the portable kernels.
  EXPECT_NE(exported_.find("nodes on cpu (1 delegate)"), std::string::npos) << exported_;
  const std::string portable = test_temp_path("llama3_portable.slm");
  auto none = run_cli("export " + ref_.dir + " -o " + portable + " --prefill-len 8 --max-cache-len 64 --backend none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out.find("placement"), std::string::npos) << none.out;
  auto inspect = run_cli("inspect " + portable + " --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_TRUE(nlohmann::json::parse(inspect.out)["delegates"].empty()) << inspect.out;
}

// --verify reads every byte against the checksums the writer recorded: inspect reports them, and
// a flipped bit stops inspect and run with a message naming the segment and what it holds.
TEST_F(CliModelTest, VerifyFindsAFlippedBitAndNamesWhereItIs) {
  auto inspected = run_cli("inspect " + program_ + " --verify");
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("checksums: xxh3-64 per data segment"), std::string::npos) << inspected.out;
  EXPECT_NE(inspected.out.find("contents: verified: "), std::string::npos) << inspected.out;

  std::string bytes = testing::read_file(program_);
  bytes[bytes.size() - 100] = static_cast<char>(bytes[bytes.size() - 100] ^ 0x10);
  const std::string corrupted = test_temp_path("llama3_corrupted.slm");
  std::ofstream(corrupted, std::ios::binary) << bytes;
  auto refused = run_cli("inspect " + corrupted + " --verify");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("differs from what was written"), std::string::npos) << refused.err;
  auto lazy = run_cli("run " + corrupted + " -p hi -n 2 -q");
  EXPECT_EQ(lazy.exit_code, 0) << "without --verify the file is mapped, not read: " << lazy.err;
  auto run = run_cli("run " + corrupted + " -p hi -n 2 --verify");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("staticlm run: error: '" + corrupted + "': segment "), std::string::npos) << run.err;
}

// inspect reads the matrices from the instructions that use them: their layout and format as
// the kernels get them, each stored matrix once, and who reads it.
TEST_F(CliModelTest, InspectListsEveryMatrixWithItsFormat) {
  auto packed = run_cli("inspect " + program_ + " --json");
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const nlohmann::json matrices = nlohmann::json::parse(packed.out)["matrices"];
  ASSERT_FALSE(matrices.empty());
  std::map<std::string, std::string> read_by;
  for (const nlohmann::json& matrix : matrices) {
    EXPECT_EQ(matrix["layout"], "panel32") << matrix.dump();
    EXPECT_EQ(matrix["format"], "f32") << matrix.dump();
    EXPECT_EQ(matrix["bits_per_weight"], 32.0) << matrix.dump();  // the fixture's sizes fill whole panels
    read_by[matrix["name"]] = matrix["read_by"].dump();
  }
  EXPECT_EQ(read_by["cpu/model.layers.0.self_attn.q_proj.weight.panel32"], R"(["multi_linear"])");
  EXPECT_EQ(read_by["cpu/model.layers.0.mlp.down_proj.weight.panel32"], R"(["linear_add"])");
  EXPECT_EQ(read_by["cpu/model.layers.0.mlp.gate_proj.weight.panel32"], R"(["swiglu_linear"])");
  EXPECT_EQ(read_by["cpu/model.embed_tokens.weight.panel32"], R"(["embedding","linear"])");  // tied
  // Every matrix multiplies a whole prefill chunk of 8 rows, the head included (logits of every
  // position); with the last position's logits only, the head multiplies one row.
  for (const nlohmann::json& matrix : matrices) {
    EXPECT_EQ(matrix["rows"], 8) << matrix.dump();
  }
  const std::string last = test_temp_path("llama3_last_logits_matrices.slm");
  ASSERT_EQ(
      run_cli("export " + ref_.dir + " -o " + last + " --prefill-len 8 --max-cache-len 64 --logits last").exit_code, 0);
  auto last_inspect = run_cli("inspect " + last + " --json");
  ASSERT_EQ(last_inspect.exit_code, 0) << last_inspect.err;
  for (const nlohmann::json& matrix : nlohmann::json::parse(last_inspect.out)["matrices"]) {
    EXPECT_EQ(matrix["rows"], matrix["name"] == "cpu/model.embed_tokens.weight.panel32" ? 1 : 8) << matrix.dump();
  }

  const std::string portable = test_temp_path("llama3_portable_matrices.slm");
  ASSERT_EQ(run_cli("export " + ref_.dir + " -o " + portable + " --prefill-len 8 --max-cache-len 64 --backend none")
                .exit_code,
            0);
  auto rows = run_cli("inspect " + portable);
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_NE(rows.out.find("matrices: " + std::to_string(matrices.size()) + ", by layout and format"), std::string::npos)
      << rows.out;
  EXPECT_NE(rows.out.find("  rows f32 "), std::string::npos) << rows.out;

  const std::string int8 = test_temp_path("llama3_int8_matrices.slm");
  ASSERT_EQ(
      run_cli("export " + ref_.dir + " -o " + int8 + " --prefill-len 8 --max-cache-len 64 --option weight_dtype=int8")
          .exit_code,
      0);
  auto quantized = run_cli("inspect " + int8 + " --matrices");
  ASSERT_EQ(quantized.exit_code, 0) << quantized.err;
  EXPECT_NE(quantized.out.find("  panel32_q8 int8_g32 " + std::to_string(matrices.size())), std::string::npos)
      << quantized.out;
  EXPECT_NE(quantized.out.find("8.50 bits/weight"), std::string::npos) << quantized.out;
  EXPECT_NE(quantized.out.find("cpu/model.layers.1.mlp.up_proj.weight.panel32_q8_g32"), std::string::npos)
      << quantized.out;
}

// eval scores a text file: the JSON names what it measured, the text form shows the result and
// its error, and a bad file or window is one line naming the flag.
TEST_F(CliModelTest, EvalReportsThePerplexityOfATextFile) {
  const std::string text = test_temp_path("eval.txt");
  std::ofstream(text) << "hello world, hello again; the quick brown fox jumps over the lazy dog. "
                      << "hello world";
  auto json = run_cli("eval " + program_ + " --text " + text + " --ctx 16 --stride 8 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["ctx"], 16);
  EXPECT_EQ(doc["stride"], 8);
  EXPECT_EQ(doc["scored_tokens"].get<int64_t>(), doc["tokens"].get<int64_t>() - 1);
  const double perplexity = doc["perplexity"].get<double>();
  EXPECT_GT(perplexity, 1.0);
  EXPECT_TRUE(std::isfinite(perplexity));
  EXPECT_GT(doc["standard_error"].get<double>(), 0.0);
  auto plain = run_cli("eval " + program_ + " --text " + text + " -c 16");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("perplexity: "), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find(" ± "), std::string::npos) << plain.out;
  EXPECT_NE(plain.err.find("window"), std::string::npos) << "a progress bar on stderr";
  auto missing = run_cli("eval " + program_ + " --text " + test_temp_path("no_such.txt"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("': no such file"), std::string::npos) << missing.err;
  EXPECT_EQ(testing::count_lines(missing.err), 1) << missing.err;
  auto too_long = run_cli("eval " + program_ + " --text " + text + " --ctx 65");
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_NE(too_long.err.find("(--ctx) must be in [2, 64]"), std::string::npos) << too_long.err;
}

TEST_F(CliModelTest, LogitsMatchTheReferenceInBothModes) {
  for (const char* mode : {"prefill", "decode"}) {
    const std::string out = test_temp_path(std::string(mode) + ".bin");
    auto result = run_cli("logits " + program_ + " --tokens " + join_ids(ref_.prompt_tokens) + " --mode " + mode +
                          " --out " + out);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const std::string bytes = testing::read_file(out);
    ASSERT_EQ(bytes.size(), ref_.logits.size() * sizeof(float)) << mode;
    std::vector<float> logits(ref_.logits.size());
    std::memcpy(logits.data(), bytes.data(), bytes.size());
    for (size_t i = 0; i < logits.size(); ++i) {
      ASSERT_NEAR(logits[i], ref_.logits[i], 1e-4 * std::max(1.0f, std::abs(ref_.logits[i]))) << mode << " " << i;
    }
  }
}

TEST_F(CliModelTest, RunStreamsTextAndReportsStatistics) {
  auto result = run_cli("run " + program_ + " -p 'hello world' -n 6 --temp 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(result.out.empty());
  EXPECT_NE(result.err.find("prompt: "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("time to first token"), std::string::npos);
  EXPECT_NE(result.err.find("decode "), std::string::npos);
  EXPECT_NE(result.err.find("peak RSS"), std::string::npos);
  EXPECT_NE(result.err.find("I/O buffers: heap 10 buffers"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("heap fallbacks: 0"), std::string::npos);
  EXPECT_NE(result.err.find("--- max new tokens ---"), std::string::npos) << result.err;
  // The caches run allocated (by their I/O role) are what inspect reads off the methods' in-place
  // inputs, and the weights what it counts in the file.
  auto inspected = run_cli("inspect " + program_);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_EQ(field(result.err, "KV caches ", " (of the I/O buffers)"),
            field(inspected.out, "KV caches ", " per session"))
      << result.err << inspected.out;
  EXPECT_EQ(field(result.err, "memory: weights ", " (mapped"), field(inspected.out, "memory: weights ", " (mapped"));
  EXPECT_NE(field(result.err, "KV caches ", " (of"), "0 B");
}

// The fixture's generation_config says do_sample, temperature 0.6, top_p 0.9 and no top_k, so
// without flags a run samples with those and transformers' top_k of 50.
TEST_F(CliModelTest, RunSamplesAsTheProgramsGenerationConfigSays) {
  const std::string run = "run " + program_ + " -p 'hello world' -n 8";
  auto first = run_cli(run + " --seed 1");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("sampling: temp 0.6, top-k 50, top-p 0.9 (the program's generation_config; --seed given)"),
            std::string::npos)
      << first.err;
  EXPECT_NE(first.err.find("seed: 1\n"), std::string::npos) << first.err;
  EXPECT_EQ(run_cli(run + " --seed 1 -q").out, first.out) << "a seed repeats a run";
  EXPECT_EQ(run_cli(run + " --seed 1 -q --temp 0.6 --top-k 50 --top-p 0.9 --min-p 0 --repeat-penalty 1").out, first.out)
      << "the defaults are exactly the program's";
  EXPECT_NE(run_cli(run + " --seed 2 -q").out, first.out) << "another seed samples other tokens";
  EXPECT_NE(run_cli(run + " --seed 1 -q --temp 1.5").out, first.out) << "a flag overrides its parameter";

  // --temp 0 is greedy whatever the program says: the same text as the same weights exported
  // with a generation_config that does not sample.
  auto greedy = run_cli("run " + program_ + " -p 'hello world' -n 8 --temp 0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  EXPECT_NE(greedy.err.find("sampling: greedy (the program's generation_config; --temp given)"), std::string::npos)
      << greedy.err;
  EXPECT_EQ(greedy.err.find("seed:"), std::string::npos) << "a greedy run has no seed to repeat";
  EXPECT_EQ(run_cli("run " + program_ + " -p 'hello world' -n 8 --temp 0 --seed 9 -q").out, greedy.out);
  const std::string not_sampling = test_temp_path("llama3_greedy_config");
  std::filesystem::remove_all(not_sampling);
  std::filesystem::copy(ref_.dir, not_sampling);
  std::ofstream(not_sampling + "/generation_config.json") << R"({"bos_token_id": 316, "eos_token_id": [317, 319]})";
  const std::string greedy_program = test_temp_path("llama3_greedy_config.slm");
  ASSERT_EQ(
      run_cli("export " + not_sampling + " -o " + greedy_program + " --prefill-len 8 --max-cache-len 64").exit_code, 0);
  auto by_config = run_cli("run " + greedy_program + " -p 'hello world' -n 8");
  EXPECT_EQ(by_config.out, greedy.out);
  EXPECT_NE(by_config.err.find("sampling: greedy (the program's generation_config)\n"), std::string::npos)
      << by_config.err;
  auto ignored = run_cli("run " + program_ + " -p 'hello world' -n 8 --temp 0 --top-k 5 -q");
  EXPECT_NE(ignored.err.find("note: greedy decoding ignores --top-k; give --temp to sample"), std::string::npos)
      << ignored.err;

  // Without --seed, or with -1, each run draws a seed and prints it.
  auto seed_of = [](const std::string& err) {
    const size_t at = err.find("seed: ");
    return at == std::string::npos ? std::string() : err.substr(at + 6, err.find('\n', at) - at - 6);
  };
  auto random_a = run_cli(run);
  auto random_b = run_cli(run + " --seed -1");
  ASSERT_EQ(random_a.exit_code, 0) << random_a.err;
  ASSERT_EQ(random_b.exit_code, 0) << random_b.err;
  EXPECT_FALSE(seed_of(random_a.err).empty()) << random_a.err;
  EXPECT_NE(seed_of(random_a.err), seed_of(random_b.err));
  EXPECT_NE(seed_of(random_b.err), "18446744073709551615") << "-1 means random, not 2^64 - 1";
  EXPECT_EQ(run_cli(run + " -q --seed " + seed_of(random_b.err)).out, random_b.out) << "the printed seed repeats it";

  for (const std::string bad : {"-2", "18446744073709551616", "seven"}) {
    auto refused = run_cli(run + " --seed " + bad);
    EXPECT_EQ(refused.exit_code, 1) << bad;
    EXPECT_EQ(count_lines(refused.err), 1u) << refused.err;
    EXPECT_NE(refused.err.find("--seed: expected an integer in [0, 18446744073709551615], or -1 for a random one; "
                               "found '" +
                               bad + "'"),
              std::string::npos)
        << refused.err;
  }
}

// Without -n the default length is a guess: a long prompt gets what fits and says why it stopped.
TEST_F(CliModelTest, RunWithoutALengthStopsWhereTheContextEnds) {
  std::string prompt;
  for (int i = 0; i < 11; ++i) {
    prompt += "hello ";  // 5 tokens each
  }
  auto result = run_cli("run " + program_ + " -p '" + prompt + "' --temp 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("--- context full ---"), std::string::npos) << result.err;
  const size_t at = result.err.find("prompt: ");
  ASSERT_NE(at, std::string::npos);
  const int prompt_tokens = std::stoi(result.err.substr(at + 8));
  ASSERT_LT(prompt_tokens, 64);
  EXPECT_NE(result.err.find("generated: " + std::to_string(64 - prompt_tokens + 1) + " tokens"), std::string::npos)
      << result.err;
}

TEST_F(CliModelTest, RunErrorsAreOneLine) {
  auto unknown = run_cli("run " + program_ + " -p hi --io-allocator vendor9");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_EQ(count_lines(unknown.err), 1u) << unknown.err;
  EXPECT_NE(unknown.err.find("unknown I/O allocator 'vendor9' (available: heap"), std::string::npos) << unknown.err;

  auto too_long = run_cli("run " + program_ + " -p hi -n 100");
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_NE(too_long.err.find("but the program's cache holds 64"), std::string::npos) << too_long.err;
  // The library names the parameter; the CLI adds the flag that sets it.
  EXPECT_NE(too_long.err.find("lower max_new_tokens (-n)"), std::string::npos) << too_long.err;

  auto malformed = run_cli("run " + program_ + " -p hi --runtime-option isa=avx2");
  EXPECT_NE(malformed.exit_code, 0);
  EXPECT_NE(malformed.err.find("--runtime-option 'isa=avx2': expected BACKEND.KEY=VALUE"), std::string::npos)
      << malformed.err;
  auto no_such_delegate = run_cli("run " + program_ + " -p hi -n 4 --runtime-option qnn.log_level=error");
  EXPECT_NE(no_such_delegate.exit_code, 0);
  EXPECT_NE(no_such_delegate.err.find("runtime options are given for backend 'qnn', but no delegate"),
            std::string::npos)
      << no_such_delegate.err;

  auto bad_sampling = run_cli("run " + program_ + " -p hi -n 4 --top-p 1.5");
  EXPECT_NE(bad_sampling.exit_code, 0);
  EXPECT_NE(bad_sampling.err.find("top_p"), std::string::npos) << bad_sampling.err;
}

// export says what a device must hold, and warns (without failing) past --memory-budget.
TEST_F(CliModelTest, ExportWarnsPastTheMemoryBudget) {
  // The same figures inspect reads off the written file.
  auto inspected = run_cli("inspect " + program_);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_EQ(field(exported_, "memory: weights ", ","), field(inspected.out, "memory: weights ", " (mapped"))
      << exported_ << inspected.out;
  EXPECT_EQ(field(exported_, "KV caches ", " per session"), field(inspected.out, "KV caches ", " per session"));
  const std::string path = test_temp_path("llama3_budget.slm");
  const std::string base = "export " + ref_.dir + " -o " + path + " --prefill-len 8 --max-cache-len 64";
  auto over = run_cli(base + " --memory-budget 64K");
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_NE(over.err.find("warning: weights "), std::string::npos) << over.err;
  EXPECT_NE(over.err.find("exceed --memory-budget 64.0 KiB"), std::string::npos) << over.err;
  auto under = run_cli(base + " --memory-budget 2GiB");
  ASSERT_EQ(under.exit_code, 0) << under.err;
  EXPECT_EQ(under.err.find("warning"), std::string::npos) << under.err;
  for (const char* bad : {"lots", "12X", "0"}) {
    auto refused = run_cli(base + " --memory-budget " + bad);
    EXPECT_NE(refused.exit_code, 0) << bad;
    EXPECT_EQ(count_lines(refused.err), 1u) << refused.err;
    EXPECT_NE(refused.err.find(std::string("--memory-budget '") + bad + "'"), std::string::npos) << refused.err;
  }
}

// A second run with the same prompt cache prefills only the prompt's last token and writes the
// same text; a damaged cache file is refused by name, never half-read.
TEST_F(CliModelTest, RunKeepsAndReusesThePromptsCache) {
  const std::string cache = test_temp_path("llama3.prompt-cache");
  std::filesystem::remove(cache);
  const std::string run = "run " + program_ + " -p 'hello world, and the rest of a long prompt' -n 6 --temp 0";
  auto first = run_cli(run + " --prompt-cache " + cache);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("prompt cache: 0 of "), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("the prompt's cache saved to it"), std::string::npos) << first.err;
  ASSERT_TRUE(std::filesystem::exists(cache));
  auto second = run_cli(run + " --prompt-cache " + cache);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, first.out);
  const size_t at = second.err.find("prompt cache: ");
  ASSERT_NE(at, std::string::npos) << second.err;
  long long reused = 0;
  long long prompt = 0;
  ASSERT_EQ(std::sscanf(second.err.c_str() + at, "prompt cache: %lld of %lld", &reused, &prompt), 2);
  EXPECT_EQ(reused + 1, prompt) << "all but the last prompt token, whose logits pick the first new one";
  EXPECT_EQ(second.err.find("saved to it"), std::string::npos) << "nothing new to keep";
  EXPECT_EQ(run_cli(run).out, first.out) << "the same text as without a cache";

  std::string bytes;
  {
    std::ifstream in(cache, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  std::ofstream(cache, std::ios::binary) << bytes;
  auto damaged = run_cli(run + " --prompt-cache " + cache);
  EXPECT_NE(damaged.exit_code, 0);
  EXPECT_EQ(count_lines(damaged.err), 1u) << damaged.err;
  EXPECT_NE(damaged.err.find("--prompt-cache: session file '" + cache + "': its checksum does not match"),
            std::string::npos)
      << damaged.err;
  auto chat = run_cli("run " + program_ + " --chat --prompt-cache " + cache);
  EXPECT_NE(chat.exit_code, 0);
  EXPECT_NE(chat.err.find("--prompt-cache keeps a one-shot run's prompt"), std::string::npos) << chat.err;
}

TEST_F(CliModelTest, BenchReportsSpeedAgainstTheMeasuredMachine) {
  // A tiny probe buffer and one repetition: this checks what bench reports, never how fast.
  auto json_run = run_cli("bench " + program_ + " -p 12 -n 5 -r 2 -t 2 --probe-mib 8 --json");
  ASSERT_EQ(json_run.exit_code, 0) << json_run.err;
  const nlohmann::json doc = nlohmann::json::parse(json_run.out);
  EXPECT_EQ(doc["weight_dtype"], "f32");
  EXPECT_EQ(doc["threads"], 2);
  EXPECT_EQ(doc["threads_chosen_by"], "-t");
  EXPECT_EQ(doc["repetitions"], 2);
  // The weight bytes are the program's, as inspect counts them.
  auto inspect = run_cli("inspect " + program_ + " --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const nlohmann::json layout = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(doc["weight_bytes"].get<uint64_t>(),
            layout["constants"]["bytes"].get<uint64_t>() + layout["named_data"]["bytes"].get<uint64_t>());
  EXPECT_GT(doc["read_bandwidth_gbs"].get<double>(), 0.0);
  EXPECT_GT(doc["fma_peak_gflops"].get<double>(), 0.0);
  EXPECT_GT(doc["load_s"].get<double>(), 0.0);
  EXPECT_EQ(doc["prefill"]["tokens"], 12);
  EXPECT_GT(doc["prefill"]["tokens_per_s"].get<double>(), 0.0);
  // The prefill's multiply-adds per token, as generation prefills (the last token's logits
  // alone): this program keeps every position's logits, so the run narrows it, its head to the
  // last row once and its last layer after attention to the last row of the last chunk, which
  // bench takes off as the whole layer for all 12 tokens but the last.
  double multiply_adds = 0.0;
  double head = 0.0;
  for (const nlohmann::json& matrix : layout["matrices"]) {
    if (matrix["read_by"] != nlohmann::json::array({"embedding"})) {
      const double elements = matrix["shape"][0].get<double>() * matrix["shape"][1].get<double>();
      multiply_adds += elements;
      head += matrix["shape"][0] == layout["metadata"]["vocab_size"] ? elements : 0.0;
    }
  }
  ASSERT_GT(head, 0.0);
  const double body = multiply_adds - head;
  const double layers = layout["metadata"]["num_layers"].get<double>();
  EXPECT_NEAR(doc["prefill"]["multiply_adds_per_token"].get<double>(),
              (body * 12.0 - body / layers * 11.0 + head) / 12.0, 1e-9 * multiply_adds);
  // With the last position's logits only, the last layer narrows to the last row after its
  // attention: its o_proj, MLP and the head multiply one row, and only for the prompt's last
  // chunk (the earlier ones compute no logits). 12 tokens are two chunks of 8: those matrices
  // count 1 / 12 of their elements per token, the rest all of theirs.
  const std::string last = test_temp_path("llama3_last_logits_bench.slm");
  ASSERT_EQ(
      run_cli("export " + ref_.dir + " -o " + last + " --prefill-len 8 --max-cache-len 64 --logits last").exit_code, 0);
  auto last_run = run_cli("bench " + last + " -p 12 -n 2 -r 1 -t 2 --probe-mib 8 --json");
  ASSERT_EQ(last_run.exit_code, 0) << last_run.err;
  auto last_inspect = run_cli("inspect " + last + " --json");
  ASSERT_EQ(last_inspect.exit_code, 0) << last_inspect.err;
  const nlohmann::json last_layout = nlohmann::json::parse(last_inspect.out);
  double last_multiply_adds = 0.0;
  int one_row = 0;
  for (const nlohmann::json& matrix : last_layout["matrices"]) {
    if (matrix["read_by"] == nlohmann::json::array({"embedding"})) {
      continue;
    }
    const double elements = matrix["shape"][0].get<double>() * matrix["shape"][1].get<double>();
    const int64_t rows = matrix["rows"].get<int64_t>();
    ASSERT_TRUE(rows == 8 || rows == 1) << matrix.dump();
    one_row += rows == 1 ? 1 : 0;
    last_multiply_adds += rows == 8 ? elements : elements / 12.0;
  }
  EXPECT_EQ(one_row, 5);  // the head, o_proj, and the MLP's gate, up and down
  EXPECT_NEAR(nlohmann::json::parse(last_run.out)["prefill"]["multiply_adds_per_token"].get<double>(),
              last_multiply_adds, 1e-9 * last_multiply_adds);
  EXPECT_EQ(doc["decode"]["tokens"], 5);
  const double fraction = doc["decode"]["roofline_fraction"].get<double>();
  EXPECT_GT(fraction, 0.0);
  // Time per token = roofline time + fixed cost, by definition.
  const double token_ms = 1e3 / doc["decode"]["tokens_per_s"].get<double>();
  const double roofline_ms = 1e3 / doc["decode"]["roofline_tokens_per_s"].get<double>();
  EXPECT_NEAR(token_ms - roofline_ms, doc["decode"]["fixed_cost_ms"].get<double>(), 1e-6 * token_ms);
  EXPECT_NEAR(roofline_ms / token_ms, fraction, 1e-9);
  // The fixture's weights (a few hundred KB) fit in any last-level cache: the roofline is the
  // cache's, read over a buffer of their size, far above the memory's (the probe's 8 MiB buffer
  // may sit in a large cache too, so only the labels and the arithmetic are checked against it).
  const uint64_t cache_bytes = last_level_cache_bytes();
  EXPECT_EQ(doc["last_level_cache_bytes"].get<uint64_t>(), cache_bytes);
  const bool in_cache = cache_bytes > 0 && doc["weight_bytes"].get<uint64_t>() <= cache_bytes;
  EXPECT_EQ(doc["decode"]["roofline"], in_cache ? "last-level cache" : "memory");
  EXPECT_NEAR(doc["decode"]["roofline_tokens_per_s"].get<double>() * doc["weight_bytes"].get<double>() / 1e9,
              doc["decode"]["roofline_read_bandwidth_gbs"].get<double>(),
              1e-9 * doc["decode"]["roofline_read_bandwidth_gbs"].get<double>());
  if (!in_cache) {
    EXPECT_EQ(doc["decode"]["roofline_read_bandwidth_gbs"], doc["read_bandwidth_gbs"]);
  }
  // Every decode step runs its linears through the pool.
  EXPECT_GT(doc["decode"]["barriers_per_token"].get<double>(), 0.0);
  EXPECT_GT(doc["time_to_first_token_s"]["mean"].get<double>(), 0.0);

  EXPECT_FALSE(doc.contains("ops"));  // only with --ops

  // --ops: the kernel time of the timed runs by op and by the chunk's real rows. Every decode
  // kernel runs a whole number of times per one-row step (5 steps a run); within each row count
  // the shares add up to the whole.
  auto ops_run = run_cli("bench " + program_ + " -p 12 -n 5 -r 2 -t 2 --probe-mib 8 --json --ops");
  ASSERT_EQ(ops_run.exit_code, 0) << ops_run.err;
  const nlohmann::json ops = nlohmann::json::parse(ops_run.out)["ops"];
  ASSERT_TRUE(ops.is_array());
  std::map<int64_t, double> shares;
  bool decode_attention = false;
  for (const nlohmann::json& e : ops) {
    const int64_t rows = e["rows"].get<int64_t>();
    const double calls = e["calls_per_run"].get<double>();
    EXPECT_GT(calls, 0.0) << e.dump();
    EXPECT_GE(e["ms_per_run"].get<double>(), 0.0) << e.dump();
    shares[rows] += e["share_of_rows"].get<double>();
    if (rows == 1) {
      EXPECT_DOUBLE_EQ(calls / 5.0, std::floor(calls / 5.0)) << e.dump();
      decode_attention = decode_attention || e["op"] == "attention";
    }
  }
  EXPECT_TRUE(decode_attention) << ops.dump();
  for (const auto& [rows, total] : shares) {
    EXPECT_NEAR(total, 1.0, 1e-9) << "rows " << rows;
  }
  EXPECT_TRUE(shares.count(8) == 1 && shares.count(4) == 1) << ops.dump();  // the pp12 chunks: 8 rows, then 4

  auto table = run_cli("bench " + program_ + " -p 12 -n 5 -r 1 --probe-mib 8");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| pp12     |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("| tg5      |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(in_cache ? "of the cache roofline" : "of the roofline"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("the weights fit in the ") != std::string::npos, in_cache) << table.out;

  auto too_long = run_cli("bench " + program_ + " -p 12 -n 80 --probe-mib 8");
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_EQ(count_lines(too_long.err), 1u) << too_long.err;
  EXPECT_NE(too_long.err.find("the benchmark needs 89 cache slots (-p 12, -n 80), the program has max_cache_len 64"),
            std::string::npos)
      << too_long.err;
  auto huge_probe = run_cli("bench " + program_ + " --probe-mib 99999999999999");
  EXPECT_NE(huge_probe.exit_code, 0);
  EXPECT_NE(huge_probe.err.find("--probe-mib must be in [1, 65536], found 99999999999999"), std::string::npos)
      << huge_probe.err;
  auto zero = run_cli("bench " + program_ + " -r 0");
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find("must be at least 1"), std::string::npos) << zero.err;
}

TEST_F(CliModelTest, TokenizeUsesTheEmbeddedTokenizer) {
  auto tokenizer_json = testing::read_file(ref_.dir + "/tokenizer.json");
  auto config_json = testing::read_file(ref_.dir + "/tokenizer_config.json");
  auto tokenizer = load_tokenizer_json(tokenizer_json, config_json);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  auto expected = (*tokenizer)->encode("the quick brown fox");
  ASSERT_TRUE(expected.ok());

  auto result = run_cli("tokenize " + program_ + " 'the quick brown fox'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::string expected_line;
  for (size_t i = 0; i < expected->size(); ++i) {
    expected_line += (i == 0 ? "" : " ") + std::to_string((*expected)[i]);
  }
  EXPECT_EQ(result.out, expected_line + "\n");

  auto decoded = run_cli("tokenize " + program_ + " --decode " + join_ids(*expected));
  ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
  EXPECT_NE(decoded.out.find("the quick brown fox"), std::string::npos) << decoded.out;

  auto from_file = run_cli("tokenize --tokenizer " + ref_.dir + "/tokenizer.json 'the quick brown fox'");
  EXPECT_EQ(from_file.out, result.out);

  auto json = run_cli("tokenize --json " + program_ + " 'the'");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"id\":"), std::string::npos) << json.out;

  auto missing_text = run_cli("tokenize " + program_);
  EXPECT_NE(missing_text.exit_code, 0);
  EXPECT_EQ(count_lines(missing_text.err), 1u) << missing_text.err;
}

TEST_F(CliModelTest, TheRuntimeOnlyBinaryRunsWhatTheFullOneExports) {
  const std::string delegated = test_temp_path("llama3_cpu.slm");
  auto exported =
      run_cli("export " + ref_.dir + " -o " + delegated + " --prefill-len 8 --max-cache-len 64 --backend cpu");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("named data: "), std::string::npos) << exported.out;
  auto full = run_cli("run " + program_ + " -p 'hello world' -n 6 -q --temp 0");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  auto runtime_only = run_cli(
      "run " + delegated + " -p 'hello world' -n 6 -q --temp 0 --runtime-option cpu.isa=portable", STATICLM_RUN_CLI);
  ASSERT_EQ(runtime_only.exit_code, 0) << runtime_only.err;
  EXPECT_EQ(runtime_only.out, full.out);
  auto typo = run_cli("run " + delegated + " -p hi --runtime-option cpu.isa=avx3", STATICLM_RUN_CLI);
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_EQ(count_lines(typo.err), 1u) << typo.err;
  EXPECT_NE(typo.err.find("'avx3' is not one of auto, amx, avx512, avx2, portable"), std::string::npos) << typo.err;
  auto no_export = run_cli("export " + ref_.dir + " -o " + test_temp_path("no.slm"), STATICLM_RUN_CLI);
  EXPECT_NE(no_export.exit_code, 0) << "staticlm-run has no exporter";
}

TEST_F(CliModelTest, BenchProbesTheMachineUnderTheIsaCap) {
  // A run capped to the portable kernels is measured against the peaks of scalar code, as its
  // kernels see the machine, not against the widest vectors the CPU has.
  const std::string delegated = test_temp_path("llama3_cpu_bench.slm");
  ASSERT_EQ(run_cli("export " + ref_.dir + " -o " + delegated + " --prefill-len 8 --max-cache-len 64 --backend cpu")
                .exit_code,
            0);
  const std::string bench = "bench " + delegated + " -p 8 -n 2 -r 1 -t 1 --probe-mib 8 --json";
  auto capped = run_cli(bench + " --runtime-option cpu.isa=portable");
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_EQ(nlohmann::json::parse(capped.out)["probe_features"], "none");
  auto uncapped = run_cli(bench);
  ASSERT_EQ(uncapped.exit_code, 0) << uncapped.err;
  const nlohmann::json measured = nlohmann::json::parse(uncapped.out);
  EXPECT_EQ(measured["probe_features"], CpuFeatures::host().to_string());
  // Under an emulator (the cross build's tests run under qemu-aarch64) bench says its times are
  // the emulator's, in its JSON and in one line on stderr.
  const std::string emulated = host_emulation_sign();
  if (emulated.empty()) {
    EXPECT_TRUE(measured["emulated"].is_null()) << measured["emulated"];
    EXPECT_EQ(uncapped.err.find("looks emulated"), std::string::npos) << uncapped.err;
  } else {
    EXPECT_EQ(measured["emulated"], emulated);
    EXPECT_NE(uncapped.err.find("warning: this CPU looks emulated (" + emulated + ")"), std::string::npos)
        << uncapped.err;
  }
}

TEST(CliExportErrorTest, BadInputIsOneLine) {
  auto missing = run_cli("export /nonexistent/model -o " + test_temp_path("x.slm"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(count_lines(missing.err), 1u) << missing.err;
  EXPECT_NE(missing.err.find("config.json"), std::string::npos) << missing.err;

  auto bad_option =
      run_cli("export " + testing::fixture_dir("llama") + " -o " + test_temp_path("x.slm") + " --dtype q4");
  EXPECT_NE(bad_option.exit_code, 0);
  EXPECT_EQ(count_lines(bad_option.err), 1u) << bad_option.err;
  EXPECT_NE(bad_option.err.find("--dtype"), std::string::npos) << bad_option.err;
}

}  // namespace
}  // namespace staticlm
