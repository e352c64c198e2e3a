// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/process_memory.h"

#include <sys/resource.h>

namespace staticlm {

uint64_t peak_rss_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) {
    return 0;
  }
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace staticlm
