"""libram: the Recurrent Attention Model (hard visual attention) from Python.

A ctypes binding of the C library libram.so.0 (include/ram/ram.h): no
compiled extension.  NumPy arrays go in and come out when NumPy is
importable; without it, inputs are flat sequences or buffers of numbers and
outputs are flat array.array buffers.

    import libram

    with libram.Model.load("models/mnist.ram") as model:
        labels, probs, locs = model.classify(images)  # images: (n, 1, 28, 28) floats in [0, 1]

    with libram.Model.create() as model, libram.Trainer(model, lr=1e-3) as trainer:
        stats = trainer.train_batch(images, labels)  # one step; stats.nll, stats.accuracy, ...

Every failing libram call raises libram.Error (a subclass per status, e.g.
libram.FormatError) carrying the library's status and message.  Which
libram.so.0 is loaded, and how its version is checked: see libram/_capi.py
and docs/python.md.
"""

import array
import collections
import ctypes
import enum
import os
import threading
import typing
import weakref

from . import _capi

try:  # optional: arrays in and out when present
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the machine
    _np = None

__version__ = "0.2.0"

__all__ = [
    "Error", "RamError", "InvalidArgumentError", "OutOfMemoryError", "InputOutputError",
    "FormatError", "VersionError", "CorruptError", "NumericError", "MismatchError",
    "BufferTooSmallError", "ThreadError", "Status", "Model", "Glimpse", "Policy", "Trainer",
    "Classification", "TrainStats", "SeqEvaluation", "set_blas_threads", "library_path",
    "library_version", "library_version_info", "GLIMPSE_FORMS", "CORE_TYPES", "LOC_BOUNDS",
    "SENSORS", "LOC_SOURCES", "BASELINE_TYPES", "SOFT_TRAINING", "REWARDS", "OPTIMIZERS",
    "PRODUCTS", "bf16_products_supported", "FIT_RULES", "RAMClassifier", "datasets",
]


def __getattr__(name):
    # Loaded on first use: they need NumPy, and the estimator imports
    # scikit-learn when present, which `import libram` should not pay for.
    if name == "RAMClassifier":
        from .estimator import RAMClassifier
        return RAMClassifier
    if name == "torch":  # imports PyTorch, which `import libram` must not need
        import importlib
        return importlib.import_module(__name__ + ".torch")
    if name == "datasets":
        import importlib  # `from . import datasets` would come back here
        return importlib.import_module(__name__ + ".datasets")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

#: Path (or soname) of the loaded C library.
library_path = _capi.library_path
#: Version of the loaded C library, (major, minor, patch) and "major.minor.patch".
library_version_info = _capi.library_version_info
library_version = _capi.ram_version_string().decode("ascii")

# Enums of ram.h by name, so Model.create(core="lstm") reads naturally.
GLIMPSE_FORMS = {"additive": 0, "concat": 1, "mul": 2}  # mul: DRAM's multiplicative form
CORE_TYPES = {"rnn": 0, "lstm": 1}
LOC_BOUNDS = {"hardtanh": 0, "tanh": 1}
SENSORS = {"hard": 0, "soft": 1}  # ram_sensor: average pooling, or exact cell averages
LOC_SOURCES = {"mean": 0, "sampled": 1, "random": 2, "center": 3}
# ram_fit: how images of another size are fitted to a model's canvas.
FIT_RULES = {"pad": 0, "resize": 1, "letterbox": 2, "crop": 3}
_FIT_NAMES = {v: k for k, v in FIT_RULES.items()}
# ram_precision: the weights classify() uses (Model.precision).
_PRECISIONS = {"float": 0, "half": 1, "bf16": 2}
BASELINE_TYPES = {"linear": 0, "scalar": 1, "none": 2}
# ram_soft_training: how a trainer moves a soft-sensor model's locations.
SOFT_TRAINING = {"backprop": 0, "hybrid": 1}
# ram_reward_mode: what a model of several objects is rewarded for.
REWARDS = {"per-object": 0, "all-correct": 1}
OPTIMIZERS = {"sgd": 0, "adam": 1}
PRODUCTS = {"float": 0, "bf16": 1}


def bf16_products_supported():
    """Whether this CPU runs Trainer(products="bf16") (AVX512_BF16); False
    with a libram that predates it."""
    f = _capi.ram_bf16_products_supported
    return bool(f()) if f is not None else False


def set_blas_threads(n):
    """Set OpenBLAS's own thread count (process-wide; a no-op with another
    BLAS).  libram's matrices are small: parallelise with Trainer(threads=)
    or one thread per Model instead, and call set_blas_threads(1)."""
    _capi.ram_set_blas_threads(_c_int(n, "n"))


# ---- errors

class Status(enum.IntEnum):
    """ram_status: the numbers are part of libram's ABI and never change."""
    OK = 0
    INVALID_ARGUMENT = 1
    OUT_OF_MEMORY = 2
    IO = 3
    FORMAT = 4
    VERSION = 5
    CORRUPT = 6
    NUMERIC = 7
    MISMATCH = 8
    BUFFER_TOO_SMALL = 9
    THREAD = 10


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


class Error(Exception):
    """A libram call failed.  `status` is the ram_status (a Status, or a
    plain int for a status newer than this binding), `message` the detail
    from ram_last_error().  str(e) is "<ram_status_string>: <message>"."""

    def __init__(self, status, message=""):
        # args = (status, message): the exception pickles and compares simply.
        super().__init__(status, message)
        try:
            self.status = Status(status)
        except ValueError:
            self.status = int(status)
        self.message = message

    def __str__(self):
        name = _text(_capi.ram_status_string(int(self.status)))
        return "%s: %s" % (name, self.message) if self.message else name


RamError = Error  # the name of the earlier single-file binding


class InvalidArgumentError(Error, ValueError):
    """NULL, out-of-range or inconsistent argument (also raised for length
    mismatches the binding catches before calling libram)."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation in libram failed."""


class InputOutputError(Error):
    """open/read/write/rename failed; the message has the path and errno text."""


class FormatError(Error):
    """Not a libram file, or a malformed one."""


class VersionError(Error):
    """A libram file of an unsupported format version."""


class CorruptError(Error):
    """A truncated file or a checksum mismatch."""


class NumericError(Error):
    """NaN/Inf in the input, or training diverged."""


class MismatchError(Error):
    """A file or object does not match this configuration."""


class BufferTooSmallError(Error):
    """An output buffer is shorter than needed."""


class ThreadError(Error):
    """A worker thread could not be started."""


_ERRORS = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.IO: InputOutputError,
    Status.FORMAT: FormatError,
    Status.VERSION: VersionError,
    Status.CORRUPT: CorruptError,
    Status.NUMERIC: NumericError,
    Status.MISMATCH: MismatchError,
    Status.BUFFER_TOO_SMALL: BufferTooSmallError,
    Status.THREAD: ThreadError,
}


def _check(status):
    """Raise the Error subclass of a failed call's status, with the calling
    thread's ram_last_error(); return None for RAM_OK.  ctypes runs the call
    and this on the same OS thread, whose message it is."""
    if status != Status.OK:
        raise _ERRORS.get(status, Error)(status, _text(_capi.ram_last_error()))


def _invalid(message):
    """A misuse libram cannot see (it knows pointers, not Python lengths),
    reported as libram reports its own invalid arguments."""
    return InvalidArgumentError(Status.INVALID_ARGUMENT, message)


# ---- buffers.  Inputs become contiguous float32 / C int memory without a
# copy when they already are; outputs are NumPy arrays, or flat array.array
# buffers without NumPy.

def _c_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        if _np is None or not isinstance(value, _np.integer):
            raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
        value = int(value)
    if not -2 ** 31 <= value < 2 ** 31:
        raise _invalid("%s = %d does not fit a C int" % (what, value))
    return value


def _pointer(buf, ctype):
    """A ctypes pointer into a NumPy array or array.array `buf`, or None if
    it is empty."""
    if len(buf) == 0:
        return None
    if _np is not None and isinstance(buf, _np.ndarray):
        return buf.ctypes.data_as(ctypes.POINTER(ctype))
    # from_buffer() pins the array (it cannot be resized while exported).
    return ctypes.cast((ctype * len(buf)).from_buffer(buf), ctypes.POINTER(ctype))


def _reject_bytes(data, what):
    if isinstance(data, (str, bytes, bytearray)):
        # array("f", b"...") would reinterpret raw bytes as floats.
        raise TypeError("%s must be numbers, not %s" % (what, type(data).__name__))


def _floats(data, what):
    """(buffer, pointer, count) for `data` as contiguous float32."""
    _reject_bytes(data, what)
    if _np is not None:
        try:
            a = _np.ascontiguousarray(data, dtype=_np.float32).reshape(-1)
        except (TypeError, ValueError) as e:
            raise TypeError("%s must be numbers (%s)" % (what, e)) from None
        return a, _pointer(a, ctypes.c_float), int(a.size)
    if isinstance(data, array.array) and data.typecode == "f":
        a = data
    else:
        if isinstance(data, memoryview):
            data = data.tolist() if data.ndim <= 1 else _flatten(data.tolist())
        try:
            a = array.array("f", data)
        except (TypeError, ValueError) as e:
            raise TypeError("%s must be a flat sequence of numbers (%s)" % (what, e)) from None
    return a, _pointer(a, ctypes.c_float), len(a)


def _pixels(data, what, bytes_ok=True):
    """(buffer, pointer, count, u8) for images: a NumPy uint8 array as its
    own bytes, each standing for the pixel byte / 255 as libram's _u8
    functions read it (u8 True), anything else as contiguous float32
    (_floats), its values as they are.  bytes_ok False (a function without
    a byte form): a uint8 array as the floats byte / 255, which give the
    same results."""
    if _np is not None and isinstance(data, _np.ndarray) and data.dtype == _np.uint8:
        if _capi.ram_model_classify_u8 is None or not bytes_ok:  # the same floats
            f = (data.astype(_np.float32) / _np.float32(255)).reshape(-1)
            return f, _pointer(f, ctypes.c_float), int(f.size), False
        a = _np.ascontiguousarray(data).reshape(-1)
        return a, _pointer(a, ctypes.c_uint8), int(a.size), True
    buf, ptr, count = _floats(data, what)
    return buf, ptr, count, False


def _ints(data, what):
    """(buffer, pointer, count) for `data` as contiguous C ints."""
    _reject_bytes(data, what)
    if _np is not None:
        a = _np.asarray(data)
        if a.size and a.dtype.kind not in "iub":
            raise TypeError("%s must be integers, not %s" % (what, a.dtype))
        if a.size and (int(a.min()) < -2 ** 31 or int(a.max()) >= 2 ** 31):
            raise _invalid("a value of %s does not fit a C int" % what)
        a = _np.ascontiguousarray(a, dtype=_np.intc).reshape(-1)
        return a, _pointer(a, ctypes.c_int), int(a.size)
    if isinstance(data, array.array) and data.typecode == "i":
        a = data
    else:
        try:
            a = array.array("i", data)
        except OverflowError:
            raise _invalid("a value of %s does not fit a C int" % what) from None
        except (TypeError, ValueError) as e:
            raise TypeError("%s must be a flat sequence of ints (%s)" % (what, e)) from None
    return a, _pointer(a, ctypes.c_int), len(a)


def _flatten(nested):
    out = []
    for item in nested:
        if isinstance(item, (list, tuple)):
            out.extend(_flatten(item))
        else:
            out.append(item)
    return out


def _new_floats(shape):
    if _np is not None:
        return _np.zeros(shape, dtype=_np.float32)
    count = 1
    for dim in shape:
        count *= dim
    return array.array("f", bytes(count * array.array("f").itemsize))


def _new_ints(count):
    if _np is not None:
        return _np.zeros(count, dtype=_np.intc)
    return array.array("i", bytes(count * array.array("i").itemsize))


def _advance(ptr, count):
    """`ptr` moved on by `count` elements of its type."""
    if count == 0:
        return ptr
    step = ctypes.sizeof(ptr._type_)
    return ctypes.cast(ctypes.cast(ptr, ctypes.c_void_p).value + count * step, type(ptr))


def _placeholder(keep, ctype):
    """A valid pointer for an empty input, so that libram, not the binding,
    refuses n = 0 with its own message."""
    cell = ctype()
    keep.append(cell)
    return ctypes.pointer(cell)


# ---- object lifetimes

def _free_keeping(free, ptr, *keep):
    # `keep` (handles of objects the C object borrows) stays referenced
    # until ptr is freed.
    free(ptr)


class _Handle:
    """Owns one libram object and frees it exactly once: at close(), when
    garbage-collected, or at exit.  `keep`: handles of objects the C object
    borrows, never freed before it."""

    def __init__(self, ptr, free, keep=()):
        self.ptr = ptr
        self._finalizer = weakref.finalize(self, _free_keeping, free, ptr, *keep)

    def close(self):
        self._finalizer()
        self.ptr = None


class _Closeable:
    """close() plus the context-manager protocol; `_h` is the _Handle and
    `_what` names the object in the error for use after close()."""

    _what = "object"

    @property
    def _ptr(self):
        if self._h.ptr is None:
            raise ValueError("the %s is closed" % self._what)
        return self._h.ptr

    @property
    def closed(self):
        return self._h.ptr is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _set_params(struct, overrides, enums, what):
    """Apply `overrides` (field names of the C struct; enums by name or
    number) to `struct`.  Integers are range-checked since ctypes would
    silently wrap them."""
    types = dict(struct._fields_)
    for name, value in overrides.items():
        if name not in types or name in ("struct_size", "glimpse"):
            known = [n for n in types if n not in ("struct_size", "glimpse")]
            raise TypeError("unknown %s parameter %r (known: %s)" % (what, name, ", ".join(known)))
        table = enums.get(name)
        if table is not None and isinstance(value, str):
            if value not in table:
                raise ValueError("%s must be one of %s, not %r" % (name, ", ".join(table), value))
            value = table[value]
        if isinstance(value, bool):
            value = int(value)  # detach_core=True, nesterov=False
        ctype = types[name]
        if ctype in (ctypes.c_int, ctypes.c_long, ctypes.c_uint64):
            if _np is not None and isinstance(value, _np.integer):
                value = int(value)
            if not isinstance(value, int):
                raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
            bits = 8 * ctypes.sizeof(ctype)
            low, high = (0, 2 ** bits) if ctype is ctypes.c_uint64 else (-2 ** (bits - 1),
                                                                          2 ** (bits - 1))
            if not low <= value < high:
                raise _invalid("%s = %d does not fit its C type" % (name, value))
        elif not isinstance(value, (int, float)) and not (
                _np is not None and isinstance(value, _np.number)):
            raise TypeError("%s must be a number, not %s" % (name, type(value).__name__))
        if not _capi.known(struct, name) and value != getattr(struct, name):
            # The library would read only struct_size bytes: the value would
            # be silently ignored.
            raise _invalid("%s = %r needs a newer libram: %s (%s) does not know the field"
                           % (name, value, library_path, library_version))
        setattr(struct, name, value)


# ---- model

_MODEL_FIELDS = [f for f, _ in _capi.ModelParams._fields_ if f not in ("struct_size", "glimpse")]
_GLIMPSE_FIELDS = [f for f, _ in _capi.GlimpseParams._fields_ if f != "struct_size"]
_MODEL_ENUMS = {"form": GLIMPSE_FORMS, "core": CORE_TYPES, "bound": LOC_BOUNDS,
                "sensor": SENSORS, "upper_core": CORE_TYPES}
_POLICY_ENUMS = {"baseline": BASELINE_TYPES, "soft_training": SOFT_TRAINING, "reward": REWARDS}

class Classification(collections.namedtuple("Classification", "labels probs locs")):
    """Model.classify()'s result: labels (n ints), probs (n x classes),
    locs (n x glimpses x (x, y)); Model.classify_seq()'s: labels (n x
    objects), probs (n x objects x classes), locs (n x glimpses x (x, y)).
    Three fields, as ever; the attribute `zooms` holds each glimpse's zoom
    factor (n x glimpses; all 1 for a model without zoom as an action)."""
    zooms = None
#: Model.classify_stop()'s result: labels (n,), probs (n x classes) and steps
#: (n,), the glimpses each image took.
StopClassification = collections.namedtuple("StopClassification", "labels probs steps")


class Model(_Closeable):
    """A RAM model: architecture and weights (ram_model).

    Model.create(**params) builds a fresh one, Model.load(path) reads a
    file.  classify() uses one workspace per model, grown to the largest
    batch seen and guarded by a lock, so a Model may be shared between
    threads (their calls take turns).  Setting `threads` (default 1) makes
    that workspace split each call between that many threads
    (ram_state_create_threads): faster single images on a multi-core
    machine, the same results.  Setting `precision` to "half" or "bf16"
    (ram_state_set_precision) classifies with the weights rounded to IEEE
    half precision or to bfloat16: faster small batches, slightly different
    results.
    A model of several objects (objects > 1, DRAM) labels each image
    several times: classify_seq() returns every label, classify() refuses
    it."""

    _what = "model"

    def __init__(self, handle):
        # Use create() or load(): this takes ownership of a ram_model *.
        self._h = _Handle(handle, _capi.ram_model_free)
        self._lock = threading.Lock()
        self._trainers = weakref.WeakSet()  # closed before the model
        self._state = None
        self._state_capacity = 0
        self._threads = 1
        self._precision = "float"
        p = _capi.defaults(_capi.ModelParams)
        _check(_capi.ram_model_get_params(handle, ctypes.byref(p)))
        self._params = p

    @classmethod
    def create(cls, **params):
        """A model with freshly initialised weights: ram_model_params_init()'s
        defaults (the paper's MNIST model) with `params` applied.  Keys are
        the fields of ram_model_params; the retina is given as patch=,
        depth=, scale= or glimpse=dict(...); form, core, bound, sensor and
        upper_core also take names ("concat", "lstm", "hardtanh", "soft").
        DRAM's parts: form="mul" (the multiplicative glimpse network),
        core_layers=2 and upper_core (a two-layer core), context=S (the
        context network on the image pooled to S x S), objects and
        emit_every (several labels per image); sensor="soft" is the
        retina of exact cell averages, differentiable in the location."""
        p = _capi.defaults(_capi.ModelParams)
        glimpse = dict(params.pop("glimpse", None) or {})
        for name in _GLIMPSE_FIELDS:
            if name in params:
                glimpse[name] = params.pop(name)
        _set_params(p.glimpse, glimpse, {}, "glimpse")
        _set_params(p, params, _MODEL_ENUMS, "model")
        out = ctypes.c_void_p()
        _check(_capi.ram_model_create(ctypes.byref(p), ctypes.byref(out)))
        return cls(out.value)

    @classmethod
    def load(cls, path):
        """Load a model (or the model part of a checkpoint) saved by libram."""
        out = ctypes.c_void_p()
        _check(_capi.ram_model_load(os.fsencode(path), ctypes.byref(out)))
        return cls(out.value)

    @classmethod
    def from_bytes(cls, data):
        """Load a model from the bytes of a whole model file (checked exactly
        as a file would be; ram_model_load_memory)."""
        data = bytes(data)
        out = ctypes.c_void_p()
        _check(_capi.ram_model_load_memory(data, len(data), ctypes.byref(out)))
        return cls(out.value)

    def with_glimpses(self, glimpses, emit_every=0):
        """A new model with these weights taking `glimpses` glimpses, a label
        every `emit_every` (0: glimpses / objects); no weight depends on the
        count, so a model can be fine-tuned or run with more or fewer
        (ram_model_with_glimpses).  The stop unit is not copied."""
        out = ctypes.c_void_p()
        _check(_capi.ram_model_with_glimpses(self._ptr, int(glimpses), int(emit_every),
                                             ctypes.byref(out)))
        return type(self)(out.value)

    def with_sensor(self, sensor):
        """A new model with these weights and another sensor, "hard" or
        "soft" (ram_model_with_sensor): a hard model read by the soft sensor
        (which reads what the hard one does where the squares sit on pixel
        edges), to fine-tune its glimpses by backpropagation.  The stop unit
        is not copied."""
        if sensor not in SENSORS:
            raise ValueError("sensor must be one of %s, not %r" % (", ".join(SENSORS), sensor))
        if _capi.ram_model_with_sensor is None:
            raise _invalid("Model.with_sensor needs a newer libram than %s (%s)"
                           % (library_path, library_version))
        out = ctypes.c_void_p()
        _check(_capi.ram_model_with_sensor(self._ptr, SENSORS[sensor], ctypes.byref(out)))
        return type(self)(out.value)

    def save(self, path):
        """Save atomically: a temporary file renamed over `path`."""
        with self._lock:
            _check(_capi.ram_model_save(self._ptr, os.fsencode(path)))

    def close(self):
        """Free the model now rather than when it is garbage-collected.
        Its trainers are closed first.  Idempotent."""
        for trainer in list(self._trainers):
            trainer.close()
        with self._lock:
            if self._state is not None:
                self._state.close()
                self._state = None
            self._h.close()

    def __repr__(self):
        if self.closed:
            return "<libram.Model (closed)>"
        c, h, w = self.image_shape
        return "<libram.Model %dx%dx%d, %d glimpses, %d classes%s>" % (
            c, h, w, self.glimpses, self.classes,
            ", %d objects" % self.objects if self.objects > 1 else "")

    @property
    def param_count(self):
        """Number of trainable float parameters (baseline excluded)."""
        return int(_capi.ram_model_param_count(self._ptr))

    @property
    def params(self):
        """The architecture as a dict (ram_model_get_params), enums by name:
        Model.create(**model.params) makes a model of the same architecture."""
        p = self._params
        d = {name: getattr(p, name) for name in _MODEL_FIELDS}
        for name, table in _MODEL_ENUMS.items():
            d[name] = next((k for k, v in table.items() if v == d[name]), d[name])
        d["glimpse"] = {name: getattr(p.glimpse, name) for name in _GLIMPSE_FIELDS}
        return d

    @property
    def image_shape(self):
        """(channels, height, width) of the images the model takes."""
        return self._params.channels, self._params.height, self._params.width

    @property
    def classes(self):
        return self._params.classes

    @property
    def glimpses(self):
        return self._params.glimpses

    @property
    def objects(self):
        """Labels per image: 1, or several for a DRAM model of several
        objects (label s after glimpse (s + 1) * emit_every), whose labels
        classify_seq() and Trainer.train_batch_seq() take."""
        return self._params.objects

    @property
    def class_names(self):
        """The class names saved with the model (a list of str), or None.
        Set them to a list of one str per class, each 1 to 1024 bytes of
        UTF-8 without NUL (a name os.listdir() decoded with surrogate
        escapes goes back to its bytes, and is read back so), or None."""
        first = _capi.ram_model_class_name(self._ptr, 0)
        if first is None:
            return None
        return [_capi.ram_model_class_name(self._ptr, k).decode("utf-8", "surrogateescape")
                for k in range(self.classes)]

    @class_names.setter
    def class_names(self, names):
        if names is None:
            _check(_capi.ram_model_set_class_names(self._ptr, None, 0))
            return
        try:
            encoded = [str(n).encode("utf-8", "surrogateescape") for n in names]
        except UnicodeEncodeError as e:
            raise _invalid("class names must be text UTF-8 can encode (%s)" % e) from None
        for k, name in enumerate(encoded):
            if b"\0" in name:  # C strings would end there
                raise _invalid("class name %d, %r, holds a NUL byte"
                               % (k, name.decode("utf-8", "surrogateescape")))
        table = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
        _check(_capi.ram_model_set_class_names(self._ptr, table, len(encoded)))

    @property
    def fit(self):
        """How images of another size are fitted to the canvas: "pad" (the
        default), "resize", "letterbox" or "crop"; saved with the model."""
        return _FIT_NAMES[_capi.ram_model_fit(self._ptr)]

    @fit.setter
    def fit(self, value):
        if value not in FIT_RULES:
            raise ValueError("fit must be one of %s, not %r" % (", ".join(FIT_RULES), value))
        _check(_capi.ram_model_set_fit(self._ptr, FIT_RULES[value]))

    def fit_image(self, image, shape):
        """One image of `shape` (channels, height, width), any size and
        channel count, fitted to the model's input by its fit rule
        (ram_image_fit): a flat float buffer of the model's C x H x W."""
        c, h, w = (_c_int(v, "shape") for v in shape)
        buf, ptr, count = _floats(image, "image")
        if count != c * h * w:
            raise _invalid("image has %d values, shape %r needs %d" % (count, tuple(shape),
                                                                         c * h * w))
        C, H, W = self.image_shape
        out = _np.empty(C * H * W, dtype=_np.float32) if _np is not None else array.array(
            "f", bytes(4 * C * H * W))
        _check(_capi.ram_image_fit(self._ptr, ptr, c, h, w, _pointer(out, ctypes.c_float),
                                   C * H * W))
        del buf
        return out.reshape(C, H, W) if _np is not None else out

    @property
    def threads(self):
        """Threads that work on each classify() call (1 to 64)."""
        return self._threads

    @threads.setter
    def threads(self, value):
        value = _c_int(value, "threads")
        if not 1 <= value <= 64:
            raise _invalid("threads = %d not in [1, 64]" % value)
        with self._lock:
            if value != self._threads and self._state is not None:
                self._state.close()
                self._state = None
                self._state_capacity = 0
            self._threads = value

    @property
    def precision(self):
        """The weights classify() uses: "float" (the default), "half" or
        "bf16", every parameter rounded to IEEE half precision or to bfloat16
        (ram_state_set_precision): batches of up to 8 images read half the
        bytes of weights."""
        return self._precision

    @precision.setter
    def precision(self, value):
        if value not in _PRECISIONS:
            raise ValueError("precision must be one of %s, not %r" % (", ".join(_PRECISIONS),
                                                                       value))
        with self._lock:
            if self._state is not None:
                _check(_capi.ram_state_set_precision(self._state.ptr, _PRECISIONS[value]))
            self._precision = value

    def _workspace(self, n):
        # Grown on demand and kept, so that repeated calls allocate nothing
        # on the C side (ram_model_classify itself never does).
        if self._state is None or self._state_capacity < n:
            if self._state is not None:
                self._state.close()
                self._state = None
            out = ctypes.c_void_p()
            _check(_capi.ram_state_create_threads(self._ptr, n, self._threads,
                                                  ctypes.byref(out)))
            self._state = _Handle(out.value, _capi.ram_state_free)
            self._state_capacity = n
            _check(_capi.ram_state_set_precision(out.value, _PRECISIONS[self._precision]))
        return self._state.ptr

    #: Images per C call of classify(): larger inputs go through in chunks
    #: of this size with one workspace, which keeps every n working (a
    #: workspace holds at most 2^20 images) and the activations in cache.
    classify_chunk = 256

    def classify(self, images, n=None, source="mean", seed=1):
        """Classify n images of the model's shape (C x H x W each, row-major,
        values typically in [0, 1]).

        images: n*C*H*W numbers: a NumPy array of any shape with that many
        elements, e.g. (n, C, H, W), or (without NumPy too) a flat sequence
        or float buffer.  A NumPy uint8 array holds 8-bit pixels, each byte
        b the value b / 255 (libram's _u8 functions, no float copy); any
        other type is taken as the values themselves.  n defaults to the count the size implies and must
        match it exactly.  Any n >= 1 works: the images go to libram
        classify_chunk at a time.
        source: "mean" (deterministic, the default), "sampled", "random" or
        "center"; seed: the RNG seed of sampled and random locations (one
        RNG for the whole call, drawn chunk after chunk).

        Returns Classification(labels, probs, locs): with NumPy, arrays of
        shapes (n,), (n, classes) and (n, glimpses, 2); without, flat
        array.array buffers of n ints, n*classes and n*glimpses*2 floats.
        Locations are (x, y) in the retina's [-1, 1] frame.

        A model of several objects (objects > 1) emits one label per
        object: it raises InvalidArgumentError, and classify_seq() returns
        them all.
        """
        if self.objects > 1:
            raise _invalid("this model labels %d objects per image: classify_seq() returns "
                           "their labels (n, %d) and probabilities (n, %d, %d); classify() "
                           "gives one label per image" % ((self.objects,) * 3 + (self.classes,)))
        return self._classify(images, n, source, seed, seq=False)

    def classify_seq(self, images, n=None, source="mean", seed=1):
        """Every label of a model of several objects (ram_model_classify_seq):
        images, n, source and seed as for classify().

        Returns Classification(labels, probs, locs): with NumPy, arrays of
        shapes (n, objects), (n, objects, classes) and (n, glimpses, 2),
        label s of image i (labels[i, s], probs[i, s]) the one emitted after
        glimpse (s + 1) * emit_every, each probs[i, s] summing to 1; without
        NumPy, flat buffers of n*objects ints, n*objects*classes and
        n*glimpses*2 floats, image by image.  Works for any model: with one
        object it is classify() with an axis of length 1 added."""
        return self._classify(images, n, source, seed, seq=True)

    def _classify(self, images, n, source, seed, seq):
        if source not in LOC_SOURCES:
            raise ValueError("source must be one of %s, not %r" % (", ".join(LOC_SOURCES),
                                                                    source))
        c, h, w = self.image_shape
        pixels = c * h * w
        objects = self.objects if seq else 1
        seq_fn = _capi.ram_model_classify_seq
        if seq and seq_fn is None and objects > 1:  # cannot happen: such a model needs it
            raise _invalid("%s (%s) has no ram_model_classify_seq" % (library_path,
                                                                      library_version))
        # The _seq function has no byte form: bytes become the floats b / 255
        # (the same bits).
        buf, ptr, size, u8 = _pixels(images, "images", bytes_ok=not (seq and seq_fn))
        n, _ = self._image_count(size, n)
        chunk = _c_int(self.classify_chunk, "classify_chunk")
        if not 1 <= chunk <= 2 ** 20:
            raise _invalid("classify_chunk = %d not in [1, 2^20]" % chunk)
        count = max(n, 1)  # n < 1 goes to libram, which refuses it with its own message
        labels = _new_ints(count * objects)
        probs = _new_floats((count, objects, self.classes) if seq else (count, self.classes))
        locs = _new_floats((count, self.glimpses, 2))
        zooms = _new_floats((count, self.glimpses))
        zoom_fn = _capi.ram_state_zooms
        keep = [buf]
        if ptr is None:
            ptr = _placeholder(keep, ctypes.c_uint8 if u8 else ctypes.c_float)
        out = (_pointer(labels, ctypes.c_int), _pointer(probs, ctypes.c_float),
               _pointer(locs, ctypes.c_float))
        # elements per image
        steps = (pixels, objects, objects * self.classes, 2 * self.glimpses)
        with self._lock:
            state = self._workspace(min(count, chunk))
            policy = None if source == "mean" else self._sampling_policy(source, seed)
            try:
                for i in range(0, count, chunk):
                    k = min(chunk, n - i) if n >= 1 else _c_int(n, "n")
                    args = [_advance(p, i * step) for p, step in zip((ptr,) + out, steps)]
                    if seq and seq_fn is not None:
                        _check(seq_fn(self._ptr, state, args[0], k, LOC_SOURCES[source],
                                      policy.ptr if policy else None, *args[1:]))
                    elif source == "mean":
                        fn = _capi.ram_model_classify_u8 if u8 else _capi.ram_model_classify
                        _check(fn(self._ptr, state, args[0], k, *args[1:]))
                    else:
                        fn = _capi.ram_model_classify_ex_u8 if u8 else _capi.ram_model_classify_ex
                        _check(fn(self._ptr, state, args[0], k, LOC_SOURCES[source],
                                  policy.ptr if policy else None, *args[1:]))
                    if zoom_fn is not None:
                        zptr = _advance(_pointer(zooms, ctypes.c_float), i * self.glimpses)
                        _check(zoom_fn(state, k, zptr))
            finally:
                if policy:
                    policy.close()
        del keep
        if seq and _np is not None:
            labels = labels.reshape(count, objects)
        if zoom_fn is None:  # a library without zoom: every factor is 1
            for j in range(len(zooms) if _np is None else 0):
                zooms[j] = 1.0
            if _np is not None:
                zooms.fill(1.0)
        result = Classification(labels, probs, locs)
        result.zooms = zooms
        return result

    def _image_count(self, size, n):
        """(n, floats per image): n as given, or None for as many images
        as `size` floats make, checked against `size`."""
        c, h, w = self.image_shape
        pixels = c * h * w
        if n is None:
            if size == 0 or size % pixels:
                raise _invalid("%d floats are not a whole number of %d x %d x %d images"
                               % (size, c, h, w))
            n = size // pixels
        n = _c_int(n, "n")
        if n >= 1 and size != n * pixels:
            raise _invalid("n = %d images of %d x %d x %d need %d floats, got %d"
                           % (n, c, h, w, n * pixels, size))
        return n, pixels

    def classify_stop(self, images, threshold=None, n=None):
        """Stopping when sure (ram_model_classify_stop): each image takes
        glimpses (at the policy's mean locations) until the classifier's top
        probability reaches `threshold` (in [0, 1]) or the model's last
        glimpse, and is labelled there; finished images leave the work.
        threshold None: where the model's stop unit says instead
        (ram_model_classify_stop_unit; fit_stop()).  images and n as for
        classify().  Returns StopClassification(labels, probs, steps): with
        NumPy, arrays of shapes (n,), (n, classes) and (n,), steps[i] the
        glimpses image i took.  Choose the threshold (or the unit's cost) on
        validation images: how early a model can stop is its own."""
        unit = threshold is None
        fns = ((_capi.ram_model_classify_stop_unit, _capi.ram_model_classify_stop_unit_u8)
               if unit else (_capi.ram_model_classify_stop, _capi.ram_model_classify_stop_u8))
        if fns[0] is None:
            raise _invalid("%s (%s) has no %s" % (
                library_path, library_version,
                "ram_model_classify_stop_unit" if unit else "ram_model_classify_stop"))
        buf, ptr, size, u8 = _pixels(images, "images", bytes_ok=fns[1] is not None)
        n, pixels = self._image_count(size, n)
        chunk = _c_int(self.classify_chunk, "classify_chunk")
        count = max(n, 1)
        labels, steps = _new_ints(count), _new_ints(count)
        probs = _new_floats((count, self.classes))
        keep = [buf]
        if ptr is None:
            ptr = _placeholder(keep, ctypes.c_uint8 if u8 else ctypes.c_float)
        out = (_pointer(labels, ctypes.c_int), _pointer(probs, ctypes.c_float),
               _pointer(steps, ctypes.c_int))
        with self._lock:
            state = self._workspace(min(count, chunk))
            for i in range(0, count, chunk):
                k = min(chunk, n - i) if n >= 1 else n
                args = [_advance(p, i * step)
                        for p, step in zip((ptr,) + out, (pixels, 1, self.classes, 1))]
                rule = () if unit else (float(threshold),)
                _check(fns[1 if u8 else 0](self._ptr, state, args[0], k, *rule, *args[1:]))
        del keep
        return StopClassification(labels, probs, steps)

    def step_probs(self, images, n=None):
        """The classifier's probabilities after every glimpse
        (ram_model_step_probs; mean locations): with NumPy an array of
        shape (n, glimpses, classes), else a flat array.  images and n as
        for classify()."""
        if _capi.ram_model_step_probs is None:
            raise _invalid("%s (%s) has no ram_model_step_probs" % (library_path,
                                                                    library_version))
        buf, ptr, size, _ = _pixels(images, "images", bytes_ok=False)
        n, pixels = self._image_count(size, n)
        if n < 1:
            raise _invalid("n = %d: no images" % n)
        step = self.glimpses * self.classes
        probs = _new_floats((n, self.glimpses, self.classes))
        chunk = _c_int(self.classify_chunk, "classify_chunk")
        out = _pointer(probs, ctypes.c_float)
        with self._lock:
            state = self._workspace(min(n, chunk))
            for i in range(0, n, chunk):
                _check(_capi.ram_model_step_probs(self._ptr, state, _advance(ptr, i * pixels),
                                                  min(chunk, n - i), _advance(out, i * step)))
        del buf
        return probs

    def fit_stop(self, images, labels, cost=0.01, epochs=30, batch=256, lr=0.05, seed=1,
                 step_probs=None):
        """Fit the model's stop unit (ram_model_fit_stop): a Bernoulli unit
        after each glimpse on the classifier's confidence, trained by
        REINFORCE for the reward [right] - cost x glimpses on these images
        (training images: judge it on others with classify_stop()).  Kept
        with the model and saved with it; training the model removes it.
        step_probs: the images' step_probs() already made (images unused)."""
        if _capi.ram_model_fit_stop is None:
            raise _invalid("%s (%s) has no ram_model_fit_stop" % (library_path,
                                                                  library_version))
        if step_probs is None:
            probs = self.step_probs(images)
        else:
            probs, _, _ = _floats(step_probs, "step_probs")
        lbuf, lptr, count = _ints(labels, "labels")
        n, rest = divmod(len(probs.reshape(-1)) if _np is not None else len(probs),
                         self.glimpses * self.classes)
        if rest:
            raise _invalid("step_probs: not a whole number of glimpses x classes")
        if count != n:
            raise _invalid("%d labels for %d images" % (count, n))
        p = _capi.StopParams()
        _capi.ram_stop_params_init_sized(ctypes.byref(p), ctypes.sizeof(p))
        p.cost, p.epochs, p.batch, p.lr, p.seed = cost, epochs, batch, lr, seed
        with self._lock:
            _check(_capi.ram_model_fit_stop(self._ptr, _pointer(probs, ctypes.c_float), lptr, n,
                                            ctypes.byref(p)))
        del lbuf

    @property
    def stop_unit(self):
        """The model's stop unit as (weights, cost), or None: 3 + glimpses
        weights (-log(1 - top probability), the top two's margin, the
        entropy, then a bias per glimpse).  Set a (weights, cost) pair, or
        None to remove it."""
        if _capi.ram_model_stop_unit is None:
            return None
        w = _new_floats(3 + self.glimpses)
        cost = ctypes.c_float()
        if _capi.ram_model_stop_unit(self._ptr, _pointer(w, ctypes.c_float),
                                     ctypes.byref(cost)) != 0:
            return None
        return w, cost.value

    @stop_unit.setter
    def stop_unit(self, value):
        if _capi.ram_model_set_stop_unit is None:
            raise _invalid("%s (%s) has no ram_model_set_stop_unit" % (library_path,
                                                                       library_version))
        if value is None:
            _check(_capi.ram_model_set_stop_unit(self._ptr, None, 0.0))
            return
        weights, cost = value
        buf, ptr, count = _floats(weights, "weights")
        if count != 3 + self.glimpses:
            raise _invalid("a stop unit of a model of %d glimpses has %d weights, not %d"
                           % (self.glimpses, 3 + self.glimpses, count))
        _check(_capi.ram_model_set_stop_unit(self._ptr, ptr, float(cost)))

    def _sampling_policy(self, source, seed):
        # classify_ex takes its RNG from a policy; a fresh one per call makes
        # the result depend on `seed` only.
        if source not in ("sampled", "random"):
            return None
        p = _capi.defaults(_capi.PolicyParams)
        _set_params(p, {"seed": seed}, {}, "policy")
        out = ctypes.c_void_p()
        _check(_capi.ram_policy_create(ctypes.byref(p), self._ptr, ctypes.byref(out)))
        return _Handle(out.value, _capi.ram_policy_free)


# ---- glimpse sensor

class Glimpse(_Closeable):
    """The retina (ram_glimpse): `depth` square patches of patch x patch
    pixels around a location, each `scale` times wider than the previous
    and average-pooled to patch x patch (sensor "hard"), or centred exactly
    on the location and averaged exactly over patch x patch cells (sensor
    "soft", differentiable in the location: backward_location())."""

    _what = "glimpse sensor"

    def __init__(self, patch=8, depth=1, scale=2.0, sensor="hard"):
        if sensor not in SENSORS:
            raise ValueError("sensor must be one of %s, not %r" % (", ".join(SENSORS), sensor))
        p = _capi.defaults(_capi.GlimpseParams)
        _set_params(p, dict(patch=patch, depth=depth, scale=scale), {}, "glimpse")
        out = ctypes.c_void_p()
        if _capi.ram_glimpse_create_sensor is not None:
            _check(_capi.ram_glimpse_create_sensor(ctypes.byref(p), SENSORS[sensor],
                                                   ctypes.byref(out)))
        elif sensor != "hard":
            raise _invalid("sensor %r needs a newer libram than %s (%s)"
                           % (sensor, library_path, library_version))
        else:
            _check(_capi.ram_glimpse_create(ctypes.byref(p), ctypes.byref(out)))
        self._h = _Handle(out.value, _capi.ram_glimpse_free)
        self._lock = threading.Lock()
        self.patch, self.depth, self.scale = p.patch, p.depth, p.scale
        self.sensor = sensor

    def close(self):
        """Free the sensor now.  Idempotent."""
        with self._lock:
            self._h.close()

    def __repr__(self):
        return "<libram.Glimpse patch=%d depth=%d scale=%g%s%s>" % (
            self.patch, self.depth, self.scale,
            "" if self.sensor == "hard" else " sensor=%s" % self.sensor,
            " (closed)" if self.closed else "")

    def size(self, channels=1):
        """Floats one glimpse of a `channels`-channel image takes:
        channels * depth * patch * patch."""
        return int(_capi.ram_glimpse_size(self._ptr, _c_int(channels, "channels")))

    def extract(self, images, locs, shape=None):
        """Cut one glimpse per image.

        images: n x C x H x W floats; `shape` = (n, C, H, W) may be left out
        when images is (or NumPy converts it to) an array of shape
        (n, C, H, W) or (n, H, W).  locs: n (x, y) pairs in [-1, 1] (-1 the
        left or top edge, (0, 0) the centre), flat or nested.
        Returns n glimpses laid out [channel][scale][row][col]: with NumPy an
        array (n, C, depth, patch, patch), without a flat array.array of
        n * size(C) floats.
        """
        n, c, h, w, keep, image_ptr, loc_ptr, u8 = self._inputs(images, locs, shape, True)
        count = max(n, 1)
        out = _new_floats((count, max(c, 1), self.depth, self.patch, self.patch))
        out_ptr = _pointer(out, ctypes.c_float)
        extract = _capi.ram_glimpse_extract_u8 if u8 else _capi.ram_glimpse_extract
        with self._lock:
            _check(extract(self._ptr, image_ptr, n, c, h, w, loc_ptr, out_ptr,
                           len(out) if _np is None else out.size))
        del keep
        return out

    def backward_location(self, images, locs, dout, shape=None):
        """The gradient through a soft sensor (ram_glimpse_backward_location):
        given dout, the gradient of a loss with respect to the glimpses
        extract(images, locs) returns (the same n * size(C) floats, any
        shape), the loss's gradient with respect to each location (x, y).
        images, locs and shape as for extract().  Returns (n, 2) floats
        with NumPy, else a flat array.array of 2n.  A hard sensor raises
        InvalidArgumentError: it is not differentiable in the location."""
        if _capi.ram_glimpse_backward_location is None:
            raise _invalid("%s (%s) has no ram_glimpse_backward_location"
                           % (library_path, library_version))
        n, c, h, w, keep, image_ptr, loc_ptr, _ = self._inputs(images, locs, shape, False)
        if _np is None and not isinstance(dout, (array.array, memoryview)):
            dout = _flatten(dout)
        dout_buf, dout_ptr, dout_size = _floats(dout, "dout")
        keep.append(dout_buf)
        dout_ptr = dout_ptr or _placeholder(keep, ctypes.c_float)
        out = _new_floats((max(n, 1), 2))
        with self._lock:
            _check(_capi.ram_glimpse_backward_location(self._ptr, image_ptr, n, c, h, w, loc_ptr,
                                                       dout_ptr, dout_size,
                                                       _pointer(out, ctypes.c_float)))
        del keep
        return out

    def _inputs(self, images, locs, shape, bytes_ok):
        """(n, c, h, w, keep, image pointer, location pointer, u8) of
        extract()'s arguments, lengths checked."""
        if shape is None:
            ndim = getattr(images, "ndim", None)
            if _np is not None and ndim is None:
                try:
                    ndim = _np.ndim(images)
                except (TypeError, ValueError):
                    ndim = None
            if ndim not in (3, 4):
                raise TypeError("shape=(n, C, H, W) is required unless images is a 3-D or "
                                "4-D array")
            dims = tuple(getattr(images, "shape", None) or _np.shape(images))
            shape = dims if ndim == 4 else (dims[0], 1) + tuple(dims[1:])
        if len(shape) != 4:
            raise TypeError("shape must be (n, C, H, W)")
        n, c, h, w = (_c_int(int(v), "shape") for v in shape)
        image_buf, image_ptr, image_size, u8 = _pixels(images, "images", bytes_ok)
        if _np is None and not isinstance(locs, (array.array, memoryview)):
            locs = _flatten(locs)
        loc_buf, loc_ptr, loc_size = _floats(locs, "locs")
        if min(n, c, h, w) >= 1:
            if image_size != n * c * h * w:
                raise _invalid("shape %s needs %d floats, images has %d"
                               % (tuple(shape), n * c * h * w, image_size))
            if loc_size != 2 * n:
                raise _invalid("%d images need %d location floats, got %d"
                               % (n, 2 * n, loc_size))
        keep = [image_buf, loc_buf]
        # Empty inputs still get valid pointers: libram refuses n < 1 itself.
        image_ptr = image_ptr or _placeholder(keep, ctypes.c_uint8 if u8 else ctypes.c_float)
        loc_ptr = loc_ptr or _placeholder(keep, ctypes.c_float)
        return n, c, h, w, keep, image_ptr, loc_ptr, u8


# ---- training

class Policy(_Closeable):
    """The location policy and its baseline (ram_policy): Gaussian std,
    baseline type and weights, REINFORCE scaling, sampling RNG.

    Policy(model, **params) starts from ram_policy_params_init()'s defaults
    with `params` applied: the fields of ram_policy_params (std, baseline,
    hidden, steps, reward_scale, discount, detach_core, seed, soft_training,
    reward, soft_detach_core); baseline ("linear", "scalar", "none"), soft_training
    ("backprop", "hybrid": how a soft-sensor model's locations are trained)
    and reward ("per-object", "all-correct": what a model of several
    objects is rewarded for) also by name.  Zero std, hidden and steps take
    the model's values; model may be None when all three are given.  The
    policy does not keep the model.  A Trainer borrows it: closing the policy
    closes its trainers first."""

    _what = "policy"

    def __init__(self, model=None, **params):
        if model is not None and not isinstance(model, Model):
            raise TypeError("model must be a libram.Model or None, not %s"
                            % type(model).__name__)
        p = _capi.defaults(_capi.PolicyParams)
        _set_params(p, params, _POLICY_ENUMS, "policy")
        out = ctypes.c_void_p()
        if model is None:
            _check(_capi.ram_policy_create(ctypes.byref(p), None, ctypes.byref(out)))
        else:
            with model._lock:
                _check(_capi.ram_policy_create(ctypes.byref(p), model._ptr, ctypes.byref(out)))
        self._h = _Handle(out.value, _capi.ram_policy_free)
        self._lock = threading.Lock()
        self._trainers = weakref.WeakSet()  # closed before the policy

    def seed(self, seed):
        """Reseed the sampling RNG (ram_policy_seed)."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
            raise TypeError("seed must be an int in [0, 2^64)")
        with self._lock:
            _capi.ram_policy_seed(self._ptr, seed)

    def close(self):
        """Free the policy now; trainers using it are closed first.  Idempotent."""
        for trainer in list(self._trainers):
            trainer.close()
        with self._lock:
            self._h.close()


class TrainStats(typing.NamedTuple):
    """One Trainer.train_batch() report (ram_train_stats); losses are batch means."""
    loss: float          #: objective descended: cross-entropy + baseline_mse + reinforce
    nll: float           #: classification cross-entropy: falls as it learns
    baseline_mse: float  #: mean over steps of (b_t - R_t)^2
    reinforce: float     #: the REINFORCE surrogate loss
    accuracy: float      #: fraction correct with *sampled* locations
    reward: float        #: mean final reward
    baseline: float      #: mean baseline value
    grad_norm: float     #: global gradient norm before clipping
    lr: float            #: learning rate used for this step


class SeqEvaluation(typing.NamedTuple):
    """Trainer.evaluate_seq()'s result, with mean locations."""
    error: float         #: fraction of images with any label wrong
    object_error: float  #: fraction of labels wrong


class Trainer(_Closeable):
    """Optimizer, workspaces and worker threads training `model` with
    `policy` (ram_trainer).

    Trainer(model, policy=None, **params) starts from
    ram_trainer_params_init()'s defaults with `params` applied: the fields
    of ram_trainer_params (optimizer "adam" or "sgd", lr, lr_final,
    decay_steps, momentum, nesterov, beta1, beta2, eps, clip_norm,
    max_batch, threads, weight_decay, average_decay, label_smoothing, and
    products "float" or "bf16": bfloat16 matrix products in training, on
    CPUs with AVX512_BF16 only, bf16_products_supported() tells).
    lr_final follows lr unless given, as ram.h documents.  Without a
    policy the trainer makes a default Policy(model) of its own and closes
    it with itself.

    The C trainer borrows the model and the policy and updates their
    weights in place; the Trainer keeps both alive and is closed before
    either (also by their close()).  Its calls hold the model's lock, so a
    Model shared between threads is never classified with while it trains.

    With threads > 1 the Trainer calls set_blas_threads(1), process-wide:
    OpenBLAS's own threads inside each worker made a 2-thread trainer 5 to
    7 times slower on two cores."""

    _what = "trainer"

    def __init__(self, model, policy=None, **params):
        if not isinstance(model, Model):
            raise TypeError("model must be a libram.Model, not %s" % type(model).__name__)
        if policy is not None and not isinstance(policy, Policy):
            raise TypeError("policy must be a libram.Policy or None, not %s"
                            % type(policy).__name__)
        p = _capi.defaults(_capi.TrainerParams)
        _set_params(p, params, {"optimizer": OPTIMIZERS, "products": PRODUCTS}, "trainer")
        if "lr" in params and "lr_final" not in params:
            p.lr_final = p.lr
        if p.threads > 1:
            set_blas_threads(1)  # the workers are the parallelism (see the docstring)
        own_policy = policy is None
        if own_policy:
            policy = Policy(model)
        out = ctypes.c_void_p()
        try:
            with model._lock, policy._lock:
                _check(_capi.ram_trainer_create(model._ptr, policy._ptr, ctypes.byref(p),
                                                ctypes.byref(out)))
                # The finalizer holds the borrowed objects' handles: they are
                # never freed first.
                self._h = _Handle(out.value, _capi.ram_trainer_free, keep=(model._h, policy._h))
        except BaseException:
            if own_policy:
                policy.close()
            raise
        self._model = model
        self._policy = policy
        self._own_policy = own_policy
        self._lock = threading.Lock()
        self._hook = None  # the ctypes callback, kept alive while installed
        self._hook_error = None
        self.max_batch = p.max_batch
        self.threads = p.threads
        model._trainers.add(self)
        policy._trainers.add(self)

    @property
    def model(self):
        return self._model

    @property
    def policy(self):
        return self._policy

    def close(self):
        """Free the trainer now; the model and a policy passed in stay open.
        Idempotent."""
        with self._lock:
            self._h.close()
        self._model._trainers.discard(self)
        self._policy._trainers.discard(self)
        if self._own_policy:
            self._policy.close()

    def _batch(self, images, labels, objects=1, bytes_ok=True):
        """Buffers and pointers for n images and n x objects labels, lengths
        checked (libram cannot see them)."""
        c, h, w = self._model.image_shape
        pixels = c * h * w
        if objects > 1 and _np is None and not isinstance(labels, (array.array, memoryview)):
            labels = _flatten(labels)  # [[a, b], ...] per image
        label_buf, label_ptr, count = _ints(labels, "labels")
        if objects > 1 and _np is not None:
            shape = _np.shape(labels)
            if len(shape) > 1 and tuple(shape[1:]) != (objects,):
                raise _invalid("labels of shape %s: this model labels %d objects per image, "
                               "(n, %d) expected" % (tuple(shape), objects, objects))
        if count % objects:
            raise _invalid("%d labels are not %d per image" % (count, objects))
        n = count // objects
        image_buf, image_ptr, size, u8 = _pixels(images, "images", bytes_ok)
        if size != n * pixels:
            if objects > 1:
                raise _invalid("%d labels (%d per image) need %d images of %d x %d x %d = %d "
                               "floats, got %d" % (count, objects, n, c, h, w, n * pixels, size))
            raise _invalid("%d labels need %d images of %d x %d x %d = %d floats, got %d"
                           % (n, n, c, h, w, n * pixels, size))
        if n > 2 ** 31 - 1:
            raise _invalid("%d images do not fit a C int" % n)
        keep = [image_buf, label_buf]
        if n == 0:  # valid pointers for libram to refuse n = 0 with its own message
            image_ptr = _placeholder(keep, ctypes.c_uint8 if u8 else ctypes.c_float)
            label_ptr = _placeholder(keep, ctypes.c_int)
        return keep, image_ptr, label_ptr, n, u8

    def _single(self, method):
        objects = self._model.objects
        if objects > 1:
            raise _invalid("this model labels %d objects per image: %s_seq() takes its labels "
                           "as (n, %d)" % (objects, method, objects))

    def _seq_fn(self, name):
        """The C _seq function `name`, or None for a one-object model on a
        library without it (the single-label function is the same then)."""
        fn = getattr(_capi, name)
        if fn is None and self._model.objects > 1:  # cannot happen: such a model needs it
            raise _invalid("%s (%s) has no %s" % (library_path, library_version, name))
        return fn

    def _step(self, step, image_ptr, label_ptr, n):
        stats = _capi.TrainStatsStruct()
        with self._lock, self._model._lock, self._policy._lock:
            self._hook_error = None
            status = step(self._ptr, image_ptr, label_ptr, n, ctypes.byref(stats))
            if status != Status.OK and self._hook_error is not None:
                error, self._hook_error = self._hook_error, None
                raise error  # the gradient hook's own exception
            _check(status)
        return TrainStats(*(float(getattr(stats, f)) for f in TrainStats._fields))

    def train_batch(self, images, labels):
        """One optimisation step on n images (n <= max_batch) with labels in
        [0, classes).  images as for Model.classify(); labels n ints.
        Returns a TrainStats.  A model of several objects takes
        train_batch_seq() (this raises InvalidArgumentError)."""
        self._single("train_batch")
        keep, image_ptr, label_ptr, n, u8 = self._batch(images, labels)
        step = _capi.ram_trainer_train_batch_u8 if u8 else _capi.ram_trainer_train_batch
        stats = self._step(step, image_ptr, label_ptr, n)
        del keep
        return stats

    def train_batch_seq(self, images, labels):
        """One optimisation step on n images of a model of S = objects
        labels per image (ram_trainer_train_batch_seq): labels (n, S) ints
        in [0, classes), row i image i's labels in the order the model
        emits them (or n*S flat, image by image).  The loss is the sum of
        the S cross-entropies; the REINFORCE reward is the policy's
        `reward` mode.  In the TrainStats, nll is the sum of the S mean
        cross-entropies, accuracy the fraction of labels right and reward
        the mean final reward (per-object: the number of right labels).
        With S = 1 it is train_batch()."""
        fn = self._seq_fn("ram_trainer_train_batch_seq")
        keep, image_ptr, label_ptr, n, u8 = self._batch(images, labels, self._model.objects,
                                                        bytes_ok=fn is None)
        if fn is None:
            fn = _capi.ram_trainer_train_batch_u8 if u8 else _capi.ram_trainer_train_batch
        stats = self._step(fn, image_ptr, label_ptr, n)
        del keep
        return stats

    def evaluate(self, images, labels):
        """Error rate (fraction wrong, a float) on any number of images with
        mean locations, max_batch at a time with the trainer's threads.  A
        model of several objects takes evaluate_seq()."""
        self._single("evaluate")
        keep, image_ptr, label_ptr, n, u8 = self._batch(images, labels)
        error = ctypes.c_double()
        evaluate = _capi.ram_trainer_evaluate_u8 if u8 else _capi.ram_trainer_evaluate
        with self._lock, self._model._lock, self._policy._lock:
            _check(evaluate(self._ptr, image_ptr, label_ptr, n, ctypes.byref(error)))
        del keep
        return error.value

    def evaluate_seq(self, images, labels):
        """Errors of a model of S = objects labels per image on any number
        of images with mean locations (ram_trainer_evaluate_seq); labels as
        for train_batch_seq().  Returns SeqEvaluation(error, object_error):
        the fraction of images with any label wrong, and the fraction of
        labels wrong (both evaluate()'s error when S = 1)."""
        fn = self._seq_fn("ram_trainer_evaluate_seq")
        if fn is None:
            error = self.evaluate(images, labels)
            return SeqEvaluation(error, error)
        keep, image_ptr, label_ptr, n, _ = self._batch(images, labels, self._model.objects,
                                                       bytes_ok=False)
        error, object_error = ctypes.c_double(), ctypes.c_double()
        with self._lock, self._model._lock, self._policy._lock:
            _check(fn(self._ptr, image_ptr, label_ptr, n, ctypes.byref(error),
                      ctypes.byref(object_error)))
        del keep
        return SeqEvaluation(error.value, object_error.value)

    @property
    def gradient_size(self):
        """Length of the flat gradient a gradient hook sees."""
        with self._lock:
            return int(_capi.ram_trainer_gradient_size(self._ptr))

    def set_gradient_hook(self, fn):
        """Call fn(grad) once per train_batch(), between the backward pass and
        the optimizer step (ram_trainer_set_gradient_hook): the reduction
        point of data-parallel training.  grad is a writable float32 view of
        the trainer's flat gradient (gradient_size floats: a NumPy array, or
        a memoryview without NumPy), valid only during the call; change it
        in place, e.g. with mpi4py: comm.Allreduce(MPI.IN_PLACE, grad);
        grad /= comm.size.  An exception in fn fails the step, which then
        changes nothing, and train_batch() raises it.  None removes the hook."""
        if fn is None:
            callback = ctypes.cast(None, _capi.GRADIENT_FN)  # NULL: no hook
        else:
            def trampoline(ptr, count, user):
                try:
                    if _np is not None:
                        view = _np.ctypeslib.as_array(ptr, shape=(count,))
                    else:
                        view = memoryview((ctypes.c_float * count).from_address(
                            ctypes.addressof(ptr.contents))).cast("B").cast("f")
                    fn(view)
                    return Status.OK
                except BaseException as e:  # noqa: B902 -- re-raised by train_batch
                    self._hook_error = e
                    return Status.IO
            callback = _capi.GRADIENT_FN(trampoline)
        with self._lock:
            _check(_capi.ram_trainer_set_gradient_hook(self._ptr, callback, None))
            self._hook = callback

    def swap_average(self):
        """Exchange the model's weights with their moving average (a trainer
        made with average_decay > 0): after one call the model holds the
        average, to evaluate, classify with or save; the next call puts the
        trained weights back.  Training and checkpoints raise while the
        average is in."""
        with self._lock, self._model._lock:
            _check(_capi.ram_trainer_swap_average(self._ptr))

    @property
    def average_in(self):
        """True while swap_average() has the average in the model."""
        with self._lock:
            return bool(_capi.ram_trainer_average_in(self._ptr))

    @property
    def steps(self):
        """Number of train_batch() steps taken (restored by load_checkpoint)."""
        with self._lock:
            return int(_capi.ram_trainer_steps(self._ptr))

    def shuffle(self, n):
        """A random permutation of range(n) from the trainer's own RNG, which
        checkpoints save: a reproducible data order.  A NumPy int array, or
        an array.array of ints without NumPy."""
        n = _c_int(n, "n")
        perm = _new_ints(max(n, 1))
        with self._lock:
            _check(_capi.ram_trainer_shuffle(self._ptr, _pointer(perm, ctypes.c_int), n))
        return perm[:n]

    def save_checkpoint(self, path, user=b""):
        """Save model, policy, optimizer state, step count, RNGs, the weights'
        average (average_decay > 0) and `user` (bytes of caller data, e.g.
        the epoch) atomically to `path`.  A checkpoint is also a model file
        for Model.load() (with the trained weights, not the average)."""
        if not isinstance(user, (bytes, bytearray, memoryview)):
            raise TypeError("user must be bytes, not %s" % type(user).__name__)
        data = bytes(user)
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        with self._lock, self._model._lock, self._policy._lock:
            _check(_capi.ram_trainer_save_checkpoint(self._ptr, os.fsencode(path), buf,
                                                     len(data)))

    def load_checkpoint(self, path):
        """Restore a checkpoint saved by a trainer of the same architecture,
        baseline type and optimizer (else MismatchError; nothing changes on
        error).  Training then continues exactly as the uninterrupted run
        would (same thread count).  Returns the user bytes saved with it."""
        path = os.fsencode(path)
        capacity = 4096
        while True:
            buf = ctypes.create_string_buffer(capacity)
            full = ctypes.c_size_t()
            with self._lock, self._model._lock, self._policy._lock:
                _check(_capi.ram_trainer_load_checkpoint(self._ptr, path, buf, capacity,
                                                         ctypes.byref(full)))
            if full.value <= capacity:
                return buf.raw[:full.value]
            # Longer user data: load again (the same file, the same state)
            # into a buffer that fits it all.
            capacity = full.value
