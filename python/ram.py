"""ctypes binding of libram, the Recurrent Attention Model library.

A small, dependency-free wrapper of the public C API (include/ram/ram.h):
create, load, save and run models, cut glimpses with the retina, and train
(Policy, Trainer, checkpoints).  NumPy is
used when it is importable and an input is a NumPy array; everything also
works on plain Python sequences of floats.

    import ram
    model = ram.Model.load("ram-mnist.ram")
    labels, probs, locs = model.classify(pixels, n)   # pixels: n*C*H*W floats

    with ram.Policy(model) as policy, ram.Trainer(model, policy, lr=1e-3) as trainer:
        stats = trainer.train_batch(pixels, labels)    # one step; a dict of ram_train_stats

Which libram is loaded: the file named by the RAM_LIBRARY environment
variable, else the one ctypes.util.find_library("ram") finds (an installed
libram), else build/libram.so.0 next to this directory.  Its major version
must be the binding's (VERSION_MAJOR): the ABI is only stable within one.

Every failing libram call raises RamError(status, message) with the status
name ("invalid argument", "io", ...) and the library's ram_last_error() text.
"""

import array
import ctypes
import ctypes.util
import os
import threading
import weakref

try:  # optional: only used for inputs that already are NumPy arrays
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the machine
    _np = None

__all__ = [
    "RamError", "Model", "Glimpse", "Policy", "Trainer", "GlimpseParams", "ModelParams",
    "PolicyParams", "TrainerParams", "TrainStats", "version", "version_string", "library_path",
    "VERSION_MAJOR",
]

# The binding follows ram.h of this major version; see _check_version().
VERSION_MAJOR = 0

# ram_status values (part of the ABI, never renumbered).
OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_OUT_OF_MEMORY = 2
ERR_IO = 3
ERR_FORMAT = 4
ERR_VERSION = 5
ERR_CORRUPT = 6
ERR_NUMERIC = 7
ERR_MISMATCH = 8
ERR_BUFFER_TOO_SMALL = 9
ERR_THREAD = 10

# Enums of ram.h by name, so Model.create(core="lstm") reads naturally.
GLIMPSE_FORMS = {"additive": 0, "concat": 1}
CORE_TYPES = {"rnn": 0, "lstm": 1}
LOC_BOUNDS = {"hardtanh": 0, "tanh": 1}
LOC_SOURCES = {"mean": 0, "sampled": 1, "random": 2, "center": 3}
BASELINE_TYPES = {"linear": 0, "scalar": 1, "none": 2}
OPTIMIZERS = {"sgd": 0, "adam": 1}


class RamError(Exception):
    """A libram call failed.  `status` is the ram_status number, `name` its
    English name (ram_status_string) and `message` the detail
    (ram_last_error)."""

    def __init__(self, name, message, status=None):
        super().__init__("%s: %s" % (name, message) if message else name)
        self.name = name
        self.message = message
        self.status = status


# ---- params structs: field for field as in ram.h.  C enums are int-sized
# on every ABI libram supports, so they are c_int here.

class GlimpseParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("patch", ctypes.c_int),
        ("depth", ctypes.c_int),
        ("scale", ctypes.c_float),
    ]


class ModelParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("channels", ctypes.c_int),
        ("height", ctypes.c_int),
        ("width", ctypes.c_int),
        ("glimpse", GlimpseParams),
        ("form", ctypes.c_int),
        ("glimpse_hidden", ctypes.c_int),
        ("loc_hidden", ctypes.c_int),
        ("glimpse_out", ctypes.c_int),
        ("core_hidden", ctypes.c_int),
        ("core", ctypes.c_int),
        ("glimpses", ctypes.c_int),
        ("classes", ctypes.c_int),
        ("bound", ctypes.c_int),
        ("loc_std", ctypes.c_float),
        ("loc_range_pixels", ctypes.c_float),
        ("init_scale", ctypes.c_float),
        ("seed", ctypes.c_uint64),
    ]


class PolicyParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("std", ctypes.c_float),
        ("baseline", ctypes.c_int),
        ("hidden", ctypes.c_int),
        ("steps", ctypes.c_int),
        ("reward_scale", ctypes.c_float),
        ("discount", ctypes.c_float),
        ("detach_core", ctypes.c_int),
        ("seed", ctypes.c_uint64),
    ]


class TrainerParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("optimizer", ctypes.c_int),
        ("lr", ctypes.c_float),
        ("lr_final", ctypes.c_float),
        ("decay_steps", ctypes.c_long),
        ("momentum", ctypes.c_float),
        ("nesterov", ctypes.c_int),
        ("beta1", ctypes.c_float),
        ("beta2", ctypes.c_float),
        ("eps", ctypes.c_float),
        ("clip_norm", ctypes.c_float),
        ("max_batch", ctypes.c_int),
        ("threads", ctypes.c_int),
    ]


class TrainStats(ctypes.Structure):
    """ram_train_stats: no struct_size, it is an output only."""
    _fields_ = [
        ("loss", ctypes.c_float),
        ("nll", ctypes.c_float),
        ("baseline_mse", ctypes.c_float),
        ("reinforce", ctypes.c_float),
        ("accuracy", ctypes.c_float),
        ("reward", ctypes.c_float),
        ("baseline", ctypes.c_float),
        ("grad_norm", ctypes.c_float),
        ("lr", ctypes.c_float),
    ]


# ---- loading the library

def _candidates():
    env = os.environ.get("RAM_LIBRARY")
    if env:
        # An explicit choice must not silently fall back to another library.
        return [env], True
    found = []
    name = ctypes.util.find_library("ram")
    if name:
        found.append(name)
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, os.pardir, "build", "libram.so.%d" % VERSION_MAJOR))
    return found, False


def _load():
    paths, explicit = _candidates()
    errors = []
    for path in paths:
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
            if explicit:
                break
    raise ImportError("cannot load libram (set RAM_LIBRARY to libram.so.%d): %s"
                      % (VERSION_MAJOR, "; ".join(errors)))


_lib, library_path = _load()

_P = ctypes.c_void_p
_FP = ctypes.POINTER(ctypes.c_float)
_IP = ctypes.POINTER(ctypes.c_int)
_S = ctypes.c_int  # ram_status


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


ram_version_number = _fn("ram_version_number", ctypes.c_uint)
ram_version_string = _fn("ram_version_string", ctypes.c_char_p)
ram_status_string = _fn("ram_status_string", ctypes.c_char_p, ctypes.c_int)
ram_last_error = _fn("ram_last_error", ctypes.c_char_p)

ram_glimpse_params_init = _fn("ram_glimpse_params_init_sized", None, _P, ctypes.c_size_t)
ram_glimpse_create = _fn("ram_glimpse_create", _S, ctypes.POINTER(GlimpseParams),
                         ctypes.POINTER(_P))
ram_glimpse_free = _fn("ram_glimpse_free", None, _P)
ram_glimpse_size = _fn("ram_glimpse_size", ctypes.c_size_t, _P, ctypes.c_int)
ram_glimpse_extract = _fn("ram_glimpse_extract", _S, _P, _FP, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, _FP, _FP, ctypes.c_size_t)

ram_model_params_init = _fn("ram_model_params_init_sized", None, _P, ctypes.c_size_t)
ram_model_create = _fn("ram_model_create", _S, ctypes.POINTER(ModelParams), ctypes.POINTER(_P))
ram_model_free = _fn("ram_model_free", None, _P)
ram_model_get_params = _fn("ram_model_get_params", _S, _P, ctypes.POINTER(ModelParams))
ram_model_param_count = _fn("ram_model_param_count", ctypes.c_size_t, _P)
ram_state_create = _fn("ram_state_create", _S, _P, ctypes.c_int, ctypes.POINTER(_P))
ram_state_free = _fn("ram_state_free", None, _P)
ram_model_classify = _fn("ram_model_classify", _S, _P, _P, _FP, ctypes.c_int, _IP, _FP, _FP)
ram_model_classify_ex = _fn("ram_model_classify_ex", _S, _P, _P, _FP, ctypes.c_int,
                            ctypes.c_int, _P, _IP, _FP, _FP)
ram_model_save = _fn("ram_model_save", _S, _P, ctypes.c_char_p)
ram_model_load = _fn("ram_model_load", _S, ctypes.c_char_p, ctypes.POINTER(_P))

ram_policy_params_init = _fn("ram_policy_params_init_sized", None, _P, ctypes.c_size_t)
ram_policy_create = _fn("ram_policy_create", _S, ctypes.POINTER(PolicyParams), _P,
                        ctypes.POINTER(_P))
ram_policy_free = _fn("ram_policy_free", None, _P)
ram_policy_seed = _fn("ram_policy_seed", None, _P, ctypes.c_uint64)

ram_trainer_params_init = _fn("ram_trainer_params_init_sized", None, _P, ctypes.c_size_t)
ram_trainer_create = _fn("ram_trainer_create", _S, _P, _P, ctypes.POINTER(TrainerParams),
                         ctypes.POINTER(_P))
ram_trainer_free = _fn("ram_trainer_free", None, _P)
ram_trainer_train_batch = _fn("ram_trainer_train_batch", _S, _P, _FP, _IP, ctypes.c_int,
                              ctypes.POINTER(TrainStats))
ram_trainer_evaluate = _fn("ram_trainer_evaluate", _S, _P, _FP, _IP, ctypes.c_int,
                           ctypes.POINTER(ctypes.c_double))
ram_trainer_steps = _fn("ram_trainer_steps", ctypes.c_long, _P)
ram_trainer_shuffle = _fn("ram_trainer_shuffle", _S, _P, _IP, ctypes.c_int)
ram_trainer_save_checkpoint = _fn("ram_trainer_save_checkpoint", _S, _P, ctypes.c_char_p, _P,
                                  ctypes.c_size_t)
ram_trainer_load_checkpoint = _fn("ram_trainer_load_checkpoint", _S, _P, ctypes.c_char_p, _P,
                                  ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t))


def _defaults(cls, init):
    """A `cls` filled with libram's defaults by ram_*_params_init_sized(),
    which writes at most ctypes.sizeof(cls) bytes and sets struct_size to
    what it filled (less than our size if this libram is older)."""
    p = cls()
    init(ctypes.byref(p), ctypes.sizeof(cls))
    # Fields this binding has but an older libram lacks keep ctypes' zeros;
    # libram reads only as far as struct_size says.
    return p


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def _check(status):
    """Raise RamError for a failed libram call; return None on RAM_OK."""
    if status != OK:
        raise RamError(_text(ram_status_string(status)), _text(ram_last_error()), status)


def _invalid(message):
    """A misuse caught before calling libram (it cannot see Python lengths),
    reported the way libram reports its own invalid arguments."""
    return RamError(_text(ram_status_string(ERR_INVALID_ARGUMENT)), message,
                    ERR_INVALID_ARGUMENT)


def version():
    """(major, minor, patch) of the loaded libram."""
    v = ram_version_number()
    return v // 10000, v // 100 % 100, v % 100


def version_string():
    return _text(ram_version_string())


def _check_version(number):
    if number // 10000 != VERSION_MAJOR:
        raise RamError("version", "this binding is for libram %d.x but %s is %d.%d.%d"
                       % (VERSION_MAJOR, library_path, number // 10000, number // 100 % 100,
                          number % 100), ERR_VERSION)


_check_version(ram_version_number())


# ---- buffers: a float32 view of the caller's data, without copying NumPy
# arrays that already are contiguous float32.

def _is_numpy(x):
    return _np is not None and isinstance(x, _np.ndarray)


def _floats(data, what):
    """Return (keepalive, pointer, count) for float32 data."""
    if _is_numpy(data):
        a = _np.ascontiguousarray(data, dtype=_np.float32)
        return a, a.ctypes.data_as(_FP), int(a.size)
    try:
        a = array.array("f", data)
    except (TypeError, ValueError) as e:
        raise TypeError("%s must be a flat sequence of numbers or a NumPy array (%s)"
                        % (what, e)) from None
    if len(a) == 0:
        return a, None, 0
    return a, ctypes.cast((ctypes.c_float * len(a)).from_buffer(a), _FP), len(a)


def _int_arg(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not -2 ** 31 <= value < 2 ** 31:
        raise _invalid("%s = %d does not fit a C int" % (what, value))
    return value


def _ints(data, what):
    """Return (keepalive, pointer, count) for C int data (labels)."""
    if _is_numpy(data):
        a = _np.asarray(data)
        if a.size and a.dtype.kind not in "iub":
            raise TypeError("%s must hold integers, not %s" % (what, a.dtype))
        if a.size and (int(a.min()) < -2 ** 31 or int(a.max()) >= 2 ** 31):
            raise _invalid("a value of %s does not fit a C int" % what)
        a = _np.ascontiguousarray(a, dtype=_np.intc).ravel()
        return a, a.ctypes.data_as(_IP), int(a.size)
    try:
        a = array.array("i", data)
    except OverflowError:
        raise _invalid("a value of %s does not fit a C int" % what) from None
    except (TypeError, ValueError) as e:
        raise TypeError("%s must be a flat sequence of ints or a NumPy array (%s)"
                        % (what, e)) from None
    if len(a) == 0:
        return a, None, 0
    return a, ctypes.cast((ctypes.c_int * len(a)).from_buffer(a), _IP), len(a)


def _free_keeping(free, ptr, *keep):
    # `keep` (handles of borrowed objects) stays referenced until ptr is freed.
    free(ptr)


class _Handle:
    """Owns one libram object and frees it exactly once, also at exit.
    `keep`: handles of objects the C object borrows; they are not freed
    before it (at exit finalizers run newest first, so they would not be
    anyway)."""

    def __init__(self, ptr, free, keep=()):
        self.ptr = ptr
        self._finalizer = weakref.finalize(self, _free_keeping, free, ptr, *keep)

    def close(self):
        self._finalizer()
        self.ptr = None


# ---- model

_PARAM_NAMES = [f[0] for f in ModelParams._fields_ if f[0] not in ("struct_size", "glimpse")]
_GLIMPSE_NAMES = ("patch", "depth", "scale")
_ENUMS = {"form": GLIMPSE_FORMS, "core": CORE_TYPES, "bound": LOC_BOUNDS}


def _set_field(struct, name, value):
    table = _ENUMS.get(name)
    if table is not None and isinstance(value, str):
        if value not in table:
            raise ValueError("%s must be one of %s, not %r" % (name, ", ".join(table), value))
        value = table[value]
    setattr(struct, name, value)


class Model:
    """A RAM model: architecture and weights.

    Model.create(**overrides) builds a fresh one, Model.load(path) reads a
    file.  classify() uses one workspace per model, guarded by a lock, so a
    Model may be shared between threads (calls then take turns)."""

    def __init__(self, ptr):
        # Use create() or load(); this takes ownership of a ram_model*.
        self._h = _Handle(ptr, ram_model_free)
        self._lock = threading.Lock()
        self._trainers = weakref.WeakSet()  # closed before the model
        self._state = None
        self._state_cap = 0
        p = _defaults(ModelParams, ram_model_params_init)
        _check(ram_model_get_params(self._ptr, ctypes.byref(p)))
        self._params = p

    @classmethod
    def create(cls, **overrides):
        """A model with freshly initialised weights: ram_model_params_init()'s
        defaults (the paper's MNIST model) with `overrides` applied.  Keys are
        the fields of ram_model_params; the retina is given as patch=, depth=,
        scale= or glimpse=dict(...); form, core and bound also take names
        ("concat", "lstm", "hardtanh")."""
        p = _defaults(ModelParams, ram_model_params_init)
        glimpse = dict(overrides.pop("glimpse", None) or {})
        for name in _GLIMPSE_NAMES:
            if name in overrides:
                glimpse[name] = overrides.pop(name)
        for name, value in glimpse.items():
            if name not in _GLIMPSE_NAMES:
                raise TypeError("unknown glimpse parameter %r" % name)
            setattr(p.glimpse, name, value)
        for name, value in overrides.items():
            if name not in _PARAM_NAMES:
                raise TypeError("unknown model parameter %r (known: %s)"
                                % (name, ", ".join(_PARAM_NAMES + list(_GLIMPSE_NAMES))))
            _set_field(p, name, value)
        out = _P()
        _check(ram_model_create(ctypes.byref(p), ctypes.byref(out)))
        return cls(out)

    @classmethod
    def load(cls, path):
        """Load a model (or the model part of a checkpoint) saved by libram."""
        out = _P()
        _check(ram_model_load(os.fsencode(path), ctypes.byref(out)))
        return cls(out)

    def save(self, path):
        """Save atomically (a temporary file renamed over `path`)."""
        _check(ram_model_save(self._ptr, os.fsencode(path)))

    @property
    def _ptr(self):
        if self._h.ptr is None:
            raise ValueError("the model is closed")
        return self._h.ptr

    def close(self):
        """Free the model now rather than when it is garbage-collected.
        Trainers of this model are closed first."""
        for trainer in list(self._trainers):
            trainer.close()
        with self._lock:
            if self._state is not None:
                self._state.close()
                self._state = None
            self._h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def param_count(self):
        """Number of trainable float parameters (baseline excluded)."""
        return int(ram_model_param_count(self._ptr))

    @property
    def params(self):
        """The architecture as a dict (ram_model_get_params); enums by name.
        Model.create(**model.params) makes a model of the same architecture."""
        p = self._params
        d = {name: getattr(p, name) for name in _PARAM_NAMES}
        for name, table in _ENUMS.items():  # names, so Model.create(**params) round-trips
            d[name] = next((k for k, v in table.items() if v == d[name]), d[name])
        d["glimpse"] = {name: getattr(p.glimpse, name) for name in _GLIMPSE_NAMES}
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

    def _workspace(self, n):
        # Grown on demand and kept: ram_model_classify allocates nothing, so
        # repeated calls stay allocation-free on the C side too.
        if self._state is None or self._state_cap < n:
            if self._state is not None:
                self._state.close()
                self._state = None
            out = _P()
            _check(ram_state_create(self._ptr, n, ctypes.byref(out)))
            self._state = _Handle(out, ram_state_free)
            self._state_cap = n
        return self._state.ptr

    def classify(self, images, n=None, source="mean", seed=1):
        """Classify n images of the model's shape (C x H x W each, row-major).

        images: a flat sequence of n*C*H*W floats, or a NumPy array of that
        many elements (any shape, e.g. (n, C, H, W)); n defaults to the count
        the length implies and must match it exactly.
        source: "mean" (deterministic, the default), "sampled", "random" or
        "center"; seed: RNG seed for sampled and random locations.

        Returns (labels, probs, locs): n ints; n x classes probabilities;
        n x glimpses x 2 locations (x, y) in [-1, 1].  NumPy arrays if
        `images` is one, else nested lists.
        """
        if source not in LOC_SOURCES:
            raise ValueError("source must be one of %s, not %r" % (", ".join(LOC_SOURCES),
                                                                    source))
        c, h, w = self.image_shape
        pixels = c * h * w
        keep, ptr, size = _floats(images, "images")
        if n is None:
            if size == 0 or size % pixels:
                raise _invalid("%d floats are not a whole number of %d x %d x %d images"
                               % (size, c, h, w))
            n = size // pixels
        n = _int_arg(n, "n")
        if n >= 1 and size != n * pixels:
            raise _invalid("n = %d images of %d x %d x %d need %d floats, got %d"
                           % (n, c, h, w, n * pixels, size))
        k, steps = self.classes, self.glimpses
        count = max(n, 1)  # n < 1 goes to libram, which rejects it with its own message
        numpy_out = _is_numpy(images)
        if numpy_out:
            labels = _np.empty(count, dtype=_np.intc)
            probs = _np.empty((count, k), dtype=_np.float32)
            locs = _np.empty((count, steps, 2), dtype=_np.float32)
            lp, pp, xp = (labels.ctypes.data_as(_IP), probs.ctypes.data_as(_FP),
                          locs.ctypes.data_as(_FP))
        else:
            labels = (ctypes.c_int * count)()
            probs = (ctypes.c_float * (count * k))()
            locs = (ctypes.c_float * (count * steps * 2))()
            lp, pp, xp = (ctypes.cast(labels, _IP), ctypes.cast(probs, _FP),
                          ctypes.cast(locs, _FP))
        if ptr is None:  # an empty input: give libram a valid pointer to refuse
            ptr = pp
        with self._lock:
            st = self._workspace(count)
            if source == "mean":
                _check(ram_model_classify(self._ptr, st, ptr, n, lp, pp, xp))
            else:
                pol = self._policy(source, seed)
                try:
                    _check(ram_model_classify_ex(self._ptr, st, ptr, n, LOC_SOURCES[source],
                                                 pol.ptr if pol else None, lp, pp, xp))
                finally:
                    if pol:
                        pol.close()
        del keep
        if numpy_out:
            return labels, probs, locs
        return (list(labels),
                [list(probs[i * k:(i + 1) * k]) for i in range(n)],
                [[(locs[(i * steps + t) * 2], locs[(i * steps + t) * 2 + 1])
                  for t in range(steps)] for i in range(n)])

    def _policy(self, source, seed):
        if source not in ("sampled", "random"):
            return None
        pp = _defaults(PolicyParams, ram_policy_params_init)
        pp.seed = seed
        out = _P()
        _check(ram_policy_create(ctypes.byref(pp), self._ptr, ctypes.byref(out)))
        return _Handle(out, ram_policy_free)


# ---- glimpse sensor

class Glimpse:
    """The retina: `depth` square patches of patch x patch pixels, each
    `scale` times wider than the previous, around a location."""

    def __init__(self, patch=8, depth=1, scale=2.0):
        p = _defaults(GlimpseParams, ram_glimpse_params_init)
        p.patch, p.depth, p.scale = patch, depth, scale
        out = _P()
        _check(ram_glimpse_create(ctypes.byref(p), ctypes.byref(out)))
        self._h = _Handle(out, ram_glimpse_free)
        self.patch, self.depth, self.scale = p.patch, p.depth, p.scale

    def close(self):
        self._h.close()

    def size(self, channels=1):
        """Floats one glimpse of a `channels`-channel image takes."""
        if self._h.ptr is None:
            raise ValueError("the glimpse sensor is closed")
        return int(ram_glimpse_size(self._h.ptr, _int_arg(channels, "channels")))

    def extract(self, images, locs, shape=None):
        """Cut one glimpse per image.

        images: n x C x H x W floats, flat (then shape=(n, C, H, W) is
        required) or a NumPy array of shape (n, C, H, W) or (n, H, W).
        locs: n (x, y) pairs in image coordinates [-1, 1], flat or nested.
        Returns n glimpses of size(C) floats each, laid out
        [channel][scale][row][col]: a NumPy array (n, C, depth, patch, patch)
        if images is one, else a list of n flat lists.
        """
        if shape is None:
            if not _is_numpy(images) or images.ndim not in (3, 4):
                raise TypeError("shape=(n, C, H, W) is required unless images is a 3-D or "
                                "4-D NumPy array")
            shape = images.shape if images.ndim == 4 else (images.shape[0], 1) + images.shape[1:]
        if len(shape) != 4:
            raise TypeError("shape must be (n, C, H, W)")
        n, c, h, w = (_int_arg(int(v), "shape") for v in shape)
        keep_i, ip, isize = _floats(images, "images")
        if not _is_numpy(locs):
            flat = []
            for item in locs:
                if isinstance(item, (tuple, list)):
                    flat.extend(item)
                else:
                    flat.append(item)
            locs = flat
        keep_l, lp, lsize = _floats(locs, "locs")
        if min(n, c, h, w) >= 1:
            if isize != n * c * h * w:
                raise _invalid("shape %s needs %d floats, images has %d"
                               % (tuple(shape), n * c * h * w, isize))
            if lsize != 2 * n:
                raise _invalid("%d images need %d location floats, got %d" % (n, 2 * n, lsize))
        gsize = self.size(max(c, 1))
        total = max(n, 1) * gsize
        numpy_out = _is_numpy(images)
        if numpy_out:
            out = _np.empty((max(n, 1), c, self.depth, self.patch, self.patch),
                            dtype=_np.float32)
            op = out.ctypes.data_as(_FP)
        else:
            out = (ctypes.c_float * total)()
            op = ctypes.cast(out, _FP)
        # Empty inputs still get valid pointers; libram rejects n < 1 itself.
        _check(ram_glimpse_extract(self._h.ptr, ip or op, n, c, h, w, lp or op, op, total))
        del keep_i, keep_l
        if numpy_out:
            return out
        return [list(out[i * gsize:(i + 1) * gsize]) for i in range(n)]


# ---- training

_POLICY_NAMES = [f[0] for f in PolicyParams._fields_ if f[0] != "struct_size"]
_TRAINER_NAMES = [f[0] for f in TrainerParams._fields_ if f[0] != "struct_size"]
_INT_RANGES = {
    ctypes.c_int: (-2 ** 31, 2 ** 31),
    ctypes.c_long: (-2 ** (8 * ctypes.sizeof(ctypes.c_long) - 1),
                    2 ** (8 * ctypes.sizeof(ctypes.c_long) - 1)),
    ctypes.c_uint64: (0, 2 ** 64),
}


def _params(cls, init, overrides, enums, what):
    """A `cls` with libram's defaults and `overrides` (field names of the C
    struct; enums by name or number) applied.  Integers are range-checked,
    since ctypes would silently wrap them."""
    p = _defaults(cls, init)
    types = dict(cls._fields_)
    for name, value in overrides.items():
        if name not in types or name == "struct_size":
            raise TypeError("unknown %s parameter %r (known: %s)"
                            % (what, name, ", ".join(n for n, _ in cls._fields_[1:])))
        table = enums.get(name)
        if table is not None and isinstance(value, str):
            if value not in table:
                raise ValueError("%s must be one of %s, not %r" % (name, ", ".join(table), value))
            value = table[value]
        if isinstance(value, bool):
            value = int(value)  # detach_core=True, nesterov=False
        limits = _INT_RANGES.get(types[name])
        if limits is not None:
            if not isinstance(value, int):
                raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
            if not limits[0] <= value < limits[1]:
                raise _invalid("%s = %d does not fit its C type" % (name, value))
        setattr(p, name, value)
    return p


class Policy:
    """The location policy and its baseline (ram_policy): Gaussian std,
    baseline type and weights, REINFORCE scaling, sampling RNG.

    Policy(model, **overrides) starts from ram_policy_params_init()'s defaults
    with `overrides` applied: the fields of ram_policy_params (std, baseline,
    hidden, steps, reward_scale, discount, detach_core, seed); baseline also
    by name ("linear", "scalar", "none").  Zero std, hidden and steps take the
    model's values; model may be None when all three are given.  The policy
    does not keep the model.  A Trainer borrows it: closing the policy closes
    its trainers first."""

    def __init__(self, model=None, **overrides):
        if model is not None and not isinstance(model, Model):
            raise TypeError("model must be a ram.Model or None, not %s" % type(model).__name__)
        p = _params(PolicyParams, ram_policy_params_init, overrides,
                    {"baseline": BASELINE_TYPES}, "policy")
        out = _P()
        if model is None:
            _check(ram_policy_create(ctypes.byref(p), None, ctypes.byref(out)))
        else:
            with model._lock:
                _check(ram_policy_create(ctypes.byref(p), model._ptr, ctypes.byref(out)))
        self._h = _Handle(out, ram_policy_free)
        self._lock = threading.Lock()
        self._trainers = weakref.WeakSet()  # closed before the policy

    @property
    def _ptr(self):
        if self._h.ptr is None:
            raise ValueError("the policy is closed")
        return self._h.ptr

    def seed(self, seed):
        """Reseed the sampling RNG (ram_policy_seed)."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
            raise TypeError("seed must be an int in [0, 2^64)")
        with self._lock:
            ram_policy_seed(self._ptr, seed)

    def close(self):
        """Free the policy now; trainers using it are closed first."""
        for trainer in list(self._trainers):
            trainer.close()
        with self._lock:
            self._h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Trainer:
    """Optimizer, workspaces and worker threads training `model` with
    `policy` (ram_trainer).

    Trainer(model, policy, **overrides) starts from
    ram_trainer_params_init()'s defaults with `overrides` applied: the fields
    of ram_trainer_params (optimizer "adam" or "sgd", lr, lr_final,
    decay_steps, momentum, nesterov, beta1, beta2, eps, clip_norm, max_batch,
    threads).  lr_final defaults to lr, as ram.h documents, also when only lr
    is given.

    The C trainer borrows the model and the policy and updates their weights
    in place; the Trainer keeps both alive and is closed before either (also
    by their close()).  Its calls hold the model's lock, so a Model shared
    between threads is never classified with while it is being trained."""

    def __init__(self, model, policy, **overrides):
        if not isinstance(model, Model):
            raise TypeError("model must be a ram.Model, not %s" % type(model).__name__)
        if not isinstance(policy, Policy):
            raise TypeError("policy must be a ram.Policy, not %s" % type(policy).__name__)
        p = _params(TrainerParams, ram_trainer_params_init, overrides,
                    {"optimizer": OPTIMIZERS}, "trainer")
        if "lr" in overrides and "lr_final" not in overrides:
            p.lr_final = p.lr
        out = _P()
        with model._lock, policy._lock:
            _check(ram_trainer_create(model._ptr, policy._ptr, ctypes.byref(p),
                                      ctypes.byref(out)))
            # The finalizer holds the borrowed objects' handles: never freed first.
            self._h = _Handle(out, ram_trainer_free, keep=(model._h, policy._h))
        self._model = model
        self._policy = policy
        self._lock = threading.Lock()
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

    @property
    def _ptr(self):
        if self._h.ptr is None:
            raise ValueError("the trainer is closed")
        return self._h.ptr

    def close(self):
        """Free the trainer now (the model and policy stay open)."""
        with self._lock:
            self._h.close()
        self._model._trainers.discard(self)
        self._policy._trainers.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _batch(self, images, labels):
        """Pointers to n images and n labels, lengths checked (libram cannot
        see them).  n = 0 goes to libram, which refuses it."""
        c, h, w = self._model.image_shape
        pixels = c * h * w
        keep_l, lp, n = _ints(labels, "labels")
        keep_i, ip, size = _floats(images, "images")
        if size != n * pixels:
            raise _invalid("%d labels need %d images of %d x %d x %d = %d floats, got %d"
                           % (n, n, c, h, w, n * pixels, size))
        if n > 2 ** 31 - 1:
            raise _invalid("%d images do not fit a C int" % n)
        if n == 0:  # valid pointers for libram to refuse n = 0 with its own message
            keep_i, keep_l = ctypes.c_float(), ctypes.c_int()
            ip, lp = ctypes.pointer(keep_i), ctypes.pointer(keep_l)
        return (keep_i, keep_l), ip, lp, n

    def train_batch(self, images, labels):
        """One optimisation step on n images (n <= max_batch) with labels in
        [0, classes): images as for Model.classify (n*C*H*W floats, list or
        NumPy), labels n ints.  Returns the ram_train_stats fields as a dict
        (loss, nll, baseline_mse, reinforce, accuracy, reward, baseline,
        grad_norm, lr)."""
        keep, ip, lp, n = self._batch(images, labels)
        st = TrainStats()
        with self._lock, self._model._lock, self._policy._lock:
            _check(ram_trainer_train_batch(self._ptr, ip, lp, n, ctypes.byref(st)))
        del keep
        return {name: float(getattr(st, name)) for name, _ in TrainStats._fields_}

    def evaluate(self, images, labels):
        """Error rate (fraction wrong, a float) on n images with mean
        locations, max_batch at a time with the trainer's threads."""
        keep, ip, lp, n = self._batch(images, labels)
        err = ctypes.c_double()
        with self._lock, self._model._lock, self._policy._lock:
            _check(ram_trainer_evaluate(self._ptr, ip, lp, n, ctypes.byref(err)))
        del keep
        return err.value

    @property
    def steps(self):
        """Number of train_batch() steps taken (restored by load_checkpoint)."""
        with self._lock:
            return int(ram_trainer_steps(self._ptr))

    def shuffle(self, n):
        """A random permutation of range(n) (a list) from the trainer's own
        RNG, which checkpoints save: reproducible data order."""
        n = _int_arg(n, "n")
        buf = (ctypes.c_int * max(n, 1))()
        with self._lock:
            _check(ram_trainer_shuffle(self._ptr, buf, n))
        return list(buf[:n]) if n > 0 else []

    def save_checkpoint(self, path, user=b""):
        """Save model, policy, optimizer state, step count, RNGs and `user`
        (bytes of caller data, e.g. the epoch) atomically to `path`.  A
        checkpoint is also a model file for Model.load()."""
        if not isinstance(user, (bytes, bytearray, memoryview)):
            raise TypeError("user must be bytes, not %s" % type(user).__name__)
        data = bytes(user)
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        with self._lock, self._model._lock, self._policy._lock:
            _check(ram_trainer_save_checkpoint(self._ptr, os.fsencode(path), buf, len(data)))

    def load_checkpoint(self, path):
        """Restore a checkpoint saved by a trainer of the same architecture,
        baseline type and optimizer (else RamError ERR_MISMATCH; nothing is
        changed on error).  Training then continues exactly as the
        uninterrupted run would (same thread count).  Returns the user bytes
        stored with it."""
        path = os.fsencode(path)
        cap = 4096
        while True:
            buf = ctypes.create_string_buffer(cap)
            full = ctypes.c_size_t()
            with self._lock, self._model._lock, self._policy._lock:
                _check(ram_trainer_load_checkpoint(self._ptr, path, buf, cap,
                                                   ctypes.byref(full)))
            if full.value <= cap:
                return buf.raw[:full.value]
            # Longer user data: load again (the same file, the same state)
            # into a buffer that fits it all.
            cap = full.value
