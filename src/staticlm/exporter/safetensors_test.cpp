// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/safetensors.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/core/half.h"
#include "staticlm/exporter/readers_test_files.h"

namespace staticlm {
namespace {

using nlohmann::json;
using testing_files::ScratchDir;

template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) {
    std::memcpy(out.data(), values.data(), out.size());
  }
  return out;
}

std::string as_string(std::span<const uint8_t> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A safetensors file from its parts: 8-byte little-endian header length, header, data.
std::string safetensors_file(std::string_view header, std::string_view data) {
  std::string out;
  const uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((length >> (8 * i)) & 0xffu));
  }
  out += header;
  out += data;
  return out;
}

struct TestTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;
};

// A well-formed file holding `tensors` back to back, with the header padded to 8 bytes the way
// the reference writer does.
std::string write_tensors(const std::vector<TestTensor>& tensors) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const TestTensor& tensor : tensors) {
    header[tensor.name] = {{"dtype", tensor.dtype},
                           {"shape", tensor.shape},
                           {"data_offsets", {data.size(), data.size() + tensor.data.size()}}};
    data += tensor.data;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return safetensors_file(text, data);
}

// Parses one in-memory file and returns the failure (the test fails if it parses).
Status parse_failure(const std::string& file_contents) {
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(file_contents.data()), file_contents.size());
  auto parsed = parse_safetensors(bytes, "bad.safetensors");
  EXPECT_FALSE(parsed.ok()) << "parsed a malformed file";
  return parsed.ok() ? Status() : parsed.status();
}

Status header_failure(std::string_view header, std::string_view data) {
  return parse_failure(safetensors_file(header, data));
}

void expect_error(const Status& status, StatusCode code, std::string_view substring) {
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_NE(status.message().find(substring), std::string::npos)
      << "message: " << status.message() << "\nexpected to contain: " << substring;
}

const std::vector<float> kF32Values = {1.0f, -2.5f, 0.0f, 3.25f, 100.0f, -0.125f};
const std::vector<uint16_t> kF16Values = {0x3c00, 0xc000, 0x3555, 0x7bff};   // 1, -2, ~1/3, 65504
const std::vector<uint16_t> kBF16Values = {0x3f80, 0xc020, 0x4049, 0x0000};  // 1, -2.5, ~3.14, 0

std::vector<TestTensor> mixed_tensors() {
  return {{"model.embed_tokens.weight", "F32", {2, 3}, raw_bytes(kF32Values)},
          {"model.norm.weight", "F16", {4}, raw_bytes(kF16Values)},
          {"lm_head.weight", "BF16", {2, 2}, raw_bytes(kBF16Values)}};
}

TEST(SafetensorsCheckpointTest, SingleFileRoundTripsEachDtype) {
  ScratchDir dir;
  dir.write("model.safetensors", write_tensors(mixed_tensors()));
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  EXPECT_EQ(checkpoint->names(),
            (std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"}));
  EXPECT_EQ(checkpoint->size(), 3u);
  for (const TestTensor& expected : mixed_tensors()) {
    const SafetensorsTensor* tensor = checkpoint->find(expected.name);
    ASSERT_NE(tensor, nullptr) << expected.name;
    EXPECT_EQ(tensor->name, expected.name);
    EXPECT_EQ(tensor->shape, expected.shape);
    EXPECT_EQ(as_string(tensor->bytes), expected.data) << expected.name;
    EXPECT_EQ(tensor->file, dir.file("model.safetensors"));
  }
  EXPECT_EQ(checkpoint->find("model.embed_tokens.weight")->dtype, DType::kF32);
  EXPECT_EQ(checkpoint->find("model.norm.weight")->dtype, DType::kF16);
  EXPECT_EQ(checkpoint->find("lm_head.weight")->dtype, DType::kBF16);
  EXPECT_EQ(checkpoint->find("__metadata__"), nullptr);
  EXPECT_EQ(checkpoint->find("model.layers.0.mlp.up_proj.weight"), nullptr);
}

TEST(SafetensorsCheckpointTest, TensorsStayValidAfterTheCheckpointMoves) {
  ScratchDir dir;
  dir.write("model.safetensors", write_tensors(mixed_tensors()));
  auto opened = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  const SafetensorsTensor* before = opened->find("model.embed_tokens.weight");
  SafetensorsCheckpoint moved = std::move(opened).value();
  EXPECT_EQ(moved.find("model.embed_tokens.weight"), before);
  EXPECT_EQ(as_string(before->bytes), raw_bytes(kF32Values));
}

TEST(SafetensorsCheckpointTest, ScalarsAndEmptyTensorsAreAccepted) {
  ScratchDir dir;
  dir.write("model.safetensors", write_tensors({{"scalar", "F32", {}, raw_bytes(std::vector<float>{7.0f})},
                                                {"empty", "BF16", {0, 16}, ""},
                                                {"after", "F16", {1}, raw_bytes(std::vector<uint16_t>{0x3c00})}}));
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  EXPECT_EQ(checkpoint->find("scalar")->shape, Shape{});
  EXPECT_EQ(checkpoint->find("scalar")->bytes.size(), 4u);
  EXPECT_EQ(checkpoint->find("empty")->bytes.size(), 0u);
  EXPECT_EQ(as_string(checkpoint->find("after")->bytes), raw_bytes(std::vector<uint16_t>{0x3c00}));
}

TEST(SafetensorsCheckpointTest, UnpaddedHeaderLeavesDataUnalignedButReadable) {
  // Header length 1 mod 8: the F32 data starts at an odd address inside the mapping.
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  if (header.size() % 8 == 0) {
    header += " ";
  }
  ScratchDir dir;
  dir.write("model.safetensors", safetensors_file(header, raw_bytes(std::vector<float>{1.5f, -4.0f})));
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  float values[2] = {};
  std::memcpy(values, checkpoint->find("w")->bytes.data(), sizeof(values));
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -4.0f);
}

TEST(SafetensorsCheckpointTest, MissingDirectoryOrFilesIsNotFound) {
  ScratchDir dir;
  auto empty = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(empty.ok());
  expect_error(empty.status(), StatusCode::kNotFound,
               "'" + dir.path() + "': no model.safetensors or model.safetensors.index.json");
  auto absent = SafetensorsCheckpoint::open(dir.file("nope"));
  ASSERT_FALSE(absent.ok());
  expect_error(absent.status(), StatusCode::kNotFound, "no such directory");
}

TEST(SafetensorsCheckpointTest, GetNamesTheMissingTensorAndSuggestsACloseOne) {
  ScratchDir dir;
  dir.write(
      "model.safetensors",
      write_tensors({{"model.layers.0.self_attn.k_proj.weight", "F32", {1}, raw_bytes(kF32Values).substr(0, 4)}}));
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto present = checkpoint->get("model.layers.0.self_attn.k_proj.weight");
  ASSERT_TRUE(present.ok());
  EXPECT_EQ(*present, checkpoint->find("model.layers.0.self_attn.k_proj.weight"));

  auto close = checkpoint->get("model.layers.0.self_attn.q_proj.weight");
  ASSERT_FALSE(close.ok());
  expect_error(close.status(), StatusCode::kNotFound,
               "'" + dir.path() + "': checkpoint has no tensor 'model.layers.0.self_attn.q_proj.weight'");
  EXPECT_NE(close.status().message().find("did you mean 'model.layers.0.self_attn.k_proj.weight'?"), std::string::npos)
      << close.status().message();

  auto far = checkpoint->get("lm_head.bias");
  ASSERT_FALSE(far.ok());
  expect_error(far.status(), StatusCode::kNotFound, "checkpoint has no tensor 'lm_head.bias'");
  EXPECT_EQ(far.status().message().find("did you mean"), std::string::npos) << far.status().message();
}

// --- sharded checkpoints ---

std::string index_json(const json& weight_map) {
  return json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump();
}

TEST(SafetensorsCheckpointTest, ShardedCheckpointReadsEveryShard) {
  ScratchDir dir;
  const std::string a_data = raw_bytes(std::vector<float>{1.0f, 2.0f});
  const std::string b_data = raw_bytes(std::vector<uint16_t>{0x3f80, 0x4000, 0x4040});
  dir.write("model-00001-of-00002.safetensors", write_tensors({{"a", "F32", {2}, a_data}}));
  dir.write("model-00002-of-00002.safetensors",
            write_tensors({{"b", "BF16", {3}, b_data}, {"unlisted", "F32", {1}, a_data.substr(0, 4)}}));
  dir.write("model.safetensors.index.json",
            index_json({{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}}));
  // The index wins over a stray single file.
  dir.write("model.safetensors", "garbage");
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  EXPECT_EQ(checkpoint->names(), (std::vector<std::string>{"a", "b", "unlisted"}));
  EXPECT_EQ(checkpoint->files().size(), 2u);
  EXPECT_EQ(as_string(checkpoint->find("a")->bytes), a_data);
  EXPECT_EQ(checkpoint->find("a")->file, dir.file("model-00001-of-00002.safetensors"));
  EXPECT_EQ(as_string(checkpoint->find("b")->bytes), b_data);
  EXPECT_EQ(checkpoint->find("b")->file, dir.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(checkpoint->find("b")->dtype, DType::kBF16);
  ASSERT_NE(checkpoint->find("unlisted"), nullptr);
}

Status sharded_failure(const ScratchDir& dir) {
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  EXPECT_FALSE(checkpoint.ok()) << "opened a malformed sharded checkpoint";
  return checkpoint.ok() ? Status() : checkpoint.status();
}

TEST(SafetensorsCheckpointTest, RefusesShardNamesOutsideTheDirectory) {
  ScratchDir dir;
  dir.write("shard.safetensors", write_tensors({{"a", "F32", {1}, raw_bytes(std::vector<float>{1.0f})}}));
  dir.write("model.safetensors.index.json", index_json({{"a", "../shard.safetensors"}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "weight_map puts tensor 'a' in '../shard.safetensors', which is not a plain file name inside the "
               "model directory");
  dir.write("model.safetensors.index.json", index_json({{"a", "/etc/passwd"}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument, "'/etc/passwd', which is not a plain file name");
  dir.write("model.safetensors.index.json", index_json({{"a", ".."}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument, "'..', which is not a plain file name");
}

TEST(SafetensorsCheckpointTest, RefusesATensorListedButMissingFromItsShard) {
  ScratchDir dir;
  dir.write("shard.safetensors", write_tensors({{"a", "F32", {1}, raw_bytes(std::vector<float>{1.0f})}}));
  dir.write("model.safetensors.index.json", index_json({{"a", "shard.safetensors"}, {"b", "shard.safetensors"}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "model.safetensors.index.json': weight_map lists tensor 'b' in 'shard.safetensors', but that shard "
               "has no such tensor");
}

TEST(SafetensorsCheckpointTest, RefusesATensorInAnotherShardThanListed) {
  ScratchDir dir;
  const std::string one = raw_bytes(std::vector<float>{1.0f});
  dir.write("s1.safetensors", write_tensors({{"a", "F32", {1}, one}}));
  dir.write("s2.safetensors", write_tensors({{"b", "F32", {1}, one}}));
  dir.write("model.safetensors.index.json",
            index_json({{"a", "s2.safetensors"}, {"b", "s2.safetensors"}, {"c", "s1.safetensors"}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "weight_map lists tensor 'a' in 's2.safetensors', but it is in '");
}

TEST(SafetensorsCheckpointTest, RefusesATensorInTwoShards) {
  ScratchDir dir;
  const std::string one = raw_bytes(std::vector<float>{1.0f});
  dir.write("s1.safetensors", write_tensors({{"a", "F32", {1}, one}}));
  dir.write("s2.safetensors", write_tensors({{"a", "F32", {1}, one}, {"b", "F32", {1}, one}}));
  dir.write("model.safetensors.index.json", index_json({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "tensor 'a' is in both '" + dir.file("s1.safetensors") + "' and '" + dir.file("s2.safetensors") + "'");
}

TEST(SafetensorsCheckpointTest, MissingShardFileIsNotFoundWithTheIndexAsContext) {
  ScratchDir dir;
  dir.write("model.safetensors.index.json", index_json({{"a", "missing.safetensors"}}));
  const Status status = sharded_failure(dir);
  expect_error(status, StatusCode::kNotFound, "model.safetensors.index.json' names shard 'missing.safetensors'");
  expect_error(status, StatusCode::kNotFound, "no such file");
}

TEST(SafetensorsCheckpointTest, RefusesMalformedIndexes) {
  ScratchDir dir;
  dir.write("model.safetensors.index.json", R"({"metadata": {}})");
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "expected \"weight_map\" to be an object of tensor name -> shard file, found none");
  dir.write("model.safetensors.index.json", R"({"weight_map": {}})");
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument, "\"weight_map\" lists no tensors");
  dir.write("model.safetensors.index.json", R"({"weight_map": {"a": 3}})");
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "weight_map entry 'a': expected a shard file name, found 3");
  dir.write("model.safetensors.index.json", R"({"weight_map": {"a": "x", "a": "y"}})");
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "key 'a' appears twice in the object under 'weight_map'");
  dir.write("model.safetensors.index.json", "[]");
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "expected a JSON object at the top level, found array");
}

// --- header validation ---

TEST(SafetensorsParseTest, RefusesAFileShorterThanTheLength) {
  expect_error(parse_failure("\x01\x02\x03"), StatusCode::kDataLoss,
               "'bad.safetensors': 3 bytes is too short for a safetensors file");
  expect_error(parse_failure(""), StatusCode::kDataLoss, "0 bytes is too short");
}

TEST(SafetensorsParseTest, RefusesAHeaderLengthBeyondTheFile) {
  std::string file = safetensors_file(R"({})", "");
  file[0] = 100;  // claims a 100-byte header; 2 bytes follow
  expect_error(parse_failure(file), StatusCode::kDataLoss,
               "'bad.safetensors': header length 100 reaches beyond the end of the file (2 bytes follow the length)");
  std::string huge(8, '\0');
  huge[7] = 0x10;  // 2^60
  expect_error(parse_failure(huge + "{}"), StatusCode::kInvalidArgument,
               "header length 1152921504606846976 exceeds the limit of 100000000 bytes");
}

TEST(SafetensorsParseTest, RefusesBadJsonAndNonObjects) {
  expect_error(header_failure(R"({"w": {"dtype": )", ""), StatusCode::kInvalidArgument,
               "'bad.safetensors': not valid JSON");
  expect_error(header_failure("", ""), StatusCode::kInvalidArgument, "not valid JSON");
  expect_error(header_failure("{\"w\xff\": 1}", ""), StatusCode::kInvalidArgument, "not valid JSON");
  expect_error(header_failure(R"([1, 2])", ""), StatusCode::kInvalidArgument,
               "'bad.safetensors': expected a JSON object at the top level, found array");
  expect_error(header_failure(R"({"w": 5})", ""), StatusCode::kInvalidArgument,
               "'bad.safetensors': tensor 'w': expected an object with dtype, shape and data_offsets, found 5");
}

TEST(SafetensorsParseTest, RefusesUnsupportedDtypes) {
  expect_error(header_failure(R"({"w": {"dtype": "I8", "shape": [4], "data_offsets": [0, 4]}})", "abcd"),
               StatusCode::kInvalidArgument,
               "'bad.safetensors': tensor 'w' has unsupported dtype I8 (supported: F32, F16, BF16)");
  expect_error(header_failure(R"({"w": {"dtype": "f32", "shape": [1], "data_offsets": [0, 4]}})", "abcd"),
               StatusCode::kInvalidArgument, "unsupported dtype f32");
  expect_error(header_failure(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", "abcd"), StatusCode::kInvalidArgument,
               "tensor 'w': expected a string \"dtype\", found none");
}

TEST(SafetensorsParseTest, RefusesInvalidShapes) {
  const std::string expected = "tensor 'w': expected \"shape\" to be an array of non-negative integers, found ";
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 0]}})", ""),
               StatusCode::kInvalidArgument, expected + "[2,-1]");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 0]}})", ""),
               StatusCode::kInvalidArgument, expected + "[2.5]");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 0]}})", ""),
               StatusCode::kInvalidArgument, expected + "\"2\"");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "data_offsets": [0, 0]}})", ""), StatusCode::kInvalidArgument,
               expected + "none");
  // Dimensions whose product overflows 64 bits.
  expect_error(
      header_failure(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", ""),
      StatusCode::kOutOfRange, "'bad.safetensors': tensor 'w': shape [4294967296,4294967296] has more elements");
}

TEST(SafetensorsParseTest, RefusesOffsetsBeyondTheBuffer) {
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", "abcd"),
               StatusCode::kInvalidArgument,
               "'bad.safetensors': tensor 'w': data_offsets [0, 8] reach beyond the data buffer, which holds 4 bytes");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", "abcd"),
               StatusCode::kInvalidArgument, "data_offsets [4, 0] has begin after end");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "abcd"),
               StatusCode::kInvalidArgument,
               "expected \"data_offsets\" to be [begin, end] of non-negative integers, found [0]");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", "abcd"),
               StatusCode::kInvalidArgument, "found [-4,0]");
  expect_error(
      header_failure(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 18446744073709551615]}})", "abcd"),
      StatusCode::kInvalidArgument, "expected \"data_offsets\" to be [begin, end]");
}

TEST(SafetensorsParseTest, RefusesASizeThatDoesNotMatchTheShape) {
  expect_error(
      header_failure(R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 8]}})", std::string(16, 'x')),
      StatusCode::kInvalidArgument,
      "'bad.safetensors': tensor 'w': data_offsets [0, 8] hold 8 bytes, but BF16 [2,3] needs 12");
}

TEST(SafetensorsParseTest, RefusesOverlappingTensors) {
  expect_error(header_failure(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                  "b": {"dtype": "F16", "shape": [2], "data_offsets": [6, 10]}})",
                              std::string(16, 'x')),
               StatusCode::kInvalidArgument,
               "'bad.safetensors': tensors 'a' (bytes [0, 8)) and 'b' (bytes [6, 10)) overlap");
  // The same range twice is an overlap too.
  expect_error(header_failure(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                                  "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                              std::string(8, 'x')),
               StatusCode::kInvalidArgument, "tensors 'a' (bytes [4, 8)) and 'b' (bytes [4, 8)) overlap");
}

TEST(SafetensorsParseTest, RefusesDuplicateTensorNames) {
  expect_error(header_failure(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                  "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                              std::string(8, 'x')),
               StatusCode::kInvalidArgument, "'bad.safetensors': key 'w' appears twice at the top level");
  expect_error(header_failure(R"({"w": {"dtype": "F32", "dtype": "I8", "shape": [1], "data_offsets": [0, 4]}})",
                              std::string(4, 'x')),
               StatusCode::kInvalidArgument, "key 'dtype' appears twice in the object under 'w'");
}

TEST(SafetensorsParseTest, ChecksMetadataIsAStringMap) {
  expect_error(header_failure(R"({"__metadata__": {"format": 1}})", ""), StatusCode::kInvalidArgument,
               "'bad.safetensors': \"__metadata__\" key 'format': expected a string, found 1");
  expect_error(header_failure(R"({"__metadata__": []})", ""), StatusCode::kInvalidArgument,
               "\"__metadata__\" must be an object of strings, found []");
  const std::string ok_file = safetensors_file(R"({"__metadata__": {"format": "pt"}})", "");
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(ok_file.data()), ok_file.size());
  auto parsed = parse_safetensors(bytes, "ok.safetensors");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->empty());
}

TEST(SafetensorsCheckpointTest, ShardErrorsNameTheShard) {
  ScratchDir dir;
  dir.write("s1.safetensors", safetensors_file(R"({"a": {"dtype": "I8", "shape": [1], "data_offsets": [0, 1]}})", "x"));
  dir.write("model.safetensors.index.json", index_json({{"a", "s1.safetensors"}}));
  expect_error(sharded_failure(dir), StatusCode::kInvalidArgument,
               "'" + dir.file("s1.safetensors") + "': tensor 'a' has unsupported dtype I8");
}

// --- converted sources ---

Result<std::vector<uint8_t>> read_all(const ByteSource& source) {
  std::vector<uint8_t> out(source.size_bytes());
  STATICLM_RETURN_IF_ERROR(source.read(out));
  return out;
}

SafetensorsTensor view_tensor(DType dtype, Shape shape, const std::string& bytes) {
  SafetensorsTensor tensor;
  tensor.name = "w";
  tensor.file = "model.safetensors";
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  tensor.bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return tensor;
}

TEST(ConvertedSourceTest, Bf16ToF32) {
  const std::string bytes = raw_bytes(kBF16Values);
  auto source = converted_source(view_tensor(DType::kBF16, {4}, bytes), DType::kF32);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  EXPECT_EQ((*source)->size_bytes(), 16u);
  auto out = read_all(**source);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<float> values(4);
  std::memcpy(values.data(), out->data(), 16);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.5f);
  EXPECT_EQ(values[2], bf16_to_f32(0x4049));
  EXPECT_NEAR(values[2], 3.14f, 0.01f);
  EXPECT_EQ(values[3], 0.0f);
}

TEST(ConvertedSourceTest, F32ToF16RoundsToNearest) {
  const std::vector<float> inputs = {1.0f, -2.0f, 0.1f, 65504.0f, 1e6f, 1e-8f};
  const std::string bytes = raw_bytes(inputs);
  auto source = converted_source(view_tensor(DType::kF32, {2, 3}, bytes), DType::kF16);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  EXPECT_EQ((*source)->size_bytes(), 12u);
  auto out = read_all(**source);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<uint16_t> halves(6);
  std::memcpy(halves.data(), out->data(), 12);
  EXPECT_EQ(halves[0], 0x3c00);
  EXPECT_EQ(halves[1], 0xc000);
  EXPECT_EQ(halves[2], 0x2e66);  // 0.1 rounds to 0.0999755859375
  EXPECT_EQ(halves[3], 0x7bff);
  EXPECT_EQ(halves[4], 0x7c00);  // overflow to infinity
  EXPECT_EQ(halves[5], 0x0000);  // below the smallest subnormal
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(halves[i], f32_to_f16(inputs[i])) << i;
  }
}

TEST(ConvertedSourceTest, F16ToBf16AndSameDtypeCopy) {
  const std::string bytes = raw_bytes(kF16Values);
  auto to_bf16 = converted_source(view_tensor(DType::kF16, {4}, bytes), DType::kBF16);
  ASSERT_TRUE(to_bf16.ok()) << to_bf16.status().to_string();
  auto out = read_all(**to_bf16);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<uint16_t> bf16(4);
  std::memcpy(bf16.data(), out->data(), 8);
  EXPECT_EQ(bf16[0], 0x3f80);  // 1.0
  EXPECT_EQ(bf16[1], 0xc000);  // -2.0
  EXPECT_EQ(bf16[2], f32_to_bf16(f16_to_f32(0x3555)));
  EXPECT_EQ(bf16[3], 0x4780);  // 65504 rounds up to 65536 in bf16

  auto same = converted_source(view_tensor(DType::kF16, {4}, bytes), DType::kF16);
  ASSERT_TRUE(same.ok());
  auto copied = read_all(**same);
  ASSERT_TRUE(copied.ok());
  EXPECT_EQ(std::string(copied->begin(), copied->end()), bytes);
}

TEST(ConvertedSourceTest, ConvertsStraightFromTheMapping) {
  ScratchDir dir;
  dir.write("model.safetensors", write_tensors(mixed_tensors()));
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  auto source = converted_source(*checkpoint->find("model.embed_tokens.weight"), DType::kBF16);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto out = read_all(**source);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<uint16_t> bf16(kF32Values.size());
  std::memcpy(bf16.data(), out->data(), out->size());
  EXPECT_EQ(bf16[0], 0x3f80);  // 1.0
  EXPECT_EQ(bf16[1], 0xc020);  // -2.5
  for (size_t i = 0; i < kF32Values.size(); ++i) {
    EXPECT_EQ(bf16_to_f32(bf16[i]), kF32Values[i]) << i;  // every value is exact in bf16
  }
}

TEST(ConvertedSourceTest, RefusesOtherDtypesAndWrongReadSizes) {
  const std::string bytes = raw_bytes(kF32Values);
  auto to_int = converted_source(view_tensor(DType::kF32, {6}, bytes), DType::kI8);
  ASSERT_FALSE(to_int.ok());
  expect_error(to_int.status(), StatusCode::kInvalidArgument,
               "tensor 'w' in 'model.safetensors': cannot convert f32 to i8 (supported: f32, f16, bf16)");
  auto source = converted_source(view_tensor(DType::kF32, {6}, bytes), DType::kF16);
  ASSERT_TRUE(source.ok());
  std::vector<uint8_t> too_small(4);
  expect_error((*source)->read(too_small), StatusCode::kInternal, "holds 12 bytes, asked for 4");
}

}  // namespace
}  // namespace staticlm
