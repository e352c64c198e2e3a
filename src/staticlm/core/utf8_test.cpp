// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/utf8.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Utf8Test, RepairReplacesEachMaximalIllFormedSubsequence) {
  EXPECT_EQ(utf8_repair("ab"), "ab");
  EXPECT_EQ(utf8_repair("\xE2\x82\xAC"), "\xE2\x82\xAC");
  // An unfinished 3-byte sequence followed by ASCII is one subpart.
  EXPECT_EQ(utf8_repair("\xE2\x82"
                        "A"),
            kReplacement + "A");
  // Overlong encodings and surrogates: every byte is its own subpart.
  EXPECT_EQ(utf8_repair("\xC0\x80"), kReplacement + kReplacement);
  EXPECT_EQ(utf8_repair("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);
  EXPECT_EQ(utf8_repair("\x80"), kReplacement);
  EXPECT_EQ(utf8_repair("\xF0\x9F\x98"), kReplacement);
}

TEST(Utf8Test, IncompleteTailCountsOnlyBytesThatCanStillBecomeValid) {
  EXPECT_EQ(utf8_incomplete_tail_length(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail_length("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail_length("ab\xE2"), 1u);
  EXPECT_EQ(utf8_incomplete_tail_length("ab\xE2\x82"), 2u);
  EXPECT_EQ(utf8_incomplete_tail_length("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_incomplete_tail_length("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(utf8_incomplete_tail_length("\xE2"
                                        "A"),
            0u);
  EXPECT_EQ(utf8_incomplete_tail_length("\xED\xA0"), 0u);  // would be a surrogate
  EXPECT_EQ(utf8_incomplete_tail_length("\x82"), 0u);
}

TEST(Utf8Test, ValidityAndDecoding) {
  EXPECT_TRUE(utf8_is_valid("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(utf8_is_valid("\xFF"));
  EXPECT_FALSE(utf8_is_valid("\xE0\x80\x80"));
  char32_t code_point = 0;
  EXPECT_EQ(utf8_decode_char("\xE2\x82\xAC", 0, code_point), 3u);
  EXPECT_EQ(code_point, U'\u20AC');
  std::string encoded;
  utf8_append(encoded, U'\U0001F600');
  EXPECT_EQ(encoded, "\xF0\x9F\x98\x80");
  EXPECT_TRUE(utf8_is_white_space(U'\u3000'));
  EXPECT_FALSE(utf8_is_white_space(U'\u200B'));
}

}  // namespace
}  // namespace staticlm
