// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace staticlm {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance over three rolling rows.
  std::vector<size_t> before(b.size() + 1);
  std::vector<size_t> previous(b.size() + 1);
  std::vector<size_t> current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    previous[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::vector<std::string> closest_names(std::string_view name, std::span<const std::string> known, size_t limit) {
  const std::string wanted = lowercase(name);
  const size_t threshold = std::max<size_t>(1, wanted.size() / 3);
  struct Candidate {
    size_t distance;
    size_t order;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < known.size(); ++i) {
    const std::string candidate = lowercase(known[i]);
    const size_t distance = edit_distance(wanted, candidate);
    const bool contains = wanted.size() >= 3 && candidate.find(wanted) != std::string::npos;
    if (distance <= threshold || contains) {
      candidates.push_back({contains ? std::min(distance, threshold) : distance, i});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) { return x.distance < y.distance; });
  std::vector<std::string> out;
  for (size_t i = 0; i < candidates.size() && out.size() < limit; ++i) {
    out.push_back(known[candidates[i].order]);
  }
  return out;
}

std::string did_you_mean(std::string_view name, std::span<const std::string> known) {
  const std::vector<std::string> names = closest_names(name, known);
  if (names.empty()) {
    return "";
  }
  std::string out = " (did you mean ";
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ");
    out += "'" + names[i] + "'";
  }
  return out + "?)";
}

}  // namespace staticlm
