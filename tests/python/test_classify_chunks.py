"""Model.classify() on inputs larger than one C call (Model.classify_chunk):
the chunks must give exactly what separate calls of one chunk each give."""

import random

import pytest

import libram

try:
    import numpy
except ImportError:
    numpy = None

SMALL = dict(height=10, width=9, patch=3, depth=2, glimpse_hidden=8, loc_hidden=6,
             glimpse_out=10, core_hidden=12, glimpses=3, classes=4, seed=7)
PIXELS = 10 * 9


def pixels(n, seed=1):
    rng = random.Random(seed)
    return [rng.random() for _ in range(n * PIXELS)]


def flat(x):
    return x.ravel().tolist() if hasattr(x, "ravel") else x.tolist()


@pytest.fixture
def small():
    with libram.Model.create(**SMALL) as model:
        yield model


@pytest.mark.parametrize("chunk", [1, 7, 16])
def test_chunks_equal_separate_calls(small, buffers, chunk):
    n = 3 * chunk + 2  # whole chunks and a partial one
    x = pixels(n)
    small.classify_chunk = chunk
    whole = small.classify(x)
    labels, probs, locs = [], [], []
    for i in range(0, n, chunk):
        part = small.classify(x[i * PIXELS:min(i + chunk, n) * PIXELS])
        labels += flat(part.labels)
        probs += flat(part.probs)
        locs += flat(part.locs)
    assert flat(whole.labels) == labels
    assert flat(whole.probs) == probs
    assert flat(whole.locs) == locs
    assert len(labels) == n and len(probs) == n * 4 and len(locs) == n * 3 * 2
    # Every image was classified (a chunk left out would keep zero probabilities).
    assert all(abs(sum(probs[4 * i:4 * i + 4]) - 1) < 1e-5 for i in range(n))


def test_chunk_size_does_not_change_mean_results(small):
    x = pixels(40, seed=2)
    small.classify_chunk = 5
    a = small.classify(x)
    small.classify_chunk = 40  # one call: equal up to rounding (kernels differ by batch size)
    b = small.classify(x)
    assert flat(a.labels) == flat(b.labels)
    assert flat(a.probs) == pytest.approx(flat(b.probs), abs=1e-6)


@pytest.mark.parametrize("source", ["sampled", "random", "center"])
def test_chunked_sources_are_reproducible(small, source):
    x = pixels(30, seed=3)
    small.classify_chunk = 8
    a = small.classify(x, source=source, seed=5)
    b = small.classify(x, source=source, seed=5)
    assert flat(a.locs) == flat(b.locs)
    assert flat(a.probs) == flat(b.probs)
    if source != "center":
        c = small.classify(x, source=source, seed=6)
        assert flat(c.locs) != flat(a.locs)
        # One RNG for the whole call: the chunks do not repeat each other's draws.
        locs = flat(a.locs)
        per_image = 3 * 2
        assert locs[:8 * per_image] != locs[8 * per_image:16 * per_image]


def test_bad_chunk_size(small):
    small.classify_chunk = 0
    with pytest.raises(libram.InvalidArgumentError):
        small.classify(pixels(2))
    small.classify_chunk = 2 ** 20 + 1
    with pytest.raises(libram.InvalidArgumentError):
        small.classify(pixels(2))
    small.classify_chunk = 2.5
    with pytest.raises(TypeError):
        small.classify(pixels(2))


def test_wrong_n_still_raises(small):
    x = pixels(5)
    small.classify_chunk = 2
    for n in (0, -1):
        with pytest.raises(libram.InvalidArgumentError) as info:
            small.classify(x, n)
        assert info.value.message
    with pytest.raises(libram.InvalidArgumentError):
        small.classify(x, 6)
    with pytest.raises(TypeError):
        small.classify(x, 5.0)


@pytest.mark.skipif(numpy is None, reason="numpy is not installed")
def test_more_images_than_a_workspace_holds():
    # A workspace holds at most 2^20 images; classify() must not care.
    n = 2 ** 20 + 3
    with libram.Model.create(height=2, width=2, patch=1, glimpse_hidden=2, loc_hidden=2,
                             glimpse_out=2, core_hidden=2, glimpses=1, classes=2,
                             loc_range_pixels=0.0) as model:
        x = numpy.random.default_rng(1).random((n, 1, 2, 2), dtype=numpy.float32)
        result = model.classify(x)
        assert result.labels.shape == (n,)
        assert numpy.allclose(result.probs.sum(axis=1), 1, atol=1e-5)
        tail = model.classify(x[-3:])
        assert numpy.array_equal(result.probs[-3:], tail.probs)
        assert numpy.array_equal(result.labels[-3:], tail.labels)
