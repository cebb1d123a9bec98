#!/usr/bin/python3
"""Train libram's RAM in PyTorch, write it as a libram model file, and check
that libram classifies the test set as PyTorch does.

    torch_train.py MNIST-DIR --out model.ram [--steps 300] [--batch 64] [--lr 1e-3]
                   [--init models/mnist.ram] [--seed 1]

A fresh model (libram's default MNIST architecture, weights drawn as
libram draws them: U(-0.1, 0.1)) or, with --init, a libram model file
converted to PyTorch (fine-tuning), trained for --steps batches of the
MNIST training set with Adam on libram's objective (RAM.loss: NLL +
baseline MSE + REINFORCE, sampled locations), clipped at gradient norm 5
as libram's trainer.  Then the module is written with
libram.torch.from_torch, loaded back by libram, and both classify the
10,000 test images with mean locations: the script prints how many
predictions agree, the largest difference of a class probability and
both test errors, and exits 1 unless every prediction agrees and every
probability is within 1e-4.  `ram-eval --model model.ram --data MNIST-DIR`
then evaluates the file.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

try:
    import libram
except ModuleNotFoundError as e:  # run from a source checkout: use the tree's package
    if e.name != "libram":
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                    os.pardir, "python"))
    import libram
import libram.torch
from libram import datasets


def load(directory, split):
    x, y = datasets.load_idx(os.path.join(directory, split + "-images-idx3-ubyte"),
                             os.path.join(directory, split + "-labels-idx1-ubyte"))
    return np.asarray(x, np.float32)[:, None] / 255.0, np.asarray(y, np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mnist")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--init", help="a libram model file to fine-tune")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    if args.init:
        net = libram.torch.to_torch(args.init)
    else:
        with libram.Model.create(seed=args.seed) as fresh:  # libram's initialisation
            net = libram.torch.to_torch(fresh)
    torch.manual_seed(args.seed)  # the sampling noise: after the module's own draws
    x_train, y_train = load(args.mnist, "train")
    x_test, y_test = load(args.mnist, "t10k")
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed)
    start = time.time()
    for step in range(1, args.steps + 1):
        pick = rng.integers(0, len(y_train), args.batch)
        loss, stats = net.loss(torch.from_numpy(x_train[pick]), torch.from_numpy(y_train[pick]))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        if step % 100 == 0 or step == args.steps:
            print("step %d: nll %.3f, accuracy %.3f (sampled locations), %.0f s"
                  % (step, stats["nll"], stats["accuracy"], time.time() - start))

    libram.torch.from_torch(net).save(args.out)
    model = libram.Model.load(args.out)
    agree, worst, err_ram, err_torch = 0, 0.0, 0, 0
    with torch.no_grad():
        for i in range(0, len(y_test), 500):
            imgs, labels = x_test[i:i + 500], y_test[i:i + 500]
            lab, prob, _ = model.classify(imgs)
            lab, prob = np.asarray(lab), np.asarray(prob)
            p = net(torch.from_numpy(imgs)).log_probs.exp().numpy()
            agree += int((p.argmax(1) == lab).sum())
            worst = max(worst, float(np.abs(p - prob).max()))
            err_ram += int((lab != labels).sum())
            err_torch += int((p.argmax(1) != labels).sum())
    n = len(y_test)
    print("wrote %s" % args.out)
    print("predictions agree: %d / %d" % (agree, n))
    print("largest probability difference: %.3g" % worst)
    print("test error: libram %.2f %%, PyTorch %.2f %%" % (100.0 * err_ram / n,
                                                           100.0 * err_torch / n))
    return 0 if agree == n and worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
