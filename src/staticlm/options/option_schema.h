// SPDX-License-Identifier: Apache-2.0
// A backend's option schema and the one place untyped options become typed settings.
//
// Each OptionSpec says what an option is (type, default, allowed values or range), where it
// goes (`route`: the compile-spec builder that consumes it, or "partitioner"), which backend
// types it is valid for (`applies_to`: values of the schema's selector option, e.g. QNN's
// `backend` = htp | gpu | lpai), the SDK version it needs, and how it constrains other options.
// The same schema drives resolve_options (Partitioner::from_options), `staticlm backends` and
// the effective-settings report stored in a program.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/options/option_value.h"
#include "staticlm/options/sdk_version.h"

namespace staticlm {

// An enum option's allowed value. A value may need a newer SDK than the option itself (QNN's
// backend=lpai needs 2.39).
struct AllowedValue {
  std::string name;
  std::string doc;  // short, for `staticlm backends`; may be empty
  std::optional<SdkVersion> min_sdk_version;
};

// A rule between this option and another, checked on the effective settings.
// It fires when this option is engaged: its value is one of `when_values`, or, when that list
// is empty, it is true (bool options) or was given explicitly (other types). `other` is then
// engaged when its value is one of `other_values`, or, when that list is empty, is true.
// kRequires fails when `other` is not engaged (or not in effect for the selected backend
// type); kConflicts fails when it is.
struct OptionConstraint {
  enum class Kind : uint8_t { kRequires, kConflicts };
  Kind kind = Kind::kConflicts;
  std::vector<std::string> when_values;
  std::string other;
  std::vector<std::string> other_values;
  std::string why;  // one line: why the rule exists
};

// Route value meaning "the builder named by the selected backend type" (QNN's use_weight_sharing
// goes to the HTP builder under backend=htp and to the GPU builder under backend=gpu).
inline constexpr std::string_view kRouteSelectedType = "selected";
inline constexpr std::string_view kRoutePartitioner = "partitioner";

struct OptionSpec {
  std::string name;
  OptionType type = OptionType::kBool;
  // Every option has a default or is required. The default is typed like the option.
  std::optional<OptionValue> default_value;
  bool required = false;
  std::vector<AllowedValue> allowed;  // enum options
  std::optional<double> min_value;    // int and float options: inclusive range
  std::optional<double> max_value;
  std::vector<int64_t> int_values;  // int options taking only these values of their range (empty: any)
  std::string route;
  std::vector<std::string> applies_to;  // selector values; empty = every type
  std::optional<SdkVersion> min_sdk_version;
  std::vector<OptionConstraint> constraints;
  std::string doc;  // one line
};

struct OptionSchema {
  std::string backend_id;
  // The enum option whose value is the backend type that `applies_to` refers to; empty when the
  // backend has one type.
  std::string selector;
  std::vector<OptionSpec> options;

  const OptionSpec* find(std::string_view name) const;
  std::vector<std::string> names() const;
};

// Builders for schema entries: every option has a name, a type, a default, a route, the backend
// types it applies to (empty: all) and a doc line; enums add their values, ints their range.
OptionSpec make_option(std::string name, OptionType type, OptionValue default_value, std::string_view route,
                       std::vector<std::string> applies_to, std::string doc);
OptionSpec bool_option(std::string name, bool default_value, std::string_view route,
                       std::vector<std::string> applies_to, std::string doc);
OptionSpec enum_option(std::string name, std::string default_value, std::vector<AllowedValue> allowed,
                       std::string_view route, std::vector<std::string> applies_to, std::string doc);
OptionSpec int_option(std::string name, int64_t default_value, double min, double max, std::string_view route,
                      std::vector<std::string> applies_to, std::string doc);
// Allowed values without docs or SDK gates.
std::vector<AllowedValue> allowed_values(std::initializer_list<const char*> names);

// Checks a schema's own consistency (defaults typed and allowed, constraints naming existing
// options, selector an enum). Fails with Internal naming the option: a bad schema is a bug.
Status check_schema(const OptionSchema& schema);

// One option of the effective settings.
struct EffectiveOption {
  std::string name;
  OptionValue value;
  bool given = false;  // false: the default
  std::string route;   // kRouteSelectedType already replaced by the selected type
};

// The typed settings resolve_options produced: every option in effect for the selected backend
// type, given or defaulted, in schema order. Getters are for options the schema declares with
// that type; asking for another is a programming error reported as Internal.
class ResolvedOptions {
 public:
  ResolvedOptions() = default;
  ResolvedOptions(std::string backend_id, std::string selected_type, std::vector<EffectiveOption> entries);

  const std::string& backend_id() const { return backend_id_; }
  // The selector's value ("htp"), or "" for a backend with one type.
  const std::string& selected_type() const { return selected_type_; }
  std::span<const EffectiveOption> entries() const { return entries_; }
  const EffectiveOption* find(std::string_view name) const;

  Result<bool> get_bool(std::string_view name) const;
  Result<int64_t> get_int(std::string_view name) const;
  Result<double> get_float(std::string_view name) const;
  Result<std::string> get_string(std::string_view name) const;  // string and enum options
  Result<std::vector<std::string>> get_string_set(std::string_view name) const;

  // The options routed to `route`, in schema order.
  std::vector<EffectiveOption> routed_to(std::string_view route) const;

  // {"backend":"qnn","type":"htp","options":[{"name":..,"value":..,"source":"given"|"default",
  //  "route":..}, ...]}: the effective-settings report stored in programs.
  std::string to_json() const;

 private:
  std::string backend_id_;
  std::string selected_type_;
  std::vector<EffectiveOption> entries_;
};

// Turns untyped options into typed settings. Every key must be an option of `schema`. Fails,
// always naming the option, with:
// - InvalidArgument: unknown name (with the closest names as suggestions), wrong type, value
//   outside the range or the enum (with suggestions), an option that applies to another backend
//   type than the selected one, a required option missing, two options that conflict or one
//   that requires another;
// - FailedPrecondition: an option or value that needs a newer SDK than `sdk` has ("needs QNN SDK
//   >= 2.39, found 2.37.0.250724"), or any version-gated one when the version is unknown ("QNN
//   SDK version unknown").
Result<ResolvedOptions> resolve_options(const OptionSchema& schema, const OptionMap& options, const SdkInfo& sdk);

}  // namespace staticlm
