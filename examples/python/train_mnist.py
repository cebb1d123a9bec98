#!/usr/bin/env python3
"""Train a fresh RAM on MNIST from Python for a few hundred batches and watch
the error fall.

    python3 examples/python/train_mnist.py [--data data/mnist] [--batches 500] [--out FILE]

The paper's MNIST model (6 glimpses of 8x8, RNN core), Adam at 1e-3, batches
of 64 in an order drawn from the trainer's own RNG.  Every --every batches it
prints the training error of those batches (with *sampled* glimpse
locations, as the policy explores) and the error on the first --eval test
images (with the policy's *mean* locations).  500 batches take about ten
seconds on one core and bring the test error from 87 % to about 22 %;
ram-train goes on to 1.10-1.38 % (docs/results.md).
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
    ap.add_argument("--batches", type=int, default=500, help="training steps (500)")
    ap.add_argument("--batch", type=int, default=64, help="images per step (64)")
    ap.add_argument("--every", type=int, default=50, help="print every N batches (50)")
    ap.add_argument("--eval", type=int, default=1000,
                    help="test images the printed test error is measured on (1000)")
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (1e-3)")
    ap.add_argument("--threads", type=int, default=1, help="trainer worker threads (1)")
    ap.add_argument("--seed", type=int, default=1, help="weights, policy and data order (1)")
    ap.add_argument("--out", help="save the trained model here")
    args = ap.parse_args()
    if min(args.batches, args.batch, args.every, args.eval, args.threads) < 1:
        ap.error("--batches, --batch, --every, --eval and --threads must be >= 1")

    libram.set_blas_threads(1)  # small matrices: BLAS threads only add contention
    train_x, train_y, (n_train, height, width) = idx.load_split(args.data, "train")
    test_x, test_y, (n_test, _, _) = idx.load_split(args.data, "t10k")
    n_eval = min(args.eval, n_test)
    image_size = height * width
    eval_x, eval_y = idx.take(test_x, image_size, range(n_eval)), test_y[:n_eval]

    with libram.Model.create(height=height, width=width, seed=args.seed) as model, \
            libram.Policy(model, seed=args.seed) as policy, \
            libram.Trainer(model, policy, optimizer="adam", lr=args.lr,
                           max_batch=args.batch, threads=args.threads) as trainer:
        print("libram %s (C library %s): %d parameters, %d training images, "
              "test error on %d test images"
              % (libram.__version__, libram.library_version, model.param_count, n_train,
                 n_eval))
        print("%7s %9s %10s %9s %8s %7s %7s" % ("batch", "images", "train err", "test err",
                                                "nll", "reward", "time"))
        first_error = trainer.evaluate(eval_x, eval_y)
        print("%7d %9d %10s %8.2f%% %8s %7s %6.1fs" % (0, 0, "", 100 * first_error, "", "",
                                                        0.0))
        start = time.perf_counter()
        order, position = trainer.shuffle(n_train), 0
        correct = nll = reward = 0.0
        for step in range(1, args.batches + 1):
            if position + args.batch > n_train:  # a new epoch in a new order
                order, position = trainer.shuffle(n_train), 0
            index = order[position:position + args.batch]
            position += args.batch
            labels = train_y[index] if idx.numpy is not None else [train_y[i] for i in index]
            stats = trainer.train_batch(idx.take(train_x, image_size, index), labels)
            correct += stats.accuracy
            nll += stats.nll
            reward += stats.reward
            if step % args.every == 0 or step == args.batches:
                since = step % args.every or args.every
                error = trainer.evaluate(eval_x, eval_y)
                print("%7d %9d %9.2f%% %8.2f%% %8.4f %7.3f %6.1fs"
                      % (step, step * args.batch, 100 * (1 - correct / since), 100 * error,
                         nll / since, reward / since, time.perf_counter() - start))
                sys.stdout.flush()
                correct = nll = reward = 0.0
        print("test error fell from %.2f %% to %.2f %% in %d batches"
              % (100 * first_error, 100 * error, args.batches))
        if args.out:
            model.save(args.out)
            print("saved %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
