// SPDX-License-Identifier: Apache-2.0
// The engine facade every front end drives: open validates the contract before preparing, picks
// the I/O allocator (given, else the program's backend's preferred one, else heap), resolves
// backend runtime options, applies the program's end-of-sequence policy, and opens any number of
// sessions; its messages name parameters, not CLI flags.
#include <atomic>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/program_writer.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "probe_backend.h"

namespace staticlm {
namespace {

using testing::small_options;
using testing::temp_path;

std::string export_plain(const std::string& family, const std::string& name) {
  const std::string path = temp_path(name);
  EXPECT_TRUE(export_hf_static(testing::fixture_dir(family), path, small_options()).ok());
  return path;
}

Result<std::unique_ptr<Engine>> open(const std::string& path, const EngineOptions& options = {}) {
  STATICLM_ASSIGN_OR_RETURN(EngineRuntime runtime, builtin_engine_runtime());
  return Engine::open(path, options, std::move(runtime));
}

void expect_message(const Status& status, std::string_view expected) {
  ASSERT_FALSE(status.ok()) << "expected: " << expected;
  EXPECT_NE(status.message().find(expected), std::string::npos) << status.message();
}

TEST(EngineTest, GeneratesTheReferenceTokensWithTheProgramsEndOfSequencePolicy) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  auto engine = open(export_plain("qwen3", "engine_qwen3.slm"));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->contract().name(), "hf_static");
  EXPECT_EQ((*engine)->io_allocator(), "heap");
  GenerationOptions options = (*engine)->default_generation();
  // qwen3's generation_config lists eos ids 319 and 317; the tokenizer's own come after them.
  ASSERT_GE(options.eos_ids.size(), 2u);
  EXPECT_EQ(options.eos_ids[0], 319);
  EXPECT_EQ(options.eos_ids[1], 317);
  EXPECT_EQ(options.sampling.temperature, 0.0) << "greedy unless the caller asks";
  EXPECT_GT((*engine)->program_sampling_defaults().temperature, 0.0) << "what generation_config recommends";
  options.eos_ids.clear();
  options.max_new_tokens = static_cast<int64_t>(ref.greedy_tokens.size());
  auto session = (*engine)->new_session();
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  auto result = generate_tokens(**session, ref.prompt_tokens, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->tokens, ref.greedy_tokens);
  auto text = (*engine)->generate(**session, "hello", options);
  EXPECT_TRUE(text.ok()) << text.status().to_string();
}

TEST(EngineTest, ChoosesTheAllocatorByNameOrByTheBackendsPreference) {
  const std::string path = export_plain("llama", "engine_allocator.slm");
  EngineOptions shm;
  shm.io_allocator = "shm";
  auto with_shm = open(path, shm);
  ASSERT_TRUE(with_shm.ok()) << with_shm.status().to_string();
  auto session = (*with_shm)->new_session();
  ASSERT_TRUE(session.ok());
  const IoStats stats = (*session)->io_stats();
  ASSERT_EQ(stats.per_allocator.size(), 1u);
  EXPECT_EQ(stats.per_allocator[0].allocator.substr(0, 4), "shm:");

  EngineOptions unknown;
  unknown.io_allocator = "ion";
  auto refused = open(path, unknown);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound);

  // A program delegated to a backend that prefers shared memory gets it without being told.
  testing::ProbeBackend probe;
  HfStaticExportOptions options = small_options();
  options.backend = &probe;
  const std::string delegated = temp_path("engine_probe.slm");
  ASSERT_TRUE(export_hf_static(testing::fixture_dir("llama"), delegated, options).ok());
  auto runtime = builtin_engine_runtime();
  ASSERT_TRUE(runtime.ok());
  auto backends = std::make_shared<BackendRuntimeRegistry>();
  ASSERT_TRUE(register_builtin_backend_runtimes(*backends).ok());
  ASSERT_TRUE(backends->add(testing::make_probe_runtime(std::make_shared<testing::ProbeLog>(), "shm")).ok());
  runtime->backends = backends;
  auto preferring = Engine::open(delegated, {}, *runtime);
  ASSERT_TRUE(preferring.ok()) << preferring.status().to_string();
  EXPECT_EQ((*preferring)->io_allocator(), "shm");
}

TEST(EngineTest, BackendRuntimeOptionsAreValidated) {
  auto backend = CpuBackend::create();
  ASSERT_TRUE(backend.ok());
  HfStaticExportOptions options = small_options();
  options.backend = backend->get();
  const std::string path = temp_path("engine_cpu.slm");
  ASSERT_TRUE(export_hf_static(testing::fixture_dir("llama3"), path, options).ok());
  EngineOptions portable;
  portable.backend_options["cpu"].emplace("isa", RawOptionValue::text("portable"));
  auto capped = open(path, portable);
  ASSERT_TRUE(capped.ok()) << capped.status().to_string();
  EXPECT_EQ(*(*capped)->program()->backend_options().at("cpu").get_string("isa"), "portable");
  auto defaulted = open(path);
  ASSERT_TRUE(defaulted.ok());
  EXPECT_EQ(*(*defaulted)->program()->backend_options().at("cpu").get_string("isa"), "auto");

  EngineOptions typo;
  typo.backend_options["cpu"].emplace("iza", RawOptionValue::text("avx2"));
  expect_message(open(path, typo).status(), "unknown option 'iza' for backend 'cpu' (did you mean 'isa'?)");
  EngineOptions elsewhere;
  elsewhere.backend_options["qnn"].emplace("log_level", RawOptionValue::text("debug"));
  expect_message(open(path, elsewhere).status(), "runtime options are given for backend 'qnn', but no delegate of '" +
                                                     path + "' uses it (its backends: cpu)");
}

TEST(EngineTest, AContractMismatchIsReportedBeforeAnythingIsPrepared) {
  // A kernel call that does not type-check is refused when the program is prepared...
  auto build = build_hf_static(testing::fixture_dir("llama"), small_options());
  ASSERT_TRUE(build.ok());
  std::get<KernelCallSpec>(build->spec.methods[0].instructions[1]).op = "softmax";
  const std::string broken = temp_path("engine_broken_kernel.slm");
  ASSERT_TRUE(write_program(build->spec, broken).ok());
  expect_message(open(broken).status(), "method 'prefill' instruction 1 (softmax)");
  // ...but when the program also breaks its contract, the user hears about the contract.
  for (MetadataSpec& entry : build->spec.metadata) {
    if (entry.key == "vocab_size") entry.value = int64_t{300};
  }
  const std::string path = temp_path("engine_mismatch.slm");
  ASSERT_TRUE(write_program(build->spec, path).ok());
  const Status status = open(path).status();
  expect_message(status, "hf_static v1");
  expect_message(status, "expected f32[1,8,300]");
  EXPECT_EQ(status.message().find("softmax"), std::string::npos) << status.message();
}

TEST(EngineTest, AGenerationCanBeStoppedFromOutside) {
  auto engine = open(export_plain("llama3", "engine_cancel.slm"));
  ASSERT_TRUE(engine.ok());
  auto session = (*engine)->new_session();
  ASSERT_TRUE(session.ok());
  std::atomic<bool> cancel{false};
  GenerationOptions options = (*engine)->default_generation();
  options.eos_ids.clear();
  options.max_new_tokens = 30;
  options.cancel = &cancel;
  int pieces = 0;
  auto result = (*engine)->generate(**session, "hello", options, [&](std::string_view) {
    if (++pieces == 3) cancel = true;
  });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->stop_reason, StopReason::kCancelled);
  EXPECT_LT(result->tokens.size(), 30u);
  EXPECT_EQ(stop_reason_name(result->stop_reason), "stopped by the caller");
}

// A conversation's next turn starts with the previous turn's prompt and reply: only the rest is
// prefilled, and the tokens are those of a fresh session given the whole prompt.
TEST(EngineTest, AReusedPrefixIsNotPrefilledAgainAndChangesNothing) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  auto engine = open(export_plain("qwen3", "engine_prefix.slm"));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  GenerationOptions options = (*engine)->default_generation();
  options.eos_ids.clear();
  options.max_new_tokens = 6;
  options.reuse_cached_prefix = true;
  auto reused = (*engine)->new_session();
  auto fresh = (*engine)->new_session();
  ASSERT_TRUE(reused.ok() && fresh.ok());
  auto first = generate_tokens(**reused, ref.prompt_tokens, options);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->cached_prompt_tokens, 0);
  // The cache holds the prompt and every generated token but the last (never fed back).
  std::vector<int32_t> expected_cache = ref.prompt_tokens;
  expected_cache.insert(expected_cache.end(), first->tokens.begin(), first->tokens.end() - 1);
  EXPECT_EQ(std::vector<int32_t>((*reused)->cached_tokens().begin(), (*reused)->cached_tokens().end()), expected_cache);

  std::vector<int32_t> next = ref.prompt_tokens;
  next.insert(next.end(), first->tokens.begin(), first->tokens.end());
  next.insert(next.end(), {5, 6, 7});
  auto second = generate_tokens(**reused, next, options);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->cached_prompt_tokens, static_cast<int64_t>(expected_cache.size()));
  GenerationOptions reset = options;
  reset.reuse_cached_prefix = false;
  auto from_scratch = generate_tokens(**fresh, next, reset);
  ASSERT_TRUE(from_scratch.ok());
  EXPECT_EQ(from_scratch->cached_prompt_tokens, 0);
  EXPECT_EQ(second->tokens, from_scratch->tokens);

  // A prompt that diverges early keeps only the shared start; the same prompt again still
  // feeds its last token, whose logits pick the first new token.
  std::vector<int32_t> diverged(next.begin(), next.begin() + 2);
  diverged.push_back(9);
  auto third = generate_tokens(**reused, diverged, options);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->cached_prompt_tokens, 2);
  auto again = generate_tokens(**reused, diverged, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cached_prompt_tokens, 2);
  EXPECT_EQ(again->tokens, third->tokens);
}

TEST(EngineTest, MessagesNameParametersNotFlags) {
  auto engine = open(export_plain("llama", "engine_messages.slm"));
  ASSERT_TRUE(engine.ok());
  auto session = (*engine)->new_session();
  ASSERT_TRUE(session.ok());
  GenerationOptions options = (*engine)->default_generation();
  options.max_new_tokens = 100;
  const std::vector<int32_t> prompt(10, 5);
  auto result = generate_tokens(**session, prompt, options);
  expect_message(result.status(), "lower max_new_tokens, or export with a larger max_cache_len");
  EXPECT_EQ(result.status().message().find("--"), std::string::npos) << result.status().message();
}

}  // namespace
}  // namespace staticlm
