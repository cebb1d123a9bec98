#!/usr/bin/env bash
# The tools on users' own images: an image folder of generated 16x16 shapes
# (tests/image_fixtures.c: 3 classes, PNG and JPEG, grey and colour) is
# trained on, the model carries the class names (through its checkpoint too)
# and its fit rule, and ram-classify agrees with ram-eval on the same files.
# Bad input (truncated PNG, corrupt and CMYK JPEG, text named .png, 0x0 and
# absurd headers, an empty class, a single class, a stray file, an
# unreadable file, a FIFO) is refused with a message naming the file, exit status 1
# and no model written; --on-bad skip passes over it and says so.
#
# Usage: tools-images.sh BUILD_DIR
set -euo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-images.XXXXXX")"
trap 'chmod -R u+rwX "$tmp"; rm -rf "$tmp"' EXIT
fail() { echo "tools-images: FAIL: $*" >&2; exit 1; }
export LC_ALL=C
"$bin/tests/image_fixtures" "$tmp" >/dev/null || fail "image_fixtures"
shapes="$tmp/shapes"

small=(--batch 16 --threads 1 --quiet --glimpses 3 --patch 6 --depth 2 --hidden 32
       --glimpse-out 32 --glimpse-hidden 16 --loc-hidden 16 --lr 3e-3)
"$bin/ram-train" --data "$shapes" "${small[@]}" --epochs 30 --out "$tmp/m.ram" 2>"$tmp/train.txt" ||
    fail "ram-train on a folder: $(cat "$tmp/train.txt")"
grep -q "$shapes 16x16" "$tmp/train.txt" || fail "the header does not name the folder: $(cat "$tmp/train.txt")"
grep -q "108 train / 12 validation images" "$tmp/train.txt" || fail "not a tenth for validation"

# The class names are in the model, and in its checkpoint.
"$bin/ram-classify" --model "$tmp/m.ram" "$shapes"/test/*/0*.png >"$tmp/cls.txt" ||
    fail "ram-classify: $(cat "$tmp/cls.txt")"
[ "$(cut -f2 "$tmp/cls.txt" | sort -u | grep -cv '^\(circle\|cross\|square\)$')" -eq 0 ] ||
    fail "classes other than the folders': $(cut -f2 "$tmp/cls.txt" | sort -u)"
"$bin/ram-classify" --model "$tmp/m.ram.ckpt" "$shapes/test/cross/000.png" | grep -qP '\t(circle|cross|square)\t' ||
    fail "the checkpoint lost the class names"
"$bin/ram-train" --data "$shapes" "${small[@]}" --epochs 31 --out "$tmp/m.ram" \
    --resume "$tmp/m.ram.ckpt" 2>"$tmp/resume.txt" || fail "resume: $(cat "$tmp/resume.txt")"
"$bin/ram-classify" --model "$tmp/m.ram" --json --top 3 --locations "$shapes/test/circle/001.png" \
    >"$tmp/one.json" || fail "ram-classify --json"
grep -q '"class": "\(circle\|cross\|square\)"' "$tmp/one.json" || fail "no class name after --resume"
grep -q '"top": \[{"label".*}, {.*}, {.*}\]' "$tmp/one.json" || fail "--top 3: $(cat "$tmp/one.json")"
grep -q '"locations": \[\[' "$tmp/one.json" || fail "--locations: $(cat "$tmp/one.json")"
# --stop-threshold 0: every image after one glimpse, its one location, the
# glimpses as the last column; the label that of ram-eval stopping alike.
"$bin/ram-classify" --model "$tmp/m.ram" --stop-threshold 0 --json --locations \
    "$shapes/test/circle/001.png" >"$tmp/stop.json" || fail "ram-classify --stop-threshold"
grep -q '"glimpses": 1, "locations": \[\[[^]]*\]\]}' "$tmp/stop.json" ||
    fail "--stop-threshold 0: $(cat "$tmp/stop.json")"
# At 0.9: each image after 1 to 3 glimpses, and one that took all 3 has the
# class of the whole pass.
"$bin/ram-classify" --model "$tmp/m.ram" --stop-threshold 0.9 "$shapes"/test/*/0*.png >"$tmp/stop.txt" ||
    fail "ram-classify --stop-threshold 0.9"
paste "$tmp/stop.txt" "$tmp/cls.txt" | awk -F'\t' '$4 < 1 || $4 > 3 || ($4 == 3 && $2 != $6) { bad = 1 }
    END { exit bad }' || fail "--stop-threshold 0.9: $(paste "$tmp/stop.txt" "$tmp/cls.txt")"
# A stop unit fitted on the folder's images (8-bit, handed over as bytes):
# at a high cost every image after one glimpse, in ram-eval and ram-classify.
"$bin/ram-train" --data "$shapes" --init "$tmp/m.ram" --epochs 0 --stop-cost 0.5 --quiet \
    --out "$tmp/unit.ram" 2>"$tmp/unit.txt" || fail "--stop-cost on a folder: $(cat "$tmp/unit.txt")"
grep -q "^stop unit on the 12 validation images: .* with 1.00 glimpses" "$tmp/unit.txt" ||
    fail "--stop-cost 0.5 on a folder: $(cat "$tmp/unit.txt")"
"$bin/ram-classify" --model "$tmp/unit.ram" --stop-unit "$shapes"/test/*/0*.png >"$tmp/unit.tsv" ||
    fail "ram-classify --stop-unit"
awk -F'\t' '$4 != 1 { bad = 1 } END { exit bad }' "$tmp/unit.tsv" ||
    fail "--stop-unit: $(cat "$tmp/unit.tsv")"

# --init on a folder: at learning rate 0 the model written is the model
# itself, class names and fit rule included (the fit rule comes from it).
"$bin/ram-train" --data "$shapes" --init "$tmp/m.ram" --lr 0 --epochs 1 --quiet \
    --out "$tmp/i.ram" 2>"$tmp/i.txt" || fail "--init on a folder: $(cat "$tmp/i.txt")"
cmp -s "$tmp/m.ram" "$tmp/i.ram" || fail "--init --lr 0 did not keep the model"

"$bin/ram-eval" --model "$tmp/m.ram" --data "$shapes" --json |
    grep -q '"classes": \["circle", "cross", "square"\]' || fail "ram-eval --json: no class names"

# ram-classify and ram-eval agree: ram-eval's confusion matrix of the test
# split is the count of (folder, class) pairs of ram-classify's lines.
"$bin/ram-eval" --model "$tmp/m.ram" --data "$shapes" >"$tmp/eval.txt" || fail "ram-eval on a folder"
# The shapes are easy: a model that learnt them was fed the right labels.
awk '/^test error/ { sub(/%/, "", $3); exit !($3 + 0 < 35) }' "$tmp/eval.txt" ||
    fail "the shapes were not learnt: $(grep '^test error' "$tmp/eval.txt")"
"$bin/ram-classify" --model "$tmp/m.ram" "$shapes"/test/*/* >"$tmp/all.txt" || fail "ram-classify all"
[ "$(wc -l <"$tmp/all.txt")" -eq 36 ] || fail "not 36 lines from ram-classify"
# - reads the files' names from standard input: the same lines.
printf '%s\n' "$shapes"/test/*/* | "$bin/ram-classify" --model "$tmp/m.ram" - >"$tmp/stdin.txt" ||
    fail "ram-classify -"
cmp -s "$tmp/all.txt" "$tmp/stdin.txt" || fail "ram-classify - did not classify the files named"
# --glimpses: one PNG with a panel per image, 4 to a row (12 images: 3 rows
# of 4 panels, 284 x 315 pixels each, and a margin of 16).
"$bin/ram-classify" --model "$tmp/m.ram" --glimpses "$tmp/fig.png" "$shapes"/test/circle/* \
    >/dev/null || fail "ram-classify --glimpses"
[ "$(od -An -tx1 -j12 -N12 "$tmp/fig.png" | tr -d ' \n')" = 4948445200000490000003d1 ] ||
    fail "--glimpses: not a 1168 x 977 PNG: $(od -An -tx1 -N24 "$tmp/fig.png")"
names=(circle cross square)
awk '/^confusion/ { on = 1; getline; next } on && NF == 4 { print $2, $3, $4 }' "$tmp/eval.txt" \
    >"$tmp/eval-matrix.txt"
for t in "${names[@]}"; do
    row=""
    for p in "${names[@]}"; do
        row+="$(awk -F'\t' -v t="/$t/" -v p="$p" 'index($1, t) && $2 == p' "$tmp/all.txt" | wc -l) "
    done
    echo "${row% }"
done >"$tmp/classify-matrix.txt"
cmp -s "$tmp/eval-matrix.txt" "$tmp/classify-matrix.txt" ||
    fail "ram-classify and ram-eval disagree: $(paste "$tmp/eval-matrix.txt" "$tmp/classify-matrix.txt")"

# --fit is kept in the model: a 12x12 colour model resizes every image, of any
# size and channel count, as it was trained.
"$bin/ram-train" --data "$shapes" "${small[@]}" --epochs 1 --fit resize --height 12 --width 12 \
    --channels 3 --out "$tmp/r.ram" 2>"$tmp/r.txt" || fail "--fit resize: $(cat "$tmp/r.txt")"
grep -q "16x16\|12x12" "$tmp/r.txt" || fail "no canvas in the header"
"$bin/ram-classify" --model "$tmp/r.ram" "$tmp"/good/* >"$tmp/good.txt" || fail "good files refused"
[ "$(wc -l <"$tmp/good.txt")" -eq "$(ls "$tmp/good" | wc -l)" ] || fail "a good file unclassified"
"$bin/ram-eval" --model "$tmp/r.ram" --data "$shapes" --json | grep -q '"n": 36' || fail "ram-eval --fit resize"

# A folder of class folders alone: a fifth of each class's files, by a hash
# of their names, is the test split; the two splits share no file.
mkdir "$tmp/flat"
for c in circle cross square; do
    mkdir "$tmp/flat/$c"
    for f in "$shapes/train/$c"/* "$shapes/test/$c"/*; do
        cp "$f" "$tmp/flat/$c/$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")"
    done
done
count() { "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/flat" --split "$1" --json |
    sed 's/.*"n": \([0-9]*\).*/\1/'; }
n_test=$(count test) n_train=$(count train)
[ $((n_test + n_train)) -eq 156 ] || fail "the hashed split: $n_train train + $n_test test, not 156 images"
if [ "$n_test" -lt 16 ] || [ "$n_test" -gt 48 ]; then fail "the hashed split: $n_test of 156 for testing"; fi
if "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/flat" --split val 2>"$tmp/u.txt"; then
    fail "--split val of a folder without one"
fi
grep -q "has no val split" "$tmp/u.txt" || fail "--split val: no clear message: $(cat "$tmp/u.txt")"
"$bin/ram-train" --data "$tmp/flat" "${small[@]}" --epochs 1 --out "$tmp/flat.ram" 2>"$tmp/flat.txt" ||
    fail "ram-train on a flat folder: $(cat "$tmp/flat.txt")"
grep -q "$((n_train - n_train / 10)) train / $((n_train / 10)) validation images" "$tmp/flat.txt" ||
    fail "the flat folder's training split: $(cat "$tmp/flat.txt")"

# A CSV (or TSV) list of images and classes is a data set too: one split,
# paths relative to the list's folder.
(cd "$shapes" && { echo path,label; for f in test/*/*; do echo "$f,$(basename "$(dirname "$f")")"; done; }) \
    >"$shapes/test.csv"
(cd "$shapes" && for f in train/*/*; do printf '%s\t%s\n' "$f" "$(basename "$(dirname "$f")")"; done) \
    >"$shapes/train.tsv"
"$bin/ram-eval" --model "$tmp/m.ram" --data "$shapes/test.csv" | sed -n '/^test error/,/^$/p' >"$tmp/csv.txt"
sed -n '/^test error/,/^$/p' "$tmp/eval.txt" | cmp -s - "$tmp/csv.txt" ||
    fail "the CSV list of the test split gives other errors: $(cat "$tmp/csv.txt")"
"$bin/ram-train" --data "$shapes/train.tsv" "${small[@]}" --epochs 1 --out "$tmp/tsv.ram" \
    2>"$tmp/tsv.txt" || fail "ram-train on a TSV list: $(cat "$tmp/tsv.txt")"
grep -q "108 train / 12 validation images" "$tmp/tsv.txt" || fail "the TSV list: $(cat "$tmp/tsv.txt")"
printf 'test/circle/000.png,circle\ntest/cross/000.png\n' >"$shapes/bad.csv"
if "$bin/ram-eval" --model "$tmp/m.ram" --data "$shapes/bad.csv" 2>"$tmp/u.txt"; then fail "bad.csv read"; fi
grep -q "bad.csv:2: not PATH,LABEL" "$tmp/u.txt" || fail "bad.csv: no clear message: $(cat "$tmp/u.txt")"
printf 'test/circle/000.png,circle\ntest/cross/000.png,star\n' >"$shapes/bad.csv"
if "$bin/ram-eval" --model "$tmp/m.ram" --data "$shapes/bad.csv" 2>"$tmp/u.txt"; then fail "a star read"; fi
grep -q "class star is not one of the model's 3 classes" "$tmp/u.txt" || fail "star: $(cat "$tmp/u.txt")"
rm "$shapes"/*.csv "$shapes"/*.tsv

# The augmentations on a folder, colour too: each changes what is trained on.
aug() { "$bin/ram-train" --data "$shapes" "${small[@]}" --epochs 1 --channels 3 "$@" \
    --out "$tmp/aug.ram" --log "$tmp/aug.csv" 2>"$tmp/aug.txt" || fail "ram-train $*: $(cat "$tmp/aug.txt")"
    sed -n 2p "$tmp/aug.csv" | cut -d, -f3,6-; }
plain="$(aug)"
for a in "--shift 2" "--rotate 20" "--zoom 0.3" "--shift 1 --rotate 10"; do
    # shellcheck disable=SC2086
    [ "$(aug $a)" != "$plain" ] || fail "$a trained exactly as without it"
done

# Usage: a folder is not one of the benchmarks.
set +e
"$bin/ram-train" --data "$shapes" --dataset translated60 --out "$tmp/b.ram" 2>"$tmp/u.txt"
[ $? -eq 2 ] || fail "--dataset with a folder: not a usage error"
set -e

# Each bad file in a class folder: exit 1, the file named with the reason, no
# model written; --on-bad skip trains and says what it skipped.
refused() { # DIR PATTERN what
    set +e
    "$bin/ram-train" --data "$1" "${small[@]}" --epochs 1 --out "$tmp/bad.ram" 2>"$tmp/bad.txt"
    local rc=$?
    set -e
    [ $rc -eq 1 ] || fail "$3: exit $rc, not 1"
    grep -q -- "$2" "$tmp/bad.txt" || fail "$3: no clear message: $(cat "$tmp/bad.txt")"
    [ ! -e "$tmp/bad.ram" ] || fail "$3: a model was written"
}
declare -A why=([truncated.png]="truncated.png is not a valid PNG (truncated file)"
    [corrupt.jpg]="corrupt.jpg is not a valid JPEG (Corrupt JPEG data"
    [truncated.jpg]="truncated.jpg is not a valid JPEG (Premature end"
    [cmyk.jpg]="cmyk.jpg is a CMYK JPEG" [text.png]="text.png is neither a PNG nor a JPEG"
    [zero.png]="zero.png is not a valid PNG (.*width is zero"
    [huge.png]="huge.png declares 100000x100000 pixels")
for f in "${!why[@]}"; do
    rm -rf "$tmp/d"; cp -r "$shapes" "$tmp/d"; cp "$tmp/bad/$f" "$tmp/d/train/cross/$f"
    refused "$tmp/d" "$tmp/d/train/cross/${why[$f]}" "$f"
done
cp "$tmp/bad/huge.png" "$tmp/bad/zero.png" "$tmp/d/train/square/"
"$bin/ram-train" --data "$tmp/d" "${small[@]}" --epochs 1 --on-bad skip --out "$tmp/s.ram" \
    2>"$tmp/skip.txt" || fail "--on-bad skip: $(cat "$tmp/skip.txt")"
grep -q "skipped 3 bad files of $tmp/d" "$tmp/skip.txt" || fail "skips not reported: $(cat "$tmp/skip.txt")"

rm -rf "$tmp/d"; cp -r "$shapes" "$tmp/d"; echo notes >"$tmp/d/train/circle/notes.txt"
refused "$tmp/d" "$tmp/d/train/circle/notes.txt is not a .png, .jpg or .jpeg file" "a stray file"
rm -rf "$tmp/d"; cp -r "$shapes" "$tmp/d"; mkdir "$tmp/d/train/empty"
refused "$tmp/d" "class folder $tmp/d/train/empty has no images" "an empty class"
rm -rf "$tmp/d"; mkdir -p "$tmp/d/train"; cp -r "$shapes/train/circle" "$tmp/d/train/"
refused "$tmp/d" "$tmp/d/train has a single class folder (circle)" "a single class"
rm -rf "$tmp/d"; cp -r "$shapes" "$tmp/d"; mkfifo "$tmp/d/train/circle/pipe.png"
refused "$tmp/d" "cannot read $tmp/d/train/circle/pipe.png: not a regular file" "a FIFO"
if [ "$(id -u)" -ne 0 ]; then # root reads anything
    rm -rf "$tmp/d"; cp -r "$shapes" "$tmp/d"; chmod 000 "$tmp/d/train/circle/002.png"
    refused "$tmp/d" "cannot read $tmp/d/train/circle/002.png: Permission denied" "an unreadable file"
fi

# ram-classify: every bad file named, the good ones still classified, exit 1.
set +e
"$bin/ram-classify" --model "$tmp/m.ram" "$shapes/test/cross/000.png" "$tmp"/bad/* \
    "$shapes/test/square/000.png" >"$tmp/c.txt" 2>"$tmp/c-err.txt"
rc=$?
set -e
[ $rc -eq 1 ] || fail "ram-classify with bad files: exit $rc"
[ "$(wc -l <"$tmp/c.txt")" -eq 2 ] || fail "the good files were not classified: $(cat "$tmp/c.txt")"
[ "$(grep -c "^ram-classify: $tmp/bad/" "$tmp/c-err.txt")" -eq "$(ls "$tmp/bad" | wc -l)" ] ||
    fail "not every bad file named: $(cat "$tmp/c-err.txt")"
echo "tools-images: ok"
