#!/usr/bin/env python3
"""Classify the MNIST test digits with a trained libram model.

    python3 examples/python/classify_mnist.py [--data data/mnist] [--model models/mnist.ram]

Reads t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte itself, classifies
every test image with the policy's mean locations, as
`ram-eval --model MODEL --data DIR` does, and prints the test error.  With
the committed models/mnist.ram that is 80 of 10,000 (0.80 %); --expect-errors
80 turns that into a check.
"""

import argparse
import os
import sys
import time

try:
    import libram
except ModuleNotFoundError as e:  # run from a source checkout: use the tree's package
    if e.name != "libram":
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                    os.pardir, "python"))
    import libram

import idx

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                    os.pardir))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(REPO, "data", "mnist"),
                    help="directory of the MNIST IDX files (default: data/mnist)")
    ap.add_argument("--model", default=os.path.join(REPO, "models", "mnist.ram"),
                    help="model file (default: models/mnist.ram)")
    ap.add_argument("--batch", type=int, default=100,
                    help="images per classify call (default 100, as ram-eval)")
    ap.add_argument("--expect-errors", type=int, metavar="N",
                    help="exit with status 1 unless exactly N images are misclassified")
    args = ap.parse_args()

    # libram's matrices are small: BLAS threads only add contention.
    libram.set_blas_threads(1)
    print("libram %s, C library %s (%s)" % (libram.__version__, libram.library_version,
                                            libram.library_path))
    images, labels, (n, height, width) = idx.load_split(args.data, "t10k")
    with libram.Model.load(args.model) as model:
        channels, model_height, model_width = model.image_shape
        if (channels, model_height, model_width) != (1, height, width):
            sys.exit("%s takes %dx%dx%d images, %s has 1x%dx%d"
                     % (args.model, channels, model_height, model_width, args.data, height,
                        width))
        print("model %s: %d glimpses, %d classes, %d parameters"
              % (args.model, model.glimpses, model.classes, model.param_count))
        image_size = height * width
        start = time.perf_counter()
        errors = 0
        for first in range(0, n, args.batch):
            last = min(first + args.batch, n)
            batch = images[first:last] if idx.numpy is not None else \
                images[first * image_size:last * image_size]
            predicted = model.classify(batch).labels
            errors += sum(int(p) != int(t) for p, t in zip(predicted, labels[first:last]))
        seconds = time.perf_counter() - start

    print("test error %.2f %% (%d of %d wrong; %.2f s, %.0f images/s)"
          % (100.0 * errors / n, errors, n, seconds, n / seconds))
    if args.expect_errors is not None:
        if errors != args.expect_errors:
            print("MISMATCH: expected %d errors, got %d" % (args.expect_errors, errors))
            return 1
        print("as expected: %d errors" % errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
