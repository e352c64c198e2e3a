// SPDX-License-Identifier: Apache-2.0
// A compiled PCRE2 pattern (UTF + Unicode properties, JIT-compiled where the platform allows)
// used for the regex parts of tokenizer.json: Split pre-tokenizers, Replace normalizers/decoders.
// Immutable after compile; find_all is safe to call from several threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm {

struct RegexMatch {
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
 public:
  // Compiles `pattern`. `where` names the pattern's place in messages ("pre_tokenizer[0] Split
  // pattern"). Fails with InvalidArgument (with PCRE2's message and offset) for a bad pattern.
  static Result<Regex> compile(std::string_view pattern, std::string_view where);

  // Every non-overlapping match in `text`, left to right, including empty ones (after an empty
  // match the search resumes one character later). `text` may hold invalid UTF-8 (decoders see
  // partial characters): ill-formed bytes never match. Fails with InvalidArgument when matching
  // hits PCRE2's resource limits.
  Result<std::vector<RegexMatch>> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;
  std::string pattern_;
  std::string where_;
};

// A tokenizer.json pattern: {"String": "..."} (matched literally) or {"Regex": "..."}.
class TextPattern {
 public:
  static TextPattern literal(std::string text);
  static TextPattern regex(Regex regex);

  // Same contract as Regex::find_all; a literal never produces empty matches.
  Result<std::vector<RegexMatch>> find_all(std::string_view text) const;
  // Replaces every non-empty match with `replacement` (taken literally, no $1 groups).
  Result<std::string> replace_all(std::string_view text, std::string_view replacement) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;
};

}  // namespace staticlm
