// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/pack_weights_pass.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "staticlm/core/float_convert.h"
#include "staticlm/ops/panel_quant.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {
namespace {

// The rows of a constant (plain float `dtype`), packed or quantized when the program is written.
class PackedMatrixSource final : public ByteSource {
 public:
  PackedMatrixSource(std::shared_ptr<ByteSource> rows, DType dtype, PanelLayout layout, std::string name)
      : rows_(std::move(rows)), dtype_(dtype), layout_(layout), name_(std::move(name)) {}

  uint64_t size_bytes() const override {
    return static_cast<uint64_t>(layout_.elements()) * (layout_.is_quantized() ? 1 : element_bytes());
  }

  Status read(std::span<uint8_t> out) const override {
    const auto elements = static_cast<uint64_t>(layout_.rows * layout_.cols);
    const uint64_t expected = elements * element_bytes();
    if (rows_->size_bytes() != expected || out.size() != size_bytes()) {
      return invalid_argument("tensor '", name_, "': packing a [", layout_.rows, ", ", layout_.cols, "] matrix needs ",
                              expected, " bytes, found ", rows_->size_bytes());
    }
    std::vector<uint8_t> rows(static_cast<size_t>(expected));
    STATICLM_RETURN_IF_ERROR(rows_->read(rows));
    if (!layout_.is_quantized()) {
      pack_panels(rows, element_bytes(), layout_, out);
      return ok_status();
    }
    std::vector<float> widened(static_cast<size_t>(elements));
    convert_floats(rows, dtype_, {reinterpret_cast<uint8_t*>(widened.data()), widened.size() * sizeof(float)},
                   DType::kF32, elements);
    return quantize_panels(widened, layout_, out, name_);
  }

 private:
  size_t element_bytes() const { return dtype_info(dtype_).block_bytes; }

  std::shared_ptr<ByteSource> rows_;
  DType dtype_;
  PanelLayout layout_;
  std::string name_;
};

// The matrix inputs of a node the pass packs: every linear kind's (embeddings follow their
// linears).
std::vector<size_t> linear_matrices(const GraphNode& node) {
  if (node.op == OpKind::kEmbedding) {
    return {};
  }
  return matrix_inputs(node.op, node.inputs.size(), node.attributes);
}

// Whether the pass can pack `value`: a rank-2 plain-float constant.
bool packable(const Graph& graph, ValueId value) {
  if (value == kNoValue || graph.value(value).kind != ValueKind::kConstant) {
    return false;
  }
  const ConstantEntry& entry = graph.constants().at(graph.value(value).constant);
  return is_plain_float(entry.dtype) && entry.shape.size() == 2 && entry.shape[0] > 0 && entry.shape[1] > 0;
}

class Packer {
 public:
  explicit Packer(Graph& graph) : graph_(graph) {}

  // The packed value of `original` (packable) in `format`'s codes, made once per constant and
  // format.
  Result<ValueId> packed(ValueId original, const MatrixFormat& format) {
    const Key key{original, format.codes, format.group};
    if (auto it = packed_.find(key); it != packed_.end()) {
      return it->second;
    }
    // Copies: adding to the table may move its entries.
    const ConstantEntry entry = graph_.constants().at(graph_.value(original).constant);
    const bool quantized = format.quantized();
    const PanelLayout layout = quantized
                                   ? PanelLayout::quantized(entry.shape[0], entry.shape[1], format.codes, format.group)
                                   : PanelLayout::of(entry.shape[0], entry.shape[1], entry.dtype);
    const DType stored = quantized ? DType::kU8 : entry.dtype;
    const std::string name = quantized ? str_cat(entry.name, ".", panel_layout_name(format.codes), "_g", format.group)
                                       : str_cat(entry.name, ".", kPanel32Layout);
    ConstantId id = graph_.constants().find(name);
    if (id < 0) {
      auto source = std::make_shared<PackedMatrixSource>(entry.source, entry.dtype, layout, entry.name);
      STATICLM_ASSIGN_OR_RETURN(id,
                                graph_.mutable_constants().add(name, stored, layout.packed_shape(), std::move(source)));
    } else if (graph_.constants().at(id).dtype != stored || graph_.constants().at(id).shape != layout.packed_shape()) {
      return invalid_argument("pack_weights: the packed weight's name '", name,
                              "' is taken by a constant of another dtype or shape than ", dtype_name(stored),
                              shape_string(layout.packed_shape()));
    }
    STATICLM_ASSIGN_OR_RETURN(const ValueId value, graph_.use_constant(id));
    packed_.emplace(key, value);
    packed_originals_.insert(original);
    return value;
  }

  bool was_packed(ValueId original) const { return packed_originals_.count(original) > 0; }

  // Points `node`'s matrix inputs at their packed values and records the layout.
  Status pack_node(GraphNode& node, const std::vector<size_t>& matrices, const MatrixFormat& format) {
    std::vector<int64_t> shapes;
    for (size_t input : matrices) {
      const ValueId original = node.inputs[input];
      const Shape& shape = graph_.value(original).shape;
      shapes.push_back(shape[0]);
      shapes.push_back(shape[1]);
      STATICLM_ASSIGN_OR_RETURN(node.inputs[input], packed(original, format));
    }
    node.attributes.set(std::string(kWeightLayoutAttr), std::string(panel_layout_name(format.codes)));
    node.attributes.set(std::string(kWeightShapesAttr), std::move(shapes));
    if (format.quantized()) {
      node.attributes.set(std::string(kWeightGroupAttr), format.group);
    }
    return ok_status();
  }

 private:
  using Key = std::tuple<ValueId, PanelCodes, int64_t>;
  Graph& graph_;
  std::map<Key, ValueId> packed_;  // (original constant value, codes, group) -> packed one
  std::set<ValueId> packed_originals_;
};

bool already_laid_out(const GraphNode& node) {
  return node.attributes.has(kWeightLayoutAttr);
}

}  // namespace

Status PackWeightsPass::run(Graph& graph) {
  // Every node's format first: the head's is found by its weight value, which this rewrites.
  std::vector<MatrixFormat> formats;
  for (const GraphNode& node : graph.nodes()) {
    STATICLM_ASSIGN_OR_RETURN(MatrixFormat format, formats_.for_node(graph, node));
    formats.push_back(format);
  }
  Packer packer(graph);
  std::vector<GraphNode>& nodes = graph.mutable_nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    GraphNode& node = nodes[n];
    const std::vector<size_t> matrices = linear_matrices(node);
    if (matrices.empty() || already_laid_out(node)) {
      continue;
    }
    bool all = true;
    for (size_t input : matrices) {
      all = all && packable(graph, node.inputs[input]);
    }
    if (all) {
      STATICLM_RETURN_IF_ERROR(packer.pack_node(node, matrices, formats[n]));
    }
  }
  // Tables after every linear is known: a tied table shares what its linear packed (in a method
  // without the head, the constant the head's method packed, found by its name); an untied one is
  // quantized when its format asks, and otherwise stays in rows (one contiguous row per gathered
  // token).
  for (size_t n = 0; n < nodes.size(); ++n) {
    GraphNode& node = nodes[n];
    if (node.op != OpKind::kEmbedding || node.inputs.empty() || already_laid_out(node) ||
        !packable(graph, node.inputs[0])) {
      continue;
    }
    if (packer.was_packed(node.inputs[0]) || formats[n].quantized() ||
        MatrixFormats::tied_to_head(graph, node.inputs[0])) {
      STATICLM_RETURN_IF_ERROR(packer.pack_node(node, {0}, formats[n]));
    }
  }
  return ok_status();
}

}  // namespace staticlm
