// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/sdk_version.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

SdkVersion v(std::string_view text) {
  auto parsed = SdkVersion::parse(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().to_string();
  return parsed.ok() ? *parsed : SdkVersion{};
}

TEST(SdkVersionTest, ParsesQnnStyleVersions) {
  const SdkVersion full = v("2.37.0.250724");
  EXPECT_EQ(full.major, 2);
  EXPECT_EQ(full.minor, 37);
  EXPECT_EQ(full.patch, 0);
  EXPECT_EQ(full.build, 250724);
  EXPECT_EQ(full.to_string(), "2.37.0.250724");
  EXPECT_EQ(v("v2.39").to_string(), "2.39.0");
  EXPECT_EQ(v("3").to_string(), "3.0.0");
}

TEST(SdkVersionTest, ComparesNumericallyNotAsText) {
  EXPECT_LT(v("2.39"), v("3.0"));  // "3.0" < "2.39" as text
  EXPECT_LT(v("2.9"), v("2.10"));  // "2.10" < "2.9" as text
  EXPECT_LT(v("2.37.0.250724"), v("2.39"));
  EXPECT_GE(v("2.39.0.250901"), v("2.39"));
  EXPECT_EQ(v("2.39"), v("2.39.0"));
}

TEST(SdkVersionTest, RefusesWhatIsNotAVersion) {
  for (const char* text : {"", "2.", ".3", "2..3", "two", "2.3.4.5.6", "2.-1", "2.3b"}) {
    auto parsed = SdkVersion::parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find("is not a version"), std::string::npos) << parsed.status().message();
  }
}

}  // namespace
}  // namespace staticlm
