#!/usr/bin/python3
"""Does the PyTorch module of a libram model classify as libram does?

    torch_agreement.py MODEL.ram IMAGES-idx3-ubyte LABELS-idx1-ubyte [--batch 500]

Converts MODEL to PyTorch (libram.torch.to_torch) and back, checks that the
file comes back byte for byte, classifies every image with mean locations
in both (libram's Model.classify and the module), and prints how many
predictions agree, the largest difference of any class probability, and
each one's test error.  Exit status 1 if the file does not come back the
same or a prediction differs.  Pixels are bytes scaled to [0, 1], as
ram-eval reads them; `ram-data` writes the IDX files of the other test sets.
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
import libram.torch
from libram import datasets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("images")
    ap.add_argument("labels")
    ap.add_argument("--batch", type=int, default=500)
    args = ap.parse_args()

    original = open(args.model, "rb").read()
    net = libram.torch.to_torch(original)
    back = libram.torch.model_file(net.state_dict()).to_bytes()
    same_file = back == original

    x, y = datasets.load_idx(args.images, args.labels)
    model = libram.Model.load(args.model)
    c, h, w = model.image_shape
    agree, worst, err_ram, err_torch = 0, 0.0, 0, 0
    with torch.no_grad():
        for i in range(0, len(y), args.batch):
            imgs = (np.asarray(x[i:i + args.batch], np.float32) / 255.0).reshape(-1, c, h, w)
            labels = np.asarray(y[i:i + args.batch])
            lab, prob, _ = model.classify(imgs)
            p = net(torch.from_numpy(imgs)).log_probs.exp().numpy()
            agree += int((p.argmax(1) == np.asarray(lab)).sum())
            worst = max(worst, float(np.abs(p - np.asarray(prob)).max()))
            err_ram += int((np.asarray(lab) != labels).sum())
            err_torch += int((p.argmax(1) != labels).sum())
    n = len(y)
    print("file back byte for byte: %s" % ("yes" if same_file else "NO"))
    print("predictions agree: %d / %d" % (agree, n))
    print("largest probability difference: %.3g" % worst)
    print("test error: libram %.2f %%, PyTorch %.2f %%" % (100.0 * err_ram / n,
                                                           100.0 * err_torch / n))
    return 0 if same_file and agree == n else 1


if __name__ == "__main__":
    sys.exit(main())
