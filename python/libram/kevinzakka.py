"""The state-dict layout and conventions of kevinzakka/recurrent-visual-attention
(a PyTorch RAM), mapped onto libram's model.

    f = kevinzakka.model_file(torch.load("ram_6_8x8_2_model_best.pth.tar"),
                              glimpses=6, patch=8, depth=1, scale=2, normalize=(0.1307, 0.3081))
    model = libram.Model.from_bytes(f.to_bytes())

Its keys: sensor.fc1 (glimpse, D -> h_g), sensor.fc2 (location, 2 -> h_l),
sensor.fc3 and sensor.fc4 (h_g, h_l -> h_g + h_l, summed: libram's
additive form), rnn.i2h and rnn.h2h (a ReLU RNN, a bias each: libram's one
bias is their sum), locator.fc (H -> 2, tanh), classifier.fc, baseliner.fc
(dropped: libram keeps its baseline in the policy, not in model files).
What cannot be mapped exactly, and what it costs, is in docs/python.md
("PyTorch bridge"); forward() is a re-implementation of its forward pass,
written from its code, to measure that.

The retina, patch, depth, scale and glimpse count are that project's
command-line options, not in its checkpoints: give them (its defaults are
patch 8, 1 patch, scale 1 in config.py; its committed MNIST model used 6
glimpses, 8x8, 1 patch, scale 2).
"""

import collections
import collections.abc

import numpy as np
import torch
import torch.nn.functional as F

from . import modelfile

__all__ = ["KEYS", "model_file", "forward", "state_dict_of"]

#: Its keys -> what they become in libram (None: dropped).
KEYS = collections.OrderedDict([
    ("sensor.fc1.weight", "g1_w"), ("sensor.fc1.bias", "g1_b"),
    ("sensor.fc2.weight", "l1_w"), ("sensor.fc2.bias", "l1_b"),
    ("sensor.fc3.weight", "g2_w"), ("sensor.fc3.bias", "g2_b"),
    ("sensor.fc4.weight", "l2_w"), ("sensor.fc4.bias", "l2_b"),
    ("rnn.i2h.weight", "core_wx"), ("rnn.i2h.bias", "core_b"),
    ("rnn.h2h.weight", "core_wh"), ("rnn.h2h.bias", "core_b"),
    ("locator.fc.weight", "loc_w"), ("locator.fc.bias", "loc_b"),
    ("classifier.fc.weight", "cls_w"), ("classifier.fc.bias", "cls_b"),
    ("baseliner.fc.weight", None), ("baseliner.fc.bias", None)])


def _error(msg):
    from .torch import ConversionError
    return ConversionError(msg)


def state_dict_of(obj):
    """The model's state dict in a module, a state dict, or that project's
    checkpoint ({"model_state": ..., "optim_state": ..., "epoch": ...})."""
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    if isinstance(obj, collections.abc.Mapping):
        if "model_state" in obj and isinstance(obj["model_state"], collections.abc.Mapping):
            return obj["model_state"]
        return obj
    raise _error("expected a kevinzakka checkpoint, state dict or module, got %s"
                 % type(obj).__name__)


def _array(sd, key):
    if key not in sd:
        raise _error("not a kevinzakka RAM state dict: no %r (its keys: %s)"
                     % (key, ", ".join(k for k in KEYS)))
    t = sd[key]
    if not isinstance(t, torch.Tensor):
        raise _error("%s is a %s, not a tensor" % (key, type(t).__name__))
    v = t.detach().to("cpu", torch.float32).numpy()
    if not np.all(np.isfinite(v)):
        raise _error("%s holds NaN or Inf (libram refuses non-finite weights)" % key)
    return v


def model_file(obj, height=28, width=None, glimpses=6, patch=8, depth=1, scale=2,
               loc_std=0.17, normalize=None, **unused):
    """A libram ModelFile of a kevinzakka RAM.  height, width: its images
    (square: its retina scales x by the height too); glimpses, patch, depth
    (its num_patches), scale (its glimpse_scale, an integer): its options;
    loc_std: its std (0.17 in its committed model); normalize: (mean, std)
    of the input normalisation it was trained with (its loader's is
    (0.1307, 0.3081)), folded into the first glimpse layer so that libram
    takes the raw pixels (exact where a glimpse lies inside the image, see
    docs/python.md), or None to take the images as it did."""
    if unused:
        raise _error("kevinzakka layout: no option %s" % ", ".join(sorted(unused)))
    width = height if width is None else width
    if height != width:
        raise _error("kevinzakka layout: its retina scales both coordinates by the image "
                     "height, so only square images map onto libram (%dx%d given)"
                     % (height, width))
    if int(scale) != scale or scale < 1:
        raise _error("kevinzakka layout: scale %r: its glimpse_scale is an integer >= 1" % scale)
    scale = int(scale)
    sd = state_dict_of(obj)
    if "locator.fc_lt.weight" in sd or (
            "locator.fc.weight" in sd and tuple(sd["locator.fc.weight"].shape)[0] != 2):
        raise _error("kevinzakka layout: this locator has a hidden layer (locator.fc -> ReLU -> "
                     "locator.fc_lt, its code from commit 7a0ba28 on); libram's location network is "
                     "one linear layer and cannot represent it")
    if "sensor.fc1.weight" not in sd:
        hint = " (a libram-layout state dict: layout \"libram\")" if "g1.weight" in sd else ""
        raise _error("not a kevinzakka RAM state dict: no 'sensor.fc1.weight'%s" % hint)
    unknown = sorted(k for k in sd if k not in KEYS)
    if unknown:
        raise _error("kevinzakka layout: unexpected keys %s" % ", ".join(unknown))
    w = {k: _array(sd, k) for k in KEYS}
    hg, d = w["sensor.fc1.weight"].shape
    hl = w["sensor.fc2.weight"].shape[0]
    g = w["sensor.fc3.weight"].shape[0]
    h = w["rnn.h2h.weight"].shape[0]
    k = w["classifier.fc.weight"].shape[0]
    if d % (depth * patch * patch):
        raise _error("sensor.fc1.weight has %d columns, not a multiple of depth %d x patch %d^2: "
                     "give its patch size and patch count" % (d, depth, patch))
    channels = d // (depth * patch * patch)
    want = {"sensor.fc1.weight": (hg, d), "sensor.fc1.bias": (hg,),
            "sensor.fc2.weight": (hl, 2), "sensor.fc2.bias": (hl,),
            "sensor.fc3.weight": (g, hg), "sensor.fc3.bias": (g,),
            "sensor.fc4.weight": (g, hl), "sensor.fc4.bias": (g,),
            "rnn.i2h.weight": (h, g), "rnn.i2h.bias": (h,),
            "rnn.h2h.weight": (h, h), "rnn.h2h.bias": (h,),
            "locator.fc.weight": (2, h), "locator.fc.bias": (2,),
            "classifier.fc.weight": (k, h), "classifier.fc.bias": (k,),
            "baseliner.fc.weight": (1, h), "baseliner.fc.bias": (1,)}
    for key, shape in want.items():
        if w[key].shape != shape:
            raise _error("%s is %s, %s expected (h_g %d, h_l %d, glimpse %d, hidden %d, "
                         "classes %d)" % (key, w[key].shape, shape, hg, hl, g, h, k))
    # Its glimpse is [scale][channel][row][col] (torch.cat on dim 1),
    # libram's [channel][scale][row][col]: the same columns, reordered.
    g1 = (w["sensor.fc1.weight"].reshape(hg, depth, channels, patch * patch)
          .transpose(0, 2, 1, 3).reshape(hg, d))
    g1b = w["sensor.fc1.bias"]
    if normalize is not None:
        m, s = (np.float64(v) for v in normalize)
        g1 = g1.astype(np.float64)
        g1b = g1b - (m / s) * g1.sum(1)
        g1 = g1 / s
    col = lambda v: np.asarray(v, np.float32).reshape(-1, 1)
    tensors = {"g1_w": np.asarray(g1, np.float32), "g1_b": col(g1b),
               "l1_w": w["sensor.fc2.weight"], "l1_b": col(w["sensor.fc2.bias"]),
               "g2_w": w["sensor.fc3.weight"], "g2_b": col(w["sensor.fc3.bias"]),
               "l2_w": w["sensor.fc4.weight"], "l2_b": col(w["sensor.fc4.bias"]),
               "core_wx": w["rnn.i2h.weight"], "core_wh": w["rnn.h2h.weight"],
               "core_b": col(w["rnn.i2h.bias"] + w["rnn.h2h.bias"]),
               "loc_w": w["locator.fc.weight"], "loc_b": col(w["locator.fc.bias"]),
               "cls_w": w["classifier.fc.weight"], "cls_b": col(w["classifier.fc.bias"])}
    # loc_range_pixels 0: +-1 is the image edge, as its (l + 1) * H / 2.
    arch = {"channels": channels, "height": height, "width": width, "patch": patch,
            "depth": depth, "scale": float(scale), "form": 0, "glimpse_hidden": hg,
            "loc_hidden": hl, "glimpse_out": g, "core_hidden": h, "core": 0,
            "glimpses": glimpses, "classes": k, "bound": 1,
            "loc_std": float(np.float32(loc_std)), "loc_range_pixels": 0.0,
            "init_scale": float(np.float32(0.1)), "seed": 1}
    return modelfile.ModelFile(arch, tensors)


def _retina(x, l, patch, depth, scale, centre):
    """Its retina: patch k of side patch*scale^k whose top-left pixel is
    int((l + 1) H / 2) - side // 2 (centre "floor", its code) or libram's
    floor((l + 1) W / 2 - side / 2 + 1/2) ("round"), zeros outside,
    average-pooled to patch x patch, concatenated scale-major."""
    n, c, hgt, wid = x.shape
    idx = torch.arange(n)
    parts, side = [], patch
    for _ in range(depth):
        if centre == "floor":
            tl = (0.5 * ((l + 1.0) * hgt)).long() - side // 2
        else:
            tl = torch.floor((l.double() + 1.0) * hgt * 0.5 - side * 0.5 + 0.5).long()
        ar = torch.arange(side)
        cols, rows = tl[:, 0:1] + ar, tl[:, 1:2] + ar
        inside = (((rows >= 0) & (rows < hgt))[:, :, None] & ((cols >= 0) & (cols < wid))[:, None])
        win = x[idx[:, None, None], :, rows.clamp(0, hgt - 1)[:, :, None],
                cols.clamp(0, wid - 1)[:, None, :]]
        win = torch.where(inside[..., None], win, torch.zeros(()))
        win = win.permute(0, 3, 1, 2)
        parts.append(win if side == patch else F.avg_pool2d(win, side // patch))
        side = int(scale * side)
    return torch.cat(parts, 1).reshape(n, -1)


def forward(state, images, glimpses=6, patch=8, depth=1, scale=2, l0=None, centre="floor"):
    """Its forward pass with mean locations (l_t = mu_t = tanh(fc(h_t)); it
    samples around mu_t even at test time), re-implemented from its code:
    log class probabilities (n, K) and the locations (T, n, 2).  images are
    what it takes (normalised if it was trained so); l0: the first location
    (n, 2); it draws it uniformly from [-1, 1]^2; None: libram's first
    location tanh(locator.fc.bias), which h_0 = 0 gives libram.  centre:
    "floor" (its retina) or "round" (libram's)."""
    sd = state_dict_of(state)
    p = {k: v.detach().float() for k, v in sd.items()}
    lin = lambda name, v: F.linear(v, p[name + ".weight"], p[name + ".bias"])
    n = images.shape[0]
    h = images.new_zeros(n, p["rnn.h2h.weight"].shape[0])
    l = torch.tanh(p["locator.fc.bias"]).expand(n, 2) if l0 is None else l0
    locs = []
    for _ in range(glimpses):
        locs.append(l)
        phi = _retina(images, l, patch, depth, scale, centre)
        g = F.relu(lin("sensor.fc3", F.relu(lin("sensor.fc1", phi)))
                   + lin("sensor.fc4", F.relu(lin("sensor.fc2", l))))
        h = F.relu(lin("rnn.i2h", g) + lin("rnn.h2h", h))
        l = torch.tanh(lin("locator.fc", h))
    return F.log_softmax(lin("classifier.fc", h), 1), torch.stack(locs)
