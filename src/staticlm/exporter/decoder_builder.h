// SPDX-License-Identifier: Apache-2.0
// The helpers a model family composes its method graph from, as llama.cpp's per-architecture
// graph builders do: norms, projections, self-attention (scale, window, soft-cap and rope per
// layer), the gated MLP with its activation, embedding scaling, the head and its soft-cap.
// start() adds the hf_static v1 inputs (input_ids, cache_position, every layer's caches),
// finish() the logits output (finish_hidden_states() the hidden state instead, for the embeddings
// method), so a family's graph meets docs/hf_static_v1.md by construction.
//
// Every helper that reads a weight checks the constant has the shape the hyper-parameters imply
// and fails with InvalidArgument naming the constant and its role ("layer 3 q_proj"); a missing
// required weight fails the same way.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/exporter/decoder_model.h"
#include "staticlm/exporter/method_shape.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

class DecoderBuilder {
 public:
  // A graph over `constants` (which holds the model's weights) with the method's inputs.
  static Result<DecoderBuilder> start(const DecoderHyperParams& params, std::shared_ptr<ConstantTable> constants,
                                      const DecoderMethodShape& shape);
  // start() for `model`'s hyper-parameters, after checking it has weights and attention for each
  // of its layers (InvalidArgument otherwise).
  static Result<DecoderBuilder> start(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                      const DecoderMethodShape& shape);

  const DecoderHyperParams& params() const { return params_; }
  const DecoderMethodShape& shape() const { return shape_; }
  Graph& graph() { return *graph_; }
  ValueId positions() const { return positions_; }
  // "layer 3 <what>": how messages name a layer's weights.
  static std::string layer_role(int64_t layer, std::string_view what);

  // A weight value, after checking the constant has the `expected` shape.
  Result<ValueId> weight(ConstantId id, const Shape& expected, std::string_view role);
  // kNoValue for kNoConstant, else weight().
  Result<ValueId> optional_weight(ConstantId id, const Shape& expected, std::string_view role);

  // The token embeddings of input_ids: [1, S, hidden].
  Result<ValueId> embed(ConstantId table);
  // x times the f32 [1] constant `factor`.
  Result<ValueId> scale(ValueId x, ConstantId factor, std::string_view role);
  // cap * tanh(x / cap).
  Result<ValueId> softcap(ValueId x, double cap);
  // RMSNorm of x's last dimension (`dim` wide) with weight `w` and the model's eps.
  Result<ValueId> rms_norm(ValueId x, ConstantId w, int64_t dim, std::string_view role);
  // x . wᵀ (+ bias), w being [out, in].
  Result<ValueId> linear(ValueId x, ConstantId w, ConstantId bias, int64_t out, int64_t in, std::string_view role);
  Result<ValueId> add(ValueId a, ValueId b);
  Result<ValueId> reshape(ValueId x, Shape shape);

  // The self-attention of `layer` on the normed hidden state h, up to (not including) o_proj:
  // q / k / v projections with their optional biases, q / k norms where the weights have them (per
  // head or over the whole projection), the layer's rope (none where it has none) and its
  // attention factor, the cache writes (in place, or the new rows as the returned form's outputs)
  // and attention over the caches: windowed_attention where the layer's window is shorter than
  // the cache or its scores are soft-capped, attention otherwise. Returns [1, S, heads * head_dim].
  Result<ValueId> self_attention(int64_t layer, ValueId h, const DecoderLayerWeights& w,
                                 const LayerAttention& attention);
  // o_proj (+ bias) of self_attention's result: [1, rows, hidden].
  Result<ValueId> output_projection(int64_t layer, ValueId attended, const DecoderLayerWeights& w);

  // Whether `layer` is where the method narrows to the chunk's last row: the last layer of a
  // method that outputs the last row's logits only (LogitsMode::kLast). Past its cache writes and
  // attention nothing else reads the other rows, so its o_proj, MLP and the head multiply one row.
  bool narrows_after_attention(int64_t layer) const;
  // Row S - 1 of [1, S, ...]: the contract left-pads a partial chunk, so it is the last real token.
  Result<ValueId> last_row_of(ValueId x);

  // down(act(gate(h)) * up(h)) of `layer`'s MLP.
  Result<ValueId> gated_mlp(int64_t layer, ValueId h, const DecoderLayerWeights& w, Activation activation);

  // The logits: x . headᵀ, head being [vocab, hidden].
  Result<ValueId> lm_head(ValueId x, ConstantId head);
  // Adds `logits` as the method's output and hands the graph over.
  Result<std::unique_ptr<Graph>> finish(ValueId logits);
  // Adds the final-normed hidden state `x` as the output of a method whose shape asks for it (the
  // embeddings method) and hands the graph over.
  Result<std::unique_ptr<Graph>> finish_hidden_states(ValueId x);

 private:
  DecoderBuilder(const DecoderHyperParams& params, std::unique_ptr<Graph> graph, const DecoderMethodShape& shape)
      : params_(params), graph_(std::move(graph)), shape_(shape) {}

  Result<ValueId> project_heads(ValueId h, ConstantId proj, ConstantId bias, ConstantId norm, QkNormScope norm_scope,
                                int64_t heads, const std::string& role);
  Result<ValueId> rope(ValueId x, const RopeParams& rope);
  Result<ValueId> scale_rotated(ValueId x, const RopeParams& rope, double factor);
  Status add_returned_rows(ValueId rows, const std::string& name);

  DecoderHyperParams params_;
  std::unique_ptr<Graph> graph_;
  DecoderMethodShape shape_;
  ValueId input_ids_ = kNoValue;
  ValueId positions_ = kNoValue;
  std::vector<ValueId> key_caches_;
  std::vector<ValueId> value_caches_;
};

}  // namespace staticlm
