// The int8 / int4 linear panels for AVX-512 VNNI: 16 int32 lanes per register, vpdpbusd summing
// four u8 x s8 products per lane; chunks take 4 rows per step (8 integer and 8 float
// accumulators of the 32 registers).
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics are
// uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"
#include "staticlm/backends/cpu/kernels/simd_avx512.h"

namespace staticlm::cpu {
namespace {

struct Avx512Vnni : simd::Avx512 {
  using IReg = __m512i;
  using XWord = __m512i;
  static constexpr int kQuantRows = 4;

  static IReg izero() { return _mm512_setzero_si512(); }
  static IReg iload(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static void istore(uint8_t* p, IReg v) { _mm512_storeu_si512(p, v); }
  static XWord xword(int32_t word) { return _mm512_set1_epi32(word); }
  static IReg dot4(IReg acc, IReg w, XWord x) { return _mm512_dpbusd_epi32(acc, w, x); }
  static IReg dot4_small(IReg acc, IReg w, XWord x) { return dot4(acc, w, x); }
  static IReg low_nibbles(IReg w) { return _mm512_and_si512(w, _mm512_set1_epi8(0x0F)); }
  static IReg high_nibbles(IReg w) { return _mm512_and_si512(_mm512_srli_epi16(w, 4), _mm512_set1_epi8(0x0F)); }
  static Reg to_float(IReg acc, int32_t offset_sum) {
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, _mm512_set1_epi32(offset_sum)));
  }
};

}  // namespace

void linear_columns_q_avx512vnni(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  qtiles::quantized_columns<Avx512Vnni>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
