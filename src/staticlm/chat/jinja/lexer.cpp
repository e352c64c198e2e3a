// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/lexer.h"

#include <algorithm>
#include <array>

#include "staticlm/core/utf8.h"

namespace staticlm::jinja {
namespace {

// Longest first, so "//" wins over "/".
constexpr std::array<std::string_view, 26> kOperators = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "*",
                                                         "/",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                                         "<",  ">",  "=",  ".",  ":",  "|",  ",", ";"};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') {
        ++i;
      }
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') {  // Jinja's keep_trailing_newline=False
    out.pop_back();
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options) : source_(std::move(source)), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < source_.size(); ++i) {
      if (source_[i] == '\n') {
        line_starts_.push_back(i + 1);
      }
    }
  }

  Result<std::vector<Token>> run() {
    size_t pos = 0;
    bool strip_next_text = false;
    while (true) {
      const size_t tag = find_tag(pos);
      size_t text_begin = pos;
      const size_t text_end = tag == std::string::npos ? source_.size() : tag;
      if (strip_next_text) {
        while (text_begin < text_end && is_space(source_[text_begin])) {
          ++text_begin;
        }
      }
      std::string_view text(source_.data() + text_begin, text_end - text_begin);
      if (tag != std::string::npos) {
        text = adjust_text_before_tag(text, text_begin, tag);
      }
      if (!text.empty()) {
        push(TokenKind::kText, std::string(text), text_begin);
      }
      if (tag == std::string::npos) {
        break;
      }
      const char kind = source_[tag + 1];
      size_t after = 0;
      if (kind == '#') {
        STATICLM_ASSIGN_OR_RETURN(after, skip_comment(tag));
      } else {
        STATICLM_ASSIGN_OR_RETURN(after, lex_tag(tag));
      }
      strip_next_text = ends_with_strip_;
      pos = after;
    }
    push(TokenKind::kEnd, "", source_.size());
    return std::move(tokens_);
  }

 private:
  Status error_at(size_t offset, std::string_view message) const {
    const auto [line, column] = position(offset);
    return invalid_argument("line ", line, ", column ", column, ": ", message);
  }

  // Line and column (in characters) of a byte offset. Tokens come in order, so the column is
  // counted on from the previous token's when both are on one line: a long line costs linear
  // time, not quadratic.
  std::pair<int, int> position(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const auto line = static_cast<size_t>(it - line_starts_.begin());
    size_t from = line_starts_[line - 1];
    int column = 1;
    if (cached_line_ == line && cached_offset_ <= offset) {
      from = cached_offset_;
      column = cached_column_;
    }
    utf8_walk(std::string_view(source_).substr(from, offset - from), [&](char32_t, size_t, size_t) {
      ++column;
      return true;
    });
    cached_line_ = line;
    cached_offset_ = offset;
    cached_column_ = column;
    return {static_cast<int>(line), column};
  }

  void push(TokenKind kind, std::string text, size_t offset) {
    const auto [line, column] = position(offset);
    tokens_.push_back(Token{kind, std::move(text), line, column});
  }

  size_t find_tag(size_t from) const {
    for (size_t i = source_.find('{', from); i != std::string::npos; i = source_.find('{', i + 1)) {
      if (i + 1 < source_.size() && (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // `{%-` strips all whitespace before the tag; otherwise lstrip_blocks removes the spaces and
  // tabs that begin the tag's line, unless the tag is `{{` or says `+`.
  std::string_view adjust_text_before_tag(std::string_view text, size_t text_begin, size_t tag) const {
    const char marker = tag + 2 < source_.size() ? source_[tag + 2] : '\0';
    if (marker == '-') {
      while (!text.empty() && is_space(text.back())) {
        text.remove_suffix(1);
      }
      return text;
    }
    if (marker == '+' || !options_.lstrip_blocks || source_[tag + 1] == '{') {
      return text;
    }
    const size_t newline = text.rfind('\n');
    const size_t line_begin = newline == std::string_view::npos ? 0 : newline + 1;
    const bool line_starting = text_begin == 0 || source_[text_begin - 1] == '\n';
    if (newline == std::string_view::npos && !line_starting) {
      return text;
    }
    for (size_t i = line_begin; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') {
        return text;
      }
    }
    return text.substr(0, line_begin);
  }

  // After `%}` or `#}`: trim_blocks drops one newline unless the tag ended with `+` or `-`.
  size_t after_block_end(size_t end, char modifier) {
    ends_with_strip_ = modifier == '-';
    if (modifier == '\0' && options_.trim_blocks && end < source_.size() && source_[end] == '\n') {
      return end + 1;
    }
    return end;
  }

  Result<size_t> skip_comment(size_t tag) {
    const size_t close = source_.find("#}", tag + 2);
    if (close == std::string::npos) {
      return error_at(tag, "the comment opened here is never closed with '#}'");
    }
    const char before = source_[close - 1];
    const char modifier = close > tag + 2 && (before == '-' || before == '+') ? before : '\0';
    return after_block_end(close + 2, modifier);
  }

  Result<size_t> lex_tag(size_t tag) {
    const bool variable = source_[tag + 1] == '{';
    push(variable ? TokenKind::kVariableBegin : TokenKind::kBlockBegin, "", tag);
    const size_t first_token = tokens_.size();
    size_t pos = tag + 2;
    if (pos < source_.size() && (source_[pos] == '-' || source_[pos] == '+')) {
      ++pos;
    }
    int depth = 0;  // open brackets: a '}' inside a dict literal does not end the tag
    while (true) {
      while (pos < source_.size() && is_space(source_[pos])) {
        ++pos;
      }
      if (pos >= source_.size()) {
        return error_at(tag, variable ? "the '{{' opened here is never closed with '}}'"
                                      : "the '{%' opened here is never closed with '%}'");
      }
      if (depth == 0) {
        const std::string_view close = variable ? "}}" : "%}";
        const std::string_view rest(source_.data() + pos, source_.size() - pos);
        char modifier = '\0';
        size_t close_at = std::string::npos;
        if (rest.substr(0, 2) == close) {
          close_at = pos;
        } else if ((rest[0] == '-' || (rest[0] == '+' && !variable)) && rest.substr(1, 2) == close) {
          modifier = rest[0];
          close_at = pos + 1;
        }
        if (close_at != std::string::npos) {
          push(variable ? TokenKind::kVariableEnd : TokenKind::kBlockEnd, "", close_at);
          if (variable) {
            ends_with_strip_ = modifier == '-';
            return close_at + 2;
          }
          const size_t end = after_block_end(close_at + 2, modifier);
          if (tokens_.size() == first_token + 2 && tokens_[first_token].kind == TokenKind::kName &&
              tokens_[first_token].text == "raw") {
            return lex_raw(tag, end);
          }
          return end;
        }
      }
      STATICLM_ASSIGN_OR_RETURN(pos, lex_token(pos, depth));
    }
  }

  // `{% raw %}` ... `{% endraw %}`: the text between is output as it is.
  Result<size_t> lex_raw(size_t tag, size_t body_begin) {
    tokens_.resize(tokens_.size() - 3);  // the raw tag itself
    for (size_t open = source_.find("{%", body_begin); open != std::string::npos; open = source_.find("{%", open + 2)) {
      size_t pos = open + 2;
      const char marker = pos < source_.size() ? source_[pos] : '\0';
      if (marker == '-' || marker == '+') {
        ++pos;
      }
      while (pos < source_.size() && is_space(source_[pos])) {
        ++pos;
      }
      if (source_.compare(pos, 6, "endraw") != 0) {
        continue;
      }
      pos += 6;
      while (pos < source_.size() && is_space(source_[pos])) {
        ++pos;
      }
      char modifier = '\0';
      if (pos < source_.size() && (source_[pos] == '-' || source_[pos] == '+')) {
        modifier = source_[pos++];
      }
      if (source_.compare(pos, 2, "%}") != 0) {
        continue;
      }
      size_t body_begin_stripped = body_begin;
      if (ends_with_strip_) {
        while (body_begin_stripped < open && is_space(source_[body_begin_stripped])) {
          ++body_begin_stripped;
        }
      }
      std::string_view body(source_.data() + body_begin_stripped, open - body_begin_stripped);
      if (marker == '-') {
        while (!body.empty() && is_space(body.back())) {
          body.remove_suffix(1);
        }
      }
      if (!body.empty()) {
        push(TokenKind::kText, std::string(body), body_begin_stripped);
      }
      return after_block_end(pos + 2, modifier);
    }
    return error_at(tag, "the '{% raw %}' opened here has no '{% endraw %}'");
  }

  Result<size_t> lex_token(size_t pos, int& depth) {
    const char c = source_[pos];
    if (is_name_start(c)) {
      size_t end = pos + 1;
      while (end < source_.size() && (is_name_start(source_[end]) || is_digit(source_[end]))) {
        ++end;
      }
      push(TokenKind::kName, source_.substr(pos, end - pos), pos);
      return end;
    }
    if (is_digit(c)) {
      return lex_number(pos);
    }
    if (c == '\'' || c == '"') {
      return lex_string(pos);
    }
    for (std::string_view op : kOperators) {
      if (source_.compare(pos, op.size(), op) == 0) {
        if (op == "(" || op == "[" || op == "{") {
          ++depth;
        } else if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) {
            return error_at(pos, str_cat("unexpected '", op, "'"));
          }
          --depth;
        }
        push(TokenKind::kOperator, std::string(op), pos);
        return pos + op.size();
      }
    }
    char32_t code_point = 0;
    const size_t length = utf8_decode_char(source_, pos, code_point);
    return error_at(
        pos, str_cat("unexpected character '", source_.substr(pos, std::max<size_t>(length, 1)), "' inside a tag"));
  }

  Result<size_t> lex_number(size_t pos) {
    size_t end = pos;
    auto digits = [&] {
      while (end < source_.size() && (is_digit(source_[end]) || source_[end] == '_')) {
        ++end;
      }
    };
    digits();
    bool is_float = false;
    if (end + 1 < source_.size() && source_[end] == '.' && is_digit(source_[end + 1])) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-')) {
        ++exponent;
      }
      if (exponent < source_.size() && is_digit(source_[exponent])) {
        is_float = true;
        end = exponent;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos; i < end; ++i) {
      if (source_[i] != '_') {
        text.push_back(source_[i]);
      }
    }
    push(is_float ? TokenKind::kFloat : TokenKind::kInteger, std::move(text), pos);
    return end;
  }

  // Python's string escapes (what Jinja's unicode-escape decoding accepts); an unknown escape
  // keeps its backslash, as Python does.
  Result<size_t> lex_string(size_t pos) {
    const char quote = source_[pos];
    std::string value;
    size_t i = pos + 1;
    while (i < source_.size() && source_[i] != quote) {
      if (source_[i] != '\\' || i + 1 >= source_.size()) {
        value.push_back(source_[i++]);
        continue;
      }
      const char e = source_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value.push_back('\n'); break;
        case 't': value.push_back('\t'); break;
        case 'r': value.push_back('\r'); break;
        case 'a': value.push_back('\a'); break;
        case 'b': value.push_back('\b'); break;
        case 'f': value.push_back('\f'); break;
        case 'v': value.push_back('\v'); break;
        case '0': value.push_back('\0'); break;
        case '\\': value.push_back('\\'); break;
        case '\'': value.push_back('\''); break;
        case '"': value.push_back('"'); break;
        case '\n': break;  // a backslash-newline continues the line
        case 'x':
        case 'u':
        case 'U': {
          const size_t count = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          char32_t code_point = 0;
          for (size_t k = 0; k < count; ++k) {
            const int h = i + k < source_.size() ? hex_value(source_[i + k]) : -1;
            if (h < 0) {
              return error_at(i - 2, str_cat("truncated \\", std::string(1, e), " escape in a string"));
            }
            code_point = code_point * 16 + static_cast<char32_t>(h);
          }
          if (code_point > 0x10FFFF) {
            return error_at(i - 2, "a \\U escape beyond U+10FFFF in a string");
          }
          utf8_append(value, code_point);
          i += count;
          break;
        }
        default: value.push_back('\\'); value.push_back(e);
      }
    }
    if (i >= source_.size()) {
      return error_at(pos, "the string opened here is never closed");
    }
    push(TokenKind::kString, std::move(value), pos);
    return i + 1;
  }

  std::string source_;
  LexerOptions options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  bool ends_with_strip_ = false;
  mutable size_t cached_line_ = 0;
  mutable size_t cached_offset_ = 0;
  mutable int cached_column_ = 1;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace staticlm::jinja
