#!/usr/bin/env bash
# Build libram and run its whole test suite (unit tests, exported-symbol check,
# install + downstream-consumer check).  No MNIST needed.
#
# Usage: scripts/test.sh                  Release build in build/
#        RAM_SANITIZE=1 scripts/test.sh   ASan + UBSan build in build-asan/
#
# On Debian/Ubuntu, missing build dependencies are installed with apt-get
# (through sudo when not root).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

packages=(build-essential cmake pkg-config libopenblas-dev check libpng-dev)

install_deps() {
    command -v dpkg-query >/dev/null || return 0 # not Debian: assume deps are there
    local missing=() p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null ||
            { echo "test.sh: missing packages (${missing[*]}) and no sudo" >&2; exit 1; }
        sudo=(sudo)
    fi
    echo "test.sh: installing ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
}

install_deps

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
