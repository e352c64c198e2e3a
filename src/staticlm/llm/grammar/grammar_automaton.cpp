// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_automaton.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "staticlm/core/utf8.h"
#include "staticlm/llm/grammar/utf8_byte_ranges.h"

namespace staticlm {
namespace {

constexpr int64_t kHuge = int64_t{1} << 40;
// Copying rules into rules into rules recurses; past this depth a rule is called instead.
constexpr int kMaxInlineDepth = 48;

int64_t saturating_add(int64_t a, int64_t b) {
  return std::min(kHuge, a + b);
}
int64_t saturating_mul(int64_t a, int64_t b) {
  return b != 0 && a > kHuge / b ? kHuge : std::min(kHuge, a * b);
}

void collect_refs(const GrammarExpr& expr, std::vector<uint32_t>& out) {
  if (expr.kind == GrammarExpr::Kind::kRuleRef) {
    out.push_back(expr.rule);
  }
  for (const GrammarExpr& child : expr.children) {
    collect_refs(child, out);
  }
}

// Strongly connected components of the rule reference graph (iterative Tarjan), callees first.
struct RuleGraph {
  std::vector<std::vector<uint32_t>> refs;
  std::vector<bool> recursive;
  std::vector<uint32_t> callees_first;
};

RuleGraph analyse_rules(const GrammarAst& ast) {
  const size_t n = ast.rules.size();
  RuleGraph graph;
  graph.refs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    collect_refs(ast.rules[i].body, graph.refs[i]);
    std::sort(graph.refs[i].begin(), graph.refs[i].end());
    graph.refs[i].erase(std::unique(graph.refs[i].begin(), graph.refs[i].end()), graph.refs[i].end());
  }
  graph.recursive.assign(n, false);
  std::vector<int64_t> index(n, -1);
  std::vector<int64_t> low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> stack;
  int64_t next_index = 0;
  struct Frame {
    uint32_t rule;
    size_t edge;
  };
  for (uint32_t start = 0; start < n; ++start) {
    if (index[start] >= 0) {
      continue;
    }
    std::vector<Frame> frames{{start, 0}};
    index[start] = low[start] = next_index++;
    stack.push_back(start);
    on_stack[start] = true;
    while (!frames.empty()) {
      Frame& frame = frames.back();
      const uint32_t v = frame.rule;
      if (frame.edge < graph.refs[v].size()) {
        const uint32_t w = graph.refs[v][frame.edge++];
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::vector<uint32_t> component;
        uint32_t w = 0;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component.push_back(w);
        } while (w != v);
        const bool self_loop = std::binary_search(graph.refs[v].begin(), graph.refs[v].end(), v);
        for (uint32_t member : component) {
          graph.recursive[member] = component.size() > 1 || self_loop;
          graph.callees_first.push_back(member);
        }
      }
      frames.pop_back();
      if (!frames.empty()) {
        low[frames.back().rule] = std::min(low[frames.back().rule], low[v]);
      }
    }
  }
  return graph;
}

struct NfaEdge {
  enum class Kind : uint8_t { kByte, kEpsilon, kCall };
  int32_t from = 0;
  int32_t to = 0;
  Kind kind = Kind::kEpsilon;
  uint8_t first = 0;
  uint8_t last = 0;
  int32_t rule = 0;  // kCall: the automaton rule
};

struct Nfa {
  int32_t start = 0;
  int32_t final = 0;
  int32_t num_states = 0;
  std::vector<NfaEdge> edges;
};

struct VectorHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    size_t h = 1469598103934665603ull;
    for (int32_t x : v) {
      h = (h ^ static_cast<size_t>(static_cast<uint32_t>(x))) * 1099511628211ull;
    }
    return h;
  }
};

}  // namespace

class GrammarAutomatonBuilder {
 public:
  GrammarAutomatonBuilder(const GrammarAst& ast, const GrammarCompileLimits& limits) : ast_(ast), limits_(limits) {}

  Result<GrammarAutomaton> build() {
    graph_ = analyse_rules(ast_);
    estimate_rule_sizes();
    automaton_rule_.assign(ast_.rules.size(), -1);
    out_.root_ = called_rule(ast_.root);
    std::vector<Nfa> nfas;
    for (size_t next = 0; next < pending_.size(); ++next) {
      STATICLM_ASSIGN_OR_RETURN(Nfa nfa, build_nfa(pending_[next]));
      nfas.push_back(std::move(nfa));
    }
    compute_byte_classes(nfas);
    for (size_t rule = 0; rule < nfas.size(); ++rule) {
      STATICLM_RETURN_IF_ERROR(determinize(nfas[rule], static_cast<int32_t>(rule)));
    }
    finish_calls();
    STATICLM_RETURN_IF_ERROR(trim_dead_ends());
    STATICLM_RETURN_IF_ERROR(refuse_left_recursion());
    return std::move(out_);
  }

 private:
  // Upper bounds of the NFA states each expression and rule needs when copied in.
  int64_t expr_size(const GrammarExpr& expr) const {
    switch (expr.kind) {
      case GrammarExpr::Kind::kLiteral: return static_cast<int64_t>(expr.text.size()) * 4 + 1;
      case GrammarExpr::Kind::kCharClass: return static_cast<int64_t>(expr.ranges.size()) * 12 + 2;
      case GrammarExpr::Kind::kRuleRef: return inlined(expr.rule) ? rule_size_[expr.rule] : 2;
      case GrammarExpr::Kind::kRepeat: {
        const int64_t child = expr_size(expr.children[0]) + 2;
        const int64_t copies = expr.max_repeat == kUnboundedRepeat ? int64_t{expr.min_repeat} + 1 : expr.max_repeat;
        return saturating_add(saturating_mul(child, std::max<int64_t>(copies, 1)), 2);
      }
      case GrammarExpr::Kind::kSequence:
      case GrammarExpr::Kind::kAlternation: {
        int64_t total = 2;
        for (const GrammarExpr& child : expr.children) {
          total = saturating_add(total, expr_size(child) + 2);
        }
        return total;
      }
    }
    return kHuge;
  }

  bool inlined(uint32_t rule) const {
    return !graph_.recursive[rule] && rule != ast_.root && rule_size_[rule] <= limits_.inline_rule_states;
  }

  void estimate_rule_sizes() {
    rule_size_.assign(ast_.rules.size(), kHuge);
    for (uint32_t rule : graph_.callees_first) {
      if (!graph_.recursive[rule]) {
        rule_size_[rule] = expr_size(ast_.rules[rule].body);
      }
    }
  }

  int32_t called_rule(uint32_t ast_rule) {
    if (automaton_rule_[ast_rule] < 0) {
      automaton_rule_[ast_rule] = static_cast<int32_t>(out_.rules_.size());
      out_.rules_.push_back({ast_.rules[ast_rule].name, 0});
      pending_.push_back(ast_rule);
    }
    return automaton_rule_[ast_rule];
  }

  int32_t new_state(Nfa& nfa) { return nfa.num_states++; }

  void epsilon(Nfa& nfa, int32_t from, int32_t to) {
    nfa.edges.push_back({from, to, NfaEdge::Kind::kEpsilon, 0, 0, 0});
  }

  Result<int32_t> add(Nfa& nfa, const GrammarExpr& expr, int32_t in, int depth) {
    if (nfa.num_states + total_nfa_states_ > limits_.max_nfa_states) {
      return invalid_argument("grammar: more than ", limits_.max_nfa_states,
                              " automaton states before determinization; simplify it (smaller repetition counts)");
    }
    switch (expr.kind) {
      case GrammarExpr::Kind::kLiteral: {
        int32_t at = in;
        std::string bytes;
        for (char32_t c : expr.text) {
          utf8_append(bytes, c);
        }
        for (char byte : bytes) {
          const int32_t next = new_state(nfa);
          const auto b = static_cast<uint8_t>(byte);
          nfa.edges.push_back({at, next, NfaEdge::Kind::kByte, b, b, 0});
          at = next;
        }
        return at;
      }
      case GrammarExpr::Kind::kCharClass: {
        const int32_t out = new_state(nfa);
        // States that read the same remaining ranges into `out` are shared.
        std::map<std::vector<std::pair<uint8_t, uint8_t>>, int32_t> suffix_states;
        for (const std::vector<ByteRange>& sequence : utf8_byte_sequences(expr.ranges)) {
          int32_t to = out;
          std::vector<std::pair<uint8_t, uint8_t>> suffix;
          for (size_t i = sequence.size(); i-- > 1;) {
            suffix.insert(suffix.begin(), {sequence[i].first, sequence[i].last});
            auto [it, inserted] = suffix_states.emplace(suffix, 0);
            if (inserted) {
              it->second = new_state(nfa);
              nfa.edges.push_back({it->second, to, NfaEdge::Kind::kByte, sequence[i].first, sequence[i].last, 0});
            }
            to = it->second;
          }
          nfa.edges.push_back({in, to, NfaEdge::Kind::kByte, sequence[0].first, sequence[0].last, 0});
        }
        return out;
      }
      case GrammarExpr::Kind::kRuleRef: {
        if (inlined(expr.rule) && depth < kMaxInlineDepth) {
          return add(nfa, ast_.rules[expr.rule].body, in, depth + 1);
        }
        const int32_t out = new_state(nfa);
        nfa.edges.push_back({in, out, NfaEdge::Kind::kCall, 0, 0, called_rule(expr.rule)});
        return out;
      }
      case GrammarExpr::Kind::kSequence: {
        int32_t at = in;
        for (const GrammarExpr& child : expr.children) {
          STATICLM_ASSIGN_OR_RETURN(at, add(nfa, child, at, depth));
        }
        return at;
      }
      case GrammarExpr::Kind::kAlternation: {
        const int32_t out = new_state(nfa);
        for (const GrammarExpr& child : expr.children) {
          const int32_t entry = new_state(nfa);
          epsilon(nfa, in, entry);
          STATICLM_ASSIGN_OR_RETURN(const int32_t end, add(nfa, child, entry, depth));
          epsilon(nfa, end, out);
        }
        return out;
      }
      case GrammarExpr::Kind::kRepeat: {
        const GrammarExpr& child = expr.children[0];
        int32_t at = in;
        for (uint32_t i = 0; i < expr.min_repeat; ++i) {
          const int32_t entry = new_state(nfa);
          epsilon(nfa, at, entry);
          STATICLM_ASSIGN_OR_RETURN(at, add(nfa, child, entry, depth));
        }
        const int32_t out = new_state(nfa);
        if (expr.max_repeat == kUnboundedRepeat) {
          // A loop state of its own, so nothing before it is repeated.
          const int32_t loop = new_state(nfa);
          epsilon(nfa, at, loop);
          const int32_t entry = new_state(nfa);
          epsilon(nfa, loop, entry);
          STATICLM_ASSIGN_OR_RETURN(const int32_t end, add(nfa, child, entry, depth));
          epsilon(nfa, end, loop);
          epsilon(nfa, loop, out);
          return out;
        }
        for (uint32_t i = expr.min_repeat; i < expr.max_repeat; ++i) {
          epsilon(nfa, at, out);
          const int32_t entry = new_state(nfa);
          epsilon(nfa, at, entry);
          STATICLM_ASSIGN_OR_RETURN(at, add(nfa, child, entry, depth));
        }
        epsilon(nfa, at, out);
        return out;
      }
    }
    return internal_error("grammar: unknown expression kind");
  }

  Result<Nfa> build_nfa(uint32_t ast_rule) {
    Nfa nfa;
    nfa.start = new_state(nfa);
    STATICLM_ASSIGN_OR_RETURN(nfa.final, add(nfa, ast_.rules[ast_rule].body, nfa.start, 0));
    total_nfa_states_ += nfa.num_states;
    return nfa;
  }

  void compute_byte_classes(const std::vector<Nfa>& nfas) {
    std::array<bool, 257> boundary{};
    for (const Nfa& nfa : nfas) {
      for (const NfaEdge& edge : nfa.edges) {
        if (edge.kind == NfaEdge::Kind::kByte) {
          boundary[edge.first] = true;
          boundary[static_cast<size_t>(edge.last) + 1] = true;
        }
      }
    }
    uint8_t cls = 0;
    for (size_t b = 0; b < 256; ++b) {
      if (b > 0 && boundary[b]) {
        ++cls;
      }
      out_.byte_class_[b] = cls;
    }
    out_.num_classes_ = static_cast<size_t>(cls) + 1;
  }

  // Subset construction of one rule's NFA, appended to the automaton's positions.
  Status determinize(const Nfa& nfa, int32_t rule) {
    std::vector<std::vector<int32_t>> out_edges(static_cast<size_t>(nfa.num_states));
    for (size_t i = 0; i < nfa.edges.size(); ++i) {
      out_edges[static_cast<size_t>(nfa.edges[i].from)].push_back(static_cast<int32_t>(i));
    }
    std::vector<uint32_t> seen(static_cast<size_t>(nfa.num_states), 0);
    uint32_t generation = 0;
    auto closure = [&](std::vector<int32_t> states) {
      ++generation;
      std::vector<int32_t> result;
      while (!states.empty()) {
        const int32_t s = states.back();
        states.pop_back();
        if (seen[static_cast<size_t>(s)] == generation) {
          continue;
        }
        seen[static_cast<size_t>(s)] = generation;
        result.push_back(s);
        for (int32_t e : out_edges[static_cast<size_t>(s)]) {
          if (nfa.edges[static_cast<size_t>(e)].kind == NfaEdge::Kind::kEpsilon) {
            states.push_back(nfa.edges[static_cast<size_t>(e)].to);
          }
        }
      }
      std::sort(result.begin(), result.end());
      subset_states_ += static_cast<int64_t>(result.size());
      return result;
    };
    std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> ids;
    std::vector<std::vector<int32_t>> sets;
    const auto base = static_cast<int32_t>(out_.final_.size());
    auto id_of = [&](std::vector<int32_t> set) -> int32_t {
      if (set.empty()) {
        return kNoPosition;
      }
      auto [it, inserted] = ids.emplace(set, base + static_cast<int32_t>(sets.size()));
      if (inserted) {
        sets.push_back(std::move(set));
      }
      return it->second;
    };
    out_.rules_[static_cast<size_t>(rule)].start = id_of(closure({nfa.start}));
    std::vector<std::vector<int32_t>> per_class(out_.num_classes_);
    for (size_t d = 0; d < sets.size(); ++d) {
      if (base + static_cast<int64_t>(sets.size()) > limits_.max_positions) {
        return invalid_argument("grammar: more than ", limits_.max_positions,
                                " automaton states; simplify it (smaller repetition counts, fewer alternatives)");
      }
      if (subset_states_ > limits_.max_subset_states) {
        return invalid_argument("grammar: rule '", out_.rules_[static_cast<size_t>(rule)].name, "' needs more than ",
                                limits_.max_subset_states,
                                " states in its automaton's subsets; simplify it (fewer optional items in a row, "
                                "smaller repetition counts)");
      }
      for (auto& targets : per_class) {
        targets.clear();
      }
      std::map<int32_t, std::vector<int32_t>> call_targets;
      bool final = false;
      for (int32_t s : sets[d]) {
        final = final || s == nfa.final;
        for (int32_t e : out_edges[static_cast<size_t>(s)]) {
          const NfaEdge& edge = nfa.edges[static_cast<size_t>(e)];
          if (edge.kind == NfaEdge::Kind::kByte) {
            for (size_t c = out_.byte_class_[edge.first]; c <= out_.byte_class_[edge.last]; ++c) {
              per_class[c].push_back(edge.to);
            }
          } else if (edge.kind == NfaEdge::Kind::kCall) {
            call_targets[edge.rule].push_back(edge.to);
          }
        }
      }
      std::vector<int32_t> row(out_.num_classes_, kNoPosition);
      bool reads = false;
      for (size_t c = 0; c < out_.num_classes_; ++c) {
        if (!per_class[c].empty()) {
          row[c] = id_of(closure(per_class[c]));
          reads = true;
        }
      }
      std::vector<GrammarCall> calls;
      for (auto& [callee, targets] : call_targets) {
        calls.push_back({callee, id_of(closure(targets))});
      }
      out_.transitions_.insert(out_.transitions_.end(), row.begin(), row.end());
      out_.final_.push_back(final ? 1 : 0);
      out_.reads_bytes_.push_back(reads ? 1 : 0);
      out_.rule_of_.push_back(rule);
      pending_calls_.push_back(std::move(calls));
    }
    return ok_status();
  }

  void finish_calls() {
    out_.call_begin_.assign(1, 0);
    for (const auto& calls : pending_calls_) {
      out_.calls_.insert(out_.calls_.end(), calls.begin(), calls.end());
      out_.call_begin_.push_back(static_cast<uint32_t>(out_.calls_.size()));
    }
  }

  // Keeps only what can still complete: a position from which its rule can reach a final
  // position (through bytes, and calls of rules that can complete) and calls of such rules.
  Status trim_dead_ends() {
    const int32_t n = out_.num_positions();
    const size_t classes = out_.num_classes_;
    std::vector<std::vector<int32_t>> byte_preds(static_cast<size_t>(n));
    std::vector<std::vector<std::pair<int32_t, int32_t>>> calls_returning_to(static_cast<size_t>(n));  // (from, rule)
    std::vector<std::vector<std::pair<int32_t, int32_t>>> calls_of_rule(out_.rules_.size());           // (from, ret)
    for (int32_t p = 0; p < n; ++p) {
      for (size_t c = 0; c < classes; ++c) {
        const int32_t q = out_.transitions_[static_cast<size_t>(p) * classes + c];
        if (q != kNoPosition) {
          byte_preds[static_cast<size_t>(q)].push_back(p);
        }
      }
      for (const GrammarCall& call : out_.calls(p)) {
        calls_returning_to[static_cast<size_t>(call.return_position)].push_back({p, call.rule});
        calls_of_rule[static_cast<size_t>(call.rule)].push_back({p, call.return_position});
      }
    }
    std::vector<uint8_t> live(static_cast<size_t>(n), 0);
    std::vector<uint8_t> completes(out_.rules_.size(), 0);
    std::vector<int32_t> work;
    auto mark = [&](int32_t p) {
      if (!live[static_cast<size_t>(p)]) {
        live[static_cast<size_t>(p)] = 1;
        work.push_back(p);
      }
    };
    for (int32_t p = 0; p < n; ++p) {
      if (out_.final_[static_cast<size_t>(p)]) {
        mark(p);
      }
    }
    while (!work.empty()) {
      const int32_t q = work.back();
      work.pop_back();
      for (int32_t p : byte_preds[static_cast<size_t>(q)]) {
        mark(p);
      }
      for (auto [from, rule] : calls_returning_to[static_cast<size_t>(q)]) {
        if (completes[static_cast<size_t>(rule)]) {
          mark(from);
        }
      }
      const int32_t rule = out_.rule_of_[static_cast<size_t>(q)];
      if (out_.rules_[static_cast<size_t>(rule)].start == q && !completes[static_cast<size_t>(rule)]) {
        completes[static_cast<size_t>(rule)] = 1;
        for (auto [from, ret] : calls_of_rule[static_cast<size_t>(rule)]) {
          if (live[static_cast<size_t>(ret)]) {
            mark(from);
          }
        }
      }
    }
    if (!completes[static_cast<size_t>(out_.root_)]) {
      return invalid_argument("grammar: rule '", out_.rules_[static_cast<size_t>(out_.root_)].name,
                              "' matches no finite text (every alternative recurses forever)");
    }
    for (int32_t p = 0; p < n; ++p) {
      bool reads = false;
      for (size_t c = 0; c < classes; ++c) {
        int32_t& q = out_.transitions_[static_cast<size_t>(p) * classes + c];
        if (q != kNoPosition && !live[static_cast<size_t>(q)]) {
          q = kNoPosition;
        }
        reads = reads || q != kNoPosition;
      }
      out_.reads_bytes_[static_cast<size_t>(p)] = reads ? 1 : 0;
    }
    std::vector<GrammarCall> kept;
    std::vector<uint32_t> begin{0};
    for (int32_t p = 0; p < n; ++p) {
      for (const GrammarCall& call : out_.calls(p)) {
        if (completes[static_cast<size_t>(call.rule)] && live[static_cast<size_t>(call.return_position)]) {
          kept.push_back(call);
        }
      }
      begin.push_back(static_cast<uint32_t>(kept.size()));
    }
    out_.calls_ = std::move(kept);
    out_.call_begin_ = std::move(begin);
    return ok_status();
  }

  // Positions of `rule` reached from its start without reading a byte (through calls of rules
  // that can match the empty text); calls made there go to `left_calls`.
  void left_reach(int32_t rule, const std::vector<uint8_t>& nullable, std::vector<int32_t>* left_calls,
                  bool& reaches_final) const {
    std::vector<int32_t> work{out_.rules_[static_cast<size_t>(rule)].start};
    std::vector<int32_t> seen;
    reaches_final = false;
    while (!work.empty()) {
      const int32_t p = work.back();
      work.pop_back();
      if (std::find(seen.begin(), seen.end(), p) != seen.end()) {
        continue;
      }
      seen.push_back(p);
      reaches_final = reaches_final || out_.is_final(p);
      for (const GrammarCall& call : out_.calls(p)) {
        if (left_calls != nullptr) {
          left_calls->push_back(call.rule);
        }
        if (nullable[static_cast<size_t>(call.rule)]) {
          work.push_back(call.return_position);
        }
      }
    }
  }

  Status refuse_left_recursion() const {
    const size_t rules = out_.rules_.size();
    std::vector<uint8_t> nullable(rules, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules; ++r) {
        bool reaches_final = false;
        if (!nullable[r]) {
          left_reach(static_cast<int32_t>(r), nullable, nullptr, reaches_final);
          if (reaches_final) {
            nullable[r] = 1;
            changed = true;
          }
        }
      }
    }
    std::vector<std::vector<int32_t>> left_calls(rules);
    for (size_t r = 0; r < rules; ++r) {
      bool unused = false;
      left_reach(static_cast<int32_t>(r), nullable, &left_calls[r], unused);
    }
    // Depth-first search for a cycle; `path` holds the rules on the current branch.
    std::vector<uint8_t> state(rules, 0);  // 0 new, 1 on the path, 2 done
    for (size_t start = 0; start < rules; ++start) {
      if (state[start] != 0) {
        continue;
      }
      std::vector<std::pair<int32_t, size_t>> path{{static_cast<int32_t>(start), 0}};
      state[start] = 1;
      while (!path.empty()) {
        auto& [rule, edge] = path.back();
        if (edge < left_calls[static_cast<size_t>(rule)].size()) {
          const int32_t callee = left_calls[static_cast<size_t>(rule)][edge++];
          if (state[static_cast<size_t>(callee)] == 1) {
            std::string cycle = out_.rules_[static_cast<size_t>(callee)].name;
            bool in_cycle = false;
            for (const auto& [member, unused] : path) {
              in_cycle = in_cycle || member == callee;
              if (in_cycle && member != callee) {
                cycle += " -> " + out_.rules_[static_cast<size_t>(member)].name;
              }
            }
            cycle += " -> " + out_.rules_[static_cast<size_t>(callee)].name;
            return invalid_argument("grammar: rule '", out_.rules_[static_cast<size_t>(callee)].name,
                                    "' is left-recursive (", cycle,
                                    " without reading a character); rewrite it with repetition, e.g. "
                                    "expr ::= term (\"+\" term)*");
          }
          if (state[static_cast<size_t>(callee)] == 0) {
            state[static_cast<size_t>(callee)] = 1;
            path.push_back({callee, 0});
          }
          continue;
        }
        state[static_cast<size_t>(rule)] = 2;
        path.pop_back();
      }
    }
    return ok_status();
  }

  const GrammarAst& ast_;
  const GrammarCompileLimits& limits_;
  RuleGraph graph_;
  std::vector<int64_t> rule_size_;
  std::vector<int32_t> automaton_rule_;  // per AST rule: its automaton rule, -1 when copied in
  std::vector<uint32_t> pending_;        // AST rules of the automaton rules, in order
  std::vector<std::vector<GrammarCall>> pending_calls_;
  int64_t total_nfa_states_ = 0;
  int64_t subset_states_ = 0;
  GrammarAutomaton out_;
};

Result<GrammarAutomaton> GrammarAutomaton::compile(const GrammarAst& ast, const GrammarCompileLimits& limits) {
  if (ast.rules.empty() || ast.root >= ast.rules.size()) {
    return invalid_argument("grammar: no root rule");
  }
  GrammarAutomatonBuilder builder(ast, limits);
  return builder.build();
}

}  // namespace staticlm
