// SPDX-License-Identifier: Apache-2.0
// The parsed form of a template: expressions evaluate to a Value, statements write output. Each
// node knows its place in the source, so a failure names the line and column. The tree owns its
// children; a Template owns the tree, and rendering only reads it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "staticlm/chat/jinja/value.h"
#include "staticlm/core/result.h"

namespace staticlm::jinja {

class Interpreter;
class Scope;

struct Location {
  int line = 0;
  int column = 0;
  // "line 3, column 7: <message>" as an InvalidArgument status.
  Status error(std::string_view message) const;
  // The same prefix on a status that came from a builtin (a filter, a method, a global).
  Status locate(const Status& status) const;
};

struct Expr {
  explicit Expr(Location where) : at(where) {}
  virtual ~Expr() = default;
  virtual Result<Value> evaluate(Interpreter& interpreter) const = 0;
  Location at;
};
using ExprPtr = std::unique_ptr<Expr>;

struct CallArguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  Result<Arguments> evaluate(Interpreter& interpreter) const;
};

struct LiteralExpr final : Expr {
  LiteralExpr(Location where, Value v) : Expr(where), value(std::move(v)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  Value value;
};

struct NameExpr final : Expr {
  NameExpr(Location where, std::string n) : Expr(where), name(std::move(n)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  std::string name;
};

struct ListExpr final : Expr {
  ListExpr(Location where, bool tuple) : Expr(where), is_tuple(tuple) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  std::vector<ExprPtr> items;
  bool is_tuple;
};

struct DictExpr final : Expr {
  using Expr::Expr;
  Result<Value> evaluate(Interpreter& interpreter) const override;
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

// `object.name`: an attribute (a method, a namespace's value), else the item of that name.
struct GetAttrExpr final : Expr {
  GetAttrExpr(Location where, ExprPtr o, std::string n) : Expr(where), object(std::move(o)), name(std::move(n)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr object;
  std::string name;
};

// `object[index]`: the item, else (for a string index) the attribute of that name.
struct GetItemExpr final : Expr {
  GetItemExpr(Location where, ExprPtr o, ExprPtr i) : Expr(where), object(std::move(o)), index(std::move(i)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr final : Expr {
  using Expr::Expr;
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr object;
  ExprPtr start;  // each of these may be null
  ExprPtr stop;
  ExprPtr step;
};

struct CallExpr final : Expr {
  CallExpr(Location where, ExprPtr c) : Expr(where), callee(std::move(c)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr callee;
  CallArguments arguments;
};

// `input | name(arguments)`; input is null in a `{% filter %}` block's chain, which applies to
// the block's output (Interpreter::filter_input).
struct FilterExpr final : Expr {
  FilterExpr(Location where, ExprPtr in, std::string n) : Expr(where), input(std::move(in)), name(std::move(n)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr input;
  std::string name;
  CallArguments arguments;
};

// `input is [not] name(arguments)`
struct TestExpr final : Expr {
  TestExpr(Location where, ExprPtr in, std::string n, bool neg)
      : Expr(where), input(std::move(in)), name(std::move(n)), negated(neg) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr input;
  std::string name;
  CallArguments arguments;
  bool negated;
};

// `-x`, `+x`, `not x`
struct UnaryExpr final : Expr {
  UnaryExpr(Location where, std::string o, ExprPtr x) : Expr(where), op(std::move(o)), operand(std::move(x)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  std::string op;
  ExprPtr operand;
};

// + - * / // % ** ~ and or
struct BinaryExpr final : Expr {
  BinaryExpr(Location where, std::string o, ExprPtr l, ExprPtr r)
      : Expr(where), op(std::move(o)), left(std::move(l)), right(std::move(r)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  std::string op;
  ExprPtr left;
  ExprPtr right;
};

// `a < b <= c`, `x in y`, `x not in y`: Python's chained comparison.
struct CompareExpr final : Expr {
  CompareExpr(Location where, ExprPtr f) : Expr(where), first(std::move(f)) {}
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // op: == != < <= > >= in notin
};

// `then_value if condition else else_value`; without else, a false condition gives undefined.
struct ConditionalExpr final : Expr {
  using Expr::Expr;
  Result<Value> evaluate(Interpreter& interpreter) const override;
  ExprPtr condition;
  ExprPtr then_value;
  ExprPtr else_value;
};

enum class Flow { kNormal, kBreak, kContinue };

struct Stmt {
  explicit Stmt(Location where) : at(where) {}
  virtual ~Stmt() = default;
  virtual Result<Flow> execute(Interpreter& interpreter) const = 0;
  Location at;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Runs statements in order, stopping at a break or continue (which it returns).
Result<Flow> execute_body(const Body& body, Interpreter& interpreter);

struct TextStmt final : Stmt {
  TextStmt(Location where, std::string t) : Stmt(where), text(std::move(t)) {}
  Result<Flow> execute(Interpreter& interpreter) const override;
  std::string text;
};

// {{ expression }}
struct OutputStmt final : Stmt {
  OutputStmt(Location where, ExprPtr e) : Stmt(where), expression(std::move(e)) {}
  Result<Flow> execute(Interpreter& interpreter) const override;
  ExprPtr expression;
};

struct IfStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body else_body;
};

// What a for loop or a set binds: one name, several names unpacked from a sequence, or a
// namespace's attribute (`ns.name`, set only).
struct AssignTarget {
  std::vector<std::string> names;
  bool unpack = false;
  std::string namespace_name;  // non-empty for `ns.attribute`: names[0] is the attribute
};

struct ForStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  AssignTarget target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`: may be null
  Body body;
  Body else_body;  // runs when no item passed the filter
};

struct SetStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  AssignTarget target;
  ExprPtr value;
};

// {% set name %}...{% endset %}, optionally through filters.
struct SetBlockStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  AssignTarget target;
  Body body;
  ExprPtr filter;  // a FilterExpr chain over the block's output, or null
};

struct MacroParameter {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct MacroStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  // Runs the body with the arguments bound, in a scope under the definition's; returns the text.
  Result<Value> call(Interpreter& interpreter, const std::shared_ptr<Scope>& definition_scope,
                     Arguments arguments) const;
  std::string name;
  std::vector<MacroParameter> parameters;
  Body body;
};

// {% filter name %}...{% endfilter %}
struct FilterBlockStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  ExprPtr filter;
  Body body;
};

// {% break %} / {% continue %}
struct LoopControlStmt final : Stmt {
  LoopControlStmt(Location where, Flow f) : Stmt(where), flow(f) {}
  Result<Flow> execute(Interpreter& interpreter) const override;
  Flow flow;
};

// {% generation %}...{% endgeneration %} (transformers' assistant-mask marker): its body, as is.
struct GenerationStmt final : Stmt {
  using Stmt::Stmt;
  Result<Flow> execute(Interpreter& interpreter) const override;
  Body body;
};

}  // namespace staticlm::jinja
