#!/usr/bin/env python3
"""How fast ram-train trains from each kind of data source, against the same
images kept in memory: a PNG folder kept in memory (decoded once, the
default when it fits), the same folder streamed (--stream: a loader thread
decodes each file when its batch comes), and a memory-mapped .npz; for
MNIST-sized images and for 512x512 ones.  Prints samples/s of training
(the median over rounds of the epochs after the first, validation included), the ratio to the
in-memory figure, each run's peak memory (resident set size), and the first
epoch's samples/s (a streamed set with --cache decodes its files in its first
epoch and reads them back from the cache afterwards; every run starts from an
empty cache).

Usage:
    python3 bench/data_speed.py --build build --mnist data/mnist [--rounds 5]
        [--epochs 3] [--threads 2] [--large 512] [--large-count 2000] [--sets mnist,large]
        [--work DIR] [--json out.json]

The 512x512 set is made here from MNIST digits scaled by 4 and placed at
random on a noisy background, as PNG files and as an .npz of the same
pixels.  Needs NumPy; writes its sets under --work (a temporary folder by
default; a --work folder is kept, and its sets are made only once).
--sets mnist or --sets large runs one of the two cases only.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np


def read_idx(path):
    with open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def write_png(path, img):
    """8-bit grey PNG (standard library only)."""
    h, w = img.shape
    raw = b"".join(b"\0" + img[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def write_folder(root, splits):
    for split, (x, y) in splits.items():
        for i, (img, label) in enumerate(zip(x, y)):
            d = os.path.join(root, split, str(int(label)))
            os.makedirs(d, exist_ok=True)
            write_png(os.path.join(d, "%06d.png" % i), img)


def mnist_sets(mnist, work):
    xtr = read_idx(os.path.join(mnist, "train-images-idx3-ubyte"))
    ytr = read_idx(os.path.join(mnist, "train-labels-idx1-ubyte"))
    splits = {"train": (xtr[:50000], ytr[:50000]), "val": (xtr[50000:], ytr[50000:])}
    return make_sets(os.path.join(work, "mnist28"), splits)


def large_sets(mnist, work, side, count):
    xtr = read_idx(os.path.join(mnist, "train-images-idx3-ubyte"))
    ytr = read_idx(os.path.join(mnist, "train-labels-idx1-ubyte"))
    rng = np.random.default_rng(20141208)
    n = count + count // 10
    x = np.empty((n, side, side), np.uint8)
    for i in range(n):
        canvas = rng.integers(0, 64, (side, side), dtype=np.uint8)
        digit = np.kron(xtr[i], np.ones((4, 4), np.uint8))
        oy, ox = rng.integers(0, side - digit.shape[0], 2)
        region = canvas[oy:oy + digit.shape[0], ox:ox + digit.shape[1]]
        np.maximum(region, digit, out=region)
        x[i] = canvas
    splits = {"train": (x[:count], ytr[:count]), "val": (x[count:], ytr[count:n])}
    return make_sets(os.path.join(work, "large%d" % side), splits)


def make_sets(root, splits):
    folder, npz = root + "-png", root + ".npz"
    if not os.path.isdir(folder):
        write_folder(folder + ".tmp", splits)
        os.rename(folder + ".tmp", folder)
    if not os.path.exists(npz):
        arrays = {}
        for split, (x, y) in splits.items():
            # The folder's order (class folders, then file names): the same
            # images in the same order train the same model, at the same speed.
            order = np.argsort(y, kind="stable")
            arrays["x_" + split] = x[order]
            arrays["y_" + split] = y[order].astype(np.int64)
        np.savez(npz + ".tmp.npz", **arrays)
        os.rename(npz + ".tmp.npz", npz)
    return folder, npz


def run(train, data, extra, threads, batch, epochs, out):
    """One ram-train run of `epochs` epochs: (seconds of the epochs after the
    first, peak resident memory in MB, seconds of the first epoch).  The
    model is left in `out`."""
    log = out + ".csv"
    if "--cache" in extra:  # a fresh cache every run: its first epoch decodes every file
        shutil.rmtree(extra[extra.index("--cache") + 1], ignore_errors=True)
    cmd = [train, "--data", data, "--epochs", str(epochs), "--batch", str(batch), "--threads",
           str(threads), "--quiet", "--out", out, "--log", log] + extra
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("data_speed: %s failed:\n%s" % (" ".join(cmd), p.stderr))
    with open(log) as f:
        rows = [line.split(",") for line in f.read().split("\n")[1:] if line]
    # ram-train's own figure (the peak of its resident set): a child's
    # ru_maxrss would count this script's memory at the fork too.
    peak = re.search(r"peak memory (\d+) MB", p.stderr)
    return (float(rows[-1][1]) - float(rows[0][1]), float(peak.group(1)) if peak else float("nan"),
            float(rows[0][1]))


def train_count(data):
    if data.endswith(".npz"):
        with np.load(data) as z:
            return len(z["y_train"])
    return sum(len(files) for _, _, files in os.walk(os.path.join(data, "train")))


def bench(name, cases, args, work, results):
    train = os.path.join(args.build, "ram-train")
    timings = {label: [] for label, _, _ in cases}
    firsts = {label: [] for label, _, _ in cases}
    peaks = {}
    same = True
    for _ in range(args.rounds):  # interleaved, so that drift hits every case alike
        models = []
        for label, data, extra in cases:
            out = os.path.join(work, "m%d.ram" % len(models))
            sec, peak, first = run(train, data, extra, args.threads, args.batch, args.epochs, out)
            timings[label].append(sec)
            firsts[label].append(first)
            peaks[label] = max(peaks.get(label, 0), peak)
            with open(out, "rb") as f:
                models.append(f.read())
        same = same and all(m == models[0] for m in models)
    n = train_count(cases[0][1]) * (args.epochs - 1)  # images of the epochs timed
    base = n / float(np.median(timings[cases[0][0]]))
    print("\n%s: %d training images, epochs 2-%d timed, batch %d, %d threads, %d rounds; the "
          "sources trained %s" % (name, n // (args.epochs - 1), args.epochs, args.batch,
                                  args.threads, args.rounds,
                  "the same model, bit for bit" if same else "DIFFERENT MODELS"))
    print("  %-36s %12s %8s %10s %16s" % ("source", "samples/s", "ratio", "peak MB",
                                          "epoch 1 samples/s"))
    for label, data, _ in cases:
        rate = n / float(np.median(timings[label]))
        # The first epoch (its validation included, and the start-up of a
        # kept set not): where a cache is filled, or a kept set's pages are.
        first = n / (args.epochs - 1) / float(np.median(firsts[label]))
        print("  %-36s %12.0f %8.3f %10.0f %16.0f" % (label, rate, rate / base, peaks[label], first))
        results.append({"set": name, "source": label, "samples_per_s": rate, "same_model": same,
                        "ratio": rate / base, "peak_mb": peaks[label],
                        "epoch_seconds": timings[label], "first_epoch_samples_per_s": first,
                        "first_epoch_seconds": firsts[label]})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--mnist", default="data/mnist")
    ap.add_argument("--work", help="where the sets are made (kept); default: a temporary folder")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3, help="epochs per run (the first is not timed)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--large", type=int, default=512, help="side of the large images (0: none)")
    ap.add_argument("--large-count", type=int, default=2000)
    ap.add_argument("--sets", default="mnist,large",
                    help="which cases to run: mnist, large or both (comma-separated)")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="ram-data-speed.")
    os.makedirs(work, exist_ok=True)
    results = []
    try:
        sets = args.sets.split(",")
        cache = os.path.join(work, "cache")
        if "mnist" in sets:
            t0 = time.time()
            folder, npz = mnist_sets(args.mnist, work)
            print("sets made in %.0f s" % (time.time() - t0))
            bench("MNIST 28x28", [("PNG folder, kept in memory", folder, []),
                                  ("PNG folder, streamed (--stream)", folder, ["--stream"]),
                                  ("PNG folder, streamed, --cache", folder,
                                   ["--stream", "--cache", cache]),
                                  (".npz, memory-mapped", npz, [])], args, work, results)
        if args.large and "large" in sets:
            folder, npz = large_sets(args.mnist, work, args.large, args.large_count)
            bench("%dx%d" % (args.large, args.large),
                  [("PNG folder, kept in memory", folder, []),
                   ("PNG folder, streamed (--stream)", folder, ["--stream"]),
                   ("PNG folder, streamed, --cache", folder, ["--stream", "--cache", cache]),
                   (".npz, memory-mapped", npz, [])], args, work, results)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
