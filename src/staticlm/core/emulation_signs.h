// SPDX-License-Identifier: Apache-2.0
// Whether this process seems to run on an emulated CPU (QEMU's user mode running an AArch64 build
// on an x86 machine, as the tests do): times measured there are the emulator's, so `bench` says
// so. The signs are what such an emulator leaves visible; none of them is proof, and a real CPU
// shows none of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace staticlm {

// The signs in an AArch64 process's /proc/cpuinfo text and main ID register (MIDR_EL1, when the
// kernel lets user space read it): /proc/cpuinfo describing an x86 CPU (QEMU before 8.2 passes
// the host's through), or an implementer code of 0 (QEMU's "max" CPU). Empty when there are none.
// A function of the two so that it can be checked on any machine.
std::string arm_emulation_sign(std::string_view cpuinfo, std::optional<uint64_t> midr);

// This process's sign: always empty on x86-64 builds.
std::string host_emulation_sign();

}  // namespace staticlm
