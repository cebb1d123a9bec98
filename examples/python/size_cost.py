"""The cost of classifying an image does not grow with the image: one
architecture (6 glimpses of an 8 x 8 retina at 3 scales, 8 to 32 pixels, colour) on 60 x 60
and on 1024 x 1024 images, timed on the same random images in memory (the
median of 15 calls of 64 images each, the sizes interleaved).

    python3 examples/python/size_cost.py [--reps 15] [--images 64]
"""
import argparse
import time

import numpy as np

import libram


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--images", type=int, default=64, help="images per call")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    sides = (60, 1024)
    models = {s: libram.Model.create(height=s, width=s, channels=3, patch=8, depth=3,
                                     glimpses=6, seed=7) for s in sides}
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


if __name__ == "__main__":
    main()
