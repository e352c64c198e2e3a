// SPDX-License-Identifier: Apache-2.0
// Python's str methods over UTF-8 text, character by character as Python counts them (code
// points), for the methods and filters templates call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm::jinja {

// str.isspace() for one character.
bool python_is_space(char32_t code_point);

enum class StripSide { kBoth, kLeft, kRight };
// str.strip / lstrip / rstrip: whitespace, or any character of `characters` when given.
std::string python_strip(std::string_view text, const std::optional<std::string>& characters, StripSide side);

// str.split / rsplit: on runs of whitespace (dropping empty pieces) when `separator` is absent;
// at most `max_splits` splits when it is not negative. Fails (InvalidArgument) for an empty separator.
Result<std::vector<std::string>> python_split(std::string_view text, const std::optional<std::string>& separator,
                                              int64_t max_splits, bool from_right);
// str.splitlines(): at every line boundary Python knows, the boundaries dropped.
std::vector<std::string> python_splitlines(std::string_view text);
// str.replace: at most `count` replacements when not negative; an empty `old` inserts between characters.
std::string python_replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count);
// The size python_replace's result would have, found without building it (saturating at SIZE_MAX).
size_t python_replace_size(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count);

std::string python_upper(std::string_view text);
std::string python_lower(std::string_view text);
// str.capitalize(): the first character upper case, the rest lower.
std::string python_capitalize(std::string_view text);
// str.title(): each run of cased letters starts upper case and continues lower.
std::string python_title(std::string_view text);

// The character classes of str.isalpha / isdigit / isalnum / islower / isupper over whole strings.
bool python_is_alpha(std::string_view text);
bool python_is_digit(std::string_view text);
bool python_is_alnum(std::string_view text);
bool python_is_lower(std::string_view text);
bool python_is_upper(std::string_view text);
bool python_is_space_string(std::string_view text);

// The code-point index of `needle` in `text` (str.find / rfind), or -1.
int64_t python_find(std::string_view text, std::string_view needle, bool from_right);
// Non-overlapping occurrences (str.count); an empty needle counts the gaps between characters.
int64_t python_count(std::string_view text, std::string_view needle);

}  // namespace staticlm::jinja
