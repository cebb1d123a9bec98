"""Model.classify_stop(): each image's glimpses, label and probabilities
against models of the same weights with 1, 2, ... glimpses, in chunks and
for bytes as for their floats; the learned stop unit: Model.step_probs()
against the same shorter models, fit_stop(), classify_stop() with the unit,
the unit in the file, and the refusals."""

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


def test_step_probs_are_the_shorter_models(tmp_path):
    model = libram.Model.create(**ARCH)
    x = np.random.default_rng(3).random((50, 1, 12, 11), dtype=np.float32)
    model.classify_chunk = 7  # several C calls
    steps = model.step_probs(x)
    assert steps.shape == (50, 4, 3)
    for t in range(4):
        want = truncated(model, tmp_path / "m.ram", t + 1).classify(x).probs
        assert np.allclose(steps[:, t], want, atol=1e-5)


def test_fit_classify_save_and_load(tmp_path):
    model = libram.Model.create(**ARCH)
    x = np.random.default_rng(4).random((200, 1, 12, 11), dtype=np.float32)
    y = model.step_probs(x)[:, -1].argmax(1)  # labels the last glimpse gets right
    assert model.stop_unit is None
    with pytest.raises(libram.Error):
        model.classify_stop(x)  # no unit yet
    model.fit_stop(x, y, cost=0.05, epochs=10)
    weights, cost = model.stop_unit
    assert len(weights) == 3 + 4 and cost == pytest.approx(0.05)
    out = model.classify_stop(x)
    assert out.steps.min() >= 1 and out.steps.max() <= 4
    # A stop after glimpse t is the unit's decision on that step's probabilities.
    probs = model.step_probs(x)
    assert np.allclose(out.probs, probs[np.arange(200), out.steps - 1], atol=1e-5)
    model.save(str(tmp_path / "unit.ram"))
    back = libram.Model.load(str(tmp_path / "unit.ram"))
    w2, c2 = back.stop_unit
    assert np.array_equal(np.asarray(w2), np.asarray(weights)) and c2 == cost
    assert np.array_equal(back.classify_stop(x).steps, out.steps)
    # The threshold rule as a unit: (1, 0, 0, log(1 - P) per step).
    p = 0.6
    model.stop_unit = ([1.0, 0.0, 0.0] + [float(np.log(1 - p))] * 4, 0.0)
    tops = probs.max(2)
    near = (np.abs(tops - p) < 1e-5).any(1)
    a, b = model.classify_stop(x, p), model.classify_stop(x)
    assert np.array_equal(a.steps[~near], b.steps[~near])
    model.stop_unit = None
    assert model.stop_unit is None


def test_stop_unit_refusals():
    model = libram.Model.create(**ARCH)
    x = np.zeros((4, 1, 12, 11), dtype=np.float32)
    with pytest.raises(libram.Error):
        model.fit_stop(x, [0, 1, 2])  # 3 labels for 4 images
    with pytest.raises(libram.Error):
        model.fit_stop(x, [0, 1, 2, 3])  # class 3 of 3
    with pytest.raises(libram.Error):
        model.fit_stop(x, [0, 1, 2, 0], cost=-1)
    with pytest.raises(libram.Error):
        model.stop_unit = ([0.0] * 6, 0.0)  # 7 weights for 4 glimpses
