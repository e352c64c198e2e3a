// SPDX-License-Identifier: Apache-2.0
#include "staticlm/partition/placement_report.h"

#include <map>

#include <nlohmann/json.hpp>

#include "staticlm/core/str_cat.h"

namespace staticlm {

size_t MethodPlacement::delegated_nodes() const {
  size_t count = 0;
  for (const NodePlacement& node : nodes) {
    count += node.delegate >= 0 ? 1 : 0;
  }
  return count;
}

size_t PlacementReport::delegated_nodes() const {
  size_t count = 0;
  for (const MethodPlacement& method : methods) {
    count += method.delegated_nodes();
  }
  return count;
}

size_t PlacementReport::total_nodes() const {
  size_t count = 0;
  for (const MethodPlacement& method : methods) {
    count += method.nodes.size();
  }
  return count;
}

std::string PlacementReport::to_json() const {
  nlohmann::json doc;
  doc["backend"] = backend;
  doc["settings"] = settings_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(settings_json);
  nlohmann::json list = nlohmann::json::array();
  for (const MethodPlacement& method : methods) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const NodePlacement& node : method.nodes) {
      nlohmann::json entry = {{"node", node.node}, {"op", node.op}};
      if (!node.name.empty()) {
        entry["name"] = node.name;
      }
      if (!node.format.empty()) {
        entry["format"] = node.format;
      }
      if (node.delegate >= 0) {
        entry["on"] = backend;
        entry["delegate"] = node.delegate;
      } else {
        entry["on"] = kFallbackBackendName;
        entry["reason"] = node.reason;
      }
      nodes.push_back(std::move(entry));
    }
    list.push_back({{"name", method.method}, {"delegates", method.delegates}, {"nodes", std::move(nodes)}});
  }
  doc["methods"] = std::move(list);
  return doc.dump();
}

std::string PlacementReport::summary() const {
  std::vector<std::string> parts;
  for (const MethodPlacement& method : methods) {
    parts.push_back(str_cat(method.method, ": ", method.delegated_nodes(), " of ", method.nodes.size(), " nodes on ",
                            backend, " (", method.delegates.size(),
                            method.delegates.size() == 1 ? " delegate)" : " delegates)"));
  }
  return join(parts, "; ");
}

std::string PlacementReport::formats_summary() const {
  std::vector<std::string> parts;
  for (const MethodPlacement& method : methods) {
    std::map<std::string, size_t> counts;
    for (const NodePlacement& node : method.nodes) {
      if (!node.format.empty()) {
        ++counts[node.format];
      }
    }
    std::vector<std::string> formats;
    for (const auto& [format, count] : counts) {
      formats.push_back(str_cat(format, " x ", count));
    }
    if (!formats.empty()) {
      parts.push_back(str_cat(method.method, ": ", join(formats, ", ")));
    }
  }
  return join(parts, "; ");
}

}  // namespace staticlm
