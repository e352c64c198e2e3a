// SPDX-License-Identifier: Apache-2.0
// How long a grammar takes to give the next token's mask on the Llama 3 tokenizer (128256
// tokens, tests/fixtures/tokenizers/llama3.tokenizer.json.gz), one thread, under a JSON Schema of
// an object with nested arrays, enums and strings. The matcher walks the tokens of a document
// valid under the schema, as Llama 3's tokenizer encodes it, computing the mask before each.
//
//   warm: the grammar's per-position token sets already computed (every later request with the
//         same schema, and every step that comes back to a position): counters mask_median_us,
//         mask_mean_us, mask_p90_us, mask_max_us per token.
//   cold: a freshly compiled grammar each time (the first request with a schema): the same
//         counters, plus compile_ms (schema to grammar to automaton).
//   apply: setting the refused tokens' logits to -inf over the whole vocabulary, per token.
//
//   build/release/bin/grammar_mask_bench
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/grammar/grammar_matcher.h"
#include "staticlm/llm/grammar/json_schema_grammar.h"
#include "staticlm/llm/sampling/sampler.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {
namespace {

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "kind": {"enum": ["person", "place", "organisation", "event"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "scores": {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100}}},
    "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                "country": {"enum": ["DE", "FR", "GB", "US"]}}, "required": ["street", "city", "country"],
                "additionalProperties": false},
    "notes": {"type": "array", "items": {"type": "object", "properties": {"text": {"type": "string"},
              "stars": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["text", "stars"],
              "additionalProperties": false}}
  },
  "required": ["name", "kind", "tags", "scores", "address", "notes"],
  "additionalProperties": false
})";

constexpr const char* kDocument =
    R"({"name": "Ada Lovelace, Countess of Lovelace", "kind": "person", "tags": ["mathematics", "computing", )"
    R"("poetry", "Analytical Engine"], "scores": [[97, 88, 100], [64], []], "address": {"street": "12 St James's )"
    R"(Square", "city": "London", "country": "GB"}, "notes": [{"text": "Wrote the first published algorithm )"
    R"(intended for a machine; translated Menabrea's paper and added notes longer than the paper itself.", )"
    R"("stars": 5}, {"text": "Daughter of Lord Byron \u2014 \"poetical science\".", "stars": 4}]})";

std::string gunzip_file(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return "";
  }
  std::string out;
  char buffer[1 << 16];
  int read = 0;
  while ((read = gzread(file, buffer, sizeof(buffer))) > 0) {
    out.append(buffer, static_cast<size_t>(read));
  }
  gzclose(file);
  return out;
}

struct Setup {
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const TokenVocabulary> vocabulary;
  std::string gbnf;
  std::vector<int32_t> tokens;
};

const Setup& setup() {
  static const Setup* made = [] {
    auto* s = new Setup();
    const std::string dir = std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/tokenizers/";
    std::ifstream config_file(dir + "llama3.tokenizer_config.json");
    std::stringstream config;
    config << config_file.rdbuf();
    auto tokenizer = load_tokenizer_json(gunzip_file(dir + "llama3.tokenizer.json.gz"), config.str());
    if (!tokenizer.ok()) {
      std::fprintf(stderr, "%s\n", tokenizer.status().to_string().c_str());
      std::abort();
    }
    s->tokenizer = std::move(tokenizer).value();
    s->vocabulary = TokenVocabulary::build(*s->tokenizer).value();
    s->gbnf = json_schema_to_gbnf(std::string_view(kSchema)).value();
    EncodeOptions plain;
    plain.add_special_tokens = false;
    s->tokens = s->tokenizer->encode(kDocument, plain).value();
    return s;
  }();
  return *made;
}

std::shared_ptr<const CompiledGrammar> compile() {
  return compile_gbnf(setup().gbnf, setup().vocabulary).value();
}

// Masks before each token of the document; returns each mask's seconds.
std::vector<double> walk(const std::shared_ptr<const CompiledGrammar>& grammar) {
  using Clock = std::chrono::steady_clock;
  GrammarMatcher matcher(grammar);
  TokenBitmask mask(setup().vocabulary->size());
  std::vector<double> seconds;
  for (int32_t token : setup().tokens) {
    const auto start = Clock::now();
    const Status filled = matcher.fill_mask(mask);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (!filled.ok() || !mask.test(token) || !matcher.accept_token(token).ok()) {
      std::fprintf(stderr, "the document leaves the grammar at token %d\n", token);
      std::abort();
    }
  }
  if (!matcher.is_complete()) {
    std::fprintf(stderr, "the document does not complete the grammar\n");
    std::abort();
  }
  return seconds;
}

void report(benchmark::State& state, std::vector<double> all) {
  std::sort(all.begin(), all.end());
  double total = 0;
  for (double s : all) total += s;
  state.counters["tokens"] = static_cast<double>(setup().tokens.size());
  state.counters["mask_median_us"] = all[all.size() / 2] * 1e6;
  state.counters["mask_p90_us"] = all[all.size() * 9 / 10] * 1e6;
  state.counters["mask_max_us"] = all.back() * 1e6;
  state.counters["mask_mean_us"] = total / static_cast<double>(all.size()) * 1e6;
}

void BM_GrammarMaskWarm(benchmark::State& state) {
  const auto grammar = compile();
  walk(grammar);  // computes every position the document reaches
  std::vector<double> all;
  for (auto _ : state) {
    const std::vector<double> seconds = walk(grammar);
    all.insert(all.end(), seconds.begin(), seconds.end());
  }
  report(state, std::move(all));
}
BENCHMARK(BM_GrammarMaskWarm)->Unit(benchmark::kMillisecond);

void BM_GrammarMaskCold(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> all;
  double compile_seconds = 0;
  int64_t compiles = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    const std::string gbnf = json_schema_to_gbnf(std::string_view(kSchema)).value();
    const auto grammar = compile_gbnf(gbnf, setup().vocabulary).value();
    compile_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    ++compiles;
    const std::vector<double> seconds = walk(grammar);
    all.insert(all.end(), seconds.begin(), seconds.end());
  }
  report(state, std::move(all));
  state.counters["compile_ms"] = compile_seconds / static_cast<double>(compiles) * 1e3;
}
BENCHMARK(BM_GrammarMaskCold)->Unit(benchmark::kMillisecond);

void BM_ApplyMask(benchmark::State& state) {
  const int32_t vocab = setup().vocabulary->size();
  TokenBitmask mask(vocab);
  for (int32_t id = 0; id < vocab; id += 3) {
    mask.set(id);
  }
  std::vector<float> logits(static_cast<size_t>(vocab), 1.0f);
  for (auto _ : state) {
    mask_logits(logits, mask.words());
    benchmark::DoNotOptimize(logits.data());
  }
}
BENCHMARK(BM_ApplyMask)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
