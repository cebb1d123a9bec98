"""libram.torch: libram's model as a PyTorch module, and back.

    import libram, libram.torch

    net = libram.torch.to_torch(libram.Model.load("models/mnist.ram"))   # a torch.nn.Module
    out = net(images)                       # images: (n, C, H, W) float32 tensor
    out.log_probs, out.locations            # (n, K); (T, n, 2) in the policy's [-1, 1]
    loss, stats = net.loss(images, labels)  # NLL + baseline MSE + REINFORCE, as libram trains
    model = libram.torch.from_torch(net)    # a libram.Model with the module's weights

The module computes libram's forward pass (lib/forward.c, lib/glimpse.c):
the same retina (squares of round(patch * scale^k) pixels whose top-left
pixel is floor((x + 1) W / 2 - side / 2 + 1/2), zeros outside the image,
area-pooled to patch x patch), the same scaling of locations by
loc_range_pixels, both glimpse forms, both cores and both bounds, and the
convolutional layer between the retina and the glimpse network.  Its
state dict holds the weights under the names of RAM.KEYS and, as extra
state, everything else of the file it came from (architecture, class names,
fit rule, any other chunk), so that a file converted to PyTorch and back is
the same bytes.  The kevinzakka layout (from_torch(..., layout="kevinzakka"))
is in libram.kevinzakka.

Imports PyTorch (torch 1.10 or later, for extra state); `import libram` does not.
"""

import collections
import collections.abc
import math
import os
import struct
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import Model, modelfile

__all__ = ["RAM", "RAMOutput", "to_torch", "from_torch", "model_file", "ConversionError"]

#: Names in ram.h's enums, as in libram.Model.create().
_FORMS, _CORES, _BOUNDS = ("additive", "concat"), ("rnn", "lstm"), ("hardtanh", "tanh")
_BASELINES = ("linear", "scalar", "none")
# Chunks that describe a training run of particular weights (docs/file-format.md):
# written back only with the weights they were saved with.
_TRAINING_CHUNKS = (b"PLCY", b"OPTM", b"AVRG", b"USER")


class ConversionError(ValueError):
    """A state dict or module that libram's model cannot represent, or one
    whose shapes or keys do not fit the architecture."""


RAMOutput = collections.namedtuple("RAMOutput", "log_probs locations means hidden")
RAMOutput.__doc__ = """What RAM.forward returns.

log_probs: (n, K) log class probabilities after the last glimpse.
locations: (T, n, 2) where each glimpse looked, (x, y) in the policy's
    [-1, 1] (as the l_t of docs/design.md; no gradient).
means: (T, n, 2) the policy means mu_t (with a gradient into the location
    network, and into the core unless detach_core).
hidden: (T + 1, n, H) the core states h_0 = 0 .. h_T."""


class Retina(nn.Module):
    """libram's glimpse sensor (lib/glimpse.c) on a batch: rho (n, D) laid out
    [channel][scale][row][col], from images (n, C, H, W) and locations in the
    retina's frame (n, 2).  No parameters; not differentiable in the
    locations (a glimpse cuts whole pixels)."""

    def __init__(self, patch, depth, scale):
        super().__init__()
        self.patch, self.depth = patch, depth
        # The sides as libram computes them: lround(patch * scale^k) in double.
        self.sides = [int(math.floor(patch * math.pow(float(np.float32(scale)), k) + 0.5))
                      for k in range(depth)]
        for k, side in enumerate(self.sides):
            # Cell j of a side-pixel square covers [j*side//P, (j+1)*side//P):
            # exact average pooling when P divides side, area pooling otherwise.
            b = [j * side // patch for j in range(patch + 1)]
            a = torch.zeros(patch, side)
            for j in range(patch):
                a[j, b[j]:b[j + 1]] = 1.0
            count = torch.tensor([b[j + 1] - b[j] for j in range(patch)], dtype=torch.float32)
            self.register_buffer("pool%d" % k, a, persistent=False)
            self.register_buffer("area%d" % k, count[:, None] * count[None, :], persistent=False)

    def forward(self, images, where):
        n, c, h, w = images.shape
        # Top-left pixels in double, as square_start(): the centre
        # (x + 1) * extent / 2 of the float location.
        x = where[:, 0].double()
        y = where[:, 1].double()
        idx = torch.arange(n, device=images.device)
        parts = []
        for k, side in enumerate(self.sides):
            x0 = torch.floor((x + 1.0) * w * 0.5 - side * 0.5 + 0.5).long()
            y0 = torch.floor((y + 1.0) * h * 0.5 - side * 0.5 + 0.5).long()
            ar = torch.arange(side, device=images.device)
            cols, rows = x0[:, None] + ar, y0[:, None] + ar
            inside = (((rows >= 0) & (rows < h))[:, :, None]
                      & ((cols >= 0) & (cols < w))[:, None, :])
            win = images[idx[:, None, None], :, rows.clamp(0, h - 1)[:, :, None],
                         cols.clamp(0, w - 1)[:, None, :]]  # (n, side, side, C)
            # where(), not a product: a NaN pixel outside the square must not leak in.
            win = torch.where(inside[..., None], win, torch.zeros((), dtype=win.dtype,
                                                                  device=win.device))
            win = win.permute(0, 3, 1, 2)
            if side == self.patch:
                pooled = win
            elif side % self.patch == 0:
                pooled = F.avg_pool2d(win, side // self.patch)
            else:
                a = getattr(self, "pool%d" % k)
                pooled = (a @ win @ a.t()) / getattr(self, "area%d" % k)
            parts.append(pooled)
        return torch.stack(parts, 2).reshape(n, -1)


class RAM(nn.Module):
    """libram's Recurrent Attention Model in PyTorch.

    RAM(arch) builds one with fresh weights from a dict of the ARCH fields
    (libram.modelfile.ARCH_FIELDS), and with conv={"channels": C, "kernel":
    K, "stride": S} (kernel 3 and stride 1 by default) a convolutional layer
    as ram_model_params.conv_channels puts one; to_torch() builds one from a
    libram model with its weights.  Attributes: arch (the fields),
    conv_fields (the layer's fields, or None; conv is its nn.Conv2d), std
    (the sampling std, arch["loc_std"] by default), detach_core (1: REINFORCE
    trains the location network only, libram's default), baseline ("linear",
    "scalar" or "none": the REINFORCE baseline of loss(), which libram keeps
    in its policy, not in model files; its weights start at zero as
    libram's), class_names and fit (carried to the libram file)."""

    #: state dict key -> libram tensor (modelfile.TENSORS).
    KEYS = collections.OrderedDict([
        ("g1.weight", "g1_w"), ("g1.bias", "g1_b"), ("l1.weight", "l1_w"), ("l1.bias", "l1_b"),
        ("g2.weight", "g2_w"), ("g2.bias", "g2_b"), ("l2.weight", "l2_w"), ("l2.bias", "l2_b"),
        ("core_x.weight", "core_wx"), ("core_h.weight", "core_wh"), ("core_x.bias", "core_b"),
        ("locator.weight", "loc_w"), ("locator.bias", "loc_b"),
        ("classifier.weight", "cls_w"), ("classifier.bias", "cls_b"),
        ("conv.weight", "conv_w"), ("conv.bias", "conv_b")])

    def __init__(self, arch, baseline="linear", detach_core=True, conv=None):
        super().__init__()
        a = dict(arch)
        if a["loc_range_pixels"] < 0:  # "follow the image", as ram_model_create resolves it
            a["loc_range_pixels"] = float(np.float32(max(0.0, 0.5 * min(a["height"],
                                                                        a["width"]) - 1.0)))
        _check_computable(a)
        conv = _conv_fields(conv, a)
        shapes = modelfile.shapes(a, conv=conv)
        chunks = [[b"ARCH", 0, None], [b"WGHT", 0, None]]
        if conv is not None:
            chunks.append([b"CONV", 0, modelfile.conv_payload(conv)])
        self._file = {"arch": a, "arch_tail": b"", "kind": 0, "chunks": chunks,
                      "weights_crc": None}
        self.retina = Retina(a["patch"], a["depth"], a["scale"])
        # The layer's filters read all the glimpse's planes (channel x scale)
        # at once; its weight (C, planes, K, K) is libram's conv_w of (C,
        # planes x K x K), whose columns run plane, row, column.
        self.conv = None if conv is None else nn.Conv2d(
            a["channels"] * a["depth"], conv["channels"], conv["kernel"], stride=conv["stride"])
        lin = lambda name, bias=True: nn.Linear(shapes[name][1], shapes[name][0], bias=bias)
        self.g1, self.l1, self.g2 = lin("g1_w"), lin("l1_w"), lin("g2_w")
        self.l2 = lin("l2_w") if a["form"] == 0 else None
        self.core_x, self.core_h = lin("core_wx"), lin("core_wh", bias=False)
        self.locator, self.classifier = lin("loc_w"), lin("cls_w")
        # Every weight and bias U(-init_scale, init_scale), as ram_model_create
        # draws them, but from torch's RNG: to_torch(Model.create(seed=...))
        # gives libram's very values.
        for p in self.parameters():
            nn.init.uniform_(p, -a["init_scale"], a["init_scale"])
        if baseline not in _BASELINES:
            raise ValueError("baseline %r: one of %s" % (baseline, ", ".join(_BASELINES)))
        self.baseline_type = baseline
        # The scalar baseline is the linear one with its weights held at zero:
        # one set of keys for both.
        self.baseline = nn.Linear(a["core_hidden"], 1) if baseline != "none" else None
        if self.baseline is not None:
            nn.init.zeros_(self.baseline.weight)
            nn.init.zeros_(self.baseline.bias)
            if baseline == "scalar":
                self.baseline.weight.requires_grad_(False)
        self.detach_core = bool(detach_core)
        self.std = float(a["loc_std"])
        # The policy frame -> the retina's, in float as lib/model.c computes it.
        lrp, two = np.float32(a["loc_range_pixels"]), np.float32(2.0)
        rng = [np.float32(1.0), np.float32(1.0)] if lrp <= 0 else [
            lrp * two / np.float32(a["width"]), lrp * two / np.float32(a["height"])]
        self.register_buffer("loc_scale", torch.tensor(rng, dtype=torch.float32),
                             persistent=False)

    @classmethod
    def from_state_dict(cls, state):
        """A module from a state dict this class wrote (torch.load of
        `ram-convert --to torch`'s output, say): its architecture, baseline
        and settings from the extra state, then the weights."""
        extra = state.get("_extra_state") if isinstance(state, collections.abc.Mapping) else None
        if not isinstance(extra, dict) or extra.get("format") != "libram":
            raise ConversionError("not a libram.torch.RAM state dict (no libram extra state); "
                                  "from_torch(state, height=..., ...) reads one without it")
        net = cls(extra["arch"], baseline=extra.get("baseline", "linear"),
                  detach_core=extra.get("detach_core", True),
                  conv=_conv_of(extra.get("chunks", [])))
        net.load_state_dict(state)
        return net

    @property
    def arch(self):
        return dict(self._file["arch"])

    @property
    def conv_fields(self):
        """The convolutional layer's channels, kernel and stride by name, or
        None without one."""
        return _conv_of(self._file["chunks"])

    # ---- what the libram file carries besides the weights

    def get_extra_state(self):
        f = dict(self._file)
        f["chunks"] = [list(c) for c in f["chunks"]]
        f["format"] = "libram"
        f["baseline"] = self.baseline_type
        f["detach_core"] = self.detach_core
        f["std"] = self.std
        return f

    def set_extra_state(self, state):
        if not isinstance(state, dict) or state.get("format") != "libram":
            raise ConversionError("extra state is not libram's")
        if (dict(state["arch"]) != self._file["arch"]
                or _conv_of(state["chunks"]) != _conv_of(self._file["chunks"])):
            raise ConversionError("the state dict's architecture is not this module's "
                                  "(build the module with RAM.from_state_dict)")
        self._file = {k: state[k] for k in ("arch", "arch_tail", "kind", "chunks",
                                            "weights_crc")}
        self._file["chunks"] = [list(c) for c in state["chunks"]]
        self.detach_core = bool(state.get("detach_core", self.detach_core))
        self.std = float(state.get("std", self.std))

    @property
    def class_names(self):
        """The class names the libram file carries (CLSN), or None."""
        raw = _chunk(self._file["chunks"], b"CLSN")
        if raw is None:
            return None
        (count,), at, names = struct.unpack_from("<I", raw), 4, []
        for _ in range(count):
            (n,) = struct.unpack_from("<I", raw, at)
            names.append(raw[at + 4:at + 4 + n].decode("utf-8"))
            at += 4 + n
        return names

    @class_names.setter
    def class_names(self, names):
        if names is None:
            _set_chunk(self._file["chunks"], b"CLSN", None)
            return
        names = [str(n).encode("utf-8") for n in names]
        if len(names) != self._file["arch"]["classes"] or any(
                not n or len(n) > 1024 or b"\0" in n for n in names):
            raise ValueError("class names: %d names of 1 to 1024 bytes, no NUL, expected"
                             % self._file["arch"]["classes"])
        _set_chunk(self._file["chunks"], b"CLSN", struct.pack("<I", len(names)) + b"".join(
            struct.pack("<I", len(n)) + n for n in names))

    @property
    def fit(self):
        """The fit rule the libram file carries (FITR), as a name of libram.FIT_RULES."""
        from . import _FIT_NAMES
        raw = _chunk(self._file["chunks"], b"FITR")
        return _FIT_NAMES[struct.unpack("<I", raw)[0]] if raw else "pad"

    @fit.setter
    def fit(self, rule):
        from . import FIT_RULES
        if rule not in FIT_RULES:
            raise ValueError("fit %r: one of %s" % (rule, ", ".join(FIT_RULES)))
        # libram writes no FITR for the default: the file stays the same bytes.
        _set_chunk(self._file["chunks"], b"FITR",
                   None if rule == "pad" else struct.pack("<I", FIT_RULES[rule]))

    # ---- the forward pass

    def _bound(self, x):
        return torch.tanh(x) if self._file["arch"]["bound"] == 1 else F.hardtanh(x)

    def forward(self, images, locations="mean", std=None, generator=None):
        """Classify `images` (n, C, H, W) float32.  locations: "mean" (the
        policy mean, as libram's classify), "sampled" (mean + std * N(0, 1),
        clamped to [-1, 1], with torch's RNG or `generator`), "center", or a
        (T, n, 2) tensor of given locations.  Returns RAMOutput."""
        a = self._file["arch"]
        n, T, H = images.shape[0], a["glimpses"], a["core_hidden"]
        if tuple(images.shape[1:]) != (a["channels"], a["height"], a["width"]):
            raise ValueError("images are %s, the model takes (n, %d, %d, %d)"
                             % (tuple(images.shape), a["channels"], a["height"], a["width"]))
        std = self.std if std is None else float(std)
        h = images.new_zeros(n, H)
        c = images.new_zeros(n, H) if a["core"] == 1 else None
        hs, locs, mus = [h], [], []
        for t in range(T):
            mu = self._bound(self.locator(h.detach() if self.detach_core else h))
            if isinstance(locations, str):
                if locations == "mean":
                    l = mu.detach()
                elif locations == "sampled":
                    eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype,
                                      device=mu.device)
                    l = torch.clamp(mu.detach() + std * eps, -1.0, 1.0)
                elif locations == "center":
                    l = torch.zeros_like(mu)
                else:
                    raise ValueError("locations %r: mean, sampled, center or a tensor"
                                     % locations)
            else:
                l = locations[t].to(mu.dtype).detach()
            rho = self.retina(images, l * self.loc_scale)
            if self.conv is not None:
                # libram lays the layer's outputs out [row][column][filter].
                y = F.relu(self.conv(rho.view(n, -1, a["patch"], a["patch"])))
                rho = y.permute(0, 2, 3, 1).reshape(n, -1)
            hg = F.relu(self.g1(rho))
            hl = F.relu(self.l1(l))
            if self.l2 is None:
                g = F.relu(self.g2(torch.cat([hg, hl], 1)))
            else:
                g = F.relu(self.g2(hg) + self.l2(hl))
            # h_0 = 0: libram skips W_h at the first glimpse.
            pre = self.core_x(g) if t == 0 else self.core_x(g) + self.core_h(h)
            if c is None:
                h = F.relu(pre)
            else:
                i, f, gg, o = pre.chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
                h = torch.sigmoid(o) * torch.tanh(c)
            hs.append(h)
            locs.append(l)
            mus.append(mu)
        log_probs = F.log_softmax(self.classifier(h), 1)
        return RAMOutput(log_probs, torch.stack(locs), torch.stack(mus), torch.stack(hs))

    def loss(self, images, labels, std=None, reward_scale=1.0, discount=1.0, generator=None):
        """libram's training objective (lib/trainer.c) on one batch, with
        sampled locations: NLL + baseline MSE + REINFORCE surrogate, whose
        gradient is libram's (the reward is 1 for a correct argmax, the return
        at step t discount^(T-1-t) times it; the baseline b_t reads h_{t-1}
        detached).  Returns (loss, stats) with stats as libram's
        TrainStats: nll, baseline_mse, reinforce, accuracy, reward."""
        out = self(images, "sampled", std, generator)
        std = self.std if std is None else float(std)
        T = out.locations.shape[0]
        nll = F.nll_loss(out.log_probs, labels)
        correct = (out.log_probs.argmax(1) == labels).float()
        powers = torch.tensor([float(discount) ** (T - 1 - t) for t in range(T)],
                              dtype=correct.dtype, device=correct.device)
        R = powers[:, None] * correct[None, :]  # (T, n)
        prev = out.hidden[:-1].detach()  # h_{t-1} for decision t
        b = self.baseline(prev).squeeze(-1) if self.baseline is not None else torch.zeros_like(R)
        mse = ((b - R) ** 2).mean() if self.baseline is not None else torch.zeros(())
        log_pi = torch.distributions.Normal(out.means, std).log_prob(out.locations).sum(-1)
        reinforce = -reward_scale * ((R - b.detach()) * log_pi).sum(0).mean()
        total = nll + mse + reinforce
        stats = {"loss": float(total), "nll": float(nll), "baseline_mse": float(mse),
                 "reinforce": float(reinforce), "accuracy": float(correct.mean()),
                 "reward": float(correct.mean())}
        return total, stats


def _chunk(chunks, tag):
    for t, _, payload in chunks:
        if t == tag:
            return payload
    return None


def _set_chunk(chunks, tag, payload):
    for i, c in enumerate(chunks):
        if c[0] == tag:
            if payload is None:
                del chunks[i]
            else:
                c[2] = bytes(payload)
            return
    if payload is not None:
        chunks.append([tag, 0, bytes(payload)])


def _conv_of(chunks):
    """The CONV chunk's fields by name among `chunks`, or None."""
    raw = _chunk(chunks, b"CONV")
    return None if raw is None else modelfile.conv_fields(raw)


def _conv_fields(conv, a):
    """RAM's conv= argument as the CONV chunk's fields (kernel 3 and stride
    1 unless given), checked as ram_model_create checks them; None for no
    layer (None, or 0 channels)."""
    if conv is None:
        return None
    if not isinstance(conv, collections.abc.Mapping):
        raise ConversionError("conv: a dict of channels, kernel and stride, not %s"
                              % type(conv).__name__)
    unknown = sorted(set(conv) - set(modelfile.CONV_FIELDS))
    if unknown:
        raise ConversionError("conv: unknown field %s (fields: %s)"
                              % (", ".join(map(repr, unknown)), ", ".join(modelfile.CONV_FIELDS)))
    c = {"channels": 0, "kernel": 3, "stride": 1}
    c.update({k: int(v) for k, v in conv.items()})
    if c["channels"] == 0:
        return None
    if not (1 <= c["channels"] <= 4096 and 1 <= c["kernel"] <= a["patch"]
            and 1 <= c["stride"] <= a["patch"]):
        raise ConversionError("conv: channels 1..4096, kernel and stride 1..patch (%d); got "
                              "%d, %d, %d" % (a["patch"], c["channels"], c["kernel"], c["stride"]))
    return c


def _infer_conv(sd, a, stride):
    """The convolutional layer of a state dict without extra state, from
    conv.weight's shape and g1.weight's width (the stride, when several
    fit, from `stride`); None without conv.weight."""
    if "conv.weight" not in sd:
        if stride is not None:
            raise ConversionError("conv_stride given, but the state dict has no conv.weight")
        return None
    w = tuple(sd["conv.weight"].shape)
    planes, patch = a["channels"] * a["depth"], a["patch"]
    if len(w) != 4 or w[2] != w[3] or w[1] != planes:
        raise ConversionError("conv.weight is %s: (filters, %d planes, k, k) expected (channels "
                              "%d x depth %d)" % (w, planes, a["channels"], a["depth"]))
    channels, kernel = w[0], w[2]
    if not 1 <= kernel <= patch:
        raise ConversionError("conv.weight's %dx%d filters do not fit a patch of %d"
                              % (kernel, kernel, patch))
    if stride is None:
        if "g1.weight" not in sd:
            raise ConversionError("state dict has no 'g1.weight'")
        width = tuple(sd["g1.weight"].shape)[-1]
        fits = [s for s in range(1, patch + 1)
                if channels * ((patch - kernel) // s + 1) ** 2 == width]
        if not fits:
            raise ConversionError("g1.weight's %d columns fit no stride of %d filters of %dx%d "
                                  "over a patch of %d" % (width, channels, kernel, kernel, patch))
        if len(fits) > 1:
            raise ConversionError("strides %s all fit g1.weight's %d columns: give conv_stride="
                                  % (", ".join(map(str, fits)), width))
        stride = fits[0]
    return _conv_fields({"channels": channels, "kernel": kernel, "stride": stride}, a)


def _model_bytes(model):
    """The file bytes of a libram.Model, a path or bytes."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            return f.read()
    if isinstance(model, Model):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "model.ram")
            model.save(path)
            with open(path, "rb") as f:
                return f.read()
    raise TypeError("to_torch takes a libram.Model, a path or the bytes of a model file, not %s"
                    % type(model).__name__)


def to_torch(model, baseline="linear", detach_core=True):
    """A RAM module computing `model` (a libram.Model, a model file's path
    or bytes; a checkpoint's model part), its weights copied.  What the file
    holds besides the weights travels in the module's extra state."""
    f = modelfile.parse(_model_bytes(model))
    _check_computable(f.arch, f.dram, f.sensor, f)
    net = RAM(f.arch, baseline=baseline, detach_core=detach_core, conv=f.conv)
    with torch.no_grad():
        for key, name in RAM.KEYS.items():
            param = _param(net, key)
            if param is None:
                continue
            param.copy_(torch.from_numpy(f.tensors[name].reshape(param.shape)))
    net._file = {"arch": dict(f.arch), "arch_tail": f.arch_tail, "kind": f.kind,
                 "chunks": [list(c) for c in f.chunks],
                 "weights_crc": zlib.crc32(f.weight_bytes())}
    return net


def _check_computable(arch, dram=None, sensor=0, f=None):
    """ConversionError for a model the RAM module does not compute: DRAM's
    parts (the multiplicative form, two core layers, a context network,
    several objects), the soft sensor, and a retina that samples its cells
    or reads contrast, and zoom as an action (file f's SAMP, CTRS and ZOOM
    chunks), which libram.Model runs."""
    parts = []
    if f is not None and f.chunk(b"SAMP") is not None:
        parts.append("cell samples")
    if f is not None and f.chunk(b"CTRS") is not None:
        parts.append("contrast cells")
    if f is not None and f.chunk(b"ZOOM") is not None:
        parts.append("zoom")
    if arch["form"] not in (0, 1):
        parts.append("the multiplicative glimpse form")
    if dram is not None:
        if dram["core_layers"] > 1:
            parts.append("two core layers")
        if dram["context"]:
            parts.append("a context network")
        if dram["objects"] > 1:
            parts.append("%d objects" % dram["objects"])
    if sensor:
        parts.append("the soft sensor")
    if parts:
        raise ConversionError("libram.torch's module computes RAM with the hard sensor, the "
                              "additive or concat form and one core layer; this model has %s: "
                              "use libram.Model" % ", ".join(parts))


def _param(net, key):
    mod, attr = key.split(".")
    m = getattr(net, mod)
    return None if m is None else getattr(m, attr)


def _state_of(obj):
    """(state dict of tensors, extra state or None) of a module or mapping."""
    if isinstance(obj, nn.Module):
        obj = obj.state_dict()
    if not isinstance(obj, collections.abc.Mapping):
        raise ConversionError("expected a torch.nn.Module or a state dict, got %s"
                              % type(obj).__name__)
    extra = obj.get("_extra_state")
    return {k: v for k, v in obj.items() if k != "_extra_state"}, extra


def _infer_arch(sd, overrides):
    """The ARCH fields of a libram-layout state dict without extra state:
    sizes from its shapes, the rest from `overrides` or libram's defaults."""
    def shape(key):
        if key not in sd:
            hint = (" (a kevinzakka checkpoint or state dict: layout \"kevinzakka\")"
                    if "model_state" in sd or "sensor.fc1.weight" in sd else "")
            raise ConversionError("state dict has no %r%s (libram layout: %s)"
                                  % (key, hint, ", ".join(RAM.KEYS)))
        return tuple(sd[key].shape)
    a = {"channels": 1, "height": 28, "width": 28, "patch": 8, "depth": 1, "scale": 2.0,
         "glimpses": 6, "bound": 1, "loc_std": 0.17, "loc_range_pixels": -1.0,
         "init_scale": 0.1, "seed": 1}
    a["glimpse_hidden"] = shape("g1.weight")[0]
    a["loc_hidden"] = shape("l1.weight")[0]
    a["glimpse_out"] = shape("g2.weight")[0]
    a["core_hidden"] = shape("core_h.weight")[1]
    a["classes"] = shape("classifier.weight")[0]
    a["form"] = 0 if "l2.weight" in sd else 1
    rows = shape("core_x.weight")[0]
    if rows == a["core_hidden"]:
        a["core"] = 0
    elif rows == 4 * a["core_hidden"]:
        a["core"] = 1
    else:
        raise ConversionError("core_x.weight has %d rows: core_hidden %d (RNN) or 4 x %d "
                              "(LSTM) expected" % (rows, a["core_hidden"], a["core_hidden"]))
    return _apply(a, overrides)


def _apply(a, overrides):
    a = dict(a)
    for k, v in overrides.items():
        if k not in a:
            raise ConversionError("unknown architecture field %r (fields: %s)"
                                  % (k, ", ".join(n for n, _ in modelfile.ARCH_FIELDS)))
        names = {"form": _FORMS, "core": _CORES, "bound": _BOUNDS}.get(k)
        if names and isinstance(v, str):
            if v not in names:
                raise ConversionError("%s %r: one of %s" % (k, v, ", ".join(names)))
            v = names.index(v)
        a[k] = v
    for name, code in modelfile.ARCH_FIELDS:
        a[name] = float(np.float32(a[name])) if code == "f" else int(a[name])
    if a["loc_range_pixels"] < 0:
        a["loc_range_pixels"] = float(np.float32(max(0.0, 0.5 * min(a["height"],
                                                                    a["width"]) - 1.0)))
    return a


def model_file(obj, layout="libram", **arch):
    """The libram ModelFile (libram.modelfile) of a module or state dict;
    from_torch() loads its bytes.  ConversionError names what does not fit."""
    if layout == "kevinzakka":
        from . import kevinzakka
        return kevinzakka.model_file(obj, **arch)
    if layout != "libram":
        raise ConversionError("layout %r: libram or kevinzakka" % layout)
    sd, extra = _state_of(obj)
    arch = dict(arch)
    stride = arch.pop("conv_stride", None)
    if extra is not None:
        if not isinstance(extra, dict) or extra.get("format") != "libram":
            raise ConversionError("the state dict's extra state is not libram's")
        a = _apply(extra["arch"], arch)
        chunks, tail, kind = [list(c) for c in extra["chunks"]], extra["arch_tail"], extra["kind"]
        conv = _conv_of(chunks)
        if stride is not None and (conv is None or conv["stride"] != stride):
            raise ConversionError("conv_stride: the extra state says the layer (%s)" % conv)
    else:
        a = _infer_arch(sd, arch)
        conv = _infer_conv(sd, a, stride)
        chunks, tail, kind = None, b"", 0
        if conv is not None:
            chunks = [[b"ARCH", 0, None], [b"WGHT", 0, None],
                      [b"CONV", 0, modelfile.conv_payload(conv)]]
    want = modelfile.shapes(a, conv=conv)
    known = {k for k, name in RAM.KEYS.items() if name in want} | {"baseline.weight",
                                                                    "baseline.bias"}
    unknown = sorted(set(sd) - known)
    if unknown:
        raise ConversionError("keys libram's model has no place for: %s" % ", ".join(unknown))
    # A file with a CONV chunk lists DRAM's tensors too, empty in RAM.
    tensors = {name: np.zeros(want[name], np.float32) for name in modelfile.DRAM_TENSORS
               if name in want}
    for key, name in RAM.KEYS.items():
        if name not in want:
            continue
        rows, cols = want[name]
        if rows == 0:  # the concat form's empty l2
            if key in sd and sd[key].numel():
                raise ConversionError("%s: the concat form has no such weights" % key)
            tensors[name] = np.zeros((rows, cols), np.float32)
            continue
        if key not in sd:
            raise ConversionError("state dict has no %r" % key)
        t = sd[key]
        got = tuple(t.shape)
        expect = (rows,) if key.endswith(".bias") else (rows, cols)
        if key == "conv.weight":
            expect = (rows, a["channels"] * a["depth"], conv["kernel"], conv["kernel"])
        if got != expect:
            raise ConversionError("%s is %s, the architecture implies %s (%s)"
                                  % (key, got, expect, _describe(a, conv)))
        v = t.detach().to("cpu", torch.float32).numpy().reshape(rows, cols)
        if not np.all(np.isfinite(v)):
            raise ConversionError("%s holds NaN or Inf (libram refuses non-finite weights)" % key)
        tensors[name] = v
    f = modelfile.ModelFile(a, tensors, chunks, tail, kind)
    if extra is not None and extra.get("weights_crc") != zlib.crc32(f.weight_bytes()):
        # A checkpoint's optimizer moments, average and baseline belong to
        # the weights it was saved with, not to weights trained since.
        f.chunks = [c for c in f.chunks if c[0] not in _TRAINING_CHUNKS]
    return f


def _describe(a, conv=None):
    return ("channels %d, %dx%d, patch %d, depth %d, %s form, %s core, glimpse_hidden %d, "
            "loc_hidden %d, glimpse_out %d, core_hidden %d, classes %d%s"
            % (a["channels"], a["height"], a["width"], a["patch"], a["depth"],
               _FORMS[a["form"]] if a["form"] < 2 else a["form"],
               _CORES[a["core"]] if a["core"] < 2 else a["core"], a["glimpse_hidden"],
               a["loc_hidden"], a["glimpse_out"], a["core_hidden"], a["classes"],
               "" if conv is None else ", a convolutional layer of %d %dx%d filters at stride %d"
               % (conv["channels"], conv["kernel"], conv["kernel"], conv["stride"])))


def from_torch(obj, layout="libram", **arch):
    """A libram.Model from a RAM module or a state dict.  layout "libram":
    RAM's keys; the architecture comes from the extra state, or, without
    it, from the shapes plus `arch` (ARCH fields such as height=, width=,
    patch=, depth=, scale=, glimpses=, bound=, loc_std=, loc_range_pixels=;
    libram's defaults otherwise; conv_stride= where a conv.weight's stride
    is not told by g1.weight's width).  layout "kevinzakka": that project's keys
    and conventions (libram.kevinzakka.model_file).  ConversionError for
    what libram cannot represent or what does not fit; libram.Error if
    libram itself refuses the result."""
    return Model.from_bytes(model_file(obj, layout, **arch).to_bytes())
