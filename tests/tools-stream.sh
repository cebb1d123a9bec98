#!/usr/bin/env bash
# Streamed image folders (ram-train --stream: a loader thread decodes each
# file when its batch comes) train exactly as kept ones: the same model
# file, a streamed --resume continues a kept run bit for bit, and a file
# whose header reads but whose pixels do not stops the run with its name,
# or, with --on-bad skip, is passed over and counted.  --flip changes the
# training, the same way every run.
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

# ram-eval on a streamed folder: the kept folder's figures.
"$bin/ram-eval" --model "$tmp/kept.ram" --data "$shapes" --json | sed "s/, \"seconds\": [0-9.]*//" >"$tmp/e1.json"
"$bin/ram-eval" --model "$tmp/kept.ram" --data "$shapes" --json --stream | sed "s/, \"seconds\": [0-9.]*//" >"$tmp/e2.json"
cmp -s "$tmp/e1.json" "$tmp/e2.json" || fail "ram-eval --stream: $(diff "$tmp/e1.json" "$tmp/e2.json")"
echo "tools-stream: ok"
