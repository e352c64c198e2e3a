// SPDX-License-Identifier: Apache-2.0
// The cpu attention and windowed_attention: the portable kernels' semantics (docs/ops.md: causal
// by position, a window of slots where one is given, scores soft-capped where a cap is, grouped
// query heads, zeros for padding rows, OutOfRange for a position past the cache; a left-padded
// chunk's padding rows that KernelContext names are left unwritten instead), run per GQA
// group: one task scores every query head of a kv head's group against one read of its K and V
// rows (attention_rows.h). When a call has too few groups to keep the threads busy (a decode
// row), long caches are split too: each task covers a run of slots and keeps its softmax
// unnormalized with its (max, sum), and the runs are merged afterwards, as flash-decoding does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::cpu {
namespace {

struct Shape4 {
  int64_t batch, seq, query_heads, kv_heads, cache_len, head_dim;
};

// Slots a run should hold at least: below it, the merge costs more than the split saves.
constexpr int64_t kMinSlotsPerRun = 128;
// Tasks per thread that balance uneven work.
constexpr int64_t kTasksPerThread = 4;

// Which slots a query attends, and how its scores are bent: windowed_attention's attributes
// (window 0 and softcap 0 for plain attention).
struct ScoreRule {
  float scale = 1.0f;
  int64_t window = 0;
  float softcap = 0.0f;

  // The first slot a query at `position` attends (0 for a padding row).
  int64_t first_slot(int64_t position) const { return window > 0 && position >= window ? position - window + 1 : 0; }
};

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(AttentionRowFns fns, const Shape4& shape, const ScoreRule& rule, DType cache_dtype,
                  DType positions_dtype)
      : fns_(fns), shape_(shape), rule_(rule), cache_dtype_(cache_dtype), positions_dtype_(positions_dtype) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const Shape4& sh = shape_;
    int64_t max_slots = 0;
    for (int64_t s = 0; s < sh.seq; ++s) {
      const int64_t position = portable::load_index(inputs[3].raw(), positions_dtype_, s);
      if (position >= sh.cache_len) {
        return out_of_range("attention: position ", position, " at row ", s, " is outside the cache length ",
                            sh.cache_len);
      }
      max_slots = std::max(max_slots, position + 1 - rule_.first_slot(position));
    }
    Call call{inputs[0].data<float>(), static_cast<const uint8_t*>(inputs[1].raw()),
              static_cast<const uint8_t*>(inputs[2].raw()), inputs[3].raw(), outputs[0].data<float>()};
    const int64_t groups = sh.batch * sh.seq * sh.kv_heads;
    // The chunk's padding rows are not computed (their outputs are unspecified, docs/ops.md): a
    // short prompt in a 128-row chunk spent more on them than on its own rows.
    const int64_t skipped = sh.batch == 1 && sh.seq == context.chunk_rows ? std::min(context.padding_rows, sh.seq) : 0;
    const int64_t wanted = kTasksPerThread * context.thread_pool->num_threads();
    // Groups that do not divide among the threads stay whole on a short cache: splitting SmolLM's
    // 3 kv heads into 6 runs on two threads is slower at 128 slots (attention_bench decode_*), the
    // merge on the calling thread costing more than the imbalance.
    const int64_t runs = groups >= wanted || context.thread_pool->num_threads() == 1
                             ? 1
                             : std::clamp<int64_t>(max_slots / kMinSlotsPerRun, 1, (wanted + groups - 1) / groups);
    if (runs == 1 && sh.seq > 1 && fns_.tile != nullptr) {
      run_tiles(call, skipped, context);
      return ok_status();
    }
    if (runs == 1) {
      // Last rows first: a row attends to every slot up to its position, so in a chunk the work
      // grows row by row, and ranges claimed in order would leave the heaviest for the end, where
      // one thread runs it while the other waits.
      context.thread_pool->parallel_for(groups - skipped * sh.kv_heads, 1, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          run_group(call, groups - 1 - task, 0, 1, nullptr);
        }
      });
      return ok_status();
    }
    // Per (group, run): the unnormalized sums of each head, then its max and sum of exps.
    const int64_t group = sh.query_heads / sh.kv_heads;
    const int64_t per_run = group * (sh.head_dim + 2);
    // The calling thread's buffer, passed by pointer: named inside the lambda, a thread_local
    // would be each worker's own.
    thread_local std::vector<float> partial_buffer;
    partial_buffer.resize(static_cast<size_t>(groups * runs * per_run));
    float* partial = partial_buffer.data();
    context.thread_pool->parallel_for(groups * runs, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        run_group(call, task / runs, task % runs, runs, partial + task * per_run);
      }
    });
    for (int64_t g = 0; g < groups; ++g) {
      merge_runs(partial + g * runs * per_run, runs, group, call.out + g * group * sh.head_dim);
    }
    return ok_status();
  }

 private:
  struct Call {
    const float* q;
    const uint8_t* k_cache;
    const uint8_t* v_cache;
    const void* positions;
    float* out;
  };

  // A chunk's rows from `first_row` on as tiles: per batch and kv head, its query vectors (row by
  // row, the group's heads within a row) in tiles of fns_.tile_queries, heaviest (last rows) first.
  // A tile is handed the cache rows from the first slot any of its queries attends.
  void run_tiles(const Call& call, int64_t first_row, const KernelContext& context) const {
    const Shape4& sh = shape_;
    const int64_t group = sh.query_heads / sh.kv_heads;
    const int64_t per_tile = std::min<int64_t>(fns_.tile_queries, kMaxTileQueries);
    const int64_t first = first_row * group;
    const int64_t tiles_per_head = ((sh.seq - first_row) * group + per_tile - 1) / per_tile;
    const int64_t tasks = sh.batch * sh.kv_heads * tiles_per_head;
    const auto row_bytes = static_cast<size_t>(portable::cache_row_bytes(cache_dtype_, sh.head_dim));
    context.thread_pool->parallel_for(tasks, 1, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> scratch;  // each thread's own
      for (int64_t task = begin; task < end; ++task) {
        const int64_t index = tasks - 1 - task;
        const int64_t tile_index = index % tiles_per_head;
        const int64_t kv = index / tiles_per_head % sh.kv_heads;
        const int64_t b = index / (tiles_per_head * sh.kv_heads);
        AttentionTile tile;
        tile.softcap = rule_.softcap;
        int64_t base = std::numeric_limits<int64_t>::max();
        for (int64_t v = first + tile_index * per_tile;
             v < std::min(sh.seq * group, first + (tile_index + 1) * per_tile); ++v) {
          const int64_t s = v / group;
          const int64_t head = (b * sh.seq + s) * sh.query_heads + kv * group + v % group;
          const int64_t position = portable::load_index(call.positions, positions_dtype_, s);
          tile.q[tile.count] = call.q + head * sh.head_dim;
          tile.out[tile.count] = call.out + head * sh.head_dim;
          tile.slots[tile.count] = std::max<int64_t>(position + 1, 0);  // any negative position pads
          tile.first[tile.count] = rule_.first_slot(position);
          if (position >= 0) {
            base = std::min(base, tile.first[tile.count]);
          }
          ++tile.count;
        }
        base = base == std::numeric_limits<int64_t>::max() ? 0 : base;
        int64_t slots = 0;
        for (int v = 0; v < tile.count; ++v) {
          if (tile.slots[v] > 0) {
            tile.slots[v] -= base;
            tile.first[v] -= base;
            slots = std::max(slots, tile.slots[v]);
          }
        }
        scratch.resize(static_cast<size_t>(attention_tile_scratch(slots, sh.head_dim)));
        const size_t offset = static_cast<size_t>((b * sh.kv_heads + kv) * sh.cache_len + base) * row_bytes;
        fns_.tile(tile, call.k_cache + offset, call.v_cache + offset, cache_dtype_, sh.head_dim, rule_.scale,
                  scratch.data());
      }
    });
  }

  // Run `run` of `runs` of the slots of group `task` ([batch, seq, kv_heads] in row-major order:
  // its query heads are consecutive in q and out). With `partial` null (one run) it writes the
  // attention output; otherwise it writes the run's unnormalized sums to partial[g * head_dim]
  // and its (max, sum) to partial[group * head_dim + 2 * g].
  void run_group(const Call& call, int64_t task, int64_t run, int64_t runs, float* partial) const {
    const Shape4& sh = shape_;
    const int64_t group = sh.query_heads / sh.kv_heads;
    const int64_t kv = task % sh.kv_heads;
    const int64_t s = (task / sh.kv_heads) % sh.seq;
    const int64_t b = task / (sh.kv_heads * sh.seq);
    const int64_t head0 = (b * sh.seq + s) * sh.query_heads + kv * group;
    float* out = partial != nullptr ? partial : call.out + head0 * sh.head_dim;
    float* stats = partial != nullptr ? partial + group * sh.head_dim : nullptr;
    const int64_t position = portable::load_index(call.positions, positions_dtype_, s);
    const int64_t start = rule_.first_slot(position);
    const int64_t slots = position + 1 - start;  // 0 for a padding row
    const int64_t first = start + slots * run / runs;
    const int64_t count = start + slots * (run + 1) / runs - first;
    if (count <= 0) {
      std::fill(out, out + group * sh.head_dim, 0.0f);
      for (int64_t g = 0; stats != nullptr && g < group; ++g) {
        stats[2 * g] = -std::numeric_limits<float>::infinity();
        stats[2 * g + 1] = 0.0f;
      }
      return;
    }
    const size_t offset = static_cast<size_t>((b * sh.kv_heads + kv) * sh.cache_len + first) *
                          static_cast<size_t>(portable::cache_row_bytes(cache_dtype_, sh.head_dim));
    thread_local std::vector<float> weights;
    weights.resize(static_cast<size_t>(group * count));
    fns_.scores(call.q + head0 * sh.head_dim, group, call.k_cache + offset, cache_dtype_, count, sh.head_dim,
                rule_.scale, weights.data(), count);
    if (rule_.softcap > 0.0f) {
      if (fns_.softcap != nullptr) {
        fns_.softcap(weights.data(), group * count, rule_.softcap);
      } else {
        for (float& score : weights) {
          score = rule_.softcap * std::tanh(score / rule_.softcap);
        }
      }
    }
    fns_.softmax(weights.data(), group, count, count, stats);
    fns_.weighted_sum(weights.data(), count, group, call.v_cache + offset, cache_dtype_, count, sh.head_dim, out);
  }

  // out[g] = sum_r e^(max_r - M) * sums_r[g] / sum_r e^(max_r - M) * total_r, M the largest max.
  void merge_runs(const float* partial, int64_t runs, int64_t group, float* out) const {
    const int64_t dim = shape_.head_dim;
    const int64_t per_run = group * (dim + 2);
    for (int64_t g = 0; g < group; ++g) {
      float top = -std::numeric_limits<float>::infinity();
      for (int64_t r = 0; r < runs; ++r) {
        top = std::max(top, partial[r * per_run + group * dim + 2 * g]);
      }
      float* o = out + g * dim;
      std::fill(o, o + dim, 0.0f);
      if (top == -std::numeric_limits<float>::infinity()) {
        continue;  // a padding row: no slot at all
      }
      float total = 0.0f;
      for (int64_t r = 0; r < runs; ++r) {
        const float* run = partial + r * per_run;
        const float factor = std::exp(run[group * dim + 2 * g] - top);
        total += factor * run[group * dim + 2 * g + 1];
        for (int64_t d = 0; d < dim; ++d) {
          o[d] += factor * run[g * dim + d];
        }
      }
      const float inverse = 1.0f / total;
      for (int64_t d = 0; d < dim; ++d) {
        o[d] *= inverse;
      }
    }
  }

  AttentionRowFns fns_;
  Shape4 shape_;
  ScoreRule rule_;
  DType cache_dtype_;
  DType positions_dtype_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_attention_kernel(const KernelSignature& signature, AttentionRowFns fns) {
  // The portable factories check the signature and the attributes; this one takes what they take.
  const bool windowed = signature.op == OpKind::kWindowedAttention;
  STATICLM_RETURN_IF_ERROR(
      (windowed ? portable::make_windowed_attention_kernel(signature) : portable::make_attention_kernel(signature))
          .status());
  const TensorSpec& q = *signature.inputs[0];
  const TensorSpec& k = *signature.inputs[1];
  const Shape4 shape{q.shape[0], q.shape[1], q.shape[2], k.shape[1], k.shape[2], k.shape[3]};
  const double default_scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, shape.head_dim)));
  ScoreRule rule;
  STATICLM_ASSIGN_OR_RETURN(double scale, signature.attributes.get_float_or("scale", default_scale));
  rule.scale = static_cast<float>(scale);
  if (windowed) {
    STATICLM_ASSIGN_OR_RETURN(rule.window, signature.attributes.get_int_or("window", 0));
    STATICLM_ASSIGN_OR_RETURN(double softcap, signature.attributes.get_float_or("softcap", 0.0));
    rule.softcap = static_cast<float>(softcap);
  }
  return std::make_unique<AttentionKernel>(fns, shape, rule, k.dtype, signature.inputs[3]->dtype);
}

}  // namespace staticlm::cpu
