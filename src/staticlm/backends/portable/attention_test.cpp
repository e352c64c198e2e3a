// SPDX-License-Identifier: Apache-2.0
// attention, windowed_attention and kv_cache_update against double-precision references: f32 and
// f16 caches, grouped-query heads, causal masking by position, windows and soft-caps, padding rows
// and out-of-range positions.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/core/half.h"

namespace staticlm::portable_test {
namespace {

struct AttentionCase {
  std::string name;
  DType cache_dtype;
  int64_t batch;
  int64_t query_heads;
  int64_t kv_heads;
  int64_t cache_len;
  int64_t head_dim;
  std::vector<int64_t> positions;
  int64_t filled_slots;  // slots at or beyond this hold huge values that must never be read
};

// Reference attention in double; q [B, S, Hq, D], caches [B, Hkv, C, D]. The query at p reads
// slots max(0, p - window + 1) .. p (window 0: 0 .. p), scores soft-capped when softcap > 0.
std::vector<double> reference_attention(const AttentionCase& c, const std::vector<double>& q,
                                        const std::vector<double>& k, const std::vector<double>& v, double scale,
                                        int64_t window = 0, double softcap = 0.0) {
  const auto seq = static_cast<int64_t>(c.positions.size());
  const int64_t group = c.query_heads / c.kv_heads;
  std::vector<double> out(q.size(), 0.0);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t position = c.positions[static_cast<size_t>(s)];
      if (position < 0) {
        continue;
      }
      for (int64_t h = 0; h < c.query_heads; ++h) {
        const size_t q_base = static_cast<size_t>(((b * seq + s) * c.query_heads + h) * c.head_dim);
        const size_t kv_base = static_cast<size_t>((b * c.kv_heads + h / group) * c.cache_len * c.head_dim);
        const int64_t first = window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
        std::vector<double> scores;
        for (int64_t j = first; j <= position; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < c.head_dim; ++d) {
            dot += q[q_base + d] * k[kv_base + j * c.head_dim + d];
          }
          scores.push_back(softcap > 0.0 ? softcap * std::tanh(scale * dot / softcap) : scale * dot);
        }
        double max_score = scores[0];
        for (double score : scores) {
          max_score = std::max(max_score, score);
        }
        double total = 0.0;
        for (double& score : scores) {
          score = std::exp(score - max_score);
          total += score;
        }
        for (int64_t j = first; j <= position; ++j) {
          for (int64_t d = 0; d < c.head_dim; ++d) {
            out[q_base + d] += scores[static_cast<size_t>(j - first)] / total * v[kv_base + j * c.head_dim + d];
          }
        }
      }
    }
  }
  return out;
}

// A cache whose slots below `filled` are random and whose later slots are huge (so that
// reading one would swamp the result).
Tensor make_cache(const AttentionCase& c, std::mt19937& rng) {
  Tensor cache = random_tensor(c.cache_dtype, {c.batch, c.kv_heads, c.cache_len, c.head_dim}, rng);
  for (int64_t bh = 0; bh < c.batch * c.kv_heads; ++bh) {
    for (int64_t slot = c.filled_slots; slot < c.cache_len; ++slot) {
      for (int64_t d = 0; d < c.head_dim; ++d) {
        const int64_t index = (bh * c.cache_len + slot) * c.head_dim + d;
        if (c.cache_dtype == DType::kF16) {
          cache.data<uint16_t>()[index] = f32_to_f16(1000.0f);
        } else {
          cache.data<float>()[index] = 1000.0f;
        }
      }
    }
  }
  return cache;
}

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesReference) {
  const AttentionCase& c = GetParam();
  std::mt19937 rng(51);
  const auto seq = static_cast<int64_t>(c.positions.size());
  Tensor q = random_tensor(DType::kF32, {c.batch, seq, c.query_heads, c.head_dim}, rng);
  Tensor k = make_cache(c, rng);
  Tensor v = make_cache(c, rng);
  Tensor positions = index_tensor(DType::kI64, c.positions);
  const double default_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  for (double scale : {default_scale, 0.3}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    const Attributes attrs = scale == default_scale ? Attributes{} : Attributes{{"scale", scale}};
    auto outputs = run_op(OpKind::kAttention, {&q, &k, &v, &positions}, attrs);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    expect_close((*outputs)[0], reference_attention(c, to_doubles(q), to_doubles(k), to_doubles(v), scale));
  }
}

// Windows shorter than, equal to and longer than the rows' histories, with and without a soft-cap
// small enough to bend the scores (they reach a few units here).
TEST_P(AttentionTest, WindowedAttentionMatchesReference) {
  const AttentionCase& c = GetParam();
  std::mt19937 rng(53);
  const auto seq = static_cast<int64_t>(c.positions.size());
  Tensor q = random_tensor(DType::kF32, {c.batch, seq, c.query_heads, c.head_dim}, rng, -2.0f, 2.0f);
  Tensor k = make_cache(c, rng);
  Tensor v = make_cache(c, rng);
  Tensor positions = index_tensor(DType::kI32, c.positions);
  for (int64_t window : {int64_t{0}, int64_t{1}, int64_t{3}, c.cache_len}) {
    for (double softcap : {0.0, 0.7}) {
      SCOPED_TRACE(str_cat("window ", window, ", softcap ", softcap));
      const Attributes attrs{{"scale", 0.4}, {"window", window}, {"softcap", softcap}};
      auto outputs = run_op(OpKind::kWindowedAttention, {&q, &k, &v, &positions}, attrs);
      ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
      expect_close((*outputs)[0],
                   reference_attention(c, to_doubles(q), to_doubles(k), to_doubles(v), 0.4, window, softcap));
    }
  }
}

TEST(AttentionTest, AWindowOfOneReadsTheRowsOwnSlotAlone) {
  const AttentionCase c{"", DType::kF32, 1, 2, 1, 8, 4, {3, 4}, 5};
  std::mt19937 rng(54);
  Tensor q = random_tensor(DType::kF32, {1, 2, 2, 4}, rng);
  Tensor k = make_cache(c, rng);
  Tensor v = make_cache(c, rng);
  Tensor positions = index_tensor(DType::kI64, c.positions);
  auto outputs = run_op(OpKind::kWindowedAttention, {&q, &k, &v, &positions}, {{"window", int64_t{1}}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const std::vector<double> got = to_doubles((*outputs)[0]);
  const std::vector<double> values = to_doubles(v);
  for (size_t row = 0; row < 2; ++row) {
    for (size_t h = 0; h < 2; ++h) {
      for (size_t d = 0; d < 4; ++d) {
        EXPECT_NEAR(got[(row * 2 + h) * 4 + d], values[(3 + row) * 4 + d], 1e-6) << "row " << row;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(AttentionCase{"decode_mha", DType::kF32, 1, 2, 2, 8, 16, {5}, 6},
                      AttentionCase{"prefill_gqa_causal", DType::kF32, 1, 4, 2, 10, 8, {5, 6, 7}, 8},
                      AttentionCase{"prefill_gqa_f16", DType::kF16, 2, 4, 2, 10, 8, {5, 6, 7}, 8},
                      AttentionCase{"from_zero_mha_f16", DType::kF16, 1, 3, 3, 6, 4, {0, 1, 2, 3}, 4},
                      AttentionCase{"padding_rows", DType::kF32, 2, 4, 1, 8, 8, {2, 3, -1, -1}, 4},
                      AttentionCase{"full_cache", DType::kF16, 1, 2, 1, 5, 32, {4}, 5}),
    [](const ::testing::TestParamInfo<AttentionCase>& case_info) { return case_info.param.name; });

TEST(AttentionTest, PaddingRowsAreZeros) {
  const AttentionCase c{"", DType::kF32, 1, 2, 2, 4, 4, {-1, 0}, 4};
  std::mt19937 rng(52);
  Tensor q = random_tensor(DType::kF32, {1, 2, 2, 4}, rng);
  Tensor k = make_cache(c, rng);
  Tensor v = make_cache(c, rng);
  Tensor positions = index_tensor(DType::kI32, c.positions);
  auto outputs = run_op(OpKind::kAttention, {&q, &k, &v, &positions});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const std::vector<double> got = to_doubles((*outputs)[0]);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(got[i], 0.0) << "padding row element " << i;
  }
  // The query at position 0 sees slot 0 alone: its output is that slot's value row.
  const std::vector<double> values = to_doubles(v);
  for (size_t h = 0; h < 2; ++h) {
    for (size_t d = 0; d < 4; ++d) {
      EXPECT_NEAR(got[8 + h * 4 + d], values[h * 16 + d], 1e-6);
    }
  }
}

TEST(AttentionTest, RefusesAPositionBeyondTheCache) {
  Tensor q = new_tensor(DType::kF32, {1, 3, 2, 4});
  Tensor k = new_tensor(DType::kF16, {1, 2, 512, 4});
  Tensor v = new_tensor(DType::kF16, {1, 2, 512, 4});
  Tensor positions = index_tensor(DType::kI32, {510, 511, 512});
  auto outputs = run_op(OpKind::kAttention, {&q, &k, &v, &positions});
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(outputs.status().message().find("attention: position 512 at row 2 is outside the cache length 512"),
            std::string::npos)
      << outputs.status().message();
}

struct CacheCase {
  std::string name;
  DType cache_dtype;
  int64_t in_place;
  std::vector<int64_t> positions;
};

class KvCacheUpdateTest : public ::testing::TestWithParam<CacheCase> {};

TEST_P(KvCacheUpdateTest, WritesRowsIntoTheirSlots) {
  const CacheCase& c = GetParam();
  const int64_t batch = 2, kv_heads = 2, cache_len = 8, head_dim = 4;
  const auto seq = static_cast<int64_t>(c.positions.size());
  std::mt19937 rng(61);
  Tensor cache = random_tensor(c.cache_dtype, {batch, kv_heads, cache_len, head_dim}, rng);
  Tensor rows = random_tensor(DType::kF32, {batch, seq, kv_heads, head_dim}, rng);
  Tensor positions = index_tensor(DType::kI64, c.positions);
  const std::vector<double> before = to_doubles(cache);

  auto outputs = run_op(OpKind::kKvCacheUpdate, {&cache, &rows, &positions}, Attributes{{"in_place", c.in_place}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();

  std::vector<double> want = before;
  const std::vector<double> row_values = to_doubles(rows);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t position = c.positions[static_cast<size_t>(s)];
      if (position < 0) {
        continue;
      }
      for (int64_t h = 0; h < kv_heads; ++h) {
        for (int64_t d = 0; d < head_dim; ++d) {
          double value = row_values[static_cast<size_t>(((b * seq + s) * kv_heads + h) * head_dim + d)];
          if (c.cache_dtype == DType::kF16) {
            value = f16_to_f32(f32_to_f16(static_cast<float>(value)));
          }
          want[static_cast<size_t>(((b * kv_heads + h) * cache_len + position) * head_dim + d)] = value;
        }
      }
    }
  }
  const Tensor& out = (*outputs)[0];
  ASSERT_EQ(out.dtype(), c.cache_dtype);
  EXPECT_EQ(to_doubles(out), want);
  // in_place = 1 mutates the input cache; in_place = 0 leaves it as it was.
  EXPECT_EQ(to_doubles(cache), c.in_place == 1 ? want : before);
}

INSTANTIATE_TEST_SUITE_P(Variants, KvCacheUpdateTest,
                         ::testing::Values(CacheCase{"f32_in_place", DType::kF32, 1, {3, 4, 5}},
                                           CacheCase{"f32_copy", DType::kF32, 0, {0}},
                                           CacheCase{"f16_in_place", DType::kF16, 1, {6, 7}},
                                           CacheCase{"f16_copy_padding", DType::kF16, 0, {2, -1, -1}},
                                           CacheCase{"f32_padding_only", DType::kF32, 1, {-1, -3}}),
                         [](const ::testing::TestParamInfo<CacheCase>& case_info) { return case_info.param.name; });

TEST(KvCacheUpdateTest, RefusesAPositionBeyondTheCacheAndLeavesItUntouched) {
  std::mt19937 rng(62);
  Tensor cache = random_tensor(DType::kF16, {1, 2, 512, 4}, rng);
  Tensor rows = random_tensor(DType::kF32, {1, 3, 2, 4}, rng);
  Tensor positions = index_tensor(DType::kI32, {598, 599, 600});
  const std::vector<double> before = to_doubles(cache);
  auto outputs = run_op(OpKind::kKvCacheUpdate, {&cache, &rows, &positions});
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(outputs.status().message().find("kv_cache_update: position 598 at row 0 is outside the cache length 512"),
            std::string::npos)
      << outputs.status().message();
  EXPECT_EQ(to_doubles(cache), before);

  Tensor late = index_tensor(DType::kI32, {1, 2, 600});
  auto late_outputs = run_op(OpKind::kKvCacheUpdate, {&cache, &rows, &late});
  ASSERT_FALSE(late_outputs.ok());
  EXPECT_NE(late_outputs.status().message().find("position 600 at row 2 is outside the cache length 512"),
            std::string::npos)
      << late_outputs.status().message();
  EXPECT_EQ(to_doubles(cache), before);
}

TEST(KvCacheUpdateTest, UpdateThenAttendSeesTheNewRows) {
  // A decode step: write position 3, then attend from position 3 over slots 0..3.
  std::mt19937 rng(63);
  Tensor k = random_tensor(DType::kF16, {1, 1, 6, 8}, rng);
  Tensor v = random_tensor(DType::kF16, {1, 1, 6, 8}, rng);
  Tensor k_row = random_tensor(DType::kF32, {1, 1, 1, 8}, rng);
  Tensor v_row = random_tensor(DType::kF32, {1, 1, 1, 8}, rng);
  Tensor q = random_tensor(DType::kF32, {1, 1, 2, 8}, rng);
  Tensor positions = index_tensor(DType::kI64, {3});
  ASSERT_TRUE(run_op(OpKind::kKvCacheUpdate, {&k, &k_row, &positions}).ok());
  ASSERT_TRUE(run_op(OpKind::kKvCacheUpdate, {&v, &v_row, &positions}).ok());
  auto outputs = run_op(OpKind::kAttention, {&q, &k, &v, &positions});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const AttentionCase c{"", DType::kF16, 1, 2, 1, 6, 8, {3}, 6};
  expect_close((*outputs)[0],
               reference_attention(c, to_doubles(q), to_doubles(k), to_doubles(v), 1.0 / std::sqrt(8.0)));
  // The slot now holds the f16-rounded row.
  const std::vector<double> keys = to_doubles(k);
  const std::vector<double> row = to_doubles(k_row);
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(keys[3 * 8 + d], f16_to_f32(f32_to_f16(static_cast<float>(row[d]))));
  }
}

// A q8_0 cache row as store_cache_row writes it and load_cache_row reads it back: the block's
// scale max |x| / 127 in f16, codes rounded to nearest against that scale; a zero
// block; huge finite values saturating at f16's largest scale; a non-finite value making its
// block (only) read as NaN.
TEST(Q8_0CacheRowTest, BlocksRoundTripAsTheFormatSays) {
  using portable::cache_row_bytes;
  using portable::load_cache_row;
  using portable::store_cache_row;
  float row[64];
  for (int j = 0; j < 32; ++j) {
    row[j] = static_cast<float>(j - 16) * 0.5f;  // max |x| 8: scale 8 / 127
  }
  row[3] = 2.6f * (8.0f / 127.0f);  // 2.6 steps: code 3
  row[4] = -2.6f * (8.0f / 127.0f);
  for (int j = 32; j < 64; ++j) {
    row[j] = 0.0f;
  }
  uint8_t stored[68];
  store_cache_row(row, DType::kQ8_0, stored, 0, 64);
  EXPECT_EQ(cache_row_bytes(DType::kQ8_0, 64), 68);
  uint16_t scale_bits = 0;
  std::memcpy(&scale_bits, stored, 2);
  const float scale = f16_to_f32(scale_bits);
  EXPECT_EQ(scale_bits, f32_to_f16(8.0f / 127.0f));
  EXPECT_EQ(static_cast<int8_t>(stored[2 + 0]), -127);  // -8
  EXPECT_EQ(static_cast<int8_t>(stored[2 + 3]), 3);
  EXPECT_EQ(static_cast<int8_t>(stored[2 + 4]), -3);
  EXPECT_EQ(static_cast<int8_t>(stored[2 + 16]), 0);
  float back[64];
  const float* read = load_cache_row(stored, DType::kQ8_0, 0, 64, back);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(read[j], scale * static_cast<float>(static_cast<int8_t>(stored[2 + j])));
    EXPECT_LE(std::fabs(read[j] - row[j]), 0.5f * scale * 1.001f) << j;
  }
  for (int j = 32; j < 64; ++j) {
    EXPECT_EQ(read[j], 0.0f) << "a zero block reads zero";
  }

  for (int j = 0; j < 32; ++j) {
    row[j] = j == 5 ? -1e30f : 1e29f;  // beyond f16: the scale saturates at 65504
    row[32 + j] = j == 7 ? std::numeric_limits<float>::quiet_NaN() : 1.0f;
  }
  store_cache_row(row, DType::kQ8_0, stored, 0, 64);
  read = load_cache_row(stored, DType::kQ8_0, 0, 64, back);
  EXPECT_EQ(read[5], -127.0f * 65504.0f);
  EXPECT_EQ(read[0], 127.0f * 65504.0f);
  for (int j = 32; j < 64; ++j) {
    EXPECT_TRUE(std::isnan(read[j])) << "a block with a NaN reads NaN, not a guess: " << j;
  }
  row[32 + 7] = std::numeric_limits<float>::infinity();
  store_cache_row(row, DType::kQ8_0, stored, 0, 64);
  EXPECT_TRUE(std::isnan(load_cache_row(stored, DType::kQ8_0, 0, 64, back)[40]));
}

}  // namespace
}  // namespace staticlm::portable_test
