// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/json_schema_parts.h"

#include <algorithm>
#include <cstdio>

#include "staticlm/core/utf8.h"

namespace staticlm::json_schema {
namespace {

std::string hex_escape(char32_t c) {
  char buffer[16];
  if (c <= 0xFF) {
    std::snprintf(buffer, sizeof(buffer), "\\x%02X", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buffer, sizeof(buffer), "\\u%04X", static_cast<unsigned>(c));
  } else {
    std::snprintf(buffer, sizeof(buffer), "\\U%08X", static_cast<unsigned>(c));
  }
  return buffer;
}

// A code point inside a GBNF class [...].
std::string class_char(char32_t c) {
  if (c < 0x20 || c == 0x7F || c == '\\' || c == ']' || c == '[' || c == '-' || c == '^' || c == '"') {
    return hex_escape(c);
  }
  std::string out;
  utf8_append(out, c);
  return out;
}

// The one escape this compiler writes for a character JSON must escape.
std::string json_escape(char32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: break;
  }
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
  return buffer;
}

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  utf8_walk(text, [&](char32_t c, size_t, size_t) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += hex_escape(c);
    } else {
      utf8_append(out, c);
    }
    return true;
  });
  return out + "\"";
}

std::string json_string_char(const std::vector<CodePointRange>& ranges) {
  std::vector<std::string> alternatives;
  std::vector<CodePointRange> plain;
  for (const CodePointRange& range : ranges) {
    for (char32_t c = range.first; c <= range.last && c < 0x20; ++c) {
      alternatives.push_back(gbnf_literal(json_escape(c)));
    }
    // The plain part of the range, with " and \ cut out.
    char32_t first = std::max<char32_t>(range.first, 0x20);
    const char32_t last = range.last;
    for (char32_t special : {char32_t{'"'}, char32_t{'\\'}}) {
      if (first <= special && special <= last) {
        if (first < special) {
          plain.push_back({first, special - 1});
        }
        alternatives.push_back(gbnf_literal(json_escape(special)));
        first = special + 1;
      }
    }
    if (first <= last) {
      plain.push_back({first, last});
    }
  }
  if (!plain.empty()) {
    std::string cls = "[";
    for (const CodePointRange& range : plain) {
      cls += class_char(range.first);
      if (range.last != range.first) {
        cls += "-" + class_char(range.last);
      }
    }
    alternatives.insert(alternatives.begin(), cls + "]");
  }
  if (alternatives.empty()) {
    return "";
  }
  std::string out = alternatives.size() > 1 ? "(" : "";
  for (size_t i = 0; i < alternatives.size(); ++i) {
    out += (i > 0 ? " | " : "") + alternatives[i];
  }
  return out + (alternatives.size() > 1 ? ")" : "");
}

namespace {

// Digit strings of exactly low.size() digits between low and high (same length), leading zeros
// allowed (the caller fixes the first digit).
std::string digits_between(const std::string& low, const std::string& high) {
  if (low.empty()) {
    return "";
  }
  auto digit_class = [](char from, char to) {
    if (from == to) {
      return std::string("\"") + from + "\"";
    }
    return std::string("[") + from + "-" + to + "]";
  };
  const std::string rest_low = low.substr(1);
  const std::string rest_high = high.substr(1);
  if (low[0] == high[0]) {
    const std::string rest = digits_between(rest_low, rest_high);
    return digit_class(low[0], low[0]) + (rest.empty() ? "" : " " + rest);
  }
  const std::string nines(rest_low.size(), '9');
  const std::string zeros(rest_low.size(), '0');
  std::vector<std::string> parts;
  auto join_part = [](const std::string& head, const std::string& tail) {
    return tail.empty() ? head : head + " " + tail;
  };
  // low[0] followed by [rest_low, 99..9]; the middle digits by anything; high[0] by [00..0, rest_high].
  char mid_from = low[0];
  if (rest_low != zeros) {
    parts.push_back(join_part(digit_class(low[0], low[0]), digits_between(rest_low, nines)));
    mid_from = static_cast<char>(low[0] + 1);
  }
  char mid_to = high[0];
  const bool high_partial = rest_high != nines;
  if (high_partial) {
    mid_to = static_cast<char>(high[0] - 1);
  }
  if (mid_from <= mid_to) {
    parts.push_back(join_part(digit_class(mid_from, mid_to),
                              rest_low.empty() ? "" : "[0-9]{" + std::to_string(rest_low.size()) + "}"));
  }
  if (high_partial) {
    parts.push_back(join_part(digit_class(high[0], high[0]), digits_between(zeros, rest_high)));
  }
  if (parts.size() == 1) {
    return parts[0];
  }
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i > 0 ? " | " : "") + parts[i];
  }
  return out + ")";
}

// Non-negative integers in [low, high] without leading zeros.
std::string natural_range(uint64_t low, uint64_t high) {
  std::vector<std::string> parts;
  const std::string high_text = std::to_string(high);
  for (size_t length = std::to_string(low).size(); length <= high_text.size(); ++length) {
    const uint64_t smallest = length == 1 ? 0 : static_cast<uint64_t>(std::stoull("1" + std::string(length - 1, '0')));
    const uint64_t largest = std::stoull(std::string(length, '9'));
    const uint64_t from = std::max(low, smallest);
    const uint64_t to = std::min(high, largest);
    if (from > to) {
      continue;
    }
    parts.push_back(digits_between(std::to_string(from), std::to_string(to)));
  }
  if (parts.size() == 1) {
    return parts[0];
  }
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i > 0 ? " | " : "") + parts[i];
  }
  return out + ")";
}

uint64_t magnitude(int64_t value) {
  return value < 0 ? static_cast<uint64_t>(-(value + 1)) + 1 : static_cast<uint64_t>(value);
}

}  // namespace

std::string integer_range(int64_t low, int64_t high) {
  std::vector<std::string> parts;
  if (low < 0) {
    // -|high'| .. -|low| for the negative part, with high' = min(high, -1).
    const uint64_t near = magnitude(std::min<int64_t>(high, -1));
    const uint64_t far = magnitude(low);
    parts.push_back("\"-\" " + natural_range(near, far));
  }
  if (high >= 0) {
    parts.push_back(natural_range(static_cast<uint64_t>(std::max<int64_t>(low, 0)), static_cast<uint64_t>(high)));
  }
  if (parts.size() == 1) {
    return parts[0];
  }
  return "(" + parts[0] + " | " + parts[1] + ")";
}

}  // namespace staticlm::json_schema
