// SPDX-License-Identifier: Apache-2.0
// Prompt lookup's guesses and the draft length's adaptation, without a model: the longest match
// wins over a later shorter one, the latest of equal matches wins, a loop is continued past the
// end of the text, ids past the vocabulary end a guess; the length grows while guesses are kept,
// shrinks to what was kept, and pauses with a growing back-off while nothing is.
#include "staticlm/llm/speculation.h"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

std::vector<int32_t> guesses(int max_ngram, const std::vector<int32_t>& text, int64_t max_tokens,
                             int64_t vocab_limit = 1000) {
  std::vector<int32_t> out;
  EXPECT_TRUE(make_prompt_lookup(max_ngram)->propose(text, max_tokens, vocab_limit, out).ok());
  return out;
}

TEST(PromptLookupTest, TheLongestMatchWinsAndTheLatestOfEqualOnes) {
  // "1 2 3" occurs at the start followed by 4 5; "3" alone occurs later followed by 9.
  const std::vector<int32_t> text = {1, 2, 3, 4, 5, 7, 3, 9, 8, 1, 2, 3};
  EXPECT_EQ(guesses(3, text, 2), (std::vector<int32_t>{4, 5}));
  // Matching one token only: the latest "3" with something after it, at index 6.
  EXPECT_EQ(guesses(1, text, 2), (std::vector<int32_t>{9, 8}));
  // Nothing to match: no guess.
  EXPECT_TRUE(guesses(3, {5, 6, 7}, 4).empty());
  EXPECT_TRUE(guesses(3, {5}, 4).empty());
}

TEST(PromptLookupTest, ALoopIsContinuedPastTheEndOfTheText) {
  // Period 2: the latest match of "a b" is two tokens back; the copy reads its own guesses.
  EXPECT_EQ(guesses(2, {9, 4, 5, 4, 5}, 5), (std::vector<int32_t>{4, 5, 4, 5, 4}));
  EXPECT_EQ(guesses(1, {7, 7}, 3), (std::vector<int32_t>{7, 7, 7}));
}

TEST(PromptLookupTest, IdsPastTheVocabularyEndTheGuess) {
  EXPECT_EQ(guesses(2, {1, 2, 3, 2000, 4, 1, 2}, 4, 1000), (std::vector<int32_t>{3}));
}

TEST(DraftLengthTest, GrowsWhileKeptShrinksToWhatWasKeptAndPausesWhenNothingIs) {
  DraftLength length(8);
  EXPECT_EQ(length.next(), 2);
  length.checked(2, 2);
  EXPECT_EQ(length.next(), 4);
  length.checked(4, 4);
  EXPECT_EQ(length.next(), 6);
  length.checked(6, 6);
  EXPECT_EQ(length.next(), 8);
  length.checked(8, 3);
  EXPECT_EQ(length.next(), 4);
  length.checked(4, 4);
  EXPECT_EQ(length.next(), 6);
  length.checked(2, 2);  // fewer guessed than asked, all kept: still grows, up to the most
  EXPECT_EQ(length.next(), 8);
  length.checked(8, 8);
  EXPECT_EQ(length.next(), 8);
  // Checks that keep nothing halve the length, and the share of guesses kept (0.88 so far) falls
  // by 0.3 of itself each: below 0.15 guessing pauses for 16 steps.
  int checks = 0;
  while (length.next() > 0) {
    length.checked(1, 0);
    ASSERT_LE(++checks, 8);
  }
  EXPECT_EQ(checks, 5);
  for (int i = 1; i < 16; ++i) {
    EXPECT_EQ(length.next(), 0) << i;
  }
  // Right after a pause one check that keeps nothing pauses again, twice as long.
  EXPECT_EQ(length.next(), 1);
  length.checked(1, 0);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(length.next(), 0) << i;
  }
  EXPECT_EQ(length.next(), 1);
  // A kept guess resets the back-off.
  length.checked(1, 1);
  EXPECT_EQ(length.next(), 3);
}

TEST(SpeculationOptionsTest, OutOfRangeValuesAndTwoProposersAreRefusedByName) {
  SpeculationOptions options;
  options.lookup_ngram = 2;
  EXPECT_TRUE(check_speculation_options(options).ok());
  options.draft_max = 65;
  EXPECT_NE(check_speculation_options(options).message().find("draft_max"), std::string::npos);
  options.draft_max = 8;
  options.draft_p_min = 1.5f;
  EXPECT_NE(check_speculation_options(options).message().find("draft_p_min"), std::string::npos);
  options.draft_p_min = 0.5f;
  options.lookup_ngram = -1;
  EXPECT_NE(check_speculation_options(options).message().find("lookup_ngram"), std::string::npos);
  auto proposer = make_prompt_lookup(2);
  options.lookup_ngram = 2;
  options.proposer = proposer.get();
  EXPECT_NE(check_speculation_options(options).message().find("one proposer"), std::string::npos);
}

}  // namespace
}  // namespace staticlm
