#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/install-deps prints its progress (apt's included) to stderr alone, so that
# `scripts/demo > out.txt` captures the generated text and nothing else. Stand-ins for dpkg-query
# (nothing installed), apt-get (it prints, as apt does, to stdout) and sudo come first on PATH.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fake="$(mktemp -d)"
trap 'rm -rf "$fake"' EXIT
printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg-query"
printf '#!/bin/sh\necho "Reading package lists... (stand-in apt-get $*)"\n' >"$fake/apt-get"
printf '#!/bin/sh\nexec "$@"\n' >"$fake/sudo"
chmod +x "$fake/dpkg-query" "$fake/apt-get" "$fake/sudo"
PATH="$fake:$PATH" "$root/scripts/install-deps" --runtime >"$fake/out" 2>"$fake/err"
if [ -s "$fake/out" ]; then
  echo "install-deps printed to stdout:" >&2
  cat "$fake/out" >&2
  exit 1
fi
grep -q "stand-in apt-get install" "$fake/err" || { echo "apt-get's output did not reach stderr" >&2; exit 1; }
