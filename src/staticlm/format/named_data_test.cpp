// SPDX-License-Identifier: Apache-2.0
// Named data and method blobs: entries written once and read back zero-copy by key, NamedData
// values checked against them, and a method serialized on its own read back through the same
// method rules (minus constants and delegate calls, which a blob cannot have).
#include <cstring>

#include <gtest/gtest.h>

#include "staticlm/format/method_blob.h"
#include "staticlm/format/method_reader.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_test_util.h"
#include "staticlm/format/program_writer.h"

namespace staticlm {
namespace {

using testing_util::pattern_bytes;
using testing_util::ScratchDir;

ValueSpec named(std::string key, Shape shape) {
  return ValueSpec{DType::kF32, std::move(shape), ValueStorage::kNamedData, 0, std::move(key)};
}

// forward(x: f32[8]) -> y = x + w, w named data "packed/w" (32 bytes, plus a large entry).
ProgramSpec spec_with_named_data() {
  ProgramSpec spec;
  spec.named_data.push_back({"packed/w", make_owned_source(pattern_bytes(32, 1)), 64});
  spec.named_data.push_back({"packed/large", make_owned_source(pattern_bytes(20000, 2)), 64});
  MethodSpec method;
  method.name = "forward";
  method.values = {{DType::kF32, {8}, ValueStorage::kInput, 0, {}},
                   named("packed/w", {8}),
                   {DType::kF32, {8}, ValueStorage::kOutput, 0, {}}};
  method.inputs = {{"x", 0, false}};
  method.outputs = {{"y", 2, false}};
  method.instructions.push_back(KernelCallSpec{"add", {0, 1}, {2}, {}});
  spec.methods.push_back(method);
  return spec;
}

TEST(NamedDataTest, EntriesAreStoredOnceAndReadBackByKeyZeroCopy) {
  ScratchDir dir;
  const std::string path = dir.path("named.slm");
  auto summary = write_program(spec_with_named_data(), path);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(summary->named_data_bytes, 32u + 20000u);
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto small = (*file)->named_data("packed/w");
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(std::vector<uint8_t>(small->begin(), small->end()), pattern_bytes(32, 1));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 64, 0u);
  auto large = (*file)->named_data("packed/large");
  ASSERT_TRUE(large.has_value());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large->data()) % 4096, 0u) << "large entries map page-aligned";
  EXPECT_FALSE((*file)->named_data("packed/none").has_value());
  const fb::Value* value = (*file)->find_method("forward")->values()->Get(1);
  EXPECT_EQ(value->storage(), fb::StorageKind::NamedData);
  EXPECT_EQ(value->key()->str(), "packed/w");
}

TEST(NamedDataTest, TheWriterRefusesWhatTheReaderWould) {
  ScratchDir dir;
  auto refused = [&](ProgramSpec spec) { return write_program(spec, dir.path("bad.slm")).status(); };
  ProgramSpec duplicate = spec_with_named_data();
  duplicate.named_data.push_back({"packed/w", make_owned_source(pattern_bytes(32, 3)), 64});
  EXPECT_NE(refused(duplicate).message().find("duplicate named data key 'packed/w'"), std::string::npos)
      << refused(duplicate).message();
  ProgramSpec missing = spec_with_named_data();
  missing.methods[0].values[1].key = "packed/v";
  EXPECT_NE(refused(missing).message().find("value 1: named data 'packed/v' does not exist"), std::string::npos)
      << refused(missing).message();
  ProgramSpec wrong_size = spec_with_named_data();
  wrong_size.methods[0].values[1].key = "packed/large";
  EXPECT_NE(refused(wrong_size).message().find("f32[8] = 32 bytes, but named data 'packed/large' holds 20000"),
            std::string::npos)
      << refused(wrong_size).message();
  ProgramSpec no_key = spec_with_named_data();
  no_key.methods[0].values[1].key.clear();
  EXPECT_NE(refused(no_key).message().find("named data value without a key"), std::string::npos);
  ProgramSpec misaligned = spec_with_named_data();
  misaligned.named_data[0].alignment = 3;
  EXPECT_NE(refused(misaligned).message().find("alignment 3 is not a power of two"), std::string::npos);
}

TEST(MethodBlobTest, AMethodRoundTripsThroughItsBlob) {
  MethodSpec method = spec_with_named_data().methods[0];
  method.instructions[0] = KernelCallSpec{"add", {0, 1}, {2}, Attributes{{"note", std::string("kept")}}};
  auto blob = write_method_blob(method);
  ASSERT_TRUE(blob.ok()) << blob.status().to_string();
  auto read = read_method_blob(*blob);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  auto spec = read_method_spec(**read);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  EXPECT_EQ(spec->name, "forward");
  ASSERT_EQ(spec->values.size(), 3u);
  EXPECT_EQ(spec->values[1].storage, ValueStorage::kNamedData);
  EXPECT_EQ(spec->values[1].key, "packed/w");
  const auto& call = std::get<KernelCallSpec>(spec->instructions[0]);
  EXPECT_EQ(call.op, "add");
  EXPECT_EQ(*call.attributes.get_string("note"), "kept");
}

TEST(MethodBlobTest, ABlobHasNoConstantsAndCallsNoDelegate) {
  MethodSpec with_constant = spec_with_named_data().methods[0];
  with_constant.values[1] = {DType::kF32, {8}, ValueStorage::kConstant, 0, {}};
  auto refused = write_method_blob(with_constant);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a method blob has no constants"), std::string::npos)
      << refused.status().message();
  MethodSpec with_delegate = spec_with_named_data().methods[0];
  with_delegate.instructions.push_back(DelegateCallSpec{0, {0}, {2}});
  refused = write_method_blob(with_delegate);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a method blob cannot call a delegate"), std::string::npos);
}

TEST(MethodBlobTest, BytesThatAreNotABlobAreDataLoss) {
  EXPECT_EQ(read_method_blob({}).status().code(), StatusCode::kDataLoss);
  const std::vector<uint8_t> garbage(64, 0x5a);
  EXPECT_EQ(read_method_blob(garbage).status().code(), StatusCode::kDataLoss);
  std::vector<uint8_t> blob = *write_method_blob(spec_with_named_data().methods[0]);
  blob.resize(blob.size() / 2);
  EXPECT_EQ(read_method_blob(blob).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace staticlm
