"""libram.datasets on files the tests write themselves: IDX pairs (plain and
gzip, 3-D and 4-D, several element types), .npy and .npz files, and image
folders, including truncated, foreign and corrupt files."""

import gzip
import re
import struct
import sys
import threading
import time
import zlib

import pytest

numpy = pytest.importorskip("numpy")

from libram import datasets  # noqa: E402

try:
    from PIL import Image
except ImportError:
    Image = None
needs_pil = pytest.mark.skipif(Image is None, reason="Pillow is not installed")


def idx_bytes(array, type_byte=0x08):
    array = numpy.asarray(array)
    dtype = datasets.IDX_TYPES[type_byte]
    head = bytes([0, 0, type_byte, array.ndim]) + struct.pack(">%dI" % array.ndim, *array.shape)
    return head + array.astype(dtype).tobytes()


def write(path, data):
    path.write_bytes(data)
    return path


@pytest.fixture
def pair(tmp_path):
    rng = numpy.random.default_rng(1)
    images = rng.integers(0, 256, (5, 4, 3), dtype=numpy.uint8)
    labels = numpy.array([0, 3, 1, 2, 3], numpy.uint8)
    return (images, labels, write(tmp_path / "images-idx3-ubyte", idx_bytes(images)),
            write(tmp_path / "labels-idx1-ubyte", idx_bytes(labels)))


# ---- IDX

def test_idx_memory_mapped(pair):
    images, labels, ipath, lpath = pair
    x, y = datasets.load_idx(ipath, lpath)
    assert isinstance(x, numpy.memmap) and isinstance(y, numpy.memmap)
    assert x.shape == (5, 4, 3) and x.dtype == numpy.uint8
    assert numpy.array_equal(x, images) and numpy.array_equal(y, labels)
    assert not x.flags.writeable


def test_idx_4d_gzip_and_wide_types(tmp_path):
    colour = numpy.arange(2 * 3 * 2 * 3).reshape(2, 3, 2, 3).astype(numpy.uint8)
    many = numpy.array([0, 999], numpy.int32)  # more classes than a byte holds
    with gzip.open(tmp_path / "c.gz", "wb") as f:
        f.write(idx_bytes(colour))
    write(tmp_path / "l", idx_bytes(many, 0x0C))
    x, y = datasets.load_idx(tmp_path / "c.gz", tmp_path / "l")
    assert x.shape == (2, 3, 2, 3) and numpy.array_equal(x, colour)
    assert y.dtype == numpy.dtype(">i4") and list(y) == [0, 999]
    floats = numpy.linspace(0, 1, 2 * 2 * 2).reshape(2, 2, 2)
    write(tmp_path / "f", idx_bytes(floats, 0x0D))
    x, _ = datasets.load_idx(tmp_path / "f", tmp_path / "l")
    assert numpy.allclose(x, floats)


def test_idx_errors(pair, tmp_path):
    images, labels, ipath, lpath = pair
    data = ipath.read_bytes()
    for cut, what in ((2, "truncated"), (10, "truncated"), (len(data) - 1, "truncated")):
        bad = write(tmp_path / "cut", data[:cut])
        with pytest.raises(ValueError, match=what) as info:
            datasets.load_idx(bad, lpath)
        assert str(bad) in str(info.value)
    long = write(tmp_path / "long", data + b"\0\0")
    with pytest.raises(ValueError, match="2 bytes after the data"):
        datasets.load_idx(long, lpath)
    for magic in (b"\x01\x00\x08\x03", b"\x00\x00\x07\x03", b"\x89PNG"):
        bad = write(tmp_path / "magic", magic + data[4:])
        with pytest.raises(ValueError, match="not an IDX file") as info:
            datasets.load_idx(bad, lpath)
        assert str(bad) in str(info.value)
    with pytest.raises(ValueError, match="1 dimensions, expected 3 or 4"):
        datasets.load_idx(lpath, lpath)
    with pytest.raises(ValueError, match="3 dimensions, expected 1"):
        datasets.load_idx(ipath, ipath)
    short = write(tmp_path / "short-labels", idx_bytes(labels[:4]))
    with pytest.raises(ValueError, match="5 images but .* 4 labels"):
        datasets.load_idx(ipath, short)
    with gzip.open(tmp_path / "cut.gz", "wb") as f:
        f.write(data)
    write(tmp_path / "cut.gz", (tmp_path / "cut.gz").read_bytes()[:-8])
    with pytest.raises(ValueError, match="cut.gz"):
        datasets.load_idx(tmp_path / "cut.gz", lpath)
    with pytest.raises(FileNotFoundError):
        datasets.load_idx(tmp_path / "missing", lpath)


# ---- .npy / .npz

def test_npy_memory_mapped(tmp_path):
    x = numpy.arange(24, dtype=numpy.uint8).reshape(2, 3, 4)
    numpy.save(tmp_path / "x.npy", x)
    numpy.save(tmp_path / "y.npy", numpy.array([1, 0]))
    images, labels = datasets.load_npy(tmp_path / "x.npy", tmp_path / "y.npy")
    assert isinstance(images, numpy.memmap) and numpy.array_equal(images, x)
    assert list(labels) == [1, 0]
    numpy.save(tmp_path / "y3.npy", numpy.array([1, 0, 1]))
    with pytest.raises(ValueError, match="2 images but .* 3 labels"):
        datasets.load_npy(tmp_path / "x.npy", tmp_path / "y3.npy")
    with pytest.raises(ValueError, match="labels must be 1-D"):
        datasets.load_npy(tmp_path / "x.npy", tmp_path / "x.npy")
    with pytest.raises(ValueError, match="3-D"):
        datasets.load_npy(tmp_path / "y.npy", tmp_path / "y.npy")
    numpy.save(tmp_path / "obj.npy", numpy.array([{"a": 1}, None], dtype=object))
    with pytest.raises(ValueError, match="obj.npy"):
        datasets.load_npy(tmp_path / "x.npy", tmp_path / "obj.npy")
    data = (tmp_path / "x.npy").read_bytes()
    write(tmp_path / "cut.npy", data[:-5])
    with pytest.raises(ValueError, match="cut.npy"):
        datasets.load_npy(tmp_path / "cut.npy", tmp_path / "y.npy")


def test_npz_keras_layout(tmp_path):
    rng = numpy.random.default_rng(2)
    parts = dict(x_train=rng.integers(0, 256, (6, 4, 4), dtype=numpy.uint8),
                 y_train=rng.integers(0, 10, 6, dtype=numpy.uint8),
                 x_test=rng.integers(0, 256, (3, 4, 4), dtype=numpy.uint8),
                 y_test=rng.integers(0, 10, 3, dtype=numpy.uint8))
    numpy.savez_compressed(tmp_path / "mnist.npz", **parts)
    out = datasets.load_npz(tmp_path / "mnist.npz")
    for got, key in zip(out, ("x_train", "y_train", "x_test", "y_test")):
        assert numpy.array_equal(got, parts[key])
    numpy.savez(tmp_path / "partial.npz", x_train=parts["x_train"], y_train=parts["y_train"])
    with pytest.raises(ValueError, match="lacks x_test, y_test"):
        datasets.load_npz(tmp_path / "partial.npz")
    numpy.savez(tmp_path / "mismatch.npz", **dict(parts, y_test=parts["y_test"][:2]))
    with pytest.raises(ValueError, match="3 images but .*y_test has 2 labels"):
        datasets.load_npz(tmp_path / "mismatch.npz")
    data = (tmp_path / "mnist.npz").read_bytes()
    write(tmp_path / "cut.npz", data[:len(data) // 2])
    with pytest.raises(ValueError, match="cut.npz"):
        datasets.load_npz(tmp_path / "cut.npz")
    numpy.save(tmp_path / "single.npy", parts["x_train"])
    with pytest.raises(ValueError, match="load_npy"):
        datasets.load_npz(tmp_path / "single.npy")


# ---- folders

def save(path, array, mode=None, format=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(numpy.asarray(array, numpy.uint8), mode).save(path, format=format)
    return path


@pytest.fixture
def folder(tmp_path):
    """PATH/train/{cat,dog}/ and PATH/test/{bird,cat}/ of 6 x 8 grey PNGs."""
    root = tmp_path / "pets"
    for split, classes in (("train", ("dog", "cat")), ("test", ("cat", "bird"))):
        for k, name in enumerate(classes):
            for i in range(2):
                value = 10 * (k + 1) + i
                save(root / split / name / ("%d.png" % i), numpy.full((6, 8), value))
    return root


@needs_pil
def test_folder_splits_and_classes(folder):
    train = datasets.load_folder(folder, split="train")
    assert train.classes == ["bird", "cat", "dog"]  # sorted, both splits' union
    assert train.images.shape == (4, 6, 8) and train.images.dtype == numpy.uint8
    assert list(train.labels) == [1, 1, 2, 2]
    assert [f.rsplit("/", 2)[1] for f in train.files] == ["cat", "cat", "dog", "dog"]
    assert list(train.images[:, 0, 0]) == [20, 21, 10, 11]  # cat was second in creation order
    test = datasets.load_folder(folder, split="test")
    assert test.classes == train.classes and list(test.labels) == [0, 0, 1, 1]
    assert train.skipped == []
    with pytest.raises(ValueError, match="split='train'"):
        datasets.load_folder(folder)
    with pytest.raises(ValueError, match="no split 'val'"):
        datasets.load_folder(folder, split="val")
    flat = datasets.load_folder(folder / "train")  # PATH/<class>/ directly
    assert flat.classes == ["cat", "dog"] and list(flat.labels) == [0, 0, 1, 1]
    only = datasets.load_folder(folder, split="train", classes=["dog", "cat"])
    assert only.classes == ["dog", "cat"] and list(only.labels) == [0, 0, 1, 1]
    assert list(only.images[:, 0, 0]) == [10, 11, 20, 21]
    assert datasets.load_folder(folder, split="train", classes=["cat"]).images.shape[0] == 2


@needs_pil
def test_folder_fit_modes(tmp_path):
    root = tmp_path / "sizes"
    small = numpy.full((2, 4), 200)
    save(root / "a" / "small.png", small)
    big = numpy.zeros((8, 8))
    big[2:6, 2:6] = 255  # a square in the middle of a black border
    save(root / "b" / "big.png", big)
    with pytest.raises(ValueError, match="size="):
        datasets.load_folder(root)
    pad = datasets.load_folder(root, size=(4, 6), fit="pad")
    assert pad.images.shape == (2, 4, 6)
    expect = numpy.zeros((4, 6))
    expect[1:3, 1:5] = 200  # centred, zeros around, not rescaled
    assert numpy.array_equal(pad.images[0], expect)
    assert numpy.array_equal(pad.images[1], big[2:6, 1:7])  # larger: the centre kept
    resized = datasets.load_folder(root, size=4, fit="resize")
    assert resized.images.shape == (2, 4, 4)
    assert (resized.images[0] == 200).all()  # stretched over the whole canvas
    assert resized.images[1, 0, 0] < 64 and resized.images[1, 1:3, 1:3].min() > 192
    crop = datasets.load_folder(root, size=4, fit="crop")
    assert (crop.images[0] == 200).all()  # 2 x 4 scaled to 4 x 8, the centre 4 x 4 cut
    assert crop.images[1].min() < 64  # 8 x 8 scaled to 4 x 4: the border is still there
    with pytest.raises(ValueError, match="fit"):
        datasets.load_folder(root, size=4, fit="stretch")
    with pytest.raises(TypeError, match="size"):
        datasets.load_folder(root, size="big")


@needs_pil
def test_folder_channels(tmp_path):
    root = tmp_path / "colours"
    save(root / "grey" / "g.png", numpy.full((3, 3), 90))
    rgb = numpy.zeros((3, 3, 3))
    rgb[..., 0] = 255
    save(root / "red" / "r.png", rgb)
    save(root / "red" / "r.jpg", rgb, format="JPEG")
    rgba = numpy.zeros((3, 3, 4))
    rgba[..., 2] = rgba[..., 3] = 255
    save(root / "red" / "x.png", rgba)  # blue really, with alpha
    auto = datasets.load_folder(root)
    assert auto.images.shape == (4, 3, 3, 3)  # one colour image makes all RGB
    assert list(auto.images[0, 0, 0]) == [90, 90, 90]
    assert list(auto.images[3, 0, 0]) == [0, 0, 255]  # alpha dropped
    assert auto.images[2, 1, 1, 0] > 200  # the JPEG, lossy
    grey = datasets.load_folder(root, channels=1)
    assert grey.images.shape == (4, 3, 3)
    assert grey.images[1, 0, 0] == 76  # ITU-R 601 luma of pure red
    four = datasets.load_folder(root, channels=4)
    assert four.images.shape == (4, 3, 3, 4) and four.images[0, 0, 0, 3] == 255
    only_grey = datasets.load_folder(root, classes=["grey"])
    assert only_grey.images.shape == (1, 3, 3)
    with pytest.raises(ValueError, match="channels"):
        datasets.load_folder(root, channels=2)


@needs_pil
def test_folder_bad_files(tmp_path):
    root = tmp_path / "bad"
    save(root / "a" / "0.png", numpy.full((4, 4), 1))
    good = save(root / "b" / "0.png", numpy.full((4, 4), 2))
    (root / "b" / "notes.txt").write_text("not an image")
    (root / "b" / ".DS_Store").write_bytes(b"\0\1")  # hidden: ignored
    with pytest.raises(ValueError, match="notes.txt"):
        datasets.load_folder(root)
    (root / "b" / "notes.txt").rename(root / "notes.txt")
    data = good.read_bytes()
    (root / "b" / "cut.png").write_bytes(data[:len(data) - 20])  # its header is whole
    with pytest.raises(ValueError, match="cut.png.*truncated"):
        datasets.load_folder(root)
    (root / "notes.txt").rename(root / "b" / "notes.txt")
    out = datasets.load_folder(root, on_bad="skip")
    assert out.images.shape == (2, 4, 4) and list(out.labels) == [0, 1]
    assert sorted(p.rsplit("/", 1)[1] for p, _ in out.skipped) == ["cut.png", "notes.txt"]
    assert all(reason for _, reason in out.skipped)
    with pytest.raises(ValueError, match="on_bad"):
        datasets.load_folder(root, on_bad="ignore")
    empty = tmp_path / "empty"
    for name in "ab":
        (empty / name).mkdir(parents=True)
        (empty / name / "junk.png").write_bytes(b"junk")
    with pytest.raises(ValueError, match="no images .2 skipped"):
        datasets.load_folder(empty, on_bad="skip")
    with pytest.raises(ValueError, match="no class directories"):
        datasets.load_folder(empty / "a")
    with pytest.raises(ValueError, match="not a directory"):
        datasets.load_folder(tmp_path / "nowhere")


def test_folder_without_pillow(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    (tmp_path / "a").mkdir()
    with pytest.raises(ImportError, match="python3-pil"):
        datasets.load_folder(tmp_path)


@needs_pil
def test_folder_feeds_the_estimator(tmp_path):
    import libram
    rng = numpy.random.default_rng(3)
    for i in range(40):
        k = i % 2
        img = (rng.random((8, 8)) * 40).astype(numpy.uint8)
        row, col = rng.integers(0, 7), 4 * k + rng.integers(0, 3)
        img[row:row + 2, col:col + 2] = 255
        save(tmp_path / "blobs" / ("left", "right")[k] / ("%02d.png" % i), img)
    data = datasets.load_folder(tmp_path / "blobs")
    clf = libram.RAMClassifier(glimpses=2, patch=4, depth=2, glimpse_hidden=16, loc_hidden=8,
                               glimpse_out=16, core_hidden=16, loc_range_pixels=0.0, lr=1e-2,
                               batch_size=8, epochs=2, validation_fraction=0)
    clf.fit(data.images, numpy.array(data.classes)[data.labels])
    assert list(clf.classes_) == ["left", "right"] and clf.image_shape_ == (8, 8)


def png_declaring(width, height):
    """A PNG of 8-bit grey whose header declares width x height pixels,
    followed by a few bytes of data: a decompression bomb's header."""
    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


@needs_pil
@pytest.mark.parametrize("kind", ["bomb", "truncated", "corrupt", "not an image", "directory",
                                  "dangling link"])
def test_folder_every_bad_file_names_itself_or_is_skipped(tmp_path, kind):
    root = tmp_path / "set"
    save(root / "a" / "0.png", numpy.full((4, 4), 1))
    good = save(root / "b" / "0.png", numpy.full((4, 4), 2)).read_bytes()
    bad = root / "b" / "1.png"
    if kind == "bomb":
        bad.write_bytes(png_declaring(100000, 100000))
        reason = "declares 100000x100000 pixels, more than the 268435456 this reads"
    elif kind == "truncated":
        bad.write_bytes(good[:len(good) - 20])  # the header whole, the pixels cut
        reason = "not a readable image .*truncated"
    elif kind == "corrupt":
        bad.write_bytes(good[:41] + b"\xff" * (len(good) - 53) + good[-12:])  # IDAT garbled
        reason = "not a readable image"
    elif kind == "not an image":
        bad.write_bytes(b"not an image")
        reason = "not an image Pillow can read"
    elif kind == "directory":
        bad.mkdir()
        reason = "not a regular file"
    else:
        bad.symlink_to(tmp_path / "nowhere.png")
        reason = "not a regular file"
    limit = Image.MAX_IMAGE_PIXELS
    for on_bad in ("raise", "fail"):
        with pytest.raises(ValueError, match=r"b/1\.png: %s.* .on_bad='skip'" % reason):
            datasets.load_folder(root, on_bad=on_bad)
        with pytest.raises(ValueError, match=r"b/1\.png: %s" % reason):
            list(datasets.stream_folder(root, on_bad=on_bad))
    out = datasets.load_folder(root, on_bad="skip")
    assert list(out.labels) == [0, 1] and list(out.images[:, 0, 0]) == [1, 2]
    assert len(out.skipped) == 1 and out.skipped[0][0] == str(bad)
    assert re.match(reason, out.skipped[0][1])
    stream = datasets.stream_folder(root, on_bad="skip")
    for epoch in range(2):
        (images, labels), = stream.batches(epoch)
        assert list(labels) == [0, 1]
    assert [p for p, _ in stream.skipped] == [str(bad)]  # counted once
    assert Image.MAX_IMAGE_PIXELS == limit  # Pillow's setting left alone


@needs_pil
def test_folder_pixel_limit_is_the_tools_not_pillows(tmp_path, monkeypatch):
    root = tmp_path / "set"
    save(root / "a" / "0.png", numpy.full((4, 4), 7))
    save(root / "b" / "0.png", numpy.full((4, 4), 9))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 4)  # Pillow alone refuses 16 pixels
    with pytest.raises(Image.DecompressionBombError):
        Image.open(root / "a" / "0.png")
    assert datasets.load_folder(root).images.shape == (2, 4, 4)
    assert datasets.MAX_PIXELS == 1 << 28  # IMAGE_MAX_PIXELS of tools/common/image.h
    monkeypatch.setattr(datasets, "MAX_PIXELS", 15)
    with pytest.raises(ValueError, match="a/0.png: declares 4x4 pixels, more than the 15"):
        datasets.load_folder(root)


@needs_pil
def test_folder_refuses_an_empty_class_and_a_single_class(tmp_path):
    root = tmp_path / "set"
    save(root / "a" / "0.png", numpy.full((4, 4), 1))
    with pytest.raises(ValueError, match="set has a single class folder .a.: a classifier "
                                         "needs two or more"):
        datasets.load_folder(root)
    with pytest.raises(ValueError, match="single class folder"):
        datasets.stream_folder(root)
    assert datasets.load_folder(root, classes=["a"]).images.shape == (1, 4, 4)  # as asked
    (root / "b").mkdir()
    (root / "b" / ".hidden").write_bytes(b"")  # hidden: not an image either
    with pytest.raises(ValueError, match="class folder .*set/b has no images"):
        datasets.load_folder(root)
    with pytest.raises(ValueError, match="class folder .*set/b has no images"):
        datasets.stream_folder(root)
    splits = tmp_path / "splits"
    save(splits / "train" / "a" / "0.png", numpy.full((4, 4), 1))
    (splits / "train" / "b").mkdir()
    save(splits / "test" / "b" / "0.png", numpy.full((4, 4), 1))
    with pytest.raises(ValueError, match="train/b has no images"):
        datasets.load_folder(splits, split="train")


@needs_pil
def test_folder_letterbox_and_the_fit_rules_of_the_library(tmp_path):
    import libram
    root = tmp_path / "sizes"
    wide = numpy.full((2, 4), 200)
    save(root / "a" / "wide.png", wide)
    rng = numpy.random.default_rng(5)
    odd = rng.integers(0, 256, (5, 9))
    save(root / "b" / "odd.png", odd)
    box = datasets.load_folder(root, size=4, fit="letterbox")
    expect = numpy.zeros((4, 4))
    expect[1:3] = 200  # 2 x 4 fits 4 x 4 at its own scale, centred, zeros above and below
    assert numpy.array_equal(box.images[0], expect)
    assert (box.images[1, 0] == 0).all() and (box.images[1, 1:3] > 0).any()  # 5 x 9 -> 2 x 4
    for fit in ("pad", "resize", "letterbox", "crop"):
        with libram.Model.create(channels=1, height=4, width=6, classes=2, patch=1) as model:
            model.fit = fit
            out = datasets.load_folder(root, size=(4, 6), fit=fit, dtype="float32")
            for image, pixels in zip(out.images, (wide, odd)):
                floats = pixels.astype(numpy.float32) / numpy.float32(255)
                want = model.fit_image(floats, (1,) + pixels.shape)[0]
                assert numpy.array_equal(image, want), fit  # ram_image_fit's pixels
            as_bytes = datasets.load_folder(root, size=(4, 6), fit=fit).images
            assert as_bytes.dtype == numpy.uint8
            assert numpy.array_equal(as_bytes, numpy.floor(out.images * numpy.float32(255)
                                                           + numpy.float32(0.5)))


@needs_pil
def test_folder_16_bit_samples_as_the_c_readers(tmp_path):
    values = numpy.array([[0, 1, 257, 0x80FF], [0xABCD, 0xFF00, 65534, 65535]], numpy.uint16)
    root = tmp_path / "wide"
    for name, image in (("a", values), ("b", values[::-1])):
        (root / name).mkdir(parents=True)
        Image.fromarray(numpy.ascontiguousarray(image)).save(root / name / "w.png")  # 16-bit
    out = datasets.load_folder(root)
    assert out.images.dtype == numpy.float32  # a 16-bit file: floats
    expect = values.astype(numpy.float32) / numpy.float32(65535)  # image.c: (float)v / 65535.0f
    ulps = numpy.abs(out.images[0].view(numpy.int32) - expect.view(numpy.int32))
    assert ulps.max() <= 1 and numpy.array_equal(out.images[0], expect)
    assert numpy.array_equal(out.images[1], expect[::-1])
    # As the C tools' image folders keep it: round(255 * v), not the high byte.
    as_bytes = datasets.load_folder(root, dtype="uint8").images[0]
    assert as_bytes.ravel().tolist() == [0, 0, 1, 128, 171, 254, 255, 255]
    streamed = datasets.stream_folder(root, batch_size=2)
    (images, labels), = streamed
    assert streamed.dtype == numpy.float32 and numpy.array_equal(images, out.images)
    save(root / "a" / "x.png", numpy.full((2, 4), 51))  # 8-bit beside them: b / 255
    mixed = datasets.load_folder(root).images
    assert mixed.dtype == numpy.float32 and (mixed[1] == numpy.float32(51) / 255).all()
    with pytest.raises(ValueError, match="dtype"):
        datasets.load_folder(root, dtype="float64")


@needs_pil
def test_folder_floats_are_what_ram_classify_reads(tmp_path):
    import json
    import subprocess
    import libram
    from conftest import tool
    rng = numpy.random.default_rng(9)
    root = tmp_path / "files"
    (root / "deep").mkdir(parents=True)
    deep = rng.integers(0, 65536, (5, 11)).astype(numpy.uint16)
    Image.fromarray(deep).save(root / "deep" / "d.png")  # 16-bit grey, another size
    save(root / "rgb" / "c.png", rng.integers(0, 256, (9, 7, 3)))  # 8-bit colour
    data = datasets.load_folder(root, size=8, fit="letterbox", channels=1, dtype="float32")
    path = tmp_path / "m.ram"
    with libram.Model.create(channels=1, height=8, width=8, classes=2, glimpses=2, patch=4,
                             glimpse_hidden=8, loc_hidden=8, glimpse_out=8, core_hidden=8,
                             init_scale=1.0, seed=4) as model:
        model.fit = "letterbox"
        model.class_names = ["deep", "rgb"]
        model.save(str(path))
        ours = model.classify(data.images)
    classify = tool("ram-classify")
    if classify is None:
        pytest.skip("ram-classify is not built beside the library")
    run = subprocess.run([classify, "--model", str(path), "--json", "--top", "2", "--locations"]
                         + data.files, capture_output=True, text=True, check=True)
    for i, line in enumerate(run.stdout.splitlines()):
        theirs = json.loads(line)
        probs = {t["label"]: t["probability"] for t in theirs["top"]}
        assert abs(probs[0] - ours.probs[i, 0]) <= 1e-6 and abs(probs[1] - ours.probs[i, 1]) <= 1e-6
        assert numpy.abs(numpy.array(theirs["locations"]) - ours.locs[i]).max() <= 1e-6


def blob_folder(root, n, size=8, seed=3):
    """n size x size grey PNGs in root/left and root/right: a bright 2 x 2
    blob in the left or the right half of dim noise."""
    rng = numpy.random.default_rng(seed)
    for i in range(n):
        k = i % 2
        img = (rng.random((size, size)) * 40).astype(numpy.uint8)
        row, col = rng.integers(0, size - 1), k * (size // 2) + rng.integers(0, size // 2 - 1)
        img[row:row + 2, col:col + 2] = 255
        save(root / ("left", "right")[k] / ("%02d.png" % i), img)
    return root


@needs_pil
def test_stream_same_seed_same_batches(tmp_path):
    root = blob_folder(tmp_path / "blobs", 24)
    whole = datasets.load_folder(root)
    a = datasets.stream_folder(root, batch_size=5, seed=3)
    b = datasets.stream_folder(root, batch_size=5, seed=3, prefetch=0)
    assert len(a) == 5 and a.classes == whole.classes and a.files == whole.files
    assert a.image_shape == (8, 8) and a.dtype == numpy.uint8
    first = list(a.batches(0))
    assert [len(y) for _, y in first] == [5, 5, 5, 5, 4]
    for (x1, y1), (x2, y2) in zip(first, b.batches(0)):
        assert numpy.array_equal(x1, x2) and numpy.array_equal(y1, y2)
    order = a.order(0)
    assert sorted(order) == list(range(24)) and not numpy.array_equal(order, a.order(1))
    assert numpy.array_equal(numpy.concatenate([x for x, _ in first]), whole.images[order])
    assert numpy.array_equal(numpy.concatenate([y for _, y in first]), whole.labels[order])
    for epoch in range(2):  # iterating: one epoch after another
        for (x1, _), (x2, _) in zip(a, b.batches(epoch)):
            assert numpy.array_equal(x1, x2)
    other = datasets.stream_folder(root, batch_size=5, seed=4)
    assert not numpy.array_equal(other.order(0), order)
    in_order = datasets.stream_folder(root, batch_size=7)  # no seed: class and file order
    assert numpy.array_equal(numpy.concatenate([x for x, _ in in_order]), whole.images)
    with pytest.raises(ValueError, match="batch_size"):
        datasets.stream_folder(root, batch_size=0)


@needs_pil
def test_stream_keeps_a_bounded_number_of_images(tmp_path):
    root = blob_folder(tmp_path / "blobs", 40)
    stream = datasets.stream_folder(root, batch_size=4, seed=1, prefetch=2)
    decoded = [0]
    read = stream._read

    def counting(i):
        decoded[0] += 1
        return read(i)

    stream._read = counting
    threads = threading.active_count()
    consumed, ahead = 0, []
    for images, labels in stream:
        consumed += len(labels)
        time.sleep(0.03)  # a slow consumer: the decoder gets as far ahead as it may
        ahead.append(decoded[0] - consumed)
    assert consumed == 40 and decoded[0] == 40
    # Two batches waiting and one being made, beside the one the consumer holds.
    assert max(ahead) <= (2 + 1) * 4
    assert max(ahead) >= 2 * 4  # it did decode ahead
    batches = iter(stream)
    next(batches)
    batches.close()  # stopped early: the decoding thread ends
    assert threading.active_count() == threads


@needs_pil
def test_stream_damaged_pixels_raise_in_the_consumer_or_are_skipped(tmp_path):
    root = blob_folder(tmp_path / "blobs", 12)
    victim = root / "right" / "05.png"
    data = victim.read_bytes()
    victim.write_bytes(data[:len(data) // 2])  # its header is whole: found when decoded
    stream = datasets.stream_folder(root, batch_size=4)
    assert len(stream.files) == 12
    with pytest.raises(ValueError, match="05.png: not a readable image"):
        list(stream)
    skipping = datasets.stream_folder(root, batch_size=4, on_bad="skip")
    for _ in range(2):
        assert sum(len(y) for _, y in skipping) == 11
    assert [p for p, _ in skipping.skipped] == [str(victim)]


# ---- arrays as the tools read them

def test_image_layout_as_the_tools_decide():
    z = numpy.zeros
    assert datasets.image_layout(z((2, 5, 6), numpy.uint8)) == "NHW"
    assert datasets.image_layout(z((2, 5, 6, 3), numpy.uint16)) == "NHWC"
    assert datasets.image_layout(z((2, 3, 5, 6), numpy.float32)) == "NCHW"
    assert datasets.image_layout(z((2, 3, 3, 3), numpy.float64)) == "NHWC"  # both: NumPy's order
    with pytest.raises(ValueError, match="2-D"):
        datasets.image_layout(z((2, 30), numpy.uint8), "x")
    with pytest.raises(ValueError, match="channel count"):
        datasets.image_layout(z((2, 5, 6, 7), numpy.uint8))
    with pytest.raises(ValueError, match="int32"):
        datasets.image_layout(z((2, 5, 6), numpy.int32))
    with pytest.raises(ValueError, match="no images"):
        datasets.image_layout(z((0, 5, 6), numpy.uint8))


def test_check_labels_refuses_what_the_tools_refuse():
    assert datasets.check_labels(numpy.array([2, 0, 7]), 3).tolist() == [2, 0, 7]
    assert datasets.check_labels(numpy.array([[2.0], [0.0]]), 2).dtype == numpy.int64
    for y, n, message in [
        (numpy.array([2.0, 0.5]), 2, "not a whole number"),
        (numpy.array([2.0, numpy.nan]), 2, "not a whole number"),
        (numpy.array([2, -1]), 2, "label -1 of image 1 is negative"),
        (numpy.array([True, False]), 2, "bool"),
        (numpy.array([1, 2, 3]), 4, "3 labels for 4 images"),
        (numpy.array([1, 70000]), 2, "over 65535"),
        (numpy.zeros((2, 2), numpy.int64), 2, "N or N x 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            datasets.check_labels(y, n, "y")


def test_npz_split_maps_stored_members_and_inflates_deflated_ones(tmp_path):
    rng = numpy.random.default_rng(3)
    x = rng.integers(0, 256, (4, 5, 6, 3), dtype=numpy.uint8)
    y = numpy.array([1, 0, 3, 2], numpy.int64)
    xv = rng.random((2, 3, 5, 6)).astype(numpy.float32)
    numpy.savez(tmp_path / "stored.npz", x_train=x, y_train=y, x_val=xv, y_val=y[:2])
    numpy.savez_compressed(tmp_path / "deflated.npz", x_train=x, y_train=y)
    sx, sy = datasets.load_npz_split(tmp_path / "stored.npz", "train")
    assert isinstance(sx, numpy.memmap) and not sx.flags.writeable
    assert (sx == x).all() and sy.tolist() == y.tolist()
    dx, dy = datasets.load_npz_split(tmp_path / "deflated.npz", "train")
    assert not isinstance(dx, numpy.memmap) and (dx == x).all() and (dy == y).all()
    vx, vy = datasets.load_npz_split(tmp_path / "stored.npz", "val")
    assert datasets.image_layout(vx) == "NCHW" and (vx == xv).all()
    with pytest.raises(ValueError, match="has no x_test"):
        datasets.load_npz_split(tmp_path / "stored.npz", "test")
    numpy.savez(tmp_path / "bad.npz", x_train=x, y_train=numpy.array([0.5, 1, 2, 3]))
    with pytest.raises(ValueError, match="bad.npz:y_train: label 0.5"):
        datasets.load_npz_split(tmp_path / "bad.npz", "train")
    numpy.savez(tmp_path / "flat.npz", x_train=x.reshape(4, -1), y_train=y)
    with pytest.raises(ValueError, match="flat.npz:x_train: 2-D"):
        datasets.load_npz_split(tmp_path / "flat.npz", "train")
    numpy.savez(tmp_path / "fortran.npz", x_train=numpy.asfortranarray(x[:, :, :, 0]), y_train=y)
    with pytest.raises(ValueError, match="fortran_order"):
        datasets.load_npz_split(tmp_path / "fortran.npz", "train")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ValueError, match="not a NumPy .npz archive"):
        datasets.load_npz_split(tmp_path / "junk.npz", "train")


def test_npz_split_truncated_member(tmp_path):
    x = numpy.zeros((4, 5, 6), numpy.uint8)
    numpy.savez(tmp_path / "ok.npz", x_train=x, y_train=numpy.arange(4))
    data = bytearray((tmp_path / "ok.npz").read_bytes())
    head = data.find(b"(4, 5, 6)")
    data[head:head + 9] = b"(8, 5, 6)"  # the header lies: twice the bytes
    (tmp_path / "lying.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="needs 240 bytes"):
        datasets.load_npz_split(tmp_path / "lying.npz", "train")


def test_idx_colour_as_the_tools_map_it(tmp_path):
    x = numpy.arange(2 * 3 * 4 * 3, dtype=numpy.uint8).reshape(2, 3, 4, 3)
    images = write(tmp_path / "colour-idx4-ubyte", idx_bytes(x))
    labels = write(tmp_path / "labels-idx1-ubyte", idx_bytes(numpy.array([1, 0], numpy.uint8)))
    got, lab = datasets.load_idx(images, labels)
    assert got.shape == (2, 3, 4, 3) and (got == x).all()
    assert datasets.image_layout(got) == "NHWC"
    assert datasets.check_labels(lab, len(got)).tolist() == [1, 0]
