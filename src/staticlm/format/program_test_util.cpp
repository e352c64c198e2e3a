// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/program_test_util.h"

#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace staticlm::testing_util {

ScratchDir::ScratchDir() {
  std::string pattern = (std::filesystem::path(::testing::TempDir()) / "staticlm_format_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
  }
  dir_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code error;
  std::filesystem::remove_all(dir_, error);
}

std::vector<std::string> ScratchDir::entries() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<uint8_t> pattern_bytes(size_t count, uint32_t seed) {
  std::vector<uint8_t> bytes(count);
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    bytes[i] = static_cast<uint8_t>(state >> 24);
  }
  return bytes;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

namespace {

ConstantSpec constant(std::string name, DType dtype, Shape shape, size_t bytes, uint32_t seed) {
  return ConstantSpec{std::move(name), dtype, std::move(shape), make_owned_source(pattern_bytes(bytes, seed))};
}

}  // namespace

ProgramSpec sample_spec() {
  ProgramSpec spec;
  spec.metadata = {
      {"num_layers", int64_t{-12}},
      {"rope_theta", 10000.5},
      {"architecture", std::string("llama")},
      {"tie_embeddings", true},
      {"eos_token_ids", std::vector<int64_t>{2, 32000, -1}},
  };
  // Sizes chosen so small constants need padding between them and large ones are over 16 KiB.
  spec.constants.push_back(constant("norm.weight", DType::kF32, {4, 4}, 64, 1));
  spec.constants.push_back(constant("bias.f16", DType::kF16, {3}, 6, 2));
  spec.constants.push_back(constant("embed.weight", DType::kBF16, {128, 96}, 128 * 96 * 2, 3));
  spec.constants.push_back(constant("ids.i8", DType::kI8, {7}, 7, 4));
  spec.constants.push_back(constant("lm_head.q8", DType::kQ8_0, {64, 256}, 64 * 256 / 32 * 34, 5));
  spec.constants.push_back(constant("scalar.i64", DType::kI64, {}, 8, 6));

  MethodSpec decode;
  decode.name = "decode";
  decode.inputs = {{"tokens", 0, false}, {"k_cache", 1, true}};
  decode.outputs = {{"logits", 2, false}};
  decode.values = {
      {DType::kI64, {1, 1}, ValueStorage::kInput, 0, {}},  {DType::kF32, {2, 4}, ValueStorage::kInput, 1, {}},
      {DType::kF32, {1, 8}, ValueStorage::kOutput, 0, {}}, {DType::kF32, {4, 4}, ValueStorage::kConstant, 0, {}},
      {DType::kF32, {4, 4}, ValueStorage::kArena, 0, {}},  {DType::kF32, {4, 4}, ValueStorage::kArena, 64, {}},
  };
  decode.instructions = {
      KernelCallSpec{"linear",
                     {4, 3, kAbsentValue},
                     {5},
                     Attributes{{"axis", int64_t{-1}},
                                {"eps", 1e-6},
                                {"mode", std::string("rope_neox")},
                                {"perm", std::vector<int64_t>{0, 2, 1, 3}}}},
      DelegateCallSpec{0, {0, 1, 5}, {2, 4}},
  };
  decode.arena_size = 128;
  decode.arena_alignment = 64;

  MethodSpec prefill;
  prefill.name = "prefill";
  prefill.inputs = {{"tokens", 0, false}};
  prefill.outputs = {{"hidden", 1, false}};
  prefill.values = {
      {DType::kI64, {1, 16}, ValueStorage::kInput, 0, {}},
      {DType::kBF16, {128, 96}, ValueStorage::kOutput, 0, {}},
      {DType::kBF16, {128, 96}, ValueStorage::kConstant, 2, {}},
  };
  prefill.instructions = {KernelCallSpec{"embedding", {2, 0}, {1}, {}}};
  prefill.arena_size = 0;
  prefill.arena_alignment = 4096;
  spec.methods = {std::move(decode), std::move(prefill)};

  DelegateSpec delegate;
  delegate.backend_id = "test_npu";
  delegate.compile_specs = {{"soc", {'s', 'm', '8', '6', '5', '0'}}, {"empty", {}}};
  delegate.blob = make_owned_source(pattern_bytes(100, 7));
  delegate.output_order = {1, 0};
  spec.delegates = {std::move(delegate)};

  const std::string tokenizer = R"({"model": {"type": "BPE"}})";
  spec.files = {
      {"tokenizer.json", make_owned_source(std::vector<uint8_t>(tokenizer.begin(), tokenizer.end()))},
      {"empty.txt", make_owned_source({})},
  };
  return spec;
}

}  // namespace staticlm::testing_util
