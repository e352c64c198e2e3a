// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/parser.h"

#include <charconv>
#include <initializer_list>

#include "staticlm/chat/jinja/builtins.h"

namespace staticlm::jinja {
namespace {

// Deep enough for any real template, shallow enough that hostile nesting cannot exhaust the
// stack of the recursive-descent parser or of evaluation.
constexpr int kMaxNesting = 128;

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kText: return "template text";
    case TokenKind::kVariableBegin: return "'{{'";
    case TokenKind::kVariableEnd: return "'}}'";
    case TokenKind::kBlockBegin: return "'{%'";
    case TokenKind::kBlockEnd: return "'%}'";
    case TokenKind::kString: return "a string";
    case TokenKind::kInteger:
    case TokenKind::kFloat: return "the number " + token.text;
    case TokenKind::kEnd: return "the end of the template";
    case TokenKind::kName:
    case TokenKind::kOperator: return "'" + token.text + "'";
  }
  return "a token";
}

class Parser {
 public:
  explicit Parser(std::span<const Token> tokens) : tokens_(tokens) {}

  Result<Body> parse_template() {
    Body body;
    STATICLM_ASSIGN_OR_RETURN(std::string end_tag, parse_body(body, {}, Location{}, ""));
    (void)end_tag;
    return body;
  }

 private:
  // Counts recursion; fails when nesting passes kMaxNesting.
  class Nesting {
   public:
    explicit Nesting(Parser& parser) : parser_(parser) { ++parser_.depth_; }
    ~Nesting() { --parser_.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    Status check() const {
      if (parser_.depth_ > kMaxNesting) {
        return parser_.here().error(str_cat("the template nests deeper than ", kMaxNesting, " levels"));
      }
      return ok_status();
    }

   private:
    Parser& parser_;
  };

  const Token& peek(size_t ahead = 0) const {
    const size_t index = std::min(position_ + ahead, tokens_.size() - 1);
    return tokens_[index];
  }
  const Token& next() {
    const Token& token = peek();
    if (position_ + 1 < tokens_.size()) {
      ++position_;
    }
    return token;
  }
  Location here() const { return Location{peek().line, peek().column}; }
  bool at_operator(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOperator && peek(ahead).text == op;
  }
  bool at_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  Status unexpected(std::string_view expected) const {
    return here().error(str_cat("expected ", expected, ", found ", describe(peek())));
  }
  Status expect_operator(std::string_view op) {
    if (!at_operator(op)) {
      return unexpected(str_cat("'", op, "'"));
    }
    next();
    return ok_status();
  }
  Status expect_name(std::string_view name) {
    if (!at_name(name)) {
      return unexpected(str_cat("'", name, "'"));
    }
    next();
    return ok_status();
  }
  Status expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd) {
      return unexpected("'%}'");
    }
    next();
    return ok_status();
  }
  Result<std::string> expect_identifier() {
    if (peek().kind != TokenKind::kName) {
      return unexpected("a name");
    }
    return next().text;
  }

  // Parses statements into `body` until a `{% tag %}` with a name in `end_tags`, consuming
  // `{%` and that name; returns it ("" at the end of the template when end_tags is empty).
  Result<std::string> parse_body(Body& body, std::initializer_list<std::string_view> end_tags, Location opened,
                                 std::string_view opened_tag) {
    Nesting nesting(*this);
    STATICLM_RETURN_IF_ERROR(nesting.check());
    while (true) {
      const Token& token = peek();
      const Location at = here();
      switch (token.kind) {
        case TokenKind::kText: body.push_back(std::make_unique<TextStmt>(at, next().text)); break;
        case TokenKind::kVariableBegin: {
          next();
          STATICLM_ASSIGN_OR_RETURN(ExprPtr expression, parse_tuple(true));
          if (peek().kind != TokenKind::kVariableEnd) {
            return unexpected("'}}'");
          }
          next();
          body.push_back(std::make_unique<OutputStmt>(at, std::move(expression)));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = peek(1);
          if (name.kind != TokenKind::kName) {
            next();
            return unexpected("a tag name");
          }
          for (std::string_view end : end_tags) {
            if (name.text == end) {
              next();
              next();
              return name.text;
            }
          }
          next();
          STATICLM_ASSIGN_OR_RETURN(StmtPtr statement, parse_statement(end_tags));
          body.push_back(std::move(statement));
          break;
        }
        case TokenKind::kEnd:
          if (end_tags.size() == 0) {
            return std::string();
          }
          return opened.error(
              str_cat("'{% ", opened_tag, " %}' is never closed (expected '{% ", *std::prev(end_tags.end()), " %}')"));
        default: return unexpected("template text or a tag");
      }
    }
  }

  Result<StmtPtr> parse_statement(std::initializer_list<std::string_view> open_end_tags) {
    const Location at = here();
    const std::string tag = next().text;
    if (tag == "if") {
      return parse_if(at);
    }
    if (tag == "for") {
      return parse_for(at);
    }
    if (tag == "set") {
      return parse_set(at);
    }
    if (tag == "macro") {
      return parse_macro(at);
    }
    if (tag == "filter") {
      return parse_filter_block(at);
    }
    if (tag == "generation") {
      auto statement = std::make_unique<GenerationStmt>(at);
      STATICLM_RETURN_IF_ERROR(expect_block_end());
      STATICLM_ASSIGN_OR_RETURN(std::string end, parse_body(statement->body, {"endgeneration"}, at, tag));
      (void)end;
      STATICLM_RETURN_IF_ERROR(expect_block_end());
      return StmtPtr(std::move(statement));
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) {
        return at.error(str_cat("'{% ", tag, " %}' outside a for loop"));
      }
      STATICLM_RETURN_IF_ERROR(expect_block_end());
      return StmtPtr(std::make_unique<LoopControlStmt>(at, tag == "break" ? Flow::kBreak : Flow::kContinue));
    }
    for (std::string_view unsupported :
         {"include", "import", "from", "extends", "block", "call", "with", "do", "autoescape", "trans"}) {
      if (tag == unsupported) {
        return at.error(str_cat("'{% ", tag, " %}' is not supported in chat templates"));
      }
    }
    if (tag.rfind("end", 0) == 0 || tag == "else" || tag == "elif") {
      std::string expected = "no closing tag here";
      if (open_end_tags.size() != 0) {
        expected = str_cat("'", *std::prev(open_end_tags.end()), "'");
      }
      return at.error(str_cat("unexpected '", tag, "' (expected ", expected, ")"));
    }
    return at.error(str_cat("unknown tag '", tag, "'"));
  }

  Result<StmtPtr> parse_if(Location at) {
    auto statement = std::make_unique<IfStmt>(at);
    STATICLM_ASSIGN_OR_RETURN(ExprPtr condition, parse_tuple(false));
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    while (true) {
      Body body;
      STATICLM_ASSIGN_OR_RETURN(std::string end, parse_body(body, {"elif", "else", "endif"}, at, "if"));
      statement->branches.emplace_back(std::move(condition), std::move(body));
      if (end == "elif") {
        STATICLM_ASSIGN_OR_RETURN(condition, parse_tuple(false));
        STATICLM_RETURN_IF_ERROR(expect_block_end());
        continue;
      }
      STATICLM_RETURN_IF_ERROR(expect_block_end());
      if (end == "else") {
        STATICLM_ASSIGN_OR_RETURN(std::string endif, parse_body(statement->else_body, {"endif"}, at, "if"));
        (void)endif;
        STATICLM_RETURN_IF_ERROR(expect_block_end());
      }
      return StmtPtr(std::move(statement));
    }
  }

  Result<AssignTarget> parse_assign_target(bool allow_namespace) {
    AssignTarget target;
    if (allow_namespace && peek().kind == TokenKind::kName && at_operator(".", 1) && peek(2).kind == TokenKind::kName) {
      target.namespace_name = next().text;
      next();
      target.names.push_back(next().text);
      return target;
    }
    const bool parenthesized = at_operator("(");
    if (parenthesized) {
      next();
    }
    while (true) {
      STATICLM_ASSIGN_OR_RETURN(std::string name, expect_identifier());
      target.names.push_back(std::move(name));
      if (!at_operator(",")) {
        break;
      }
      next();
      target.unpack = true;
      if (peek().kind != TokenKind::kName) {
        break;
      }
    }
    if (parenthesized) {
      STATICLM_RETURN_IF_ERROR(expect_operator(")"));
      target.unpack = true;
    }
    return target;
  }

  Result<StmtPtr> parse_for(Location at) {
    auto statement = std::make_unique<ForStmt>(at);
    STATICLM_ASSIGN_OR_RETURN(statement->target, parse_assign_target(false));
    STATICLM_RETURN_IF_ERROR(expect_name("in"));
    STATICLM_ASSIGN_OR_RETURN(statement->iterable, parse_tuple(false));
    if (at_name("if")) {
      next();
      STATICLM_ASSIGN_OR_RETURN(statement->filter, parse_expression(true));
    }
    if (at_name("recursive")) {
      return here().error("recursive for loops are not supported in chat templates");
    }
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    ++loop_depth_;
    auto end = parse_body(statement->body, {"else", "endfor"}, at, "for");
    --loop_depth_;
    if (!end.ok()) {
      return std::move(end).status();
    }
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    if (*end == "else") {
      STATICLM_ASSIGN_OR_RETURN(std::string endfor, parse_body(statement->else_body, {"endfor"}, at, "for"));
      (void)endfor;
      STATICLM_RETURN_IF_ERROR(expect_block_end());
    }
    return StmtPtr(std::move(statement));
  }

  Result<StmtPtr> parse_set(Location at) {
    STATICLM_ASSIGN_OR_RETURN(AssignTarget target, parse_assign_target(true));
    if (at_operator("=")) {
      next();
      auto statement = std::make_unique<SetStmt>(at);
      statement->target = std::move(target);
      STATICLM_ASSIGN_OR_RETURN(statement->value, parse_tuple(true));
      STATICLM_RETURN_IF_ERROR(expect_block_end());
      return StmtPtr(std::move(statement));
    }
    if (target.unpack) {
      return here().error("a '{% set %}' block assigns one name");
    }
    auto statement = std::make_unique<SetBlockStmt>(at);
    statement->target = std::move(target);
    if (at_operator("|")) {
      STATICLM_ASSIGN_OR_RETURN(statement->filter, parse_filter_chain());
    }
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    STATICLM_ASSIGN_OR_RETURN(std::string end, parse_body(statement->body, {"endset"}, at, "set"));
    (void)end;
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    return StmtPtr(std::move(statement));
  }

  Result<StmtPtr> parse_macro(Location at) {
    auto statement = std::make_unique<MacroStmt>(at);
    STATICLM_ASSIGN_OR_RETURN(statement->name, expect_identifier());
    STATICLM_RETURN_IF_ERROR(expect_operator("("));
    while (!at_operator(")")) {
      if (!statement->parameters.empty()) {
        STATICLM_RETURN_IF_ERROR(expect_operator(","));
        if (at_operator(")")) {
          break;
        }
      }
      MacroParameter parameter;
      STATICLM_ASSIGN_OR_RETURN(parameter.name, expect_identifier());
      if (at_operator("=")) {
        next();
        STATICLM_ASSIGN_OR_RETURN(parameter.default_value, parse_expression(true));
      } else if (!statement->parameters.empty() && statement->parameters.back().default_value) {
        return here().error(str_cat("macro '", statement->name, "': parameter '", parameter.name,
                                    "' without a default follows one with a default"));
      }
      statement->parameters.push_back(std::move(parameter));
    }
    next();
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;  // a loop around the definition is not a loop around the body
    auto end = parse_body(statement->body, {"endmacro"}, at, "macro");
    loop_depth_ = saved_loop_depth;
    if (!end.ok()) {
      return std::move(end).status();
    }
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    return StmtPtr(std::move(statement));
  }

  Result<StmtPtr> parse_filter_block(Location at) {
    auto statement = std::make_unique<FilterBlockStmt>(at);
    STATICLM_ASSIGN_OR_RETURN(statement->filter, parse_filter_chain(/*leading_pipe=*/false));
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    STATICLM_ASSIGN_OR_RETURN(std::string end, parse_body(statement->body, {"endfilter"}, at, "filter"));
    (void)end;
    STATICLM_RETURN_IF_ERROR(expect_block_end());
    return StmtPtr(std::move(statement));
  }

  // `| f(a) | g` (or `f(a) | g` after `{% filter`) with no input: Interpreter::filter_input
  // supplies it.
  Result<ExprPtr> parse_filter_chain(bool leading_pipe = true) {
    ExprPtr chain;
    if (!leading_pipe) {
      STATICLM_ASSIGN_OR_RETURN(chain, parse_filter(nullptr));
    }
    while (at_operator("|")) {
      next();
      STATICLM_ASSIGN_OR_RETURN(chain, parse_filter(std::move(chain)));
    }
    return chain;
  }

  // ---- Expressions, in Jinja's precedence order ----

  Result<ExprPtr> parse_tuple(bool with_condexpr) {
    const Location at = here();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        STATICLM_RETURN_IF_ERROR(expect_operator(","));
      }
      const TokenKind kind = peek().kind;
      if (!items.empty() && (kind == TokenKind::kVariableEnd || kind == TokenKind::kBlockEnd || at_operator(")"))) {
        break;
      }
      STATICLM_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
      items.push_back(std::move(item));
      if (!at_operator(",")) {
        break;
      }
      is_tuple = true;
    }
    if (!is_tuple) {
      return std::move(items.front());
    }
    auto tuple = std::make_unique<ListExpr>(at, true);
    tuple->items = std::move(items);
    return ExprPtr(std::move(tuple));
  }

  Result<ExprPtr> parse_expression(bool with_condexpr) {
    Nesting nesting(*this);
    STATICLM_RETURN_IF_ERROR(nesting.check());
    STATICLM_ASSIGN_OR_RETURN(ExprPtr value, parse_or());
    while (with_condexpr && at_name("if")) {
      auto conditional = std::make_unique<ConditionalExpr>(here());
      next();
      STATICLM_ASSIGN_OR_RETURN(conditional->condition, parse_or());
      if (at_name("else")) {
        next();
        STATICLM_ASSIGN_OR_RETURN(conditional->else_value, parse_expression(true));
      }
      conditional->then_value = std::move(value);
      value = std::move(conditional);
    }
    return value;
  }

  Result<ExprPtr> parse_or() {
    STATICLM_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (at_name("or")) {
      const Location at = here();
      next();
      STATICLM_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
      left = std::make_unique<BinaryExpr>(at, "or", std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    STATICLM_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (at_name("and")) {
      const Location at = here();
      next();
      STATICLM_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
      left = std::make_unique<BinaryExpr>(at, "and", std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (at_name("not")) {
      const Location at = here();
      next();
      Nesting nesting(*this);
      STATICLM_RETURN_IF_ERROR(nesting.check());
      STATICLM_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
      return ExprPtr(std::make_unique<UnaryExpr>(at, "not", std::move(operand)));
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    const Location at = here();
    STATICLM_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    std::vector<std::pair<std::string, ExprPtr>> rest;
    while (true) {
      std::string op;
      if (peek().kind == TokenKind::kOperator && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                                  peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (at_name("in")) {
        next();
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      STATICLM_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
      rest.emplace_back(std::move(op), std::move(operand));
    }
    if (rest.empty()) {
      return first;
    }
    auto compare = std::make_unique<CompareExpr>(at, std::move(first));
    compare->rest = std::move(rest);
    return ExprPtr(std::move(compare));
  }

  // One level of left-associative binary operators over `operand`.
  template <typename Operand>
  Result<ExprPtr> parse_binary(std::initializer_list<std::string_view> ops, Operand operand) {
    STATICLM_ASSIGN_OR_RETURN(ExprPtr left, operand());
    while (true) {
      std::string op;
      for (std::string_view candidate : ops) {
        if (at_operator(candidate)) {
          op = std::string(candidate);
        }
      }
      if (op.empty()) {
        return left;
      }
      const Location at = here();
      next();
      STATICLM_ASSIGN_OR_RETURN(ExprPtr right, operand());
      left = std::make_unique<BinaryExpr>(at, op, std::move(left), std::move(right));
    }
  }

  Result<ExprPtr> parse_math1() {
    return parse_binary({"+", "-"}, [this] { return parse_concat(); });
  }
  Result<ExprPtr> parse_concat() {
    return parse_binary({"~"}, [this] { return parse_math2(); });
  }
  Result<ExprPtr> parse_math2() {
    return parse_binary({"*", "/", "//", "%"}, [this] { return parse_pow(); });
  }
  Result<ExprPtr> parse_pow() {
    return parse_binary({"**"}, [this] { return parse_unary(true); });
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    Nesting nesting(*this);
    STATICLM_RETURN_IF_ERROR(nesting.check());
    ExprPtr node;
    if (at_operator("-") || at_operator("+")) {
      const Location at = here();
      std::string op = next().text;
      STATICLM_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node = std::make_unique<UnaryExpr>(at, std::move(op), std::move(operand));
    } else {
      STATICLM_ASSIGN_OR_RETURN(node, parse_primary());
    }
    STATICLM_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (!with_filter) {
      return node;
    }
    while (true) {
      if (at_operator("|")) {
        next();
        STATICLM_ASSIGN_OR_RETURN(node, parse_filter(std::move(node)));
      } else if (at_name("is")) {
        next();
        STATICLM_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_primary() {
    const Location at = here();
    const Token& token = peek();
    switch (token.kind) {
      case TokenKind::kName: {
        const std::string& name = next().text;
        if (name == "true" || name == "True") {
          return ExprPtr(std::make_unique<LiteralExpr>(at, Value(true)));
        }
        if (name == "false" || name == "False") {
          return ExprPtr(std::make_unique<LiteralExpr>(at, Value(false)));
        }
        if (name == "none" || name == "None") {
          return ExprPtr(std::make_unique<LiteralExpr>(at, Value(NoneType{})));
        }
        return ExprPtr(std::make_unique<NameExpr>(at, name));
      }
      case TokenKind::kString: {
        std::string text = next().text;
        while (peek().kind == TokenKind::kString) {  // adjacent literals concatenate
          text += next().text;
        }
        return ExprPtr(std::make_unique<LiteralExpr>(at, Value(std::move(text))));
      }
      case TokenKind::kInteger: {
        const std::string& text = next().text;
        int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size()) {
          return at.error(str_cat("the integer ", text, " does not fit in 64 bits"));
        }
        return ExprPtr(std::make_unique<LiteralExpr>(at, Value(value)));
      }
      case TokenKind::kFloat: {
        const std::string& text = next().text;
        double value = 0;
        std::from_chars(text.data(), text.data() + text.size(), value);
        return ExprPtr(std::make_unique<LiteralExpr>(at, Value(value)));
      }
      case TokenKind::kOperator:
        if (token.text == "(") {
          next();
          if (at_operator(")")) {
            next();
            return ExprPtr(std::make_unique<ListExpr>(at, true));
          }
          STATICLM_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true));
          STATICLM_RETURN_IF_ERROR(expect_operator(")"));
          return inner;
        }
        if (token.text == "[") {
          next();
          auto list = std::make_unique<ListExpr>(at, false);
          while (!at_operator("]")) {
            if (!list->items.empty()) {
              STATICLM_RETURN_IF_ERROR(expect_operator(","));
              if (at_operator("]")) {
                break;
              }
            }
            STATICLM_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
            list->items.push_back(std::move(item));
          }
          next();
          return ExprPtr(std::move(list));
        }
        if (token.text == "{") {
          next();
          auto dict = std::make_unique<DictExpr>(at);
          while (!at_operator("}")) {
            if (!dict->items.empty()) {
              STATICLM_RETURN_IF_ERROR(expect_operator(","));
              if (at_operator("}")) {
                break;
              }
            }
            STATICLM_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
            STATICLM_RETURN_IF_ERROR(expect_operator(":"));
            STATICLM_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
            dict->items.emplace_back(std::move(key), std::move(value));
          }
          next();
          return ExprPtr(std::move(dict));
        }
        break;
      default: break;
    }
    return unexpected("an expression");
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      const Location at = here();
      if (at_operator(".")) {
        next();
        if (peek().kind == TokenKind::kName) {
          node = std::make_unique<GetAttrExpr>(at, std::move(node), next().text);
        } else if (peek().kind == TokenKind::kInteger) {
          STATICLM_ASSIGN_OR_RETURN(ExprPtr index, parse_primary());
          node = std::make_unique<GetItemExpr>(at, std::move(node), std::move(index));
        } else {
          return unexpected("an attribute name after '.'");
        }
      } else if (at_operator("[")) {
        next();
        STATICLM_ASSIGN_OR_RETURN(node, parse_subscript(at, std::move(node)));
      } else if (at_operator("(")) {
        auto call = std::make_unique<CallExpr>(at, std::move(node));
        STATICLM_ASSIGN_OR_RETURN(call->arguments, parse_call_arguments());
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(Location at, ExprPtr object) {
    ExprPtr start;
    if (!at_operator(":")) {
      STATICLM_ASSIGN_OR_RETURN(start, parse_expression(true));
      if (at_operator("]")) {
        next();
        return ExprPtr(std::make_unique<GetItemExpr>(at, std::move(object), std::move(start)));
      }
      if (!at_operator(":")) {
        return unexpected("']' or ':'");
      }
    }
    auto slice = std::make_unique<SliceExpr>(at);
    slice->object = std::move(object);
    slice->start = std::move(start);
    next();  // ':'
    if (!at_operator("]") && !at_operator(":")) {
      STATICLM_ASSIGN_OR_RETURN(slice->stop, parse_expression(true));
    }
    if (at_operator(":")) {
      next();
      if (!at_operator("]")) {
        STATICLM_ASSIGN_OR_RETURN(slice->step, parse_expression(true));
      }
    }
    STATICLM_RETURN_IF_ERROR(expect_operator("]"));
    return ExprPtr(std::move(slice));
  }

  Result<CallArguments> parse_call_arguments() {
    STATICLM_RETURN_IF_ERROR(expect_operator("("));
    CallArguments arguments;
    bool first = true;
    while (!at_operator(")")) {
      if (!first) {
        STATICLM_RETURN_IF_ERROR(expect_operator(","));
        if (at_operator(")")) {
          break;
        }
      }
      first = false;
      if (at_operator("*") || at_operator("**")) {
        return here().error("'*' and '**' arguments are not supported in chat templates");
      }
      if (peek().kind == TokenKind::kName && at_operator("=", 1)) {
        std::string name = next().text;
        next();
        STATICLM_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        arguments.keyword.emplace_back(std::move(name), std::move(value));
        continue;
      }
      if (!arguments.keyword.empty()) {
        return here().error("a positional argument follows a keyword argument");
      }
      STATICLM_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
      arguments.positional.push_back(std::move(value));
    }
    next();
    return arguments;
  }

  Result<std::string> parse_dotted_name() {
    STATICLM_ASSIGN_OR_RETURN(std::string name, expect_identifier());
    while (at_operator(".") && peek(1).kind == TokenKind::kName) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  Result<ExprPtr> parse_filter(ExprPtr input) {
    const Location at = here();
    STATICLM_ASSIGN_OR_RETURN(std::string name, parse_dotted_name());
    if (!has_filter(name)) {
      return at.error(str_cat("no filter named '", name, "'"));
    }
    auto filter = std::make_unique<FilterExpr>(at, std::move(input), std::move(name));
    if (at_operator("(")) {
      STATICLM_ASSIGN_OR_RETURN(filter->arguments, parse_call_arguments());
    }
    return ExprPtr(std::move(filter));
  }

  Result<ExprPtr> parse_test(ExprPtr input) {
    const Location at = here();
    const bool negated = at_name("not");
    if (negated) {
      next();
    }
    STATICLM_ASSIGN_OR_RETURN(std::string name, parse_dotted_name());
    if (!has_test(name)) {
      return at.error(str_cat("no test named '", name, "'"));
    }
    auto test = std::make_unique<TestExpr>(at, std::move(input), std::move(name), negated);
    if (at_operator("(")) {
      STATICLM_ASSIGN_OR_RETURN(test->arguments, parse_call_arguments());
    } else {
      const Token& token = peek();
      const bool starts_argument = token.kind == TokenKind::kName || token.kind == TokenKind::kString ||
                                   token.kind == TokenKind::kInteger || token.kind == TokenKind::kFloat ||
                                   at_operator("[") || at_operator("{");
      if (starts_argument && !at_name("else") && !at_name("or") && !at_name("and")) {
        if (at_name("is")) {
          return here().error("a test cannot take 'is' as its argument");
        }
        STATICLM_ASSIGN_OR_RETURN(ExprPtr argument, parse_primary());
        STATICLM_ASSIGN_OR_RETURN(argument, parse_postfix(std::move(argument)));
        test->arguments.positional.push_back(std::move(argument));
      }
    }
    return ExprPtr(std::move(test));
  }

  std::span<const Token> tokens_;
  size_t position_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<Body> parse(std::span<const Token> tokens) {
  if (tokens.empty() || tokens.back().kind != TokenKind::kEnd) {
    return internal_error("jinja::parse: the token list does not end with kEnd");
  }
  return Parser(tokens).parse_template();
}

}  // namespace staticlm::jinja
