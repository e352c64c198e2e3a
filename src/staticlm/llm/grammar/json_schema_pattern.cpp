// SPDX-License-Identifier: Apache-2.0
// `pattern` (an ECMAScript regular expression with the "u" flag, unanchored) to GBNF over the
// content of a JSON string: every character of the regex becomes json_string_char of its set.
#include <cctype>
#include <string>
#include <vector>

#include "staticlm/core/utf8.h"
#include "staticlm/llm/grammar/json_schema_parts.h"

namespace staticlm::json_schema {
namespace {

constexpr uint32_t kMaxCount = 10000;
constexpr int kMaxDepth = 64;

std::vector<CodePointRange> digits() {
  return {{'0', '9'}};
}
std::vector<CodePointRange> word_chars() {
  return normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
// ECMAScript's WhiteSpace and LineTerminator.
std::vector<CodePointRange> space_chars() {
  return normalize_ranges({{'\t', '\r'},
                           {' ', ' '},
                           {0xA0, 0xA0},
                           {0x1680, 0x1680},
                           {0x2000, 0x200A},
                           {0x2028, 0x2029},
                           {0x202F, 0x202F},
                           {0x205F, 0x205F},
                           {0x3000, 0x3000},
                           {0xFEFF, 0xFEFF}});
}
// `.`: anything but a line terminator.
std::vector<CodePointRange> dot_chars() {
  return complement_ranges(normalize_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
}

class PatternCompiler {
 public:
  explicit PatternCompiler(std::string_view pattern) : pattern_(pattern) {}

  Result<std::string> compile() {
    if (!utf8_is_valid(pattern_)) {
      return invalid_argument("pattern: not valid UTF-8");
    }
    bool anchored_start = false;
    if (!pattern_.empty() && pattern_[0] == '^') {
      anchored_start = true;
      ++pos_;
    }
    STATICLM_ASSIGN_OR_RETURN(std::string body, alternation(0));
    if (pos_ < pattern_.size()) {
      return invalid_argument("pattern: unbalanced ')' at offset ", pos_);
    }
    const std::string any = "(" + json_string_char(complement_ranges({})) + ")*";
    std::string out = anchored_start ? "" : any + " ";
    out += "(" + body + ")";
    if (!anchored_end_) {
      out += " " + any;
    }
    return out;
  }

 private:
  bool at_end() const { return pos_ >= pattern_.size(); }
  char peek() const { return at_end() ? '\0' : pattern_[pos_]; }

  Result<char32_t> next_char() {
    char32_t c = 0;
    const size_t length = utf8_decode_char(pattern_, pos_, c);
    pos_ += length == 0 ? 1 : length;
    return c;
  }

  Result<std::string> alternation(int depth) {
    if (depth > kMaxDepth) {
      return invalid_argument("pattern: groups nest deeper than ", kMaxDepth);
    }
    std::string out;
    while (true) {
      STATICLM_ASSIGN_OR_RETURN(std::string branch, sequence(depth));
      out += (out.empty() ? "" : " | ") + (branch.empty() ? std::string("\"\"") : branch);
      if (peek() != '|') {
        return out;
      }
      ++pos_;
    }
  }

  Result<std::string> sequence(int depth) {
    std::string out;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (depth != 0 || !at_end()) {
          return unimplemented("pattern: '$' is supported only at the end");
        }
        anchored_end_ = true;
        break;
      }
      if (peek() == '^') {
        return unimplemented("pattern: '^' is supported only at the start");
      }
      STATICLM_ASSIGN_OR_RETURN(std::string atom_text, atom(depth));
      STATICLM_ASSIGN_OR_RETURN(std::string quantified, quantifier(std::move(atom_text)));
      out += (out.empty() ? "" : " ") + quantified;
    }
    return out;
  }

  Result<uint32_t> count() {
    uint64_t value = 0;
    const size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > kMaxCount) {
        return unimplemented("pattern: a repetition count above ", kMaxCount);
      }
      ++pos_;
    }
    if (pos_ == start) {
      return invalid_argument("pattern: expected a number at offset ", pos_);
    }
    return static_cast<uint32_t>(value);
  }

  Result<std::string> quantifier(std::string atom_text) {
    std::string suffix;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      suffix = std::string(1, c);
    } else if (c == '{') {
      ++pos_;
      STATICLM_ASSIGN_OR_RETURN(const uint32_t low, count());
      suffix = "{" + std::to_string(low);
      if (peek() == ',') {
        ++pos_;
        suffix += ",";
        if (peek() != '}') {
          STATICLM_ASSIGN_OR_RETURN(const uint32_t high, count());
          if (high < low) {
            return invalid_argument("pattern: {", low, ",", high, "}: the maximum is below the minimum");
          }
          suffix += std::to_string(high);
        }
      }
      if (peek() != '}') {
        return invalid_argument("pattern: expected '}' at offset ", pos_);
      }
      ++pos_;
      suffix += "}";
    } else {
      return atom_text;
    }
    if (peek() == '?') {
      ++pos_;  // lazy: the same strings match
    }
    if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
      return invalid_argument("pattern: nothing to repeat at offset ", pos_);
    }
    return "(" + atom_text + ")" + suffix;
  }

  Result<std::string> atom(int depth) {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        ++pos_;
        if (peek() == ':') {
          ++pos_;
        } else if (peek() == '<' && pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] != '=' &&
                   pattern_[pos_ + 1] != '!') {
          while (!at_end() && peek() != '>') {
            ++pos_;
          }
          ++pos_;
        } else {
          return unimplemented("pattern: lookaround assertions ('(?=', '(?!', '(?<=', '(?<!') are not supported");
        }
      }
      STATICLM_ASSIGN_OR_RETURN(std::string inner, alternation(depth + 1));
      if (peek() != ')') {
        return invalid_argument("pattern: missing ')'");
      }
      ++pos_;
      return "(" + inner + ")";
    }
    if (c == '[') {
      ++pos_;
      return char_class();
    }
    if (c == '.') {
      ++pos_;
      return json_string_char(dot_chars());
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      return invalid_argument("pattern: nothing to repeat at offset ", pos_);
    }
    std::vector<CodePointRange> set;
    STATICLM_RETURN_IF_ERROR(single(set, /*in_class=*/false));
    return json_string_char(normalize_ranges(std::move(set)));
  }

  // One character or escape, its code points appended to `set`.
  Status single(std::vector<CodePointRange>& set, bool in_class) {
    if (peek() != '\\') {
      STATICLM_ASSIGN_OR_RETURN(const char32_t c, next_char());
      set.push_back({c, c});
      return ok_status();
    }
    ++pos_;
    if (at_end()) {
      return invalid_argument("pattern: ends with '\\'");
    }
    const char e = peek();
    ++pos_;
    auto add = [&](std::vector<CodePointRange> ranges) { set.insert(set.end(), ranges.begin(), ranges.end()); };
    switch (e) {
      case 'd': add(digits()); return ok_status();
      case 'D': add(complement_ranges(digits())); return ok_status();
      case 'w': add(word_chars()); return ok_status();
      case 'W': add(complement_ranges(word_chars())); return ok_status();
      case 's': add(space_chars()); return ok_status();
      case 'S': add(complement_ranges(space_chars())); return ok_status();
      case 'n': set.push_back({'\n', '\n'}); return ok_status();
      case 'r': set.push_back({'\r', '\r'}); return ok_status();
      case 't': set.push_back({'\t', '\t'}); return ok_status();
      case 'f': set.push_back({'\f', '\f'}); return ok_status();
      case 'v': set.push_back({'\v', '\v'}); return ok_status();
      case '0': set.push_back({0, 0}); return ok_status();
      case 'x':
      case 'u': {
        uint32_t value = 0;
        const bool braced = e == 'u' && peek() == '{';
        if (braced) {
          ++pos_;
        }
        const int digits_wanted = e == 'x' ? 2 : (braced ? 6 : 4);
        int read = 0;
        while (read < digits_wanted && !at_end() && std::isxdigit(static_cast<unsigned char>(peek()))) {
          const char h = peek();
          value = value * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
          ++pos_;
          ++read;
        }
        if (braced && peek() == '}') {
          ++pos_;
        } else if (braced || read != digits_wanted) {
          return invalid_argument("pattern: a malformed \\", std::string(1, e), " escape");
        }
        if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
          return unimplemented("pattern: \\", std::string(1, e), " escapes of surrogates are not supported");
        }
        set.push_back({value, value});
        return ok_status();
      }
      case 'b':
        if (in_class) {
          set.push_back({'\b', '\b'});
          return ok_status();
        }
        return unimplemented("pattern: word boundaries ('\\b') are not supported");
      case 'B': return unimplemented("pattern: word boundaries ('\\B') are not supported");
      default: break;
    }
    if (e >= '1' && e <= '9') {
      return unimplemented("pattern: backreferences ('\\", std::string(1, e), "') are not supported");
    }
    if (std::string_view("^$\\.*+?()[]{}|/-").find(e) != std::string_view::npos) {
      set.push_back({static_cast<char32_t>(e), static_cast<char32_t>(e)});
      return ok_status();
    }
    return unimplemented("pattern: the escape '\\", std::string(1, e), "' is not supported");
  }

  Result<std::string> char_class() {
    const bool negated = peek() == '^';
    if (negated) {
      ++pos_;
    }
    std::vector<CodePointRange> set;
    while (at_end() || peek() != ']') {
      if (at_end()) {
        return invalid_argument("pattern: missing ']'");
      }
      std::vector<CodePointRange> item;
      STATICLM_RETURN_IF_ERROR(single(item, /*in_class=*/true));
      if (peek() == '-' && pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] != ']' && item.size() == 1 &&
          item[0].first == item[0].last) {
        ++pos_;
        std::vector<CodePointRange> end;
        STATICLM_RETURN_IF_ERROR(single(end, /*in_class=*/true));
        if (end.size() != 1 || end[0].first != end[0].last || end[0].first < item[0].first) {
          return invalid_argument("pattern: a bad range in a character class");
        }
        item[0].last = end[0].first;
      }
      set.insert(set.end(), item.begin(), item.end());
    }
    ++pos_;
    std::vector<CodePointRange> ranges = normalize_ranges(std::move(set));
    if (negated) {
      ranges = complement_ranges(ranges);
    }
    const std::string out = json_string_char(ranges);
    if (out.empty()) {
      return unimplemented("pattern: a character class that matches nothing");
    }
    return out;
  }

  std::string_view pattern_;
  size_t pos_ = 0;
  bool anchored_end_ = false;
};

}  // namespace

Result<std::string> pattern_to_gbnf(std::string_view pattern) {
  PatternCompiler compiler(pattern);
  return compiler.compile();
}

}  // namespace staticlm::json_schema
