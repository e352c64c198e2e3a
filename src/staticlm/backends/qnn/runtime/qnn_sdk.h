// SPDX-License-Identifier: Apache-2.0
// Finding the Qualcomm QNN (QAIRT) SDK and its version, for the qnn backend's version-gated
// options and for the "QNN SDK not found" refusals.
//
// Version, first match wins:
//   1. $QNN_SDK_VERSION (e.g. 2.37.0.250724): an explicit override;
//   2. the `version:` line of $QNN_SDK_ROOT/sdk.yaml (QAIRT SDKs ship this file);
//   3. the name of the $QNN_SDK_ROOT directory when it is a version (.../qairt/2.37.0.250724).
// Otherwise the version is unknown, and a version-gated option fails with "QNN SDK version
// unknown". The SDK counts as present when $QNN_SDK_ROOT names a directory.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "staticlm/options/sdk_version.h"

namespace staticlm {

// The process state detection reads, injectable so tests never touch the real environment.
struct QnnSdkEnvironment {
  std::function<std::optional<std::string>(const std::string& name)> get_env;         // unset: nullopt
  std::function<std::optional<std::string>(const std::string& path)> read_text_file;  // missing: nullopt
  std::function<bool(const std::string& path)> is_directory;
};

// The real environment and file system.
QnnSdkEnvironment process_environment();

struct QnnSdk {
  SdkInfo info;              // name "QNN SDK"; version and where it came from, or why unknown
  std::string root;          // $QNN_SDK_ROOT when it is a directory, else empty (not found)
  std::string root_problem;  // why root is empty
};

QnnSdk detect_qnn_sdk(const QnnSdkEnvironment& environment);

}  // namespace staticlm
