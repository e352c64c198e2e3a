// SPDX-License-Identifier: Apache-2.0
// embedding: out[i, :] = table[ids[i], :], widened to f32. Every id is checked against the
// table before anything is written. The rows of a left-padded chunk's padding (KernelContext)
// are not gathered: their outputs are unspecified (docs/ops.md).
#include <algorithm>
#include <utility>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

// Rows per range of the split: fewer (a decode row, a short prompt) stay on the calling thread.
constexpr int64_t kMinRowsPerChunk = 8;

class EmbeddingKernel final : public Kernel {
 public:
  EmbeddingKernel(MatrixRef table, DType ids_dtype, int64_t count)
      : table_(std::move(table)), ids_dtype_(ids_dtype), vocab_(table_.rows), width_(table_.cols), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const void* table = inputs[0].raw();
    const void* ids = inputs[1].raw();
    for (int64_t i = 0; i < count_; ++i) {
      const int64_t id = load_index(ids, ids_dtype_, i);
      if (id < 0 || id >= vocab_) {
        return out_of_range("embedding: token id ", id, " at index ", i, " is outside [0, ", vocab_, ")");
      }
    }
    float* out = outputs[0].data<float>();
    const int64_t first = count_ == context.chunk_rows ? std::min(context.padding_rows, count_) : 0;
    // Split over the threads: a row of a panel-packed table reads one cache line per element.
    context.thread_pool->parallel_for(count_ - first, kMinRowsPerChunk, [&](int64_t begin, int64_t end) {
      for (int64_t i = first + begin; i < first + end; ++i) {
        widen_matrix_row(table, table_, load_index(ids, ids_dtype_, i), out + i * width_);
      }
    });
    return ok_status();
  }

 private:
  MatrixRef table_;
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
  STATICLM_ASSIGN_OR_RETURN(MatrixRef matrix, matrix_input(signature, 0, table, "table"));
  if (!is_index_dtype(ids.dtype)) {
    return invalid_argument("embedding: expected a [vocab, width] table and i32 or i64 ids, found ",
                            dtype_name(table.dtype), shape_string(table.shape), " and ", dtype_name(ids.dtype),
                            shape_string(ids.shape));
  }
  return std::make_unique<EmbeddingKernel>(std::move(matrix), ids.dtype, num_elements(ids.shape));
}

}  // namespace staticlm::portable
