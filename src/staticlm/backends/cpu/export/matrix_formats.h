// SPDX-License-Identifier: Apache-2.0
// How the cpu backend stores each matrix, from its options: `weight_dtype` for the body (every
// linear kind), `lm_head_dtype` for the output head (a linear whose output the graph returns) and
// `embedding_dtype` for an untied embedding table. A tied table is one tensor with the head: it
// takes the head's format, and an embedding_dtype given for it that differs is refused, naming
// the tensor. The weight_dtype and pack_weights passes both ask this one place.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "staticlm/core/dtype.h"
#include "staticlm/core/result.h"
#include "staticlm/graph/graph.h"
#include "staticlm/ops/weight_layout.h"
#include "staticlm/options/option_schema.h"

namespace staticlm {

// The option value that keeps the dtype `staticlm export --dtype` wrote.
inline constexpr std::string_view kKeepWeightDtype = "as_exported";
// The head's and the embedding's default: whatever weight_dtype says.
inline constexpr std::string_view kFollowWeightDtype = "weight_dtype";

struct MatrixFormat {
  std::optional<DType> dtype;  // a float dtype to store; nullopt: as exported (or quantized)
  PanelCodes codes = PanelCodes::kFloat;
  int64_t group = 0;  // quantized: k values per scale

  bool quantized() const { return codes != PanelCodes::kFloat; }
  bool operator==(const MatrixFormat&) const = default;
  // "as_exported", "bf16", "int4_g32".
  std::string name() const;
  // as_exported | f32 | f16 | bf16 | int8 | int4 (with `group`); InvalidArgument naming `option`.
  static Result<MatrixFormat> parse(std::string_view value, int64_t group, std::string_view option);
};

enum class MatrixRole : uint8_t { kBody, kHead, kEmbedding };

class MatrixFormats {
 public:
  // All as exported.
  MatrixFormats() = default;
  // From the cpu backend's options; options resolved against another schema (a test backend
  // reusing the passes) lack them, and get the defaults.
  static Result<MatrixFormats> from_options(const ResolvedOptions& options);
  static MatrixFormats uniform(MatrixFormat format) { return MatrixFormats(format, format, format, false); }

  const MatrixFormat& body() const { return body_; }

  // The format for the matrix inputs of `node` (graph.nodes()[n]): the head's for a linear
  // whose output is a graph output, and for an embedding whose table is tied (tied_to_head); the
  // embedding's for another table; the body's otherwise. InvalidArgument when a tied table was
  // given an embedding_dtype other than the head's.
  Result<MatrixFormat> for_node(const Graph& graph, const GraphNode& node) const;
  // Whether `table` is also the output head: such a linear reads it in this graph, or it is a
  // constant marked tied (ConstantEntry::tied_head) for a method without the head.
  static bool tied_to_head(const Graph& graph, ValueId table);

 private:
  MatrixFormats(MatrixFormat body, MatrixFormat head, MatrixFormat embedding, bool embedding_given)
      : body_(body), head_(head), embedding_(embedding), embedding_given_(embedding_given) {}

  MatrixFormat body_;
  MatrixFormat head_;
  MatrixFormat embedding_;
  bool embedding_given_ = false;
};

}  // namespace staticlm
