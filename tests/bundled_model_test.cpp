// SPDX-License-Identifier: Apache-2.0
// The bundled model (models/kjv-llama-6m, scripts/train_bundled_model.py) is a real model, not
// random weights: its two tokenizer files give the same ids; its held-out perplexity through
// staticlm matches the value its training script computed in PyTorch within 1%, and is far below
// the vocabulary size (a random model's is near or above it); its greedy continuation of a common
// verse opening is made of words. No text is hard-coded.
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/generator.h"
#include "staticlm/llm/grammar/grammar_spec.h"
#include "staticlm/llm/perplexity.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

#include "export_helpers.h"
#include "session_helper.h"

namespace staticlm {
namespace {

const std::string kModel = std::string(STATICLM_SOURCE_DIR) + "/models/kjv-llama-6m";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The program every test runs: on the cpu backend, as `staticlm export` makes it by default, with
// a 512-token cache; made once.
const std::string& program() {
  static const std::string path = [] {
    const std::string out = testing::temp_path("kjv-llama-6m.slm");
    static const std::shared_ptr<CpuBackend> backend = CpuBackend::create().value();
    HfStaticExportOptions options;
    options.prefill_len = 64;
    options.max_cache_len = 512;
    options.backend = backend.get();
    const Status exported = export_hf_static(kModel, out, options).status();
    EXPECT_TRUE(exported.ok()) << exported.to_string();
    return out;
  }();
  return path;
}

TEST(BundledModelTest, ItsTwoTokenizerFilesGiveTheSameIds) {
  auto json = load_tokenizer_json(read(kModel + "/tokenizer.json"), read(kModel + "/tokenizer_config.json"));
  ASSERT_TRUE(json.ok()) << json.status().to_string();
  const std::string model_bytes = read(kModel + "/tokenizer.model");
  auto spm =
      load_sentencepiece_model(std::span(reinterpret_cast<const uint8_t*>(model_bytes.data()), model_bytes.size()));
  ASSERT_TRUE(spm.ok()) << spm.status().to_string();
  const std::string heldout = read(kModel + "/heldout.txt");
  // The held-out text, and text the corpus lacks: digits, other scripts, emoji, spacing, newlines.
  for (const std::string& text :
       {heldout, std::string("  In 1611,  the\tquick brown fox;\n\nZoë naïve café ☃ 🦊 "
                             "日本語 ﬁ 42x — end.\n")}) {
    auto a = (*json)->encode(text, EncodeOptions{});
    auto b = (*spm)->encode(text, EncodeOptions{});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << text.substr(0, 80);
    auto back = (*json)->decode(*a, true);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, text) << "byte fallback makes every text round-trip";
  }
}

TEST(BundledModelTest, HeldOutPerplexityMatchesPyTorchWithinOnePercent) {
  const nlohmann::json recorded = nlohmann::json::parse(read(kModel + "/heldout_perplexity.json"));
  auto opened = testing::open_test_session(program());
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto tokenizer = load_tokenizer_from_dir(kModel);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  auto tokens = (*tokenizer)->encode(read(kModel + "/" + recorded["text"].get<std::string>()), EncodeOptions{});
  ASSERT_TRUE(tokens.ok());
  PerplexityOptions options;
  options.ctx = recorded["ctx"].get<int64_t>();
  options.stride = recorded["stride"].get<int64_t>();
  auto result = compute_perplexity(*opened->session, *tokens, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->scored_tokens, recorded["scored_tokens"].get<int64_t>());
  const double pytorch = recorded["perplexity"].get<double>();
  EXPECT_NEAR(result->perplexity, pytorch, 0.01 * pytorch);
  // A trained model: far below the vocabulary size a uniform guess would score.
  EXPECT_LT(result->perplexity, static_cast<double>(opened->session->vocab_size()) / 20.0);
}

// Words of `text`: runs of letters (apostrophes kept), lower-cased.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text + " ") {
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '\'') {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      out.push_back(word);
      word.clear();
    }
  }
  return out;
}

TEST(BundledModelTest, GreedyContinuationOfAVerseOpeningIsMadeOfWords) {
  auto opened = testing::open_test_session(program());
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto tokenizer = load_tokenizer_from_dir(kModel);
  ASSERT_TRUE(tokenizer.ok());
  auto prompt = (*tokenizer)->encode("And God said", EncodeOptions{});
  ASSERT_TRUE(prompt.ok());
  GenerationOptions options;  // greedy
  options.max_new_tokens = 32;
  auto generated = generate_tokens(*opened->session, *prompt, options);
  ASSERT_TRUE(generated.ok()) << generated.status().to_string();
  auto text = (*tokenizer)->decode(generated->tokens, true);
  ASSERT_TRUE(text.ok());
  // A word is real when the held-out books use it or the tokenizer learned it whole ("▁word"):
  // a random model's tokens glue subword pieces into strings that are neither.
  std::set<std::string> known;
  for (const std::string& word : words(read(kModel + "/heldout.txt"))) known.insert(word);
  const std::vector<std::string> continuation = words(*text);
  ASSERT_GE(continuation.size(), 8u) << *text;
  auto whole_piece = [&](std::string word) {
    if ((*tokenizer)->token_to_id("\u2581" + word).has_value()) {
      return true;
    }
    word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    return (*tokenizer)->token_to_id("\u2581" + word).has_value();
  };
  size_t real = 0;
  for (const std::string& word : continuation) {
    real += known.count(word) > 0 || whole_piece(word) ? 1 : 0;
  }
  EXPECT_GE(static_cast<double>(real), 0.9 * static_cast<double>(continuation.size())) << *text;
}

// A lazy grammar (a tool call under tool_choice "auto"): the text is the model's own until the
// trigger appears, and from the trigger on it is the grammar's. The trigger is a word of the free
// greedy text; what the grammar demands after it (digits) is nothing this model writes by itself.
TEST(BundledModelTest, ALazyGrammarAppliesFromItsTrigger) {
  auto opened = testing::open_test_session(program());
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto tokenizer = load_tokenizer_from_dir(kModel);
  ASSERT_TRUE(tokenizer.ok());
  auto vocabulary = TokenVocabulary::build(**tokenizer);
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status().to_string();
  GenerationOptions options;  // greedy
  options.max_new_tokens = 24;
  auto free = generate_text(*opened->session, **tokenizer, "And God said", options);
  ASSERT_TRUE(free.ok()) << free.status().to_string();
  // The third word the model wrote, if the tokenizer has it as one piece (so a token ends with it).
  const std::vector<std::string> written = words(free->text);
  ASSERT_GE(written.size(), 4u) << free->text;
  std::string trigger;
  size_t at = std::string::npos;
  for (size_t i = 2; i < written.size() && trigger.empty(); ++i) {
    for (const std::string& form :
         {written[i], std::string(1, static_cast<char>(std::toupper(written[i][0]))) + written[i].substr(1)}) {
      at = free->text.find(" " + form + " ");
      if (at != std::string::npos && (*tokenizer)->token_to_id("\u2581" + form).has_value()) {
        trigger = " " + form;
        break;
      }
    }
  }
  ASSERT_FALSE(trigger.empty()) << free->text;
  auto grammar = compile_grammar_spec(
      GrammarSpec{GrammarSpec::Kind::kGbnf, "root ::= \"" + trigger + " \" [0-9] [0-9] [0-9] \"!\""}, *vocabulary);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  options.grammar = *grammar;
  options.grammar_trigger = trigger;
  auto lazy = generate_text(*opened->session, **tokenizer, "And God said", options);
  ASSERT_TRUE(lazy.ok()) << lazy.status().to_string();
  const std::string before = free->text.substr(0, at + trigger.size());
  ASSERT_EQ(lazy->text.substr(0, before.size()), before) << lazy->text;
  const std::string after = lazy->text.substr(before.size());
  ASSERT_EQ(after.size(), 5u) << lazy->text;
  EXPECT_EQ(after[0], ' ');
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(after[1])) &&
              std::isdigit(static_cast<unsigned char>(after[2])) && std::isdigit(static_cast<unsigned char>(after[3])))
      << after;
  EXPECT_EQ(after[4], '!');
  EXPECT_EQ(lazy->stop_reason, StopReason::kGrammarComplete);

  // Anchored at the start, a trigger the reply does not open with leaves the reply free.
  options.grammar_trigger_at_start = true;
  auto anchored = generate_text(*opened->session, **tokenizer, "And God said", options);
  ASSERT_TRUE(anchored.ok()) << anchored.status().to_string();
  EXPECT_EQ(anchored->text, free->text);
}

}  // namespace
}  // namespace staticlm
