// SPDX-License-Identifier: Apache-2.0
// Suggestions for a misspelled name: the known names closest to it, for "did you mean" hints in
// messages that refuse an unknown option, value or backend.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

// Edit distance counting insertions, deletions, substitutions and swaps of two adjacent
// characters as one edit each (so "use_fp61" is 1 from "use_fp16").
size_t edit_distance(std::string_view a, std::string_view b);

// Up to `limit` names from `known` that are close to `name`: within about a third of its
// length in edits, or containing it (so "fp16" finds "use_fp16"). Closest first, ties in the
// order of `known`.
std::vector<std::string> closest_names(std::string_view name, std::span<const std::string> known, size_t limit = 3);

// " (did you mean 'a' or 'b'?)", or "" when nothing is close.
std::string did_you_mean(std::string_view name, std::span<const std::string> known);

}  // namespace staticlm
