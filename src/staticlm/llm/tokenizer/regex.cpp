// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace staticlm {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  int length = pcre2_get_error_message(code, buffer, sizeof(buffer));
  if (length < 0) return str_cat("PCRE2 error ", code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(length));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

Result<Regex> Regex::compile(std::string_view pattern, std::string_view where) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // MATCH_INVALID_UTF: subjects may be partial byte-level text; ill-formed bytes just never match.
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return invalid_argument(where, ": regex '", pattern, "' does not compile at offset ", error_offset, ": ",
                            pcre2_message(error_code));
  }
  auto compiled = std::make_shared<Compiled>();
  compiled->code = code;
  // JIT is an optimisation only: interpretation gives the same matches when it is unavailable.
  compiled->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  Regex regex;
  regex.compiled_ = std::move(compiled);
  regex.pattern_ = std::string(pattern);
  regex.where_ = std::string(where);
  return regex;
}

Result<std::vector<RegexMatch>> Regex::find_all(std::string_view text) const {
  std::vector<RegexMatch> matches;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr));
  if (!data) {
    return resource_exhausted(where_, ": cannot allocate regex match data");
  }
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    constexpr uint32_t options = 0;
    int rc = PCRE2_ERROR_JIT_STACKLIMIT;
    if (compiled_->jit) {
      rc = pcre2_jit_match(compiled_->code, subject, text.size(), start, options, data.get(), nullptr);
    }
    // The interpreter keeps its backtracking state on the heap, so it copes with inputs (long
    // runs of one character class) that overflow the JIT's small machine stack.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(compiled_->code, subject, text.size(), start, options, data.get(), nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return invalid_argument(where_, ": matching regex '", pattern_, "' failed: ", pcre2_message(rc));
    }
    PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    RegexMatch match{ovector[0], ovector[1]};
    matches.push_back(match);
    if (match.end > match.begin) {
      start = match.end;
      continue;
    }
    // Empty match: step over one whole character so the next search starts on a boundary.
    if (match.end >= text.size()) break;
    start = match.end + 1;
    while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  }
  return matches;
}

TextPattern TextPattern::literal(std::string text) {
  TextPattern pattern;
  pattern.literal_ = std::move(text);
  return pattern;
}

TextPattern TextPattern::regex(Regex regex) {
  TextPattern pattern;
  pattern.regex_ = std::move(regex);
  return pattern;
}

Result<std::vector<RegexMatch>> TextPattern::find_all(std::string_view text) const {
  if (regex_) return regex_->find_all(text);
  std::vector<RegexMatch> matches;
  if (literal_.empty()) return matches;
  size_t pos = text.find(literal_);
  while (pos != std::string_view::npos) {
    matches.push_back({pos, pos + literal_.size()});
    pos = text.find(literal_, pos + literal_.size());
  }
  return matches;
}

Result<std::string> TextPattern::replace_all(std::string_view text, std::string_view replacement) const {
  STATICLM_ASSIGN_OR_RETURN(std::vector<RegexMatch> matches, find_all(text));
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (const RegexMatch& match : matches) {
    if (match.end == match.begin) continue;
    out.append(text.substr(previous, match.begin - previous));
    out.append(replacement);
    previous = match.end;
  }
  out.append(text.substr(previous));
  return out;
}

}  // namespace staticlm
