// SPDX-License-Identifier: Apache-2.0
// A graph built, lowered, written, loaded and executed, checked against a double-precision
// reference of the same equations written out here.
#include <cmath>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/register.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/runtime/program.h"

#include "example_program.h"

namespace staticlm {
namespace {

using testing::ExampleWeights;
using W = ExampleWeights;

// The example block in double precision; keeps its own KV cache across calls.
class Reference {
 public:
  explicit Reference(const ExampleWeights& w) : w_(w), cache_(W::kKvHeads * W::kCacheLen * W::kHeadDim, 0.0) {}

  std::vector<double> run(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions) {
    const int64_t hidden = W::kHidden;
    std::vector<std::vector<double>> x(W::kSeq, std::vector<double>(hidden));
    std::vector<std::vector<double>> q(W::kSeq, std::vector<double>(hidden));
    for (int64_t s = 0; s < W::kSeq; ++s) {
      for (int64_t d = 0; d < hidden; ++d) {
        x[s][d] = w_.table[tokens[s] * hidden + d];
      }
      double mean_square = 0.0;
      for (double v : x[s]) {
        mean_square += v * v / static_cast<double>(hidden);
      }
      std::vector<double> h(hidden);
      for (int64_t d = 0; d < hidden; ++d) {
        h[d] = x[s][d] / std::sqrt(mean_square + 1e-5) * w_.norm[d];
      }
      std::vector<double> k(hidden, 0.0);
      for (int64_t o = 0; o < hidden; ++o) {
        for (int64_t i = 0; i < hidden; ++i) {
          k[o] += h[i] * w_.w_key[o * hidden + i];
          q[s][o] += h[i] * w_.w_query[o * hidden + i];
        }
      }
      if (positions[s] >= 0) {
        for (int64_t head = 0; head < W::kKvHeads; ++head) {
          for (int64_t d = 0; d < W::kHeadDim; ++d) {
            cache_[(head * W::kCacheLen + positions[s]) * W::kHeadDim + d] = k[head * W::kHeadDim + d];
          }
        }
      }
    }
    std::vector<double> logits(W::kSeq * W::kVocab, 0.0);
    for (int64_t s = 0; s < W::kSeq; ++s) {
      std::vector<double> residual = x[s];
      const int32_t pos = positions[s];
      for (int64_t head = 0; pos >= 0 && head < W::kKvHeads; ++head) {
        double* qh = &q[s][head * W::kHeadDim];
        const int64_t half = W::kHeadDim / 2;
        std::vector<double> rotated(W::kHeadDim);
        for (int64_t i = 0; i < half; ++i) {
          const double angle = pos / std::pow(10000.0, 2.0 * static_cast<double>(i) / W::kHeadDim);
          rotated[i] = qh[i] * std::cos(angle) - qh[i + half] * std::sin(angle);
          rotated[i + half] = qh[i + half] * std::cos(angle) + qh[i] * std::sin(angle);
        }
        std::vector<double> scores(pos + 1);
        double max_score = -1e300;
        for (int32_t j = 0; j <= pos; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < W::kHeadDim; ++d) {
            dot += rotated[d] * cache_[(head * W::kCacheLen + j) * W::kHeadDim + d];
          }
          scores[j] = 0.5 * dot;
          max_score = std::max(max_score, scores[j]);
        }
        double total = 0.0;
        for (double& score : scores) {
          score = std::exp(score - max_score);
          total += score;
        }
        for (int64_t d = 0; d < W::kHeadDim; ++d) {
          double value = 0.0;
          for (int32_t j = 0; j <= pos; ++j) {
            value += scores[j] / total * cache_[(head * W::kCacheLen + j) * W::kHeadDim + d];
          }
          residual[head * W::kHeadDim + d] += value;
        }
      }
      for (int64_t v = 0; v < W::kVocab; ++v) {
        for (int64_t d = 0; d < hidden; ++d) {
          logits[s * W::kVocab + v] += residual[d] * w_.table[v * hidden + d];
        }
      }
    }
    return logits;
  }

  const std::vector<double>& cache() const { return cache_; }

 private:
  const ExampleWeights& w_;
  std::vector<double> cache_;
};

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = ExampleWeights::random(7);
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = (std::filesystem::path(::testing::TempDir()) / ("end_to_end_" + test + ".slm")).string();
    ASSERT_TRUE(testing::write_example_program(weights_, path_).ok());
    ASSERT_TRUE(register_portable_kernels(kernels_).ok());
    LoadOptions options;
    options.kernels = &kernels_;
    options.num_threads = 2;
    auto program = Program::load(path_, options);
    ASSERT_TRUE(program.ok()) << program.status().to_string();
    program_ = std::move(program).value();
  }

  ExampleWeights weights_;
  std::string path_;
  KernelRegistry kernels_;
  std::shared_ptr<const Program> program_;
};

void expect_close(std::span<const float> actual, std::span<const double> expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-4 * std::max(1.0, std::abs(expected[i]))) << "element " << i;
  }
}

TEST_F(EndToEndTest, MatchesReferenceAcrossCallsSharingTheCache) {
  auto method = program_->new_session("forward");
  ASSERT_TRUE(method.ok()) << method.status().to_string();
  MethodSession& forward = **method;

  ASSERT_EQ(forward.inputs().size(), 3u);
  EXPECT_EQ(forward.inputs()[2].name, "cache");
  EXPECT_TRUE(forward.inputs()[2].is_mutable);
  EXPECT_FALSE(forward.inputs()[0].is_mutable);

  std::vector<int32_t> tokens = {3, 9, 1, 14};
  std::vector<int32_t> positions = {0, 1, 2, 3};
  std::vector<float> cache(W::kKvHeads * W::kCacheLen * W::kHeadDim, 0.0f);
  std::vector<float> logits(W::kSeq * W::kVocab, -1.0f);
  ASSERT_TRUE(forward.bind_input("tokens", DType::kI32, tokens.data(), tokens.size() * 4).ok());
  ASSERT_TRUE(forward.bind_input("positions", DType::kI32, positions.data(), positions.size() * 4).ok());
  ASSERT_TRUE(forward.bind_input("cache", DType::kF32, cache.data(), cache.size() * 4).ok());
  ASSERT_TRUE(forward.bind_output("logits", DType::kF32, logits.data(), logits.size() * 4).ok());

  Reference reference(weights_);
  Status status = forward.execute();
  ASSERT_TRUE(status.ok()) << status.to_string();
  expect_close(logits, reference.run(tokens, positions));
  expect_close(cache, reference.cache());

  // A second chunk continues from the cache the first one filled; the last two rows are padding.
  tokens = {5, 2, 0, 0};
  positions = {4, 5, -1, -1};
  status = forward.execute();
  ASSERT_TRUE(status.ok()) << status.to_string();
  expect_close(logits, reference.run(tokens, positions));
  expect_close(cache, reference.cache());
}

TEST_F(EndToEndTest, TiedEmbeddingIsStoredOnce) {
  // table, norm, key and query projections; the table feeds both embedding and logits.
  EXPECT_EQ(program_->file().program().constants()->size(), 4u);
}

TEST_F(EndToEndTest, BindingIsChecked) {
  auto method = program_->new_session("forward");
  ASSERT_TRUE(method.ok());
  std::vector<int64_t> wide(W::kSeq);
  Status status = (*method)->bind_input("tokens", DType::kI64, wide.data(), wide.size() * 8);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("input 'tokens': expected dtype i32, found i64"), std::string::npos);
  std::vector<int32_t> short_tokens(2);
  status = (*method)->bind_input("tokens", DType::kI32, short_tokens.data(), 8);
  EXPECT_NE(status.message().find("expected 16 bytes (i32[1,4]), found 8"), std::string::npos) << status.message();
  status = (*method)->bind_input("token_ids", DType::kI32, short_tokens.data(), 8);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("inputs: 'tokens', 'positions', 'cache'"), std::string::npos) << status.message();
  status = (*method)->execute();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("'tokens' is not bound"), std::string::npos);
}

TEST_F(EndToEndTest, UnknownMethodListsTheMethods) {
  auto method = program_->new_session("decode");
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.status().code(), StatusCode::kNotFound);
  EXPECT_NE(method.status().message().find("(methods: forward)"), std::string::npos);
}

TEST_F(EndToEndTest, PositionBeyondTheCacheIsAnErrorNotACrash) {
  auto method = program_->new_session("forward");
  ASSERT_TRUE(method.ok());
  std::vector<int32_t> tokens = {1, 2, 3, 4};
  std::vector<int32_t> positions = {6, 7, 8, 9};
  std::vector<float> cache(W::kKvHeads * W::kCacheLen * W::kHeadDim);
  std::vector<float> logits(W::kSeq * W::kVocab);
  ASSERT_TRUE((*method)->bind_input("tokens", DType::kI32, tokens.data(), 16).ok());
  ASSERT_TRUE((*method)->bind_input("positions", DType::kI32, positions.data(), 16).ok());
  ASSERT_TRUE((*method)->bind_input("cache", DType::kF32, cache.data(), cache.size() * 4).ok());
  ASSERT_TRUE((*method)->bind_output("logits", DType::kF32, logits.data(), logits.size() * 4).ok());
  Status status = (*method)->execute();
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("method 'forward' instruction"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("kv_cache_update"), std::string::npos) << status.message();
}

// A program the writer accepts (it checks structure, not op semantics) whose kernel call does
// not type-check must be refused when the program is loaded (every method is prepared then).
TEST(ProgramLoadTest, KernelCallThatDoesNotTypeCheckIsRefused) {
  ProgramSpec spec;
  std::vector<uint8_t> weight_bytes(3 * 5 * 4, 0);
  spec.constants.push_back({"w", DType::kF32, {3, 5}, make_owned_source(weight_bytes)});
  MethodSpec method;
  method.name = "forward";
  method.values = {{DType::kF32, {2, 4}, ValueStorage::kInput, 0, {}},
                   {DType::kF32, {3, 5}, ValueStorage::kConstant, 0, {}},
                   {DType::kF32, {2, 3}, ValueStorage::kOutput, 0, {}}};
  method.inputs = {{"x", 0, false}};
  method.outputs = {{"y", 2, false}};
  method.instructions.push_back(KernelCallSpec{"linear", {0, 1}, {2}, {}});
  spec.methods.push_back(method);
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "bad_linear.slm").string();
  ASSERT_TRUE(write_program(spec, path).ok());

  KernelRegistry kernels;
  ASSERT_TRUE(register_portable_kernels(kernels).ok());
  LoadOptions options;
  options.kernels = &kernels;
  options.num_threads = 1;
  auto loaded = Program::load(path, options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("method 'forward' instruction 0 (linear)"), std::string::npos)
      << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("weight"), std::string::npos) << loaded.status().message();
}

TEST(ProgramLoadTest, ValueReadBeforeWrittenIsRefused) {
  ProgramSpec spec;
  MethodSpec method;
  method.name = "forward";
  method.values = {{DType::kF32, {4}, ValueStorage::kArena, 0, {}}, {DType::kF32, {4}, ValueStorage::kOutput, 0, {}}};
  method.outputs = {{"y", 1, false}};
  method.arena_size = 16;
  method.instructions.push_back(KernelCallSpec{"silu", {0}, {1}, {}});
  spec.methods.push_back(method);
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "undefined_read.slm").string();
  ASSERT_TRUE(write_program(spec, path).ok());
  KernelRegistry kernels;
  ASSERT_TRUE(register_portable_kernels(kernels).ok());
  LoadOptions options;
  options.kernels = &kernels;
  options.num_threads = 1;
  auto loaded = Program::load(path, options);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("reads value 0 before any instruction writes it"), std::string::npos)
      << loaded.status().message();
}

}  // namespace
}  // namespace staticlm
