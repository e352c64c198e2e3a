// SPDX-License-Identifier: Apache-2.0
// The LLM runner end to end on the export fixtures: greedy generation against the PyTorch
// reference, every I/O buffer through the allocator hook (counting, failing, strict), contract
// selection and each class of contract mismatch.
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/llm/generator.h"
#include "staticlm/llm/program_tokenizer.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

using testing::small_options;
using testing::temp_path;

std::string export_fixture(const std::string& family, const HfStaticExportOptions& options, const std::string& name) {
  const std::string path = temp_path(name);
  auto summary = export_hf_static(testing::fixture_dir(family), path, options);
  EXPECT_TRUE(summary.ok()) << summary.status().to_string();
  return path;
}

class GreedyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GreedyTest, GreedyTokensEqualTheReference) {
  const testing::FixtureReference ref = testing::load_fixture_reference(GetParam());
  ASSERT_FALSE(ref.greedy_tokens.empty());
  const std::string path = export_fixture(GetParam(), small_options(), GetParam() + "_greedy.slm");
  auto opened = testing::open_test_session(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  GenerationOptions options;
  options.max_new_tokens = static_cast<int64_t>(ref.greedy_tokens.size());
  auto result = generate_tokens(*opened->session, ref.prompt_tokens, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->tokens, ref.greedy_tokens);
  EXPECT_EQ(result->stop_reason, StopReason::kMaxNewTokens);
}

INSTANTIATE_TEST_SUITE_P(Families, GreedyTest, ::testing::Values("llama", "llama3", "qwen2", "mistral", "qwen3"));

TEST(GenerationTest, StopsOnEosWithoutEmittingIt) {
  const testing::FixtureReference ref = testing::load_fixture_reference("mistral");
  auto opened = testing::open_test_session(export_fixture("mistral", small_options(), "mistral_eos.slm"));
  ASSERT_TRUE(opened.ok());
  GenerationOptions options;
  options.max_new_tokens = 16;
  const int32_t eos = ref.greedy_tokens[5];
  options.eos_ids = {eos};
  auto result = generate_tokens(*opened->session, ref.prompt_tokens, options);
  ASSERT_TRUE(result.ok());
  const auto first = std::find(ref.greedy_tokens.begin(), ref.greedy_tokens.end(), eos) - ref.greedy_tokens.begin();
  EXPECT_EQ(result->tokens, std::vector<int32_t>(ref.greedy_tokens.begin(), ref.greedy_tokens.begin() + first));
  EXPECT_EQ(result->stop_reason, StopReason::kEos);
}

TEST(GenerationTest, RefusesAPromptThatCannotFitBeforeWork) {
  auto opened = testing::open_test_session(export_fixture("llama", small_options(), "llama_fit.slm"));
  ASSERT_TRUE(opened.ok());
  std::vector<int32_t> prompt(60, 5);
  GenerationOptions options;
  options.max_new_tokens = 10;
  auto result = generate_tokens(*opened->session, prompt, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(result.status().message().find("needs 69 cache positions, but the program's cache holds 64"),
            std::string::npos)
      << result.status().message();
  EXPECT_EQ(opened->session->position(), 0) << "nothing ran";
}

TEST(GenerationTest, StopsWhereTheContextEndsWhenAskedTo) {
  auto opened = testing::open_test_session(export_fixture("llama", small_options(), "llama_context_end.slm"));
  ASSERT_TRUE(opened.ok());
  const int64_t cache = opened->session->max_cache_len();
  std::vector<int32_t> prompt(static_cast<size_t>(cache - 4), 5);
  GenerationOptions options;
  options.max_new_tokens = 10;
  options.stop_at_context_end = true;
  auto result = generate_tokens(*opened->session, prompt, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  // The last of the 5 tokens is sampled from the logits of the cache's last position.
  EXPECT_EQ(result->tokens.size(), 5u);
  EXPECT_EQ(result->stop_reason, StopReason::kContextFull);
  EXPECT_EQ(stop_reason_name(result->stop_reason), "context full");

  // Exactly what fits is the caller's limit, not the context's.
  options.max_new_tokens = 5;
  auto exact = generate_tokens(*opened->session, prompt, options);
  ASSERT_TRUE(exact.ok()) << exact.status().to_string();
  EXPECT_EQ(exact->stop_reason, StopReason::kMaxNewTokens);

  options.max_new_tokens = std::numeric_limits<int64_t>::max();
  std::vector<int32_t> too_long(static_cast<size_t>(cache + 1), 5);
  auto refused = generate_tokens(*opened->session, too_long, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("leaves no room for a new token"), std::string::npos)
      << refused.status().message();
}

TEST(GenerationTest, SeededSamplingIsReproducible) {
  auto opened = testing::open_test_session(export_fixture("qwen2", small_options(), "qwen2_sampling.slm"));
  ASSERT_TRUE(opened.ok());
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen2");
  GenerationOptions options;
  options.max_new_tokens = 12;
  options.sampling.temperature = 1.5;
  options.sampling.top_k = 40;
  options.sampling.seed = 42;
  auto first = generate_tokens(*opened->session, ref.prompt_tokens, options);
  auto second = generate_tokens(*opened->session, ref.prompt_tokens, options);
  options.sampling.seed = 43;
  auto third = generate_tokens(*opened->session, ref.prompt_tokens, options);
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  EXPECT_EQ(first->tokens, second->tokens);
  EXPECT_NE(first->tokens, third->tokens);
}

TEST(GenerationTest, LogprobsAreThoseOfTheProgramsLogitsBeforeSampling) {
  auto opened = testing::open_test_session(export_fixture("qwen2", small_options(), "qwen2_logprobs.slm"));
  ASSERT_TRUE(opened.ok());
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen2");
  GenerationOptions options;
  options.max_new_tokens = 8;
  // Temperature, penalties and a bias change what is sampled, not the logprobs reported.
  options.sampling.temperature = 1.5;
  options.sampling.top_k = 40;
  options.sampling.repetition_penalty = 1.3;
  options.sampling.seed = 42;
  options.sampling.logit_bias = {{5, 3.0f}};
  options.top_logprobs = 5;
  std::vector<TokenLogprob> streamed;
  options.on_logprob = [&](const TokenLogprob& entry) { streamed.push_back(entry); };
  auto result = generate_tokens(*opened->session, ref.prompt_tokens, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  ASSERT_EQ(result->logprobs.size(), result->tokens.size());
  ASSERT_EQ(streamed.size(), result->tokens.size());

  // The reference: every row's logits for prompt + generated tokens, by one all-rows prefill.
  std::vector<int32_t> fed = ref.prompt_tokens;
  fed.insert(fed.end(), result->tokens.begin(), result->tokens.end() - 1);
  std::vector<std::vector<float>> rows(fed.size());
  opened->session->truncate(0);
  ASSERT_TRUE(opened->session
                  ->prefill(
                      fed,
                      [&](int64_t index, std::span<const float> row) {
                        rows[static_cast<size_t>(index)].assign(row.begin(), row.end());
                      },
                      PrefillLogits::kEvery)
                  .ok());
  for (size_t step = 0; step < result->tokens.size(); ++step) {
    const std::vector<float>& row = rows[ref.prompt_tokens.size() - 1 + step];
    double most = row[0];
    for (float x : row) {
      most = std::max<double>(most, x);
    }
    double sum = 0.0;
    for (float x : row) {
      sum += std::exp(x - most);
    }
    const double lse = most + std::log(sum);
    const TokenLogprob& entry = result->logprobs[step];
    EXPECT_EQ(entry.token, result->tokens[step]);
    EXPECT_NEAR(entry.logprob, row[static_cast<size_t>(entry.token)] - lse, 1e-4) << "step " << step;
    EXPECT_EQ(streamed[step].token, entry.token);
    ASSERT_EQ(entry.top.size(), 5u);
    std::vector<int32_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(entry.top[k].first, order[k]) << "step " << step << " rank " << k;
      EXPECT_NEAR(entry.top[k].second, row[static_cast<size_t>(order[k])] - lse, 1e-4);
    }
  }
  options.top_logprobs = kMaxTopLogprobs + 1;
  EXPECT_EQ(generate_tokens(*opened->session, ref.prompt_tokens, options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(GenerationTest, NeverSamplesIdsBeyondTheVocabularyLimit) {
  auto opened = testing::open_test_session(export_fixture("qwen2", small_options(), "qwen2_limit.slm"));
  ASSERT_TRUE(opened.ok());
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen2");
  GenerationOptions options;
  options.max_new_tokens = 30;
  options.sampling.temperature = 5.0;  // nearly uniform: without the limit, ids >= 100 are certain
  options.sampling.seed = 7;
  options.sample_vocab_limit = 100;
  auto result = generate_tokens(*opened->session, ref.prompt_tokens, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  ASSERT_EQ(result->tokens.size(), 30u);
  for (int32_t token : result->tokens) {
    EXPECT_LT(token, 100);
  }
}

TEST(GenerationTest, TextStreamsAndStopsBeforeAStopString) {
  const std::string path = export_fixture("llama", small_options(), "llama_text.slm");
  auto opened = testing::open_test_session(path);
  ASSERT_TRUE(opened.ok());
  auto tokenizer = load_program_tokenizer(opened->program->file());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  GenerationOptions options;
  options.max_new_tokens = 24;
  std::string streamed;
  auto full = generate_text(*opened->session, **tokenizer, "the quick brown fox", options,
                            [&](std::string_view piece) { streamed += piece; });
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  EXPECT_EQ(streamed, full->text);
  auto decoded = (*tokenizer)->decode(full->tokens, true);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(full->text, *decoded);
  ASSERT_GE(full->text.size(), 6u);

  // Stop at a piece from the middle of that text: the output ends right before it.
  const std::string stop = full->text.substr(full->text.size() / 2, 3);
  options.stop_strings = {stop};
  std::string streamed_stop;
  auto stopped = generate_text(*opened->session, **tokenizer, "the quick brown fox", options,
                               [&](std::string_view piece) { streamed_stop += piece; });
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->stop_reason, StopReason::kStopString);
  EXPECT_EQ(stopped->text, full->text.substr(0, full->text.find(stop)));
  EXPECT_EQ(streamed_stop, stopped->text);
}

// Counts every call and checks the hook's contract: each pointer allocated once, bound before
// use, freed exactly once.
class CountingAllocator final : public IOBufferAllocator {
 public:
  explicit CountingAllocator(bool fail) : fail_(fail) {}
  std::string_view name() const override { return fail_ ? "failing" : "counting"; }
  void* allocate(size_t bytes, size_t alignment) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++allocations;
    if (fail_) {
      return nullptr;
    }
    void* pointer = heap_.allocate(bytes, alignment);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pointer) % alignment, 0u);
    live.insert(pointer);
    return pointer;
  }
  Status bind(void* pointer, const IoTensorRef& tensor) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_TRUE(live.count(pointer)) << "bind of a pointer this allocator did not return";
    bindings[std::string(tensor.method) + "/" + std::string(tensor.name)] += 1;
    return ok_status();
  }
  void free(void* pointer) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_EQ(live.erase(pointer), 1u) << "free of a pointer not live";
    ++frees;
    heap_.free(pointer);
  }

  int allocations = 0;
  int frees = 0;
  std::set<void*> live;
  std::map<std::string, int> bindings;

 private:
  bool fail_;
  HeapAllocator heap_;
  std::mutex mutex_;
};

TEST(IoAllocatorTest, EveryBufferGoesThroughTheHookOnceAndIsFreed) {
  const std::string path = export_fixture("llama", small_options(), "llama_counting.slm");
  auto allocator = std::make_shared<CountingAllocator>(false);
  {
    SessionOptions options;
    options.allocator = allocator;
    auto opened = testing::open_test_session(path, options);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    // Per method: input_ids, cache_position, logits; shared: 2 layers x (k, v) caches.
    EXPECT_EQ(allocator->allocations, 2 * 3 + 4);
    EXPECT_EQ(allocator->live.size(), 10u);
    // Every tensor of both methods is bound exactly once; the caches once per method.
    for (const char* method : {"prefill", "decode"}) {
      for (const char* tensor :
           {"input_ids", "cache_position", "logits", "k_cache_0", "v_cache_0", "k_cache_1", "v_cache_1"}) {
        EXPECT_EQ(allocator->bindings[std::string(method) + "/" + tensor], 1) << method << "/" << tensor;
      }
    }
    IoStats stats = opened->session->io_stats();
    ASSERT_EQ(stats.per_allocator.size(), 1u);
    EXPECT_EQ(stats.per_allocator[0].allocator, "counting");
    EXPECT_EQ(stats.per_allocator[0].buffers, 10u);
    EXPECT_EQ(stats.fallbacks, 0u);
  }
  EXPECT_EQ(allocator->frees, 10);
  EXPECT_TRUE(allocator->live.empty());
}

TEST(IoAllocatorTest, FailingAllocatorFallsBackToTheHeapWithIdenticalOutput) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  const std::string path = export_fixture("qwen3", small_options(), "qwen3_fallback.slm");
  GenerationOptions generation;
  generation.max_new_tokens = 8;
  auto baseline = testing::open_test_session(path);
  ASSERT_TRUE(baseline.ok());
  auto expected = generate_tokens(*baseline->session, ref.prompt_tokens, generation);
  ASSERT_TRUE(expected.ok());

  auto failing = std::make_shared<CountingAllocator>(true);
  SessionOptions options;
  options.allocator = failing;
  auto opened = testing::open_test_session(path, options);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto result = generate_tokens(*opened->session, ref.prompt_tokens, generation);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->tokens, expected->tokens);
  EXPECT_EQ(result->io.fallbacks, 10u);
  ASSERT_EQ(result->io.per_allocator.size(), 1u);
  EXPECT_EQ(result->io.per_allocator[0].allocator, "heap");
  EXPECT_EQ(failing->allocations, 10);
}

TEST(IoAllocatorTest, StrictModeTurnsAFallbackIntoAnError) {
  const std::string path = export_fixture("llama", small_options(), "llama_strict.slm");
  SessionOptions options;
  options.allocator = std::make_shared<CountingAllocator>(true);
  options.strict_io = true;
  auto opened = testing::open_test_session(path, options);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("allocator 'failing' could not allocate"), std::string::npos)
      << opened.status().message();
  EXPECT_NE(opened.status().message().find("strict I/O forbids the heap fallback"), std::string::npos);
}

// Builds the llama fixture's program, lets `edit` change its spec, writes it, and returns the
// error the contract gives when the runner opens it.
Status open_edited(const std::string& name, const std::function<void(ProgramSpec&)>& edit,
                   HfStaticExportOptions export_options = small_options()) {
  auto build = build_hf_static(testing::fixture_dir("llama"), export_options);
  if (!build.ok()) {
    return build.status();
  }
  edit(build->spec);
  const std::string path = temp_path(name);
  STATICLM_RETURN_IF_ERROR(write_program(build->spec, path).status());
  return testing::open_test_session(path).status();
}

void set_metadata(ProgramSpec& spec, const std::string& key, MetadataValue value) {
  for (MetadataSpec& entry : spec.metadata) {
    if (entry.key == key) {
      entry.value = std::move(value);
      return;
    }
  }
  spec.metadata.push_back({key, std::move(value)});
}

void expect_refused(const Status& status, StatusCode code, const std::string& message) {
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_NE(status.message().find(message), std::string::npos) << status.message();
}

TEST(ContractValidationTest, MissingMethod) {
  expect_refused(open_edited("no_decode.slm", [](ProgramSpec& spec) { spec.methods.pop_back(); }),
                 StatusCode::kNotFound, "has no method 'decode'");
}

TEST(ContractValidationTest, MissingInput) {
  expect_refused(
      open_edited("missing_input.slm", [](ProgramSpec& spec) { set_metadata(spec, "num_layers", int64_t{3}); }),
      StatusCode::kInvalidArgument, "method 'prefill': missing input 'k_cache_2' (expected f32[1,2,64,16])");
}

TEST(ContractValidationTest, UnexpectedInput) {
  expect_refused(
      open_edited("extra_input.slm", [](ProgramSpec& spec) { set_metadata(spec, "num_layers", int64_t{1}); }),
      StatusCode::kInvalidArgument, "unexpected input 'k_cache_1'");
}

TEST(ContractValidationTest, CacheShapeDisagreesWithMetadata) {
  expect_refused(open_edited("kv_heads.slm", [](ProgramSpec& spec) { set_metadata(spec, "num_kv_heads", int64_t{4}); }),
                 StatusCode::kInvalidArgument,
                 "method 'prefill' input 'k_cache_0': expected f32[1,4,64,16], found f32[1,2,64,16]");
}

TEST(ContractValidationTest, CacheDtypeDisagreesWithMetadata) {
  expect_refused(
      open_edited("cache_dtype.slm", [](ProgramSpec& spec) { set_metadata(spec, "cache_dtype", std::string("f16")); }),
      StatusCode::kInvalidArgument, "input 'k_cache_0': expected f16[1,2,64,16], found f32[1,2,64,16]");
}

TEST(ContractValidationTest, Q8_0CachesNeedWholeBlocksAndInPlaceUpdates) {
  expect_refused(
      open_edited("q8_0.slm", [](ProgramSpec& spec) { set_metadata(spec, "cache_dtype", std::string("q8_0")); }),
      StatusCode::kInvalidArgument,
      "metadata 'cache_dtype' q8_0 needs 'kv_update' in-place and 'head_dim' a multiple of 32, found in-place and 16");
}

TEST(ContractValidationTest, LogitsDisagreeWithVocabulary) {
  expect_refused(open_edited("vocab.slm", [](ProgramSpec& spec) { set_metadata(spec, "vocab_size", int64_t{300}); }),
                 StatusCode::kInvalidArgument, "output 'logits': expected f32[1,8,300], found f32[1,8,320]");
}

TEST(ContractValidationTest, UpdateFormDisagreesWithMetadata) {
  expect_refused(
      open_edited("kv_form.slm", [](ProgramSpec& spec) { set_metadata(spec, "kv_update", std::string("returned")); }),
      StatusCode::kInvalidArgument, "input 'k_cache_0': expected a read-only input, found mutable");
}

TEST(ContractValidationTest, BadMetadataValueIsNamed) {
  expect_refused(
      open_edited("bad_logits.slm", [](ProgramSpec& spec) { set_metadata(spec, "logits", std::string("some")); }),
      StatusCode::kInvalidArgument, "metadata 'logits': expected one of all, last, found 'some'");
}

TEST(ContractSelectionTest, UnknownContractOrVersionListsWhatIsSupported) {
  expect_refused(open_edited("v2.slm", [](ProgramSpec& spec) { set_metadata(spec, "contract_version", int64_t{2}); }),
                 StatusCode::kUnimplemented,
                 "uses contract hf_static v2, which this build does not implement (supported: hf_static v1)");
  expect_refused(
      open_edited("other.slm", [](ProgramSpec& spec) { set_metadata(spec, "contract", std::string("onnx_genai")); }),
      StatusCode::kUnimplemented, "contract onnx_genai v1");
  expect_refused(open_edited("none.slm",
                             [](ProgramSpec& spec) {
                               std::erase_if(spec.metadata, [](const MetadataSpec& m) { return m.key == "contract"; });
                             }),
                 StatusCode::kInvalidArgument, "declares no I/O contract");
}

// A second contract, to show selection is by (name, version) from the registry.
class ProbeContract final : public LlmContract {
 public:
  std::string_view name() const override { return "probe"; }
  int64_t version() const override { return 3; }
  Status validate(const ProgramFile& file) const override {
    return method_names(file) == std::vector<std::string>{"prefill", "decode"} ? ok_status()
                                                                               : invalid_argument("probe: bad methods");
  }
  Result<std::unique_ptr<LlmSession>> open(std::shared_ptr<const Program>, const SessionOptions&) const override {
    return unimplemented("probe sessions do not run");
  }
};

TEST(ContractSelectionTest, ARegisteredContractIsSelectedByNameAndVersion) {
  auto build = build_hf_static(testing::fixture_dir("llama"), small_options());
  ASSERT_TRUE(build.ok());
  set_metadata(build->spec, "contract", std::string("probe"));
  set_metadata(build->spec, "contract_version", int64_t{3});
  const std::string path = temp_path("probe.slm");
  ASSERT_TRUE(write_program(build->spec, path).ok());
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok());

  ContractRegistry registry;
  ASSERT_TRUE(register_builtin_contracts(registry).ok());
  EXPECT_EQ(registry.select(**file).status().code(), StatusCode::kUnimplemented);
  ASSERT_TRUE(registry.add(std::make_unique<ProbeContract>()).ok());
  auto selected = registry.select(**file);
  ASSERT_TRUE(selected.ok()) << selected.status().to_string();
  EXPECT_EQ((*selected)->name(), "probe");
  EXPECT_EQ(registry.add(std::make_unique<ProbeContract>()).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace staticlm
