#!/usr/bin/env bash
# Build libram and run its whole test suite (unit tests, exported-symbol check,
# install + downstream-consumer check).  No MNIST needed.
#
# Usage: scripts/test.sh                  Release build in build/
#        RAM_SANITIZE=1 scripts/test.sh   ASan + UBSan build in build-asan/
#
# On Debian/Ubuntu, missing build dependencies are installed first
# (scripts/deps.sh: apt-get, through sudo when not root).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

"$root/scripts/deps.sh"

if [ "${RAM_SANITIZE:-0}" = 1 ]; then
    # RelWithDebInfo: sanitizer reports with line numbers, at a usable speed.
    build="build-asan"
    config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAM_SANITIZE=ON)
else
    build="build"
    config=(-DCMAKE_BUILD_TYPE=Release)
fi

cmake -S . -B "$build" "${config[@]}"
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure
