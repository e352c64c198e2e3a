// SPDX-License-Identifier: Apache-2.0
// Export every fixture family to hf_static v1 and check the portable backend's logits against
// the PyTorch reference (scripts/make_fixtures.py), across prefill chunks and decode steps,
// for both KV update forms; plus the program's shape, constants and the export's refusals.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/exporter/safetensors.h"
#include "staticlm/format/metadata.h"

#include "export_helpers.h"
#include "fixture_edit.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

using testing::FixtureReference;

using testing::small_options;
using testing::temp_path;

using testing::expect_logits_near;

std::vector<float> run_prompt(LlmSession& session, const std::vector<int32_t>& tokens, size_t prefilled) {
  return testing::feed_prompt(session, tokens, prefilled);
}

struct FamilyCase {
  std::string family;
  KvUpdateForm kv_update;
};

class FamilyExportTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(FamilyExportTest, MatchesPyTorchReferenceAcrossChunksAndDecode) {
  const FamilyCase& param = GetParam();
  FixtureReference ref = testing::load_fixture_reference(param.family);
  ASSERT_FALSE(ref.logits.empty()) << "cannot read the fixture reference in " << ref.dir;
  HfStaticExportOptions options = small_options();
  options.kv_update = param.kv_update;
  const std::string path = temp_path(param.family + "_" + std::string(kv_update_form_name(param.kv_update)) + ".slm");
  auto summary = export_hf_static(ref.dir, path, options);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();

  auto opened = testing::open_test_session(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  LlmSession& session = *opened->session;
  ASSERT_EQ(session.vocab_size(), ref.vocab);
  // 12 tokens through prefill (a full chunk and a partial one), the remaining 8 through decode.
  std::vector<float> logits = run_prompt(session, ref.prompt_tokens, 12);
  expect_logits_near(logits, ref.logits, 1e-4, param.family);
  EXPECT_EQ(session.position(), static_cast<int64_t>(ref.prompt_tokens.size()));
}

INSTANTIATE_TEST_SUITE_P(
    Families, FamilyExportTest,
    ::testing::Values(FamilyCase{"llama", KvUpdateForm::kInPlace}, FamilyCase{"llama", KvUpdateForm::kReturned},
                      FamilyCase{"llama3", KvUpdateForm::kInPlace}, FamilyCase{"llama3", KvUpdateForm::kReturned},
                      FamilyCase{"llama_sharded", KvUpdateForm::kInPlace}, FamilyCase{"qwen2", KvUpdateForm::kInPlace},
                      FamilyCase{"qwen2", KvUpdateForm::kReturned}, FamilyCase{"mistral", KvUpdateForm::kInPlace},
                      FamilyCase{"mistral", KvUpdateForm::kReturned}, FamilyCase{"qwen3", KvUpdateForm::kInPlace},
                      FamilyCase{"qwen3", KvUpdateForm::kReturned}, FamilyCase{"gemma3", KvUpdateForm::kInPlace},
                      FamilyCase{"gemma3", KvUpdateForm::kReturned}, FamilyCase{"gemma2", KvUpdateForm::kInPlace},
                      FamilyCase{"gemma2", KvUpdateForm::kReturned}, FamilyCase{"phi3", KvUpdateForm::kInPlace},
                      FamilyCase{"phi3", KvUpdateForm::kReturned}, FamilyCase{"smollm3", KvUpdateForm::kInPlace},
                      FamilyCase{"smollm3", KvUpdateForm::kReturned}, FamilyCase{"granite", KvUpdateForm::kInPlace},
                      FamilyCase{"granite", KvUpdateForm::kReturned}, FamilyCase{"olmo2", KvUpdateForm::kInPlace},
                      FamilyCase{"olmo2", KvUpdateForm::kReturned},
                      FamilyCase{"mistral_window", KvUpdateForm::kInPlace},
                      FamilyCase{"mistral_window", KvUpdateForm::kReturned},
                      FamilyCase{"qwen2_window", KvUpdateForm::kInPlace},
                      FamilyCase{"qwen2_window", KvUpdateForm::kReturned}),
    [](const auto& test_info) {
      return test_info.param.family + (test_info.param.kv_update == KvUpdateForm::kInPlace ? "_in_place" : "_returned");
    });

TEST(HfExportTest, TokenLogitsDoNotDependOnTheMethodThatComputedThem) {
  FixtureReference ref = testing::load_fixture_reference("qwen2");
  const std::string path = temp_path("qwen2_consistency.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, small_options()).ok());
  auto all_prefill = testing::open_test_session(path);
  auto all_decode = testing::open_test_session(path);
  ASSERT_TRUE(all_prefill.ok() && all_decode.ok());
  std::vector<float> by_prefill = run_prompt(*all_prefill->session, ref.prompt_tokens, ref.prompt_tokens.size());
  std::vector<float> by_decode = run_prompt(*all_decode->session, ref.prompt_tokens, 0);
  expect_logits_near(by_prefill, by_decode, 1e-5, "prefill vs decode");
}

TEST(HfExportTest, HalfPrecisionCacheAndWeightsStayClose) {
  FixtureReference ref = testing::load_fixture_reference("llama3");
  HfStaticExportOptions options = small_options();
  options.cache_dtype = DType::kF16;
  options.weight_dtype = DType::kBF16;  // the checkpoint is bf16, so this is exact
  const std::string path = temp_path("llama3_f16_cache.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok());
  auto opened = testing::open_test_session(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::vector<float> logits = run_prompt(*opened->session, ref.prompt_tokens, 12);
  // An f16 cache rounds keys and values to 11 significant bits.
  expect_logits_near(logits, ref.logits, 2e-2, "f16 cache");
}

TEST(HfExportTest, ProgramCarriesTheContractAndSharesWeights) {
  FixtureReference ref = testing::load_fixture_reference("llama3");
  const std::string path = temp_path("llama3_metadata.slm");
  auto summary = export_hf_static(ref.dir, path, small_options());
  ASSERT_TRUE(summary.ok());
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*metadata_string(**file, "contract"), "hf_static");
  EXPECT_EQ(*metadata_int(**file, "contract_version"), 1);
  EXPECT_EQ(*metadata_string(**file, "architecture"), "LlamaForCausalLM");
  EXPECT_EQ(*metadata_int(**file, "prefill_len"), 8);
  EXPECT_EQ(*metadata_int(**file, "max_cache_len"), 64);
  EXPECT_EQ(*metadata_string(**file, "kv_update"), "in-place");
  EXPECT_EQ(*metadata_string(**file, "rope_scaling"), "llama3");
  EXPECT_EQ(*metadata_int_list(**file, "eos_token_ids"), (std::vector<int64_t>{317, 319}));
  EXPECT_EQ(*metadata_string(**file, "tokenizer_kind"), "tokenizer.json");
  EXPECT_EQ(metadata_string(**file, "tokenizer_sha256")->size(), 64u);
  ASSERT_TRUE((*file)->embedded_file("tokenizer.json").has_value());

  // Tied embeddings: the checkpoint has no lm_head and the program one embedding constant,
  // used by both methods' embedding and logits, stored once.
  auto checkpoint = SafetensorsCheckpoint::open(ref.dir);
  ASSERT_TRUE(checkpoint.ok());
  const auto* constants = (*file)->program().constants();
  EXPECT_EQ(constants->size(), checkpoint->size());
  size_t embeddings = 0;
  for (const fb::Constant* constant : *constants) {
    embeddings += constant->name()->str() == "model.embed_tokens.weight" ? 1 : 0;
    EXPECT_NE(constant->name()->str(), "lm_head.weight");
  }
  EXPECT_EQ(embeddings, 1u);
  // Both methods read the same constant index for the embedding table.
  for (const char* method_name : {"prefill", "decode"}) {
    const fb::Method* method = (*file)->find_method(method_name);
    ASSERT_NE(method, nullptr);
    size_t uses = 0;
    for (const fb::Value* value : *method->values()) {
      if (value->storage() == fb::StorageKind::Constant &&
          constants->Get(static_cast<flatbuffers::uoffset_t>(value->index()))->name()->str() ==
              "model.embed_tokens.weight") {
        ++uses;
      }
    }
    EXPECT_EQ(uses, 1u) << method_name << " has one value for the shared embedding";
  }
}

using testing::copy_fixture;
using testing::edit_config;

Status export_dir(const std::string& dir, HfStaticExportOptions options = small_options()) {
  return export_hf_static(dir, temp_path("refused.slm"), options).status();
}

TEST(HfExportRefusalTest, UnsupportedArchitectureListsTheSupportedOnes) {
  const std::string dir = copy_fixture("llama", "arch_refused");
  edit_config(dir, [](nlohmann::json& c) { c["architectures"] = {"GPTNeoXForCausalLM"}; });
  Status status = export_dir(dir);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("GPTNeoXForCausalLM is not supported (supported: LlamaForCausalLM, "
                                  "Qwen2ForCausalLM, MistralForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
                                  "Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Phi3ForCausalLM, "
                                  "SmolLM3ForCausalLM, GraniteForCausalLM, Olmo2ForCausalLM)"),
            std::string::npos)
      << status.message();
}

TEST(HfExportRefusalTest, MissingTensorIsNamed) {
  const std::string dir = copy_fixture("llama", "missing_tensor");
  edit_config(dir, [](nlohmann::json& c) { c["num_hidden_layers"] = 3; });
  Status status = export_dir(dir);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("model.layers.2.input_layernorm.weight"), std::string::npos) << status.message();
}

TEST(HfExportRefusalTest, WrongShapeIsNamed) {
  const std::string dir = copy_fixture("llama", "wrong_shape");
  edit_config(dir, [](nlohmann::json& c) { c["intermediate_size"] = 96; });
  Status status = export_dir(dir);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("constant 'model.layers.0.mlp.gate_proj.weight' (layer 0 gate_proj): expected "
                                  "shape [96,64], found [128,64]"),
            std::string::npos)
      << status.message();
}

TEST(HfExportRefusalTest, UnknownRopeTypeIsRefused) {
  const std::string dir = copy_fixture("llama", "rope_refused");
  edit_config(dir, [](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; });
  Status status = export_dir(dir);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("rope_scaling type 'yarn' is not supported"), std::string::npos) << status.message();
}

TEST(HfExportRefusalTest, BadOptionsNameTheOption) {
  const std::string dir = testing::fixture_dir("llama");
  HfStaticExportOptions options = small_options();
  options.prefill_len = 128;
  Status status = export_dir(dir, options);
  EXPECT_NE(status.message().find("option 'prefill_len' (128) exceeds 'max_cache_len' (64)"), std::string::npos)
      << status.message();
  options = small_options();
  options.max_cache_len = 100000;
  status = export_dir(dir, options);
  EXPECT_NE(status.message().find("exceeds the model's max_position_embeddings (512)"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace staticlm
