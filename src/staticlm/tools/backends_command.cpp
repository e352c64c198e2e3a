// SPDX-License-Identifier: Apache-2.0
// `staticlm backends [NAME] [--json]`: every delegate backend this build has, each option of its
// export schema (type, default, allowed values or range, route, backend types, SDK gate,
// constraints and a one-line doc) and of its runtime schema. The export schema drives
// `export --backend NAME --option k=v`, the runtime one `run --runtime-option NAME.k=v`.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "staticlm/builtin/builtin_export.h"
#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/tools/command.h"

namespace staticlm::cli {
namespace {

using nlohmann::json;

std::string condition(const std::string& name, const std::vector<std::string>& values) {
  return values.empty()       ? name
         : values.size() == 1 ? name + "=" + values[0]
                              : name + " in {" + join(values, ", ") + "}";
}

std::string constraint_text(const OptionSpec& spec, const OptionConstraint& constraint) {
  std::string out = constraint.when_values.empty() ? "" : "when " + condition(spec.name, constraint.when_values) + ": ";
  out += constraint.kind == OptionConstraint::Kind::kRequires ? "requires " : "conflicts with ";
  out += condition(constraint.other, constraint.other_values);
  if (!constraint.why.empty()) {
    out += " (" + constraint.why + ")";
  }
  return out;
}

std::string allowed_text(const AllowedValue& value) {
  std::vector<std::string> notes;
  if (!value.doc.empty()) notes.push_back(value.doc);
  if (value.min_sdk_version) notes.push_back("SDK >= " + value.min_sdk_version->to_string());
  return notes.empty() ? value.name : value.name + " (" + join(notes, "; ") + ")";
}

json option_json(const OptionSchema& schema, const OptionSpec& spec) {
  json doc = {{"name", spec.name},
              {"type", std::string(option_type_name(spec.type))},
              {"route", spec.route},
              {"doc", spec.doc}};
  if (spec.required) {
    doc["required"] = true;
  } else {
    doc["default"] = option_value_string(*spec.default_value);
  }
  if (!spec.allowed.empty()) {
    json values = json::array();
    for (const AllowedValue& value : spec.allowed) values.push_back(allowed_text(value));
    doc["values"] = values;
  }
  if (!spec.int_values.empty()) {
    json values = json::array();
    for (int64_t value : spec.int_values) values.push_back(std::to_string(value));
    doc["values"] = values;
  } else if (spec.min_value || spec.max_value) {
    doc["range"] = {spec.min_value ? json(*spec.min_value) : json(), spec.max_value ? json(*spec.max_value) : json()};
  }
  if (!spec.applies_to.empty()) {
    doc["applies_to"] = condition(schema.selector, spec.applies_to);
  }
  if (spec.min_sdk_version) {
    doc["min_sdk_version"] = spec.min_sdk_version->to_string();
  }
  json constraints = json::array();
  for (const OptionConstraint& constraint : spec.constraints) constraints.push_back(constraint_text(spec, constraint));
  if (!constraints.empty()) {
    doc["constraints"] = constraints;
  }
  return doc;
}

std::string sdk_text(const SdkInfo& sdk) {
  if (sdk.name.empty()) {
    return "";
  }
  if (sdk.version) {
    return sdk.name + " " + sdk.version->to_string() + " (from " + sdk.version_source + ")";
  }
  return sdk.name + " version unknown (" + sdk.unknown_reason + ")";
}

json options_json(const OptionSchema& schema) {
  json options = json::array();
  for (const OptionSpec& spec : schema.options) options.push_back(option_json(schema, spec));
  return options;
}

json backend_json(const Backend& backend, const BackendRuntime* runtime) {
  const OptionSchema& schema = backend.option_schema();
  json doc = {{"id", std::string(backend.id())},
              {"summary", std::string(backend.summary())},
              {"options", options_json(schema)}};
  if (!schema.selector.empty()) doc["type_selector"] = schema.selector;
  if (const std::string sdk = sdk_text(backend.sdk()); !sdk.empty()) doc["sdk"] = sdk;
  if (runtime != nullptr) {
    doc["runtime_options"] = options_json(runtime->runtime_options());
    if (!runtime->preferred_allocator().empty()) {
      doc["preferred_io_allocator"] = std::string(runtime->preferred_allocator());
    }
  }
  return doc;
}

std::string range_text(const json& range, bool integer) {
  auto bound = [&](const json& value, const char* open) -> std::string {
    if (value.is_null()) return open;
    return integer ? std::to_string(static_cast<int64_t>(value.get<double>())) : str_cat(value.get<double>());
  };
  return "[" + bound(range[0], "-inf") + ", " + bound(range[1], "inf") + "]";
}

void print_options(const char* title, const json& options);

void print_backend(const json& backend) {
  std::printf("%s: %s\n", backend["id"].get<std::string>().c_str(), backend["summary"].get<std::string>().c_str());
  if (backend.contains("sdk")) std::printf("  sdk: %s\n", backend["sdk"].get<std::string>().c_str());
  if (backend.contains("type_selector")) {
    std::printf("  backend type: option '%s' (options marked 'for' apply to those types only)\n",
                backend["type_selector"].get<std::string>().c_str());
  }
  if (backend.contains("preferred_io_allocator")) {
    std::printf("  preferred I/O allocator: %s\n", backend["preferred_io_allocator"].get<std::string>().c_str());
  }
  print_options("options (export)", backend["options"]);
  if (backend.contains("runtime_options")) {
    print_options("runtime options", backend["runtime_options"]);
  }
}

void print_options(const char* title, const json& options) {
  std::printf("  %s:\n", title);
  for (const json& option : options) {
    std::string line = option["name"].get<std::string>() + "  " + option["type"].get<std::string>();
    line += option.contains("required") ? "  required" : "  default " + option["default"].get<std::string>();
    if (option.contains("range")) line += "  range " + range_text(option["range"], option["type"] == "int");
    const std::string route = option["route"].get<std::string>();
    line += "  route " + (route == kRouteSelectedType ? std::string("<the selected type's builder>") : route);
    if (option.contains("applies_to")) line += "  for " + option["applies_to"].get<std::string>();
    if (option.contains("min_sdk_version")) line += "  needs SDK >= " + option["min_sdk_version"].get<std::string>();
    std::printf("    %s\n        %s\n", line.c_str(), option["doc"].get<std::string>().c_str());
    if (option.contains("values")) {
      std::vector<std::string> values = option["values"].get<std::vector<std::string>>();
      std::printf("        values: %s\n", join(values, ", ").c_str());
    }
    if (option.contains("constraints")) {
      for (const json& constraint : option["constraints"]) {
        std::printf("        %s\n", constraint.get<std::string>().c_str());
      }
    }
  }
}

struct BackendsArgs {
  std::string name;
  bool json = false;
};

Status run_backends(const BackendsArgs& args) {
  BackendRegistry registry;
  STATICLM_RETURN_IF_ERROR(register_builtin_backends(registry));
  BackendRuntimeRegistry runtimes;
  STATICLM_RETURN_IF_ERROR(register_builtin_backend_runtimes(runtimes));
  std::vector<const Backend*> backends;
  if (args.name.empty()) {
    backends = registry.all();
  } else {
    STATICLM_ASSIGN_OR_RETURN(const Backend* backend, registry.get(args.name));
    backends.push_back(backend);
  }
  json doc = json::array();
  for (const Backend* backend : backends) doc.push_back(backend_json(*backend, runtimes.find(backend->id())));
  if (args.json) {
    std::printf("%s\n", (args.name.empty() ? doc : doc[0]).dump(2).c_str());
    return ok_status();
  }
  if (args.name.empty()) {
    std::vector<std::string> ids;
    for (const Backend* backend : backends) ids.emplace_back(backend->id());
    std::printf("backends: %s (nodes they do not take run on the portable kernels)\n", join(ids, ", ").c_str());
  }
  for (size_t i = 0; i < doc.size(); ++i) {
    if (i > 0 || args.name.empty()) {
      std::printf("\n");
    }
    print_backend(doc[i]);
  }
  return ok_status();
}

}  // namespace

Command add_backends_command(CLI::App& parent) {
  auto args = std::make_shared<BackendsArgs>();
  CLI::App* app = parent.add_subcommand("backends", "List the delegate backends and their options");
  app->add_option("name", args->name, "Only this backend");
  app->add_flag("--json", args->json, "Print a JSON document instead of text");
  return {app, [args]() { return run_backends(*args); }};
}

}  // namespace staticlm::cli
