// SPDX-License-Identifier: Apache-2.0
// QNN SDK detection over an injected environment (never the real one) and, for the file
// reading, a temporary SDK directory.
#include "staticlm/backends/qnn/runtime/qnn_sdk.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

struct FakeEnvironment {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::set<std::string> directories;

  QnnSdkEnvironment get() const {
    QnnSdkEnvironment out;
    out.get_env = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    out.read_text_file = [this](const std::string& path) -> std::optional<std::string> {
      auto it = files.find(path);
      return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    out.is_directory = [this](const std::string& path) { return directories.count(path) != 0; };
    return out;
  }
};

TEST(QnnSdkTest, TheEnvironmentOverrideWins) {
  FakeEnvironment fake;
  fake.env = {{"QNN_SDK_VERSION", "2.37.0.250724"}, {"QNN_SDK_ROOT", "/sdk"}};
  fake.directories = {"/sdk"};
  fake.files = {{"/sdk/sdk.yaml", "version: 2.40.0.251030\n"}};
  const QnnSdk sdk = detect_qnn_sdk(fake.get());
  ASSERT_TRUE(sdk.info.version.has_value());
  EXPECT_EQ(sdk.info.version->to_string(), "2.37.0.250724");
  EXPECT_EQ(sdk.info.version_source, "QNN_SDK_VERSION");
  EXPECT_EQ(sdk.root, "/sdk");
}

TEST(QnnSdkTest, ReadsTheVersionLineOfSdkYaml) {
  FakeEnvironment fake;
  fake.env = {{"QNN_SDK_ROOT", "/opt/qairt/current"}};
  fake.directories = {"/opt/qairt/current"};
  fake.files = {{"/opt/qairt/current/sdk.yaml", "name: qairt\n  version: 9.9\nversion: \"2.39.0.250925\"\n"}};
  const QnnSdk sdk = detect_qnn_sdk(fake.get());
  ASSERT_TRUE(sdk.info.version.has_value()) << sdk.info.unknown_reason;
  EXPECT_EQ(sdk.info.version->to_string(), "2.39.0.250925");  // the top-level line, not the nested one
  EXPECT_EQ(sdk.info.version_source, "$QNN_SDK_ROOT/sdk.yaml");
}

TEST(QnnSdkTest, FallsBackToTheDirectoryName) {
  FakeEnvironment fake;
  fake.env = {{"QNN_SDK_ROOT", "/opt/qairt/2.37.0.250724/"}};
  fake.directories = {"/opt/qairt/2.37.0.250724/"};
  const QnnSdk sdk = detect_qnn_sdk(fake.get());
  ASSERT_TRUE(sdk.info.version.has_value()) << sdk.info.unknown_reason;
  EXPECT_EQ(sdk.info.version->to_string(), "2.37.0.250724");
  EXPECT_EQ(sdk.info.version_source, "the name of $QNN_SDK_ROOT ('2.37.0.250724')");
}

TEST(QnnSdkTest, SaysWhyTheVersionIsUnknown) {
  FakeEnvironment nothing;
  const QnnSdk none = detect_qnn_sdk(nothing.get());
  EXPECT_FALSE(none.info.version.has_value());
  EXPECT_TRUE(none.root.empty());
  EXPECT_EQ(none.root_problem, "QNN_SDK_ROOT is not set");
  EXPECT_EQ(none.info.unknown_reason, "QNN_SDK_VERSION is not set and QNN_SDK_ROOT is not set");

  FakeEnvironment bad_override;
  bad_override.env = {{"QNN_SDK_VERSION", "latest"}};
  const QnnSdk bad = detect_qnn_sdk(bad_override.get());
  EXPECT_FALSE(bad.info.version.has_value());
  EXPECT_NE(bad.info.unknown_reason.find("QNN_SDK_VERSION: 'latest' is not a version"), std::string::npos)
      << bad.info.unknown_reason;

  FakeEnvironment not_a_directory;
  not_a_directory.env = {{"QNN_SDK_ROOT", "/missing"}};
  const QnnSdk missing = detect_qnn_sdk(not_a_directory.get());
  EXPECT_TRUE(missing.root.empty());
  EXPECT_EQ(missing.root_problem, "QNN_SDK_ROOT='/missing' is not a directory");

  FakeEnvironment unnamed;
  unnamed.env = {{"QNN_SDK_ROOT", "/opt/qnn"}};
  unnamed.directories = {"/opt/qnn"};
  const QnnSdk anonymous = detect_qnn_sdk(unnamed.get());
  EXPECT_FALSE(anonymous.info.version.has_value());
  EXPECT_EQ(anonymous.root, "/opt/qnn");
  EXPECT_NE(anonymous.info.unknown_reason.find("'/opt/qnn/sdk.yaml' has no version line"), std::string::npos)
      << anonymous.info.unknown_reason;
}

TEST(QnnSdkTest, ReadsARealSdkDirectory) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "fake_qairt_sdk";
  std::filesystem::create_directories(root);
  std::ofstream(root / "sdk.yaml") << "name: qairt\nversion: 2.38.0.250901\n";
  QnnSdkEnvironment environment = process_environment();
  const std::string root_text = root.string();
  environment.get_env = [root_text](const std::string& name) -> std::optional<std::string> {
    if (name == "QNN_SDK_ROOT") return root_text;
    return std::nullopt;
  };
  const QnnSdk sdk = detect_qnn_sdk(environment);
  EXPECT_EQ(sdk.root, root_text);
  ASSERT_TRUE(sdk.info.version.has_value()) << sdk.info.unknown_reason;
  EXPECT_EQ(sdk.info.version->to_string(), "2.38.0.250901");
}

}  // namespace
}  // namespace staticlm
