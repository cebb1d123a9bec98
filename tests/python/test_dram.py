"""DRAM's parts (Ba et al. 2015) and the soft sensor from Python: the fields
ram.h appended to its params structs, models of several objects
(Model.classify_seq, Trainer.train_batch_seq and evaluate_seq), the soft
sensor and its training modes, and RAMClassifier's knobs for them.  Every
model here is tiny: each test runs in a fraction of a second."""

import array
import ctypes
import pickle

import pytest

import libram
from libram import _capi

try:
    import numpy
except ImportError:
    numpy = None

needs_numpy = pytest.mark.skipif(numpy is None, reason="numpy is not installed")

# A tiny DRAM model of 12 x 12 images: the multiplicative glimpse form, a
# two-layer core (an LSTM above the RNN), a context network on the image
# pooled to 4 x 4, and two labels per image, one every 2 glimpses.
DRAM = dict(height=12, width=12, patch=4, glimpse_hidden=8, loc_hidden=8, glimpse_out=8,
            core_hidden=8, glimpses=4, classes=3, loc_range_pixels=0.0, form="mul",
            core_layers=2, upper_core="lstm", context=4, objects=2, seed=7)
SOFT = dict(height=12, width=12, patch=4, glimpse_hidden=8, loc_hidden=8, glimpse_out=8,
            core_hidden=8, glimpses=3, classes=3, loc_range_pixels=0.0, sensor="soft")
PIXELS = 12 * 12


def pixels(n, seed):
    import random
    rng = random.Random(seed)
    return [rng.random() for _ in range(n * PIXELS)]


def pair_labels(n, seed):
    import random
    rng = random.Random(seed)
    return [[rng.randrange(3), rng.randrange(3)] for _ in range(n)]


def flat(x):
    return x.ravel().tolist() if hasattr(x, "ravel") else list(x)


@pytest.fixture
def dram():
    with libram.Model.create(**DRAM) as model:
        yield model


# ---- the params structs

def test_appended_fields_and_their_defaults():
    names = [f for f, _ in _capi.ModelParams._fields_]
    assert names[names.index("seed") + 1:] == ["sensor", "core_layers", "upper_core", "context",
                                                "objects", "emit_every", "cell_samples",
                                                "contrast", "zoom_min", "zoom_max",
                                                "conv_channels", "conv_kernel", "conv_stride"]
    p = _capi.defaults(_capi.ModelParams)
    assert p.struct_size == ctypes.sizeof(_capi.ModelParams)  # the library knows every field
    assert (p.sensor, p.core_layers, p.upper_core, p.context, p.objects, p.emit_every,
            p.cell_samples, p.contrast, p.zoom_min, p.zoom_max, p.conv_channels, p.conv_kernel,
            p.conv_stride) == (0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 1)
    names = [f for f, _ in _capi.PolicyParams._fields_]
    assert names[names.index("seed") + 1:] == ["soft_training", "reward", "soft_detach_core"]
    p = _capi.defaults(_capi.PolicyParams)
    assert p.struct_size == ctypes.sizeof(_capi.PolicyParams)
    assert (p.soft_training, p.reward, p.soft_detach_core) == (0, 0, 0)
    for name in ("ram_model_classify_seq", "ram_trainer_train_batch_seq",
                 "ram_trainer_evaluate_seq", "ram_glimpse_create_sensor",
                 "ram_glimpse_backward_location"):
        assert getattr(_capi, name) is not None, name


def test_older_library_defaults_and_refusals(monkeypatch):
    # A library that predates the appended fields fills (and reads) only as
    # far as `seed`: the binding gives the fields ram.h's defaults and
    # refuses values that library would silently ignore.
    old = _capi.ModelParams.sensor.offset
    init = _capi._INITS[_capi.ModelParams]
    monkeypatch.setitem(_capi._INITS, _capi.ModelParams, lambda p, size: init(p, min(size, old)))
    p = _capi.defaults(_capi.ModelParams)
    assert p.struct_size == old
    assert (p.core_layers, p.objects, p.sensor, p.emit_every) == (1, 1, 0, 0)
    assert not _capi.known(p, "objects") and _capi.known(p, "seed")
    with pytest.raises(libram.InvalidArgumentError, match="objects = 2 needs a newer libram"):
        libram.Model.create(objects=2)
    with libram.Model.create(objects=1, sensor="hard", height=12, width=12, patch=4) as model:
        assert model.objects == 1  # the defaults themselves are fine


# ---- models of several objects

def test_dram_params_round_trip(dram):
    p = dram.params
    for key, value in DRAM.items():
        got = p["glimpse"][key] if key == "patch" else p[key]
        assert got == value, key
    assert p["emit_every"] == 2 and p["sensor"] == "hard"  # glimpses / objects, resolved
    assert dram.objects == 2
    assert repr(dram) == "<libram.Model 1x12x12, 4 glimpses, 3 classes, 2 objects>"
    with libram.Model.create(**p) as again:
        assert again.params == p
        assert again.param_count == dram.param_count
    # Each part has weights of its own.
    with libram.Model.create(**dict(DRAM, context=0, core_layers=1, objects=1)) as plain:
        assert plain.param_count < dram.param_count


def test_classify_seq_shapes_and_probabilities(dram, buffers):
    x = pixels(5, seed=1)
    result = dram.classify_seq(x)
    if buffers == "numpy":
        assert result.labels.shape == (5, 2)
        assert result.probs.shape == (5, 2, 3)
        assert result.locs.shape == (5, 4, 2)
        assert numpy.allclose(result.probs.sum(axis=2), 1.0, atol=1e-5)
        assert (result.labels == result.probs.argmax(axis=2)).all()
    else:
        assert isinstance(result.labels, array.array) and len(result.labels) == 5 * 2
        assert len(result.probs) == 5 * 2 * 3 and len(result.locs) == 5 * 4 * 2
        for i in range(5 * 2):
            row = result.probs[3 * i:3 * i + 3]
            assert sum(row) == pytest.approx(1.0, abs=1e-5)
            assert result.labels[i] == max(range(3), key=row.__getitem__)
    # classify() would give only the last label: it points to classify_seq.
    with pytest.raises(libram.InvalidArgumentError, match=r"classify_seq\(\)"):
        dram.classify(x)
    # Sampled locations depend on the seed only.
    a = dram.classify_seq(x, source="sampled", seed=3)
    b = dram.classify_seq(x, source="sampled", seed=3)
    assert flat(a.locs) == flat(b.locs) and flat(a.probs) == flat(b.probs)
    # Chunked calls give the same bits with mean locations.
    dram.classify_chunk = 2
    assert tuple(map(flat, dram.classify_seq(x))) == tuple(map(flat, result))


def test_classify_seq_of_one_object_is_classify():
    with libram.Model.create(**dict(DRAM, objects=1)) as model:
        x = pixels(3, seed=2)
        one, seq = model.classify(x), model.classify_seq(x)
        assert flat(seq.labels) == flat(one.labels)
        assert flat(seq.probs) == flat(one.probs)
        assert flat(seq.locs) == flat(one.locs)
        if numpy is not None:
            assert seq.labels.shape == (3, 1) and seq.probs.shape == (3, 1, 3)


def test_train_batch_seq_learns_pairs(dram, buffers):
    x, y = pixels(8, seed=3), pair_labels(8, seed=4)
    if buffers == "numpy":
        y = numpy.array(y)
        assert y.shape == (8, 2)
    with libram.Policy(dram, std=0.2, reward="per-object") as policy, \
            libram.Trainer(dram, policy, lr=2e-2, max_batch=8) as trainer:
        first = trainer.train_batch_seq(x, y)
        for _ in range(25):
            last = trainer.train_batch_seq(x, y)
        assert trainer.steps == 26
        assert 0.0 <= last.accuracy <= 1.0
        assert last.nll < first.nll  # the sum of the two cross-entropies falls
        error = trainer.evaluate_seq(x, y)
        assert isinstance(error, libram.SeqEvaluation)
        assert 0.0 <= error.object_error <= error.error <= 1.0
        # The single-label functions point to the _seq ones.
        with pytest.raises(libram.InvalidArgumentError, match=r"train_batch_seq\(\)"):
            trainer.train_batch(x, [row[0] for row in pair_labels(8, seed=4)])
        with pytest.raises(libram.InvalidArgumentError, match=r"evaluate_seq\(\)"):
            trainer.evaluate(x, [0] * 8)
        # Labels that are not two per image are refused before libram sees them.
        with pytest.raises(libram.InvalidArgumentError, match="not 2 per image"):
            trainer.train_batch_seq(x, [0] * 15)
        with pytest.raises(libram.InvalidArgumentError, match="need 7 images"):
            trainer.train_batch_seq(x, [[0, 1]] * 7)
        if buffers == "numpy":
            with pytest.raises(libram.InvalidArgumentError, match=r"\(n, 2\) expected"):
                trainer.train_batch_seq(x, numpy.zeros((4, 4), dtype=int))


def test_reward_modes_differ(dram):
    x, y = pixels(8, seed=5), pair_labels(8, seed=6)
    rewards = {}
    for mode in ("per-object", "all-correct"):
        with libram.Model.create(**DRAM) as model, \
                libram.Policy(model, std=0.2, reward=mode) as policy, \
                libram.Trainer(model, policy, lr=1e-2, max_batch=8) as trainer:
            rewards[mode] = [trainer.train_batch_seq(x, y).reward for _ in range(3)]
    # per-object: the mean number of right labels; all-correct: the
    # fraction of images with both right, which is never more.
    assert any(r > 0 for r in rewards["per-object"])
    assert all(a <= p for a, p in zip(rewards["all-correct"], rewards["per-object"]))
    assert rewards["all-correct"] != rewards["per-object"]
    with pytest.raises(ValueError, match="reward must be one of per-object, all-correct"):
        libram.Policy(dram, reward="each")
    libram.Policy(dram, reward=1, soft_training=1).close()  # numbers as in ram.h


@needs_numpy
def test_seq_functions_take_bytes(dram):
    rng = numpy.random.default_rng(1)
    x8 = rng.integers(0, 256, (4, 1, 12, 12), dtype=numpy.uint8)
    xf = x8.astype(numpy.float32) / numpy.float32(255)
    a, b = dram.classify_seq(x8), dram.classify_seq(xf)
    assert (a.probs == b.probs).all() and (a.locs == b.locs).all()
    y = numpy.array(pair_labels(4, seed=1))
    stats = []
    for x in (x8, xf):
        with libram.Model.create(**DRAM) as model, \
                libram.Trainer(model, libram.Policy(model, seed=2), max_batch=4) as trainer:
            stats.append(trainer.train_batch_seq(x, y))
            assert trainer.evaluate_seq(x, y) == trainer.evaluate_seq(xf, y)
    assert stats[0] == stats[1]


def test_dram_save_load_round_trip(dram, tmp_path):
    x, y = pixels(6, seed=7), pair_labels(6, seed=8)
    with libram.Trainer(dram, lr=1e-2, max_batch=6) as trainer:
        for _ in range(3):
            trainer.train_batch_seq(x, y)
    path = str(tmp_path / "dram.ram")
    dram.save(path)
    want = dram.classify_seq(x)
    for loaded in (libram.Model.load(path), libram.Model.from_bytes(open(path, "rb").read())):
        with loaded:
            assert loaded.params == dram.params
            assert loaded.objects == 2 and loaded.param_count == dram.param_count
            got = loaded.classify_seq(x)
            assert tuple(map(flat, got)) == tuple(map(flat, want))  # the same bits
            sampled = loaded.classify_seq(x, source="sampled", seed=5)
            assert flat(sampled.locs) == flat(dram.classify_seq(x, source="sampled",
                                                                  seed=5).locs)


def test_checkpoint_of_a_dram_model(dram, tmp_path):
    x, y = pixels(6, seed=9), pair_labels(6, seed=10)
    path = str(tmp_path / "dram.ckpt")
    with libram.Trainer(dram, lr=1e-2, max_batch=6) as trainer:
        trainer.train_batch_seq(x, y)
        trainer.save_checkpoint(path, user=b"1")
        next_step = trainer.train_batch_seq(x, y)
    with libram.Model.create(**DRAM) as model, \
            libram.Trainer(model, lr=1e-2, max_batch=6) as trainer:
        assert trainer.load_checkpoint(path) == b"1"
        assert trainer.train_batch_seq(x, y) == next_step  # resumes exactly


@needs_numpy
def test_modelfile_reads_dram_and_soft_files(dram, tmp_path):
    from libram import modelfile
    path = str(tmp_path / "dram.ram")
    dram.save(path)
    f = modelfile.read(path)
    assert f.dram == dict(core_layers=2, upper_core=1, context=4, objects=2, emit_every=2)
    assert f.tensor_names() == modelfile.TENSORS + modelfile.DRAM_TENSORS
    assert f.tensors["core2_wx"].shape == (4 * 8, 8)  # the upper LSTM layer
    assert f.tensors["ctx_w"].shape == (8, 1 * 4 * 4)
    assert f.to_bytes() == open(path, "rb").read()
    with libram.Model.create(**SOFT) as soft:
        soft.save(path)
    f = modelfile.read(path)
    assert f.sensor == 1 and f.dram is None and len(f.tensors) == 15
    assert f.to_bytes() == open(path, "rb").read()


# ---- the soft sensor

def test_soft_sensor_model_trains_by_backprop_or_hybrid():
    x = pixels(8, seed=11)
    y = [i % 3 for i in range(8)]
    runs = {}
    for mode in ("backprop", "hybrid"):
        with libram.Model.create(**SOFT) as model, \
                libram.Policy(model, std=0.2, soft_training=mode) as policy, \
                libram.Trainer(model, policy, lr=1e-2, max_batch=8) as trainer:
            assert model.params["sensor"] == "soft"
            before = flat(model.classify(x).locs)
            runs[mode] = [trainer.train_batch(x, y) for _ in range(3)]
            assert flat(model.classify(x).locs) != before  # the locations were trained
    # backprop: no REINFORCE term, no baseline; hybrid adds both.
    assert all(s.reinforce == 0 and s.baseline_mse == 0 for s in runs["backprop"])
    assert any(s.reinforce != 0 or s.baseline_mse != 0 for s in runs["hybrid"])
    with pytest.raises(ValueError, match="soft_training must be one of backprop, hybrid"):
        libram.Policy(None, std=0.2, hidden=8, steps=3, soft_training="sgd")


def test_soft_detach_core_changes_the_training_step():
    """soft_detach_core: the same model and batch train to other weights
    (the core no longer gets the location term), and the policy refuses a
    value that is not 0 or 1."""
    x = pixels(8, seed=12)
    y = [i % 3 for i in range(8)]
    weights = {}
    for detach in (False, True):
        with libram.Model.create(**SOFT) as model, \
                libram.Policy(model, soft_detach_core=detach) as policy, \
                libram.Trainer(model, policy, lr=1e-2, max_batch=8) as trainer:
            trainer.train_batch(x, y)
            weights[detach] = flat(model.classify(x).probs)
    assert weights[False] != weights[True]
    with pytest.raises(libram.InvalidArgumentError, match="soft_detach_core"):
        libram.Policy(None, std=0.2, hidden=8, steps=3, soft_detach_core=2)


def test_soft_glimpse_and_its_location_gradient(buffers):
    shape = (2, 1, 12, 12)
    x = pixels(2, seed=12)
    # Off the kinks of the bilinear interpolation (a sample on a pixel
    # centre), where the gradient is the derivative from the right.
    locs = [0.113, -0.217, -0.291, 0.237]
    with libram.Glimpse(patch=4, depth=2, scale=2.0, sensor="soft") as soft:
        assert soft.sensor == "soft" and "sensor=soft" in repr(soft)
        ones = [1.0] * (2 * soft.size(1))
        grad = flat(soft.backward_location(x, locs, ones, shape=shape))
        assert len(grad) == 4
        # d(sum of the glimpse)/d(location), against central differences.
        eps = 1e-3
        for k in range(4):
            up, down = list(locs), list(locs)
            up[k] += eps
            down[k] -= eps
            i = k // 2
            size = soft.size(1)
            diff = (sum(flat(soft.extract(x, up, shape=shape))[i * size:(i + 1) * size])
                    - sum(flat(soft.extract(x, down, shape=shape))[i * size:(i + 1) * size]))
            assert grad[k] == pytest.approx(diff / (2 * eps), rel=2e-2, abs=2e-2), k
    with libram.Glimpse(patch=4) as hard:
        assert hard.sensor == "hard"
        with pytest.raises(libram.InvalidArgumentError):
            hard.backward_location(x, locs, [1.0] * (2 * hard.size(1)), shape=shape)
    with pytest.raises(ValueError, match="sensor must be one of hard, soft"):
        libram.Glimpse(sensor="hybrid")


# ---- RAMClassifier

ESTIMATOR = dict(glimpses=3, patch=4, glimpse_hidden=8, loc_hidden=8, glimpse_out=8,
                 core_hidden=8, loc_range_pixels=0.0, epochs=2, batch_size=16,
                 validation_fraction=0.0, lr=1e-2)


def blobs(n, seed):
    rng = numpy.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = (rng.random((n, 8, 8)) * 0.2).astype(numpy.float32)
    for i, k in enumerate(y):
        x[i, 2:4, 4 * k + 1:4 * k + 3] = 1.0
    return x, y


@needs_numpy
def test_classifier_with_dram_parts(tmp_path):
    x, y = blobs(48, seed=1)
    clf = libram.RAMClassifier(context=4, core_layers=2, upper_core="lstm", form="mul",
                               **ESTIMATOR).fit(x, y)
    p = clf.model_.params
    assert (p["context"], p["core_layers"], p["upper_core"], p["form"], p["objects"]) == \
        (4, 2, "lstm", "mul", 1)
    pred = clf.predict(x[:10])
    assert pred.shape == (10,) and set(pred) <= {0, 1}
    assert numpy.allclose(clf.predict_proba(x[:10]).sum(axis=1), 1.0)
    # Saved and loaded, and pickled, with the same parameters and outputs.
    path = str(tmp_path / "clf.ram")
    clf.save(path)
    for copy in (libram.RAMClassifier.load(path), pickle.loads(pickle.dumps(clf))):
        assert copy.get_params() == clf.get_params()
        assert (copy.predict_proba(x) == clf.predict_proba(x)).all()
    with libram.Model.load(path) as model:
        assert model.params == p


@needs_numpy
def test_classifier_params_clone_and_set():
    clf = libram.RAMClassifier(context=3, core_layers=2, upper_core="lstm", form="mul",
                               sensor="hybrid")
    params = clf.get_params()
    assert (params["context"], params["core_layers"], params["upper_core"], params["form"],
            params["sensor"]) == (3, 2, "lstm", "mul", "hybrid")
    defaults = libram.RAMClassifier().get_params()
    assert (defaults["context"], defaults["core_layers"], defaults["upper_core"],
            defaults["sensor"]) == (0, 1, "rnn", "hard")
    clf.set_params(context=2, sensor="soft")
    assert (clf.context, clf.sensor) == (2, "soft")
    try:
        from sklearn.base import clone
    except ImportError:
        return
    copy = clone(clf)
    assert copy is not clf and copy.get_params() == clf.get_params()


@needs_numpy
@pytest.mark.parametrize("sensor, model_sensor, soft_training",
                         [("hard", "hard", "backprop"), ("soft", "soft", "backprop"),
                          ("hybrid", "soft", "hybrid")])
def test_classifier_sensor_as_ram_train(monkeypatch, sensor, model_sensor, soft_training):
    # ram-train --sensor: the model's sensor, and how the policy trains it.
    import libram.estimator as estimator
    seen = {}
    real = estimator.Policy

    def spy(model, **params):
        seen.update(params)
        return real(model, **params)

    monkeypatch.setattr(estimator, "Policy", spy)
    x, y = blobs(16, seed=2)
    clf = libram.RAMClassifier(sensor=sensor, **dict(ESTIMATOR, epochs=1)).fit(x, y)
    assert clf.model_.params["sensor"] == model_sensor
    assert seen["soft_training"] == soft_training
    assert clf.predict(x).shape == (16,)


@needs_numpy
def test_classifier_refuses_an_unknown_sensor():
    x, y = blobs(16, seed=3)
    with pytest.raises(ValueError, match="sensor must be one of hard, soft, hybrid"):
        libram.RAMClassifier(sensor="bilinear", **ESTIMATOR).fit(x, y)


# ---- zoom as an action

ZOOM = dict(height=12, width=12, patch=4, glimpse_hidden=8, loc_hidden=8, glimpse_out=8,
            core_hidden=8, glimpses=3, classes=3, loc_range_pixels=0.0, zoom_min=0.5,
            zoom_max=2.0, seed=3)


@needs_numpy
@pytest.mark.parametrize("sensor", ["hard", "soft"])
def test_zoom_factors_in_range_and_kept_by_the_file(sensor, tmp_path):
    images = numpy.random.RandomState(1).rand(5, 1, 12, 12).astype(numpy.float32)
    path = str(tmp_path / "zoom.ram")
    with libram.Model.create(sensor=sensor, **ZOOM) as model:
        result = model.classify(images)
        assert result.zooms.shape == (5, 3)
        assert ((result.zooms >= 0.5) & (result.zooms <= 2.0)).all()
        model.save(path)
        with libram.Model.load(path) as back:
            assert back.params == model.params
            again = back.classify(images)
            assert (again.zooms == result.zooms).all()
            assert (again.probs == result.probs).all()
    with libram.Model.create(**SOFT) as plain:  # no zoom: every factor 1
        assert (plain.classify(images).zooms == 1.0).all()
    with pytest.raises(libram.InvalidArgumentError):
        libram.Model.create(**dict(ZOOM, zoom_max=0.25))


@needs_numpy
def test_estimator_zoom_knobs():
    rng = numpy.random.RandomState(2)
    x, y = blobs(48, seed=rng.randint(100))
    clf = libram.RAMClassifier(zoom_min=0.5, zoom_max=2.0, **ESTIMATOR).fit(x, y)
    assert clf.get_params()["zoom_min"] == 0.5
    assert clf.model_.params["zoom_max"] == 2.0


def test_zoom_model_file_is_read_and_refused_by_the_bridge(tmp_path):
    from libram import modelfile
    path = str(tmp_path / "zoom.ram")
    with libram.Model.create(**ZOOM) as model:
        model.save(path)
    with open(path, "rb") as f:
        parsed = modelfile.parse(f.read())
    assert parsed.loc_dims() == 3
    assert parsed.tensors["loc_w"].shape == (3, 8) and parsed.tensors["l1_w"].shape == (8, 3)
    try:
        import libram.torch as bridge
    except ImportError:
        return  # no PyTorch here: the bridge's refusal is checked where it is installed
    with pytest.raises(bridge.ConversionError, match="zoom"):
        bridge.to_torch(path)


CONV = dict(ZOOM, zoom_min=0.0, zoom_max=0.0, conv_channels=4, conv_kernel=3, conv_stride=1)


@needs_numpy
@pytest.mark.parametrize("sensor", ["hard", "soft"])
def test_conv_model_is_kept_by_the_file_and_read_by_modelfile(sensor, tmp_path):
    from libram import modelfile
    images = numpy.random.RandomState(4).rand(5, 1, 12, 12).astype(numpy.float32)
    path = str(tmp_path / "conv.ram")
    with libram.Model.create(sensor=sensor, **CONV) as model:
        p = model.params
        assert (p["conv_channels"], p["conv_kernel"], p["conv_stride"]) == (4, 3, 1)
        result = model.classify(images)
        model.save(path)
        with libram.Model.load(path) as back:
            assert back.params == model.params
            assert (back.classify(images).probs == result.probs).all()
    with open(path, "rb") as f:
        data = f.read()
    parsed = modelfile.parse(data)
    assert parsed.conv == {"channels": 4, "kernel": 3, "stride": 1}
    assert parsed.tensor_names() == (modelfile.TENSORS + modelfile.DRAM_TENSORS
                                     + modelfile.CONV_TENSORS)
    # a 4 x 4 patch, 3 x 3 filters: 2 x 2 positions of 4 channels for h_g
    assert parsed.tensors["conv_w"].shape == (4, 9) and parsed.tensors["g1_w"].shape == (8, 16)
    assert parsed.to_bytes() == data
    try:
        import libram.torch as bridge
    except ImportError:
        return  # no PyTorch here: the bridge is checked where it is installed
    if sensor == "soft":
        with pytest.raises(bridge.ConversionError, match="soft sensor"):
            bridge.to_torch(path)
    else:  # the layer itself is computed (test_torch.py compares the outputs)
        assert bridge.model_file(bridge.to_torch(path)).to_bytes() == data


@needs_numpy
def test_estimator_conv_knobs():
    rng = numpy.random.RandomState(5)
    x, y = blobs(48, seed=rng.randint(100))
    clf = libram.RAMClassifier(conv_channels=3, conv_kernel=2, **ESTIMATOR).fit(x, y)
    assert clf.get_params()["conv_channels"] == 3
    assert clf.model_.params["conv_kernel"] == 2
    with pytest.raises(libram.InvalidArgumentError):
        libram.RAMClassifier(conv_channels=3, conv_kernel=99, **ESTIMATOR).fit(x, y)


def test_with_sensor_keeps_the_weights():
    """A hard model's soft copy reads what the model reads at the centre,
    where every square sits on pixel edges, and classifies alike there; a
    copy back to the hard sensor classifies exactly as the model."""
    hard = dict(SOFT, sensor="hard", depth=2)
    with libram.Model.create(**hard) as m:
        soft = m.with_sensor("soft")
        back = soft.with_sensor("hard")
        assert soft.params["sensor"] == "soft" and back.params["sensor"] == "hard"
        assert soft.param_count == m.param_count
        images = pixels(3, 11)
        a = m.classify(images, 3, source="center")
        b = soft.classify(images, 3, source="center")
        assert flat(b.probs) == pytest.approx(flat(a.probs), abs=1e-5)
        assert flat(back.classify(images, 3).probs) == flat(m.classify(images, 3).probs)
        with pytest.raises(ValueError):
            m.with_sensor("blurry")
        soft.close()
        back.close()


def test_with_glimpses_keeps_the_weights():
    """A DRAM model given six glimpses (a label every 3) looks where the
    four-glimpse model looks for the glimpses they share; a copy back to four
    classifies exactly as the model; counts the objects cannot divide fail."""
    with libram.Model.create(**DRAM) as dram:
        # One step, so that the weights are not those the seed gives.
        with libram.Policy(dram, std=0.2) as policy, \
                libram.Trainer(dram, policy, lr=5e-2, max_batch=4) as trainer:
            trainer.train_batch_seq(pixels(4, 9), [l for row in pair_labels(4, seed=2) for l in row])
        more = dram.with_glimpses(6)
        back = more.with_glimpses(4)
        assert more.glimpses == 6 and more.params["emit_every"] == 3
        assert more.param_count == dram.param_count
        images = pixels(3, 5)
        a = dram.classify_seq(images, 3)
        b = more.classify_seq(images, 3)
        c = back.classify_seq(images, 3)
        assert flat(c.labels) == flat(a.labels)
        assert flat(c.probs) == flat(a.probs)
        with libram.Model.create(**DRAM) as fresh:  # the same seed, untrained
            assert flat(fresh.classify_seq(images, 3).probs) != flat(a.probs)
        locs_a, locs_b = flat(a.locs), flat(b.locs)
        for i in range(3):
            assert locs_b[i * 12:i * 12 + 8] == pytest.approx(locs_a[i * 8:i * 8 + 8], abs=1e-6)
        with pytest.raises(libram.InvalidArgumentError):
            dram.with_glimpses(5)
        with pytest.raises(libram.InvalidArgumentError):
            dram.with_glimpses(6, emit_every=2)
        more.close()
        back.close()
