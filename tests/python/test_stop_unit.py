"""The learned stop unit from Python: Model.step_probs() against models of
the same weights with 1, 2, ... glimpses, fit_stop(), classify_stop() with
the unit, the unit in the file, and the refusals."""

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


def test_refusals():
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
