// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/op_profile.h"

#include <algorithm>

namespace staticlm {

void OpProfile::add(std::string_view op, int64_t rows, double seconds) {
  std::pair<int64_t, double>& total = totals_[{std::string(op), rows}];
  ++total.first;
  total.second += seconds;
}

std::vector<OpProfile::Entry> OpProfile::entries() const {
  std::vector<Entry> out;
  for (const auto& [key, total] : totals_) {
    out.push_back({key.first, key.second, total.first, total.second});
  }
  std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace staticlm
