#!/usr/bin/env bash
# End-to-end smoke test of the installed-style tools on a tiny synthetic
# MNIST-shaped data set made here (no download): train, resume, start from a
# saved model, evaluate, average the weights, draw glimpses, export data sets
# twice (byte-identical), reject a damaged model, and run the hello example.
#
# Also the command-line conventions: usage errors exit 2, run-time failures
# 1; outputs checked before training; resumes that cannot continue exactly
# refused; MNIST's fetch hint only when its files are missing.
#
# Usage: tools-smoke.sh BUILD_DIR
set -euo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-tools.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tools-smoke: FAIL: $*" >&2; exit 1; }

# A tiny MNIST-shaped data set (tests/synthetic-idx.sh).
source "$(dirname "${BASH_SOURCE[0]}")/synthetic-idx.sh"
export LC_ALL=C
make_split "$tmp/data" train 300 1
make_split "$tmp/data" t10k 100 2
[ "$(wc -c <"$tmp/data/train-images-idx3-ubyte")" -eq $((16 + 300 * 784)) ] || fail "bad synthetic IDX"

train=("$bin/ram-train" --data "$tmp/data" --val 100 --batch 32 --threads 2 --quiet
       --glimpses 3 --hidden 32 --glimpse-out 32 --glimpse-hidden 16 --loc-hidden 16)
"${train[@]}" --epochs 2 --out "$tmp/m.ram" --log "$tmp/log.csv" 2>"$tmp/train.txt" ||
    fail "ram-train: $(cat "$tmp/train.txt")"
[ -s "$tmp/m.ram" ] && [ -s "$tmp/m.ram.ckpt" ] || fail "no model or checkpoint written"
[ "$(wc -l <"$tmp/log.csv")" -eq 3 ] || fail "log should have a header and 2 epochs"
"${train[@]}" --epochs 3 --out "$tmp/m.ram" --resume "$tmp/m.ram.ckpt" --log "$tmp/log.csv" \
    2>"$tmp/resume.txt" || fail "resume: $(cat "$tmp/resume.txt")"
grep -q "resumed from" "$tmp/resume.txt" || fail "resume did not say so"
grep -q "^epoch   3" "$tmp/resume.txt" || fail "resume did not run epoch 3"
[ "$(wc -l <"$tmp/log.csv")" -eq 4 ] || fail "resume: log should have a header and 3 epochs"
# A resume logging to a new file starts it with the header.
"${train[@]}" --epochs 4 --out "$tmp/m.ram" --resume "$tmp/m.ram.ckpt" --log "$tmp/log2.csv" \
    2>"$tmp/resume.txt" || fail "resume to a new log: $(cat "$tmp/resume.txt")"
[ "$(head -1 "$tmp/log2.csv")" = "$(head -1 "$tmp/log.csv")" ] &&
    [ "$(wc -l <"$tmp/log2.csv")" -eq 2 ] && grep -q "^4," "$tmp/log2.csv" ||
    fail "resume to a new log: not a header and epoch 4: $(cat "$tmp/log2.csv")"

# An IDX pair whose labels skip class 0 (only 1 and 2): a model of three
# classes, trained, with a warning that says class 0 has no image.
{ printf '\0\0\10\3\0\0\0\310\0\0\0\34\0\0\0\34'
  head -c $((16 + 200 * 784)) "$tmp/data/train-images-idx3-ubyte" | tail -c $((200 * 784)); } \
    >"$tmp/x200"
{ printf '\0\0\10\1\0\0\0\310'; for i in $(seq 100); do printf '\1\2'; done; } >"$tmp/y200"
"$bin/ram-train" --train-images "$tmp/x200" --train-labels "$tmp/y200" --epochs 1 --quiet \
    --glimpses 2 --hidden 16 --out "$tmp/skip0.ram" 2>"$tmp/skip0.txt" ||
    fail "labels 1 and 2: $(cat "$tmp/skip0.txt")"
grep -q "warning: 1 of the model's 3 classes (0..2, from the largest label) have no training image, the first 0" \
    "$tmp/skip0.txt" || fail "no warning of an empty class 0: $(cat "$tmp/skip0.txt")"

# --init: the weights and architecture of a saved model; at learning rate 0 the
# best model written is that very model, byte for byte.  Model options beside
# it, and a model of another image size, are refused with a clear message.
init=("$bin/ram-train" --data "$tmp/data" --val 100 --batch 32 --threads 2 --quiet --epochs 1)
"${init[@]}" --init "$tmp/m.ram" --lr 0 --out "$tmp/i.ram" 2>"$tmp/init.txt" ||
    fail "ram-train --init: $(cat "$tmp/init.txt")"
grep -qF "starting from the weights of $tmp/m.ram" "$tmp/init.txt" || fail "--init: not said"
cmp -s "$tmp/m.ram" "$tmp/i.ram" || fail "--init --lr 0 did not keep the model's weights"
if "${init[@]}" --init "$tmp/m.ram" --patch 6 --out "$tmp/b.ram" 2>"$tmp/init.txt"; then
    fail "--init with --patch accepted"
fi
grep -q "drop --patch" "$tmp/init.txt" || fail "--init --patch: no clear message: $(cat "$tmp/init.txt")"
# --glimpses is the exception: the weights do not depend on the count.
"${init[@]}" --init "$tmp/m.ram" --glimpses 7 --lr 0 --out "$tmp/g.ram" 2>"$tmp/init.txt" ||
    fail "ram-train --init --glimpses 7: $(cat "$tmp/init.txt")"
"$bin/ram-eval" --model "$tmp/g.ram" --data "$tmp/data" --json 2>/dev/null | grep -q '"glimpses": 7,' ||
    fail "--init --glimpses 7: the model written does not take 7 glimpses"
if "${init[@]}" --init "$tmp/m.ram" --dataset translated60 --out "$tmp/b.ram" 2>"$tmp/init.txt"; then
    fail "a 28x28 model trained on translated60"
fi
grep -q "takes 28x28 images" "$tmp/init.txt" || fail "--init size: no clear message: $(cat "$tmp/init.txt")"

# --average: the average is validated and kept, the last weights' error logged
# next to it; a resume continues the average, one with other columns is refused.
"${train[@]}" --epochs 1 --average 0.9 --out "$tmp/a.ram" --log "$tmp/avg.csv" \
    2>"$tmp/avg.txt" || fail "ram-train --average: $(cat "$tmp/avg.txt")"
"${train[@]}" --epochs 2 --average 0.9 --out "$tmp/a.ram" --resume "$tmp/a.ram.ckpt" \
    --log "$tmp/avg.csv" 2>"$tmp/avg.txt" || fail "resume --average: $(cat "$tmp/avg.txt")"
grep -q "(last weights " "$tmp/avg.txt" || fail "--average: no last weights' error printed"
[ "$(head -1 "$tmp/avg.csv" | tr ',' '\n' | tail -1)" = val_error_last ] ||
    fail "--average: no val_error_last column"
[ "$(awk -F, 'NF == 9' "$tmp/avg.csv" | wc -l)" -eq 3 ] || fail "--average: rows of the wrong width"
if "${train[@]}" --epochs 3 --out "$tmp/a.ram" --resume "$tmp/a.ram.ckpt" --log "$tmp/avg.csv" \
    2>"$tmp/avg.txt"; then
    fail "a resume without --average appended to an --average log"
fi
grep -q "other columns" "$tmp/avg.txt" || fail "no clear message: $(cat "$tmp/avg.txt")"
if "${train[@]}" --epochs 1 --average 1 --out "$tmp/b.ram" 2>"$tmp/avg.txt"; then
    fail "--average 1 was accepted"
fi

# --label-smoothing: the classifier trains toward the smoothed target, so one
# epoch ends elsewhere than the same epoch without it; 1 is refused.
"${train[@]}" --epochs 1 --out "$tmp/ls0.ram" 2>"$tmp/ls.txt" || fail "ram-train: $(cat "$tmp/ls.txt")"
"${train[@]}" --epochs 1 --label-smoothing 0.1 --out "$tmp/ls.ram" 2>"$tmp/ls.txt" ||
    fail "ram-train --label-smoothing 0.1: $(cat "$tmp/ls.txt")"
cmp -s "$tmp/ls0.ram" "$tmp/ls.ram" && fail "--label-smoothing 0.1 trained the same model as none"
if "${train[@]}" --epochs 1 --label-smoothing 1 --out "$tmp/b.ram" 2>"$tmp/ls.txt"; then
    fail "--label-smoothing 1 was accepted"
fi
grep -qF -- "--label-smoothing 1: must be in [0, 1)" "$tmp/ls.txt" || fail "--label-smoothing 1: $(cat "$tmp/ls.txt")"

# --products bf16: where the CPU runs it, one epoch ends elsewhere than with
# float products; elsewhere, a refusal that names what is missing.
if "${train[@]}" --epochs 1 --products bf16 --out "$tmp/bf.ram" 2>"$tmp/bf.txt"; then
    cmp -s "$tmp/ls0.ram" "$tmp/bf.ram" && fail "--products bf16 trained the same model as float"
else
    grep -qF "AVX512_BF16" "$tmp/bf.txt" || fail "--products bf16: $(cat "$tmp/bf.txt")"
fi

# --val 0: every training image trained on, and --out rewritten each epoch
# with the last epoch's model (the average's): two epochs differ from one, and
# equal one epoch resumed for a second, byte for byte; the log's validation
# columns stay empty.
noval=("${train[@]}" --val 0 --average 0.9) # the later --val counts
"${noval[@]}" --epochs 1 --out "$tmp/v1.ram" --log "$tmp/v1.csv" 2>"$tmp/v0.txt" ||
    fail "ram-train --val 0: $(cat "$tmp/v0.txt")"
grep -q "300 train / 0 validation" "$tmp/v0.txt" || fail "--val 0: not all 300 images: $(cat "$tmp/v0.txt")"
grep -q "no validation: the last epoch's model in" "$tmp/v0.txt" || fail "--val 0: $(cat "$tmp/v0.txt")"
cp "$tmp/v1.ram" "$tmp/v1-epoch1.ram"
"${noval[@]}" --epochs 2 --out "$tmp/v2.ram" 2>"$tmp/v0.txt" || fail "--val 0: $(cat "$tmp/v0.txt")"
"${noval[@]}" --epochs 2 --out "$tmp/v1.ram" --resume "$tmp/v1.ram.ckpt" --log "$tmp/v1.csv" \
    2>"$tmp/v0.txt" || fail "--val 0 resume: $(cat "$tmp/v0.txt")"
cmp -s "$tmp/v1-epoch1.ram" "$tmp/v2.ram" && fail "--val 0: the second epoch's model is the first's"
cmp -s "$tmp/v1.ram" "$tmp/v2.ram" || fail "--val 0: a resumed second epoch did not write its model"
[ "$(awk -F, 'NR > 1 && $4 == "" && $9 == ""' "$tmp/v1.csv" | wc -l)" -eq 2 ] ||
    fail "--val 0: validation columns not empty: $(cat "$tmp/v1.csv")"
"$bin/ram-eval" --model "$tmp/v1.ram" --data "$tmp/data" >/dev/null 2>"$tmp/v0.txt" ||
    fail "ram-eval of a --val 0 model: $(cat "$tmp/v0.txt")"

# --shift: the same run as the first but for the shifted training images must
# train differently (its first epoch's nll differs); out-of-range shifts and
# shifts of a synthetic set are refused.
"${train[@]}" --epochs 1 --shift 2 --out "$tmp/s.ram" --log "$tmp/shift.csv" 2>"$tmp/shift.txt" ||
    fail "ram-train --shift: $(cat "$tmp/shift.txt")"
grep -q "training images shifted" "$tmp/shift.txt" || fail "--shift: not said"
[ "$(sed -n 2p "$tmp/log.csv" | cut -d, -f3,6-)" != "$(sed -n 2p "$tmp/shift.csv" | cut -d, -f3,6-)" ] ||
    fail "--shift 2 trained exactly as no shift"
if "${train[@]}" --epochs 1 --shift 9 --out "$tmp/b.ram" 2>/dev/null; then fail "--shift 9 accepted"; fi
if "${train[@]}" --epochs 1 --shift 1 --dataset translated60 --out "$tmp/b.ram" 2>"$tmp/shift.txt"; then
    fail "--shift with translated60 accepted"
fi
grep -q "for --dataset mnist" "$tmp/shift.txt" || fail "--shift: no clear message: $(cat "$tmp/shift.txt")"
# --rotate and --zoom: the digits of the first run's images, warped, must train
# differently; a warped run resumes with the same options and refuses others;
# out-of-range and NaN amounts are refused.
"${train[@]}" --epochs 1 --rotate 10 --zoom 0.1 --out "$tmp/w.ram" --log "$tmp/warp.csv" \
    2>"$tmp/warp.txt" || fail "ram-train --rotate --zoom: $(cat "$tmp/warp.txt")"
grep -q "training images rotated by <= 10 deg, scaled by 1 +- 0.1)" "$tmp/warp.txt" ||
    fail "--rotate/--zoom: not said: $(cat "$tmp/warp.txt")"
[ "$(sed -n 2p "$tmp/log.csv" | cut -d, -f3,6-)" != "$(sed -n 2p "$tmp/warp.csv" | cut -d, -f3,6-)" ] ||
    fail "--rotate 10 --zoom 0.1 trained exactly as no warp"
"${train[@]}" --epochs 2 --rotate 10 --zoom 0.1 --out "$tmp/w.ram" --resume "$tmp/w.ram.ckpt" \
    --log "$tmp/warp.csv" 2>"$tmp/warp.txt" || fail "resume --rotate: $(cat "$tmp/warp.txt")"
if "${train[@]}" --epochs 3 --rotate 5 --zoom 0.1 --out "$tmp/b.ram" --resume "$tmp/w.ram.ckpt" \
    2>"$tmp/warp.txt"; then
    fail "a --rotate 10 checkpoint resumed with --rotate 5"
fi
grep -q -- "--rotate 10 --zoom 0.1 --val 100" "$tmp/warp.txt" ||
    fail "resume with another --rotate: no clear message: $(cat "$tmp/warp.txt")"
for bad in "--rotate 46" "--rotate -1" "--rotate nan" "--zoom 0.6" "--zoom -0.1"; do
    # shellcheck disable=SC2086 # the option and its value are two words
    if "${train[@]}" --epochs 1 $bad --out "$tmp/b.ram" 2>"$tmp/warp.txt"; then
        fail "$bad accepted"
    fi
    grep -q "must be in\|not a number" "$tmp/warp.txt" ||
        fail "$bad: no clear message: $(cat "$tmp/warp.txt")"
done
# A checkpoint remembers the images it trained on: resuming it with other ones
# (here shifted) is refused, and says with which options to resume.
if "${train[@]}" --epochs 4 --shift 1 --out "$tmp/b.ram" --resume "$tmp/m.ram.ckpt" \
    2>"$tmp/other.txt"; then
    fail "a checkpoint resumed on other training images"
fi
grep -q "is a run on other images (--dataset mnist --shift 0 --rotate 0 --zoom 0 --val 100, 200 training images" \
    "$tmp/other.txt" || fail "resume on other images: no clear message: $(cat "$tmp/other.txt")"

# A resume that cannot continue exactly is refused, naming the option, the
# checkpoint's value and the given one; one to another --out (which lacks the
# best model so far) likewise.
for bad in "--batch 16:--batch 32: resume it with --batch 32, not 16" \
    "--threads 1:--threads 2: resume it with --threads 2, not 1"; do
    opt="${bad%%:*}"
    # shellcheck disable=SC2086 # the option and its value are two words
    if "${train[@]}" --epochs 4 $opt --out "$tmp/m.ram" --resume "$tmp/m.ram.ckpt" \
        2>"$tmp/other.txt"; then
        fail "a checkpoint resumed with $opt"
    fi
    grep -qF -- "written with ${bad#*:}" "$tmp/other.txt" ||
        fail "resume with $opt: no clear message: $(cat "$tmp/other.txt")"
done
if "${train[@]}" --epochs 4 --out "$tmp/elsewhere.ram" --resume "$tmp/m.ram.ckpt" \
    2>"$tmp/other.txt"; then
    fail "a resume to another --out was accepted"
fi
grep -q -- "--out $tmp/elsewhere.ram does not exist" "$tmp/other.txt" ||
    fail "resume to another --out: no clear message: $(cat "$tmp/other.txt")"
[ ! -e "$tmp/elsewhere.ram" ] || fail "a refused resume wrote its --out"

# Outputs that cannot be written are found before the first epoch.
for opt in --out --checkpoint; do
    start=$SECONDS
    if "${train[@]}" --epochs 50 "$opt" "$tmp/no/such/dir/x" 2>"$tmp/out.txt"; then
        fail "$opt into a missing directory accepted"
    fi
    grep -q -- "$opt $tmp/no/such/dir/x: cannot write there" "$tmp/out.txt" ||
        fail "$opt unwritable: no clear message: $(cat "$tmp/out.txt")"
    if grep -q "^epoch" "$tmp/out.txt"; then fail "$opt unwritable found only after training"; fi
done

# One convention: usage errors exit 2 (naming the option and its range),
# failures at run time 1, --help and --version 0.
expect() { # expected-status command...
    local want="$1" rc=0
    shift
    "$@" >"$tmp/rc.txt" 2>&1 || rc=$?
    [ "$rc" -eq "$want" ] || fail "exit $rc, not $want: $* ($(head -3 "$tmp/rc.txt"))"
}
expect 2 "${train[@]}" --train-limit 0
grep -qF -- "--train-limit 0: must be in [1, " "$tmp/rc.txt" || fail "--train-limit 0: $(cat "$tmp/rc.txt")"
expect 2 "${train[@]}" --batch 0
grep -qF -- "ram-train: --batch 0: must be in [1, 65536]" "$tmp/rc.txt" || fail "--batch 0: $(cat "$tmp/rc.txt")"
# --products bf16 with narrower kernels than avx512: refused on any CPU.
expect 1 env RAM_KERNELS=portable "${train[@]}" --epochs 1 --products bf16 --out "$tmp/bf.ram"
grep -qF "kernels are portable" "$tmp/rc.txt" || fail "RAM_KERNELS=portable --products bf16: $(cat "$tmp/rc.txt")"
expect 2 "${train[@]}" --core gru
expect 2 "${train[@]}" --no-such-option
expect 2 "$bin/ram-eval" --model "$tmp/m.ram"
expect 2 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --batch 0
expect 2 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --dataset cluttered60 --split val
expect 2 "$bin/ram-data" --dataset mnist --data "$tmp/data"
expect 2 "$bin/ram-data" --dataset mnist --data "$tmp/data" --out "$tmp/x" --split t11k
if [ -x "$bin/ram-glimpses" ]; then
    expect 2 "$bin/ram-glimpses" --model "$tmp/m.ram" --data "$tmp/data"
    expect 2 "$bin/ram-glimpses" --model "$tmp/m.ram" --data "$tmp/data" --out "$tmp/g.png" --count 0
fi
expect 1 "$bin/ram-eval" --model "$tmp/nothing.ram" --data "$tmp/data"
# --stop-threshold: the mean glimpses and where the images stopped (every
# image after its first glimpse at 0); a threshold outside [0, 1] or with
# sampled locations refused.
"$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --stop-threshold 0 --json >"$tmp/st.json" ||
    fail "ram-eval --stop-threshold 0"
grep -q '"mean_glimpses": 1.0000, "stopped_at": \[[1-9][0-9]*, 0' "$tmp/st.json" ||
    fail "--stop-threshold 0: $(cat "$tmp/st.json")"
"$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --stop-threshold 0.6 >"$tmp/st.txt" ||
    fail "ram-eval --stop-threshold 0.6"
grep -q "^stopping:   at top probability 0.6" "$tmp/st.txt" || fail "--stop-threshold text: $(cat "$tmp/st.txt")"
expect 2 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --stop-threshold 1.5
expect 2 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --stop-threshold 0.9 --policy sampled
grep -q "mean locations" "$tmp/rc.txt" || fail "--stop-threshold + sampled: $(cat "$tmp/rc.txt")"
# --stop-cost: a stop unit fitted to a saved model (--epochs 0) and saved
# with it; ram-eval --stop-unit reports it (a high cost: every image after
# its first glimpse); a model without one, and --epochs 0 without
# --init and --stop-cost, refused.
"$bin/ram-train" --data "$tmp/data" --val 100 --quiet --init "$tmp/m.ram" --epochs 0 \
    --stop-cost 0.5 --out "$tmp/unit.ram" \
    2>"$tmp/unit.txt" || fail "ram-train --stop-cost: $(cat "$tmp/unit.txt")"
grep -q "^stop unit on the 100 validation images: .* with 1.00 glimpses" "$tmp/unit.txt" ||
    fail "--stop-cost 0.5: $(cat "$tmp/unit.txt")"
"$bin/ram-eval" --model "$tmp/unit.ram" --data "$tmp/data" --stop-unit --json >"$tmp/su.json" ||
    fail "ram-eval --stop-unit"
grep -q '"stop_unit": true, "stop_cost": 0.5, "mean_glimpses": 1.0000' "$tmp/su.json" ||
    fail "--stop-unit: $(cat "$tmp/su.json")"
expect 1 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --stop-unit
grep -q "no stop unit" "$tmp/rc.txt" || fail "--stop-unit without a unit: $(cat "$tmp/rc.txt")"
expect 2 "$bin/ram-train" --data "$tmp/data" --val 100 --init "$tmp/m.ram" --epochs 0 \
    --out "$tmp/unit.ram"
grep -q "only fits a stop unit" "$tmp/rc.txt" || fail "--epochs 0: $(cat "$tmp/rc.txt")"
expect 2 "$bin/ram-eval" --model "$tmp/unit.ram" --data "$tmp/data" --stop-unit --stop-threshold 0.5
for tool in ram-train ram-eval ram-data; do
    expect 0 "$bin/$tool" --help
    expect 0 "$bin/$tool" --version
    expect 0 "$bin/$tool" --man
    grep -q '^\.TH' "$tmp/rc.txt" || fail "$tool --man wrote no man page"
done

# One name for the test split: test (t10k, MNIST's own name, kept) in
# ram-eval and ram-data alike.
a="$("$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --split test --json | sed 's/, "seconds.*//')"
b="$("$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --split t10k --json | sed 's/, "seconds.*//')"
[ -n "$a" ] && [ "$a" = "$b" ] || fail "--split test and t10k differ: $a / $b"
"$bin/ram-data" --dataset mnist --data "$tmp/data" --out "$tmp/t" --split test >/dev/null 2>&1 ||
    fail "ram-data --split test"

# The hint to fetch MNIST comes only when MNIST's files are missing, and
# names the installed script; a mistyped split gets none.
expect 1 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --split tset
if grep -q "fetch" "$tmp/rc.txt"; then fail "a mistyped split got the fetch hint"; fi
expect 1 "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/empty"
grep -qF "ram-fetch-mnist $tmp/empty" "$tmp/rc.txt" || fail "no fetch hint: $(cat "$tmp/rc.txt")"

json="$("$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --json)" || fail "ram-eval"
case "$json" in *'"test_error": '*'"n": 100'*'"glimpses": 3'*) ;; *) fail "ram-eval json: $json" ;; esac
# --precision half and bf16: the same set evaluated with 16-bit weights, said
# in the JSON; an unknown precision is refused.
json="$("$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --precision half --json)" ||
    fail "ram-eval --precision half"
case "$json" in *'"n": 100'*'"precision": "half"'*) ;; *) fail "ram-eval half json: $json" ;; esac
json="$("$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --precision bf16 --json)" ||
    fail "ram-eval --precision bf16"
case "$json" in *'"n": 100'*'"precision": "bf16"'*) ;; *) fail "ram-eval bf16 json: $json" ;; esac
if "$bin/ram-eval" --model "$tmp/m.ram" --data "$tmp/data" --precision double 2>"$tmp/p.txt"; then
    fail "--precision double accepted"
fi
grep -q "must be float, half or bf16" "$tmp/p.txt" || fail "--precision: no clear message"

# On a placed set ram-eval also says where the glimpses went: images with a
# glimpse on the digit ("found") and glimpses on the digit per image.  With
# every glimpse at the centre an image has all 3 on the digit or none, so the
# second is 3 times the first, and each glimpse's share is the first; mnist
# has no such fields.
case "$json" in *'"found"'*) fail "found on mnist: $json" ;; esac
"${train[@]}" --epochs 1 --dataset translated60 --out "$tmp/t.ram" 2>"$tmp/t.txt" ||
    fail "ram-train translated60: $(cat "$tmp/t.txt")"
json="$("$bin/ram-eval" --model "$tmp/t.ram" --data "$tmp/data" --dataset translated60 \
    --policy center --json)" || fail "ram-eval translated60"
found="$(sed -n 's/.*"found": \([0-9.]*\).*/\1/p' <<<"$json")"
on="$(sed -n 's/.*"glimpses_on_digit": \([0-9.]*\).*/\1/p' <<<"$json")"
awk -v f="$found" -v g="$on" 'BEGIN { exit !(f > 0 && f < 1 && g - 3 * f < 1e-3 && 3 * f - g < 1e-3) }' ||
    fail "glimpses on the digit at the centre: $json"
by="$(sed -n 's/.*"on_digit_by_glimpse": \[\([0-9., ]*\)\].*/\1/p' <<<"$json" | tr -d ' ')"
[ "$by" = "$found,$found,$found" ] || fail "glimpses 1..3 on the digit at the centre: $json"
"$bin/ram-eval" --model "$tmp/t.ram" --data "$tmp/data" --dataset translated60 |
    grep -q "^on digit: *a glimpse on the digit in" || fail "ram-eval: no on-digit line"
# DRAM on pairs100: two labels (the digits), two core layers, a context and
# the multiplicative form; ram-eval scores it on pairs100 and sum100 with the
# digit error, and refuses it on a one-digit set; --objects 2 is refused where
# the images hold one digit.  One epoch on these few images may leave every
# validation pair wrong: --out is written all the same (the first validated
# epoch is always kept).
"${train[@]}" --epochs 1 --dataset pairs100 --objects 2 --glimpses 4 --core-layers 2 \
    --upper-core lstm --context 6 --glimpse-form mul --reward all-correct --out "$tmp/d.ram" \
    2>"$tmp/d.txt" || fail "ram-train DRAM pairs100: $(cat "$tmp/d.txt")"
[ -s "$tmp/d.ram" ] || fail "ram-train DRAM pairs100: no --out after an epoch: $(cat "$tmp/d.txt")"
for set in pairs100 sum100; do
    json="$("$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset $set --json)" ||
        fail "ram-eval DRAM $set"
    case "$json" in *'"n": 100'*'"objects": 2, "decode": "joint", "object_error": '*) ;; *) fail "DRAM $set json: $json" ;; esac
done
# The joint answer names two different digits, so every prediction is one of
# the 45 pairs and the confusion matrix holds all 100 images; each label
# alone may name a digit twice, which no pair is (outside the matrix).
pair_total() { # the confusion matrix's total
    awk '/^confusion matrix/ { on = 1; getline; next }
         on && NF == 46 { for (c = 2; c <= 46; c++) n += $c }
         on && NF != 46 { on = 0 } END { print n + 0 }'
}
for decode in joint labels; do
    "$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset pairs100 \
        --decode $decode >"$tmp/dd.txt" 2>&1 || fail "ram-eval --decode $decode: $(cat "$tmp/dd.txt")"
    total="$(pair_total <"$tmp/dd.txt")"
    wrong="$(sed -n 's/^test error: .*(\([0-9]*\) \/ 100 wrong)/\1/p' "$tmp/dd.txt")"
    if [ $decode = joint ]; then
        [ "$total" -eq 100 ] || fail "--decode joint: $total of 100 predictions are pairs"
    else
        [ "$total" -le 100 ] && [ "$total" -ge $((100 - wrong)) ] ||
            fail "--decode labels: $total pairs, $wrong wrong"
    fi
done
"$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset sum100 --decode labels --json |
    grep -q '"decode": "labels"' || fail "--decode labels not in the JSON"
# --first: images [first, first + limit); the errors of two halves add up
# to the whole's (mean locations), and a start past the split is refused.
errs() { "$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset pairs100 --batch 10 --json "$@" |
    sed 's/.*"n": \([0-9]*\), "errors": \([0-9]*\).*/\1 \2/'; }
whole="$(errs)" first="$(errs --limit 37)" rest="$(errs --first 37)" mid="$(errs --first 37 --limit 20)"
[ "${first%% *}" = 37 ] && [ "${rest%% *}" = 63 ] && [ "${mid%% *}" = 20 ] ||
    fail "--first/--limit counts: $first / $rest / $mid"
[ $((${first#* } + ${rest#* })) -eq "${whole#* }" ] ||
    fail "--first: errors $first + $rest are not the whole's $whole"
"$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset pairs100 --json --first 37 |
    grep -q '"first": 37' || fail "--first not in the JSON"
expect 1 "$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset pairs100 --first 100
grep -q "first 100: the split has 100 images" "$tmp/rc.txt" || fail "--first past the end: $(cat "$tmp/rc.txt")"
if "$bin/ram-eval" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset cluttered100 \
    2>"$tmp/d.txt"; then
    fail "a two-object model evaluated on cluttered100"
fi
grep -q "pairs100 or sum100" "$tmp/d.txt" || fail "DRAM on cluttered100: no clear message: $(cat "$tmp/d.txt")"
# --cell-samples: stored in the model, reported by ram-eval, drawn by ram-glimpses.
"${train[@]}" --epochs 1 --patch 4 --depth 3 --scale 3 --cell-samples 2 --context 4 \
    --out "$tmp/cs.ram" 2>"$tmp/cs.txt" || fail "ram-train --cell-samples: $(cat "$tmp/cs.txt")"
"$bin/ram-eval" --model "$tmp/cs.ram" --data "$tmp/data" --json | grep -q '"cell_samples": 2' ||
    fail "ram-eval --json: no cell_samples"
"$bin/ram-glimpses" --model "$tmp/cs.ram" --data "$tmp/data" --count 2 --out "$tmp/cs.png" \
    >/dev/null 2>&1 || fail "ram-glimpses on a model with --cell-samples"
if "${train[@]}" --epochs 1 --cell-samples 2 --sensor soft --out "$tmp/cs2.ram" 2>"$tmp/cs.txt"; then
    fail "--cell-samples with the soft sensor accepted"
fi
grep -q "cell_samples 2 is for the hard sensor" "$tmp/cs.txt" || fail "soft + samples: $(cat "$tmp/cs.txt")"
# --contrast: stored in the model, reported by ram-eval, drawn by ram-glimpses.
"${train[@]}" --epochs 1 --contrast --context 4 --out "$tmp/ct.ram" 2>"$tmp/ct.txt" ||
    fail "ram-train --contrast: $(cat "$tmp/ct.txt")"
"$bin/ram-eval" --model "$tmp/ct.ram" --data "$tmp/data" --json | grep -q '"contrast": true' ||
    fail "ram-eval --json: no contrast"
"$bin/ram-glimpses" --model "$tmp/ct.ram" --data "$tmp/data" --count 2 --out "$tmp/ct.png" \
    >/dev/null 2>&1 || fail "ram-glimpses on a model with --contrast"
if "${train[@]}" --epochs 1 --contrast --sensor soft --out "$tmp/ct2.ram" 2>"$tmp/ct.txt"; then
    fail "--contrast with the soft sensor accepted"
fi
grep -q "contrast is for the hard sensor" "$tmp/ct.txt" || fail "soft + contrast: $(cat "$tmp/ct.txt")"
# Zoom as an action, hard and soft: stored, reported by ram-eval, the
# zoomed squares drawn by ram-glimpses; half a range refused.
for sensor in hard soft; do
    "${train[@]}" --epochs 1 --zoom-min 0.5 --zoom-max 2 --sensor $sensor --out "$tmp/zm.ram" \
        2>"$tmp/zm.txt" || fail "ram-train --zoom-min/--zoom-max ($sensor): $(cat "$tmp/zm.txt")"
    "$bin/ram-eval" --model "$tmp/zm.ram" --data "$tmp/data" --json |
        grep -q '"zoom": \[0.5, 2\]' || fail "ram-eval --json: no zoom ($sensor)"
    "$bin/ram-glimpses" --model "$tmp/zm.ram" --data "$tmp/data" --count 2 --out "$tmp/zm.png" \
        >/dev/null 2>&1 || fail "ram-glimpses on a model with zoom ($sensor)"
done
if "${train[@]}" --epochs 1 --zoom-min 0.5 --out "$tmp/zm2.ram" 2>"$tmp/zm.txt"; then
    fail "--zoom-min without --zoom-max accepted"
fi
grep -q "go together" "$tmp/zm.txt" || fail "half a zoom range: $(cat "$tmp/zm.txt")"
# A convolutional layer: reported by ram-eval; its shape without the layer
# refused.
"${train[@]}" --epochs 1 --conv 2 --conv-kernel 2 --conv-stride 2 --out "$tmp/cv.ram" \
    2>"$tmp/cv.txt" || fail "ram-train --conv: $(cat "$tmp/cv.txt")"
"$bin/ram-eval" --model "$tmp/cv.ram" --data "$tmp/data" --json |
    grep -q '"conv": {"channels": 2, "kernel": 2, "stride": 2}' || fail "ram-eval --json: no conv"
expect 2 "${train[@]}" --epochs 1 --conv-kernel 2 --out "$tmp/cv2.ram"
grep -q "give --conv too" "$tmp/rc.txt" || fail "--conv-kernel alone: $(cat "$tmp/rc.txt")"
# A further leg from a two-object model: --init takes the object count from
# the model (as the rest of its architecture), without --objects.
"${init[@]}" --dataset pairs100 --init "$tmp/d.ram.ckpt" --lr 0 --out "$tmp/d3.ram" \
    2>"$tmp/d.txt" || fail "--init from a two-object model: $(cat "$tmp/d.txt")"
# Its glimpses retimed: a count the two labels cannot share, and an
# --emit-every that does not make the count, are refused in the options' words.
for retime in "--glimpses 5:5 glimpses are not a multiple of 2" \
    "--glimpses 6 --emit-every 2:2 x --emit-every 2 is 4 glimpses, not 6"; do
    # shellcheck disable=SC2086 # the options split on purpose
    if "${init[@]}" --dataset pairs100 --init "$tmp/d.ram.ckpt" ${retime%%:*} --out "$tmp/d4.ram" \
        2>"$tmp/d.txt"; then
        fail "--init ${retime%%:*} accepted on a two-object model"
    fi
    grep -qF "${retime#*:}" "$tmp/d.txt" || fail "--init ${retime%%:*}: $(cat "$tmp/d.txt")"
done
"$bin/ram-glimpses" --model "$tmp/d.ram.ckpt" --data "$tmp/data" --dataset pairs100 --count 2 \
    --out "$tmp/d.png" >"$tmp/d.txt" 2>&1 || fail "ram-glimpses DRAM: $(cat "$tmp/d.txt")"
[ -s "$tmp/d.png" ] || fail "ram-glimpses DRAM: no figure"
if "${train[@]}" --epochs 1 --objects 2 --glimpses 4 --out "$tmp/d2.ram" 2>"$tmp/d.txt"; then
    fail "--objects 2 accepted on mnist"
fi
grep -q "has 1 digit per image" "$tmp/d.txt" || fail "--objects 2 on mnist: $(cat "$tmp/d.txt")"
# --no-clutter: a cluttered set's digits alone (said in the JSON); refused
# where there is no clutter.
json="$("$bin/ram-eval" --model "$tmp/t.ram" --data "$tmp/data" --dataset cluttered60 \
    --no-clutter --json)" || fail "ram-eval --no-clutter"
case "$json" in *'"no_clutter": true'*'"found"'*) ;; *) fail "--no-clutter json: $json" ;; esac
if "$bin/ram-eval" --model "$tmp/t.ram" --data "$tmp/data" --dataset translated60 --no-clutter \
    2>"$tmp/nc.txt"; then
    fail "--no-clutter accepted on translated60"
fi
grep -q "needs --dataset cluttered60 or cluttered100" "$tmp/nc.txt" || fail "--no-clutter: no clear message"
# ram-train --clutter N: fewer clutter pieces (said, and trained on: not as
# all four; three scales, so that the glimpses see beyond the digit), kept in the checkpoint (a resume with another N is refused);
# refused where there is no clutter and above the set's count.
"${train[@]}" --epochs 1 --dataset cluttered60 --depth 3 --clutter 0 --out "$tmp/cl.ram" --log "$tmp/cl.csv" \
    2>"$tmp/cl.txt" || fail "ram-train --clutter 0: $(cat "$tmp/cl.txt")"
grep -q "validation with 0 of 4 clutter pieces" "$tmp/cl.txt" || fail "--clutter: not said: $(cat "$tmp/cl.txt")"
"${train[@]}" --epochs 1 --dataset cluttered60 --depth 3 --out "$tmp/cl4.ram" --log "$tmp/cl4.csv" \
    2>"$tmp/cl.txt" || fail "ram-train cluttered60: $(cat "$tmp/cl.txt")"
[ "$(sed -n 2p "$tmp/cl.csv" | cut -d, -f3,6-)" != "$(sed -n 2p "$tmp/cl4.csv" | cut -d, -f3,6-)" ] ||
    fail "--clutter 0 trained exactly as the whole clutter"
if "${train[@]}" --epochs 2 --dataset cluttered60 --depth 3 --clutter 2 --out "$tmp/cl.ram" \
    --resume "$tmp/cl.ram.ckpt" 2>"$tmp/cl.txt"; then
    fail "a --clutter 0 checkpoint resumed with --clutter 2"
fi
grep -q -- "--dataset cluttered60 --shift 0 --rotate 0 --zoom 0 --clutter 0 --val 100" "$tmp/cl.txt" ||
    fail "resume with another --clutter: no clear message: $(cat "$tmp/cl.txt")"
for bad in "mnist --clutter 0:is for --dataset cluttered60 or cluttered100" \
    "cluttered60 --clutter 5:--dataset cluttered60 has 4 clutter pieces"; do
    # shellcheck disable=SC2086 # the set, the option and its value are words
    if "${train[@]}" --epochs 1 --dataset ${bad%%:*} --out "$tmp/b.ram" 2>"$tmp/cl.txt"; then
        fail "--dataset ${bad%%:*} accepted"
    fi
    grep -q -- "${bad#*:}" "$tmp/cl.txt" || fail "${bad%%:*}: no clear message: $(cat "$tmp/cl.txt")"
done

if [ -x "$bin/ram-glimpses" ]; then
    "$bin/ram-glimpses" --model "$tmp/m.ram" --data "$tmp/data" --out "$tmp/g.png" --count 2 \
        2>/dev/null || fail "ram-glimpses"
    [ "$(head -c 4 "$tmp/g.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ] || fail "not a PNG"
fi

for k in 1 2; do
    "$bin/ram-data" --dataset cluttered60 --data "$tmp/data" --out "$tmp/x$k" >/dev/null 2>&1 ||
        fail "ram-data"
done
cmp -s "$tmp/x1/cluttered60-t10k-images-idx3-ubyte" "$tmp/x2/cluttered60-t10k-images-idx3-ubyte" ||
    fail "ram-data exports differ between runs"

# The set as an image folder (ram-data --format png): train, val and test
# splits; a model makes the same errors on it as on the IDX files (PNG is
# lossless), trains on it, and ram-classify and ram-glimpses read it.
if [ -x "$bin/ram-classify" ] && [ -x "$bin/ram-glimpses" ]; then
    "$bin/ram-data" --dataset mnist --data "$tmp/data" --val 100 --format png --out "$tmp/png" \
        >/dev/null 2>"$tmp/png.txt" || fail "ram-data --format png: $(cat "$tmp/png.txt")"
    [ "$(ls "$tmp/png")" = "$(printf 'test\ntrain\nval')" ] || fail "not the three splits"
    [ "$(find "$tmp/png/train" -name '*.png' | wc -l)" -eq 200 ] || fail "not 200 training PNGs"
    for d in "$tmp/data" "$tmp/png"; do
        "$bin/ram-eval" --model "$tmp/m.ram" --data "$d" | sed -n '/^test error/,/^$/p;/^ *[0-9]/p'
    done >"$tmp/both.txt"
    half=$(($(wc -l <"$tmp/both.txt") / 2))
    cmp -s <(head -n "$half" "$tmp/both.txt") <(tail -n "$half" "$tmp/both.txt") ||
        fail "the PNG folder gives other errors than the IDX files: $(cat "$tmp/both.txt")"
    "${train[@]}" --data "$tmp/png" --epochs 1 --out "$tmp/f.ram" 2>"$tmp/f.txt" ||
        fail "ram-train on the folder: $(cat "$tmp/f.txt")"
    grep -q "200 train / 100 validation images" "$tmp/f.txt" || fail "PATH/val not used: $(cat "$tmp/f.txt")"
    first="$(ls "$tmp/png/test/3" | head -1)"
    "$bin/ram-classify" --model "$tmp/f.ram" "$tmp/png/test/3/$first" | grep -qP '\t[0-9]\t[01]\.' ||
        fail "ram-classify on an exported PNG"
    "$bin/ram-glimpses" --model "$tmp/f.ram" --data "$tmp/png" --out "$tmp/fg.png" --count 2 \
        2>/dev/null || fail "ram-glimpses on a folder"
fi

head -c 1000 "$tmp/m.ram" >"$tmp/cut.ram"
if "$bin/ram-eval" --model "$tmp/cut.ram" --data "$tmp/data" 2>"$tmp/err.txt"; then
    fail "a truncated model was accepted"
fi
grep -q "truncated" "$tmp/err.txt" || fail "no clear message for a truncated model: $(cat "$tmp/err.txt")"

if [ -x "$bin/hello" ]; then
    "$bin/hello" "$tmp/m.ram" "$tmp/data/t10k-images-idx3-ubyte" 3 | grep -q "class" || fail "hello"
fi

# The cluttered60 recipe: both legs, one epoch each, on the tiny set; the
# second leg starts from the first's model. Run again, it has nothing to do;
# with the second leg interrupted after its first epoch (a ram-train that
# fails once it has run), it resumes that leg.
recipe="$(dirname "${BASH_SOURCE[0]}")/../scripts/train-cluttered60.sh"
c60=("$recipe" --ram-train "$bin/ram-train" --first-epochs 1 --epochs 1 --threads 1
     "$tmp/data" "$tmp/c60" -- --val 100 --quiet)
"${c60[@]}" >"$tmp/c60.txt" 2>&1 || fail "train-cluttered60.sh: $(cat "$tmp/c60.txt")"
[ -s "$tmp/c60/first-leg.ram" ] && [ -s "$tmp/c60/cluttered60.ram" ] &&
    [ ! -e "$tmp/c60/cluttered60.ram.ckpt" ] || fail "train-cluttered60.sh: models not as expected"
grep -q "starting from the weights of $tmp/c60/first-leg.ram" "$tmp/c60/cluttered60.log" ||
    fail "the second leg did not start from the first"
grep -q "0 of 4 clutter pieces" "$tmp/c60/first-leg.log" || fail "the first leg had clutter"
"${c60[@]}" >"$tmp/c60.txt" 2>&1 || fail "train-cluttered60.sh again: $(cat "$tmp/c60.txt")"
[ "$(grep -c "leg done" "$tmp/c60.txt")" -eq 2 ] || fail "a finished leg ran again: $(cat "$tmp/c60.txt")"
rm "$tmp/c60/cluttered60".*
printf '#!/bin/sh\n"%s" "$@"\nexit 1\n' "$bin/ram-train" >"$tmp/interrupted-train"
chmod +x "$tmp/interrupted-train"
c60[2]="$tmp/interrupted-train"
if "${c60[@]}" >"$tmp/c60.txt" 2>&1; then fail "an interrupted leg went unnoticed"; fi
[ -e "$tmp/c60/cluttered60.ram.ckpt" ] || fail "the interrupted leg left no checkpoint"
c60[2]="$bin/ram-train"
c60[6]=2 # the second leg's --epochs
"${c60[@]}" >"$tmp/c60.txt" 2>&1 || fail "train-cluttered60.sh resuming: $(cat "$tmp/c60.txt")"
grep -q "resumed from $tmp/c60/cluttered60.ram.ckpt: 1 epochs done" "$tmp/c60.txt" ||
    fail "the second leg did not resume: $(cat "$tmp/c60.txt")"
[ ! -e "$tmp/c60/cluttered60.ram.ckpt" ] || fail "the finished leg's checkpoint was kept"
# --conv builds the first leg's network with the layer; the second leg
# takes it with the weights.
"$recipe" --ram-train "$bin/ram-train" --first-epochs 1 --epochs 1 --threads 1 --conv 2 \
    "$tmp/data" "$tmp/c60conv" -- --val 100 --quiet >"$tmp/c60.txt" 2>&1 ||
    fail "train-cluttered60.sh --conv: $(cat "$tmp/c60.txt")"
grep -q "convolutional layer: 2 channels, 3x3 filters" "$tmp/c60conv/first-leg.log" ||
    fail "the first leg had no convolutional layer"
[ -s "$tmp/c60conv/cluttered60.ram" ] || fail "train-cluttered60.sh --conv: no model"
echo "tools-smoke: ok"
