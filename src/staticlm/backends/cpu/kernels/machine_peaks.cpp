#include "staticlm/backends/cpu/kernels/machine_peaks.h"

// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics
// (_mm512_cvtph_ps, _mm512_reduce_add_ps) are uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "staticlm/core/aligned_buffer.h"

namespace staticlm::cpu {
namespace {

// Enough multiply-adds per chunk that claiming it costs nothing; enough chunks that both
// threads stay busy to the end.
constexpr int64_t kFmaChunks = 64;
constexpr int64_t kStepsPerChunk = 1 << 16;
// Independent accumulators: more than latency x throughput, so the FMA units never wait. The
// loops over them are unrolled by pragma: at -O2 g++ would keep them in memory.
constexpr int kChains = 12;

// Each returns the multiply-adds it did (per lane) and stores a sum so the work is not elided.
__attribute__((target("avx512f"))) int64_t fma_steps_avx512(int64_t steps, float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) {
    acc[c] = _mm512_set1_ps(static_cast<float>(c));
  }
  const __m512 a = _mm512_set1_ps(0.999f);
  const __m512 b = _mm512_set1_ps(1e-3f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) {
      acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) {
    total = _mm512_add_ps(total, acc[c]);
  }
  *sink += _mm512_reduce_add_ps(total);
  return steps * kChains * 16;
}

// The same chains of vdpbf16ps: each step 32 pair products per register (64 flops).
__attribute__((target("avx512f,avx512bf16"))) int64_t bf16_dot_steps(int64_t steps, float* sink) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) {
    acc[c] = _mm512_set1_ps(static_cast<float>(c));
  }
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // a pair of bf16 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x3a833a83);  // a pair of bf16 ~1e-3
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) {
      acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    }
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) {
    total = _mm512_add_ps(total, acc[c]);
  }
  *sink += _mm512_reduce_add_ps(total);
  return steps * kChains * 32;
}

__attribute__((target("avx2,fma"))) int64_t fma_steps_avx2(int64_t steps, float* sink) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) {
    acc[c] = _mm256_set1_ps(static_cast<float>(c));
  }
  const __m256 a = _mm256_set1_ps(0.999f);
  const __m256 b = _mm256_set1_ps(1e-3f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) {
      acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
  }
  __m256 total = acc[0];
  for (int c = 1; c < kChains; ++c) {
    total = _mm256_add_ps(total, acc[c]);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  for (float lane : lanes) {
    *sink += lane;
  }
  return steps * kChains * 8;
}

int64_t fma_steps_scalar(int64_t steps, float* sink) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) {
    acc[c] = static_cast<float>(c);
  }
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (float& value : acc) {
      value = value * 0.999f + 1e-3f;
    }
  }
  for (float value : acc) {
    *sink += value;
  }
  return steps * kChains;
}

// Eight independent sums so no add waits on the one before it.
uint64_t sum_words(const uint64_t* data, size_t count) {
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    for (size_t k = 0; k < 8; ++k) {
      s[k] += data[i + k];
    }
  }
  for (; i < count; ++i) {
    s[0] += data[i];
  }
  uint64_t total = 0;
  for (uint64_t v : s) {
    total += v;
  }
  return total;
}

// The same with 256-bit loads, four in flight per step: the way the GEMV reads its weights, so
// the roofline is what such a loop can reach (the plain loop above measures lower on Zen 4).
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* data, size_t count) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i)));
    s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 4)));
    s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 8)));
    s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
  uint64_t total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < count; ++i) {
    total += data[i];
  }
  return total;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<double> measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  const size_t words = bytes / sizeof(uint64_t);
  if (words == 0 || passes <= 0) {
    return invalid_argument("read bandwidth: need a buffer of at least 8 bytes and one pass, found ", bytes,
                            " bytes and ", passes, " passes");
  }
  // Huge pages, as the mapped program's weights get (format/mapped_file): with 4 KiB pages the
  // probe measured 20-30% below what a decode step streams.
  auto buffer = AlignedBuffer::allocate(words * sizeof(uint64_t), kDefaultAlignment, PageHint::kHuge);
  if (!buffer.ok()) {
    return buffer.status().with_context("read bandwidth: the probe buffer");
  }
  uint64_t* const data = reinterpret_cast<uint64_t*>(buffer->data());
  std::fill(data, data + words, uint64_t{1});  // touched, so no pass pays for page faults
  // Chunks of 1 MiB, claimed by whichever thread is free.
  const int64_t chunk_words = int64_t{1} << 17;
  const int64_t chunks = (static_cast<int64_t>(words) + chunk_words - 1) / chunk_words;
  const bool avx2 = CpuFeatures::host().has(CpuFeature::kAvx2);
  double best = 0.0;
  for (int pass = 0; pass < passes; ++pass) {
    std::atomic<uint64_t> total{0};
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
      const size_t first = static_cast<size_t>(begin * chunk_words);
      const size_t last = std::min(words, static_cast<size_t>(end * chunk_words));
      total.fetch_add(avx2 ? sum_words_avx2(data + first, last - first) : sum_words(data + first, last - first),
                      std::memory_order_relaxed);
    });
    const double seconds = seconds_since(start);
    if (total.load() != words) {  // every word is 1: a wrong sum means a wrong split
      return internal_error("read bandwidth: summed ", total.load(), " words of ", words);
    }
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / seconds);
  }
  return best;
}

double measure_fma_peak(ThreadPool& pool, CpuFeatures allowed, int passes) {
  const bool avx512 = allowed.has(CpuFeature::kAvx512);
  const bool avx2 = allowed.has(CpuFeature::kAvx2);
  double best = 0.0;
  for (int pass = 0; pass < std::max(1, passes); ++pass) {
    std::atomic<int64_t> lane_fmas{0};
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(kFmaChunks, 1, [&](int64_t begin, int64_t end) {
      float sink = 0.0f;
      int64_t done = 0;
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        done += avx512 ? fma_steps_avx512(kStepsPerChunk, &sink)
                       : (avx2 ? fma_steps_avx2(kStepsPerChunk, &sink) : fma_steps_scalar(kStepsPerChunk, &sink));
      }
      // The sum is finite and positive; the comparison keeps it (and the work) alive.
      lane_fmas.fetch_add(sink > -1.0f ? done : 0, std::memory_order_relaxed);
    });
    best = std::max(best, 2.0 * static_cast<double>(lane_fmas.load()) / seconds_since(start));
  }
  return best;
}

double bf16_dot_speedup(int passes) {
  if (!CpuFeatures::host().covers(CpuFeatures().with(CpuFeature::kAvx512).with(CpuFeature::kAvx512Bf16))) {
    return 0.0;
  }
  constexpr int64_t kSteps = 1 << 13;
  auto best_rate = [&](int64_t (*steps_fn)(int64_t, float*)) {
    double best = 0.0;
    float sink = 0.0f;
    for (int pass = 0; pass < std::max(1, passes); ++pass) {
      const auto start = std::chrono::steady_clock::now();
      const int64_t products = steps_fn(kSteps, &sink);
      best = std::max(best, static_cast<double>(products) / seconds_since(start));
    }
    // The sum is finite: the comparison keeps it (and the work) alive.
    return sink > -1.0f ? best : 0.0;
  };
  const double fma = best_rate(fma_steps_avx512);
  const double dot = best_rate(bf16_dot_steps);
  return fma > 0.0 ? dot / fma : 0.0;
}

}  // namespace staticlm::cpu
