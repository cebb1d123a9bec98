#!/usr/bin/env bash
# ABI guard: compare a freshly built libram against the committed baseline
# (tests/abi/libram.so.<SOVERSION>.abi, written by abidw from a release).
#
#   check-abi.sh check  BASELINE LIBRARY HEADERS_DIR   fail on an incompatible change
#   check-abi.sh update BASELINE LIBRARY HEADERS_DIR   rewrite the baseline (at a release)
#
# The policy (docs/abi.md): within one SOVERSION only compatible changes are
# allowed (new functions, new enum values, fields appended to params structs
# are checked by struct_size at run time).  abidiff's exit status is a bit
# set: 1 = tool error, 2 = usage error, 4 = the ABI changed, 8 = the change is
# incompatible.  An incompatible change passes only when the SONAME was
# bumped, and then the baseline must be refreshed.
#
# Exit 77 (CTest: skipped) when abigail-tools are missing or the library has
# no DWARF (a Release build without -g): a guard that cannot see types would
# pass by default, so it says it did not run.
set -euo pipefail
mode=$1 baseline=$2 lib=$3 headers=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

for tool in abidw abidiff; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not found (Debian: abigail-tools)"; exit 77; }
done
# (grep reads everything: with pipefail, grep -q could fail the pipe by SIGPIPE.)
if [ "$(readelf -S "$lib" | grep -c '\.debug_info')" -eq 0 ]; then
    echo "SKIP: $lib has no debug info; configure with -DCMAKE_BUILD_TYPE=RelWithDebInfo"
    exit 77
fi

# Only what ram.h declares is ABI: types private to lib/ are dropped, and the
# build's paths are left out so the baseline does not depend on the checkout.
dump() {
    abidw --headers-dir "$headers" --drop-private-types --no-show-locs --no-comp-dir-path \
        --no-corpus-path "$1" | sed -E "s|path='[^']*/(lib/[^']*)'|path='\1'|"
}

if [ "$mode" = update ]; then
    dump "$lib" >"$baseline"
    echo "wrote $baseline"
    exit 0
fi

[ -f "$baseline" ] || { echo "FAIL: no baseline $baseline (run: $0 update ...)"; exit 1; }
old_soname=$(sed -nE "s/.*<abi-corpus [^>]*soname='([^']*)'.*/\1/p" "$baseline" | head -1)
new_soname=$(readelf -d "$lib" | sed -nE 's/.*Library soname: \[(.*)\]/\1/p')
echo "baseline: $baseline ($old_soname); library: $lib ($new_soname)"

set +e
# Both sides as abixml made the same way: abidiff of an XML against the ELF
# with --headers-dir2 filtered real layout changes out (abigail 2.2).
current=$(mktemp)
trap 'rm -f "$current"' EXIT
dump "$lib" >"$current"
report=$(abidiff --suppressions "$here/abi/params-grow-at-end.abignore" --no-added-syms \
    "$baseline" "$current" 2>&1)
rc=$?
set -e
added=$(abidiff "$baseline" "$current" 2>&1 | sed -nE 's/.*, ([0-9]+) Added functions?.*/\1/p' || true)

if [ $((rc & 3)) -ne 0 ]; then
    echo "FAIL: abidiff could not compare (status $rc):"
    echo "$report"
    exit 1
fi
# abidiff sets bit 8 only for removed symbols; a changed layout or signature
# sets bit 4.  With additions hidden and appended params members suppressed,
# any change left breaks callers built against the baseline.
if [ $((rc & 12)) -ne 0 ]; then
    echo "$report"
    if [ "$old_soname" != "$new_soname" ]; then
        echo "ABI break with a bumped SONAME ($old_soname -> $new_soname): allowed;"
        echo "refresh the baseline: $0 update $baseline $lib $headers"
        exit 0
    fi
    echo "FAIL: ABI change without a SONAME bump (policy: docs/abi.md)."
    echo "If it is an allowed addition (a new enum value), refresh the baseline in the same commit."
    exit 1
fi
echo "ok: no ABI break; ${added:-0} function(s) added since the baseline"
