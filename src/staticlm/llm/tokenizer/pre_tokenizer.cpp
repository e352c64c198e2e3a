// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/pre_tokenizer.h"

#include <utility>

#include <utf8proc.h>

#include "staticlm/core/utf8.h"
#include "staticlm/llm/tokenizer/byte_level.h"
#include "staticlm/llm/tokenizer/normalizer.h"
#include "staticlm/llm/tokenizer/regex.h"

namespace staticlm {
namespace {

constexpr std::string_view kSupported = "ByteLevel, Split, Metaspace, Digits, Sequence";

// The GPT-2 word pattern used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Span {
  size_t begin;
  size_t end;
  bool is_match;
};

// Turns the matches inside `text` into the pieces `behavior` asks for (Hugging Face's
// SplitDelimiterBehavior), each as a byte range of `text`.
std::vector<Span> apply_behavior(std::string_view text, const std::vector<RegexMatch>& matches, bool invert,
                                 SplitBehavior behavior) {
  std::vector<Span> spans;
  size_t previous = 0;
  for (const RegexMatch& match : matches) {
    if (match.begin > previous) spans.push_back({previous, match.begin, invert});
    spans.push_back({match.begin, match.end, !invert});
    previous = match.end;
  }
  if (previous < text.size()) spans.push_back({previous, text.size(), invert});

  std::vector<Span> pieces;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated: return spans;
    case SplitBehavior::kRemoved:
      for (const Span& span : spans) {
        if (!span.is_match) pieces.push_back(span);
      }
      return pieces;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& span : spans) {
        if (span.is_match && !previous_match && !pieces.empty()) {
          pieces.back().end = span.end;
        } else {
          pieces.push_back(span);
        }
        previous_match = span.is_match;
      }
      return pieces;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty()) {
          pieces.back().begin = it->begin;
        } else {
          pieces.push_back(*it);
        }
        previous_match = it->is_match;
      }
      return {pieces.rbegin(), pieces.rend()};
    case SplitBehavior::kContiguous:
      for (size_t i = 0; i < spans.size(); ++i) {
        if (i > 0 && spans[i].is_match == previous_match) {
          pieces.back().end = spans[i].end;
        } else {
          pieces.push_back(spans[i]);
        }
        previous_match = spans[i].is_match;
      }
      return pieces;
  }
  return spans;
}

// Splits every piece at the matches of `pattern`; the first sub-piece inherits at_input_start.
Status split_pieces(std::vector<PreToken>& pieces, const TextPattern& pattern, bool invert, SplitBehavior behavior) {
  std::vector<PreToken> out;
  out.reserve(pieces.size());
  for (PreToken& piece : pieces) {
    STATICLM_ASSIGN_OR_RETURN(std::vector<RegexMatch> matches, pattern.find_all(piece.text));
    for (const Span& span : apply_behavior(piece.text, matches, invert, behavior)) {
      if (span.end == span.begin) continue;
      out.push_back({piece.text.substr(span.begin, span.end - span.begin), piece.at_input_start && span.begin == 0});
    }
  }
  pieces = std::move(out);
  return ok_status();
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::optional<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  Status pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_) {
      for (PreToken& piece : pieces) {
        if (piece.text.empty() || piece.text[0] != ' ') piece.text.insert(0, " ");
      }
    }
    if (regex_) {
      STATICLM_RETURN_IF_ERROR(split_pieces(pieces, TextPattern::regex(*regex_), false, SplitBehavior::kIsolated));
    }
    for (PreToken& piece : pieces) {
      std::string mapped;
      mapped.reserve(piece.text.size() * 2);
      byte_level_encode(piece.text, mapped);
      piece.text = std::move(mapped);
    }
    return ok_status();
  }

 private:
  bool add_prefix_space_;
  std::optional<Regex> regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(TextPattern pattern, bool invert, SplitBehavior behavior)
      : pattern_(std::move(pattern)), invert_(invert), behavior_(behavior) {}

  Status pre_tokenize(std::vector<PreToken>& pieces) const override {
    return split_pieces(pieces, pattern_, invert_, behavior_);
  }

 private:
  TextPattern pattern_;
  bool invert_;
  SplitBehavior behavior_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

  Status pre_tokenize(std::vector<PreToken>& pieces) const override {
    TextPattern space = TextPattern::literal(" ");
    for (PreToken& piece : pieces) {
      STATICLM_ASSIGN_OR_RETURN(piece.text, space.replace_all(piece.text, replacement_));
      bool prepend = scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.at_input_start);
      if (prepend && piece.text.compare(0, replacement_.size(), replacement_) != 0) {
        piece.text.insert(0, replacement_);
      }
    }
    if (!split_) return ok_status();
    return split_pieces(pieces, TextPattern::literal(replacement_), false, SplitBehavior::kMergedWithNext);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

// Unicode numeric characters, as Rust's char::is_numeric (Nd, Nl, No).
bool is_numeric(char32_t code_point) {
  auto category = utf8proc_category(static_cast<utf8proc_int32_t>(code_point));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL || category == UTF8PROC_CATEGORY_NO;
}

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual_digits) : individual_digits_(individual_digits) {}

  Status pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    for (PreToken& piece : pieces) {
      std::string_view text = piece.text;
      size_t start = 0;
      size_t pos = 0;
      bool in_digits = false;
      auto emit = [&](size_t end) {
        if (end > start)
          out.push_back({std::string(text.substr(start, end - start)), piece.at_input_start && start == 0});
        start = end;
      };
      while (pos < text.size()) {
        char32_t code_point = 0;
        size_t length = utf8_decode_char(text, pos, code_point);
        if (length == 0) length = 1;
        bool digit = is_numeric(code_point);
        if (digit != in_digits || (digit && individual_digits_)) emit(pos);
        in_digits = digit;
        pos += length;
      }
      emit(text.size());
    }
    pieces = std::move(out);
    return ok_status();
  }

 private:
  bool individual_digits_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  Status pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& step : steps_) {
      STATICLM_RETURN_IF_ERROR(step->pre_tokenize(pieces));
    }
    return ok_status();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Result<SplitBehavior> read_behavior(const Json& config, std::string_view where) {
  STATICLM_ASSIGN_OR_RETURN(std::string name, read_string(config, "behavior", where));
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return invalid_argument(field_name(where, "behavior"), ": '", name,
                          "' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

Result<PrependScheme> read_prepend_scheme(const Json& config, std::string_view where) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> name, read_optional_string(config, "prepend_scheme", where));
  if (!name) {
    // Files older than prepend_scheme carry add_prefix_space instead.
    STATICLM_ASSIGN_OR_RETURN(bool add_prefix_space, read_bool(config, "add_prefix_space", true, where));
    return add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  if (*name == "always") return PrependScheme::kAlways;
  if (*name == "first") return PrependScheme::kFirst;
  if (*name == "never") return PrependScheme::kNever;
  return invalid_argument(field_name(where, "prepend_scheme"), ": '", *name, "' is not one of always, first, never");
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& config, std::string_view where) {
  if (config.is_null()) return std::unique_ptr<PreTokenizer>();
  STATICLM_ASSIGN_OR_RETURN(std::string type, read_component_type(config, where));
  if (type == "ByteLevel") {
    STATICLM_ASSIGN_OR_RETURN(bool add_prefix_space, read_bool(config, "add_prefix_space", true, where));
    STATICLM_ASSIGN_OR_RETURN(bool use_regex, read_bool(config, "use_regex", true, where));
    std::optional<Regex> regex;
    if (use_regex) {
      STATICLM_ASSIGN_OR_RETURN(regex, Regex::compile(kGpt2Pattern, where));
    }
    return std::unique_ptr<PreTokenizer>(new ByteLevelPreTokenizer(add_prefix_space, std::move(regex)));
  }
  if (type == "Split") {
    STATICLM_ASSIGN_OR_RETURN(TextPattern pattern, read_text_pattern(config, "pattern", where));
    STATICLM_ASSIGN_OR_RETURN(SplitBehavior behavior, read_behavior(config, where));
    STATICLM_ASSIGN_OR_RETURN(bool invert, read_bool(config, "invert", false, where));
    return std::unique_ptr<PreTokenizer>(new SplitPreTokenizer(std::move(pattern), invert, behavior));
  }
  if (type == "Metaspace") {
    STATICLM_ASSIGN_OR_RETURN(std::string replacement, read_single_char(config, "replacement", "\u2581", where));
    STATICLM_ASSIGN_OR_RETURN(PrependScheme scheme, read_prepend_scheme(config, where));
    STATICLM_ASSIGN_OR_RETURN(bool split, read_bool(config, "split", true, where));
    return std::unique_ptr<PreTokenizer>(new MetaspacePreTokenizer(std::move(replacement), scheme, split));
  }
  if (type == "Digits") {
    STATICLM_ASSIGN_OR_RETURN(bool individual, read_bool(config, "individual_digits", false, where));
    return std::unique_ptr<PreTokenizer>(new DigitsPreTokenizer(individual));
  }
  if (type == "Sequence") {
    STATICLM_ASSIGN_OR_RETURN(const Json* items, read_array(config, "pretokenizers", where));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < items->size(); ++i) {
      STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> step,
                                make_pre_tokenizer((*items)[i], str_cat(where, ".pretokenizers[", i, "]")));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(steps)));
  }
  return unimplemented(where, " type '", type, "' is not supported (supported: ", kSupported, ")");
}

}  // namespace staticlm
