#!/usr/bin/env bash
# The committed MNIST model on the MNIST test set exported as a PNG folder
# (ram-data --format png) must make exactly the errors it makes on the IDX
# files: PNG is lossless, and the folder reader must not move a pixel.
# Also: the export is byte-identical when run twice, and an export never
# leaves a folder of its name behind when it fails.
#
# Usage: tools-images-mnist.sh BUILD_DIR MNIST_DIR MODEL (exit 77: no MNIST)
set -euo pipefail
bin="$1" mnist="$2" model="$3"
[ -f "$mnist/t10k-images-idx3-ubyte" ] || { echo "no MNIST in $mnist: skipped"; exit 77; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-images-mnist.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tools-images-mnist: FAIL: $*" >&2; exit 1; }
export LC_ALL=C

"$bin/ram-data" --dataset mnist --data "$mnist" --format png --split test --out "$tmp/png" \
    >"$tmp/out.txt" 2>"$tmp/err.txt" || fail "ram-data --format png: $(cat "$tmp/err.txt")"
[ "$(cat "$tmp/out.txt")" = "$tmp/png" ] || fail "ram-data did not print the folder"
[ "$(find "$tmp/png/test" -name '*.png' | wc -l)" -eq 10000 ] || fail "not 10000 PNGs"
[ "$(ls "$tmp/png/test" | tr '\n' ' ')" = "0 1 2 3 4 5 6 7 8 9 " ] || fail "class folders"
! compgen -G "$tmp/*.tmp-*" >/dev/null || fail "a temporary folder was left behind"

# The whole test set: the same error count and confusion matrix.
eval_text() { "$bin/ram-eval" --model "$model" --data "$1" --threads 2 "${@:2}" |
    sed -n '/^test error/p;/^confusion/,/^$/p'; }
eval_text "$mnist" >"$tmp/idx.txt"
eval_text "$tmp/png" >"$tmp/png.txt"
grep -q "^test error" "$tmp/idx.txt" || fail "no test error from ram-eval"
cmp -s "$tmp/idx.txt" "$tmp/png.txt" ||
    fail "the PNG folder gives other errors: $(diff "$tmp/idx.txt" "$tmp/png.txt")"

# The first 500 IDX images are the files 000..499 of the folder: the same
# errors again with --limit (the order of a folder is its own).
find "$tmp/png/test" -name '*.png' |
    awk -F/ '{ n = $NF; sub(/\.png$/, "", n); if (n + 0 >= 500) print }' | xargs rm
[ "$(find "$tmp/png/test" -name '*.png' | wc -l)" -eq 500 ] || fail "not 500 PNGs left"
eval_text "$mnist" --limit 500 >"$tmp/idx.txt"
eval_text "$tmp/png" >"$tmp/png.txt"
cmp -s "$tmp/idx.txt" "$tmp/png.txt" ||
    fail "500 PNGs give other errors: $(diff "$tmp/idx.txt" "$tmp/png.txt")"

# Twice the same bytes; an existing folder is refused and left alone.
"$bin/ram-data" --dataset translated60 --data "$mnist" --format png --split val --val 300 \
    --out "$tmp/t1" >/dev/null 2>&1 || fail "ram-data translated60 val"
"$bin/ram-data" --dataset translated60 --data "$mnist" --format png --split val --val 300 \
    --out "$tmp/t2" >/dev/null 2>&1 || fail "ram-data translated60 val, twice"
diff -r "$tmp/t1" "$tmp/t2" >/dev/null || fail "two exports differ"
[ "$(find "$tmp/t1/val" -name '*.png' | wc -l)" -eq 300 ] || fail "not 300 validation PNGs"
if "$bin/ram-data" --dataset mnist --data "$mnist" --format png --split test --out "$tmp/t1" \
    2>"$tmp/err.txt"; then fail "an existing folder was written over"; fi
grep -q "exists" "$tmp/err.txt" || fail "no clear message: $(cat "$tmp/err.txt")"
# A failed export (no MNIST there) leaves nothing of its name.
if "$bin/ram-data" --dataset mnist --data "$tmp/none" --format png --out "$tmp/t3" 2>/dev/null; then
    fail "an export without MNIST succeeded"
fi
! compgen -G "$tmp/t3*" >/dev/null || fail "a failed export left $(compgen -G "$tmp/t3*")"
# An export cut short is never taken for a complete one: the folder of its
# name appears only at the end (60000 training PNGs take a few seconds).
"$bin/ram-data" --dataset mnist --data "$mnist" --format png --split train --out "$tmp/k" \
    >/dev/null 2>&1 &
pid=$!
sleep 1
kill "$pid" 2>/dev/null || fail "the export ended within a second: no interruption tested"
wait "$pid" 2>/dev/null || true
[ ! -e "$tmp/k" ] || fail "an interrupted export left $tmp/k"
ls -d "$tmp"/k.tmp-* >/dev/null 2>&1 || fail "the export was not written beside its name"
# NumPy's .npz is read as Keras' mnist.npz has it: the same 80 errors
# again, from uint8 and from float32 N x H x W x 1 arrays, from a compressed
# one (np.savez_compressed) and from float64 ones; and from the test split
# as two files, the IDX files themselves and a pair of .npy files (N x C x
# H x W, PyTorch's order); a label file of another length is refused.
py="${RAM_TEST_PYTHON:-python3}"
if "$py" -c "import numpy" 2>/dev/null; then
    "$py" - "$mnist" "$tmp" <<'PY'
import sys, numpy as np
d, out = sys.argv[1], sys.argv[2]
def images(f): return np.frombuffer(open(f"{d}/{f}", "rb").read()[16:], np.uint8).reshape(-1, 28, 28)
def labels(f): return np.frombuffer(open(f"{d}/{f}", "rb").read()[8:], np.uint8)
xt, yt = images("train-images-idx3-ubyte")[:600], labels("train-labels-idx1-ubyte")[:600]
xs, ys = images("t10k-images-idx3-ubyte"), labels("t10k-labels-idx1-ubyte")
np.savez(f"{out}/u8.npz", x_train=xt, y_train=yt.astype(np.int64), x_test=xs, y_test=ys)
f = lambda x: (x / np.float32(255)).astype(np.float32)[..., None]
np.savez(f"{out}/f32.npz", x_train=f(xt[:500]), y_train=yt[:500], x_val=xt[500:], y_val=yt[500:],
         x_test=f(xs), y_test=ys.astype(np.int32))
np.savez_compressed(f"{out}/zip.npz", x_train=xt, y_train=yt, x_test=xs, y_test=ys)
np.savez(f"{out}/f64.npz", x_train=xt / 255.0, y_train=yt, x_test=xs / 255.0, y_test=ys)
np.save(f"{out}/x_test.npy", xs[:, None])
np.save(f"{out}/y_test.npy", ys.astype(np.int32))
np.save(f"{out}/y_short.npy", ys[:-1])
np.save(f"{out}/y_frac.npy", ys + np.float32(0.5))
PY
    eval_text "$mnist" >"$tmp/idx.txt"
    for z in u8 f32 zip f64; do
        eval_text "$tmp/$z.npz" >"$tmp/npz.txt"
        cmp -s "$tmp/idx.txt" "$tmp/npz.txt" || fail "$z.npz gives other errors: $(cat "$tmp/npz.txt")"
    done
    pair() { # IMAGES LABELS: the errors line of ram-eval on a pair of files
        "$bin/ram-eval" --model "$model" --test-images "$1" --test-labels "$2" --json |
            sed 's/.*"errors": \([0-9]*\).*/\1/'
    }
    [ "$(pair "$mnist/t10k-images-idx3-ubyte" "$mnist/t10k-labels-idx1-ubyte")" = 80 ] ||
        fail "the IDX pair by name gives other errors"
    [ "$(pair "$tmp/x_test.npy" "$tmp/y_test.npy")" = 80 ] || fail "the .npy pair gives other errors"
    if "$bin/ram-eval" --model "$model" --test-images "$tmp/x_test.npy" \
        --test-labels "$tmp/y_short.npy" 2>"$tmp/err.txt"; then fail "9999 labels for 10000 images"; fi
    grep -q "y_short.npy has 9999 labels for the 10000 images of $tmp/x_test.npy" "$tmp/err.txt" ||
        fail "short labels: $(cat "$tmp/err.txt")"
    if "$bin/ram-eval" --model "$model" --test-images "$tmp/x_test.npy" \
        --test-labels "$tmp/y_frac.npy" 2>"$tmp/err.txt"; then fail "fractional labels read"; fi
    grep -q "^ram-eval: $tmp/y_frac.npy: " "$tmp/err.txt" ||
        fail "fractional labels: the label file is not named: $(cat "$tmp/err.txt")"
    "$bin/ram-train" --train-images "$tmp/x_test.npy" --train-labels "$tmp/y_test.npy" --epochs 1 \
        --train-limit 600 --quiet --glimpses 2 --hidden 16 --out "$tmp/pair.ram" 2>"$tmp/pair.txt" ||
        fail "ram-train on a pair of files: $(cat "$tmp/pair.txt")"
    grep -q "600 train / 1000 validation images" "$tmp/pair.txt" || fail "pair: $(cat "$tmp/pair.txt")"
    set +e
    "$bin/ram-train" --data "$mnist" --train-images "$tmp/x_test.npy" --train-labels "$tmp/y_test.npy" \
        --out "$tmp/pair.ram" 2>/dev/null
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "--data with --train-images: exit $rc, not 2"
    "$bin/ram-train" --data "$tmp/f32.npz" --epochs 1 --quiet --glimpses 2 --hidden 16 \
        --out "$tmp/npz.ram" 2>"$tmp/npz-train.txt" || fail "ram-train on an .npz: $(cat "$tmp/npz-train.txt")"
    grep -q "500 train / 100 validation images" "$tmp/npz-train.txt" || fail "x_val not used"
else
    echo "no NumPy in $py: the .npz part is skipped"
fi
echo "tools-images-mnist: ok"
