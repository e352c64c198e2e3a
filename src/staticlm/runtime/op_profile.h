// SPDX-License-Identifier: Apache-2.0
// OpProfile: where a session's kernel time goes, by op and by the rows of the chunk that ran
// it (`staticlm bench --ops`). A MethodSession given one (and the delegates it calls, through
// KernelContext::op_profile) times every kernel call it runs. Steps run one after another on the
// session's calling thread (a kernel's own threads run inside its step), so there is no lock;
// a profile belongs to one session at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace staticlm {

class OpProfile {
 public:
  struct Entry {
    std::string op;     // the op's name: linear, attention, ...
    int64_t rows = 0;   // the chunk's real rows (1: a decode step)
    int64_t calls = 0;  // kernel calls
    double seconds = 0.0;
  };

  void add(std::string_view op, int64_t rows, double seconds);
  // Every (op, rows) seen, the most time first.
  std::vector<Entry> entries() const;
  void clear() { totals_.clear(); }

 private:
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, double>> totals_;  // calls, seconds
};

}  // namespace staticlm
