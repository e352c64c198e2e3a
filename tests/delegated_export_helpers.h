// SPDX-License-Identifier: Apache-2.0
// What the delegated-export tests share: a prompt's logits through a program, the cpu backend
// they export with, and the tolerance between summation orders (export_helpers.h has the rest).
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/exporter/hf_static_export.h"

#include "export_helpers.h"
#include "session_helper.h"

namespace staticlm::testing {

// The logits of every prompt token: the first 12 through prefill (a full chunk of 8 and a
// partial one), the rest through decode.
// `isa`: the cpu backend's isa runtime option, where given.
inline std::vector<float> run_prompt(const std::string& path, const std::vector<int32_t>& tokens,
                                     std::shared_ptr<const BackendRuntime> extra = nullptr,
                                     const std::string& isa = "") {
  std::vector<std::shared_ptr<const BackendRuntime>> extras;
  if (extra) extras.push_back(std::move(extra));
  auto runtimes = std::make_shared<TestRuntimes>(std::move(extras));
  if (!isa.empty()) {
    runtimes->backend_options["cpu"].emplace("isa", RawOptionValue::text(isa));
  }
  auto opened = open_test_session(path, {}, runtimes);
  EXPECT_TRUE(opened.ok()) << opened.status().to_string();
  if (!opened.ok()) return {};
  return feed_prompt(*opened->session, tokens, std::min<size_t>(12, tokens.size()));
}

// The cpu backend's SIMD kernels sum in another order than the portable ones: the logits differ
// by a few ulps of the larger dot products (observed up to 7e-6 on the fixtures).
inline constexpr double kSummationOrderTolerance = 5e-5;

inline void expect_near(std::span<const float> actual, std::span<const float> expected, double relative,
                        const std::string& what) {
  expect_logits_near(actual, expected, relative, what);
}

inline std::shared_ptr<CpuBackend> cpu_backend() {
  auto backend = CpuBackend::create();
  EXPECT_TRUE(backend.ok());
  return *backend;
}

}  // namespace staticlm::testing
