// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/byte_level.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(ByteLevelTest, MatchesTheGpt2Alphabet) {
  std::string mapped;
  byte_level_encode(std::string("a \n\x7F\xAD", 5), mapped);
  // 'a' stays, space -> U+0120 'Ġ', newline -> U+010A 'Ċ', DEL -> U+0121 'ġ', soft hyphen -> U+0143 'Ń'.
  EXPECT_EQ(mapped, "a\xC4\xA0\xC4\x8A\xC4\xA1\xC5\x83");
  auto bytes = byte_level_decode(mapped);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(*bytes, std::string("a \n\x7F\xAD", 5));
  EXPECT_FALSE(byte_level_decode("a b").has_value());  // a plain space is outside the alphabet
  EXPECT_EQ(parse_byte_token("<0xE2>"), 0xE2);
  EXPECT_EQ(parse_byte_token("<0xZ2>"), -1);
  EXPECT_EQ(parse_byte_token("<0xE2"), -1);
}

}  // namespace
}  // namespace staticlm
