"""The cost of classifying an image does not grow with the image: one
architecture on 60 x 60 and on 1024 x 1024 colour images, timed on the same
random images in memory (the median of 15 calls of 64 images each, the
sizes interleaved).  By default 6 glimpses of an 8 x 8 retina at 3 scales,
8 to 32 pixels; the options give another (a retina wider than the small
image, a context network, cell_samples, contrast cells, 8-bit images).

    python3 examples/python/size_cost.py [--reps 15] [--images 64]
    python3 examples/python/size_cost.py --patch 24 --depth 4 --scale 3 \\
        --cell-samples 4 --context 16 --core lstm --bytes

With --models A.ram B.ram, two saved models instead, each on random 8-bit
images of its own shape (e.g. a 60 x 60 grey model against a 1024 x 1024
colour one), interleaved likewise.
"""
import argparse
import time

import numpy as np

import libram


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--images", type=int, default=64, help="images per call")
    ap.add_argument("--patch", type=int, default=8)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--scale", type=float, default=2.0)
    ap.add_argument("--glimpses", type=int, default=6)
    ap.add_argument("--core", default="rnn")
    ap.add_argument("--context", type=int, default=0, help="the context network's side (0: none)")
    ap.add_argument("--cell-samples", type=int, default=0,
                    help="reads per cell side of the retina and the context (0: every pixel)")
    ap.add_argument("--contrast", action="store_true",
                    help="cells as contrast magnitudes (the image's statistics read once an image)")
    ap.add_argument("--bytes", action="store_true", help="8-bit images (uint8), not float32")
    ap.add_argument("--models", nargs=2, metavar="FILE", help="time two saved models instead")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    if args.models:
        return compare_models(args, rng)
    sides = (60, 1024)
    arch = dict(channels=3, patch=args.patch, depth=args.depth, scale=args.scale,
                glimpses=args.glimpses, core=args.core, seed=7)
    if args.context:
        arch["context"] = args.context
    if args.cell_samples:
        arch["cell_samples"] = args.cell_samples
    if args.contrast:
        arch["contrast"] = 1
    models = {s: libram.Model.create(height=s, width=s, **arch) for s in sides}
    if args.bytes:
        images = {s: rng.integers(0, 256, (args.images, 3, s, s), dtype=np.uint8) for s in sides}
    else:
        images = {s: rng.random((args.images, 3, s, s), dtype=np.float32) for s in sides}
    times = {s: [] for s in sides}
    for s in sides:
        models[s].classify(images[s])  # warm up
    for _ in range(args.reps):
        for s in sides:
            t = time.perf_counter()
            models[s].classify(images[s])
            times[s].append((time.perf_counter() - t) / args.images)
    for s in sides:
        print("%4d x %-4d x 3: %6.1f us per image (median of %d)"
              % (s, s, 1e6 * np.median(times[s]), args.reps))
    print("ratio 1024 / 60: %.2f" % (np.median(times[1024]) / np.median(times[60])))


def compare_models(args, rng):
    models = [libram.Model.load(path) for path in args.models]
    images = [rng.integers(0, 256, (args.images,) + m.image_shape, dtype=np.uint8)
              for m in models]
    times = [[] for _ in models]
    for m, x in zip(models, images):
        m.classify(x)  # warm up
    for _ in range(args.reps):
        for k, (m, x) in enumerate(zip(models, images)):
            t = time.perf_counter()
            m.classify(x)
            times[k].append((time.perf_counter() - t) / args.images)
    for path, m, ts in zip(args.models, models, times):
        c, h, w = m.image_shape
        print("%s (%d x %d x %d): %6.1f us per image (median of %d)"
              % (path, h, w, c, 1e6 * np.median(ts), args.reps))
    print("ratio second / first: %.2f" % (np.median(times[1]) / np.median(times[0])))


if __name__ == "__main__":
    main()
