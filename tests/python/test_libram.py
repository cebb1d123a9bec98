"""Tests of the libram Python package (python/libram) against the C library
that LIBRAM_LIBRARY names (CTest: the one just built), e.g.

    LIBRAM_LIBRARY=build/libram.so.0 python3 -m pytest tests/python

Tests taking the `buffers` fixture run twice: with NumPy and as if it were
not installed (see conftest.py).
"""

import array
import ctypes
import ctypes.util
import gc
import math
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import threading

import pytest

import libram
from libram import _capi

try:
    import numpy
except ImportError:
    numpy = None

from conftest import PYTHON_DIR

# A small model keeps the tests fast; every field differs from its default so
# that a misdeclared struct field cannot go unnoticed.
SMALL = dict(channels=1, height=12, width=14, patch=4, depth=2, scale=1.5, form="concat",
             glimpse_hidden=9, loc_hidden=7, glimpse_out=11, core_hidden=13, core="lstm",
             glimpses=3, classes=5, bound="hardtanh", loc_std=0.25, loc_range_pixels=5.5,
             init_scale=0.2, seed=12345678901)
SMALL_PIXELS = 12 * 14

# A tiny trainable model for 12 x 12 images; glimpses at +-1 reach the edges.
TINY = dict(height=12, width=12, patch=4, glimpse_hidden=16, loc_hidden=16, glimpse_out=16,
            core_hidden=16, glimpses=3, classes=3, loc_range_pixels=0.0)
TINY_PIXELS = 12 * 12


def images(n, pixels, seed=1):
    rng = random.Random(seed)
    return [rng.random() for _ in range(n * pixels)]


def thirds(n, seed):
    """n 12 x 12 images whose class is the bright third (columns 0-3, 4-7 or
    8-11), with noise everywhere.  Returns (flat pixels, labels)."""
    rng = random.Random(seed)
    pixels, labels = [], []
    for _ in range(n):
        k = rng.randrange(3)
        labels.append(k)
        for _row in range(12):
            for col in range(12):
                pixels.append((0.8 if col // 4 == k else 0.0) + 0.2 * rng.random())
    return pixels, labels


def batch(pixels, labels, index):
    """The images and labels at the positions `index`."""
    out = []
    for i in index:
        out.extend(pixels[i * TINY_PIXELS:(i + 1) * TINY_PIXELS])
    return out, [labels[i] for i in index]


def flat(x):
    """A NumPy array or an array.array as a flat list, to compare the two."""
    return x.ravel().tolist() if hasattr(x, "ravel") else x.tolist()


def flat_result(result):
    return tuple(flat(part) for part in result)


@pytest.fixture
def small():
    with libram.Model.create(**SMALL) as model:
        yield model


@pytest.fixture
def make_trainer():
    """make_trainer(model_seed, policy_seed, **trainer_params) -> a fresh TINY
    model, its policy and trainer, all closed after the test."""
    made = []

    def make(model_seed=1, policy_seed=1, **params):
        model = libram.Model.create(seed=model_seed, **TINY)
        policy = libram.Policy(model, std=0.2, seed=policy_seed)
        trainer = libram.Trainer(model, policy, **dict(dict(lr=3e-3, max_batch=32), **params))
        made.extend((trainer, policy, model))
        return model, policy, trainer

    yield make
    for obj in made:
        obj.close()


# ---- version and loading

def test_package_version_matches_pyproject():
    with open(os.path.join(PYTHON_DIR, "pyproject.toml"), encoding="utf-8") as f:
        declared = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert libram.__version__ == declared == "0.2.0"


def test_library_version():
    major, minor, patch = libram.library_version_info
    assert major == _capi.SUPPORTED_MAJOR
    assert (major, minor, patch) >= _capi.MIN_VERSION
    assert libram.library_version == "%d.%d.%d" % (major, minor, patch)


def test_unsupported_versions_are_refused():
    assert _capi.check_version(200, "x") == (0, 2, 0)
    assert _capi.check_version(9999, "x") == (0, 99, 99)
    for number in (10000, 20100, 199):  # 1.0.0, 2.1.0, 0.1.99 (older than the binding)
        with pytest.raises(ImportError, match="supports 0.x from 0.2.0"):
            _capi.check_version(number, "libram.so.0")


def run_python(code, env_changes):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if not os.environ.get("LIBRAM_TEST_INSTALLED"):
        env["PYTHONPATH"] = PYTHON_DIR
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_explicit_library_only():
    # A set LIBRAM_LIBRARY is the only candidate, even when it fails.
    r = run_python("import libram", {"LIBRAM_LIBRARY": "/nonexistent/libram.so.0"})
    assert r.returncode != 0
    assert "ImportError: cannot load libram from LIBRAM_LIBRARY=/nonexistent/libram.so.0" \
        in r.stderr


def test_library_that_is_not_libram():
    libc = ctypes.util.find_library("c")
    if not libc:
        pytest.skip("no libc to point LIBRAM_LIBRARY at")
    r = run_python("import libram", {"LIBRAM_LIBRARY": libc})
    assert r.returncode != 0
    assert "does not export ram_version_number" in r.stderr


def loaded_library_file():
    """The file of the libram this process loaded (library_path may be a
    bare soname the dynamic linker resolved)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split(None, 5)[-1].strip()
            if os.path.basename(path).startswith("libram.so"):
                return path
    pytest.skip("cannot tell which file libram was loaded from")


def test_library_next_to_the_package(tmp_path):
    # A copy of the package with libram.so.0 inside is found without
    # LIBRAM_LIBRARY, before any system library.
    package = tmp_path / "libram"
    shutil.copytree(os.path.dirname(libram.__file__), package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
    shutil.copy(loaded_library_file(), package / "libram.so.0")
    r = run_python("import libram; print(libram.library_path)",
                   {"LIBRAM_LIBRARY": None, "PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(package / "libram.so.0")


def test_struct_sizes_and_defaults():
    for cls in (_capi.GlimpseParams, _capi.ModelParams, _capi.PolicyParams,
                _capi.TrainerParams):
        p = _capi.defaults(cls)
        assert cls._fields_[0][0] == "struct_size"
        assert p.struct_size == ctypes.sizeof(cls)
    # ram.h's documented defaults arrive in the right fields.
    p = _capi.defaults(_capi.ModelParams)
    assert (p.channels, p.height, p.width, p.glimpses, p.classes) == (1, 28, 28, 6, 10)
    assert (p.glimpse.patch, p.glimpse.depth, p.glimpse.scale) == (8, 1, 2.0)
    assert p.seed == 1
    t = _capi.defaults(_capi.TrainerParams)
    assert (t.max_batch, t.threads) == (128, 1)
    assert t.beta2 == pytest.approx(0.999, abs=1e-6)
    assert (t.optimizer, t.decay_steps, t.lr_final) == (libram.OPTIMIZERS["adam"], 0, t.lr)
    assert t.weight_decay == 0.0 and t.average_decay == 0.0 and t.label_smoothing == 0.0
    assert t.products == libram.PRODUCTS["float"]
    p = _capi.defaults(_capi.PolicyParams)
    assert (p.std, p.baseline, p.hidden, p.steps, p.reward_scale, p.discount, p.detach_core,
            p.seed) == (0.0, 0, 0, 0, 1.0, 1.0, 1, 1)
    assert ctypes.sizeof(_capi.TrainStatsStruct) == 9 * ctypes.sizeof(ctypes.c_float)
    assert libram.TrainStats._fields == tuple(f for f, _ in _capi.TrainStatsStruct._fields_)


def test_set_blas_threads():
    libram.set_blas_threads(1)  # a no-op without OpenBLAS; must not fail either way
    with pytest.raises(TypeError):
        libram.set_blas_threads("1")


# ---- errors

def test_error_classes():
    assert libram.RamError is libram.Error
    for status in libram.Status:
        if status == libram.Status.OK:
            continue
        cls = libram._ERRORS[status]
        with pytest.raises(cls) as info:
            libram._check(int(status))
        e = info.value
        assert isinstance(e, libram.Error)
        assert e.status is status
        name = _capi.ram_status_string(int(status)).decode()
        assert str(e).startswith(name)
        copy = pickle.loads(pickle.dumps(e))
        assert type(copy) is cls and copy.status is status and copy.message == e.message
    assert issubclass(libram.InvalidArgumentError, ValueError)
    assert issubclass(libram.OutOfMemoryError, MemoryError)
    # A status newer than the binding still raises, as the base class.
    with pytest.raises(libram.Error) as info:
        libram._check(99)
    assert type(info.value) is libram.Error and info.value.status == 99


# ---- model

def test_params_round_trip(small):
    p = small.params
    for key, value in SMALL.items():
        got = p["glimpse"][key] if key in ("patch", "depth", "scale") else p[key]
        if isinstance(value, float):
            assert got == pytest.approx(value, abs=1e-6), key
        else:
            assert got == value, key
    with libram.Model.create(**p) as again:
        assert again.params == p
        assert again.param_count == small.param_count
    assert repr(small) == "<libram.Model 1x12x14, 3 glimpses, 5 classes>"


def test_param_count(small):
    assert small.param_count > 0
    with libram.Model.create() as default:
        assert default.param_count > 200000  # the paper's model: ~209k


def test_threads_same_results(small, buffers):
    x = images(13, SMALL_PIXELS)
    one = [flat_result(small.classify(x[:n * SMALL_PIXELS], n)) for n in (1, 5, 13)]
    small.threads = 3
    assert small.threads == 3
    many = [flat_result(small.classify(x[:n * SMALL_PIXELS], n)) for n in (1, 5, 13)]
    for a, b in zip(one[:2], many[:2]):  # up to 8 images: the same bits
        assert a == b
    assert one[2][0] == many[2][0]  # more: each thread a slice, last bits may differ
    assert many[2][1] == pytest.approx(one[2][1], abs=1e-5)
    with pytest.raises(libram.InvalidArgumentError):
        small.threads = 0
    assert small.threads == 3


def test_half_precision(small, buffers):
    x = images(13, SMALL_PIXELS)
    full = [flat_result(small.classify(x[:n * SMALL_PIXELS], n)) for n in (1, 13)]
    assert small.precision == "float"
    small.precision = "half"  # the existing workspace switches
    half = [flat_result(small.classify(x[:n * SMALL_PIXELS], n)) for n in (1, 13)]
    for a, b in zip(full, half):
        assert a[1] != b[1]  # the weights were rounded...
        assert b[1] == pytest.approx(a[1], abs=0.05)  # ...not garbled
    small.threads = 2  # a new workspace keeps the precision: the same bits at batch 1
    assert flat_result(small.classify(x[:SMALL_PIXELS], 1)) == half[0]
    with pytest.raises(ValueError):
        small.precision = "double"
    assert small.precision == "half"
    small.precision = "bf16"  # half to bfloat16: the copy is remade
    bf16 = [flat_result(small.classify(x[:n * SMALL_PIXELS], n)) for n in (1, 13)]
    for a, h, b in zip(full, half, bf16):
        assert b[1] != a[1] and b[1] != h[1]
        assert b[1] == pytest.approx(a[1], abs=0.1)
    small.precision = "float"
    assert flat_result(small.classify(x[:SMALL_PIXELS], 1)) == full[0]


def test_save_load_classify_equal(small, tmp_path, buffers):
    n, k, steps = 7, SMALL["classes"], SMALL["glimpses"]
    x = images(n, SMALL_PIXELS)
    result = small.classify(x, n)
    labels, probs, locs = result
    assert result.labels is labels
    if buffers == "numpy":
        assert labels.shape == (n,) and probs.shape == (n, k) and locs.shape == (n, steps, 2)
        assert probs.dtype == numpy.float32
    else:
        assert isinstance(labels, array.array) and labels.typecode == "i" and len(labels) == n
        assert probs.typecode == "f" and len(probs) == n * k
        assert locs.typecode == "f" and len(locs) == n * steps * 2
    labels, probs, locs = flat_result(result)
    for i in range(n):
        row = probs[i * k:(i + 1) * k]
        assert sum(row) == pytest.approx(1.0, abs=1e-5)
        assert labels[i] == max(range(k), key=row.__getitem__)
    assert all(-1.0 <= v <= 1.0 for v in locs)

    path = tmp_path / "small.ram"
    small.save(path)  # any path-like
    with libram.Model.load(str(path)) as loaded:
        assert loaded.params == small.params
        assert loaded.param_count == small.param_count
        # Bit-identical weights give bit-identical outputs.
        assert flat_result(loaded.classify(x, n)) == (labels, probs, locs)
        # n defaults to what the size implies; a single image works too.
        assert flat_result(loaded.classify(x)) == (labels, probs, locs)
        one = flat_result(loaded.classify(x[:SMALL_PIXELS]))
        assert one == ([labels[0]], probs[:k], locs[:steps * 2])
        # Float buffers are taken as they are.
        assert flat_result(loaded.classify(array.array("f", x))) == (labels, probs, locs)


def test_sources(small, buffers):
    n = 4
    x = images(n, SMALL_PIXELS, seed=2)
    a = flat_result(small.classify(x, n, source="sampled", seed=5))
    b = flat_result(small.classify(x, n, source="sampled", seed=5))
    assert a == b  # same seed, same samples
    c = flat_result(small.classify(x, n, source="sampled", seed=6))
    assert c[2] != a[2]
    centre = small.classify(x, n, source="center")
    assert flat(centre.locs) == [0.0] * (n * SMALL["glimpses"] * 2)
    small.classify(x, n, source="random", seed=1)
    with pytest.raises(ValueError):
        small.classify(x, n, source="nowhere")


def test_wrong_n_raises(small, buffers):
    x = images(3, SMALL_PIXELS)
    for n in (2, 4, 1000):  # lengths that do not match: caught before libram reads
        with pytest.raises(libram.InvalidArgumentError) as info:
            small.classify(x, n)
        assert info.value.status == libram.Status.INVALID_ARGUMENT
        assert "need" in info.value.message
    for n in (0, -1):  # refused by libram itself, with its message
        with pytest.raises(libram.InvalidArgumentError) as info:
            small.classify(x, n)
        assert info.value.message
    with pytest.raises(libram.InvalidArgumentError):
        small.classify(x[:-1])  # not a whole number of images
    with pytest.raises(libram.InvalidArgumentError):
        small.classify([])
    with pytest.raises(TypeError):
        small.classify(["a"] * SMALL_PIXELS, 1)
    with pytest.raises(TypeError):
        small.classify(bytes(SMALL_PIXELS * 4), 1)  # raw bytes are not floats
    with pytest.raises(TypeError):
        small.classify(x, 3.0)


def test_nan_pixel_raises_numeric(small, buffers):
    # Every pixel of image 0: libram only inspects pixels a glimpse reads.
    x = images(2, SMALL_PIXELS)
    x[:SMALL_PIXELS] = [math.nan] * SMALL_PIXELS
    with pytest.raises(libram.NumericError) as info:
        small.classify(x, 2)
    assert info.value.status == libram.Status.NUMERIC


def test_bad_create_raises():
    with pytest.raises(libram.InvalidArgumentError) as info:
        libram.Model.create(glimpses=0)
    assert str(info.value).startswith("invalid argument: ")
    assert "glimpses" in info.value.message
    with pytest.raises(TypeError):
        libram.Model.create(no_such_field=1)
    with pytest.raises(TypeError):
        libram.Model.create(glimpse=dict(size=3))
    with pytest.raises(TypeError):
        libram.Model.create(glimpses="6")
    with pytest.raises(ValueError):
        libram.Model.create(core="gru")
    with pytest.raises(libram.InvalidArgumentError):
        libram.Model.create(seed=-1)  # would wrap in ctypes


def test_closed_model():
    m = libram.Model.create(**SMALL)
    assert not m.closed
    m.close()
    m.close()  # idempotent
    assert m.closed and repr(m) == "<libram.Model (closed)>"
    with pytest.raises(ValueError, match="closed"):
        m.classify(images(1, SMALL_PIXELS), 1)


def test_model_shared_between_threads(small):
    x = images(20, SMALL_PIXELS, seed=4)
    expected = flat_result(small.classify(x))
    results = [None] * 4

    def work(i):
        results[i] = [flat_result(small.classify(x)) for _ in range(5)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for runs in results for r in runs)


# ---- loading errors

def test_missing_file(tmp_path):
    path = tmp_path / "missing.ram"
    with pytest.raises(libram.InputOutputError) as info:
        libram.Model.load(path)
    e = info.value
    assert e.status == libram.Status.IO
    assert "missing.ram" in e.message
    assert str(e) == "%s: %s" % (_capi.ram_status_string(3).decode(), e.message)


def test_not_a_model(tmp_path):
    path = tmp_path / "junk.ram"
    path.write_bytes(b"this is not a libram model file\n" * 4)
    with pytest.raises(libram.FormatError) as info:
        libram.Model.load(path)
    assert info.value.status == libram.Status.FORMAT
    assert info.value.message


def test_truncated(tmp_path):
    path = tmp_path / "cut.ram"
    with libram.Model.create(**SMALL) as m:
        m.save(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(libram.CorruptError) as info:
        libram.Model.load(path)
    assert info.value.status == libram.Status.CORRUPT


def test_save_to_missing_directory(small, tmp_path):
    with pytest.raises(libram.InputOutputError):
        small.save(tmp_path / "no" / "such" / "dir.ram")


# ---- glimpse sensor

def test_centre_patch(buffers):
    with libram.Glimpse(patch=2, depth=1, scale=2.0) as g:
        assert g.size(1) == 4 and g.size(3) == 12
        img = [float(i + 1) for i in range(16)]  # 4 x 4, value = row * 4 + col + 1
        # (0, 0) is the image centre: the 2 x 2 square over rows and columns 1..2.
        out = g.extract(img, [(0.0, 0.0)], shape=(1, 1, 4, 4))
        if buffers == "numpy":
            assert out.shape == (1, 1, 1, 2, 2)
        else:
            assert isinstance(out, array.array) and out.typecode == "f"
        assert flat(out) == [6.0, 7.0, 10.0, 11.0]
        # Top-left corner (flat locations): one pixel inside, the rest reads zeros.
        out = g.extract(img, [-1.0, -1.0], shape=(1, 1, 4, 4))
        assert flat(out) == [0.0, 0.0, 0.0, 1.0]
    assert g.closed
    assert repr(g) == "<libram.Glimpse patch=2 depth=1 scale=2 (closed)>"
    with pytest.raises(ValueError, match="closed"):
        g.size(1)


def test_two_scales(buffers):
    with libram.Glimpse(patch=1, depth=2, scale=2.0) as g:
        out = g.extract([1.0] * 32, [(0.0, 0.0), (1.0, 1.0)], shape=(2, 1, 4, 4))
        # The second image's corner: a quarter of the 2x2 square is inside.
        assert flat(out) == [1.0, 1.0, 0.0, 0.25]


def test_glimpse_errors(buffers):
    with pytest.raises(libram.InvalidArgumentError):
        libram.Glimpse(patch=0)
    with pytest.raises(TypeError):
        libram.Glimpse(patch=2.5)
    with libram.Glimpse(patch=2) as g:
        img = [0.0] * 16
        with pytest.raises(libram.InvalidArgumentError):
            g.extract(img, [(0.0, 0.0)], shape=(2, 1, 4, 4))  # too few pixels
        with pytest.raises(libram.InvalidArgumentError):
            g.extract(img, [(0.0, 0.0), (0.0, 0.0)], shape=(1, 1, 4, 4))  # too many locations
        with pytest.raises(libram.NumericError):
            g.extract(img, [(math.nan, 0.0)], shape=(1, 1, 4, 4))
        with pytest.raises(libram.InvalidArgumentError):
            g.extract(img, [], shape=(0, 1, 4, 4))  # libram refuses n = 0
        with pytest.raises(TypeError):
            g.extract(img, [(0.0, 0.0)])  # a flat list needs its shape
        with pytest.raises(TypeError):
            g.extract(img, [(0.0, 0.0)], shape=(1, 16))


@pytest.mark.skipif(numpy is None, reason="numpy is not installed")
def test_glimpse_numpy_shapes():
    with libram.Glimpse(patch=2) as g:
        img = numpy.arange(32, dtype=numpy.float32).reshape(2, 4, 4)  # (n, H, W)
        out = g.extract(img, numpy.zeros((2, 2)))
        assert out.shape == (2, 1, 1, 2, 2)
        assert out[1].ravel().tolist() == [21.0, 22.0, 25.0, 26.0]
        two = g.extract(numpy.ones((1, 2, 4, 4)), [(0.0, 0.0)])  # (n, C, H, W), float64
        assert two.shape == (1, 2, 1, 2, 2) and two.dtype == numpy.float32
        assert flat(g.extract(img.tolist(), [0.0] * 4)) == flat(out)  # nested lists


# ---- training

def test_learns_thirds(make_trainer):
    train_x, train_y = thirds(576, seed=1)
    test_x, test_y = thirds(300, seed=2)
    # Chance: the error of always answering the most frequent class.
    chance = 1.0 - max(test_y.count(k) for k in range(3)) / len(test_y)
    assert chance > 0.6
    model, _, trainer = make_trainer()
    before = trainer.evaluate(test_x, test_y)
    assert before > chance / 2  # untrained: not already solved
    stats = None
    for step in range(200):
        if step % 18 == 0:
            order = trainer.shuffle(576)
        i = step % 18 * 32
        stats = trainer.train_batch(*batch(train_x, train_y, order[i:i + 32]))
    assert trainer.steps == 200
    assert isinstance(stats, libram.TrainStats)
    for key, value in stats._asdict().items():
        assert math.isfinite(value), key
    assert stats.lr == pytest.approx(3e-3, abs=1e-7)
    assert stats.loss == pytest.approx(stats.nll + stats.baseline_mse + stats.reinforce,
                                       abs=1e-5)
    after = trainer.evaluate(test_x, test_y)
    assert after < chance / 4, "error %.3f, chance %.3f" % (after, chance)
    # evaluate() agrees with classify() (both use mean locations).
    labels = flat(model.classify(test_x).labels)
    wrong = sum(a != b for a, b in zip(labels, test_y)) / len(test_y)
    assert after == pytest.approx(wrong, abs=1e-12)


def test_checkpoint_resumes_exactly(make_trainer, tmp_path, buffers):
    data_x, data_y = thirds(64, seed=3)
    probe = data_x[:8 * TINY_PIXELS]
    user = bytes(range(256)) * 40  # longer than load_checkpoint's first buffer

    def steps(trainer, count):
        stats = []
        for _ in range(count):
            order = trainer.shuffle(64)[:16]  # the trainer's RNG is checkpointed too
            stats.append(trainer.train_batch(*batch(data_x, data_y, order)))
        return stats

    model, _, trainer = make_trainer()
    whole = steps(trainer, 10)
    expected = flat_result(model.classify(probe))

    path = tmp_path / "run.ckpt"
    model, policy, trainer = make_trainer()
    assert steps(trainer, 5) == whole[:5]
    trainer.save_checkpoint(path, user)
    for obj in (trainer, policy, model):
        obj.close()

    # Other seeds: weights and every RNG must come from the checkpoint.
    model, _, trainer = make_trainer(model_seed=99, policy_seed=98)
    assert flat_result(model.classify(probe)) != expected
    assert trainer.load_checkpoint(path) == user
    assert trainer.steps == 5
    assert steps(trainer, 5) == whole[5:]
    assert trainer.steps == 10
    assert flat_result(model.classify(probe)) == expected  # bit-identical probabilities

    # Short and empty user data; a checkpoint is also a model file.
    trainer.save_checkpoint(path, b"epoch 3")
    assert trainer.load_checkpoint(path) == b"epoch 3"
    trainer.save_checkpoint(str(path))
    assert trainer.load_checkpoint(str(path)) == b""
    with libram.Model.load(path) as loaded:
        assert flat_result(loaded.classify(probe)) == expected


def test_lr_schedule(make_trainer):
    x, y = thirds(4, seed=4)
    _, _, trainer = make_trainer(lr=0.01, decay_steps=5)  # lr_final defaults to lr
    assert trainer.train_batch(x, y).lr == pytest.approx(0.01, abs=1e-7)
    _, _, trainer = make_trainer(optimizer="sgd", lr=0.01, lr_final=0.0, decay_steps=2,
                                 momentum=0.5, nesterov=True)
    lrs = [trainer.train_batch(x, y).lr for _ in range(3)]
    assert [round(v, 7) for v in lrs] == [0.01, 0.005, 0.0]


def test_weight_decay(make_trainer):
    x, y = thirds(4, seed=4)
    _, _, trainer = make_trainer(weight_decay=0.1)  # decoupled, AdamW style
    assert math.isfinite(trainer.train_batch(x, y).loss)
    for bad in (-0.1, float("nan"), 1000.0):  # < 0, NaN, lr * weight_decay >= 1
        with pytest.raises(libram.InvalidArgumentError) as info:
            make_trainer(weight_decay=bad)
        assert "weight_decay" in info.value.message


def test_label_smoothing(make_trainer):
    x, y = thirds(4, seed=4)
    plain = make_trainer()[2].train_batch(x, y)
    smoothed = make_trainer(label_smoothing=0.2)[2].train_batch(x, y)
    # The same first step's nll; the objective's cross-entropy is the
    # label's without smoothing and the smoothed one's with it.
    def cross_entropy(stats):
        return stats.loss - stats.baseline_mse - stats.reinforce

    assert smoothed.nll == pytest.approx(plain.nll, rel=1e-5)
    assert cross_entropy(plain) == pytest.approx(plain.nll, abs=1e-5)
    assert abs(cross_entropy(smoothed) - smoothed.nll) > 1e-3
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(libram.InvalidArgumentError) as info:
            make_trainer(label_smoothing=bad)
        assert "label_smoothing" in info.value.message


def test_bf16_products(make_trainer):
    # Refused with a clear message where the CPU cannot run them; where it
    # can, a first step close to the float products' (the same weights and
    # noise, the products rounded to bfloat16).
    x, y = thirds(32, seed=4)
    with pytest.raises(ValueError):
        make_trainer(products="half")
    if not libram.bf16_products_supported():
        with pytest.raises(libram.InvalidArgumentError) as info:
            make_trainer(products="bf16")
        assert "AVX512_BF16" in info.value.message
        return
    plain = make_trainer()[2].train_batch(x, y)
    bf16 = make_trainer(products="bf16")[2].train_batch(x, y)
    assert bf16.nll == pytest.approx(plain.nll, rel=2e-2)


def test_weight_average(make_trainer, tmp_path):
    x, y = thirds(8, seed=4)
    model, _, trainer = make_trainer(average_decay=0.5)
    for _ in range(3):
        trainer.train_batch(x, y)

    def probs(c):
        return [float(v) for v in (c.probs.ravel() if hasattr(c.probs, "ravel") else c.probs)]

    last = probs(model.classify(x))
    assert not trainer.average_in
    trainer.swap_average()  # the model now holds the average
    assert trainer.average_in
    averaged = probs(model.classify(x))
    with pytest.raises(libram.InvalidArgumentError) as info:
        trainer.train_batch(x, y)
    assert "swap_average" in info.value.message
    with pytest.raises(libram.InvalidArgumentError):
        trainer.save_checkpoint(str(tmp_path / "a.ckpt"))
    trainer.evaluate(x, y)  # evaluating the average is what it is for
    trainer.swap_average()
    assert not trainer.average_in
    assert probs(model.classify(x)) == last and averaged != last
    trainer.train_batch(x, y)  # trains again once the weights are back
    ckpt = str(tmp_path / "avg.ckpt")  # the checkpoint carries the average
    trainer.save_checkpoint(ckpt)
    model2, _, trainer2 = make_trainer(average_decay=0.5)
    trainer2.load_checkpoint(ckpt)
    trainer.swap_average()
    trainer2.swap_average()
    assert probs(model2.classify(x)) == probs(model.classify(x))
    with pytest.raises(libram.InvalidArgumentError):
        trainer2.load_checkpoint(ckpt)  # not while the average is in
    _, _, plain = make_trainer()
    with pytest.raises(libram.InvalidArgumentError):
        plain.swap_average()
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(libram.InvalidArgumentError) as info:
            make_trainer(average_decay=bad)
        assert "average_decay" in info.value.message


def test_bad_labels_and_lengths(make_trainer, buffers):
    _, _, trainer = make_trainer()
    x, y = thirds(4, seed=5)
    for bad in (3, -1):  # out of [0, classes): refused by libram
        for call in (trainer.train_batch, trainer.evaluate):
            with pytest.raises(libram.InvalidArgumentError) as info:
                call(x, y[:3] + [bad])
            assert "label" in info.value.message
    for xs, ys in ((x, y[:3]), (x, y + [0]), (x[:-1], y), (x + [0.0], y), ([], y), (x, [])):
        for call in (trainer.train_batch, trainer.evaluate):  # caught in Python
            with pytest.raises(libram.InvalidArgumentError) as info:
                call(xs, ys)
            assert "need" in info.value.message
    for call in (trainer.train_batch, trainer.evaluate):
        with pytest.raises(libram.InvalidArgumentError) as info:  # libram's own message
            call([], [])
        assert "n = 0" in info.value.message
    big_x, big_y = thirds(33, seed=6)  # more than max_batch = 32
    with pytest.raises(libram.InvalidArgumentError):
        trainer.train_batch(big_x, big_y)
    assert trainer.evaluate(big_x, big_y) < 1.01  # evaluate splits batches
    with pytest.raises(TypeError):
        trainer.train_batch(x, [0.5, 1.0, 2.0, 0.0])
    with pytest.raises(TypeError):
        trainer.train_batch(x, "abcd")
    with pytest.raises(libram.InvalidArgumentError):
        trainer.train_batch(x, [0, 1, 2, 2 ** 40])
    nan = list(x)
    pixels = len(x) // len(y)
    nan[:pixels] = [math.nan] * pixels  # all of image 0: whatever a glimpse reads
    with pytest.raises(libram.NumericError) as info:
        trainer.train_batch(nan, y)
    assert "image 0 " in info.value.message
    assert trainer.steps == 0  # no failed call took a step
    assert flat(trainer.shuffle(0)) == []
    assert sorted(flat(trainer.shuffle(7))) == list(range(7))
    with pytest.raises(libram.InvalidArgumentError):
        trainer.shuffle(-1)


def test_bad_params(tmp_path):
    with libram.Model.create(**TINY) as model:
        with pytest.raises(ValueError):
            libram.Policy(model, baseline="huge")
        with pytest.raises(TypeError):
            libram.Policy(model, no_such_field=1)
        with pytest.raises(TypeError):
            libram.Policy("model")
        with pytest.raises(libram.InvalidArgumentError):  # no model for std/hidden/steps
            libram.Policy(None)
        with pytest.raises(libram.InvalidArgumentError):
            libram.Policy(model, discount=2.0)
        with libram.Policy(None, std=0.1, hidden=16, steps=3, baseline="scalar") as free:
            libram.Trainer(model, free).close()  # a model-less policy that fits the model
        with libram.Policy(model, steps=5) as wrong, \
                pytest.raises(libram.InvalidArgumentError) as info:
            libram.Trainer(model, wrong)  # steps differ from the model's glimpses
        assert "steps" in info.value.message
        with libram.Policy(model, baseline=libram.BASELINE_TYPES["none"]) as policy:
            with pytest.raises(ValueError):
                libram.Trainer(model, policy, optimizer="rmsprop")
            with pytest.raises(TypeError):
                libram.Trainer(model, policy, learning_rate=0.1)
            with pytest.raises(TypeError):
                libram.Trainer(model, policy, max_batch=1.5)
            with pytest.raises(libram.InvalidArgumentError):
                libram.Trainer(model, policy, max_batch=2 ** 40)  # would wrap in ctypes
            with pytest.raises(libram.InvalidArgumentError):
                libram.Trainer(model, policy, lr=-1.0)
            with pytest.raises(TypeError):
                libram.Trainer(policy, model)
            with libram.Trainer(model, policy) as trainer, pytest.raises(TypeError):
                trainer.save_checkpoint(tmp_path / "c", "text")
            with pytest.raises(TypeError):
                policy.seed(-1)
        assert not model._trainers


def test_load_checkpoint_errors(make_trainer, tmp_path):
    model, _, trainer = make_trainer()
    x, y = thirds(4, seed=7)
    trainer.train_batch(x, y)
    path = tmp_path / "a.ckpt"
    trainer.save_checkpoint(path, b"keep")
    with pytest.raises(libram.InputOutputError):
        trainer.load_checkpoint(tmp_path / "missing.ckpt")
    plain = tmp_path / "plain.ram"
    model.save(plain)
    with pytest.raises(libram.FormatError):
        trainer.load_checkpoint(plain)
    with libram.Model.create(**dict(TINY, core_hidden=8)) as other, \
            libram.Policy(other) as policy, libram.Trainer(other, policy) as wrong:
        with pytest.raises(libram.MismatchError) as info:
            wrong.load_checkpoint(path)
        assert info.value.status == libram.Status.MISMATCH
        assert wrong.steps == 0
    with libram.Policy(model, baseline="scalar") as policy, \
            libram.Trainer(model, policy) as wrong, pytest.raises(libram.MismatchError):
        wrong.load_checkpoint(path)
    assert trainer.load_checkpoint(path) == b"keep"
    assert trainer.steps == 1


def test_lifetimes(make_trainer):
    x, y = thirds(4, seed=8)
    # The trainer alone keeps the borrowed model and policy alive.
    model = libram.Model.create(**TINY)
    trainer = libram.Trainer(model, libram.Policy(model))
    del model
    gc.collect()
    trainer.train_batch(x, y)
    assert isinstance(trainer.model, libram.Model)
    assert len(flat(trainer.model.classify(x).labels)) == 4
    trainer.close()
    trainer.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        trainer.train_batch(x, y)
    with pytest.raises(ValueError):
        trainer.steps
    # Closing the model or the policy closes its trainers first.
    for owner in ("model", "policy"):
        model, policy, trainer = make_trainer()
        getattr(trainer, owner).close()
        assert trainer.closed
        with pytest.raises(ValueError):
            trainer.evaluate(x, y)
        assert len(model._trainers) + len(policy._trainers) == 0
    with libram.Model.create(**TINY) as model, libram.Policy(model) as policy:
        with libram.Trainer(model, policy) as trainer:
            trainer.train_batch(x, y)
        assert trainer.closed and not policy.closed
        policy.seed(7)
        with pytest.raises(ValueError):
            trainer.shuffle(3)


def test_trainer_with_its_own_policy():
    x, y = thirds(4, seed=10)
    with libram.Model.create(**TINY) as model:
        with libram.Trainer(model, lr=1e-3) as trainer:
            policy = trainer.policy
            assert isinstance(policy, libram.Policy)
            trainer.train_batch(x, y)
        assert policy.closed and not model.closed  # the trainer's policy goes with it
        trainer = libram.Trainer(model)
        policy = trainer.policy
    assert trainer.closed and policy.closed  # closing the model closed both


@pytest.mark.skipif(numpy is None, reason="numpy is not installed")
def test_training_same_with_and_without_numpy(monkeypatch):
    x, y = thirds(16, seed=9)
    results = []
    for use_numpy in (False, True):
        if not use_numpy:
            monkeypatch.setattr(libram, "_np", None)
        else:
            monkeypatch.undo()
        with libram.Model.create(**TINY) as model, libram.Policy(model) as policy, \
                libram.Trainer(model, policy, max_batch=16) as trainer:
            xs, ys = x, y
            if use_numpy:  # float64 and int64 are converted
                xs = numpy.array(x, dtype=numpy.float64).reshape(16, 1, 12, 12)
                ys = numpy.array(y, dtype=numpy.int64)
            stats = [trainer.train_batch(xs, ys) for _ in range(3)]
            results.append((stats, trainer.evaluate(xs, ys), flat(trainer.shuffle(5)),
                            flat_result(model.classify(xs))))
            if use_numpy:
                with pytest.raises(TypeError):
                    trainer.train_batch(xs, ys.astype(numpy.float32))
                with pytest.raises(libram.InvalidArgumentError):
                    trainer.train_batch(xs[:15], ys)
                assert isinstance(trainer.shuffle(3), numpy.ndarray)
    assert results[0] == results[1]


def test_gradient_hook(make_trainer, buffers):
    model, policy, trainer = make_trainer()
    other_model, other_policy, other = make_trainer()
    x, y = thirds(8, seed=3)
    seen = []

    def double_then_halve(grad):
        seen.append(len(grad))
        for i in range(0, len(grad), 97):  # touch it, leave it as it was
            grad[i] = grad[i] * 2
            grad[i] = grad[i] / 2

    trainer.set_gradient_hook(double_then_halve)
    trainer.train_batch(x, y)
    other.train_batch(x, y)
    assert seen == [trainer.gradient_size] and trainer.gradient_size > model.param_count
    a = flat_result(model.classify(x, 8))
    assert a == flat_result(other_model.classify(x, 8))

    class Boom(Exception):
        pass

    def fail(grad):
        raise Boom("no network")

    trainer.set_gradient_hook(fail)
    with pytest.raises(Boom):
        trainer.train_batch(x, y)
    assert trainer.steps == 1  # the failed step changed nothing
    trainer.set_gradient_hook(None)
    trainer.train_batch(x, y)
    other.train_batch(x, y)
    assert flat_result(model.classify(x, 8)) == flat_result(other_model.classify(x, 8))


# ---- class names, the fit rule and fitting an image

def test_class_names_and_fit_are_saved(tmp_path):
    with libram.Model.create(height=10, width=12, classes=3, glimpses=2) as m:
        assert m.class_names is None and m.fit == "pad"
        m.class_names = ["cat", "dog", "caf\u00e9"]
        m.fit = "letterbox"
        path = str(tmp_path / "m.ram")
        m.save(path)
        with pytest.raises(libram.InvalidArgumentError):
            m.class_names = ["only", "two"]
        with pytest.raises(ValueError):
            m.fit = "stretch"
    with libram.Model.load(path) as back:
        assert back.class_names == ["cat", "dog", "caf\u00e9"]
        assert back.fit == "letterbox"
        back.class_names = None
        assert back.class_names is None


@pytest.mark.skipif(numpy is None, reason="needs NumPy")
def test_fit_image_pads_and_converts():
    with libram.Model.create(height=6, width=6, glimpses=2) as m:
        rgb = numpy.zeros((3, 2, 4), dtype=numpy.float32)
        rgb[0] = 1.0  # pure red: luma 0.299
        out = m.fit_image(rgb, rgb.shape)
        assert out.shape == (1, 6, 6)
        assert numpy.allclose(out[0, 2:4, 1:5], 0.299) and out.sum() == pytest.approx(8 * 0.299)
        with pytest.raises(libram.InvalidArgumentError):
            m.fit_image(numpy.zeros(10, dtype=numpy.float32), (1, 2, 4))


@pytest.mark.skipif(numpy is None, reason="uint8 images are NumPy arrays")
def test_uint8_images_are_bytes_over_255(small, make_trainer):
    """A NumPy uint8 array is 8-bit pixels, byte b the value b / 255 (the C
    library's _u8 functions): the same bits as the float32 array b / 255, in
    classify, glimpse extraction, training and evaluation; never the raw
    0..255 taken as pixel values."""
    rng = numpy.random.default_rng(5)
    raw = rng.integers(0, 256, size=(6, 1, 12, 14), dtype=numpy.uint8)
    f = raw.astype(numpy.float32) / numpy.float32(255)
    for source in ("mean", "sampled"):
        a, b = small.classify(raw, source=source), small.classify(f, source=source)
        assert numpy.array_equal(a.labels, b.labels)
        assert a.probs.tobytes() == b.probs.tobytes()
        assert a.locs.tobytes() == b.locs.tobytes()
    as_values = small.classify(raw.astype(numpy.float32))  # what the bytes are not
    assert as_values.probs.tobytes() != small.classify(raw).probs.tobytes()
    with libram.Glimpse(patch=4, depth=2) as g:
        locs = numpy.zeros((6, 2), dtype=numpy.float32)
        assert g.extract(raw, locs).tobytes() == g.extract(f, locs).tobytes()
    traw = rng.integers(0, 256, size=(8, 1, 12, 12), dtype=numpy.uint8)
    labels = [0, 1, 2, 0, 1, 2, 0, 1]
    (_, _, t1), (_, _, t2) = make_trainer(), make_trainer()
    for _ in range(3):
        s1 = t1.train_batch(traw, labels)
        s2 = t2.train_batch(traw.astype(numpy.float32) / numpy.float32(255), labels)
        assert s1 == s2
    assert t1.evaluate(traw, labels) == t2.evaluate(traw.astype(numpy.float32) / 255, labels)
