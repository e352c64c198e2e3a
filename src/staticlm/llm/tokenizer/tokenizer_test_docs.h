// SPDX-License-Identifier: Apache-2.0
// Tiny tokenizer.json documents for the component tests, built as JSON so each test can change
// one field.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace staticlm::tokenizer_test {

// A character-level BPE over "a", "b", "c" with merges "a b" (rank 0), "ab c" (1), "b c" (2),
// so "abc" encodes to [abc] when nothing splits it. Ids: a=0 b=1 c=2 ab=3 abc=4 bc=5.
inline nlohmann::json abc_document() {
  return {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", {{"type", "Fuse"}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}, {"bc", 5}}},
        {"merges", {"a b", "ab c", "b c"}}}},
  };
}

inline int32_t byte_id(int byte) {
  return 3 + byte;
}

// A Llama-2 style file: Prepend/Replace normalizer, byte fallback, ByteFallback decoder chain,
// TemplateProcessing "<s> $A". Ids: <unk>=0 <s>=1 </s>=2, byte b is 3+b, "▁"=259 "a"=260
// "b"=261 "ab"=262 "▁ab"=263.
inline nlohmann::json llama_style_document() {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int byte = 0; byte < 256; ++byte) {
    vocab[std::string{'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'}] = 3 + byte;
  }
  vocab.update({{"\u2581", 259}, {"a", 260}, {"b", 261}, {"ab", 262}, {"\u2581ab", 263}});
  return {
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
        {{"id", 2}, {"content", "</s>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\u2581"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", {"a b", "\u2581 ab"}}}},
  };
}

}  // namespace staticlm::tokenizer_test
