"""Model.classify_stop(): each image's glimpses, label and probabilities
against models of the same weights with 1, 2, ... glimpses, in chunks and
for bytes as for their floats."""

import pytest

import libram
from libram import modelfile

np = pytest.importorskip("numpy")

ARCH = dict(height=12, width=11, patch=3, depth=2, glimpse_hidden=8, loc_hidden=6,
            glimpse_out=10, core_hidden=12, glimpses=4, classes=3, init_scale=0.8, seed=5)


def truncated(model, path, t):
    """The same weights with t glimpses (a model's weights do not depend on T)."""
    model.save(str(path))
    f = modelfile.read(str(path))
    f.arch["glimpses"] = t
    return libram.Model.from_bytes(f.to_bytes())


def test_steps_labels_and_probabilities(tmp_path):
    model = libram.Model.create(**ARCH)
    x = np.random.default_rng(3).integers(0, 256, size=(60, 1, 12, 11), dtype=np.uint8)
    by_t = [truncated(model, tmp_path / "m.ram", t).classify(x).probs for t in range(1, 5)]
    tops = np.stack([p.max(1) for p in by_t])  # T x n
    threshold = float(np.median(tops[1]))
    model.classify_chunk = 7  # several C calls
    out = model.classify_stop(x, threshold)
    assert out.steps.shape == (60,) and out.probs.shape == (60, 3)
    reached = tops >= threshold
    want = np.where(reached.any(0), reached.argmax(0) + 1, 4)
    near = np.abs(tops - threshold).min(0) < 1e-5  # rounding could tip these
    assert np.array_equal(out.steps[~near], want[~near])
    assert 1 < out.steps.mean() < 4
    for i in np.flatnonzero(~near):
        assert np.allclose(out.probs[i], by_t[want[i] - 1][i], atol=1e-5)
    assert np.array_equal(out.labels, out.probs.argmax(1))
    # Bytes are their floats b / 255.
    same = model.classify_stop(x.astype(np.float32) / 255, threshold)
    assert np.array_equal(same.steps, out.steps) and np.array_equal(same.probs, out.probs)
    # The extremes: one glimpse each, or every one.
    assert (model.classify_stop(x, 0.0).steps == 1).all()


def test_refusals():
    model = libram.Model.create(**ARCH)
    x = np.zeros((2, 1, 12, 11), np.float32)
    for bad in (-0.5, 1.5, float("nan")):
        with pytest.raises(libram.InvalidArgumentError):
            model.classify_stop(x, bad)
    x[1, 0, 5, 5] = np.nan
    with pytest.raises(libram.Error, match="image 1"):
        model.classify_stop(x, 0.9)
