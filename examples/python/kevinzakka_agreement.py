#!/usr/bin/python3
"""How closely does a kevinzakka/recurrent-visual-attention model converted to
libram classify as that project's forward pass does?

    kevinzakka_agreement.py CKPT.pth.tar IMAGES-idx3-ubyte LABELS-idx1-ubyte
        [--glimpses 6 --patch 8 --depth 1 --scale 2] [--normalize 0.1307 0.3081]
        [--seed 1] [--batch 500]

Converts the checkpoint (libram.kevinzakka.model_file, the input
normalisation folded in when --normalize is given), classifies every image
in libram with mean locations (raw pixels in [0, 1]), and compares with
libram.kevinzakka.forward, the re-implementation of its forward pass with
mean locations, on the images as it takes them (normalised when
--normalize), in four variants, from libram's conventions to its own:

  round, libram's l_0   its network with libram's retina rounding and first location
  floor, libram's l_0   its retina (the centre truncated, not rounded)
  floor, uniform l_0    and its first location, uniform in [-1, 1]^2 (--seed)
  mean of 10 l_0        the last, its class probabilities averaged over 10 first locations

For each: predictions that agree with libram's, the largest class
probability difference, and its test error; then libram's test error.
"""

import argparse
import os
import sys

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
import libram.kevinzakka as kz
from libram import datasets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("images")
    ap.add_argument("labels")
    ap.add_argument("--glimpses", type=int, default=6)
    ap.add_argument("--patch", type=int, default=8)
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--scale", type=int, default=2)
    ap.add_argument("--normalize", type=float, nargs=2, default=None, metavar=("MEAN", "STD"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=500)
    args = ap.parse_args()

    state = kz.state_dict_of(torch.load(args.checkpoint, map_location="cpu"))
    x, y = datasets.load_idx(args.images, args.labels)
    h, w = x.shape[1], x.shape[2]
    geometry = dict(glimpses=args.glimpses, patch=args.patch, depth=args.depth, scale=args.scale)
    f = kz.model_file(state, height=h, width=w, normalize=args.normalize, **geometry)
    model = libram.Model.from_bytes(f.to_bytes())
    gen = torch.Generator().manual_seed(args.seed)
    names = ["round, libram's l_0", "floor, libram's l_0", "floor, uniform l_0",
             "mean of 10 l_0"]
    agree, worst, errors = [0] * 4, [0.0] * 4, [0] * 4
    err_ram = 0
    with torch.no_grad():
        for i in range(0, len(y), args.batch):
            raw = np.asarray(x[i:i + args.batch], np.float32)[:, None] / 255.0
            labels = np.asarray(y[i:i + args.batch])
            lab, prob, _ = model.classify(raw)
            lab, prob = np.asarray(lab), np.asarray(prob)
            err_ram += int((lab != labels).sum())
            t = torch.from_numpy(raw)
            if args.normalize:
                t = (t - args.normalize[0]) / args.normalize[1]
            n = t.shape[0]
            runs = [kz.forward(state, t, centre="round", **geometry)[0].exp(),
                    kz.forward(state, t, centre="floor", **geometry)[0].exp(),
                    kz.forward(state, t, l0=torch.rand(n, 2, generator=gen) * 2 - 1,
                               **geometry)[0].exp()]
            runs.append(sum(kz.forward(state, t, l0=torch.rand(n, 2, generator=gen) * 2 - 1,
                                       **geometry)[0].exp() for _ in range(10)) / 10)
            for j, p in enumerate(runs):
                p = p.numpy()
                agree[j] += int((p.argmax(1) == lab).sum())
                worst[j] = max(worst[j], float(np.abs(p - prob).max()))
                errors[j] += int((p.argmax(1) != labels).sum())
    n = len(y)
    print("%-22s %18s %12s %10s" % ("its forward pass", "agree with libram", "max |dp|",
                                    "error"))
    for j, name in enumerate(names):
        print("%-22s %12d / %d %12.3g %9.2f %%" % (name, agree[j], n, worst[j],
                                                   100.0 * errors[j] / n))
    print("libram (converted): test error %.2f %%" % (100.0 * err_ram / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
