#!/usr/bin/env bash
# Streamed image folders (ram-train --stream: a loader thread decodes each
# file when its batch comes) train exactly as kept ones: the same model
# file, a streamed --resume continues a kept run bit for bit, and a file
# whose header reads but whose pixels do not stops the run with its name,
# or, with --on-bad skip, is passed over and counted.  --flip changes the
# training, the same way every run.  --cache keeps the decoded images in a
# file and trains the same model from it.
#
# Usage: tools-stream.sh BUILD_DIR
set -euo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-stream.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tools-stream: FAIL: $*" >&2; exit 1; }
export LC_ALL=C
"$bin/tests/image_fixtures" "$tmp" >/dev/null || fail "image_fixtures"
shapes="$tmp/shapes"
small=(--data "$shapes" --batch 16 --threads 1 --quiet --glimpses 3 --patch 6 --depth 2
       --hidden 32 --glimpse-out 32 --glimpse-hidden 16 --loc-hidden 16 --lr 3e-3 --channels 3)
train() { # OUT EPOCHS [options]
    local out="$1" epochs="$2"
    shift 2
    "$bin/ram-train" "${small[@]}" --epochs "$epochs" --out "$out" "$@" 2>"$out.txt" ||
        fail "ram-train $*: $(cat "$out.txt")"
}

train "$tmp/kept.ram" 3 --log "$tmp/kept.csv"
train "$tmp/streamed.ram" 3 --stream --prefetch 1 --log "$tmp/streamed.csv"
cmp -s "$tmp/kept.ram" "$tmp/streamed.ram" || fail "a streamed run trained otherwise than a kept one"
[ "$(cut -d, -f1,3- "$tmp/kept.csv")" = "$(cut -d, -f1,3- "$tmp/streamed.csv")" ] ||
    fail "the logs differ: $(paste -d'|' "$tmp/kept.csv" "$tmp/streamed.csv")"
train "$tmp/deep.ram" 3 --stream --prefetch 8
cmp -s "$tmp/kept.ram" "$tmp/deep.ram" || fail "--prefetch 8 changed the training"

# Two epochs streamed, the third resumed from the checkpoint: the kept run's model.
train "$tmp/r.ram" 2 --stream
train "$tmp/r.ram" 3 --stream --resume "$tmp/r.ram.ckpt"
cmp -s "$tmp/kept.ram" "$tmp/r.ram" || fail "a streamed --resume did not continue exactly"

# --flip: another training, the same every time.
train "$tmp/f1.ram" 1 --flip --stream
train "$tmp/f2.ram" 1 --flip
train "$tmp/nf.ram" 1
cmp -s "$tmp/f1.ram" "$tmp/f2.ram" || fail "--flip is not reproducible"
! cmp -s "$tmp/f1.ram" "$tmp/nf.ram" || fail "--flip trained as without it"
grep -q "mirrored" "$tmp/f1.ram.txt" || fail "the header does not say --flip: $(cat "$tmp/f1.ram.txt")"
set +e
"$bin/ram-train" "${small[@]}" --epochs 2 --out "$tmp/f1.ram" --resume "$tmp/nf.ram.ckpt" --flip \
    2>"$tmp/u.txt"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "is a run on other images" "$tmp/u.txt" ||
    fail "a run without --flip resumed with it (exit $rc): $(cat "$tmp/u.txt")"

# A PNG whose header is whole but whose pixels are cut off: a streamed run
# reads the header at the start and the pixels in the epoch.
cp -r "$shapes" "$tmp/d"
png="$tmp/d/train/cross/000.png"
size=$(stat -c %s "$png")
head -c $((size - 20)) "$png" >"$tmp/cut.png" && mv "$tmp/cut.png" "$png"
set +e
"$bin/ram-train" "${small[@]/$shapes/$tmp/d}" --epochs 1 --stream --out "$tmp/bad.ram" 2>"$tmp/bad.txt"
rc=$?
set -e
[ $rc -eq 1 ] || fail "a damaged file in a streamed folder: exit $rc, not 1"
grep -q "$png is not a valid PNG" "$tmp/bad.txt" || fail "the damaged file not named: $(cat "$tmp/bad.txt")"
[ ! -e "$tmp/bad.ram" ] || fail "a model was written by a run that stopped"
"$bin/ram-train" "${small[@]/$shapes/$tmp/d}" --epochs 1 --stream --on-bad skip --out "$tmp/skip.ram" \
    2>"$tmp/skip.txt" || fail "--stream --on-bad skip: $(cat "$tmp/skip.txt")"
grep -q "skipped 1 unreadable image this epoch" "$tmp/skip.txt" ||
    fail "the skipped file not counted: $(cat "$tmp/skip.txt")"

# --cache: the decoded images kept in a file; the same model whether the
# cache is being filled (first run) or read (second run), and a cache that
# does not match (a file changed) or was not closed (a run killed) is made
# anew, never read.
cache="$tmp/cache"
train "$tmp/c1.ram" 3 --stream --cache "$cache"
cmp -s "$tmp/kept.ram" "$tmp/c1.ram" || fail "a run filling the cache trained otherwise"
grep -q "0 of .* images decoded in the cache" "$tmp/c1.ram.txt" ||
    fail "the new cache was not reported empty: $(cat "$tmp/c1.ram.txt")"
train "$tmp/c2.ram" 3 --stream --cache "$cache"
cmp -s "$tmp/kept.ram" "$tmp/c2.ram" || fail "a run reading the cache trained otherwise"
n=$(grep -o "[0-9]* of [0-9]* images decoded in the cache" "$tmp/c2.ram.txt" | head -1)
[ "${n%% *}" -gt 0 ] && [ "${n%% *}" = "$(echo "$n" | cut -d' ' -f3)" ] ||
    fail "the second run did not find every image in the cache: $n"
files=$(ls "$cache" | wc -l)
# Poison every cached image's bytes, then mark the files unclean (as a
# killed run leaves them): they must be made anew, not read.
for f in "$cache"/*.ramcache; do
    python3 - "$f" <<'PY' || fail "could not edit the cache file"
import sys
with open(sys.argv[1], "r+b") as f:
    data = bytearray(f.read())
    data[32:36] = b"\0\0\0\0"        # clean = 0
    for i in range(4096, len(data)):
        data[i] = 255 - data[i]
    f.seek(0); f.write(data)
PY
done
train "$tmp/c3.ram" 3 --stream --cache "$cache"
cmp -s "$tmp/kept.ram" "$tmp/c3.ram" || fail "a cache left unclean was read"
# A changed file: another cache, the old one left alone.
cp -r "$shapes" "$tmp/s2"
touch -d "2001-01-01" "$tmp/s2/train/cross/000.png"
"$bin/ram-train" "${small[@]/$shapes/$tmp/s2}" --epochs 1 --stream --cache "$cache" \
    --out "$tmp/c4.ram" 2>"$tmp/c4.txt" || fail "--cache on a changed folder: $(cat "$tmp/c4.txt")"
grep -q "0 of .* images decoded in the cache" "$tmp/c4.txt" ||
    fail "a changed file's folder read the old cache: $(cat "$tmp/c4.txt")"
[ "$(ls "$cache" | wc -l)" -gt "$files" ] || fail "no new cache file for the changed folder"
# A cache folder that cannot be made: a warning, and the run as without it.
: >"$tmp/notadir"
train "$tmp/c5.ram" 3 --stream --cache "$tmp/notadir/sub"
cmp -s "$tmp/kept.ram" "$tmp/c5.ram" || fail "a run without a usable cache trained otherwise"
grep -q "warning: --cache: cannot make" "$tmp/c5.ram.txt" ||
    fail "the unusable cache folder was not said: $(cat "$tmp/c5.ram.txt")"

# ram-eval on a streamed folder: the kept folder's figures.
"$bin/ram-eval" --model "$tmp/kept.ram" --data "$shapes" --json | sed "s/, \"seconds\": [0-9.]*//" >"$tmp/e1.json"
"$bin/ram-eval" --model "$tmp/kept.ram" --data "$shapes" --json --stream | sed "s/, \"seconds\": [0-9.]*//" >"$tmp/e2.json"
cmp -s "$tmp/e1.json" "$tmp/e2.json" || fail "ram-eval --stream: $(diff "$tmp/e1.json" "$tmp/e2.json")"
for k in 1 2; do
    "$bin/ram-eval" --model "$tmp/kept.ram" --data "$shapes" --json --stream --cache "$cache" 2>/dev/null |
        sed "s/, \"seconds\": [0-9.]*//" >"$tmp/e3.json"
    cmp -s "$tmp/e1.json" "$tmp/e3.json" || fail "ram-eval --cache (run $k): $(diff "$tmp/e1.json" "$tmp/e3.json")"
done
echo "tools-stream: ok"
