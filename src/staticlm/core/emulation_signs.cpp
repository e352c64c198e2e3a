// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/emulation_signs.h"

#include <cstdio>

#include "staticlm/core/str_cat.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace staticlm {

namespace {

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::optional<std::string_view> cpuinfo_field(std::string_view cpuinfo, std::string_view key) {
  size_t start = 0;
  while (start < cpuinfo.size()) {
    size_t end = cpuinfo.find('\n', start);
    if (end == std::string_view::npos) {
      end = cpuinfo.size();
    }
    const std::string_view line = cpuinfo.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view name = line.substr(0, colon);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) {
        name.remove_suffix(1);
      }
      if (name == key) {
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
          value.remove_prefix(1);
        }
        return value;
      }
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string arm_emulation_sign(std::string_view cpuinfo, std::optional<uint64_t> midr) {
  if (!cpuinfo_field(cpuinfo, "CPU implementer")) {
    if (const auto vendor = cpuinfo_field(cpuinfo, "vendor_id")) {
      const auto model = cpuinfo_field(cpuinfo, "model name");
      return str_cat("/proc/cpuinfo describes an x86 CPU (", model ? *model : *vendor, ")");
    }
  }
  if (midr && ((*midr >> 24) & 0xff) == 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(*midr));
    return str_cat("the CPU's main ID register names no implementer (MIDR_EL1 ", hex, ", as QEMU's max CPU)");
  }
  return "";
}

std::string host_emulation_sign() {
#if defined(__aarch64__) && defined(__linux__)
  std::string cpuinfo;
  if (std::FILE* file = std::fopen("/proc/cpuinfo", "r")) {
    char buffer[4096];
    size_t n = 0;
    while (cpuinfo.size() < (size_t{1} << 20) && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
      cpuinfo.append(buffer, n);
    }
    std::fclose(file);
  }
  std::optional<uint64_t> midr;
  // HWCAP_CPUID: the kernel emulates reads of the ID registers from user space.
  if ((getauxval(AT_HWCAP) & (1UL << 11)) != 0) {
    uint64_t value = 0;
    __asm__ volatile("mrs %0, midr_el1" : "=r"(value));
    midr = value;
  }
  return arm_emulation_sign(cpuinfo, midr);
#else
  return "";
#endif
}

}  // namespace staticlm
