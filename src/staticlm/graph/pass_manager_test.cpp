// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/pass_manager.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

// A pass made of a name and a function, recording that it ran.
class FunctionPass final : public GraphPass {
 public:
  FunctionPass(std::string name, std::vector<std::string>* log, std::function<Status(Graph&)> body)
      : name_(std::move(name)), log_(log), body_(std::move(body)) {}
  std::string_view name() const override { return name_; }
  Status run(Graph& graph) override {
    log_->push_back(name_);
    return body_(graph);
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
  std::function<Status(Graph&)> body_;
};

std::unique_ptr<GraphPass> make_pass(
    std::string name, std::vector<std::string>* log,
    std::function<Status(Graph&)> body = [](Graph&) { return ok_status(); }) {
  return std::make_unique<FunctionPass>(std::move(name), log, std::move(body));
}

// x [2,3] -> silu -> gelu, output.
Graph make_graph() {
  Graph graph(std::make_shared<ConstantTable>());
  auto x = graph.add_input("x", DType::kF32, {2, 3});
  EXPECT_TRUE(x.ok());
  auto hidden = graph.add(OpKind::kSilu, {x.ok() ? *x : kNoValue});
  EXPECT_TRUE(hidden.ok());
  auto out = graph.add(OpKind::kGelu, {hidden.ok() ? *hidden : kNoValue});
  EXPECT_TRUE(out.ok());
  EXPECT_TRUE(graph.add_output("out", out.ok() ? *out : kNoValue).ok());
  return graph;
}

TEST(PassManagerTest, RunsPassesInOrder) {
  std::vector<std::string> log;
  PassManager manager;
  manager.add(make_pass("first", &log));
  manager.add(make_pass("second", &log));
  manager.add(make_pass("third", &log));
  EXPECT_EQ(manager.size(), 3u);
  Graph graph = make_graph();
  EXPECT_TRUE(manager.run(graph).ok());
  EXPECT_EQ(log, (std::vector<std::string>{"first", "second", "third"}));
}

TEST(PassManagerTest, KeepsAValidRewrite) {
  std::vector<std::string> log;
  PassManager manager;
  // Replaces gelu by silu: same signature, so the graph stays valid.
  manager.add(make_pass("gelu_to_silu", &log, [](Graph& graph) {
    for (GraphNode& node : graph.mutable_nodes()) {
      if (node.op == OpKind::kGelu) {
        node.op = OpKind::kSilu;
      }
    }
    return ok_status();
  }));
  Graph graph = make_graph();
  ASSERT_TRUE(manager.run(graph).ok());
  EXPECT_EQ(graph.nodes()[1].op, OpKind::kSilu);
}

TEST(PassManagerTest, StopsAtAFailingPassAndNamesIt) {
  std::vector<std::string> log;
  PassManager manager;
  manager.add(make_pass("fold", &log, [](Graph&) { return unimplemented("cannot fold op 'rope'"); }));
  manager.add(make_pass("never", &log));
  Graph graph = make_graph();
  Status status = manager.run(graph);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(status.message(), "pass 'fold': cannot fold op 'rope'");
  EXPECT_EQ(log, (std::vector<std::string>{"fold"}));
}

TEST(PassManagerTest, CatchesAPassThatCorruptsTheGraph) {
  std::vector<std::string> log;
  PassManager manager;
  manager.add(make_pass("fine", &log));
  // Changes a value's shape without touching its producer: the verifier must catch it here.
  manager.add(make_pass("corrupt", &log, [](Graph& graph) {
    graph.mutable_values()[1].shape = {3, 2};
    return ok_status();
  }));
  manager.add(make_pass("never", &log));
  Graph graph = make_graph();
  Status status = manager.run(graph);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind("pass 'corrupt': ", 0), 0u) << status.message();
  EXPECT_NE(status.message().find("node 0 (op 'silu'): output 0 (value 1) is f32[3,2], but its inputs give f32[2,3]"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(log, (std::vector<std::string>{"fine", "corrupt"}));
}

TEST(PassManagerTest, BlamesAnInvalidInputGraphOnNoPass) {
  std::vector<std::string> log;
  PassManager manager;
  manager.add(make_pass("first", &log));
  Graph graph = make_graph();
  graph.mutable_nodes()[0].inputs[0] = 50;
  Status status = manager.run(graph);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind("before the first pass: node 0 (op 'silu')", 0), 0u) << status.message();
  EXPECT_TRUE(log.empty());
}

TEST(PassManagerTest, RefusesANullPass) {
  PassManager manager;
  manager.add(nullptr);
  Graph graph = make_graph();
  Status status = manager.run(graph);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "pass 0 is null");
}

}  // namespace
}  // namespace staticlm
