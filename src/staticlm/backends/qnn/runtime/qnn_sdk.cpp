// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/runtime/qnn_sdk.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "staticlm/core/str_cat.h"

namespace staticlm {
namespace {

std::string trim(std::string text) {
  const char* space = " \t\r\"'";
  const size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) {
    return "";
  }
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

// The value of the first top-level `version:` line, or "".
std::string yaml_version(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("version:", 0) == 0) {
      return trim(line.substr(8));
    }
  }
  return "";
}

}  // namespace

QnnSdkEnvironment process_environment() {
  QnnSdkEnvironment environment;
  environment.get_env = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
  environment.read_text_file = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return std::nullopt;
    }
    std::ostringstream contents;
    contents << in.rdbuf();
    return contents.str();
  };
  environment.is_directory = [](const std::string& path) {
    std::error_code error;
    return std::filesystem::is_directory(path, error);
  };
  return environment;
}

QnnSdk detect_qnn_sdk(const QnnSdkEnvironment& environment) {
  QnnSdk sdk;
  sdk.info.name = "QNN SDK";
  const std::optional<std::string> root = environment.get_env("QNN_SDK_ROOT");
  if (!root || root->empty()) {
    sdk.root_problem = "QNN_SDK_ROOT is not set";
  } else if (!environment.is_directory(*root)) {
    sdk.root_problem = str_cat("QNN_SDK_ROOT='", *root, "' is not a directory");
  } else {
    sdk.root = *root;
  }

  if (const std::optional<std::string> override_text = environment.get_env("QNN_SDK_VERSION");
      override_text && !override_text->empty()) {
    auto version = SdkVersion::parse(*override_text);
    if (version.ok()) {
      sdk.info.version = *version;
      sdk.info.version_source = "QNN_SDK_VERSION";
    } else {
      sdk.info.unknown_reason = str_cat("QNN_SDK_VERSION: ", version.status().message());
    }
    return sdk;
  }
  if (sdk.root.empty()) {
    sdk.info.unknown_reason = str_cat("QNN_SDK_VERSION is not set and ", sdk.root_problem);
    return sdk;
  }
  const std::string yaml_path = (std::filesystem::path(sdk.root) / "sdk.yaml").string();
  if (const std::optional<std::string> yaml = environment.read_text_file(yaml_path)) {
    const std::string text = yaml_version(*yaml);
    if (auto version = SdkVersion::parse(text); version.ok()) {
      sdk.info.version = *version;
      sdk.info.version_source = "$QNN_SDK_ROOT/sdk.yaml";
      return sdk;
    }
  }
  std::string directory = sdk.root;
  while (directory.size() > 1 && directory.back() == '/') {
    directory.pop_back();
  }
  const std::string name = std::filesystem::path(directory).filename().string();
  if (auto version = SdkVersion::parse(name); version.ok()) {
    sdk.info.version = *version;
    sdk.info.version_source = str_cat("the name of $QNN_SDK_ROOT ('", name, "')");
    return sdk;
  }
  sdk.info.unknown_reason = str_cat("QNN_SDK_VERSION is not set, '", yaml_path,
                                    "' has no version line, and the directory name '", name, "' is not a version");
  return sdk;
}

}  // namespace staticlm
