// SPDX-License-Identifier: Apache-2.0
// elementwise_rows.h's loops written once over an ISA traits type V; included by each ISA file
// after its target pragma and traits header, inside no namespace. Declarations only above it.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/elementwise_rows.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::elementwise {

// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (in two parts for precision), and
// exp(r) on [-ln2/2, ln2/2] by Cephes' degree-5 polynomial. x is clamped so 2^n stays normal.
template <class V>
typename V::Reg exp(typename V::Reg x) {
  x = V::min(V::max(x, V::set1(-87.3f)), V::set1(88.3f));
  const typename V::Reg n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  typename V::Reg r = V::sub(x, V::mul(n, V::set1(0.693359375f)));
  r = V::sub(r, V::mul(n, V::set1(-2.12194440e-4f)));
  typename V::Reg p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  const typename V::Reg r2 = V::mul(r, r);
  const typename V::Reg y = V::add(V::fma(p, r2, r), V::set1(1.0f));
  return V::mul(y, V::exp2_int(n));
}

template <class V>
typename V::Reg swiglu_reg(typename V::Reg gate, typename V::Reg up) {
  const typename V::Reg e = exp<V>(V::sub(V::zero(), gate));
  return V::mul(V::div(gate, V::add(V::set1(1.0f), e)), up);
}

// gelu_tanh(gate) * up (GeGLU): 0.5 x (1 + tanh(u)) is x / (1 + exp(-2u)), u = sqrt(2 / pi) (x +
// 0.044715 x^3), so it is swiglu's form with the sigmoid's argument 2u.
template <class V>
typename V::Reg geglu_reg(typename V::Reg gate, typename V::Reg up) {
  const typename V::Reg cubic = V::mul(gate, V::fma(V::mul(gate, gate), V::set1(0.044715f), V::set1(1.0f)));
  const typename V::Reg e = exp<V>(V::mul(cubic, V::set1(-1.5957691216057308f)));  // -2 sqrt(2 / pi)
  return V::mul(V::div(gate, V::add(V::set1(1.0f), e)), up);
}

// out[i] = Gate(gate[i], up[i]) for a gated activation's register form.
template <class V, typename V::Reg (*Gate)(typename V::Reg, typename V::Reg)>
void gated(const float* gate, const float* up, float* out, int64_t count) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    V::store(out + i, Gate(V::load(tiles::F32{}, gate + i), V::load(tiles::F32{}, up + i)));
  }
  if (i < count) {
    const int rest = static_cast<int>(count - i);
    V::store_tail(out + i, Gate(V::load_tail(tiles::F32{}, gate + i, rest), V::load_tail(tiles::F32{}, up + i, rest)),
                  rest);
  }
}

template <class V>
void swiglu(const float* gate, const float* up, float* out, int64_t count) {
  gated<V, swiglu_reg<V>>(gate, up, out, count);
}

template <class V>
void geglu(const float* gate, const float* up, float* out, int64_t count) {
  gated<V, geglu_reg<V>>(gate, up, out, count);
}

template <class V>
float exp_shifted(float* x, int64_t count, float shift) {
  const typename V::Reg s = V::set1(shift);
  typename V::Reg total = V::zero();
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    const typename V::Reg e = exp<V>(V::sub(V::load(tiles::F32{}, x + i), s));
    V::store(x + i, e);
    total = V::add(total, e);
  }
  float sum = V::hsum(total);
  if (i < count) {
    const int rest = static_cast<int>(count - i);
    alignas(64) float lane[V::kWidth] = {};
    V::store(lane, exp<V>(V::sub(V::load_tail(tiles::F32{}, x + i, rest), s)));
    for (int j = 0; j < rest; ++j) {
      x[i + j] = lane[j];
      sum += lane[j];
    }
  }
  return sum;
}

// Loads, operates and stores kWidth lanes at a time, the tail through masked loads and stores.
// Op is a functor struct, not a lambda: g++ 12 does not give a lambda the target pragma.
template <class V, class Op>
void map2(const float* a, const float* b, float* out, int64_t count, Op op) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    V::store(out + i, op(V::load(tiles::F32{}, a + i), V::load(tiles::F32{}, b + i)));
  }
  if (i < count) {
    const int rest = static_cast<int>(count - i);
    V::store_tail(out + i, op(V::load_tail(tiles::F32{}, a + i, rest), V::load_tail(tiles::F32{}, b + i, rest)), rest);
  }
}

template <class V>
struct Add {
  typename V::Reg operator()(typename V::Reg x, typename V::Reg y) const { return V::add(x, y); }
};

template <class V>
void add(const float* a, const float* b, float* out, int64_t count) {
  map2<V>(a, b, out, count, Add<V>{});
}

template <class V>
struct Mul {
  typename V::Reg operator()(typename V::Reg x, typename V::Reg y) const { return V::mul(x, y); }
};

template <class V>
void mul(const float* a, const float* b, float* out, int64_t count) {
  map2<V>(a, b, out, count, Mul<V>{});
}

// Loads, operates and stores kWidth lanes at a time over one input, as map2.
template <class V, class Op>
void map1(const float* x, float* out, int64_t count, Op op) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    V::store(out + i, op(V::load(tiles::F32{}, x + i)));
  }
  if (i < count) {
    const int rest = static_cast<int>(count - i);
    V::store_tail(out + i, op(V::load_tail(tiles::F32{}, x + i, rest)), rest);
  }
}

template <class V>
struct MulBy {
  typename V::Reg factor;
  typename V::Reg operator()(typename V::Reg x) const { return V::mul(x, factor); }
};

template <class V>
void scale(const float* x, float factor, float* out, int64_t count) {
  map1<V>(x, out, count, MulBy<V>{V::set1(factor)});
}

// tanh as Cephes' tanhf computes it: an odd polynomial below |y| = 0.625, where 1 - 2 / (e^2y + 1)
// would lose the small result to cancellation, and that form above (its result there is at least
// 0.55 in magnitude, also for negative y). y is first clamped to ±9, where tanh rounds to ±1 (so
// an infinity gives ±1 as std::tanh does); the clamps keep a NaN (x86's max and min return their
// second operand when either is NaN, NEON's return NaN), and the last select passes it on, which
// the exp's own clamping would otherwise turn into a finite value.
template <class V>
typename V::Reg tanh(typename V::Reg y) {
  y = V::min(V::set1(9.0f), V::max(V::set1(-9.0f), y));
  const typename V::Reg s = V::mul(y, y);
  typename V::Reg p = V::set1(-5.70498872745e-3f);
  p = V::fma(p, s, V::set1(2.06390887954e-2f));
  p = V::fma(p, s, V::set1(-5.37397155531e-2f));
  p = V::fma(p, s, V::set1(1.33314422036e-1f));
  p = V::fma(p, s, V::set1(-3.33332819422e-1f));
  const typename V::Reg small = V::fma(V::mul(p, s), y, y);
  const typename V::Reg e = exp<V>(V::add(y, y));
  const typename V::Reg large = V::sub(V::set1(1.0f), V::div(V::set1(2.0f), V::add(e, V::set1(1.0f))));
  const typename V::Reg t = V::select_less(s, V::set1(0.390625f), small, large);
  return V::select_less(V::set1(-1.0f), s, t, s);  // s is NaN exactly where y is
}

template <class V>
struct Softcap {
  typename V::Reg cap;
  typename V::Reg operator()(typename V::Reg x) const { return V::mul(cap, tanh<V>(V::div(x, cap))); }
};

template <class V>
void softcap(const float* x, float cap, float* out, int64_t count) {
  map1<V>(x, out, count, Softcap<V>{V::set1(cap)});
}

template <class V>
struct ScaleBy {
  typename V::Reg scale;
  typename V::Reg operator()(typename V::Reg v, typename V::Reg w) const { return V::mul(V::mul(v, scale), w); }
};

// The portable kernel's arithmetic per element ((x * inv_rms) * weight); only the sum of
// squares is taken in another order.
template <class V>
void rms_norm(const float* x, const float* weight, float* out, int64_t width, float eps) {
  typename V::Reg acc0 = V::zero(), acc1 = V::zero();
  int64_t i = 0;
  for (; i + 2 * V::kWidth <= width; i += 2 * V::kWidth) {
    const typename V::Reg a = V::load(tiles::F32{}, x + i);
    const typename V::Reg b = V::load(tiles::F32{}, x + i + V::kWidth);
    acc0 = V::fma(a, a, acc0);
    acc1 = V::fma(b, b, acc1);
  }
  for (; i < width; i += V::kWidth) {
    const int rest = width - i < V::kWidth ? static_cast<int>(width - i) : V::kWidth;
    const typename V::Reg a = V::load_tail(tiles::F32{}, x + i, rest);
    acc0 = V::fma(a, a, acc0);
  }
  const float sum_squares = V::hsum(V::add(acc0, acc1));
  const typename V::Reg inv_rms = V::set1(1.0f / __builtin_sqrtf(sum_squares / static_cast<float>(width) + eps));
  map2<V>(x, weight, out, width, ScaleBy<V>{inv_rms});
}

// The portable kernel's formula; g++ may fuse a multiply and an add (an ulp apart from it).
template <class V>
void rotate_half(const float* x, const float* cos, const float* sin, float* out, int64_t half) {
  for (int64_t i = 0; i < half; i += V::kWidth) {
    const int rest = half - i < V::kWidth ? static_cast<int>(half - i) : V::kWidth;
    const typename V::Reg first = V::load_tail(tiles::F32{}, x + i, rest);
    const typename V::Reg second = V::load_tail(tiles::F32{}, x + half + i, rest);
    const typename V::Reg c = V::load_tail(tiles::F32{}, cos + i, rest);
    const typename V::Reg s = V::load_tail(tiles::F32{}, sin + i, rest);
    V::store_tail(out + i, V::sub(V::mul(first, c), V::mul(second, s)), rest);
    V::store_tail(out + half + i, V::add(V::mul(second, c), V::mul(first, s)), rest);
  }
}

}  // namespace staticlm::cpu::elementwise
