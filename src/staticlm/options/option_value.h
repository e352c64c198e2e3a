// SPDX-License-Identifier: Apache-2.0
// Backend option values: the typed value an option schema accepts, and the untyped input a user
// gives (`--option key=value` text on the command line, or a JSON value from `--options
// FILE.json`). Untyped input exists only here, at the edge; resolve_options (option_schema.h)
// turns it into typed values once, refusing anything that does not fit.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm {

enum class OptionType : uint8_t { kBool, kInt, kFloat, kString, kEnum, kStringSet };

// "bool", "int", "float", "string", "enum", "string set".
std::string_view option_type_name(OptionType type);

// A typed option value: bool, int64_t, double, std::string (string and enum) or a sorted,
// duplicate-free std::vector<std::string> (string set).
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

// How a value prints in messages and reports: true, 3, 0.5, burst, {a,b}.
std::string option_value_string(const OptionValue& value);

// One option as the user gave it. Text (from the command line) is parsed by the option's type;
// a JSON value must already have that type (a JSON string "true" is not a bool).
struct RawOptionValue {
  enum class Form : uint8_t { kText, kBool, kInt, kFloat, kString, kStringList };
  Form form = Form::kText;
  std::variant<bool, int64_t, double, std::string, std::vector<std::string>> value;
  std::string origin;  // where it came from, for messages ("--option", "opts.json"); may be empty

  static RawOptionValue text(std::string text, std::string origin = "");
};

// "text 'abc'", "JSON string \"abc\"", "JSON bool true": what a message says was found.
std::string describe_raw_value(const RawOptionValue& raw);

using OptionMap = std::map<std::string, RawOptionValue, std::less<>>;

// Parses assignments "key=value" (the value may be empty; the key may not); `origin` is where
// they came from ("--option" for the CLI), as messages say. Fails with InvalidArgument naming the
// assignment when '=' or the key is missing, or a key repeats.
Result<OptionMap> parse_option_assignments(std::span<const std::string> assignments,
                                           std::string_view origin = "option assignment");

// Parses an options file: one JSON object whose values are booleans, numbers, strings or
// arrays of strings. Fails with InvalidArgument naming `file` and the key for malformed JSON,
// a repeated key, or a value of another kind (null, an object, an array holding a non-string).
Result<OptionMap> parse_options_json(std::string_view text, std::string_view file);

// Adds `extra` to `into`. A key present in both is refused (InvalidArgument naming both
// origins): an option given twice has no obvious winner.
Status merge_options(OptionMap& into, const OptionMap& extra);

}  // namespace staticlm
