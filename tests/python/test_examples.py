"""The examples in examples/python run end to end on tiny synthetic IDX data
sets the tests write themselves (no MNIST needed), with NumPy and without."""

import array
import gzip
import os
import random
import struct
import subprocess
import sys

import pytest

import libram

from conftest import PYTHON_DIR

EXAMPLES = os.path.join(os.path.dirname(PYTHON_DIR), "examples", "python")

# What the tiny classify data set looks like; the model must match it.
TINY = dict(height=12, width=12, patch=4, glimpse_hidden=16, loc_hidden=16, glimpse_out=16,
            core_hidden=16, glimpses=3, classes=3, loc_range_pixels=0.0)


def write_idx(directory, split, pixels, labels, height, width, compress=False):
    """Write `split`-images-idx3-ubyte and -labels-idx1-ubyte (bytes)."""
    n = len(labels)
    images = struct.pack(">IIII", 0x803, n, height, width) + bytes(pixels)
    tags = struct.pack(">II", 0x801, n) + bytes(labels)
    for name, data in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", tags)):
        path = os.path.join(directory, "%s-%s" % (split, name))
        if compress:
            with gzip.open(path + ".gz", "wb") as f:
                f.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)


def random_digits(n, height, width, classes, seed):
    rng = random.Random(seed)
    pixels = [rng.randrange(256) for _ in range(n * height * width)]
    labels = [rng.randrange(classes) for _ in range(n)]
    return pixels, labels


def run_example(script, args, numpy_blocked):
    """Run examples/python/`script` in a fresh interpreter that imports
    this tree's libram (unless LIBRAM_TEST_INSTALLED), optionally as if
    NumPy were not installed."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if not os.environ.get("LIBRAM_TEST_INSTALLED"):
        env["PYTHONPATH"] = PYTHON_DIR
    path = os.path.join(EXAMPLES, script)
    # sys.modules["numpy"] = None makes `import numpy` fail as if absent.
    code = ("import runpy, sys\n"
            "if %r:\n"
            "    sys.modules['numpy'] = None\n"
            "sys.path.insert(0, %r)\n"
            "sys.argv = %r\n"
            "runpy.run_path(%r, run_name='__main__')\n"
            % (numpy_blocked, EXAMPLES, [path] + args, path))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)


def numpy_modes():
    modes = [True]  # blocked: works everywhere
    if libram._np is not None:
        modes.append(False)
    return modes


@pytest.mark.parametrize("numpy_blocked", numpy_modes(), ids=lambda b: "plain" if b else "numpy")
@pytest.mark.parametrize("compress", [False, True], ids=["idx", "gz"])
def test_classify_example(tmp_path, numpy_blocked, compress):
    n = 37
    pixels, labels = random_digits(n, 12, 12, 3, seed=1)
    write_idx(tmp_path, "t10k", pixels, labels, 12, 12, compress)
    model_path = tmp_path / "tiny.ram"
    with libram.Model.create(**TINY) as model:
        model.save(model_path)
        # The example converts pixels as ram-eval does: float32(byte) / 255.
        floats = array.array("f", [b / 255.0 for b in pixels])
        predicted = model.classify(floats).labels
    errors = sum(int(p) != t for p, t in zip(predicted, labels))
    assert 0 < errors < n  # an untrained model: some right, some wrong

    args = ["--data", str(tmp_path), "--model", str(model_path), "--batch", "10"]
    r = run_example("classify_mnist.py", args + ["--expect-errors", str(errors)], numpy_blocked)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(%d of %d wrong;" % (errors, n) in r.stdout
    assert "test error %.2f %%" % (100.0 * errors / n) in r.stdout
    assert "as expected: %d errors" % errors in r.stdout

    r = run_example("classify_mnist.py", args + ["--expect-errors", str(errors + 1)],
                    numpy_blocked)
    assert r.returncode == 1
    assert "MISMATCH" in r.stdout


def test_classify_example_refuses_other_sizes(tmp_path):
    pixels, labels = random_digits(5, 10, 10, 3, seed=2)
    write_idx(tmp_path, "t10k", pixels, labels, 10, 10)
    with libram.Model.create(**TINY) as model:
        model.save(tmp_path / "tiny.ram")
    r = run_example("classify_mnist.py",
                    ["--data", str(tmp_path), "--model", str(tmp_path / "tiny.ram")], True)
    assert r.returncode != 0
    assert "takes 1x12x12 images" in r.stderr


@pytest.mark.parametrize("numpy_blocked", numpy_modes(), ids=lambda b: "plain" if b else "numpy")
def test_train_example(tmp_path, numpy_blocked):
    for split, n, seed in (("train", 48, 3), ("t10k", 16, 4)):
        pixels, labels = random_digits(n, 28, 28, 10, seed)
        write_idx(tmp_path, split, pixels, labels, 28, 28)
    out = tmp_path / "trained.ram"
    # 4 steps of 16 cross the end of the 48 training images: a reshuffle.
    r = run_example("train_mnist.py",
                    ["--data", str(tmp_path), "--batches", "4", "--batch", "16", "--every", "2",
                     "--eval", "100", "--out", str(out)], numpy_blocked)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line.split()[:1] in
            (["0"], ["2"], ["4"])]
    assert [row[0] for row in rows] == ["0", "2", "4"]
    assert "test error fell from" in r.stdout and "in 4 batches" in r.stdout
    with libram.Model.load(out) as model:
        assert model.image_shape == (1, 28, 28)


def test_size_cost_runs():
    pytest.importorskip("numpy")  # the example needs it
    r = run_example("size_cost.py", ["--reps", "1", "--images", "2"], False)
    assert r.returncode == 0, r.stderr
    assert "1024 x 1024 x 3" in r.stdout and "ratio 1024 / 60" in r.stdout
    models = os.path.join(os.path.dirname(__file__), "..", "..", "models")
    r = run_example("size_cost.py", ["--reps", "1", "--images", "2", "--models",
                                     os.path.join(models, "mnist-6glimpses.ram"),
                                     os.path.join(models, "translated60.ram")], False)
    assert r.returncode == 0, r.stderr
    assert "(60 x 60 x 1)" in r.stdout and "ratio second / first" in r.stdout
