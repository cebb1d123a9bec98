"""Image data sets as NumPy arrays, memory-mapped where the format allows, in
the layouts RAMClassifier takes ((n, H, W) grey or (n, H, W, C) colour).

    from libram import datasets

    x, y = datasets.load_idx("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    x_train, y_train, x_test, y_test = datasets.load_npz("mnist.npz")
    x_val, y_val = datasets.load_npz_split("set.npz", "val")  # as the tools read it
    x, y = datasets.load_npy("images.npy", "labels.npy")
    train = datasets.load_folder("photos", split="train", size=64, fit="crop")

Every loader checks what it reads and raises ValueError (truncated file,
wrong magic, counts that disagree) naming the file.  NumPy is required;
load_folder also needs Pillow.
"""

import collections
import gzip
import os
import struct
import zipfile

import numpy as np

__all__ = ["load_idx", "load_npz", "load_npz_split", "load_npy", "load_folder", "Folder",
           "IDX_TYPES", "image_layout", "check_labels"]

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

#: load_folder()'s result: images (n, H, W) or (n, H, W, C) uint8; labels
#: (n,) indices into classes (the sorted class directory names); files the
#: n image paths; skipped the (path, reason) pairs on_bad="skip" left out.
Folder = collections.namedtuple("Folder", "images labels classes files skipped")

_FITS = ("pad", "resize", "crop")
_GREY_MODES = ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "I;16N", "F")
_SPLITS = ("train", "test")


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("load_folder needs Pillow to decode images: install python3-pil "
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


def _decode(Image, path, channels):
    """The image at `path` as a uint8 array (H, W) or (H, W, C); channels
    None keeps grey grey and makes everything else RGB."""
    with Image.open(path) as img:
        img.load()  # decodes now: a truncated or corrupt file fails here
        mode = img.mode
        if mode == "I" or mode.startswith("I;16"):
            # 16-bit grey (Pillow opens such PNGs as "I"): keep the high
            # byte, where Pillow's "L" conversion would clip at 255.
            grey = np.clip(np.asarray(img).astype(np.int64) >> 8, 0, 255).astype(np.uint8)
            img = Image.fromarray(grey, "L")
            mode = "L"
        want = {1: "L", 3: "RGB", 4: "RGBA"}.get(channels)
        if want is None:
            want = "L" if mode in _GREY_MODES else "RGB"
        if mode != want:
            img = img.convert(want)
        return img.copy()


def _fit(Image, img, canvas, fit):
    h, w = canvas
    bilinear = getattr(Image, "Resampling", Image).BILINEAR
    if fit == "resize" and img.size != (w, h):
        img = img.resize((w, h), bilinear)
    elif fit == "crop":  # scale to cover the canvas, keeping the aspect ratio, then centre-crop
        iw, ih = img.size
        s = max(w / iw, h / ih)
        nw, nh = max(w, round(iw * s)), max(h, round(ih * s))
        if (nw, nh) != (iw, ih):
            img = img.resize((nw, nh), bilinear)
    a = np.asarray(img)
    out = np.zeros((h, w) + a.shape[2:], dtype=np.uint8)
    ih, iw = a.shape[:2]
    # Centred: pad (zeros) where the image is smaller, cut where it is larger.
    sy, sx = max(0, (ih - h) // 2), max(0, (iw - w) // 2)
    dy, dx = max(0, (h - ih) // 2), max(0, (w - iw) // 2)
    ch, cw = min(h, ih), min(w, iw)
    out[dy:dy + ch, dx:dx + cw] = a[sy:sy + ch, sx:sx + cw]
    return out


def load_folder(path, split=None, size=None, fit="pad", channels=None, on_bad="raise",
                classes=None):
    """Images in class directories: PATH/<class>/<file> (split=None), or
    PATH/<split>/<class>/<file> (split="train", "test", ...).

    Class names are the directory names, sorted; with a split, the union of
    PATH/train's and PATH/test's class directories, so that both splits
    number the classes alike; classes= (e.g. train.classes) gives the list
    instead, and only those directories are read.  Every
    file is decoded with Pillow (hidden files, starting with ".", are
    ignored): a file that is not an image or is corrupt raises ValueError
    naming it, or with on_bad="skip" is left out and listed in `skipped`.

    size: None (every image must have the same size), an int or
    (height, width): the canvas.  fit: "pad" centres each image on the
    canvas with zeros around it and never rescales (a larger image loses its
    borders); "resize" stretches it to the canvas; "crop" scales it, keeping
    its aspect ratio, to cover the canvas and cuts the centre.
    channels: None (grey images stay grey, anything else becomes RGB; all
    grey gives (n, H, W), else grey ones become RGB too), 1, 3 or 4 (RGBA).
    Pixels are uint8 (16-bit grey keeps its high byte).  Returns a Folder.
    """
    if fit not in _FITS:
        raise ValueError("fit must be one of %s, not %r" % (", ".join(_FITS), fit))
    if channels not in (None, 1, 3, 4):
        raise ValueError("channels must be None, 1, 3 or 4, not %r" % (channels,))
    if on_bad not in ("raise", "skip"):
        raise ValueError("on_bad must be 'raise' or 'skip', not %r" % (on_bad,))
    canvas = _canvas(size)
    Image = _pil()
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
    classes = found if classes is None else [str(c) for c in classes]
    if len(classes) == 0:
        raise ValueError("%s has no class directories" % root)
    arrays, labels, files, skipped = [], [], [], []
    first = None
    for k, name in enumerate(classes):
        directory = os.path.join(root, name)
        if not os.path.isdir(directory):
            continue
        for entry in sorted(os.listdir(directory)):
            file = os.path.join(directory, entry)
            if entry.startswith(".") or not os.path.isfile(file):
                continue
            try:
                img = _decode(Image, file, channels)
                a = _fit(Image, img, canvas, fit) if canvas is not None else np.asarray(img)
            except (OSError, SyntaxError, EOFError, ValueError) as e:
                # What Pillow raises for foreign, truncated and corrupt files
                # (UnidentifiedImageError is an OSError).
                reason = "%s: %s" % (type(e).__name__, e)
                if on_bad == "skip":
                    skipped.append((file, reason))
                    continue
                raise ValueError("%s: not a readable image (%s)" % (file, reason)) from None
            if canvas is None:
                if first is None:
                    first = (file, a.shape[:2])
                elif a.shape[:2] != first[1]:
                    raise ValueError("%s is %dx%d but %s is %dx%d (height x width): give size= "
                                     "to fit them to one canvas" % (
                                         file, a.shape[0], a.shape[1], first[0], first[1][0],
                                         first[1][1]))
            arrays.append(a)
            labels.append(k)
            files.append(file)
    if not arrays:
        raise ValueError("%s: no images%s" % (root, " (%d skipped)" % len(skipped)
                                              if skipped else ""))
    if channels is None and any(a.ndim == 3 for a in arrays):
        arrays = [np.repeat(a[..., None], 3, axis=2) if a.ndim == 2 else a for a in arrays]
    return Folder(np.stack(arrays), np.asarray(labels, dtype=np.int64), classes, files,
                  skipped)
