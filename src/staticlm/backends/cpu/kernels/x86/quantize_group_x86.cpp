// SPDX-License-Identifier: Apache-2.0
// The x86 quantizers of x for the integer linear kernels (quantized_rows.h's QuantizeGroupFn),
// each compiled for its instruction set by a target attribute: the registry's AVX-512 entries
// carry the first, the AVX2 ones the second, so the `isa` cap chooses the quantizer too.
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics are
// uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

namespace staticlm::cpu {
namespace {

// The scalar loop's code of v at scale 1 / inverse, for the tail of a group.
int32_t code_of(float v, float inverse) {
  return static_cast<int32_t>(std::clamp(std::nearbyint(v * inverse), -127.0f, 127.0f));
}

}  // namespace

// The same, 16 values a step: the same multiply, the same round to nearest even, the same clamp,
// so the same codes. The scalar loop called libm's nearbyintf per value, and a chunk's
// quantization became a large share of an int8 prefill once its GEMM ran on AMX tiles
// (`staticlm bench --ops`).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) void quantize_group_avx512(const float* x, int64_t count,
                                                                                         int8_t* codes, float& scale,
                                                                                         int32_t& sum) {
  constexpr int kNonFinite = 0x01 | 0x08 | 0x10 | 0x80;  // quiet NaN, +infinity, -infinity, signalling NaN
  __m512 largest = _mm512_setzero_ps();
  __mmask16 non_finite = 0;
  for (int64_t k = 0; k < count; k += 16) {
    const __mmask16 lanes = count - k >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (count - k)) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, x + k);
    non_finite |= _mm512_mask_fpclass_ps_mask(lanes, v, kNonFinite);
    largest = _mm512_max_ps(largest, _mm512_abs_ps(v));
  }
  const bool finite = non_finite == 0;
  const float top = finite ? _mm512_reduce_max_ps(largest) : 0.0f;
  const float inverse = finite && top > 0.0f ? 127.0f / top : 0.0f;
  __m512i total = _mm512_setzero_si512();
  for (int64_t k = 0; k < count && inverse > 0.0f; k += 16) {
    const __mmask16 lanes = count - k >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (count - k)) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, x + k);
    __m512 q =
        _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(inverse)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    const __m512i codes32 = _mm512_cvtps_epi32(q);
    _mm512_mask_cvtepi32_storeu_epi8(codes + k, lanes, codes32);
    total = _mm512_add_epi32(total, codes32);  // masked-off lanes hold zero codes
  }
  sum = _mm512_reduce_add_epi32(total);
  scale = finite ? top / 127.0f : std::nanf("");
}

// The same with AVX2, 8 values a step and the last count % 8 one at a time (the same operations).
// It speeds up prefill on the AVX2 integer kernels against the scalar loop (`staticlm bench`
// with `--runtime-option cpu.isa=avx2`, int8 and int4).
__attribute__((target("avx2,fma"))) void quantize_group_avx2(const float* x, int64_t count, int8_t* codes, float& scale,
                                                             int32_t& sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 infinity = _mm256_set1_ps(INFINITY);
  __m256 largest = _mm256_setzero_ps();
  __m256 non_finite = _mm256_setzero_ps();
  const int64_t whole = count / 8 * 8;
  for (int64_t k = 0; k < whole; k += 8) {
    const __m256 magnitude = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k));
    non_finite = _mm256_or_ps(non_finite, _mm256_cmp_ps(magnitude, infinity, _CMP_NLT_UQ));  // NaN or infinite
    largest = _mm256_max_ps(largest, magnitude);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, largest);
  bool finite = _mm256_movemask_ps(non_finite) == 0;
  float top = 0.0f;
  for (float lane : lanes) {
    top = std::max(top, lane);
  }
  for (int64_t k = whole; k < count; ++k) {
    finite = finite && std::isfinite(x[k]);
    top = std::max(top, std::fabs(x[k]));
  }
  const float inverse = finite && top > 0.0f ? 127.0f / top : 0.0f;
  sum = 0;
  if (inverse > 0.0f) {
    __m256i total = _mm256_setzero_si256();
    for (int64_t k = 0; k < whole; k += 8) {
      __m256 q = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k), _mm256_set1_ps(inverse)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm256_min_ps(_mm256_max_ps(q, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
      const __m256i codes32 = _mm256_cvtps_epi32(q);
      const __m128i codes16 = _mm_packs_epi32(_mm256_castsi256_si128(codes32), _mm256_extracti128_si256(codes32, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + k), _mm_packs_epi16(codes16, codes16));
      total = _mm256_add_epi32(total, codes32);
    }
    alignas(32) int32_t partial[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(partial), total);
    for (int32_t part : partial) {
      sum += part;
    }
    for (int64_t k = whole; k < count; ++k) {
      const int32_t q = code_of(x[k], inverse);
      codes[k] = static_cast<int8_t>(q);
      sum += q;
    }
  }
  scale = finite ? top / 127.0f : std::nanf("");
}

}  // namespace staticlm::cpu
