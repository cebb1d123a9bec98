#!/usr/bin/python3
"""torch_ram.py: the PyTorch peer of libram's benchmark (bench/ram-bench.c).

The same Recurrent Attention Model as libram (Mnih et al. 2014), layer for
layer and with the same work per step, written the way one would write it in
PyTorch when speed matters, so that ram-bench's numbers have an honest
reference:

  glimpse sensor  `depth` squares of side patch*2^k centred on l, zero outside
                  the image, average-pooled to patch x patch; rho is
                  [channel][scale][row][col], D = C*depth*patch^2.  The pixel
                  centre of l = (x, y) in [-1, 1]^2 is ((x+1)/2*W, (y+1)/2*H)
                  and a square starts at floor(centre - side/2 + 1/2), exactly
                  as lib/glimpse.c.  Extracted for the whole batch at once
                  (see RETINAS), never in a Python loop over samples.
  glimpse net     h_g = ReLU(W1 rho + b), h_l = ReLU(W2 l + b),
                  g = ReLU(W3 h_g + W4 h_l + b)   (additive form; libram's two
                  biases of W3 and W4 only ever appear as their sum: one here)
  core            h_t = ReLU(Wx g_t + b + Wh h_{t-1}), h_0 = 0 (libram's Wh has
                  no bias of its own and is skipped at t = 0, where h = 0)
  location net    mu_t = tanh(W h_t + b), l_0 from h_0; training samples
                  l_t = clamp(mu_t + 0.15 eps, -1, 1) (no gradient through l),
                  inference uses l_t = mu_t
  baseline        b_t = W h_t.detach() + b
  classifier      log_softmax(W h_T + b), 10 classes
  loss            NLL + mean_{i,t} (b_t - R)^2
                  - mean_i sum_t (R_i - b_t,i) log N(l_t | mu_t, 0.15^2),
                  R = [argmax correct]; the REINFORCE term sees h_t.detach()
                  (libram's default detach_core), so it trains the location
                  net only.  Adam (lr 1e-3), global-norm clipping at 5.

Measured (samples/s; median, min, max of --reps after --warmup repetitions of
~0.5 s, ~0.15 s with --quick): train_b32, train_b128 (zero_grad, forward,
backward, clip, step), infer_b1 (also as infer_b1_us), infer_b256, on random
images and labels.  The setup used for each (glimpse method, TorchScript
variant, threads) is the fastest measured with --explore; the "setup" string
of the output says what it is and what the alternatives gave.

Usage:
  torch_ram.py --config mnist --threads 1 [--reps 5] [--warmup 2] [--quick] [--json]
  torch_ram.py --check      # glimpse methods = libram's sensor, and 300 training
                            # steps on a learnable toy task (exit 1 if no learning)
  torch_ram.py --config NAME --explore [--cpu-time] [--glimpse m1,m2,...]
                            # time the alternatives round-robin: glimpse methods,
                            # eager / jit.script / freeze / optimize_for_inference,
                            # eager vs scripted training, Adam foreach

Run it with Debian's /usr/bin/python3 (python3-torch 1.13.1, which reports
torch.__version__ 1.13.0a0).  It prints timings and asserts nothing about them.
"""

import argparse
import copy
import json
import math
import os
import resource
import statistics
import sys
import time
from typing import List, Optional, Tuple


def _threads_from_argv() -> str:
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# Debian's torch does its GEMMs in libblas.so.3 (OpenBLAS here), whose own
# thread pool is not governed by torch.set_num_threads: pin it (and OpenMP) to
# --threads before torch loads, unless the caller set them.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads_from_argv())
# Idle OpenMP workers sleep rather than spin.  With 2 threads on a 2-core
# machine that is also running other work, GOMP's default spinning made every
# parallel region wait for a descheduled thread: mnist train_b128 at 2 threads
# went 241 (OMP_WAIT_POLICY=active) / ~900 (default) -> ~3900 samples/s
# (passive), infer_b256 561 / ~1200 -> ~18000.  Set it yourself to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

CONFIGS = {
    "mnist": dict(c=1, h=28, w=28, patch=8, depth=1, glimpses=6),
    "translated60": dict(c=1, h=60, w=60, patch=12, depth=3, glimpses=8),
    "cluttered100": dict(c=1, h=100, w=100, patch=12, depth=4, glimpses=8),
    "image512": dict(c=3, h=512, w=512, patch=12, depth=3, glimpses=8),
}
GLIMPSE_HIDDEN, LOC_HIDDEN, GLIMPSE_OUT, CORE_HIDDEN, CLASSES = 128, 128, 256, 256, 10
STD = 0.15
LR = 1e-3
CLIP = 5.0


# ---------------------------------------------------------------------------
# Glimpse sensors.  All return rho (N, D) for images (N, C, H, W) and l (N, 2)
# and agree with lib/glimpse.c up to float rounding (--check compares them with
# a literal transcription of it and with libram itself when build/libram.so
# loads).  Each has prepare(x), run once per batch (pads the images or makes
# views of them), and forward(prep, nbase, l) per glimpse.
# The sensor is not differentiable (images need no gradient, l is detached),
# so all this runs outside autograd's bookkeeping in practice.
# ---------------------------------------------------------------------------

class Retina(nn.Module):
    def __init__(self, c: int, h: int, w: int, patch: int, depth: int, pad: int):
        super().__init__()
        self.c, self.h, self.w, self.patch, self.depth = c, h, w, patch, depth
        sides = [patch * 2 ** k for k in range(depth)]
        S = sides[-1]
        for s in sides:
            # Every smaller square is then the centred crop of the largest one
            # (floor(a + m) = floor(a) + m for integer m).
            if (S - s) % 2:
                raise ValueError("patch must be even when depth > 1")
        self.S = S
        self.sides = sides
        self.offs = [(S - s) // 2 for s in sides]
        self.pools = [2 ** k for k in range(depth)]
        self.D = c * depth * patch * patch
        self.pad = pad
        self.hp, self.wp = h + 2 * pad, w + 2 * pad
        # top-left = floor(l * extent/2 + extent/2 - S/2 + 1/2) (+ pad, in the
        # padded images), (x, y) order
        self.register_buffer("scale", torch.tensor([w / 2.0, h / 2.0]))
        self.register_buffer("shift", torch.tensor([w / 2.0 - S / 2.0 + 0.5 + pad,
                                                    h / 2.0 - S / 2.0 + 0.5 + pad]))
        self.register_buffer("ar", torch.arange(S))

    def top_left(self, l: Tensor) -> Tensor:
        """(N, 2) integer top-left corners of the largest square."""
        if self.pad > 0:
            # l in [-1, 1] and pad > S/2 keep this > 0, where truncation is floor
            return torch.addcmul(self.shift, l, self.scale).long()
        return torch.floor(torch.addcmul(self.shift, l, self.scale)).long()

    def scales(self, patch: Tensor) -> Tensor:
        """(N, C, S, S) largest square -> rho (N, D)."""
        n = patch.shape[0]
        if self.depth == 1:
            return patch.reshape(n, self.D)
        parts: List[Tensor] = []
        for k in range(self.depth):
            o = self.offs[k]
            s = self.sides[k]
            crop = patch[:, :, o:o + s, o:o + s]
            if self.pools[k] > 1:
                crop = F.avg_pool2d(crop, self.pools[k])
            parts.append(crop)
        return torch.stack(parts, 2).reshape(n, self.D)


class RetinaPadGather(Retina):
    """Pad the batch once by S/2+1 with zeros, then one flat gather (index_select) per glimpse
    with flat indices nbase + (y0+pad)*Wp + (x0+pad) + [c*Hp*Wp + r*Wp + q]."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        S = patch * 2 ** (depth - 1)
        super().__init__(c, h, w, patch, depth, S // 2 + 1)
        ar = torch.arange(S)
        grid = (torch.arange(c).view(c, 1, 1) * (self.hp * self.wp)
                + ar.view(1, S, 1) * self.wp + ar.view(1, 1, S))
        self.register_buffer("grid", grid.unsqueeze(0))  # (1, C, S, S)
        self.register_buffer("stride", torch.tensor([1, self.wp]))

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        p = self.pad
        xp = F.pad(x, [p, p, p, p])
        n = x.shape[0]
        nbase = torch.arange(n) * (self.c * self.hp * self.wp)
        return xp.reshape(-1), nbase

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        start = (self.top_left(l) * self.stride).sum(1) + nbase
        idx = start.view(-1, 1, 1, 1) + self.grid
        patch = src.index_select(0, idx.view(-1)).view(idx.shape)
        return self.scales(patch)


class RetinaPadUnfold(Retina):
    """Pad the batch once by S/2+1 with zeros and view it as all its S x S
    windows (two Tensor.unfold: no copy); each glimpse is then one advanced
    index windows[n, :, y0, x0] -> (N, C, S, S).  No per-pixel index tensor."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        S = patch * 2 ** (depth - 1)
        super().__init__(c, h, w, patch, depth, S // 2 + 1)

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        p = self.pad
        xp = F.pad(x, [p, p, p, p])
        return xp.unfold(2, self.S, 1).unfold(3, self.S, 1), torch.arange(x.shape[0])

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        tl = self.top_left(l)
        return self.scales(src[nbase, :, tl[:, 1], tl[:, 0]])


class RetinaClampUnfold(Retina):
    """No padding of the images: cut the S x S window at the top-left clamped
    into the image (unfold view + advanced index), then pad that window by
    S/2+1 and cut the true window out of it (unfold + index again); the
    zeros outside the image come from the small pad.  Cost per glimpse only."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        super().__init__(c, h, w, patch, depth, 0)
        if patch * 2 ** (depth - 1) > min(h, w):
            raise ValueError("clamp_unfold needs the largest square inside the image")
        S = self.S
        self.q = S // 2 + 1
        self.register_buffer("lo", torch.zeros(1, 2, dtype=torch.long))
        self.register_buffer("hi", torch.tensor([w - S, h - S]).view(1, 2))

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return x.unfold(2, self.S, 1).unfold(3, self.S, 1), torch.arange(x.shape[0])

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        tl = self.top_left(l)
        tc = torch.clamp(tl, self.lo, self.hi)
        win = src[nbase, :, tc[:, 1], tc[:, 0]]  # (N, C, S, S), inside the image
        q = self.q
        d = tl - tc + q
        big = F.pad(win, [q, q, q, q]).unfold(2, self.S, 1).unfold(3, self.S, 1)
        return self.scales(big[nbase, :, d[:, 1], d[:, 0]])


class RetinaMaskGather(Retina):
    """No padding: clamp the row/column indices into the image, gather them
    (index_select on the flat images) and zero what fell outside with a
    (N, 1, S, S) mask.  Touches only the glimpse's pixels, so its cost does not
    grow with the image."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        super().__init__(c, h, w, patch, depth, 0)
        self.register_buffer("lo", torch.zeros(1, 2, 1, dtype=torch.long))
        self.register_buffer("hi", torch.tensor([w - 1, h - 1]).view(1, 2, 1))
        self.register_buffer("cbase", (torch.arange(c) * (h * w)).view(1, c, 1, 1))

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        n = x.shape[0]
        nbase = (torch.arange(n) * (self.c * self.h * self.w)).view(n, 1, 1, 1) + self.cbase
        return x.reshape(-1), nbase

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        rc = self.top_left(l).unsqueeze(2) + self.ar  # (N, 2, S): columns, rows
        rcc = torch.clamp(rc, self.lo, self.hi)
        inside = rc == rcc
        idx = nbase + (rcc[:, 1].unsqueeze(2) * self.w + rcc[:, 0].unsqueeze(1)).unsqueeze(1)
        mask = (inside[:, 1].unsqueeze(2) & inside[:, 0].unsqueeze(1)).unsqueeze(1)
        patch = src.index_select(0, idx.view(-1)).view(idx.shape) * mask
        return self.scales(patch)


class RetinaPadTake(RetinaPadGather):
    """As pad_gather but with torch.take (measured slower than index_select)."""

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        start = (self.top_left(l) * self.stride).sum(1) + nbase
        return self.scales(torch.take(src, start.view(-1, 1, 1, 1) + self.grid))


class RetinaPadIndex(Retina):
    """Pad once, then advanced indexing xp[n, :, rows, cols] (N, S, S, C)."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        S = patch * 2 ** (depth - 1)
        super().__init__(c, h, w, patch, depth, S // 2 + 1)

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        p = self.pad
        return F.pad(x, [p, p, p, p]), torch.arange(x.shape[0])

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        rc = self.top_left(l).unsqueeze(2) + self.ar
        cols, rows = rc[:, 0], rc[:, 1]
        patch = src[nbase.view(-1, 1, 1), :, rows.unsqueeze(2), cols.unsqueeze(1)]
        return self.scales(patch.permute(0, 3, 1, 2))


class RetinaGridSample(Retina):
    """F.grid_sample(mode='nearest', padding_mode='zeros') on the S x S pixel
    centres of the largest square (exact: it samples pixel centres)."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        super().__init__(c, h, w, patch, depth, 0)
        # pixel i has normalised centre (2i+1)/extent - 1 (align_corners=False)
        gscale = torch.tensor([2.0 / w, 2.0 / h]).view(1, 2, 1)
        gshift = torch.tensor([1.0 / w - 1.0, 1.0 / h - 1.0]).view(1, 2, 1)
        self.register_buffer("gscale", gscale)
        self.register_buffer("gar", self.ar.float() * gscale + gshift)  # (1, 2, S)

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return x, torch.empty(0)

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        tl = torch.floor(torch.addcmul(self.shift, l, self.scale))
        rc = torch.addcmul(self.gar, tl.unsqueeze(2), self.gscale)  # (N, 2, S)
        n = rc.shape[0]
        S = self.S
        gx = rc[:, 0].view(n, 1, S).expand(n, S, S)
        gy = rc[:, 1].view(n, S, 1).expand(n, S, S)
        grid = torch.stack([gx, gy], 3)
        patch = F.grid_sample(src, grid, mode="nearest", padding_mode="zeros",
                              align_corners=False)
        return self.scales(patch)


class RetinaGridBilinear(Retina):
    """One F.grid_sample(mode='bilinear', padding_mode='zeros') per glimpse for
    all scales: scale 0 at its pixel centres (nearest when depth = 1), every
    larger scale at the centres of its 2x2 pixel blocks, where bilinear
    weights are 1/4 each, i.e. the 2x2 averages (zeros outside the image, as
    in libram); avg_pool2d finishes the scales wider than 2x.  The same
    pixels and sums as gathering the S x S square and pooling it, without
    writing that square out first.  Equal to the others up to the rounding of
    float32 grid coordinates (~1e-5)."""

    def __init__(self, c: int, h: int, w: int, patch: int, depth: int):
        super().__init__(c, h, w, patch, depth, 0)
        rel: List[Tensor] = []
        counts: List[int] = []
        for k in range(depth):
            o, s = self.offs[k], self.sides[k]
            if k == 0:  # pixel centres o + j (+ 1/2 in pixel units)
                pos = 2.0 * o + 2.0 * torch.arange(s, dtype=torch.float64) + 1.0
            else:  # midpoints of pixels o + 2m and o + 2m + 1
                pos = 2.0 * o + 4.0 * torch.arange(s // 2, dtype=torch.float64) + 2.0
            gx, gy = pos / w - 1.0, pos / h - 1.0
            n = pos.numel()
            grid = torch.stack([gx.view(1, n).expand(n, n), gy.view(n, 1).expand(n, n)], 2)
            rel.append(grid.reshape(n * n, 2))
            counts.append(n)
        self.counts = counts
        self.register_buffer("rel", torch.cat(rel).float().unsqueeze(0))  # (1, M, 2)
        self.register_buffer("gscale", torch.tensor([2.0 / w, 2.0 / h]))
        self.mode = "nearest" if depth == 1 else "bilinear"

    @torch.jit.export
    def prepare(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return x, torch.empty(0)

    def forward(self, src: Tensor, nbase: Tensor, l: Tensor) -> Tensor:
        n = l.shape[0]
        tl = torch.floor(torch.addcmul(self.shift, l, self.scale))  # (N, 2)
        grid = torch.addcmul(self.rel, tl.unsqueeze(1), self.gscale)  # (N, M, 2)
        out = F.grid_sample(src, grid.unsqueeze(1), mode=self.mode, padding_mode="zeros",
                            align_corners=False).view(n, self.c, -1)  # (N, C, M)
        if self.depth <= 2:
            return out.reshape(n, self.D)
        P = self.patch
        parts: List[Tensor] = [out[:, :, :2 * P * P]]
        start = 2 * P * P
        for k in range(2, self.depth):
            m = self.counts[k]
            blk = out[:, :, start:start + m * m].reshape(n, self.c, m, m)
            parts.append(F.avg_pool2d(blk, self.pools[k - 1]).reshape(n, self.c, P * P))
            start += m * m
        return torch.cat(parts, 2).reshape(n, self.D)


SHORT = {
    "pad_unfold": "zero-pad the batch once by S/2+1, view all S x S windows with two "
                  "Tensor.unfold (no copy), one advanced index windows[n, :, y0, x0] per glimpse,"
                  " crops + F.avg_pool2d for the wider scales",
    "pad_gather": "zero-pad once, one index_select of flat per-pixel indices per glimpse",
    "pad_take": "zero-pad once, torch.take of flat per-pixel indices",
    "pad_index": "zero-pad once, advanced indexing xp[n, :, rows, cols]",
    "mask_gather": "no pad: clamped flat indices, index_select, multiply by an inside-mask",
    "clamp_unfold": "no pad: unfold window at the clamped corner, then pad that window and "
                    "unfold/index again",
    "grid_sample": "no pad: F.grid_sample(nearest, zeros padding) on the S x S pixel centres, "
                   "crops + F.avg_pool2d for the wider scales",
    "grid_bilinear": "no pad: one F.grid_sample(bilinear) per glimpse at the 2x2-block centres "
                     "(= 2x2 averages) for all scales, avg_pool2d for the rest",
}

RETINAS = {
    "grid_bilinear": RetinaGridBilinear,
    "pad_unfold": RetinaPadUnfold,
    "clamp_unfold": RetinaClampUnfold,
    "pad_gather": RetinaPadGather,
    "mask_gather": RetinaMaskGather,
    "pad_take": RetinaPadTake,
    "pad_index": RetinaPadIndex,
    "grid_sample": RetinaGridSample,
}


def reference_glimpse(x: Tensor, l: Tensor, patch: int, depth: int) -> Tensor:
    """lib/glimpse.c's ram_glimpse_one, literally (slow; for --check only)."""
    n, c, h, w = x.shape
    out = torch.zeros(n, c, depth, patch, patch)
    for i in range(n):
        for k in range(depth):
            side = patch * 2 ** k
            x0 = math.floor((float(l[i, 0]) + 1.0) * w * 0.5 - side * 0.5 + 0.5)
            y0 = math.floor((float(l[i, 1]) + 1.0) * h * 0.5 - side * 0.5 + 0.5)
            f = side // patch
            big = torch.zeros(c, side, side)
            r0, r1, c0, c1 = max(y0, 0), min(y0 + side, h), max(x0, 0), min(x0 + side, w)
            if r0 < r1 and c0 < c1:
                big[:, r0 - y0:r1 - y0, c0 - x0:c1 - x0] = x[i, :, r0:r1, c0:c1]
            out[i, :, k] = big.view(c, patch, f, patch, f).mean((2, 4))
    return out.reshape(n, -1)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

class RAM(nn.Module):
    def __init__(self, cfg: dict, retina: str):
        super().__init__()
        self.T = cfg["glimpses"]
        self.hidden = CORE_HIDDEN
        self.std = STD
        self.retina = RETINAS[retina](cfg["c"], cfg["h"], cfg["w"], cfg["patch"], cfg["depth"])
        D = self.retina.D
        self.g1 = nn.Linear(D, GLIMPSE_HIDDEN)
        self.l1 = nn.Linear(2, LOC_HIDDEN)
        self.g2 = nn.Linear(GLIMPSE_HIDDEN, GLIMPSE_OUT)
        # Its bias would be a second copy of g2's: folded into it, so that the
        # sum is one addmm accumulating into g2's output (libram's GEMM with
        # beta = 1); same multiply-adds as two linears and an add.
        self.l2 = nn.Linear(LOC_HIDDEN, GLIMPSE_OUT, bias=False)
        self.cx = nn.Linear(GLIMPSE_OUT, CORE_HIDDEN)
        self.ch = nn.Linear(CORE_HIDDEN, CORE_HIDDEN, bias=False)
        self.loc = nn.Linear(CORE_HIDDEN, 2)
        self.base = nn.Linear(CORE_HIDDEN, 1)
        self.cls = nn.Linear(CORE_HIDDEN, CLASSES)

    def forward(self, x: Tensor, eps: Optional[Tensor] = None
                ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """eps (T, N, 2) samples the locations (training); None uses mu.
        Returns log-probabilities (N, 10) and mu, l (T, N, 2), b (T, N)."""
        n = x.shape[0]
        src, nbase = self.retina.prepare(x)
        h = torch.zeros(n, self.hidden)
        mus: List[Tensor] = []
        ls: List[Tensor] = []
        bs: List[Tensor] = []
        for t in range(self.T):
            hd = h.detach()
            mu = torch.tanh(self.loc(hd))
            if eps is not None:
                l = torch.clamp(mu.detach() + self.std * eps[t], -1.0, 1.0)
                bs.append(self.base(hd).squeeze(1))
            else:
                l = mu
            mus.append(mu)
            ls.append(l)
            rho = self.retina(src, nbase, l)
            hg = torch.relu(self.g1(rho))
            hl = torch.relu(self.l1(l))
            g = torch.relu(torch.addmm(self.g2(hg), hl, self.l2.weight.t()))
            if t == 0:
                h = torch.relu(self.cx(g))
            else:
                h = torch.relu(torch.addmm(self.cx(g), h, self.ch.weight.t()))
        logp = F.log_softmax(self.cls(h), 1)
        if eps is None:
            return logp, torch.stack(mus), torch.stack(ls), torch.empty(0)
        return logp, torch.stack(mus), torch.stack(ls), torch.stack(bs)

    @torch.jit.export
    def classify(self, x: Tensor) -> Tensor:
        """Inference: the same steps with l_t = mu_t, keeping nothing but h."""
        n = x.shape[0]
        src, nbase = self.retina.prepare(x)
        h = torch.zeros(n, self.hidden)
        for t in range(self.T):
            l = torch.tanh(self.loc(h))
            rho = self.retina(src, nbase, l)
            hg = torch.relu(self.g1(rho))
            hl = torch.relu(self.l1(l))
            g = torch.relu(torch.addmm(self.g2(hg), hl, self.l2.weight.t()))
            if t == 0:
                h = torch.relu(self.cx(g))
            else:
                h = torch.relu(torch.addmm(self.cx(g), h, self.ch.weight.t()))
        return F.log_softmax(self.cls(h), 1)


class Classifier(nn.Module):
    """Inference only: log-probabilities under l = mu (for scripting/freezing)."""

    def __init__(self, model: RAM):
        super().__init__()
        self.m = model

    def forward(self, x: Tensor) -> Tensor:
        return self.m.classify(x)


def loss_fn(logp: Tensor, mu: Tensor, l: Tensor, b: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
    nll = F.nll_loss(logp, y)
    R = (logp.detach().argmax(1) == y).float()  # (N,)
    base = ((b - R) ** 2).mean()
    logpi = (-(l - mu) ** 2 / (2 * STD * STD) - math.log(STD) - 0.5 * math.log(2 * math.pi)).sum(2)
    reinforce = -((R - b).detach() * logpi).sum(0).mean()
    return nll + base + reinforce, R


class Trainer:
    """One step = zero_grad, forward, backward, clip, Adam step."""

    def __init__(self, model: RAM, scripted: bool, foreach: bool):
        self.model = model
        self.fwd = torch.jit.script(model) if scripted else model
        self.params = list(model.parameters())
        kw = dict(foreach=True) if foreach else {}
        self.opt = torch.optim.Adam(self.params, lr=LR, **kw)

    def step(self, x: Tensor, y: Tensor) -> Tensor:
        self.opt.zero_grad(set_to_none=True)
        eps = torch.randn(self.model.T, x.shape[0], 2)
        logp, mu, l, b = self.fwd(x, eps)
        loss, R = loss_fn(logp, mu, l, b, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, CLIP)
        self.opt.step()
        return R


VARIANT_DOC = {
    "eager": "eager",
    "script": "torch.jit.script",
    "freeze": "torch.jit.script + torch.jit.freeze",
    "ofi": "torch.jit.script + torch.jit.optimize_for_inference (freezes, unrolls the glimpse"
           " loop, pre-transposes the Linear weights into matmul + add; no oneDNN ops here)",
}


def make_infer(model: RAM, variant: str):
    model.eval()
    c = Classifier(model).eval()
    if variant == "eager":
        return c
    s = torch.jit.script(c)
    if variant == "script":
        return s
    f = torch.jit.freeze(s)
    if variant == "freeze":
        return f
    if variant == "ofi":
        return torch.jit.optimize_for_inference(s)
    raise ValueError(variant)


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def rate_reps(fn, pool: Tensor, labels: Tensor, batch: int, reps: int, warmup: int,
              seconds: float, clock=time.perf_counter) -> List[float]:
    """samples/s of each of `reps` repetitions (after `warmup` unreported ones);
    a repetition calls fn(x, y) on successive batches of the pool until it has
    lasted `seconds` of `clock` (wall time; --explore can use CPU time)."""
    nb = max(1, pool.shape[0] // batch)
    out = []
    k = 0
    for r in range(warmup + reps):
        done = 0
        t0 = clock()
        while True:
            i = (k % nb) * batch
            k += 1
            fn(pool[i:i + batch], labels[i:i + batch])
            done += batch
            el = clock() - t0
            if el >= seconds:
                break
        if r >= warmup:
            out.append(done / el)
    return out


def summary(v: List[float]) -> dict:
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


_DATA: dict = {}


def data(cfg: dict, n: int, seed: int) -> Tuple[Tensor, Tensor]:
    """n random images in [0, 1) and labels (the last pool made is reused)."""
    key = (tuple(sorted(cfg.items())), n, seed)
    if key not in _DATA:
        _DATA.clear()
        _DATA[key] = _make_data(cfg, n, seed)
    return _DATA[key]


def _make_data(cfg: dict, n: int, seed: int) -> Tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, cfg["c"], cfg["h"], cfg["w"], generator=g)
    y = torch.randint(0, CLASSES, (n,), generator=g)
    return x, y


def runner(cfg: dict, retina: str, what: str, batch: int, train_scripted: bool = False,
           foreach: bool = True, infer_variant: str = "eager"):
    """fn(x, y) doing one training step or one inference at this batch."""
    torch.manual_seed(0)
    model = RAM(cfg, retina)
    if what == "train":
        return Trainer(model, train_scripted, foreach).step
    f = make_infer(model, infer_variant)

    def run(xb: Tensor, yb: Tensor) -> None:
        with torch.inference_mode():
            f(xb)
    return run


def measure(cfg: dict, retina: str, what: str, batch: int, reps: int, warmup: int,
            seconds: float, **kw) -> List[float]:
    x, y = data(cfg, max(batch, 256), 1)
    fn = runner(cfg, retina, what, batch, **kw)
    for _ in range(3):  # past TorchScript's profiling runs, whatever the warm-up time
        fn(x[:batch], y[:batch])
    return rate_reps(fn, x, y, batch, reps, warmup, seconds)


# The glimpse method per config and measurement ("train" = train_b32 and
# train_b128), chosen with --explore --cpu-time (see the "setup" string).
DEFAULT_RETINA = {
    "mnist": {"train": "pad_unfold", "infer_b1": "grid_bilinear", "infer_b256": "pad_unfold"},
    "translated60": {"train": "pad_unfold", "infer_b1": "pad_unfold", "infer_b256": "pad_unfold"},
    "cluttered100": {"train": "pad_unfold", "infer_b1": "pad_unfold", "infer_b256": "pad_unfold"},
    "image512": {"train": "grid_bilinear", "infer_b1": "grid_bilinear",
                 "infer_b256": "grid_bilinear"},
}
DEFAULT_TRAIN_SCRIPTED = False
DEFAULT_FOREACH = True
DEFAULT_INFER = {1: "ofi", 256: "ofi"}


def parallel_backend() -> str:
    info = torch.__config__.parallel_info()
    for line in info.splitlines():
        if line.startswith("ATen parallel backend"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def blas_name() -> str:
    cfg = torch.__config__.show()
    for line in cfg.splitlines():
        if "BLAS_INFO" in line:
            for part in line.split(","):
                if "BLAS_INFO" in part:
                    return part.split("=", 1)[1].strip()
    return "unknown"


def setup_threads(threads: int) -> str:
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
        return "1"
    except RuntimeError:  # only allowed before any inter-op work
        return "refused, left at %d" % torch.get_num_interop_threads()


# ---------------------------------------------------------------------------
# --check: does it learn?
# ---------------------------------------------------------------------------

def quadrant_data(n: int, g: torch.Generator) -> Tuple[Tensor, Tensor]:
    """28x28 noise in [0, 0.1] with a bright 6x6 square in one quadrant, near
    the centre (jittered by up to 2 pixels), so that a glimpse near the
    centre can see it; class = quadrant (of 10 outputs)."""
    x = torch.rand(n, 1, 28, 28, generator=g) * 0.1
    y = torch.randint(0, 4, (n,), generator=g)
    off = torch.randint(0, 3, (n, 2), generator=g)
    for i in range(n):
        r = 6 + int(off[i, 0]) if int(y[i]) < 2 else 16 - int(off[i, 0])
        c = 6 + int(off[i, 1]) if int(y[i]) % 2 == 0 else 16 - int(off[i, 1])
        x[i, 0, r:r + 6, c:c + 6] = 1.0
    return x, y


def check_glimpse() -> bool:
    ok = True
    g = torch.Generator().manual_seed(3)
    for name, cfg in [("mnist", CONFIGS["mnist"]), ("translated60", CONFIGS["translated60"]),
                      ("cluttered100", CONFIGS["cluttered100"]), ("image512", CONFIGS["image512"]),
                      ("rgb 3x40x52", dict(c=3, h=40, w=52, patch=6, depth=3, glimpses=1))]:
        n = 16
        x = torch.rand(n, cfg["c"], cfg["h"], cfg["w"], generator=g)
        l = torch.rand(n, 2, generator=g) * 2 - 1
        l[0] = torch.tensor([-1.0, -1.0])
        l[1] = torch.tensor([1.0, 1.0])
        l[2] = torch.tensor([0.0, 0.0])
        l[3] = torch.tensor([-1.0, 1.0])
        l[4] = torch.tensor([0.999, -0.999])
        ref = reference_glimpse(x, l, cfg["patch"], cfg["depth"])
        errs = []
        for rname, cls in RETINAS.items():
            r = cls(cfg["c"], cfg["h"], cfg["w"], cfg["patch"], cfg["depth"])
            src, nb = r.prepare(x)
            e = (r(src, nb, l) - ref).abs().max().item()
            rs = torch.jit.script(r)
            src, nb = rs.prepare(x)
            e = max(e, (rs(src, nb, l) - ref).abs().max().item())  # and TorchScript's
            errs.append("%s %.1e" % (rname, e))
            ok = ok and e < (1e-4 if rname == "grid_bilinear" else 1e-5)
        lib = libram_glimpse(x, l, cfg["patch"], cfg["depth"])
        if lib is not None:
            e = (lib - ref).abs().max().item()
            errs.append("libram %.1e" % e)
            ok = ok and e < 1e-5
        else:
            errs.append("libram not found (set LIBRAM_LIBRARY)")
        print("glimpse %-12s max |method - reference|: %s" % (name, ", ".join(errs)))
    return ok


def libram_glimpse(x: Tensor, l: Tensor, patch: int, depth: int) -> Optional[Tensor]:
    """The same glimpses from libram itself (python/libram), when it loads."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    lib = os.path.join(root, "build", "libram.so")
    if "LIBRAM_LIBRARY" not in os.environ and os.path.exists(lib):
        os.environ["LIBRAM_LIBRARY"] = lib
    sys.path.insert(0, os.path.join(root, "python"))
    try:
        import array
        import libram  # noqa: E402
        gl = libram.Glimpse(patch=patch, depth=depth)
        imgs = array.array("f", x.contiguous().view(-1).tolist())
        locs = array.array("f", l.contiguous().view(-1).tolist())
        out = gl.extract(imgs, locs, shape=tuple(x.shape))
        if hasattr(out, "shape"):  # NumPy
            return torch.from_numpy(out.astype("float32")).reshape(x.shape[0], -1)
        return torch.tensor(list(out), dtype=torch.float32).view(x.shape[0], -1)
    except Exception as e:  # noqa: BLE001 - optional cross-check
        print("  (libram cross-check skipped: %s)" % e)
        return None
    finally:
        sys.path.pop(0)


def check(threads: int) -> int:
    setup_threads(threads)
    ok = check_glimpse()
    cfg = CONFIGS["mnist"]
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(2)
    model = RAM(cfg, DEFAULT_RETINA["mnist"]["train"])
    tr = Trainer(model, DEFAULT_TRAIN_SCRIPTED, DEFAULT_FOREACH)
    xt, yt = quadrant_data(1000, g)

    def test_error() -> float:
        model.eval()
        with torch.inference_mode():
            e = (model.classify(xt).argmax(1) != yt).float().mean().item()
        model.train()
        return e

    first = test_error()
    print("quadrant task (28x28, 6x6 square, 4 classes), batch 64, mnist model")
    print("step   train error (last 25 steps, sampled l)   test error (1000, l = mu)")
    print("%4d   %8s %43.3f" % (0, "-", first))
    errs = []
    t0 = time.perf_counter()
    for step in range(1, 301):
        x, y = quadrant_data(64, g)
        R = tr.step(x, y)
        errs.append(1.0 - R.mean().item())
        if step % 25 == 0:
            print("%4d   %8.3f %43.3f" % (step, statistics.mean(errs[-25:]), test_error()))
    last = test_error()
    with torch.inference_mode():
        ref = model(xt[:64])[0]
        diffs = []
        for variant in ("eager", "script", "freeze", "ofi"):
            f = make_infer(copy.deepcopy(model), variant)
            diffs.append("%s %.1e" % (variant, (f(xt[:64]) - ref).abs().max().item()))
            ok = ok and (f(xt[:64]) - ref).abs().max().item() < 1e-4
    model.train()
    print("inference variants vs the training graph's forward, max |log p| difference: "
          + ", ".join(diffs))
    el = time.perf_counter() - t0
    learned = last < 0.5 * first and last < 0.2
    print("%.1f s; test error %.3f -> %.3f: %s" % (el, first, last,
                                                  "LEARNS" if learned else "DOES NOT LEARN"))
    print("glimpse methods and inference variants agree: %s" % ("yes" if ok else "NO"))
    return 0 if (ok and learned) else 1


# ---------------------------------------------------------------------------
# --explore: time the alternatives
# ---------------------------------------------------------------------------

def explore(name: str, cfg: dict, reps: int, seconds: float, methods: List[str],
            clock) -> None:
    """Time the alternatives round-robin (`reps` rounds of one burst of
    `seconds` each), so that a busy machine's changing load hits them alike;
    the best burst is the least disturbed estimate.  With --cpu-time the
    clock is the process's CPU time, which a busy machine disturbs far less
    than wall time (meaningful with --threads 1)."""
    cands = []  # (label, what, batch, fn)
    metrics = (("train", 32, "train"), ("train", 128, "train"), ("infer", 1, "infer_b1"),
               ("infer", 256, "infer_b256"))
    for retina in methods:
        for what, b, key in metrics:
            if what == "train":
                label = "train b%d %s (eager, foreach=%s)" % (b, retina, DEFAULT_FOREACH)
                fn = runner(cfg, retina, what, b, DEFAULT_TRAIN_SCRIPTED, DEFAULT_FOREACH)
            else:
                label = "infer b%d %s (%s)" % (b, retina, DEFAULT_INFER[b])
                fn = runner(cfg, retina, what, b, infer_variant=DEFAULT_INFER[b])
            cands.append((label, what, b, fn))
    for b in (1, 256):
        retina = DEFAULT_RETINA[name]["infer_b%d" % b]
        for variant in ("eager", "script", "freeze", "ofi"):
            if variant != DEFAULT_INFER[b]:
                cands.append(("infer b%d %s %s" % (b, retina, variant), "infer", b,
                              runner(cfg, retina, "infer", b, infer_variant=variant)))
    retina = DEFAULT_RETINA[name]["train"]
    for scripted, foreach in ((False, not DEFAULT_FOREACH), (True, DEFAULT_FOREACH)):
        for b in (32, 128):
            cands.append(("train b%d %s %s foreach=%s" % (b, retina, "script" if scripted
                                                          else "eager", foreach), "train", b,
                          runner(cfg, retina, "train", b, scripted, foreach)))
    pool = data(cfg, 256, 1)
    pools = {b: pool for b in (1, 32, 128, 256)}
    rates: dict = {c[0]: [] for c in cands}
    for r in range(reps + 1):  # round 0 warms up (and runs the JIT's profiling passes)
        for label, what, b, fn in cands:
            v = rate_reps(fn, pools[b][0], pools[b][1], b, 1, 0 if r else 2, seconds, clock)
            if r:
                rates[label].extend(v)
    print("%s, %d thread(s): samples/s over %d interleaved rounds of %.2f s (%s)"
          % (name, torch.get_num_threads(), reps, seconds,
             "CPU time" if clock is time.process_time else "wall time"))
    print("  %-46s %10s %10s" % ("", "best", "median"))
    for label, what, b, fn in cands:
        v = rates[label]
        print("  %-46s %10.1f %10.1f" % (label, max(v), statistics.median(v)))


# ---------------------------------------------------------------------------

# What --explore measured for the alternatives (filled in from the runs
# reported with this file; CPU-time rates, busy machine).
MEASURED = {
    "mnist": "samples/s medians, 1 thread, CPU time (--explore --cpu-time --quick --reps 4 "
             "--glimpse pad_unfold,pad_gather,grid_sample,grid_bilinear): glimpse methods tie "
             "within 5% for training (b32 3054-3271, b128 6126-6490) and infer_b256 "
             "(21949-26028), but at batch 1 grid_bilinear 1521 vs pad_unfold 1303, pad_gather "
             "1317, grid_sample 1204 (fewest ops per glimpse); inference variants at b1 "
             "eager 719, script 1050, freeze 1052, optimize_for_inference 1303; at b256 all "
             "within 5% (24924-26568); training eager 3132 vs jit.script 2864 (b32), Adam "
             "foreach=False 3109",
    "translated60": "samples/s medians, 1 thread, CPU time (--explore --cpu-time --quick "
                    "--reps 4): pad_unfold vs grid_bilinear / pad_gather / grid_sample: train_b32"
                    " 1957 vs 1765/1750/1502, train_b128 3354 vs 2847/3125/2450, infer_b256 7514 "
                    "vs 5336/6269/5985, infer_b1 732 vs 751/731/666; inference variants at b1 "
                    "eager 442, script 625, freeze 674, optimize_for_inference 732, at b256 all "
                    "within 7%; training jit.script 1878 vs eager 1957 (b32)",
    "cluttered100": "samples/s medians, 1 thread, CPU time (--explore --cpu-time --quick "
                    "--reps 3): pad_unfold vs grid_bilinear / pad_gather / grid_sample: "
                    "train_b32 1451 vs 969/972/978, train_b128 1605 vs 1299/1554/1168, "
                    "infer_b256 2636 vs 1461/2033/1546, infer_b1 517 vs 455/569/400; inference "
                    "variants at b1 eager 300, script 362, freeze 423, optimize_for_inference "
                    "517; at b256 eager 2227, script 2337, freeze 2269, ofi 2636",
    "image512": "samples/s medians, 1 thread, CPU time (--explore --cpu-time --quick --reps 3):"
                " padding the 3x512x512 batch costs ~15x (pad_unfold/pad_gather infer_b256 "
                "~6-10 ms per sample vs 0.3-0.6 for the no-pad methods in a glimpse-only "
                "micro-benchmark), so no-pad methods only: grid_bilinear vs grid_sample / "
                "clamp_unfold / mask_gather: train_b32 817 vs 905/734/776, train_b128 1473 vs "
                "1208/1229/997, infer_b256 2234 vs 2145/1318/1434, infer_b1 575 vs 445/361/389; "
                "inference variants (grid_sample) at b1 eager 272, script 366, freeze 369, "
                "optimize_for_inference 445, at b256 all within 8%",
}


def loaded_blas() -> str:
    """The BLAS library actually mapped (Debian's libblas.so.3 is an alternative)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f
                    if "blas" in line and "lapack" not in line and "/" in line}
        return ", ".join(sorted(os.path.realpath(p) for p in libs)) or "none mapped"
    except OSError:
        return "unknown"


def setup_string(config: str, threads: int, inter: str, chosen: dict) -> str:
    methods = sorted(set(chosen.values()))
    docs = "; ".join("%s = %s" % (m, SHORT[m]) for m in methods)
    return " ".join((
        "torch.set_num_threads(%d), set_num_interop_threads(1): %s, OPENBLAS/OMP_NUM_THREADS=%s,"
        " OMP_WAIT_POLICY=%s (spinning OpenMP threads collapsed 2-thread runs on the busy"
        " machine by up to 30x);"
        % (threads, inter, os.environ.get("OPENBLAS_NUM_THREADS"),
           os.environ.get("OMP_WAIT_POLICY")),
        "ATen parallel backend %s, BLAS_INFO=%s -> %s; oneDNN %s but not used: fp32 Linear"
        " goes to BLAS in 1.13, and torch.utils.mkldnn.to_mkldnn's MkldnnLinear (with the"
        " dense<->mkldnn conversions around the glimpse) measured slower (mnist eager inference,"
        " CPU time: b1 377 vs 831, b256 21k vs 25.5k samples/s);"
        % (parallel_backend(), blas_name(), loaded_blas(),
           "available" if torch.backends.mkldnn.is_available() else "unavailable"),
        "glimpse vectorised over the batch, no Python loop over samples: train %s, infer_b1 %s,"
        " infer_b256 %s (%s);" % (chosen["train"], chosen["infer_b1"], chosen["infer_b256"],
                                  docs),
        "training: eager autograd (torch.jit.script of the step loop measured no faster), "
        "Adam(foreach=%s), clip_grad_norm_(5), additive sums as addmm accumulations;"
        % DEFAULT_FOREACH,
        ("inference: torch.inference_mode() + %s;" % VARIANT_DOC[DEFAULT_INFER[1]]
         if DEFAULT_INFER[1] == DEFAULT_INFER[256] else
         "inference: torch.inference_mode() + %s at batch 1, %s at 256;"
         % (VARIANT_DOC[DEFAULT_INFER[1]], VARIANT_DOC[DEFAULT_INFER[256]])),
        "not applicable: torch.compile (2.0+), channels_last/conv kernels (no convolutions);",
        "measured with --explore --cpu-time: %s" % MEASURED.get(config, "not recorded"),
    ))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="mnist")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="~0.15 s per repetition, not ~0.5 s")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--glimpse", help="glimpse method (with --explore: comma-separated list "
                    "to compare); one of " + ", ".join(sorted(RETINAS)))
    ap.add_argument("--check", action="store_true", help="learn a toy task; exit 1 if it does not")
    ap.add_argument("--explore", action="store_true", help="time the alternative setups")
    ap.add_argument("--cpu-time", action="store_true",
                    help="with --explore: rates per CPU second, not per wall second")
    a = ap.parse_args()
    if a.threads < 1 or a.reps < 1 or a.warmup < 0:
        ap.error("--threads and --reps must be >= 1, --warmup >= 0")
    methods = a.glimpse.split(",") if a.glimpse else sorted(RETINAS)
    if a.glimpse and (any(m not in RETINAS for m in methods)
                      or (len(methods) > 1 and not a.explore)):
        ap.error("--glimpse: one of %s (a list only with --explore)" % ", ".join(sorted(RETINAS)))
    if a.check:
        return check(a.threads)
    cfg = CONFIGS[a.config]
    seconds = 0.15 if a.quick else 0.5
    inter = setup_threads(a.threads)
    if a.explore:
        explore(a.config, cfg, a.reps, seconds, methods,
                time.process_time if a.cpu_time else time.perf_counter)
        return 0
    chosen = {k: methods[0] if a.glimpse else v for k, v in DEFAULT_RETINA[a.config].items()}
    res = {}
    for b in (32, 128):
        res["train_b%d" % b] = summary(measure(cfg, chosen["train"], "train", b, a.reps,
                                               a.warmup, seconds,
                                               train_scripted=DEFAULT_TRAIN_SCRIPTED,
                                               foreach=DEFAULT_FOREACH))
    for b in (1, 256):
        v = measure(cfg, chosen["infer_b%d" % b], "infer", b, a.reps, a.warmup, seconds,
                    infer_variant=DEFAULT_INFER[b])
        res["infer_b%d" % b] = summary(v)
        if b == 1:
            res["infer_b1_us"] = summary([1e6 / r for r in v])
    setup = setup_string(a.config, a.threads, inter, chosen)
    D = cfg["c"] * cfg["depth"] * cfg["patch"] ** 2
    out = {
        "config": a.config,
        "threads": a.threads,
        "torch_version": torch.__version__,
        "setup": " ".join(setup.split()),
        "train_flops_note": train_flops_note(cfg, D),
        **{k: res[k] for k in ("train_b32", "train_b128", "infer_b1", "infer_b1_us",
                               "infer_b256")},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }
    if a.json:
        print(json.dumps(out))
    else:
        print("torch_ram.py %s, torch %s, %d thread(s), median of %d (min .. max)"
              % (a.config, torch.__version__, a.threads, a.reps))
        print("setup: %s" % out["setup"])
        print("flops: %s" % out["train_flops_note"])
        for k, unit in (("train_b32", "samples/s"), ("train_b128", "samples/s"),
                        ("infer_b1", "samples/s"), ("infer_b1_us", "us/image"),
                        ("infer_b256", "samples/s")):
            s = out[k]
            print("  %-12s %12.1f %-10s (%.1f .. %.1f)" % (k, s["median"], unit, s["min"],
                                                            s["max"]))
        print("peak RSS %.0f MB" % out["peak_rss_mb"])
    return 0


def train_flops_note(cfg: dict, D: int) -> str:
    T = cfg["glimpses"]
    macs = (D * GLIMPSE_HIDDEN + 2 * LOC_HIDDEN + GLIMPSE_HIDDEN * GLIMPSE_OUT
            + LOC_HIDDEN * GLIMPSE_OUT + GLIMPSE_OUT * CORE_HIDDEN + CORE_HIDDEN * 2
            + CORE_HIDDEN) * T + CORE_HIDDEN * CORE_HIDDEN * (T - 1) + CORE_HIDDEN * CLASSES
    return ("forward %.2f MFLOP/sample (2 x %d multiply-adds of the linear layers, baseline included, over %d "
            "glimpses, D=%d; the Wh GEMM skipped at t=0 as in libram); a training step is "
            "~3x forward (backward = 2 GEMMs per layer) plus the glimpse sensor and Adam"
            % (2 * macs / 1e6, macs, T, D))


if __name__ == "__main__":
    sys.exit(main())
