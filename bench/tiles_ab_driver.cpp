// SPDX-License-Identifier: Apache-2.0
// The program bench/tiles_ab.py builds around two copies of the float linear tiles (a git
// revision's linear_tiles.h as linear_base, the working tree's as linear_head): per shape it
// calls each on the same operands in alternate slices of time on one thread and prints the
// median of the per-slice speed ratios with its quartiles. On a shared host whose speed swings
// between runs minutes apart, two binaries timed run against run cannot show a change of a few
// percent; alternating slices of one process can.
//
//   tiles_ab DTYPE ROUNDS SLICE_MS COPIES MxKxN...
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cpu {
void linear_base(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_head(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
}  // namespace staticlm::cpu

namespace {

using staticlm::DType;
using staticlm::PanelLayout;
using staticlm::cpu::LinearOperands;
using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t rows = 0, inner = 0, columns = 0;
};

bool parse_shape(const char* text, Shape& shape) {
  long long m = 0, k = 0, n = 0;
  char tail = 0;
  if (std::sscanf(text, "%lldx%lldx%lld%c", &m, &k, &n, &tail) != 3 || m < 1 || k < 1 || n < 1) {
    return false;
  }
  shape = {m, k, n};
  return true;
}

bool parse_dtype(const std::string& text, DType& dtype) {
  if (text == "f32") {
    dtype = DType::kF32;
  } else if (text == "f16") {
    dtype = DType::kF16;
  } else if (text == "bf16") {
    dtype = DType::kBF16;
  } else {
    return false;
  }
  return true;
}

// Seconds per call of `fn` over `slice` seconds of calls, cycling through the weight copies.
double seconds_per_call(void (*fn)(const LinearOperands&, int64_t, int64_t, float*), LinearOperands& op,
                        const std::vector<const void*>& copies, size_t& next, double slice, float* scratch) {
  const Clock::time_point start = Clock::now();
  int64_t calls = 0;
  double elapsed = 0.0;
  do {
    op.weight = copies[next];
    next = (next + 1) % copies.size();
    fn(op, 0, op.columns, scratch);
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < slice);
  return elapsed / static_cast<double>(calls);
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5)];
}

void run(const Shape& shape, DType dtype, int rounds, double slice, int copy_count) {
  const PanelLayout layout = PanelLayout::of(shape.columns, shape.inner, dtype);
  const size_t element_bytes = dtype == DType::kF32 ? 4 : 2;
  const size_t copy_bytes = static_cast<size_t>(layout.elements()) * element_bytes;
  // Small weights (0.01 in each format): the values do not change the speed.
  std::vector<uint8_t> weights(copy_bytes * static_cast<size_t>(copy_count));
  if (dtype == DType::kF32) {
    const float value = 0.01f;
    for (size_t i = 0; i < weights.size(); i += 4) {
      std::memcpy(weights.data() + i, &value, 4);
    }
  } else {
    const uint16_t bits = dtype == DType::kF16 ? 0x211f : 0x3c24;
    for (size_t i = 0; i < weights.size(); i += 2) {
      std::memcpy(weights.data() + i, &bits, 2);
    }
  }
  std::vector<const void*> copies;
  for (int c = 0; c < copy_count; ++c) {
    copies.push_back(weights.data() + static_cast<size_t>(c) * copy_bytes);
  }
  std::vector<float> x(static_cast<size_t>(shape.rows * shape.inner), 0.5f);
  std::vector<float> out(static_cast<size_t>(shape.rows * shape.columns));
  std::vector<float> scratch(staticlm::cpu::kLinearScratchFloats + 16);
  LinearOperands op;
  op.x = x.data();
  op.out = out.data();
  op.rows = shape.rows;
  op.inner = shape.inner;
  op.columns = shape.columns;
  op.panel_elements = layout.panel_elements();
  op.weight_dtype = dtype;

  std::vector<double> ratios;
  double base_total = 0.0;
  double head_total = 0.0;
  size_t next = 0;
  // A slice of each first, untimed: the first calls fault in the output and the caches.
  seconds_per_call(staticlm::cpu::linear_base, op, copies, next, slice, scratch.data());
  seconds_per_call(staticlm::cpu::linear_head, op, copies, next, slice, scratch.data());
  for (int r = 0; r < rounds; ++r) {
    // Each round runs both, in alternating order, so neither always follows the other.
    double base = 0.0;
    double head = 0.0;
    if (r % 2 == 0) {
      base = seconds_per_call(staticlm::cpu::linear_base, op, copies, next, slice, scratch.data());
      head = seconds_per_call(staticlm::cpu::linear_head, op, copies, next, slice, scratch.data());
    } else {
      head = seconds_per_call(staticlm::cpu::linear_head, op, copies, next, slice, scratch.data());
      base = seconds_per_call(staticlm::cpu::linear_base, op, copies, next, slice, scratch.data());
    }
    ratios.push_back(base / head);
    base_total += base;
    head_total += head;
  }
  const double flops = 2.0 * static_cast<double>(shape.rows * shape.inner * shape.columns);
  std::printf("%lldx%lldx%lld: head / base speed %.3f (quartiles %.3f-%.3f); GFLOP/s base %.1f, head %.1f\n",
              static_cast<long long>(shape.rows), static_cast<long long>(shape.inner),
              static_cast<long long>(shape.columns), quantile(ratios, 0.5), quantile(ratios, 0.25),
              quantile(ratios, 0.75), flops * rounds / base_total / 1e9, flops * rounds / head_total / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  DType dtype = DType::kF32;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 0;
  const double slice_ms = argc > 3 ? std::atof(argv[3]) : 0.0;
  const int copies = argc > 4 ? std::atoi(argv[4]) : 0;
  if (argc < 6 || !parse_dtype(argv[1], dtype) || rounds < 1 || slice_ms <= 0.0 || copies < 1) {
    std::fprintf(stderr, "usage: tiles_ab f32|f16|bf16 ROUNDS SLICE_MS COPIES MxKxN...\n");
    return 2;
  }
  std::vector<Shape> shapes;
  for (int i = 5; i < argc; ++i) {
    Shape shape;
    if (!parse_shape(argv[i], shape)) {
      std::fprintf(stderr, "tiles_ab: shape '%s': expected MxKxN with positive M, K and N\n", argv[i]);
      return 2;
    }
    shapes.push_back(shape);
  }
  for (const Shape& shape : shapes) {
    try {
      run(shape, dtype, rounds, slice_ms / 1e3, copies);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "tiles_ab: shape %lldx%lldx%lld with %d weight copies does not fit in memory\n",
                   static_cast<long long>(shape.rows), static_cast<long long>(shape.inner),
                   static_cast<long long>(shape.columns), copies);
      return 1;
    }
  }
  return 0;
}
