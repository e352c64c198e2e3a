// embedding: out[i, :] = table[ids[i], :], widened to f32. Every id is checked against the
// table before anything is written.
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

class EmbeddingKernel final : public Kernel {
 public:
  EmbeddingKernel(DType table_dtype, DType ids_dtype, int64_t vocab, int64_t width, int64_t count)
      : table_dtype_(table_dtype), ids_dtype_(ids_dtype), vocab_(vocab), width_(width), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const void* table = inputs[0].raw();
    const void* ids = inputs[1].raw();
    for (int64_t i = 0; i < count_; ++i) {
      const int64_t id = load_index(ids, ids_dtype_, i);
      if (id < 0 || id >= vocab_) {
        return out_of_range("embedding: token id ", id, " at index ", i, " is outside [0, ", vocab_, ")");
      }
    }
    float* out = outputs[0].data<float>();
    for (int64_t i = 0; i < count_; ++i) {
      const int64_t id = load_index(ids, ids_dtype_, i);
      widen_to_f32(table, table_dtype_, id * width_, width_, out + i * width_);
    }
    return ok_status();
  }

 private:
  DType table_dtype_;
  DType ids_dtype_;
  int64_t vocab_;
  int64_t width_;
  int64_t count_;
};

}  // namespace

KernelResult make_embedding_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 2, 2));
  const TensorSpec& table = *signature.inputs[0];
  const TensorSpec& ids = *signature.inputs[1];
  STATICLM_RETURN_IF_ERROR(check_matrix_weight(signature, table, "table"));
  if (!is_index_dtype(ids.dtype) || table.shape.size() != 2) {
    return invalid_argument("embedding: expected a [vocab, width] table and i32 or i64 ids, found ",
                            dtype_name(table.dtype), shape_string(table.shape), " and ", dtype_name(ids.dtype),
                            shape_string(ids.shape));
  }
  return std::make_unique<EmbeddingKernel>(table.dtype, ids.dtype, table.shape[0], table.shape[1],
                                           num_elements(ids.shape));
}

}  // namespace staticlm::portable
