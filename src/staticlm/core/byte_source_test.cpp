// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/byte_source.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

using ::testing::IsSubstring;

std::vector<uint8_t> read_all(const ByteSource& source) {
  std::vector<uint8_t> out(source.size_bytes(), 0xee);
  Status status = source.read(out);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return out;
}

TEST(ByteSourceTest, OwnedSourceReturnsItsBytes) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 250, 0, 9};
  std::shared_ptr<ByteSource> source = make_owned_source(bytes);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->size_bytes(), bytes.size());
  EXPECT_EQ(read_all(*source), bytes);
  // Reading is repeatable.
  EXPECT_EQ(read_all(*source), bytes);
}

TEST(ByteSourceTest, OwnedSourceKeepsItsOwnCopy) {
  std::vector<uint8_t> bytes = {4, 5, 6};
  std::shared_ptr<ByteSource> source = make_owned_source(bytes);
  bytes[0] = 99;
  bytes.clear();
  EXPECT_EQ(read_all(*source), (std::vector<uint8_t>{4, 5, 6}));
}

TEST(ByteSourceTest, BorrowedSourceReadsTheCurrentBytes) {
  std::vector<uint8_t> bytes = {10, 20, 30, 40};
  std::shared_ptr<ByteSource> source = make_borrowed_source(bytes);
  EXPECT_EQ(source->size_bytes(), 4u);
  EXPECT_EQ(read_all(*source), bytes);
  bytes[2] = 33;  // a borrow sees the owner's memory, not a snapshot
  EXPECT_EQ(read_all(*source), (std::vector<uint8_t>{10, 20, 33, 40}));
}

TEST(ByteSourceTest, EmptySources) {
  std::shared_ptr<ByteSource> owned = make_owned_source({});
  std::shared_ptr<ByteSource> borrowed = make_borrowed_source({});
  for (const ByteSource* source : {owned.get(), borrowed.get()}) {
    EXPECT_EQ(source->size_bytes(), 0u);
    EXPECT_TRUE(source->read(std::span<uint8_t>()).ok());
  }
}

TEST(ByteSourceTest, WrongSizeOutputRefused) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5};
  std::shared_ptr<ByteSource> owned = make_owned_source(bytes);
  std::shared_ptr<ByteSource> borrowed = make_borrowed_source(bytes);
  for (const ByteSource* source : {owned.get(), borrowed.get()}) {
    for (size_t size : {size_t{0}, size_t{4}, size_t{6}}) {
      std::vector<uint8_t> out(size, 0xee);
      Status status = source->read(out);
      ASSERT_FALSE(status.ok()) << size;
      EXPECT_EQ(status.code(), StatusCode::kInternal);
      EXPECT_PRED_FORMAT2(IsSubstring, "holds 5 bytes, asked for " + std::to_string(size), status.message());
      // Nothing is written on failure.
      EXPECT_EQ(out, std::vector<uint8_t>(size, 0xee));
    }
  }
}

}  // namespace
}  // namespace staticlm
