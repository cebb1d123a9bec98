"""ram-convert: libram model files to PyTorch state dicts and back.

    ram-convert --to torch model.ram --out state.pt
    ram-convert --from torch state.pt --out model.ram
    ram-convert --from kevinzakka ckpt.pth.tar --out model.ram [--glimpses 6 --patch 8 ...]

Exit status: 0 on success, 1 when the input cannot be converted (not a
checkpoint, missing keys, wrong shapes, what libram cannot represent), 2 for
a usage error.
"""

import argparse
import os
import sys

_EPILOG = """\
--to torch writes the state dict of libram.torch.RAM (torch.save), with the
file's architecture, class names, fit rule and other chunks in its extra
state: --from torch of that state dict writes the original file back byte
for byte.  A libram-layout state dict without extra state takes its sizes
from its shapes and the rest from the options below (libram's defaults
otherwise).  --from kevinzakka reads that project's checkpoint (its
"model_state") or state dict; its retina options are not in its
checkpoints, so give them (defaults: 6 glimpses, 8x8, 1 patch, scale 2,
28x28, std 0.17, as its committed MNIST model).  See docs/python.md,
"PyTorch bridge".

exit status: 0 on success, 1 when the input cannot be converted, 2 for a
usage error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write("ram-convert: %s\n" % message)
        sys.exit(2)


def _parser():
    ap = _Parser(prog="ram-convert", description="Convert libram model files to PyTorch "
                 "state dicts and back.", epilog=_EPILOG,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    way = ap.add_mutually_exclusive_group(required=True)
    way.add_argument("--from", dest="source", choices=("torch", "kevinzakka"),
                     help="the input is a PyTorch state dict of this layout; writes a model file")
    way.add_argument("--to", dest="target", choices=("torch",),
                     help="the input is a libram model file; writes a PyTorch state dict")
    ap.add_argument("input", help="the file to convert")
    ap.add_argument("--out", required=True, help="the file to write")
    arch = ap.add_argument_group("architecture of a state dict without libram's extra state")
    for name, kind in (("height", int), ("width", int), ("channels", int), ("patch", int),
                       ("depth", int), ("scale", float), ("glimpses", int),
                       ("loc-std", float), ("loc-range-pixels", float)):
        arch.add_argument("--" + name, type=kind, default=None)
    arch.add_argument("--bound", choices=("tanh", "hardtanh"), default=None)
    arch.add_argument("--normalize", type=float, nargs=2, metavar=("MEAN", "STD"),
                      help="kevinzakka: fold this input normalisation (its loader's is "
                           "0.1307 0.3081) into the first layer, so libram takes raw pixels")
    return ap


def _fail(msg):
    sys.stderr.write("ram-convert: %s\n" % msg)
    return 1


def _arch_options(args):
    out = {}
    for name in ("height", "width", "channels", "patch", "depth", "scale", "glimpses",
                 "loc_std", "loc_range_pixels", "bound"):
        v = getattr(args, name)
        if v is not None:
            out[name] = v
    return out


def _load_torch(path):
    import pickle
    import zipfile
    import torch
    try:
        return torch.load(path, map_location="cpu")
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, RuntimeError, ValueError,
            AttributeError, ModuleNotFoundError) as e:
        raise ValueError("%s: not a PyTorch checkpoint (%s)" % (path, e)) from None


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        return _fail("PyTorch is not installed (ram-convert needs torch)")
    import libram
    from libram import modelfile
    import libram.torch as lt
    try:
        if args.target == "torch":
            if _arch_options(args) or args.normalize:
                sys.stderr.write("ram-convert: --to torch takes the architecture from the "
                                 "model file; drop the architecture options\n")
                return 2
            with open(args.input, "rb") as f:
                data = f.read()
            # libram checks everything its loader checks before we convert.
            libram.Model.from_bytes(data).close()
            net = lt.to_torch(data)
            torch.save(net.state_dict(), args.out)
            return 0
        obj = _load_torch(args.input)
        opts = _arch_options(args)
        if args.source == "kevinzakka":
            for bad in ("channels", "bound", "loc_range_pixels"):
                if bad in opts:
                    sys.stderr.write("ram-convert: --%s: the kevinzakka layout fixes it\n"
                                     % bad.replace("_", "-"))
                    return 2
            f = lt.model_file(obj, "kevinzakka", normalize=args.normalize, **opts)
        else:
            if args.normalize:
                sys.stderr.write("ram-convert: --normalize is for --from kevinzakka\n")
                return 2
            if isinstance(obj, dict) and "state_dict" in obj and not any(
                    k.endswith(".weight") for k in obj):
                obj = obj["state_dict"]
            f = lt.model_file(obj, "libram", **opts)
        data = f.to_bytes()
        libram.Model.from_bytes(data).close()  # what libram would refuse, refused here
        tmp = args.out + ".tmp-ram-convert"
        with open(tmp, "wb") as out:
            out.write(data)
        os.replace(tmp, args.out)
        return 0
    except (OSError, ValueError, modelfile.FileFormatError, libram.Error) as e:
        return _fail(str(e))


if __name__ == "__main__":
    sys.exit(main())
