"""Image data sets as NumPy arrays, memory-mapped where the format allows, in
the layouts RAMClassifier takes ((n, H, W) grey or (n, H, W, C) colour).

    from libram import datasets

    x, y = datasets.load_idx("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    x_train, y_train, x_test, y_test = datasets.load_npz("mnist.npz")
    x_val, y_val = datasets.load_npz_split("set.npz", "val")  # as the tools read it
    x, y = datasets.load_npy("images.npy", "labels.npy")
    train = datasets.load_folder("photos", split="train", size=64, fit="crop")
    stream = datasets.stream_folder("photos", split="train", size=64, batch_size=64, seed=1)
    for images, labels in stream: ...  # one epoch, decoded a batch at a time

Every loader checks what it reads and raises ValueError (truncated file,
wrong magic, counts that disagree) naming the file.  NumPy is required;
image folders also need Pillow.
"""

import collections
import copy
import gzip
import os
import queue
import struct
import threading
import zipfile

import numpy as np

__all__ = ["load_idx", "load_npz", "load_npz_split", "load_npy", "load_folder", "Folder",
           "stream_folder", "FolderStream", "MAX_PIXELS", "IDX_TYPES", "image_layout",
           "check_labels"]

#: IDX element types: the magic's third byte -> big-endian NumPy dtype.
IDX_TYPES = {0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"),
             0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def _idx(path, ndims):
    """A memory-mapped array (a decompressed one for .gz) of the IDX file
    `path`, whose dimension count must be in `ndims`."""
    name = os.fsdecode(path)
    with open(path, "rb") as f:
        head = f.read(4)
        gz = head[:2] == b"\x1f\x8b"
    if gz:
        with gzip.open(path, "rb") as f:
            try:
                data = f.read()
            except (OSError, EOFError) as e:
                raise ValueError("%s: corrupt gzip data (%s)" % (name, e)) from None
        head = data[:4]
        size = len(data)
    else:
        size = os.path.getsize(path)
    if len(head) < 4:
        raise ValueError("%s: truncated: %d bytes, an IDX header needs at least 4"
                         % (name, len(head)))
    if head[0] != 0 or head[1] != 0 or head[2] not in IDX_TYPES:
        raise ValueError("%s: not an IDX file (magic %s; expected 00 00, a type byte of %s, "
                         "then the dimension count)" % (name, head.hex(), ", ".join(
                             "%02x" % t for t in IDX_TYPES)))
    dtype, nd = IDX_TYPES[head[2]], head[3]
    if nd not in ndims:
        raise ValueError("%s: %d dimensions, expected %s" % (name, nd,
                                                             " or ".join(map(str, ndims))))
    header = 4 + 4 * nd
    if size < header:
        raise ValueError("%s: truncated: %d bytes, the header of %d dimensions needs %d"
                         % (name, size, nd, header))
    if gz:
        raw = data[4:header]
    else:
        with open(path, "rb") as f:
            f.seek(4)
            raw = f.read(4 * nd)
    dims = struct.unpack(">%dI" % nd, raw)
    need = header + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if size < need:
        raise ValueError("%s: truncated: dimensions %s of %s need %d bytes, the file has %d"
                         % (name, "x".join(map(str, dims)), dtype, need, size))
    if size > need:
        raise ValueError("%s: %d bytes after the data (dimensions %s of %s need %d)"
                         % (name, size - need, "x".join(map(str, dims)), dtype, need))
    if gz:
        return np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    if need == header:  # np.memmap cannot map zero bytes
        return np.zeros(dims, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=header, shape=dims)


def load_idx(images_path, labels_path):
    """(images, labels) of an IDX pair such as MNIST's: images N x H x W or
    N x H x W x C, labels N, of any IDX element type (MNIST: uint8).  Both
    are read-only np.memmap arrays over the files (gzip-compressed files
    are decompressed into memory instead)."""
    images = _idx(images_path, (3, 4))
    labels = _idx(labels_path, (1,))
    if len(images) != len(labels):
        raise ValueError("%s has %d images but %s has %d labels"
                         % (os.fsdecode(images_path), len(images), os.fsdecode(labels_path),
                            len(labels)))
    return images, labels


def _pair(images, labels, iname, lname):
    if images.ndim not in (3, 4):
        raise ValueError("%s: images must be 3-D (n, H, W) or 4-D, got shape %s"
                         % (iname, images.shape))
    if labels.ndim != 1:
        raise ValueError("%s: labels must be 1-D, got shape %s" % (lname, labels.shape))
    if len(images) != len(labels):
        raise ValueError("%s has %d images but %s has %d labels"
                         % (iname, len(images), lname, len(labels)))
    return images, labels


def _npy(path):
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as e:  # pickled objects, a truncated or foreign file
        raise ValueError("%s: not a NumPy array file of numbers (%s)"
                         % (os.fsdecode(path), e)) from None
    except EOFError:
        raise ValueError("%s: empty or truncated" % os.fsdecode(path)) from None


def load_npy(images_path, labels_path):
    """(images, labels) from two .npy files, memory-mapped (read-only)."""
    return _pair(_npy(images_path), _npy(labels_path), os.fsdecode(images_path),
                 os.fsdecode(labels_path))


def load_npz(path):
    """(x_train, y_train, x_test, y_test) from an .npz of Keras' mnist.npz
    layout (those four arrays).  NumPy cannot memory-map the members of an
    .npz (a zip archive), so they are read into memory; save them as .npy
    files for load_npy() to map them instead."""
    name = os.fsdecode(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError("%s: not a NumPy .npz archive (%s)" % (name, e)) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError("%s: a single array, not an .npz archive: use load_npy()" % name)
    with archive:
        keys = ("x_train", "y_train", "x_test", "y_test")
        missing = [k for k in keys if k not in archive.files]
        if missing:
            raise ValueError("%s lacks %s (it has %s); expected Keras' mnist.npz layout %s"
                             % (name, ", ".join(missing), ", ".join(archive.files) or "nothing",
                                ", ".join(keys)))
        try:
            arrays = [archive[k] for k in keys]
        except Exception as e:  # noqa: BLE001 -- zipfile and format errors alike
            raise ValueError("%s: corrupt member (%s)" % (name, e)) from None
    x_train, y_train = _pair(arrays[0], arrays[1], name + ":x_train", name + ":y_train")
    x_test, y_test = _pair(arrays[2], arrays[3], name + ":x_test", name + ":y_test")
    return x_train, y_train, x_test, y_test


# ---- arrays as the tools read them (tools/common/npz.h)

#: The image dtypes the tools read, and what a pixel is divided by.
IMAGE_SCALES = {np.dtype("u1"): 255.0, np.dtype("<u2"): 65535.0, np.dtype("<f4"): 1.0,
                np.dtype("<f8"): 1.0}
#: The largest label the tools take.
MAX_LABEL = 65535


def image_layout(x, name="images"):
    """How the tools read the image array x: "NHW" (grey), "NHWC" or
    "NCHW".  A 4-D array is N x H x W x C or N x C x H x W with C 1, 3 or 4,
    told apart by which of shape[3] and shape[1] is such a count; when both
    are, N x H x W x C (NumPy's and Keras' order), as the C readers decide.
    Raises ValueError naming `name` otherwise (2-D arrays, other dtypes)."""
    x_dtype = np.dtype(x.dtype).newbyteorder("<") if x.dtype.itemsize > 1 else x.dtype
    if x_dtype not in IMAGE_SCALES or x.dtype.byteorder == ">":
        raise ValueError("%s: images must be uint8, uint16, float32 or float64, not %s"
                         % (name, x.dtype))
    if x.ndim == 3:
        layout = "NHW"
    elif x.ndim == 4 and x.shape[3] in (1, 3, 4):
        layout = "NHWC"
    elif x.ndim == 4 and x.shape[1] in (1, 3, 4):
        layout = "NCHW"
    elif x.ndim == 4:
        raise ValueError("%s: 4-D %s, but neither shape[3] (N x H x W x C) nor shape[1] "
                         "(N x C x H x W) is a channel count 1, 3 or 4" % (name, x.shape))
    else:
        raise ValueError("%s: %d-D %s: images must be N x H x W, N x H x W x C or N x C x H x W"
                         % (name, x.ndim, x.shape))
    if len(x) == 0:
        raise ValueError("%s holds no images" % name)
    return layout


def check_labels(y, n, name="labels"):
    """y (N or N x 1 whole numbers in 0..MAX_LABEL, N == n) as an int64
    array (n,), or ValueError naming `name`: bool, fractional floats,
    negative or too large values and a count that is not n are refused, as
    the tools refuse them."""
    y = np.asarray(y)
    if not (y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1)):
        raise ValueError("%s: labels must be N or N x 1 numbers, not %s" % (name, y.shape))
    if y.dtype == np.bool_:
        raise ValueError("%s: labels of bool: classes are whole numbers 0, 1, ..." % name)
    if y.dtype.kind not in "uif":
        raise ValueError("%s: labels of %s: classes are whole numbers" % (name, y.dtype))
    if len(y) != n:
        raise ValueError("%s: %d labels for %d images" % (name, len(y), n))
    y = y.reshape(-1)
    if y.dtype.kind == "f":
        bad = ~np.isfinite(y) | (y != np.round(y))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError("%s: label %g of image %d is not a whole number" % (name, y[i], i))
    if len(y) and y.min() < 0:
        i = int(np.argmin(y))
        raise ValueError("%s: label %d of image %d is negative" % (name, y[i], i))
    if len(y) and y.max() > MAX_LABEL:
        i = int(np.argmax(y))
        raise ValueError("%s: label %d of image %d is over %d" % (name, y[i], i, MAX_LABEL))
    return y.astype(np.int64)


def _member(path, archive, info):
    """Member `info` of the open zip `archive`: a read-only np.memmap when
    it is stored (np.savez), else the array inflated (np.savez_compressed)."""
    name = "%s:%s" % (os.fsdecode(path), info.filename)
    if info.compress_type != zipfile.ZIP_STORED:
        with archive.open(info) as f:
            try:
                return np.lib.format.read_array(f, allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
                raise ValueError("%s: corrupt member (%s)" % (name, e)) from None
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise ValueError("%s: damaged zip (no local header)" % name)
        nlen, xlen = struct.unpack("<HH", local[26:30])
        f.seek(info.header_offset + 30 + nlen + xlen)
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:  # 3.0 (utf-8 field names) has no public reader
                shape, fortran, dtype = np.lib.format._read_array_header(f, version)
        except ValueError as e:
            raise ValueError("%s: not an .npy array (%s)" % (name, e)) from None
        start = f.tell()
    if fortran:
        raise ValueError("%s: fortran_order is True: save it in C order" % name)
    if dtype.hasobject:
        raise ValueError("%s: an array of Python objects" % name)
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if start - (info.header_offset + 30 + nlen + xlen) + need != info.file_size:
        raise ValueError("%s: its shape %s needs %d bytes of data, the member does not hold "
                         "them" % (name, shape, need))
    if need == 0:
        return np.zeros(shape, dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=start, shape=shape)


def load_npz_split(path, split):
    """(x, y): members x_<split> and y_<split> of an .npz as the tools read
    them: stored members (np.savez, ram-data --format npz) memory-mapped
    read-only, deflated ones (np.savez_compressed) inflated; x in a layout
    image_layout() accepts, y checked by check_labels() (and returned as
    int64)."""
    name = os.fsdecode(path)
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ValueError("%s: not a NumPy .npz archive (%s)" % (name, e)) from None
    with archive:
        arrays = []
        for key in ("x_" + split, "y_" + split):
            try:
                info = archive.getinfo(key + ".npy")
            except KeyError:
                raise ValueError("%s has no %s (it has %s)" % (
                    name, key, ", ".join(n[:-4] for n in archive.namelist()) or "nothing")) \
                    from None
            arrays.append(_member(path, archive, info))
    x, y = arrays
    image_layout(x, "%s:x_%s" % (name, split))
    return x, check_labels(y, len(x), "%s:y_%s" % (name, split))


# ---- image folders

#: load_folder()'s result: images (n, H, W) or (n, H, W, C), uint8 or float32
#: (load_folder's dtype); labels (n,) indices into classes (the sorted class
#: directory names); files the n image paths; skipped the (path, reason)
#: pairs on_bad="skip" left out.
Folder = collections.namedtuple("Folder", "images labels classes files skipped")

#: The most pixels (width x height) an image file may declare: the C tools'
#: limit, checked from the file's header before its pixels are decoded.
#: Pillow's own (process-wide) MAX_IMAGE_PIXELS plays no part.
MAX_PIXELS = 1 << 28

_FITS = ("pad", "resize", "letterbox", "crop")
_ON_BAD = ("raise", "fail", "skip")
_SPLITS = ("train", "test")


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("image folders need Pillow to decode images: install python3-pil "
                          "(Debian, Ubuntu) or `pip install Pillow`") from None
    return Image


def _class_dirs(root):
    return sorted(d for d in os.listdir(root)
                  if not d.startswith(".") and os.path.isdir(os.path.join(root, d)))


def _canvas(size):
    if size is None:
        return None
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (size, size)
    try:
        h, w = (int(v) for v in size)
    except (TypeError, ValueError):
        raise TypeError("size must be None, an int or (height, width), not %r" % (size,)) \
            from None
    if h < 1 or w < 1:
        raise ValueError("size must be positive, not %r" % (size,))
    return h, w


def _out_dtype(dtype):
    if dtype is None:
        return None
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d not in (np.dtype(np.uint8), np.dtype(np.float32)):
        raise ValueError("dtype must be None, 'uint8' or 'float32', not %r" % (dtype,))
    return d


def _whole(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s must be an int, not %r" % (name, value))
    if value < low:
        raise ValueError("%s must be >= %d, not %d" % (name, low, value))
    return int(value)


class _BadFile(Exception):
    """A file that cannot be read as an image; str() says why, without its name."""


def _why(e):
    return "%s: %s" % (type(e).__name__, e)


def _refusal(file, reason):
    return ValueError("%s: %s (on_bad='skip' passes over it)" % (file, reason))


def _open(Image, file):
    """`file` opened by Pillow, its header read and its pixels not yet, as
    Image.open() opens it but without Pillow's decompression-bomb check:
    that limit is a process-wide setting, and the caller checks MAX_PIXELS
    instead."""
    registry, order = getattr(Image, "OPEN", None), getattr(Image, "ID", None)
    if not isinstance(registry, dict) or not isinstance(order, list):  # pragma: no cover
        try:  # a Pillow without the plugin registry: its own check then
            return Image.open(file)
        except Image.DecompressionBombError as e:
            raise _BadFile("declares more pixels than Pillow reads (%s)" % e) from None
    with open(file, "rb") as f:
        prefix = f.read(16)
    tried = set()
    for load_plugins in (Image.preinit, Image.init):
        load_plugins()
        for name in list(order):
            if name in tried:
                continue
            tried.add(name)
            factory, accept = registry[name]
            if accept is not None:
                verdict = accept(prefix)
                if not verdict or isinstance(verdict, (str, bytes)):
                    continue
            try:
                return factory(file)  # a path: the image opens and closes the file itself
            except (SyntaxError, IndexError, TypeError, struct.error):
                continue  # not this format after all, as Image.open() goes on
    raise _BadFile("not an image Pillow can read")


def _kind(img):
    """(channels, 16-bit) of what the opened `img` decodes to, channels
    counted as the C readers count them: 1 grey, 2 grey and alpha, 3
    colour, 4 colour and alpha."""
    mode = img.mode
    if mode == "I" or mode.startswith("I;16"):
        return 1, True
    if mode in ("1", "L", "F") or mode.startswith("I"):
        return 1, False
    if mode in ("LA", "La"):
        return 2, False
    if mode in ("RGBA", "RGBa", "PA") or (mode == "P" and "transparency" in img.info):
        return 4, False
    return 3, False


def _samples(img, channels):
    """The decoded `img` as (samples, scale): uint8 (scale 255) or uint16
    (65535) samples, (h, w) or (h, w, c) with the file's own channels
    (RGBA for channels=4)."""
    own, sixteen = _kind(img)
    if sixteen:
        grey = np.clip(np.asarray(img), 0, 65535).astype(np.uint16)
        if channels == 4:
            return np.dstack([grey, grey, grey, np.full_like(grey, 65535)]), 65535
        return grey, 65535
    want = "RGBA" if channels == 4 else ("L", "LA", "RGB", "RGBA")[own - 1]
    if img.mode != want:
        img = img.convert(want)
    return np.asarray(img), 255


def _to_bytes(v):
    """Fitted pixels as the C tools keep them: round(255 * v), v clamped to [0, 1]."""
    v = np.clip(v, np.float32(0), np.float32(1)) * np.float32(255) + np.float32(0.5)
    return v.astype(np.uint8)


class _Reader:
    """Opens image files and fits them to a set's canvas, channels and dtype."""

    def __init__(self, Image, fit):
        self.Image = Image
        self.fit = fit
        self.canvas = self.channels = self.dtype = None  # decided by _scan
        self._model = None
        self._lock = threading.Lock()

    def _opened(self, file):
        if not os.path.isfile(file):
            raise _BadFile("not a regular file")
        try:
            img = _open(self.Image, file)
        except _BadFile:
            raise
        except Exception as e:  # noqa: BLE001 -- whatever a foreign or broken file raises
            raise _BadFile("not a readable image (%s)" % _why(e)) from None
        w, h = img.size
        if w * h > MAX_PIXELS:
            img.close()
            raise _BadFile("declares %dx%d pixels, more than the %d this reads" % (w, h,
                                                                                  MAX_PIXELS))
        return img

    def header(self, file):
        """(channels, 16-bit, (height, width)) from the file's header."""
        with self._opened(file) as img:
            own, sixteen = _kind(img)
            return own, sixteen, (img.size[1], img.size[0])

    def read(self, file):
        """The file decoded and fitted: (H, W) or (H, W, C) of the set's dtype."""
        with self._opened(file) as img:
            try:
                img.load()  # decodes now: a truncated or corrupt file fails here
                samples, scale = _samples(img, self.channels)
            except Exception as e:  # noqa: BLE001 -- as in _opened
                raise _BadFile("not a readable image (%s)" % _why(e)) from None
        return self._fit(samples, scale)

    def _fit(self, a, scale):
        """Samples (h, w[, c]) of `scale` fitted as ram_image_fit() fits them
        for the C tools: the same function, on the same floats (byte / 255,
        16-bit sample / 65535)."""
        h, w = a.shape[:2]
        c = a.shape[2] if a.ndim == 3 else 1
        H, W = self.canvas
        C = self.channels
        if (h, w) == (H, W) and c == C:  # what ram_image_fit() gives: the image as it is
            if scale == 255 and self.dtype == np.uint8:
                return a
            floats = a.astype(np.float32) / np.float32(scale)
        else:
            chw = (a.astype(np.float32) / np.float32(scale)).reshape(h, w, c).transpose(2, 0, 1)
            floats = self._fitter().fit_image(chw, (c, h, w)).transpose(1, 2, 0)
            if C == 1:
                floats = floats[..., 0]
        if self.dtype == np.float32:
            return np.ascontiguousarray(floats, dtype=np.float32)
        return _to_bytes(floats)

    def _fitter(self):
        # A model of the canvas and fit rule, as the C folder sets make one:
        # the smallest architecture, only its canvas and fit rule are used.
        with self._lock:
            if self._model is None:
                from . import Model
                H, W = self.canvas
                model = Model.create(channels=self.channels, height=H, width=W, classes=2,
                                     glimpses=1, patch=1, depth=1, glimpse_hidden=1,
                                     loc_hidden=1, glimpse_out=1, core_hidden=1)
                model.fit = self.fit
                self._model = model
            return self._model


def _listing(path, split, classes):
    """(root, class names, [(file, label)]) of an image folder, refusing
    what the C tools refuse: no class folders, a single one (unless the
    classes are given), an empty class folder."""
    top = os.fsdecode(path)
    if not os.path.isdir(top):
        raise ValueError("%s is not a directory" % top)
    if split is None:
        root = top
        if all(os.path.isdir(os.path.join(top, s)) for s in _SPLITS):
            raise ValueError("%s holds train/ and test/ splits: pass split='train' or "
                             "split='test'" % top)
        found = _class_dirs(root)
    else:
        root = os.path.join(top, split)
        if not os.path.isdir(root):
            raise ValueError("%s has no split %r (no directory %s)" % (top, split, root))
        found = set(_class_dirs(root))
        for other in _SPLITS:
            if os.path.isdir(os.path.join(top, other)):
                found.update(_class_dirs(os.path.join(top, other)))
        found = sorted(found)
    if classes is None:
        if not found:
            raise ValueError("%s has no class directories" % root)
        if len(found) == 1:
            raise ValueError("%s has a single class folder (%s): a classifier needs two or more"
                             % (root, found[0]))
        names = found
    else:
        names = [str(c) for c in classes]
        if not names:
            raise ValueError("classes is empty: no class directories to read")
    entries = []
    for k, name in enumerate(names):
        directory = os.path.join(root, name)
        if not os.path.isdir(directory):
            continue
        listed = sorted(e for e in os.listdir(directory) if not e.startswith("."))
        if not listed:
            raise ValueError("class folder %s has no images" % directory)
        entries.extend((os.path.join(directory, e), k) for e in listed)
    return root, names, entries


def _scan(path, split, size, fit, channels, on_bad, classes, dtype):
    """An image folder's files, their headers checked, and a _Reader set to
    its canvas, channels and dtype.  Returns (root, classes, files, labels,
    skipped, reader)."""
    if fit not in _FITS:
        raise ValueError("fit must be one of %s, not %r" % (", ".join(_FITS), fit))
    if channels not in (None, 1, 3, 4):
        raise ValueError("channels must be None, 1, 3 or 4, not %r" % (channels,))
    if on_bad not in _ON_BAD:
        raise ValueError("on_bad must be 'raise' (or 'fail') or 'skip', not %r" % (on_bad,))
    dtype = _out_dtype(dtype)
    canvas = _canvas(size)
    reader = _Reader(_pil(), fit)
    root, names, entries = _listing(path, split, classes)
    files, labels, skipped = [], [], []
    colour = sixteen_bit = False
    first = None
    for file, label in entries:
        try:
            own, sixteen, hw = reader.header(file)
        except _BadFile as e:
            if on_bad != "skip":
                raise _refusal(file, e) from None
            skipped.append((file, str(e)))
            continue
        if canvas is None:
            if first is None:
                first = (file, hw)
            elif hw != first[1]:
                raise ValueError("%s is %dx%d but %s is %dx%d (height x width): give size= to "
                                 "fit them to one canvas" % (file, hw[0], hw[1], first[0],
                                                             first[1][0], first[1][1]))
        colour |= own >= 3
        sixteen_bit |= sixteen
        files.append(file)
        labels.append(label)
    if not files:
        raise ValueError("%s: no images%s" % (root, " (%d skipped)" % len(skipped)
                                              if skipped else ""))
    reader.canvas = canvas if canvas is not None else first[1]
    reader.channels = channels or (3 if colour else 1)
    reader.dtype = dtype or np.dtype(np.float32 if sixteen_bit else np.uint8)
    return root, names, files, np.asarray(labels, dtype=np.int64), skipped, reader


class FolderStream:
    """An image folder read a batch at a time: stream_folder() makes one.

    Iterating gives (images, labels) batches of one epoch, each call of
    iter() the next epoch; batches(epoch) gives a given epoch's.  Each
    file is decoded when its batch is made, by a background thread that
    keeps at most `prefetch` batches waiting (prefetch=0: in the caller's
    thread), so that at most prefetch + 2 batches are decoded at once.

    Attributes: root, classes, files and labels (every file whose header
    was read; labels index classes), skipped (the (path, reason) pairs
    on_bad="skip" passed over, growing as damaged pixels are met),
    image_shape ((H, W) or (H, W, C)), dtype, batch_size, seed, prefetch.
    """

    def __init__(self, path, split=None, size=None, fit="pad", channels=None, on_bad="raise",
                 classes=None, dtype=None, batch_size=128, seed=None, prefetch=2):
        self.batch_size = _whole("batch_size", batch_size, 1)
        self.seed = None if seed is None else _whole("seed", seed, 0)
        self.prefetch = _whole("prefetch", prefetch, 0)
        (self.root, self.classes, self.files, self.labels, self.skipped,
         self._reader) = _scan(path, split, size, fit, channels, on_bad, classes, dtype)
        self.on_bad = on_bad
        self.fit = fit
        self.dtype = self._reader.dtype
        H, W = self._reader.canvas
        C = self._reader.channels
        self.image_shape = (H, W) if C == 1 else (H, W, C)
        self._passed = {file for file, _ in self.skipped}
        self._lock = threading.Lock()
        self._epoch = 0

    def __len__(self):
        """Batches in an epoch (fewer when files turn out to be damaged)."""
        return -(-len(self.files) // self.batch_size)

    def __repr__(self):
        return "<libram.datasets.FolderStream %s: %d images of %s %s, %d classes, batches of %d>" \
            % (self.root, len(self.files), "x".join(map(str, self.image_shape)), self.dtype,
               len(self.classes), self.batch_size)

    def __iter__(self):
        epoch = self._epoch
        self._epoch += 1
        return self.batches(epoch)

    def order(self, epoch=0):
        """The file indices of an epoch, in batch order: class and file
        order with seed=None, else a permutation drawn from (seed, epoch)."""
        epoch = _whole("epoch", epoch, 0)
        if self.seed is None:
            return np.arange(len(self.files))
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.files))

    def batches(self, epoch=0):
        """The (images, labels) batches of an epoch: images (b, H, W) or
        (b, H, W, C) of `dtype`, labels (b,) int64, b = batch_size but for
        the last batch and files found damaged (skipped, or ValueError
        naming the file)."""
        return self._batches(self.order(epoch))

    def _read(self, i):
        """File i decoded and fitted, or None when on_bad="skip" passes it over."""
        file = self.files[i]
        try:
            return self._reader.read(file)
        except _BadFile as e:
            if self.on_bad != "skip":
                raise _refusal(file, e) from None
            with self._lock:
                if file not in self._passed:
                    self._passed.add(file)
                    self.skipped.append((file, str(e)))
            return None

    def _batch(self, indices, stop=None):
        images = np.empty((len(indices),) + self.image_shape, dtype=self.dtype)
        labels = np.empty(len(indices), dtype=np.int64)
        k = 0
        for i in indices:
            if stop is not None and stop.is_set():
                return None
            a = self._read(i)
            if a is not None:
                images[k] = a
                labels[k] = self.labels[i]
                k += 1
        if k == 0:
            return None
        if k < len(indices):
            return images[:k].copy(), labels[:k].copy()
        return images, labels

    def _batches(self, order):
        groups = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if not self.prefetch:
            for group in groups:
                batch = self._batch(group)
                if batch is not None:
                    yield batch
            return
        yield from _ahead(groups, self._batch, self.prefetch)

    def _subset(self, index):
        """The same stream over files[index] only (skipped shared)."""
        other = copy.copy(self)
        other.files = [self.files[i] for i in index]
        other.labels = self.labels[np.asarray(index, dtype=np.intp)]
        other._epoch = 0
        return other


def _ahead(groups, make, depth):
    """make(group, stop) for each group in a background thread, at most
    `depth` results waiting; yields them in order.  The thread stops when
    the generator is closed; its exception is raised here."""
    q = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def work():
        try:
            for group in groups:
                if stop.is_set():
                    return
                batch = make(group, stop)
                if batch is not None and not put((True, batch)):
                    return
        except BaseException as e:  # noqa: BLE001 -- raised in the consumer's thread
            put((False, e))
            return
        put((False, None))

    thread = threading.Thread(target=work, name="libram-folder-stream", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                if item is not None:
                    raise item
                return
            yield item
            del item  # not kept while the next batch is waited for
    finally:
        stop.set()
        thread.join()


def stream_folder(path, split=None, size=None, fit="pad", channels=None, on_bad="raise",
                  classes=None, dtype=None, batch_size=128, seed=None, prefetch=2):
    """A FolderStream: the image folder of load_folder() (same arguments,
    same pixels) read a batch at a time instead of all at once, for sets
    larger than memory.  Every file's header is read now (bad ones raise or
    are skipped, as on_bad says); its pixels when its batch is made.

    batch_size: images a batch; seed: None keeps class and file order, an
    int shuffles each epoch by (seed, epoch); prefetch: batches a
    background thread decodes ahead (0: none, decoded in the caller's
    thread).  RAMClassifier.fit() and partial_fit() take the stream as X.
    """
    return FolderStream(path, split=split, size=size, fit=fit, channels=channels,
                        on_bad=on_bad, classes=classes, dtype=dtype, batch_size=batch_size,
                        seed=seed, prefetch=prefetch)


def load_folder(path, split=None, size=None, fit="pad", channels=None, on_bad="raise",
                classes=None, dtype=None):
    """Images in class directories: PATH/<class>/<file> (split=None), or
    PATH/<split>/<class>/<file> (split="train", "test", ...), all decoded
    into memory (stream_folder() reads them a batch at a time).

    Class names are the directory names, sorted; with a split, the union of
    PATH/train's and PATH/test's class directories, so that both splits
    number the classes alike; classes= (e.g. train.classes) gives the list
    instead, and only those directories are read.  As the C tools, a
    folder with a single class directory (classes= not given) or an empty
    class directory raises ValueError.  Every file is decoded with Pillow
    (hidden files, starting with ".", are ignored): a file that cannot be
    read (not an image, truncated, corrupt, unreadable, a directory, or
    declaring more than MAX_PIXELS pixels) raises ValueError naming it, or
    with on_bad="skip" is left out and listed in `skipped`.  on_bad="fail"
    is "raise" under the C tools' name.

    size: None (every image must have the same size), an int or
    (height, width): the canvas.  fit, as the C tools fit (ram_image_fit):
    "pad" centres each image on the canvas at its own size, zeros around (a
    larger image keeps its centre); "resize" stretches it to the canvas
    (bilinear); "letterbox" scales it, keeping its aspect ratio, to fit
    inside the canvas, zeros around; "crop" scales it, keeping its aspect
    ratio, to cover the canvas and keeps the centre.
    channels: None (grey images stay grey, anything else becomes RGB; all
    grey gives (n, H, W), else grey ones become RGB too), 1 (colour to
    luma), 3 or 4 (RGBA).
    dtype: None (uint8, or float32 when a file has 16-bit samples), "uint8"
    (each fitted pixel v rounded to round(255 v), what the C tools' image
    folders hold) or "float32" (v itself: a byte b is b / 255, a 16-bit
    sample s / 65535).  Returns a Folder.
    """
    stream = FolderStream(path, split=split, size=size, fit=fit, channels=channels,
                          on_bad=on_bad, classes=classes, dtype=dtype, prefetch=0)
    n = len(stream.files)
    images = np.empty((n,) + stream.image_shape, dtype=stream.dtype)
    kept = []
    for i in range(n):
        a = stream._read(i)
        if a is not None:
            images[len(kept)] = a
            kept.append(i)
    if not kept:
        raise ValueError("%s: no images (%d skipped)" % (stream.root, len(stream.skipped)))
    if len(kept) < n:
        images = images[:len(kept)].copy()
    return Folder(images, stream.labels[kept], stream.classes,
                  [stream.files[i] for i in kept], stream.skipped)
