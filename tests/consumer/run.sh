#!/usr/bin/env bash
# Install a libram build to a scratch prefix, then build and run main.c against
# it the two ways downstream projects do: pkg-config (C) and find_package(ram)
# (a C and a C++ program).
# Usage: run.sh BUILD_DIR CONFIG LIBDIR   (env: CC, CXX, RAM_CONSUMER_FLAGS for
# sanitizer builds, whose consumers must link the sanitizer runtime too)
set -euo pipefail
build=$1 config=$2 libdir=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cc=${CC:-cc}
# The C++ consumer must use the same toolchain (a clang ASan build needs clang++).
if [ -z "${CXX:-}" ] && [[ "$cc" == *clang* ]]; then CXX=${cc/clang/clang++}; fi
flags=${RAM_CONSUMER_FLAGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --config "$config" --prefix "$prefix"

echo "== pkg-config"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
# $flags and the pkg-config output are meant to split into words.
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror $flags -o "$tmp/pc-consumer" "$here/main.c" \
    $(pkg-config --cflags --libs ram) -Wl,-rpath,"$(pkg-config --variable=libdir ram)"
"$tmp/pc-consumer"

echo "== find_package (C and C++)"
# $flags: sanitizer builds pass their flags to both compilers.
cmake -S "$here" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    ${CXX:+-DCMAKE_CXX_COMPILER="$CXX"}
cmake --build "$tmp/build"
"$tmp/build/consumer"
"$tmp/build/consumer_cxx"

echo "== installed tools load libram from the prefix"
# Tools carry a RUNPATH unless libdir is a system directory (e.g. a /usr
# build for a distro package), where the loader finds libram by itself.
# (ram-data needs no libram: --as-needed drops it.)
shopt -s nullglob
for tool in "$prefix"/bin/*; do
    readelf -d "$tool" | grep -E 'RPATH|RUNPATH' >/dev/null || continue
    deps=$(ldd "$tool")
    grep -q 'libram\.so' <<<"$deps" || continue
    grep -q "libram\.so\.[0-9]* => $prefix/" <<<"$deps" ||
        { echo "$tool does not find $prefix's libram:"; echo "$deps"; exit 1; }
done
echo "ok"
