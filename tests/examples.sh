#!/usr/bin/env bash
# The C examples of examples/ run as a user would run them: hello classifies
# one image of a tiny synthetic MNIST-shaped file with a committed model; the
# training example's error must fall (it exits 1 otherwise); the threads
# example must give one thread's labels, with a random model and a saved one.
#
# Usage: examples.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
bin="$1" src="$2"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-examples.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "examples: FAIL: $*" >&2; exit 1; }
source "$src/tests/synthetic-idx.sh"
export LC_ALL=C
make_split "$tmp" t10k 5 3

out="$("$bin/hello" "$src/models/mnist.ram" "$tmp/t10k-images-idx3-ubyte" 4)" || fail "hello: $out"
[[ "$out" =~ ^"image 4: class "[0-9]" (probability "[01]\.[0-9]{3}")"$ ]] || fail "hello printed: $out"
if "$bin/hello" "$src/models/mnist.ram" "$tmp/t10k-images-idx3-ubyte" 5 2>/dev/null; then
    fail "hello read past the last image"
fi
"$bin/example-train" >"$tmp/train.txt" || fail "the training example did not learn: $(cat "$tmp/train.txt")"
grep -q "^epoch 12: validation error" "$tmp/train.txt" || fail "train printed: $(cat "$tmp/train.txt")"
"$bin/example-threads" | grep -q "the labels of one thread" || fail "threads, random model"
"$bin/example-threads" "$src/models/cluttered60.ram" 3 | grep -q "^3 threads" ||
    fail "threads with a saved model"
echo "examples: ok"
