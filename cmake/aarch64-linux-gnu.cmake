# SPDX-License-Identifier: Apache-2.0
# Cross compiles for AArch64 Linux with Debian's g++-aarch64-linux-gnu against an arm64 sysroot
# (Debian's arm64 -dev packages unpacked by mmdebstrap: scripts/install-deps makes it), and runs
# what it builds (gtest's test discovery, ctest) through qemu-aarch64-static. The emulated CPU is
# qemu's QEMU_CPU environment variable (the aarch64 test presets set it; qemu's default is max).
#
# The sysroot is $STATICLM_ARM64_SYSROOT, else /opt/staticlm/arm64-sysroot. A multiarch install
# (:arm64 packages beside the amd64 ones) cannot hold both architectures' libsentencepiece-dev,
# which the native build needs, so the arm64 libraries live apart.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(DEFINED ENV{STATICLM_ARM64_SYSROOT})
  set(STATICLM_ARM64_SYSROOT "$ENV{STATICLM_ARM64_SYSROOT}")
else()
  set(STATICLM_ARM64_SYSROOT /opt/staticlm/arm64-sysroot)
endif()
if(NOT EXISTS "${STATICLM_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/libc.so")
  message(FATAL_ERROR "no arm64 sysroot at ${STATICLM_ARM64_SYSROOT}: scripts/install-deps makes it "
                      "(or set STATICLM_ARM64_SYSROOT to one)")
endif()

set(CMAKE_SYSROOT "${STATICLM_ARM64_SYSROOT}")
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries, headers and CMake packages from the sysroot only; programs (flatc, python) from the
# build machine.
set(CMAKE_FIND_ROOT_PATH "${STATICLM_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${STATICLM_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${STATICLM_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${STATICLM_ARM64_SYSROOT}/usr/share/pkgconfig")

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L "${STATICLM_ARM64_SYSROOT}")
