#!/usr/bin/env bash
# ram-data --format npz on a tiny synthetic MNIST (tests/synthetic-idx.sh):
# its images and labels must be byte for byte those of the IDX export, as
# zipfile (and np.load, when RAM_TEST_PYTHON has NumPy) read them; the tools
# must train on it; an existing OUT, a name without .npz and --colour with
# IDX are refused; --colour --limit makes RGB images deterministically.
#
# Usage: tools-npz.sh BUILD_DIR
set -euo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ram-npz.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tools-npz: FAIL: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/synthetic-idx.sh"
export LC_ALL=C
make_split "$tmp/data" train 300 1
make_split "$tmp/data" t10k 100 2
py="${RAM_TEST_PYTHON:-}"
[ -n "$py" ] || py="$(command -v python3 || true)"
[ -n "$py" ] || { echo "tools-npz: no python3 to read the zip: skipped"; exit 77; }

data=("$bin/ram-data" --data "$tmp/data")
"${data[@]}" --dataset cluttered60 --format npz --val 100 --out "$tmp/c.npz" >"$tmp/out.txt" \
    2>"$tmp/err.txt" || fail "npz export: $(cat "$tmp/err.txt")"
[ "$(cat "$tmp/out.txt")" = "$tmp/c.npz" ] || fail "stdout: $(cat "$tmp/out.txt")"
[ ! -e "$tmp/c.npz.tmp" ] || fail "c.npz.tmp left behind"
for split in test val train; do
    val=(--val 100)
    [ "$split" != test ] || val=()
    "${data[@]}" --dataset cluttered60 --split "$split" "${val[@]}" --out "$tmp/idx" >/dev/null \
        2>"$tmp/err.txt" || fail "IDX export of $split: $(cat "$tmp/err.txt")"
done
"$py" - "$tmp/c.npz" "$tmp/idx" <<'PY' || fail "the .npz differs from the IDX export"
import sys, zipfile, struct
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None, "a bad CRC"
assert z.namelist() == [f"{a}_{s}.npy" for s in ("train", "val", "test") for a in "xy"], z.namelist()
for info in z.infolist():
    assert info.compress_type == zipfile.ZIP_STORED, info
def npy(name):
    b = z.read(name)
    assert b[:8] == b"\x93NUMPY\x01\x00", b[:8]
    n = struct.unpack("<H", b[8:10])[0]
    assert (10 + n) % 64 == 0
    return b[10:10 + n].decode("latin1"), b[10 + n:]
for split, idx in (("train", "train-e1-s1"), ("val", "val"), ("test", "t10k")):
    base = f"{sys.argv[2]}/cluttered60-{idx}"
    images = open(base + "-images-idx3-ubyte", "rb").read()
    labels = open(base + "-labels-idx1-ubyte", "rb").read()
    n = struct.unpack(">I", images[4:8])[0]
    head, x = npy(f"x_{split}.npy")
    assert f"'descr': '|u1'" in head and f"'shape': ({n}, 60, 60)" in head, head
    assert x == images[16:], split + " images"
    head, y = npy(f"y_{split}.npy")
    assert "'descr': '<i8'" in head and f"'shape': ({n},)" in head, head
    assert list(struct.unpack(f"<{n}q", y)) == list(labels[8:]), split + " labels"
try:
    import numpy as np
except ImportError:
    sys.exit(0)
a = np.load(sys.argv[1])
assert a["x_test"].shape == (100, 60, 60) and a["x_test"].dtype == np.uint8
assert a["y_train"].dtype == np.int64 and len(a["y_train"]) == 200
PY

# The tools read it (stored members, memory-mapped).
"$bin/ram-train" --data "$tmp/c.npz" --epochs 1 --quiet --glimpses 2 --hidden 16 --batch 32 \
    --threads 2 --out "$tmp/m.ram" 2>"$tmp/train.txt" || fail "ram-train on the .npz: $(cat "$tmp/train.txt")"
grep -q "200 train / 100 validation images" "$tmp/train.txt" ||
    fail "x_val not used: $(cat "$tmp/train.txt")"

# --split: only its two members; --limit: the first N.
"${data[@]}" --dataset mnist --format npz --split test --limit 7 --out "$tmp/t.npz" >/dev/null \
    2>"$tmp/err.txt" || fail "npz --split test: $(cat "$tmp/err.txt")"
"$py" - "$tmp/t.npz" "$tmp/data/t10k-images-idx3-ubyte" <<'PY' || fail "--split test --limit 7"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.namelist() == ["x_test.npy", "y_test.npy"], z.namelist()
x = z.read("x_test.npy")
assert x[-7 * 784:] == open(sys.argv[2], "rb").read()[16:16 + 7 * 784]
PY

# Refusals: an existing file, a name the tools would not take for an .npz,
# --colour as IDX or from a set other than mnist, a canvas smaller than the digit.
refused() { # expected-message args...
    local want="$1"
    shift
    if "${data[@]}" "$@" >/dev/null 2>"$tmp/err.txt"; then fail "accepted: $*"; fi
    grep -q -- "$want" "$tmp/err.txt" || fail "$*: $(cat "$tmp/err.txt")"
}
refused "exists" --dataset mnist --format npz --out "$tmp/c.npz"
refused "name it \*.npz" --dataset mnist --format npz --out "$tmp/c.zip"
refused "use --dataset mnist" --dataset translated60 --format png --colour 256 --out "$tmp/p"
refused "at least 28 x --scale" --dataset mnist --format png --colour 100 --out "$tmp/p"
refused "applies to --colour only" --dataset mnist --format png --scale 2 --out "$tmp/p"

# --colour: RGB, the same bytes twice, and the .npz's pixels are the PNGs'.
col=(--dataset mnist --colour 128 --scale 2 --limit 6 --split test)
"${data[@]}" "${col[@]}" --format npz --out "$tmp/col1.npz" >/dev/null 2>&1 || fail "--colour npz"
"${data[@]}" "${col[@]}" --format npz --out "$tmp/col2.npz" >/dev/null 2>&1 || fail "--colour npz"
cmp -s "$tmp/col1.npz" "$tmp/col2.npz" || fail "--colour is not deterministic"
"$py" - "$tmp/col1.npz" <<'PY' || fail "--colour's .npz"
import sys, zipfile
x = zipfile.ZipFile(sys.argv[1]).read("x_test.npy")
assert b"'shape': (6, 128, 128, 3)" in x[:128], x[:128]
assert len(set(x[128:])) > 100, "a flat image"
PY
if "${data[@]}" "${col[@]}" --format png --out "$tmp/colpng" >/dev/null 2>"$tmp/err.txt"; then
    [ "$(find "$tmp/colpng/test" -name '*.png' | wc -l)" -eq 6 ] || fail "--colour png: not 6 images"
    if "$py" -c "import numpy, PIL" 2>/dev/null; then
        "$py" - "$tmp/col1.npz" "$tmp/colpng/test" <<'PY' || fail "the PNGs differ from the .npz"
import sys, glob, numpy as np
from PIL import Image
x = np.load(sys.argv[1])["x_test"]
files = sorted(glob.glob(sys.argv[2] + "/*/*.png"), key=lambda f: f.rsplit("/", 1)[1])
for i, f in enumerate(files):
    im = np.asarray(Image.open(f))
    assert im.shape == (128, 128, 3) and (im == x[i]).all(), f
PY
    fi
else
    grep -q "without libpng" "$tmp/err.txt" || fail "--colour png: $(cat "$tmp/err.txt")"
fi
# A directory of colour IDX files (MNIST's names, images N x H x W x 3 as
# train-images-idx4-ubyte) is read as their pair: ram-train on the
# directory trains the model the pair by name trains, and ram-eval on it
# gives the pair's figures.
colour=(--dataset mnist --colour 64 --scale 1 --format npz)
"${data[@]}" "${colour[@]}" --limit 40 --split train --val 10 --out "$tmp/ctr.npz" >/dev/null \
    2>&1 || fail "--colour train npz"
"${data[@]}" "${colour[@]}" --limit 20 --split test --out "$tmp/cte.npz" >/dev/null 2>&1 ||
    fail "--colour test npz"
"$py" - "$tmp/ctr.npz" "$tmp/cte.npz" "$tmp/cidx" <<'PY' || fail "writing colour IDX files"
import sys, os, zipfile, struct, ast
os.makedirs(sys.argv[3])
def npy(z, name):
    raw = zipfile.ZipFile(z).read(name)
    n = struct.unpack("<H", raw[8:10])[0]
    head = ast.literal_eval(raw[10:10 + n].decode())
    return head["shape"], raw[10 + n:], head["descr"]
for z, split, key in ((sys.argv[1], "train", "train"), (sys.argv[2], "t10k", "test")):
    shape, x, descr = npy(z, f"x_{key}.npy")
    assert descr == "|u1" and len(shape) == 4, (descr, shape)
    (n,), y, ydescr = npy(z, f"y_{key}.npy")
    labels = bytes(int.from_bytes(y[i * 8:i * 8 + 8], "little") for i in range(n)) \
        if ydescr == "<i8" else y
    with open(f"{sys.argv[3]}/{split}-images-idx4-ubyte", "wb") as f:
        f.write(b"\0\0\x08\x04" + struct.pack(">4I", *shape) + x)
    with open(f"{sys.argv[3]}/{split}-labels-idx1-ubyte", "wb") as f:
        f.write(b"\0\0\x08\x01" + struct.pack(">I", n) + labels)
PY
# ram-data writes those files itself (--format idx, the default), byte for
# byte what the .npz holds.
"${data[@]}" --dataset mnist --colour 64 --scale 1 --limit 40 --split train --val 10 \
    --out "$tmp/cidx2" >/dev/null 2>&1 || fail "--colour train idx"
"${data[@]}" --dataset mnist --colour 64 --scale 1 --limit 20 --split test --out "$tmp/cidx2" \
    >/dev/null 2>&1 || fail "--colour test idx"
for f in train-images-idx4-ubyte train-labels-idx1-ubyte t10k-images-idx4-ubyte \
    t10k-labels-idx1-ubyte; do
    cmp -s "$tmp/cidx/$f" "$tmp/cidx2/$f" || fail "ram-data --colour, IDX: $f is not the .npz's"
done
ctrain=(--epochs 1 --val 10 --quiet --glimpses 2 --hidden 16 --glimpse-out 16 --glimpse-hidden 8
        --loc-hidden 8)
"$bin/ram-train" --data "$tmp/cidx" "${ctrain[@]}" --out "$tmp/cd.ram" 2>"$tmp/cd.txt" ||
    fail "ram-train on a colour IDX directory: $(cat "$tmp/cd.txt")"
"$bin/ram-train" --train-images "$tmp/cidx/train-images-idx4-ubyte" \
    --train-labels "$tmp/cidx/train-labels-idx1-ubyte" "${ctrain[@]}" --out "$tmp/cp.ram" \
    2>"$tmp/cp.txt" || fail "ram-train on the colour IDX pair: $(cat "$tmp/cp.txt")"
cmp -s "$tmp/cd.ram" "$tmp/cp.ram" || fail "the directory trained otherwise than its pair"
"$bin/ram-eval" --model "$tmp/cd.ram" --data "$tmp/cidx" --json | sed "s/, \"seconds\": [0-9.]*//" \
    >"$tmp/cd.json" || fail "ram-eval on a colour IDX directory"
"$bin/ram-eval" --model "$tmp/cd.ram" --test-images "$tmp/cidx/t10k-images-idx4-ubyte" \
    --test-labels "$tmp/cidx/t10k-labels-idx1-ubyte" --json |
    sed "s/, \"seconds\": [0-9.]*//" >"$tmp/cp.json" || fail "ram-eval on the colour pair"
grep -q '"n": 20' "$tmp/cd.json" || fail "ram-eval on the directory: $(cat "$tmp/cd.json")"
[ "$(sed 's/"data": "[^"]*"//' "$tmp/cd.json")" = "$(sed 's/"data": "[^"]*"//' "$tmp/cp.json")" ] ||
    fail "the directory and its pair evaluate differently: $(cat "$tmp/cd.json" "$tmp/cp.json")"
echo "tools-npz: ok"
