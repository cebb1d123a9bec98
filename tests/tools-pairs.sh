#!/usr/bin/env bash
# The two-digit sets (pairs100, sum100) through the tools on a tiny synthetic
# MNIST (tests/synthetic-idx.sh): ram-data exports them byte for byte alike
# twice (IDX, .npz, PNG folder); the labels are the pairs' classes and sums,
# the extra labels2 file holds two different digits in reading order that
# agree with them, and both sets have the same images; ram-train makes 45-
# and 19-class models (pairs100's class names stored), ram-eval reports the
# whole-image and the per-digit error, ram-glimpses and ram-classify run on
# them, the readers take what ram-data wrote; warps, --no-clutter, a model
# of other classes and a split of one label are refused with a clear message.
#
# Usage: tools-pairs.sh BUILD_DIR
set -euo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-pairs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tools-pairs: FAIL: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/synthetic-idx.sh"
export LC_ALL=C
make_split "$tmp/data" train 300 1
make_split "$tmp/data" t10k 100 2

data=("$bin/ram-data" --data "$tmp/data")
bytes() { od -An -v -tu1 -j "$2" "$1" | tr -s ' ' '\n' | sed '/^$/d'; } # file, header size

# ---- exports, twice: the same bytes ----
for set in pairs100 sum100; do
    for run in 1 2; do
        out="$tmp/$set-$run"
        mkdir -p "$out"
        for split in test val train; do
            val=(--val 100)
            [ "$split" != test ] || val=()
            "${data[@]}" --dataset "$set" --split "$split" "${val[@]}" --limit 40 --out "$out/idx" \
                >"$tmp/paths.txt" 2>"$tmp/err.txt" || fail "$set IDX $split: $(cat "$tmp/err.txt")"
            [ "$(wc -l <"$tmp/paths.txt")" -eq 3 ] || fail "$set: not three paths: $(cat "$tmp/paths.txt")"
        done
        "${data[@]}" --dataset "$set" --format npz --val 100 --limit 40 --out "$out/s.npz" \
            >/dev/null 2>"$tmp/err.txt" || fail "$set npz: $(cat "$tmp/err.txt")"
        "${data[@]}" --dataset "$set" --format png --val 100 --limit 40 --out "$out/png" \
            >/dev/null 2>"$tmp/err.txt" || fail "$set png: $(cat "$tmp/err.txt")"
    done
    for f in "$tmp/$set-1/idx/"* "$tmp/$set-1/s.npz"; do
        cmp -s "$f" "$tmp/$set-2/${f#"$tmp/$set-1/"}" || fail "$set: ${f##*/} differs between runs"
    done
    diff -r "$tmp/$set-1/png" "$tmp/$set-2/png" >/dev/null || fail "$set: PNG folders differ"
done
for split in t10k val train-e1-s1; do
    cmp -s "$tmp/pairs100-1/idx/pairs100-$split-images-idx3-ubyte" \
        "$tmp/sum100-1/idx/sum100-$split-images-idx3-ubyte" || fail "$split: pairs100 and sum100 images differ"
    cmp -s "$tmp/pairs100-1/idx/pairs100-$split-labels2-idx2-ubyte" \
        "$tmp/sum100-1/idx/sum100-$split-labels2-idx2-ubyte" || fail "$split: the two sets' digits differ"
done

# ---- the labels: class = pair of the two digits, sum = their sum ----
idx="$tmp/pairs100-1/idx"
[ "$(head -c 12 "$idx/pairs100-t10k-labels2-idx2-ubyte" | od -An -tx1 | tr -d ' \n')" = 000008020000002800000002 ] ||
    fail "labels2: not an N x 2 ubyte IDX header"
paste -d' ' <(bytes "$idx/pairs100-t10k-labels-idx1-ubyte" 8) \
    <(bytes "$tmp/sum100-1/idx/sum100-t10k-labels-idx1-ubyte" 8) \
    <(bytes "$idx/pairs100-t10k-labels2-idx2-ubyte" 12 | paste -d' ' - -) >"$tmp/labels.txt"
[ "$(wc -l <"$tmp/labels.txt")" -eq 40 ] || fail "not 40 labels"
awk '{ a = $3 < $4 ? $3 : $4; b = $3 < $4 ? $4 : $3
       if ($3 == $4 || $1 != a * (19 - a) / 2 + b - a - 1 || $2 != $3 + $4) { print; bad = 1 } }
     END { exit bad }' "$tmp/labels.txt" || fail "labels disagree with the digits (class sum d1 d2)"
# Synthetic labels cycle 0..9: image i's own digit is one of its two.
awk '$3 != (NR - 1) % 10 && $4 != (NR - 1) % 10 { bad = 1 } END { exit bad }' "$tmp/labels.txt" ||
    fail "image i does not hold digit i"
head -1 "$tmp/pairs100-1/png/test/digits.csv" | grep -qx "file,first,second" || fail "digits.csv header"
[ "$(($(wc -l <"$tmp/pairs100-1/png/test/digits.csv") - 1))" -eq 40 ] || fail "digits.csv rows"
ls "$tmp/sum100-1/png/test" | grep -v digits.csv | awk '!($0 ~ /^[0-9]+$/ && $0 >= 1 && $0 <= 17) { bad = 1 }
    END { exit bad }' || fail "sum100 class folders are not the sums: $(ls "$tmp/sum100-1/png/test")"

# ---- training and evaluation ----
train=("$bin/ram-train" --data "$tmp/data" --val 100 --batch 32 --threads 2 --quiet --epochs 1
       --glimpses 3 --hidden 32 --glimpse-out 32 --glimpse-hidden 16 --loc-hidden 16)
"${train[@]}" --dataset pairs100 --out "$tmp/p.ram" 2>"$tmp/train.txt" ||
    fail "ram-train pairs100: $(cat "$tmp/train.txt")"
"${train[@]}" --dataset sum100 --out "$tmp/s.ram" 2>"$tmp/train.txt" ||
    fail "ram-train sum100: $(cat "$tmp/train.txt")"
eval=("$bin/ram-eval" --data "$tmp/data" --json)
"${eval[@]}" --model "$tmp/p.ram" --dataset pairs100 >"$tmp/p.json" 2>"$tmp/err.txt" ||
    fail "ram-eval pairs100: $(cat "$tmp/err.txt")"
grep -q '"classes": \["0-1", "0-2", ' "$tmp/p.json" || fail "pairs100 model without class names"
grep -q '"8-9"\]' "$tmp/p.json" || fail "pairs100 model: not 45 names"
# errors / 2N <= object_error <= test_error: a wrong pair misses one digit or two.
sed 's/.*"test_error": \([0-9.]*\).*"n": \([0-9]*\).*"errors": \([0-9]*\).*"object_error": \([0-9.]*\), "digits_wrong": \([0-9]*\).*/\1 \2 \3 \4 \5/' \
    "$tmp/p.json" >"$tmp/errs.txt"
awk 'NF != 5 || $2 != 100 || $5 < $3 || $5 > 2 * $3 || ($4 - $5 / (2 * $2))^2 > 1e-10 { exit 1 }' \
    "$tmp/errs.txt" || fail "object_error: $(cat "$tmp/p.json")"
"${eval[@]}" --model "$tmp/s.ram" --dataset sum100 >"$tmp/s.json" 2>"$tmp/err.txt" ||
    fail "ram-eval sum100: $(cat "$tmp/err.txt")"
grep -q '"classes": \["0", "1", ' "$tmp/s.json" && ! grep -q object_error "$tmp/s.json" ||
    fail "sum100 JSON: $(cat "$tmp/s.json")"
"$bin/ram-eval" --data "$tmp/data" --model "$tmp/p.ram" --dataset pairs100 >"$tmp/p.txt" 2>&1 ||
    fail "ram-eval text: $(cat "$tmp/p.txt")"
grep -q "^digit error: " "$tmp/p.txt" || fail "no digit error printed"
# The digits missed, from the confusion matrix (rows: true pair, columns:
# predicted), must be the JSON's digits_wrong.
awk 'function pair(k, d) { d[0] = 0; while (k >= 9 - d[0]) { k -= 9 - d[0]; d[0]++ } d[1] = d[0] + 1 + k }
     /^confusion matrix/ { on = 1; getline; next }
     on && NF == 46 { t = $1; pair(t, T)
         for (c = 0; c < 45; c++) { pair(c, P)
             miss = 2 - (P[0] == T[0] || P[0] == T[1]) - (P[1] == T[0] || P[1] == T[1])
             wrong += $(c + 2) * miss; n += $(c + 2) } }
     on && NF != 46 { on = 0 }
     END { print wrong, n }' "$tmp/p.txt" >"$tmp/confusion.txt"
[ "$(cat "$tmp/confusion.txt")" = "$(awk '{ print $5, $2 }' "$tmp/errs.txt")" ] ||
    fail "digits wrong by the confusion matrix $(cat "$tmp/confusion.txt"), by ram-eval $(cat "$tmp/errs.txt")"
# A model of other classes is refused, with the counts.
if "${eval[@]}" --model "$tmp/s.ram" --dataset pairs100 >/dev/null 2>"$tmp/err.txt"; then
    fail "a 19-class model evaluated on pairs100"
fi
grep -q "has 19 classes but --dataset pairs100 has 45" "$tmp/err.txt" || fail "no clear message: $(cat "$tmp/err.txt")"

# The readers take the exports: IDX (one label per image; labels2 ignored), .npz.
# (MNIST's reader, --data DIR --split NAME, takes digits 0..9 only: the pair of files it is.)
"$bin/ram-eval" --test-images "$idx/pairs100-t10k-images-idx3-ubyte" \
    --test-labels "$idx/pairs100-t10k-labels-idx1-ubyte" --model "$tmp/p.ram" --json >"$tmp/x.json" \
    2>"$tmp/err.txt" || fail "ram-eval on the IDX export: $(cat "$tmp/err.txt")"
grep -q '"n": 40,' "$tmp/x.json" || fail "IDX export read back: $(cat "$tmp/x.json")"
"$bin/ram-eval" --data "$tmp/sum100-1/s.npz" --model "$tmp/s.ram" --json >"$tmp/x.json" \
    2>"$tmp/err.txt" || fail "ram-eval on the .npz export: $(cat "$tmp/err.txt")"
grep -q '"n": 40,' "$tmp/x.json" || fail ".npz export read back: $(cat "$tmp/x.json")"
"$bin/ram-train" --data "$tmp/pairs100-1/s.npz" --val 10 --batch 16 --threads 1 --quiet --epochs 1 \
    --glimpses 2 --hidden 16 --glimpse-out 16 --glimpse-hidden 8 --loc-hidden 8 --out "$tmp/n.ram" \
    2>"$tmp/err.txt" || fail "ram-train on the .npz export: $(cat "$tmp/err.txt")"

# ram-glimpses and ram-classify on the two-digit model.
"$bin/ram-glimpses" --model "$tmp/p.ram" --data "$tmp/data" --dataset pairs100 --count 2 \
    --out "$tmp/g.png" 2>"$tmp/err.txt" || fail "ram-glimpses: $(cat "$tmp/err.txt")"
[ -s "$tmp/g.png" ] || fail "ram-glimpses wrote nothing"
png="$(find "$tmp/pairs100-1/png/test" -name '*.png' | sort | head -1)"
"$bin/ram-classify" --model "$tmp/p.ram" "$png" >"$tmp/c.txt" 2>"$tmp/err.txt" ||
    fail "ram-classify: $(cat "$tmp/err.txt")"
cut -f2 "$tmp/c.txt" | grep -qxE '[0-9]-[0-9]' || fail "ram-classify: no pair name: $(cat "$tmp/c.txt")"

# ---- refusals ----
for bad in "--rotate 10" "--zoom 0.1"; do
    # shellcheck disable=SC2086
    if "${train[@]}" --dataset sum100 $bad --out "$tmp/b.ram" 2>"$tmp/err.txt"; then
        fail "$bad accepted with sum100"
    fi
    grep -q "warp one digit" "$tmp/err.txt" || fail "$bad: no clear message: $(cat "$tmp/err.txt")"
done
if "${eval[@]}" --model "$tmp/p.ram" --dataset pairs100 --no-clutter >/dev/null 2>&1; then
    fail "--no-clutter accepted on pairs100"
fi
# A split whose digits all have one label cannot make pairs.
mkdir -p "$tmp/one"
cp "$tmp/data/t10k-images-idx3-ubyte" "$tmp/one/"
{ be32 2049; be32 100; head -c 100 /dev/zero; } >"$tmp/one/t10k-labels-idx1-ubyte"
if "$bin/ram-data" --data "$tmp/one" --dataset pairs100 --out "$tmp/one/out" >/dev/null 2>"$tmp/err.txt"; then
    fail "pairs made from digits of one label"
fi
grep -q "all have the same label" "$tmp/err.txt" || fail "one label: no clear message: $(cat "$tmp/err.txt")"
echo "tools-pairs: OK"
