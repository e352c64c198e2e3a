// SPDX-License-Identifier: Apache-2.0
// qkv_rope_cache on the cpu backend: the q / k / v projections split over the pool one head at a
// time (one range, one barrier), and each head, while its columns are in cache, normalized and
// rotated (q and k; the norm where the node has one) and written into its cache rows (k and v); a single row (decode)
// splits panels instead and finishes its heads after the barrier (run_row). Queries are computed in the output; a k or
// v head goes through the thread's buffer into the cache's dtype. The rope angles are the portable kernel's
// (rope_angles, in double), computed once per set of positions on the calling thread and reused by the layers after it;
// the rotation is the cpu rope's loop.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "staticlm/backends/cpu/kernels/linear_parts.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/ops/rope.h"

namespace staticlm::cpu {
namespace {

namespace io = qkv_rope_cache;

enum Projection { kQ = 0, kK = 1, kV = 2 };

// cos and sin of every row's position: rows x half each. Every layer of a forward pass rotates by
// the same positions and (as a rule) the same frequencies, so the calling thread keeps the last
// table and recomputes it only when either differs.
class AngleTable {
 public:
  // The table for `positions` (the call's rows, each -1 or a position) under `inv_freq`.
  const AngleTable& fill(std::span<const double> inv_freq, std::span<const int64_t> positions) {
    if (std::equal(inv_freq.begin(), inv_freq.end(), inv_freq_.begin(), inv_freq_.end()) &&
        std::equal(positions.begin(), positions.end(), positions_.begin(), positions_.end())) {
      return *this;
    }
    inv_freq_.assign(inv_freq.begin(), inv_freq.end());
    positions_.assign(positions.begin(), positions.end());
    const size_t half = inv_freq.size();
    cos_.resize(positions.size() * half);
    sin_.resize(positions.size() * half);
    for (size_t r = 0; r < positions.size(); ++r) {
      if (positions[r] >= 0) {
        rope_angles(inv_freq, positions[r], cos_.data() + r * half, sin_.data() + r * half);
      }
    }
    return *this;
  }

  const float* cos(int64_t row) const { return cos_.data() + static_cast<size_t>(row) * inv_freq_.size(); }
  const float* sin(int64_t row) const { return sin_.data() + static_cast<size_t>(row) * inv_freq_.size(); }

 private:
  std::vector<double> inv_freq_;
  std::vector<int64_t> positions_;
  std::vector<float> cos_;
  std::vector<float> sin_;
};

using RotateHalfFn = void (*)(const float* x, const float* cos, const float* sin, float* out, int64_t half);

struct CacheShape {
  int64_t kv_heads = 0;
  int64_t cache_len = 0;
  int64_t head_dim = 0;
  DType dtype = DType::kF32;
};

// The q and k norms' weights as f32 (null where the node has none), and their epsilon.
struct HeadNorms {
  const float* weight[2] = {nullptr, nullptr};
  float eps = 0.0f;
};

// What a node's q / k norms need at creation: where their weights are, and their epsilon.
struct NormInputs {
  size_t first_input = 0;  // 0: the node has no norms
  DType dtype = DType::kF32;
  float eps = 0.0f;
};

class QkvRopeCacheKernel final : public Kernel {
 public:
  QkvRopeCacheKernel(LinearColumnsFn columns_fn, std::array<Part, 3> parts, const LinearEntryPoints& entry_points,
                     RotateHalfFn rotate_half, std::vector<double> inv_freq, DType positions_dtype, CacheShape cache,
                     NormInputs norms)
      : columns_fn_(columns_fn),
        parts_(parts),
        entry_points_(entry_points),
        rotate_half_(rotate_half),
        inv_freq_(std::move(inv_freq)),
        positions_dtype_(positions_dtype),
        cache_(cache),
        norms_(norms) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const CallRows call = call_rows(inputs[io::kX].data<float>(), parts_[kQ].shape, context, entry_points_);
    if (call.rows <= 0) {
      return ok_status();
    }
    // Every position is checked before a thread writes a cache row, so a bad one leaves both
    // caches as they were. The calling thread's buffers; the workers reach them through these
    // names (a thread_local named inside the range's body would be the worker's own).
    thread_local std::vector<int64_t> positions_buffer;
    std::vector<int64_t>& positions = positions_buffer;
    positions.resize(static_cast<size_t>(call.rows));
    for (int64_t r = 0; r < call.rows; ++r) {
      const int64_t s = call.padding + r;  // a batch of one: row r of the call is chunk row s
      const int64_t position = portable::load_index(inputs[io::kPositions].raw(), positions_dtype_, s);
      if (position >= cache_.cache_len) {
        return out_of_range("qkv_rope_cache: position ", position, " at row ", s, " is outside the cache length ",
                            cache_.cache_len);
      }
      positions[static_cast<size_t>(r)] = position;
    }
    thread_local AngleTable angles;
    const AngleTable& table = angles.fill(inv_freq_, positions);
    // The norms' weights widened once per call (2 x head_dim values), on the calling thread.
    thread_local std::vector<float> norm_weights_buffer;
    std::vector<float>& norm_weights = norm_weights_buffer;
    HeadNorms norms;
    if (norms_.first_input != 0) {
      const int64_t dim = cache_.head_dim;
      norm_weights.resize(static_cast<size_t>(2 * dim));
      for (size_t n = 0; n < 2; ++n) {
        portable::widen_to_f32(inputs[norms_.first_input + n].raw(), norms_.dtype, 0, dim,
                               norm_weights.data() + n * static_cast<size_t>(dim));
        norms.weight[n] = norm_weights.data() + n * static_cast<size_t>(dim);
      }
      norms.eps = norms_.eps;
    }
    const std::span<const int64_t> row_positions(positions);
    std::array<LinearOperands, 3> ops;
    for (size_t p = 0; p < 3; ++p) {
      // k and v are bound to the queries too, for their shapes: their heads go to the buffer.
      ops[p] = bind_part(parts_[p], call, inputs, outputs[io::kQueries]);
    }
    const int64_t q_heads = ops[kQ].columns / cache_.head_dim;
    const int64_t heads = q_heads + 2 * cache_.kv_heads;
    void* caches[3] = {nullptr, outputs[io::kKeys].raw(), outputs[io::kValues].raw()};
    if (call.rows == 1) {
      run_row(ops, q_heads, row_positions[0], table, norms, caches, context);
      return ok_status();
    }
    // Heads that do not divide among the threads are cut into slices of rows, as the linear
    // kernels cut their items (SmolLM: 15 heads, 8 / 7 over two threads).
    const int threads = context.thread_pool->num_threads();
    const int64_t slices =
        call.x_quantized == nullptr ? row_slices(heads, call.rows, threads, entry_points_.float_block_rows) : 1;
    const int64_t items = heads * slices;
    context.thread_pool->parallel_for(
        items, items_per_range(items, call.rows, call.rows / slices * ops[kQ].inner * cache_.head_dim, threads),
        [&](int64_t begin, int64_t end) {
          thread_local std::vector<float> storage;
          storage.resize(static_cast<size_t>(call.rows * cache_.head_dim + kLineFloats));
          const auto address = reinterpret_cast<uintptr_t>(storage.data());
          float* buffer = storage.data() + ((kLineBytes - address % kLineBytes) % kLineBytes) / sizeof(float);
          for (int64_t item = begin; item < end; ++item) {
            const int64_t head = item / slices;
            const auto [p, h] = projection_head(head, q_heads);
            const int64_t first = slice_start(call.rows, slices, item % slices, call.block_rows);
            const int64_t count = slice_start(call.rows, slices, item % slices + 1, call.block_rows) - first;
            run_head(row_span(ops[static_cast<size_t>(p)], first, count), p, h, first, row_positions, table, norms,
                     buffer, caches[p]);
          }
        });
    return ok_status();
  }

 private:
  // Head `head` of the q heads, then the k heads, then the v heads: its projection and its index
  // within it.
  std::pair<Projection, int64_t> projection_head(int64_t head, int64_t q_heads) const {
    if (head < q_heads) {
      return {kQ, head};
    }
    return {head < q_heads + cache_.kv_heads ? kK : kV, (head - q_heads) % cache_.kv_heads};
  }

  // One row (decode): the three projections' panels split evenly over the threads as one range
  // each, every projection's columns one stream (k and v into the calling thread's buffer); then,
  // on the calling thread, the biases, the rotations and the two cache rows, which are a few
  // hundred values. Heads as items left one thread a head more than the other (SmolLM: 15
  // heads, 8 / 7) and restarted the weight streams at every head. A panel's sums do not depend on
  // the split, so the values are those of the per-head path.
  void run_row(std::array<LinearOperands, 3>& ops, int64_t q_heads, int64_t position, const AngleTable& table,
               const HeadNorms& norms, void* const* caches, const KernelContext& context) const {
    const int64_t dim = cache_.head_dim;
    const int64_t kv_columns = cache_.kv_heads * dim;
    thread_local std::vector<float> kv_buffer;
    kv_buffer.resize(static_cast<size_t>(2 * kv_columns));
    ops[kK].out = kv_buffer.data();
    ops[kV].out = kv_buffer.data() + kv_columns;
    std::array<int64_t, 4> first_panel{};
    for (size_t p = 0; p < 3; ++p) {
      first_panel[p + 1] = first_panel[p] + items_of(ops[p].columns, kPanelColumns);
    }
    const int64_t panels = first_panel[3];
    context.thread_pool->parallel_for(
        panels, items_per_range(panels, 1, ops[kQ].inner * kPanelColumns, context.thread_pool->num_threads()),
        [&](int64_t begin, int64_t end) {
          for (size_t p = 0; p < 3; ++p) {
            const int64_t from = std::max(begin, first_panel[p]);
            const int64_t to = std::min(end, first_panel[p + 1]);
            if (from < to) {
              columns_fn_(ops[p], (from - first_panel[p]) * kPanelColumns,
                          std::min((to - first_panel[p]) * kPanelColumns, ops[p].columns), thread_scratch());
            }
          }
        });
    for (int64_t head = 0; head < q_heads + 2 * cache_.kv_heads; ++head) {
      const auto [p, h] = projection_head(head, q_heads);
      const LinearOperands& op = ops[static_cast<size_t>(p)];
      finish_row(op, p, h, op.out + h * dim, position, table, 0, norms, caches[p]);
    }
  }

  // A computed row of head h: its bias, its norm and rotation (q and k) and its cache row (k and v).
  void finish_row(const LinearOperands& op, Projection p, int64_t h, float* row, int64_t position,
                  const AngleTable& table, int64_t table_row, const HeadNorms& norms, void* cache) const {
    const int64_t dim = cache_.head_dim;
    if (op.bias != nullptr) {
      for (int64_t d = 0; d < dim; ++d) {
        row[d] += portable::load_float(op.bias, op.bias_dtype, h * dim + d);
      }
    }
    // A row at a negative position is normalized as the unfused graph normalizes it; rope leaves
    // it as it is, and no cache row is written.
    if (p != kV && norms.weight[p] != nullptr) {
      entry_points_.rms_norm(row, norms.weight[p], row, dim, norms.eps);
    }
    if (position < 0) {
      return;
    }
    if (p != kV) {
      rotate_half_(row, table.cos(table_row), table.sin(table_row), row, dim / 2);
    }
    if (p != kQ) {
      write_cache_row(row, cache, h, position);
    }
  }

  // Head h of projection p over op's rows, which are the call's from `first_row` on.
  void run_head(const LinearOperands& op, Projection p, int64_t h, int64_t first_row,
                std::span<const int64_t> positions, const AngleTable& table, const HeadNorms& norms, float* buffer,
                void* cache) const {
    const int64_t dim = cache_.head_dim;
    const int64_t first = h * dim;
    // Queries in place in the output ([rows, q columns]); a k or v head as [rows, dim].
    float* out = p == kQ ? op.out + first : buffer;
    const int64_t stride = p == kQ ? op.columns : dim;
    if (p == kQ) {
      columns_fn_(op, first, first + dim, thread_scratch());
    } else {
      columns_fn_(column_span(op, first, dim, buffer), 0, dim, thread_scratch());
    }
    for (int64_t r = 0; r < op.rows; ++r) {
      const int64_t row = first_row + r;
      finish_row(op, p, h, out + r * stride, positions[static_cast<size_t>(row)], table, row, norms, cache);
    }
  }

  void write_cache_row(const float* row, void* cache, int64_t head, int64_t position) const {
    portable::store_cache_row(row, cache_.dtype, cache, head * cache_.cache_len + position, cache_.head_dim);
  }

  LinearColumnsFn columns_fn_;
  std::array<Part, 3> parts_;
  LinearEntryPoints entry_points_;
  RotateHalfFn rotate_half_;
  std::vector<double> inv_freq_;
  DType positions_dtype_;
  CacheShape cache_;
  NormInputs norms_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_qkv_rope_cache_kernel(const KernelSignature& signature,
                                                           LinearEntryPoints entry_points) {
  // The portable kernel's checks first: the same signatures are refused with the same messages.
  STATICLM_RETURN_IF_ERROR(portable::make_qkv_rope_cache_kernel(signature).status());
  if (entry_points.rotate_half == nullptr) {
    return unimplemented("qkv_rope_cache: this entry has no rope loop");
  }
  const TensorSpec& x = *signature.inputs[io::kX];
  const TensorSpec& cache = *signature.inputs[io::kKeyCache];
  const int64_t head_dim = cache.shape[3];
  if (x.shape[0] != 1) {
    return unimplemented("qkv_rope_cache: the cpu kernel takes a batch of 1, found ", x.shape[0]);
  }
  if (head_dim % kPanelColumns != 0) {
    return unimplemented("qkv_rope_cache: the cpu kernel takes heads of whole ", kPanelColumns,
                         "-column panels, found head_dim ", head_dim);
  }
  STATICLM_ASSIGN_OR_RETURN(RopeParams params, RopeParams::from_attributes(signature.attributes, head_dim));
  std::vector<double> inv_freq = params.inverse_frequencies();
  if (static_cast<int64_t>(2 * inv_freq.size()) != head_dim) {
    return unimplemented("qkv_rope_cache: the cpu kernel rotates the whole head (rotary_dim ", 2 * inv_freq.size(),
                         " of head_dim ", head_dim, ")");
  }
  const size_t count = signature.inputs.size();
  const bool biased = io::has_biases(count);
  NormInputs norms;
  if (io::has_norms(count)) {
    if (entry_points.rms_norm == nullptr) {
      return unimplemented("qkv_rope_cache: this entry has no norm loop");
    }
    norms.first_input = io::q_norm_input(count);
    norms.dtype = signature.inputs[norms.first_input]->dtype;
    if (signature.inputs[norms.first_input + 1]->dtype != norms.dtype) {
      return unimplemented("qkv_rope_cache: the cpu kernel takes q and k norms of one dtype");
    }
    STATICLM_ASSIGN_OR_RETURN(double eps, signature.attributes.get_float("qk_norm_eps"));
    norms.eps = static_cast<float>(eps);
  }
  std::array<Part, 3> parts;
  const char* const roles[3] = {"q", "k", "v"};
  for (size_t p = 0; p < 3; ++p) {
    const TensorSpec* bias = biased ? signature.inputs[io::kQBias + p] : nullptr;
    auto part = make_part(x, *signature.inputs[io::kQWeight + p], bias, signature.attributes, static_cast<int64_t>(p),
                          entry_points);
    if (!part.ok()) {
      return part.status().with_context(str_cat("qkv_rope_cache ", roles[p]));
    }
    part->weight_input = io::kQWeight + p;
    part->bias_input = biased ? static_cast<int>(io::kQBias + p) : -1;
    parts[p] = *part;
  }
  STATICLM_RETURN_IF_ERROR(check_same_format({parts.begin(), parts.end()}, "qkv_rope_cache"));
  const CacheShape shape{cache.shape[1], cache.shape[2], head_dim, cache.dtype};
  return std::unique_ptr<Kernel>(std::make_unique<QkvRopeCacheKernel>(
      columns_fn(parts[kQ], entry_points), parts, entry_points, entry_points.rotate_half, std::move(inv_freq),
      signature.inputs[io::kPositions]->dtype, shape, norms));
}

}  // namespace staticlm::cpu
