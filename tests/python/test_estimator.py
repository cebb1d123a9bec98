"""libram.RAMClassifier, the scikit-learn style estimator, on tiny generated
images a tiny RAM learns in well under a second: a bright 2 x 2 blob in the
left or the right half (or third) of an 8 x 8 (12 x 12) image."""

import inspect
import json
import os
import pickle
import subprocess
import sys

import pytest

numpy = pytest.importorskip("numpy")

import libram  # noqa: E402
from libram import _capi  # noqa: E402

from conftest import PYTHON_DIR  # noqa: E402

try:
    import sklearn  # noqa: F401
except ImportError:
    sklearn = None
needs_sklearn = pytest.mark.skipif(sklearn is None, reason="scikit-learn is not installed")

TINY = dict(glimpses=2, patch=4, depth=2, glimpse_hidden=16, loc_hidden=8, glimpse_out=16,
            core_hidden=16, loc_range_pixels=0.0, lr=1e-2, batch_size=32, epochs=8)


def blobs(n, seed, size=8, names=(0, 1), dtype="float32"):
    """n size x size images: noise in [0, 0.2) and a 2 x 2 blob of 1.0 in
    the part (of len(names) vertical stripes) of the image's class.
    Returns (images (n, size, size), labels taken from names)."""
    rng = numpy.random.default_rng(seed)
    y = rng.integers(0, len(names), n)
    x = (rng.random((n, size, size)) * 0.2).astype(numpy.float32)
    width = size // len(names)
    for i, k in enumerate(y):
        row = rng.integers(0, size - 1)
        col = k * width + rng.integers(0, width - 1)
        x[i, row:row + 2, col:col + 2] = 1.0
    if dtype == "uint8":
        x = numpy.round(x * 255).astype(numpy.uint8)
    return x, numpy.array(names)[y]


@pytest.fixture(scope="module")
def data():
    return blobs(400, seed=1), blobs(300, seed=2)


@pytest.fixture(scope="module")
def fitted(data):
    (x, y), _ = data
    return libram.RAMClassifier(**TINY).fit(x, y)


def fit_tiny(x, y, **knobs):
    return libram.RAMClassifier(**dict(TINY, **knobs)).fit(x, y)


# ---- learning

def test_learns_blobs(data, fitted):
    _, (xt, yt) = data
    assert 0.4 < numpy.mean(yt == 0) < 0.6  # chance is about 0.5
    assert fitted.score(xt, yt) > 0.9
    assert list(fitted.classes_) == [0, 1]
    assert fitted.n_iter_ == len(fitted.history_) == TINY["epochs"]
    first, last = fitted.history_[0], fitted.history_[-1]
    assert last["train_error"] < first["train_error"]
    assert last["nll"] < first["nll"]
    assert fitted.history_[fitted.best_epoch_ - 1]["val_error"] == min(
        h["val_error"] for h in fitted.history_)


def test_learns_three_string_classes():
    names = ("a", "b", "c")
    x, y = blobs(600, seed=3, size=12, names=names)
    xt, yt = blobs(300, seed=4, size=12, names=names)
    clf = fit_tiny(x, y, epochs=40)
    assert list(clf.classes_) == ["a", "b", "c"]
    predicted = clf.predict(xt)
    assert predicted.dtype == clf.classes_.dtype
    assert numpy.mean(predicted == yt) > 0.8  # chance about 1/3


def test_history_fields(fitted):
    for i, h in enumerate(fitted.history_):
        assert set(h) == {"epoch", "train_error", "nll", "val_error", "val_nll", "seconds", "lr",
                          "steps"}
        assert h["epoch"] == i + 1
        assert 0 <= h["train_error"] <= 1 and 0 <= h["val_error"] <= 1
        assert h["nll"] > 0 and h["val_nll"] > 0 and h["seconds"] >= 0
        assert h["lr"] == pytest.approx(TINY["lr"])
        assert h["steps"] == (i + 1) * 12  # 360 training images, batches of 32


def test_lr_final_decays_over_the_fit(data):
    (x, y), _ = data
    clf = fit_tiny(x, y, lr_final=1e-4, epochs=4)
    lrs = [h["lr"] for h in clf.history_]
    assert lrs == sorted(lrs, reverse=True) and lrs[0] < 1e-2
    # Linear over the fit's 48 steps: the last step runs at step 47's rate.
    assert lrs[-1] == pytest.approx(1e-2 - (1e-2 - 1e-4) * 47 / 48, rel=1e-4)


def test_same_seed_same_model(data):
    (x, y), (xt, _) = data
    a = fit_tiny(x, y, seed=3, epochs=3)
    b = fit_tiny(x, y, seed=3, epochs=3)
    c = fit_tiny(x, y, seed=4, epochs=3)
    assert numpy.array_equal(a.predict_proba(xt), b.predict_proba(xt))
    strip = [{k: v for k, v in h.items() if k != "seconds"} for h in a.history_]
    assert strip == [{k: v for k, v in h.items() if k != "seconds"} for h in b.history_]
    assert not numpy.array_equal(a.predict_proba(xt), c.predict_proba(xt))


@pytest.mark.parametrize("average_decay", [0.0, 0.9])
def test_validation_data_and_early_stopping(data, average_decay):
    (x, y), (xt, _) = data
    # Labels the images do not predict: the validation error stops improving.
    noise = numpy.random.default_rng(5).integers(0, 2, len(xt))
    clf = libram.RAMClassifier(**dict(TINY, epochs=30, patience=2, average_decay=average_decay))
    clf.fit(x, y, validation_data=(xt, noise))
    assert clf.n_iter_ < 30
    assert clf.n_iter_ == clf.best_epoch_ + 2
    assert clf.history_[-1]["steps"] == clf.n_iter_ * 13  # every image trains: 400 / 32
    # The kept model is the best epoch's, not the last one's.
    best = clf.history_[clf.best_epoch_ - 1]
    assert numpy.mean(clf.predict(xt) != noise) == pytest.approx(best["val_error"])
    assert clf.history_[-1]["val_error"] != best["val_error"] or \
        clf.history_[-1]["val_nll"] != best["val_nll"]


def test_no_validation(data):
    (x, y), (xt, yt) = data
    clf = fit_tiny(x, y, validation_fraction=0.0)
    assert all(h["val_error"] is None for h in clf.history_)
    assert clf.best_epoch_ == clf.n_iter_ == TINY["epochs"]
    assert clf.history_[-1]["steps"] == TINY["epochs"] * 13
    assert clf.score(xt, yt) > 0.9


def test_partial_fit(data):
    (x, y), (xt, yt) = data
    names = numpy.array(["left", "right"])[y]
    clf = libram.RAMClassifier(**TINY)
    with pytest.raises(ValueError, match="classes"):
        clf.partial_fit(x[:50], names[:50])
    clf.partial_fit(x[:100], names[:100], classes=["right", "left", "spare"])
    assert list(clf.classes_) == ["left", "right", "spare"]
    assert clf.model_.classes == 3
    for _ in range(8):
        clf.partial_fit(x, names)
    assert len(clf.history_) == clf.n_iter_ == 9
    assert clf.history_[-1]["steps"] == 4 + 8 * 13
    assert numpy.mean(clf.predict(xt) == numpy.array(["left", "right"])[yt]) > 0.9
    with pytest.raises(ValueError, match="differ"):
        clf.partial_fit(x, names, classes=["left", "right"])
    with pytest.raises(ValueError, match="not in classes_"):
        clf.partial_fit(x[:4], ["left", "up", "left", "left"])
    with pytest.raises(ValueError, match="labels of type int"):
        clf.partial_fit(x[:4], [0, 1, 0, 1])
    # partial_fit after fit continues the fitted model.
    fitted = fit_tiny(x, y, epochs=1)
    steps = fitted.history_[-1]["steps"]
    fitted.partial_fit(x, y)
    assert fitted.history_[-1]["steps"] == steps + 13


# ---- outputs

def test_predict_proba_columns_follow_classes(data):
    (x, y), (xt, yt) = data
    names = numpy.array(["right", "left"])  # class 0 is named "right": sorting swaps them
    clf = fit_tiny(x, names[y])
    assert list(clf.classes_) == ["left", "right"]
    proba = clf.predict_proba(xt)
    assert proba.shape == (len(xt), 2)
    assert numpy.allclose(proba.sum(axis=1), 1, atol=1e-5)
    assert proba.min() >= 0
    # Images with the blob on the left (y == 0, named "right") are column 1's.
    assert proba[yt == 0, 1].mean() > 0.8 and proba[yt == 1, 0].mean() > 0.8
    assert numpy.array_equal(clf.predict(xt), clf.classes_[numpy.argmax(proba, axis=1)])
    assert clf.score(xt, names[yt]) > 0.9


def test_input_layouts_and_dtypes(data):
    (x, y), (xt, _) = data
    x8 = numpy.round(x * 255).astype(numpy.uint8)
    xt8 = numpy.round(xt * 255).astype(numpy.uint8)
    reference = fit_tiny(x8, y, epochs=2)
    assert reference.data_format_ == "nhw" and reference.image_shape_ == (8, 8)
    assert reference.n_features_in_ == 64
    expect = reference.predict_proba(xt8)
    floats = (x8 / numpy.float32(255)).astype(numpy.float32)
    for images, test in ((x8[..., None], xt8[..., None]),            # NHWC, auto
                         (x8[:, None], xt8[:, None]),                # NCHW, auto
                         (floats, (xt8 / numpy.float32(255)).astype(numpy.float32))):
        clf = fit_tiny(images, y, epochs=2)
        assert numpy.array_equal(clf.predict_proba(test), expect)
    x16 = x8.astype(numpy.uint16) * 257  # b / 255 == 257 b / 65535
    clf = fit_tiny(x16, y, epochs=2)
    assert numpy.allclose(clf.predict_proba(xt8.astype(numpy.uint16) * 257), expect, atol=1e-4)
    # Colour: NHWC and NCHW of the same pixels are the same model.
    rgb = numpy.stack([x8, x8[:, ::-1], x8.T.transpose(2, 0, 1)], axis=-1)  # (n, 8, 8, 3)
    rgb_t = numpy.stack([xt8, xt8[:, ::-1], xt8.T.transpose(2, 0, 1)], axis=-1)
    nhwc = fit_tiny(rgb, y, epochs=2)
    nchw = fit_tiny(numpy.ascontiguousarray(rgb.transpose(0, 3, 1, 2)), y, epochs=2)
    assert nhwc.data_format_ == "nhwc" and nchw.data_format_ == "nchw"
    assert nhwc.model_.image_shape == nchw.model_.image_shape == (3, 8, 8)
    assert numpy.array_equal(nhwc.predict_proba(rgb_t),
                             nchw.predict_proba(rgb_t.transpose(0, 3, 1, 2)))
    # data_format overrides the guess: (n, 4, 8, 3) is 3 channels of 4 x 8, or 4 of 8 x 3.
    odd = numpy.zeros((6, 4, 8, 3), numpy.uint8)
    labels = [0, 1] * 3
    assert fit_tiny(odd, labels, epochs=1).model_.image_shape == (3, 4, 8)
    clf = fit_tiny(odd, labels, epochs=1, data_format="nchw")
    assert clf.model_.image_shape == (4, 8, 3)
    with pytest.raises(ValueError, match=r"\(4, 8, 3\)"):  # fitted as NCHW: no guessing
        clf.predict(numpy.zeros((2, 8, 3, 4), numpy.uint8))


def test_memory_mapped_input(data, tmp_path):
    (x, y), (xt, _) = data
    path = tmp_path / "x.npy"
    numpy.save(path, x)
    mapped = numpy.load(path, mmap_mode="r")
    a = fit_tiny(mapped, y, epochs=2)
    b = fit_tiny(x, y, epochs=2)
    assert numpy.array_equal(a.predict_proba(xt), b.predict_proba(xt))


def test_bad_input(data, fitted):
    (x, y), (xt, _) = data
    clf = libram.RAMClassifier(**TINY)
    with pytest.raises(ValueError, match=r"\(400, 64\)"):
        clf.fit(x.reshape(400, 64), y)
    with pytest.raises(TypeError, match="int64"):
        clf.fit(x.astype(numpy.int64), y)
    with pytest.raises(TypeError, match="<U"):
        clf.fit(numpy.full((4, 8, 8), "a"), [0, 1, 0, 1])
    bad = x.copy()
    bad[7, 3, 3] = numpy.nan
    with pytest.raises(ValueError, match="NaN.*image 7"):
        clf.fit(bad, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        clf.fit(x, numpy.zeros(len(x), int))
    with pytest.raises(ValueError, match="400 images but y has 399 labels"):
        clf.fit(x, y[:-1])
    with pytest.raises(ValueError, match="1-D"):
        clf.fit(x, numpy.stack([y, y], axis=1))
    with pytest.raises(ValueError, match="holds no images"):
        clf.fit(x[:0], y[:0])
    with pytest.raises(ValueError, match="channels"):
        clf.fit(numpy.zeros((4, 5, 6, 7)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(x, numpy.where(y == 0, 0.5, numpy.nan))
    for knob, value, error in (("data_format", "nhcw", ValueError),
                               ("validation_fraction", 1.0, ValueError),
                               ("batch_size", 0, ValueError), ("epochs", 2.0, TypeError),
                               ("patience", 0, ValueError), ("core", "gru", ValueError),
                               ("glimpse_hidden", 1.5, TypeError)):
        est = libram.RAMClassifier(**dict(TINY, **{knob: value}))  # stored unchecked
        assert getattr(est, knob) == value
        with pytest.raises(error):
            est.fit(x, y)
        assert not hasattr(est, "model_")
    with pytest.raises(ValueError, match="not in classes_"):
        clf.fit(x, y, validation_data=(xt[:3], [0, 1, 2]))
    with pytest.raises(ValueError, match=r"\(8, 9\)"):
        fitted.predict(numpy.zeros((2, 8, 9), numpy.float32))
    with pytest.raises(ValueError, match="nhwc"):
        fitted.predict_proba(numpy.zeros((2, 8, 8, 1), numpy.float32))
    nan = xt[:3].copy()
    nan[2, 0, 0] = numpy.inf
    with pytest.raises(ValueError, match="image 2"):
        fitted.predict(nan)
    unfitted = libram.RAMClassifier()
    with pytest.raises(AttributeError, match="not fitted"):  # NotFittedError is one too
        unfitted.predict(xt)
    with pytest.raises(AttributeError, match="not fitted"):
        unfitted.save("never-written.ram")


# ---- parameters

def test_defaults_are_the_bindings(tmp_path):
    sig = inspect.signature(libram.RAMClassifier.__init__).parameters
    model = _capi.defaults(_capi.ModelParams)
    glimpse = model.glimpse
    policy = _capi.defaults(_capi.PolicyParams)
    trainer = _capi.defaults(_capi.TrainerParams)
    names = {"form": libram.GLIMPSE_FORMS, "core": libram.CORE_TYPES, "bound": libram.LOC_BOUNDS,
             "baseline": libram.BASELINE_TYPES, "optimizer": libram.OPTIMIZERS,
             "upper_core": libram.CORE_TYPES, "sensor": libram.SENSORS,
             "products": libram.PRODUCTS}
    checked = 0
    for name, p in sig.items():
        for struct in (model, glimpse, policy, trainer):
            if name in dict(struct._fields_) and name not in ("seed", "lr_final", "decay_steps"):
                expect = getattr(struct, name)
                value = names[name][p.default] if name in names else p.default
                assert value == pytest.approx(expect, rel=1e-6), name
                checked += 1
    assert checked >= 25
    assert sig["threads"].default == trainer.threads
    assert sig["batch_size"].default == trainer.max_batch
    assert sig["clip_norm"].default == pytest.approx(trainer.clip_norm)
    assert sig["seed"].default == model.seed == policy.seed
    assert sig["lr_final"].default is None  # follows lr, as Trainer's does


def test_get_set_params_round_trip():
    clf = libram.RAMClassifier(lr=0.5, core="lstm", patience=3)
    params = clf.get_params()
    assert params["lr"] == 0.5 and params["core"] == "lstm" and params["patience"] == 3
    assert set(params) == set(inspect.signature(libram.RAMClassifier.__init__).parameters) - \
        {"self"}
    assert libram.RAMClassifier(**params).get_params() == params
    assert clf.set_params(lr=0.25, epochs=3) is clf
    assert clf.lr == 0.25 and clf.epochs == 3 and clf.get_params()["lr"] == 0.25
    with pytest.raises(ValueError):
        clf.set_params(learning_rate=1)
    assert "lr=0.25" in repr(clf)


def test_without_sklearn(data, tmp_path):
    # The estimator's own get_params / set_params / score when scikit-learn
    # cannot be imported.
    code = """
import sys
sys.modules["sklearn"] = None
import numpy, libram
from libram import estimator
assert estimator._Base is None
clf = libram.RAMClassifier(glimpses=2, patch=4, depth=2, glimpse_hidden=16, loc_hidden=8,
                           glimpse_out=16, core_hidden=16, loc_range_pixels=0.0, lr=1e-2,
                           batch_size=32, epochs=8)
p = clf.get_params()
assert libram.RAMClassifier(**p).get_params() == p
assert clf.set_params(seed=2) is clf and clf.seed == 2
try:
    clf.set_params(nope=1)
    raise SystemExit("set_params took an unknown parameter")
except ValueError:
    pass
assert "seed=2" in repr(clf)
d = numpy.load(sys.argv[1])
clf.fit(d["x"], d["y"])
print(clf.score(d["xt"], d["yt"]))
"""
    (x, y), (xt, yt) = data
    path = str(tmp_path / "blobs.npz")
    numpy.savez(path, x=x, y=y, xt=xt, yt=yt)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) > 0.9


# ---- files

def test_save_load_round_trip(data, tmp_path):
    (x, y), (xt, _) = data
    names = numpy.array(["left", "right"])[y]
    clf = fit_tiny(x, names, epochs=3, lr_final=1e-4)  # the decay goes on after loading
    path = tmp_path / "clf.ram"
    clf.save(path)
    back = libram.RAMClassifier.load(path)
    assert numpy.array_equal(back.predict_proba(xt), clf.predict_proba(xt))
    assert back.classes_.dtype == clf.classes_.dtype and list(back.classes_) == ["left", "right"]
    assert back.get_params() == clf.get_params()
    assert back.history_ == json.loads(json.dumps(clf.history_))
    assert (back.data_format_, back.image_shape_, back.best_epoch_, back.n_iter_) == \
        (clf.data_format_, clf.image_shape_, clf.best_epoch_, clf.n_iter_)
    # The optimizer state came along: training on continues as it would have.
    clf.partial_fit(x, names)
    back.partial_fit(x, names)
    assert numpy.array_equal(back.predict_proba(xt), clf.predict_proba(xt))
    assert back.history_[-1]["lr"] == clf.history_[-1]["lr"] == pytest.approx(1e-4, rel=1e-4)
    # And the file is a libram model.
    with libram.Model.load(path) as model:
        assert model.classes == 2 and model.image_shape == (1, 8, 8)


def test_save_load_averaged(data, tmp_path):
    (x, y), (xt, yt) = data
    clf = fit_tiny(x, y, average_decay=0.9)
    assert clf._trainer.average_in  # predictions use the average
    assert clf.score(xt, yt) > 0.9
    clf.save(tmp_path / "avg.ram")
    back = libram.RAMClassifier.load(tmp_path / "avg.ram")
    assert numpy.array_equal(back.predict_proba(xt), clf.predict_proba(xt))
    clf.partial_fit(x, y)  # swaps the trained weights back in to train
    assert clf._trainer.average_in


def test_load_refuses_files_without_estimator_data(data, fitted, tmp_path):
    (x, y), _ = data
    plain = tmp_path / "plain.ram"
    fitted.model_.save(plain)
    with pytest.raises(ValueError, match="without RAMClassifier data"):
        libram.RAMClassifier.load(plain)
    with libram.Model.create(height=8, width=8, classes=2, patch=4) as model, \
            libram.Trainer(model) as trainer:
        foreign = tmp_path / "foreign.ckpt"
        trainer.save_checkpoint(foreign, user=b"epoch 3")
        with pytest.raises(ValueError, match="not RAMClassifier data"):
            libram.RAMClassifier.load(foreign)
    # Data of another classifier next to this model: three classes, two outputs.
    fitted.save(tmp_path / "good.ram")
    extras = json.loads(fitted._extras())
    extras["classes"] = [0, 1, 2]
    fitted._trainer.save_checkpoint(tmp_path / "bad.ram", user=json.dumps(extras).encode())
    with pytest.raises(ValueError, match="3 classes .* 2 in the model"):
        libram.RAMClassifier.load(tmp_path / "bad.ram")
    extras["classes"] = [1, 0]
    fitted._trainer.save_checkpoint(tmp_path / "bad.ram", user=json.dumps(extras).encode())
    with pytest.raises(ValueError, match="not sorted"):
        libram.RAMClassifier.load(tmp_path / "bad.ram")
    extras = json.loads(fitted._extras())
    extras["version"] = 99
    fitted._trainer.save_checkpoint(tmp_path / "new.ram", user=json.dumps(extras).encode())
    with pytest.raises(ValueError, match="version 99"):
        libram.RAMClassifier.load(tmp_path / "new.ram")
    with pytest.raises(libram.InputOutputError):
        libram.RAMClassifier.load(tmp_path / "missing.ram")
    data = (tmp_path / "good.ram").read_bytes()
    (tmp_path / "cut.ram").write_bytes(data[:-30])
    with pytest.raises(libram.CorruptError):
        libram.RAMClassifier.load(tmp_path / "cut.ram")
    assert libram.RAMClassifier.load(tmp_path / "good.ram").n_iter_ == fitted.n_iter_


def test_saved_classes_are_named_for_the_tools(data, tmp_path):
    (x, y), (xt, _) = data
    names = numpy.array(["left", "right"])[y]
    clf = fit_tiny(x[:64], names[:64], epochs=1)
    assert clf.class_names_ == clf.model_.class_names == ["left", "right"]
    path = tmp_path / "named.ram"
    clf.save(path)
    with libram.Model.load(path) as model:
        assert model.class_names == ["left", "right"]  # in the file's CLSN chunk
    back = libram.RAMClassifier.load(path)
    assert back.class_names_ == back.model_.class_names == ["left", "right"]
    assert pickle.loads(pickle.dumps(clf)).class_names_ == ["left", "right"]
    numbered = fit_tiny(x[:64], y[:64] + 7, epochs=1)
    assert numbered.class_names_ == ["7", "8"]  # str(label)
    # The file's names against the estimator's data: a mismatch is refused.
    with libram.Model.load(path) as model:
        model.class_names = ["right", "left"]
        other = tmp_path / "other.ram"
        with libram.Trainer(model) as trainer:
            trainer.save_checkpoint(other, user=clf._extras())
    with pytest.raises(ValueError, match="class names .* in the model"):
        libram.RAMClassifier.load(other)
    Image = pytest.importorskip("PIL.Image")
    from conftest import tool
    classify = tool("ram-classify")
    if classify is None:
        pytest.skip("ram-classify is not built beside the library")
    png = tmp_path / "one.png"
    pixels = numpy.round(xt[0] * 255).astype(numpy.uint8)
    Image.fromarray(pixels).save(png)
    out = subprocess.run([classify, "--model", str(path), "--top", "2", str(png)],
                         capture_output=True, text=True, check=True).stdout
    fields = out.rstrip("\n").split("\t")
    assert fields[0] == str(png) and {fields[1], fields[3]} == {"left", "right"}
    assert fields[1] == clf.predict(pixels[None])[0]  # the same pixels, the same class


def test_labels_a_model_file_cannot_name_are_refused(data):
    (x, y), _ = data
    x, y = x[:32], y[:32]
    for bad, why in (("", "is 0 bytes"), ("x" * 1025, "is 1025 bytes"),
                     ("a\0b", "with a NUL"), ("\ud800", "UTF-8")):
        labels = numpy.array(["fine" if k else bad for k in y], dtype=object)
        with pytest.raises(ValueError, match=why):
            fit_tiny(x, labels, epochs=1)
        with pytest.raises(ValueError, match=why):
            libram.RAMClassifier(**TINY).partial_fit(x, labels, classes=["fine", bad])
    longest = "\u00e9" * 512  # 1024 bytes of UTF-8
    clf = fit_tiny(x, numpy.where(y == 0, "short", longest), epochs=1)
    assert clf.class_names_ == ["short", longest]


def _blob_pngs(root, n, seed):
    Image = pytest.importorskip("PIL.Image")
    images, names = blobs(n, seed, dtype="uint8", names=("left", "right"))
    for i, (image, name) in enumerate(zip(images, names)):
        (root / name).mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(root / name / ("%03d.png" % i))
    return root


def test_fit_on_a_folder_stream(tmp_path):
    from libram import datasets
    root = _blob_pngs(tmp_path / "blobs", 48, seed=4)
    knobs = dict(TINY, batch_size=8, epochs=3, validation_fraction=0.25)
    stream = datasets.stream_folder(root, batch_size=16, seed=2)
    clf = libram.RAMClassifier(**knobs).fit(stream)
    assert list(clf.classes_) == ["left", "right"] and clf.class_names_ == ["left", "right"]
    assert clf.image_shape_ == (8, 8) and clf.data_format_ == "nhw" and len(clf.history_) == 3
    assert all(r["val_error"] is not None for r in clf.history_)
    # 36 training files in batches of 16, 16 and 4, each cut to batch_size 8: 5 steps.
    assert [r["steps"] for r in clf.history_] == [5, 10, 15]
    again = libram.RAMClassifier(**knobs).fit(datasets.stream_folder(root, batch_size=16,
                                                                     seed=2, prefetch=0))
    whole = datasets.load_folder(root)
    names = numpy.array(whole.classes)[whole.labels]
    assert numpy.array_equal(again.predict_proba(whole.images), clf.predict_proba(whole.images))
    assert clf.score(stream) == clf.score(whole.images, names)
    clf.partial_fit(stream)
    assert len(clf.history_) == 4 and clf.history_[-1]["steps"] == clf.history_[-2]["steps"] + 6
    held = datasets.stream_folder(_blob_pngs(tmp_path / "held", 16, seed=5), batch_size=16)
    checked = libram.RAMClassifier(**dict(knobs, epochs=1)).fit(stream, validation_data=held)
    assert checked.history_[0]["val_error"] is not None
    with pytest.raises(ValueError, match="y must be None"):
        libram.RAMClassifier(**knobs).fit(stream, names)
    with pytest.raises(ValueError, match="requires y"):
        libram.RAMClassifier(**knobs).fit(whole.images)
    bigger = datasets.stream_folder(root, size=12, batch_size=16)
    with pytest.raises(ValueError, match="shape"):
        clf.partial_fit(bigger)


def test_pickle(data, fitted):
    _, (xt, _) = data
    back = pickle.loads(pickle.dumps(fitted))
    assert numpy.array_equal(back.predict_proba(xt), fitted.predict_proba(xt))
    assert back.model_ is not fitted.model_
    unfitted = pickle.loads(pickle.dumps(libram.RAMClassifier(lr=0.5)))
    assert unfitted.lr == 0.5 and not hasattr(unfitted, "model_")


def test_verbose(data, capsys, monkeypatch):
    (x, y), _ = data
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    fit_tiny(x, y, epochs=3, verbose=1)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert out[0].startswith("epoch 1 ") and "train error" in out[0] and "val error" in out[0]
    assert "nll" in out[0]
    fit_tiny(x, y, epochs=3)
    assert capsys.readouterr().out == ""


def test_verbose_tqdm(data, capsys):
    pytest.importorskip("tqdm")
    (x, y), _ = data
    fit_tiny(x, y, epochs=3, verbose=1)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "RAMClassifier" in captured.err and "36/36" in captured.err  # 3 x 12 batches
    assert "epoch 3/3" in captured.err
    assert "val error" in captured.err


# ---- scikit-learn

@needs_sklearn
def test_sklearn_clone(fitted):
    from sklearn.base import clone, is_classifier
    assert is_classifier(fitted)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert not hasattr(copy, "model_") and not hasattr(copy, "classes_")


@needs_sklearn
def test_sklearn_pipeline(data):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    (x, y), (xt, yt) = data
    # Tabular rows of 64 pixels, made images again for the classifier.
    pipe = make_pipeline(FunctionTransformer(lambda rows: rows.reshape(-1, 8, 8)),
                         libram.RAMClassifier(**TINY))
    pipe.fit(x.reshape(-1, 64), y)
    assert pipe.score(xt.reshape(-1, 64), yt) > 0.9
    assert pipe.predict_proba(xt[:5].reshape(-1, 64)).shape == (5, 2)


@needs_sklearn
def test_sklearn_cross_val_score(data):
    from sklearn.model_selection import cross_val_score
    (x, y), _ = data
    scores = cross_val_score(libram.RAMClassifier(**TINY), x, y, cv=2)
    assert len(scores) == 2 and min(scores) > 0.9


@needs_sklearn
def test_sklearn_grid_search(data):
    from sklearn.model_selection import GridSearchCV
    (x, y), (xt, yt) = data
    search = GridSearchCV(libram.RAMClassifier(**TINY), {"lr": [1e-2, 1e-5]}, cv=2)
    search.fit(x, y)
    assert search.best_params_ == {"lr": 1e-2}  # 1e-5 barely moves in 8 epochs
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] > 0.9 and scores[1] < 0.8
    assert search.score(xt, yt) > 0.9


@needs_sklearn
def test_sklearn_estimator_checks():
    # The parts of check_estimator that do not assume tabular data.
    from sklearn.utils import estimator_checks as checks
    est = libram.RAMClassifier()
    checks.check_parameters_default_constructible("RAMClassifier", est)
    checks.check_no_attributes_set_in_init("RAMClassifier", est)
    checks.check_get_params_invariance("RAMClassifier", est)
    checks.check_set_params("RAMClassifier", est)


def test_refit_leaves_a_kept_model_usable(data):
    (x, y), (xt, _) = data
    clf = fit_tiny(x, y, epochs=1)
    old = clf.model_
    expect = old.classify(xt[:, None]).probs
    clf.fit(x, y)
    assert clf.model_ is not old and not old.closed
    assert numpy.array_equal(old.classify(xt[:, None]).probs, expect)


def test_fit_leaves_the_arguments_alone(data):
    (x, y), _ = data
    clf = libram.RAMClassifier(**dict(TINY, lr_final=1e-3, epochs=2, patience=5))
    before = clf.get_params()
    clf.fit(x, y)
    clf.partial_fit(x, y)
    assert clf.get_params() == before
    assert clf.decay_steps is None and clf.lr_final == 1e-3  # the resolved values are private


def test_stop_threshold_predicts_with_fewer_glimpses(fitted, data):
    """stop_threshold: predict_proba is Model.classify_stop's, each image at
    its own glimpse; at 0 every image after one glimpse, None every glimpse."""
    from sklearn.base import clone
    (x, y), (xt, yt) = data
    early = clone(fitted).set_params(stop_threshold=0.0)
    early.model_, early.classes_ = fitted.model_, fitted.classes_
    early.data_format_, early.image_shape_ = fitted.data_format_, fitted.image_shape_
    images = xt.astype(numpy.float32)
    one = fitted.model_.classify_stop(images.reshape(len(xt), -1), 0.0)
    assert (one.steps == 1).all()
    assert numpy.allclose(early.predict_proba(xt), one.probs, atol=1e-6)
    assert numpy.allclose(fitted.predict_proba(xt), fitted.model_.classify(
        images.reshape(len(xt), -1)).probs, atol=1e-6)
    assert fitted.get_params()["stop_threshold"] is None


def test_stop_cost_fits_a_unit(data):
    """stop_cost: fit() leaves a stop unit in the model, fitted on the
    training images; predict_proba is Model.classify_stop's with it; a high
    cost stops every image after one glimpse; refused with stop_threshold."""
    (x, y), (xt, yt) = data
    est = fit_tiny(x, y, stop_cost=0.5)
    weights, cost = est.model_.stop_unit
    assert cost == 0.5
    images = xt.astype(numpy.float32).reshape(len(xt), -1)
    out = est.model_.classify_stop(images)
    assert (out.steps == 1).all()
    assert numpy.allclose(est.predict_proba(xt), out.probs, atol=1e-6)
    with pytest.raises(ValueError):
        fit_tiny(x, y, stop_cost=0.01, stop_threshold=0.9)
    with pytest.raises(ValueError):
        fit_tiny(x, y, stop_cost=-1.0)
