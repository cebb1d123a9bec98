#!/usr/bin/env bash
# Build libram's Debian packages (debian/) and check them from the outside:
# unpack libram0, libram-dev, ram-tools and python3-libram into a scratch root
# (dpkg -x; no root needed) or install them on this machine (--system, as
# root), then build tests/consumer/main.c against them with pkg-config and with
# find_package(ram), import the Python module and run the tools.  Not part of
# CTest or CI: a package build takes a few minutes.  See docs/packaging.md.
#
# Usage: tests/deb-install.sh [--system] [--keep] [DEBDIR]
#   DEBDIR     a directory holding the built .debs (e.g. from an earlier run);
#              without it, the source tree this script belongs to is copied
#              (git's tracked and unignored files: a clean checkout) to a
#              scratch directory and built there with
#              `dpkg-buildpackage -us -uc -b`, then lintian checks the
#              .changes (any E: line fails).
#   --system   install the packages with apt-get (root only) instead of
#              unpacking them; they are purged again at the end unless --keep.
#   --keep     keep the scratch directory (or, with --system, the packages).
# Env: RAM_DEB_WORK  scratch directory, kept (default: a new /tmp/libram-deb.XXXXXX,
#                    removed at the end unless --keep)
#      RAM_DEB_JOBS  parallel build jobs (default 2)
set -euo pipefail

system=0 keep=0 debdir="" other=""
for arg in "$@"; do
    case $arg in
    --system) system=1 ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "deb-install: unknown option $arg" >&2; exit 2 ;;
    *) debdir=$(cd "$arg" && pwd) ;;
    esac
done

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${RAM_DEB_WORK:-$(mktemp -d /tmp/libram-deb.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
installed=()
cleanup() {
    if [ ${#installed[@]} -gt 0 ] && [ "$keep" = 0 ]; then
        echo "== purging ${installed[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get purge -y "${installed[@]}" >/dev/null || true
    fi
    if [ "$keep" = 0 ] && [ -z "${RAM_DEB_WORK:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -SVersion)

if [ -z "$debdir" ]; then
    echo "== building libram $version in $work"
    tree=$work/libram-${version%%-*}
    rm -rf "$tree"
    mkdir -p "$tree"
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        # Tracked plus new unignored files, as they are on disk (not an
        # in-tree package build's obj-<triplet>/, nor Python byte-code).
        git -C "$src" ls-files -z -c -o --exclude-standard |
            while IFS= read -r -d '' f; do
                case $f in obj-* | */__pycache__/* | __pycache__/*) continue ;; esac
                if [ -e "$src/$f" ]; then printf '%s\0' "$f"; fi
            done |
            tar -C "$src" --null -T - -cf - | tar -C "$tree" -xf -
    else
        tar -C "$src" --exclude='./build*' --exclude=./data --exclude=./out \
            --exclude=__pycache__ -cf - . | tar -C "$tree" -xf -
    fi
    (cd "$tree" && DEB_BUILD_OPTIONS="parallel=${RAM_DEB_JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
        { tail -n 60 "$work/build.log"; echo "deb-install: dpkg-buildpackage failed ($work/build.log)" >&2; exit 1; }
    grep -E '^(100% tests passed|[0-9]+% tests passed)' "$work/build.log" || true
    debdir=$work
    changes=$(ls "$debdir"/libram_"$version"_*.changes)
    if command -v lintian >/dev/null; then
        echo "== lintian $(basename "$changes")"
        lintian "$changes" 2>&1 | grep -v 'running with root privileges' | tee "$work/lintian.txt" || true
        if grep -q '^E:' "$work/lintian.txt"; then
            echo "deb-install: lintian reports errors" >&2
            exit 1
        fi
        echo "lintian: no errors"
    fi
fi

debs=()
for p in libram0 libram-dev ram-tools python3-libram; do
    f=""
    for f in "$debdir/${p}_${version}_"*.deb; do break; done
    [ -e "$f" ] || { echo "deb-install: no ${p}_${version}_*.deb in $debdir" >&2; exit 1; }
    debs+=("$f")
    echo "== $(basename "$f"): $(dpkg-deb -c "$f" | grep -vc '/$') files"
done

if [ "$system" = 1 ]; then
    [ "$(id -u)" = 0 ] || { echo "deb-install: --system needs root" >&2; exit 1; }
    echo "== apt-get install ${debs[*]##*/}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${debs[@]}" >/dev/null
    installed=(libram0 libram-dev ram-tools python3-libram)
    root=""
    libdir=/usr/lib/$ma
    # Check the packages' files even when another libram (say a
    # `cmake --install` to /usr/local) would come first: only Debian's
    # pkg-config directories, libram-dev's CMake package, and the loader
    # pointed at libram0's directory.
    export PKG_CONFIG_LIBDIR=$libdir/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig
    unset PKG_CONFIG_PATH
    lib_env=(LD_LIBRARY_PATH="$libdir")
    other=$(ldconfig -p | awk '$1 == "libram.so.0" { print $NF }' | xargs -r realpath |
        grep -vx "$(realpath "$libdir/libram.so.0")" | paste -sd ' ' || true)
    if [ -n "$other" ]; then
        echo "deb-install: warning: another libram is installed ($other); pinning the checks to $libdir" >&2
        lib_env+=(ram_ROOT=/usr) # find_package(ram) in the autopkgtest scripts
    fi
else
    root=$work/root
    rm -rf "$root"
    mkdir -p "$root"
    for f in "${debs[@]}"; do dpkg -x "$f" "$root"; done
    echo "== unpacked into $root"
    # ram.pc says prefix=/usr: the sysroot redirects its -I and -L into the
    # scratch root (and also the system openblas.pc's include directory, which
    # then does not exist: harmless, ram.h does not include cblas.h).
    export PKG_CONFIG_SYSROOT_DIR=$root
    export PKG_CONFIG_PATH=$root/usr/lib/$ma/pkgconfig
    libdir=$root/usr/lib/$ma
    lib_env=(LD_LIBRARY_PATH="$libdir")
fi
tmp=$work/check
rm -rf "$tmp"
mkdir -p "$tmp"

# Which libram a program loads, from ldd: must be $libdir's (compared as
# real paths: with a merged /usr, ldd may say /lib for /usr/lib).
uses_our_lib() {
    local deps got
    deps=$(env "${lib_env[@]}" ldd "$1")
    got=$(awk '$1 == "libram.so.0" && $2 == "=>" { print $3 }' <<<"$deps")
    if [ -z "$got" ] || [ "$(realpath "$got")" != "$(realpath "$libdir/libram.so.0")" ]; then
        { echo "deb-install: $1 does not load $libdir/libram.so.0:"; echo "$deps"; } >&2
        exit 1
    fi
}

echo "== pkg-config: $(pkg-config --cflags --libs ram)"
[ "$(pkg-config --modversion ram)" = "${version%%-*}" ]
# shellcheck disable=SC2046 # pkg-config's output is meant to split into words
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$tmp/pc-consumer" "$src/tests/consumer/main.c" \
    $(pkg-config --cflags --libs ram) ${root:+-Wl,-rpath,"$libdir"}
uses_our_lib "$tmp/pc-consumer"
"$tmp/pc-consumer"

echo "== find_package(ram)"
cmake -S "$src/tests/consumer" -B "$tmp/cmake" -DCMAKE_BUILD_TYPE=Release \
    ${root:+-DCMAKE_PREFIX_PATH="$root/usr"} ${other:+-Dram_DIR="$libdir/cmake/ram"} >"$tmp/cmake.log" ||
    { cat "$tmp/cmake.log"; exit 1; }
grep -q "^ram_DIR:[A-Z]*=${root}/usr/lib/$ma/cmake/ram$" "$tmp/cmake/CMakeCache.txt" ||
    { echo "deb-install: find_package(ram) did not use ${root}/usr"; grep ram_DIR "$tmp/cmake/CMakeCache.txt"; exit 1; } >&2
cmake --build "$tmp/cmake" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
uses_our_lib "$tmp/cmake/consumer"
"$tmp/cmake/consumer"

echo "== python3-libram"
# The binding finds libram by itself once installed; in a scratch root it is
# told where libram0's library is.
py_env=()
if [ -n "${other:-}" ]; then
    py_env=(RAM_LIBRARY="$libdir/libram.so.0" LIBRAM_LIBRARY="$libdir/libram.so.0")
fi
if [ -n "$root" ]; then
    py_env=(PYTHONPATH="$root/usr/lib/python3/dist-packages" RAM_LIBRARY="$libdir/libram.so.0"
            LIBRAM_LIBRARY="$libdir/libram.so.0" LD_LIBRARY_PATH="$libdir")
fi
# Debian's interpreter, the one python3-libram is for (not a pyenv or venv
# python3 that may come first in PATH).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
env "${py_env[@]}" PYTHONDONTWRITEBYTECODE=1 "$py" - "$root" "$libdir/libram.so.0" <<'EOF'
import os, sys
root, want = sys.argv[1], os.path.realpath(sys.argv[2])
import libram
where = os.path.dirname(os.path.realpath(libram.__file__))
expect = os.path.realpath((root or "/") + "/usr/lib/python3/dist-packages/libram")
assert where == expect, f"imported {where}, not {expect}"
# The binding loads the C library on import (older ones on first use: call
# their version function); then ask the dynamic loader which one it mapped.
for name in ("library_version", "library_path", "version_string"):
    v = getattr(libram, name, None)
    if v is not None:
        print(f"libram.{name} = {v() if callable(v) else v!r}")
with open("/proc/self/maps") as f:
    mapped = {line.split()[-1] for line in f if "libram.so" in line}
assert mapped, "libram.so is not loaded"
assert {os.path.realpath(m) for m in mapped} == {want}, f"loaded {mapped}, not {want}"
print(f"import libram: {where}, C library {want}")
EOF

# The package's own tests against the installed module (conftest.py imports
# the installed libram instead of python/libram under LIBRAM_TEST_INSTALLED).
if grep -qs LIBRAM_TEST_INSTALLED "$src/tests/python/conftest.py"; then
    if "$py" -c 'import pytest' 2>/dev/null; then
        echo "== tests/python against the installed module"
        (cd "$tmp" && env "${py_env[@]}" LIBRAM_TEST_INSTALLED=1 PYTHONDONTWRITEBYTECODE=1 \
            "$py" -m pytest -q -p no:cacheprovider "$src/tests/python" 2>&1 | tail -n 3)
    else
        echo "== tests/python: skipped, $py has no pytest (Debian: python3-pytest)"
    fi
fi

if [ "$system" = 1 ]; then
    # The autopkgtest scripts (debian/tests/control) against the installed
    # packages, from the source tree as autopkgtest runs them: with Debian's
    # python3 first in PATH, as in a testbed (not a pyenv or venv one).
    for t in "$src"/debian/tests/*; do
        [ -x "$t" ] || continue
        echo "== autopkgtest ${t##*/}"
        mkdir -p "$tmp/autopkgtest-${t##*/}"
        (cd "$src" && env "${lib_env[@]}" "${py_env[@]}" AUTOPKGTEST_TMP="$tmp/autopkgtest-${t##*/}" \
            PATH="/usr/bin:/bin:$PATH" "$t") 2>&1 |
            tail -n 4
    done
fi

echo "== ram-tools"
bindir=${root:-}/usr/bin
for tool in ram-train ram-eval ram-glimpses ram-data ram-classify; do
    uses_our_lib "$bindir/$tool"
    env "${lib_env[@]}" "$bindir/$tool" --help >"$tmp/$tool.help"
    v=$(env "${lib_env[@]}" "$bindir/$tool" --version)
    [ "$v" = "$tool (libram) ${version%%-*}" ] || { echo "deb-install: $tool --version: $v" >&2; exit 1; }
    page=${root:-}/usr/share/man/man1/$tool.1.gz
    [ -s "$page" ] || { echo "deb-install: no $page" >&2; exit 1; }
    echo "$v: --help $(wc -l <"$tmp/$tool.help") lines, man page $(zcat "$page" | wc -l) lines"
done
head -n 1 "$tmp/ram-eval.help" # not a pipe: under pipefail, head closing it early fails the run
echo "deb-install: ok"
