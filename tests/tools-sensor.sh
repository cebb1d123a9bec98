#!/usr/bin/env bash
# ram-train --sensor on a tiny synthetic MNIST-shaped set made here (no
# download): each sensor trains, resumes and is stored in the model, which
# ram-eval --json reports; a hard model can start a soft run; an unknown
# sensor is refused.
#
# Usage: tools-sensor.sh BUILD_DIR
set -euo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-sensor.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tools-sensor: FAIL: $*" >&2; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/synthetic-idx.sh"
export LC_ALL=C
make_split "$tmp/data" train 200 1
make_split "$tmp/data" t10k 100 2

train=("$bin/ram-train" --data "$tmp/data" --val 100 --batch 32 --threads 2 --quiet
       --glimpses 3 --hidden 32 --glimpse-out 32 --glimpse-hidden 16 --loc-hidden 16)
evaluate=("$bin/ram-eval" --data "$tmp/data" --json)
for s in hard soft hybrid; do
    "${train[@]}" --sensor "$s" --epochs 1 --out "$tmp/$s.ram" 2>"$tmp/$s.txt" ||
        fail "ram-train --sensor $s: $(cat "$tmp/$s.txt")"
    want=soft
    [ "$s" = hard ] && want=hard
    "${evaluate[@]}" --model "$tmp/$s.ram" >"$tmp/$s.json" || fail "ram-eval of the $s model"
    grep -q "\"sensor\": \"$want\"" "$tmp/$s.json" || fail "$s model: $(cat "$tmp/$s.json")"
done
grep -q "soft sensor: mean locations" "$tmp/soft.txt" || fail "soft run did not say how it trains"
grep -q "soft sensor: sampled locations" "$tmp/hybrid.txt" || fail "hybrid run did not say so"
! grep -q "soft sensor" "$tmp/hard.txt" || fail "the hard run talks of a soft sensor"

# A soft run resumes from its checkpoint; a hard one cannot take it.
"${train[@]}" --sensor soft --epochs 2 --out "$tmp/soft.ram" --resume "$tmp/soft.ram.ckpt" \
    2>"$tmp/resume.txt" || fail "soft resume: $(cat "$tmp/resume.txt")"
grep -q "^epoch   2" "$tmp/resume.txt" || fail "soft resume did not run epoch 2"
if "${train[@]}" --epochs 3 --out "$tmp/x.ram" --resume "$tmp/soft.ram.ckpt" 2>"$tmp/x.txt"; then
    fail "a hard run resumed a soft checkpoint"
fi

# --init keeps a soft model's sensor; --sensor soft on a hard model reads
# its weights with the soft sensor, and the result is a soft model;
# --detach-soft says so in the header.
init=("$bin/ram-train" --data "$tmp/data" --val 100 --batch 32 --threads 2 --quiet --epochs 1)
"${init[@]}" --init "$tmp/soft.ram" --sensor hybrid --out "$tmp/i.ram" 2>"$tmp/init.txt" ||
    fail "--init soft model --sensor hybrid: $(cat "$tmp/init.txt")"
"${init[@]}" --init "$tmp/hard.ram" --sensor soft --detach-soft --out "$tmp/h2s.ram" \
    2>"$tmp/init.txt" || fail "--init hard model --sensor soft: $(cat "$tmp/init.txt")"
grep -q "hard sensor's weights read by the soft one" "$tmp/init.txt" ||
    fail "--init hard --sensor soft did not say so: $(cat "$tmp/init.txt")"
grep -q "location network alone (--detach-soft)" "$tmp/init.txt" ||
    fail "--detach-soft not in the header: $(cat "$tmp/init.txt")"
"${evaluate[@]}" --model "$tmp/h2s.ram" >"$tmp/h2s.json" || fail "ram-eval of the resensed model"
grep -q '"sensor": "soft"' "$tmp/h2s.json" || fail "resensed model: $(cat "$tmp/h2s.json")"

# An unknown sensor is a usage error (exit 2).
set +e
"${train[@]}" --sensor sharp --epochs 1 --out "$tmp/u.ram" 2>"$tmp/u.txt"
status=$?
set -e
[ "$status" -eq 2 ] || fail "--sensor sharp: exit $status, want 2"
echo "tools-sensor: ok"
