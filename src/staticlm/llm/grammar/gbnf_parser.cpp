// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/gbnf_parser.h"

#include <map>
#include <optional>
#include <string>

#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  Result<GrammarAst> parse(std::string_view root_rule) {
    skip_blank(/*newlines=*/true);
    while (!at_end()) {
      STATICLM_RETURN_IF_ERROR(parse_rule());
      skip_blank(/*newlines=*/true);
    }
    for (size_t i = 0; i < ast_.rules.size(); ++i) {
      if (!defined_[i]) {
        return invalid_argument("GBNF line ", first_use_line_[i], ": rule '", ast_.rules[i].name, "' is not defined");
      }
    }
    auto root = ids_.find(std::string(root_rule));
    if (root == ids_.end()) {
      return invalid_argument("GBNF: the grammar has no rule '", root_rule, "' to start from");
    }
    ast_.root = root->second;
    return std::move(ast_);
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  Status error(std::string_view message) const {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return invalid_argument("GBNF line ", line, ", column ", column, ": ", message);
  }

  // The line of pos_, counted on from the last call (positions mostly move forward).
  size_t line() {
    if (pos_ < counted_pos_) {
      counted_pos_ = 0;
      counted_lines_ = 1;
    }
    for (; counted_pos_ < pos_ && counted_pos_ < text_.size(); ++counted_pos_) {
      counted_lines_ += text_[counted_pos_] == '\n' ? 1 : 0;
    }
    return counted_lines_;
  }

  // Skips spaces, tabs, comments and (with `newlines`) line breaks.
  void skip_blank(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') {
          ++pos_;
        }
      } else {
        return;
      }
    }
  }

  // At a line break outside parentheses: true (and skips to it) when the next non-blank line
  // starts with '|', continuing the rule.
  bool continues_on_next_line() {
    const size_t saved = pos_;
    skip_blank(/*newlines=*/true);
    if (peek() == '|') {
      return true;
    }
    pos_ = saved;
    return false;
  }

  uint32_t rule_id(const std::string& name) {
    auto [it, inserted] = ids_.emplace(name, static_cast<uint32_t>(ast_.rules.size()));
    if (inserted) {
      ast_.rules.push_back(GrammarRule{name, GrammarExpr{}});
      defined_.push_back(false);
      first_use_line_.push_back(line());
    }
    return it->second;
  }

  Result<std::string> parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) {
      ++pos_;
    }
    if (pos_ == start) {
      return error("expected a rule name");
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  Status parse_rule() {
    const size_t rule_line = line();
    STATICLM_ASSIGN_OR_RETURN(std::string name, parse_name());
    skip_blank(/*newlines=*/false);
    if (text_.substr(pos_, 3) != "::=") {
      return error(str_cat("expected '::=' after the rule name '", name, "'"));
    }
    pos_ += 3;
    if (ids_.count(name) == 0 && ast_.rules.size() >= limits_.max_rules) {
      return error(str_cat("more than ", limits_.max_rules, " rules"));
    }
    const uint32_t id = rule_id(name);
    if (defined_[id]) {
      return error(str_cat("rule '", name, "' is defined twice (first on line ", defined_line_[id], ")"));
    }
    defined_[id] = true;
    defined_line_[id] = rule_line;
    skip_blank(/*newlines=*/true);
    STATICLM_ASSIGN_OR_RETURN(GrammarExpr body, parse_alternates(/*depth=*/0));
    if (!at_end() && peek() != '\n' && peek() != '\r') {
      return error(str_cat("unexpected '", std::string(1, peek()), "' in rule '", name, "'"));
    }
    ast_.rules[id].body = std::move(body);
    return ok_status();
  }

  Result<GrammarExpr> parse_alternates(uint32_t depth) {
    GrammarExpr alternation;
    alternation.kind = GrammarExpr::Kind::kAlternation;
    while (true) {
      STATICLM_ASSIGN_OR_RETURN(GrammarExpr sequence, parse_sequence(depth));
      alternation.children.push_back(std::move(sequence));
      skip_blank(/*newlines=*/depth > 0);
      if (depth == 0 && (peek() == '\n' || peek() == '\r') && !continues_on_next_line()) {
        break;
      }
      if (peek() != '|') {
        break;
      }
      ++pos_;
      skip_blank(/*newlines=*/true);
    }
    if (alternation.children.size() == 1) {
      return std::move(alternation.children[0]);
    }
    return alternation;
  }

  Result<GrammarExpr> parse_sequence(uint32_t depth) {
    GrammarExpr sequence;
    sequence.kind = GrammarExpr::Kind::kSequence;
    while (true) {
      skip_blank(/*newlines=*/depth > 0);
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n' || c == '\r') {
        break;
      }
      STATICLM_ASSIGN_OR_RETURN(GrammarExpr item, parse_item(depth));
      sequence.children.push_back(std::move(item));
    }
    if (sequence.children.size() == 1) {
      return std::move(sequence.children[0]);
    }
    return sequence;
  }

  Result<GrammarExpr> parse_item(uint32_t depth) {
    STATICLM_ASSIGN_OR_RETURN(GrammarExpr item, parse_primary(depth));
    int postfixes = 0;
    while (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
      if (++postfixes > 4) {
        return error("more than 4 repetition operators in a row");
      }
      GrammarExpr repeat;
      repeat.kind = GrammarExpr::Kind::kRepeat;
      const char op = peek();
      ++pos_;
      if (op == '*') {
        repeat.min_repeat = 0;
        repeat.max_repeat = kUnboundedRepeat;
      } else if (op == '+') {
        repeat.min_repeat = 1;
        repeat.max_repeat = kUnboundedRepeat;
      } else if (op == '?') {
        repeat.min_repeat = 0;
        repeat.max_repeat = 1;
      } else {
        STATICLM_RETURN_IF_ERROR(parse_bounds(repeat));
      }
      repeat.children.push_back(std::move(item));
      item = std::move(repeat);
    }
    return item;
  }

  Result<std::optional<uint32_t>> parse_count() {
    skip_blank(/*newlines=*/false);
    if (peek() < '0' || peek() > '9') {
      return std::optional<uint32_t>();
    }
    uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > limits_.max_repeat) {
        return error(str_cat("a repetition count above ", limits_.max_repeat));
      }
      ++pos_;
    }
    skip_blank(/*newlines=*/false);
    return std::optional<uint32_t>(static_cast<uint32_t>(value));
  }

  Status parse_bounds(GrammarExpr& repeat) {
    STATICLM_ASSIGN_OR_RETURN(std::optional<uint32_t> low, parse_count());
    std::optional<uint32_t> high = low;
    bool unbounded = false;
    if (peek() == ',') {
      ++pos_;
      STATICLM_ASSIGN_OR_RETURN(high, parse_count());
      unbounded = !high;
      if (!low && !high) {
        return error("'{,}' needs a bound");
      }
    } else if (!low) {
      return error("expected a count in '{m}', '{m,}' or '{m,n}'");
    }
    if (peek() != '}') {
      return error("expected '}' closing a repetition");
    }
    ++pos_;
    repeat.min_repeat = low.value_or(0);
    repeat.max_repeat = unbounded ? kUnboundedRepeat : *high;
    if (repeat.max_repeat < repeat.min_repeat) {
      return error(
          str_cat("repetition {", repeat.min_repeat, ",", repeat.max_repeat, "}: the maximum is below the minimum"));
    }
    return ok_status();
  }

  Result<GrammarExpr> parse_primary(uint32_t depth) {
    const char c = peek();
    if (c == '"') {
      return parse_literal();
    }
    if (c == '[') {
      return parse_class();
    }
    if (c == '.') {
      ++pos_;
      GrammarExpr any;
      any.kind = GrammarExpr::Kind::kCharClass;
      any.ranges = normalize_ranges({{0, kMaxCodePoint}});
      return any;
    }
    if (c == '(') {
      if (depth + 1 > limits_.max_nesting) {
        return error(str_cat("parentheses nest deeper than ", limits_.max_nesting));
      }
      ++pos_;
      skip_blank(/*newlines=*/true);
      STATICLM_ASSIGN_OR_RETURN(GrammarExpr inner, parse_alternates(depth + 1));
      skip_blank(/*newlines=*/true);
      if (peek() != ')') {
        return error("expected ')'");
      }
      ++pos_;
      return inner;
    }
    if (c == '<' || (c == '!' && peek(1) == '<')) {
      return unimplemented("GBNF line ", line(), ": token references ('<...>') are not supported");
    }
    if (is_name_char(c)) {
      STATICLM_ASSIGN_OR_RETURN(std::string name, parse_name());
      const size_t after = pos_;
      skip_blank(/*newlines=*/false);
      if (text_.substr(pos_, 3) == "::=") {
        return error(str_cat("a new rule '", name, "' starts before the previous one ended (a missing newline?)"));
      }
      pos_ = after;
      GrammarExpr ref;
      ref.kind = GrammarExpr::Kind::kRuleRef;
      ref.rule = rule_id(name);
      return ref;
    }
    return error(str_cat("unexpected '", std::string(1, c), "'"));
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  Result<char32_t> parse_char() {
    if (at_end()) {
      return error("unexpected end of the grammar");
    }
    if (peek() != '\\') {
      char32_t code_point = 0;
      const size_t length = utf8_decode_char(text_, pos_, code_point);
      if (length == 0) {
        return error("the grammar is not valid UTF-8 here");
      }
      pos_ += length;
      return code_point;
    }
    ++pos_;
    const char escape = peek();
    ++pos_;
    switch (escape) {
      case 'n': return U'\n';
      case 'r': return U'\r';
      case 't': return U'\t';
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/': return static_cast<char32_t>(escape);
      case 'x': return parse_hex(2);
      case 'u': return parse_hex(4);
      case 'U': return parse_hex(8);
      default: break;
    }
    --pos_;
    return error(str_cat("unknown escape '\\", std::string(1, escape), "'"));
  }

  Result<char32_t> parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int digit = hex_value(peek());
      if (digit < 0) {
        return error(str_cat("expected ", digits, " hexadecimal digits"));
      }
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      return error(str_cat("U+", std::hex, value, " is not a Unicode character"));
    }
    return static_cast<char32_t>(value);
  }

  Result<GrammarExpr> parse_literal() {
    ++pos_;
    GrammarExpr literal;
    literal.kind = GrammarExpr::Kind::kLiteral;
    while (peek() != '"') {
      if (at_end() || peek() == '\n') {
        return error("unterminated string literal");
      }
      STATICLM_ASSIGN_OR_RETURN(char32_t c, parse_char());
      literal.text.push_back(c);
    }
    ++pos_;
    return literal;
  }

  Result<GrammarExpr> parse_class() {
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) {
      ++pos_;
    }
    std::vector<CodePointRange> ranges;
    while (peek() != ']') {
      if (at_end() || peek() == '\n') {
        return error("unterminated character class");
      }
      STATICLM_ASSIGN_OR_RETURN(char32_t first, parse_char());
      char32_t last = first;
      if (peek() == '-' && peek(1) != ']') {
        ++pos_;
        STATICLM_ASSIGN_OR_RETURN(last, parse_char());
        if (last < first) {
          return error("a character range ends before it starts");
        }
      }
      ranges.push_back({first, last});
    }
    ++pos_;
    GrammarExpr expr;
    expr.kind = GrammarExpr::Kind::kCharClass;
    expr.ranges = normalize_ranges(std::move(ranges));
    if (negated) {
      expr.ranges = complement_ranges(expr.ranges);
    }
    if (expr.ranges.empty()) {
      return error("the character class matches no character");
    }
    return expr;
  }

  std::string_view text_;
  const GbnfLimits& limits_;
  size_t pos_ = 0;
  size_t counted_pos_ = 0;
  size_t counted_lines_ = 1;
  GrammarAst ast_;
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_line_;
  std::map<uint32_t, size_t> defined_line_;
};

}  // namespace

Result<GrammarAst> parse_gbnf(std::string_view text, std::string_view root_rule, const GbnfLimits& limits) {
  if (text.size() > limits.max_text_bytes) {
    return invalid_argument("GBNF: the grammar is ", text.size(), " bytes, more than the limit of ",
                            limits.max_text_bytes);
  }
  GbnfParser parser(text, limits);
  return parser.parse(root_rule);
}

}  // namespace staticlm
