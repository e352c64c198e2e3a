// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/python_strings.h"

#include <algorithm>

#include <utf8proc.h>

#include "staticlm/core/utf8.h"

namespace staticlm::jinja {
namespace {

// One character of the text: its code point (U+FFFD for a byte that is not UTF-8) and bytes.
struct Character {
  char32_t code_point;
  std::string_view bytes;
};

std::vector<Character> characters(std::string_view text) {
  std::vector<Character> out;
  utf8_walk(text, [&](char32_t code_point, size_t pos, size_t length) {
    out.push_back(Character{code_point, text.substr(pos, length == 0 ? 1 : length)});
    return true;
  });
  return out;
}

utf8proc_category_t category(char32_t code_point) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(code_point));
}

bool is_cased(char32_t code_point) {
  const auto c = static_cast<utf8proc_int32_t>(code_point);
  return utf8proc_isupper(c) || utf8proc_islower(c) || category(code_point) == UTF8PROC_CATEGORY_LT;
}

bool is_alpha(char32_t code_point) {
  switch (category(code_point)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return true;
    default: return false;
  }
}

bool is_numeric(char32_t code_point) {
  const utf8proc_category_t c = category(code_point);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

// Appends a character mapped by `map`, or its original bytes when it was not valid UTF-8.
template <typename Map>
void append_mapped(std::string& out, const Character& character, Map map) {
  if (character.code_point == 0xFFFD && character.bytes != "\xEF\xBF\xBD") {
    out.append(character.bytes);
    return;
  }
  utf8_append(out, static_cast<char32_t>(map(static_cast<utf8proc_int32_t>(character.code_point))));
}

template <typename Predicate>
bool all_of_characters(std::string_view text, Predicate predicate) {
  const std::vector<Character> chars = characters(text);
  return !chars.empty() &&
         std::all_of(chars.begin(), chars.end(), [&](const Character& c) { return predicate(c.code_point); });
}

}  // namespace

bool python_is_space(char32_t code_point) {
  if (code_point >= 0x1C && code_point <= 0x1F) {
    return true;  // the information separators have bidi class B or S
  }
  const utf8proc_property_t* property = utf8proc_get_property(static_cast<utf8proc_int32_t>(code_point));
  return property->bidi_class == UTF8PROC_BIDI_CLASS_WS || property->bidi_class == UTF8PROC_BIDI_CLASS_B ||
         property->bidi_class == UTF8PROC_BIDI_CLASS_S || property->category == UTF8PROC_CATEGORY_ZS;
}

std::string python_strip(std::string_view text, const std::optional<std::string>& strip_characters, StripSide side) {
  const std::vector<Character> chars = characters(text);
  std::vector<char32_t> set;
  if (strip_characters) {
    for (const Character& c : characters(*strip_characters)) {
      set.push_back(c.code_point);
    }
  }
  auto strip = [&](const Character& c) {
    return strip_characters ? std::find(set.begin(), set.end(), c.code_point) != set.end()
                            : python_is_space(c.code_point);
  };
  size_t begin = 0;
  size_t end = chars.size();
  if (side != StripSide::kRight) {
    while (begin < end && strip(chars[begin])) {
      ++begin;
    }
  }
  if (side != StripSide::kLeft) {
    while (end > begin && strip(chars[end - 1])) {
      --end;
    }
  }
  if (begin == end) {
    return "";
  }
  const size_t first = static_cast<size_t>(chars[begin].bytes.data() - text.data());
  const size_t last = static_cast<size_t>(chars[end - 1].bytes.data() - text.data()) + chars[end - 1].bytes.size();
  return std::string(text.substr(first, last - first));
}

Result<std::vector<std::string>> python_split(std::string_view text, const std::optional<std::string>& separator,
                                              int64_t max_splits, bool from_right) {
  std::vector<std::string> pieces;
  if (separator) {
    if (separator->empty()) {
      return invalid_argument("empty separator");
    }
    if (!from_right) {
      size_t begin = 0;
      for (size_t at = text.find(*separator);
           at != std::string_view::npos && (max_splits < 0 || static_cast<int64_t>(pieces.size()) < max_splits);
           at = text.find(*separator, begin)) {
        pieces.emplace_back(text.substr(begin, at - begin));
        begin = at + separator->size();
      }
      pieces.emplace_back(text.substr(begin));
      return pieces;
    }
    size_t end = text.size();
    while (max_splits < 0 || static_cast<int64_t>(pieces.size()) < max_splits) {
      if (end < separator->size()) {
        break;
      }
      const size_t at = text.rfind(*separator, end - separator->size());
      if (at == std::string_view::npos) {
        break;
      }
      pieces.emplace_back(text.substr(at + separator->size(), end - at - separator->size()));
      end = at;
    }
    pieces.emplace_back(text.substr(0, end));
    std::reverse(pieces.begin(), pieces.end());
    return pieces;
  }
  // Whitespace runs; with a limit, the rest of the text after the last split is the last piece.
  std::vector<Character> chars = characters(text);
  if (from_right) {
    std::reverse(chars.begin(), chars.end());
  }
  std::vector<std::vector<Character>> words;
  size_t i = 0;
  while (i < chars.size()) {
    while (i < chars.size() && python_is_space(chars[i].code_point)) {
      ++i;
    }
    if (i == chars.size()) {
      break;
    }
    std::vector<Character> word;
    if (max_splits >= 0 && static_cast<int64_t>(words.size()) == max_splits) {
      word.assign(chars.begin() + static_cast<ptrdiff_t>(i), chars.end());  // the rest, as it is
      i = chars.size();
    } else {
      while (i < chars.size() && !python_is_space(chars[i].code_point)) {
        word.push_back(chars[i++]);
      }
    }
    words.push_back(std::move(word));
  }
  for (auto& word : words) {
    if (from_right) {
      std::reverse(word.begin(), word.end());
    }
    std::string piece;
    for (const Character& c : word) {
      piece.append(c.bytes);
    }
    pieces.push_back(std::move(piece));
  }
  if (from_right) {
    std::reverse(pieces.begin(), pieces.end());
  }
  return pieces;
}

std::vector<std::string> python_splitlines(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  const std::vector<Character> chars = characters(text);
  for (size_t i = 0; i < chars.size(); ++i) {
    const char32_t c = chars[i].code_point;
    const bool boundary = c == U'\n' || c == U'\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                          c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!boundary) {
      line.append(chars[i].bytes);
      continue;
    }
    if (c == U'\r' && i + 1 < chars.size() && chars[i + 1].code_point == U'\n') {
      ++i;
    }
    lines.push_back(std::move(line));
    line.clear();
  }
  if (!line.empty()) {
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string python_replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old_text.empty()) {
    const std::vector<Character> chars = characters(text);
    for (size_t i = 0; i <= chars.size(); ++i) {
      if (count < 0 || done < count) {
        out.append(new_text);
        ++done;
      }
      if (i < chars.size()) {
        out.append(chars[i].bytes);
      }
    }
    return out;
  }
  size_t begin = 0;
  for (size_t at = text.find(old_text); at != std::string_view::npos && (count < 0 || done < count);
       at = text.find(old_text, begin)) {
    out.append(text.substr(begin, at - begin));
    out.append(new_text);
    begin = at + old_text.size();
    ++done;
  }
  out.append(text.substr(begin));
  return out;
}

size_t python_replace_size(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count) {
  // python_count counts an empty `old` before every character and at the end, as replace inserts.
  size_t matches = static_cast<size_t>(python_count(text, old_text));
  if (count >= 0) {
    matches = std::min(matches, static_cast<size_t>(count));
  }
  const size_t removed = old_text.empty() ? 0 : matches * old_text.size();
  if (new_text.size() != 0 && matches > (SIZE_MAX - text.size()) / new_text.size()) {
    return SIZE_MAX;
  }
  return text.size() - removed + matches * new_text.size();
}

std::string python_upper(std::string_view text) {
  std::string out;
  for (const Character& c : characters(text)) {
    append_mapped(out, c, utf8proc_toupper);
  }
  return out;
}

std::string python_lower(std::string_view text) {
  std::string out;
  for (const Character& c : characters(text)) {
    append_mapped(out, c, utf8proc_tolower);
  }
  return out;
}

std::string python_capitalize(std::string_view text) {
  std::string out;
  bool first = true;
  for (const Character& c : characters(text)) {
    append_mapped(out, c, first ? utf8proc_totitle : utf8proc_tolower);
    first = false;
  }
  return out;
}

std::string python_title(std::string_view text) {
  std::string out;
  bool previous_cased = false;
  for (const Character& c : characters(text)) {
    if (is_cased(c.code_point)) {
      append_mapped(out, c, previous_cased ? utf8proc_tolower : utf8proc_totitle);
      previous_cased = true;
    } else {
      out.append(c.bytes);
      previous_cased = false;
    }
  }
  return out;
}

bool python_is_alpha(std::string_view text) {
  return all_of_characters(text, is_alpha);
}
bool python_is_digit(std::string_view text) {
  return all_of_characters(text, [](char32_t c) { return category(c) == UTF8PROC_CATEGORY_ND; });
}
bool python_is_alnum(std::string_view text) {
  return all_of_characters(text, [](char32_t c) { return is_alpha(c) || is_numeric(c); });
}
bool python_is_space_string(std::string_view text) {
  return all_of_characters(text, python_is_space);
}

bool python_is_lower(std::string_view text) {
  bool cased = false;
  for (const Character& c : characters(text)) {
    const auto code = static_cast<utf8proc_int32_t>(c.code_point);
    if (utf8proc_isupper(code) || category(c.code_point) == UTF8PROC_CATEGORY_LT) {
      return false;
    }
    cased = cased || utf8proc_islower(code);
  }
  return cased;
}

bool python_is_upper(std::string_view text) {
  bool cased = false;
  for (const Character& c : characters(text)) {
    const auto code = static_cast<utf8proc_int32_t>(c.code_point);
    if (utf8proc_islower(code) || category(c.code_point) == UTF8PROC_CATEGORY_LT) {
      return false;
    }
    cased = cased || utf8proc_isupper(code);
  }
  return cased;
}

int64_t python_find(std::string_view text, std::string_view needle, bool from_right) {
  const size_t at = from_right ? text.rfind(needle) : text.find(needle);
  if (at == std::string_view::npos) {
    return -1;
  }
  return static_cast<int64_t>(characters(text.substr(0, at)).size());
}

int64_t python_count(std::string_view text, std::string_view needle) {
  if (needle.empty()) {
    return static_cast<int64_t>(characters(text).size()) + 1;
  }
  int64_t count = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

}  // namespace staticlm::jinja
