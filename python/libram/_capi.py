"""ctypes declarations of libram's C API (include/ram/ram.h) and the loading
of libram.so.0.  Internal: the public classes are in libram/__init__.py.

Which library is loaded, in order:
  1. the file named by $LIBRAM_LIBRARY (if set, nothing else is tried, so an
     explicit choice never silently falls back to another libram);
  2. libram.so.0 in this package's directory (a copy shipped with it);
  3. the system's: libram.so.0 through the dynamic linker's search
     (LD_LIBRARY_PATH, ld.so.cache, /usr/lib ...), then whatever
     ctypes.util.find_library("ram") finds.
The library's version is checked before anything else is declared: the ABI
is only stable within one major version, and an older minor version may
lack functions declared here.
"""

import ctypes
import ctypes.util
import os

LIBRARY_ENV = "LIBRAM_LIBRARY"
SONAME = "libram.so.0"

# This binding follows ram.h of libram 0.2: any 0.x from 0.2.0 on has every
# function and struct field declared here (params structs only grow at their
# end, and struct_size tells the library how much of them we know).
SUPPORTED_MAJOR = 0
MIN_VERSION = (0, 2, 0)


def _candidates():
    """Yield (path, explicit) in search order; find_library() spawns
    processes, so it only runs when the cheaper candidates failed."""
    explicit = os.environ.get(LIBRARY_ENV)
    if explicit:
        yield explicit, True
        return
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    if os.path.exists(bundled):
        yield bundled, False
    yield SONAME, False
    found = ctypes.util.find_library("ram")
    if found and found != SONAME:
        yield found, False


def _open():
    tried = []
    for path, explicit in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(str(e))
            if explicit:
                raise ImportError("cannot load libram from %s=%s: %s"
                                  % (LIBRARY_ENV, path, e)) from None
    raise ImportError("cannot find libram (%s): install it (cmake --install, then ldconfig) or "
                      "set %s to the path of %s" % ("; ".join(tried), LIBRARY_ENV, SONAME))


def version_tuple(number):
    """(major, minor, patch) from ram_version_number()'s MAJOR*10000 +
    MINOR*100 + PATCH."""
    return number // 10000, number // 100 % 100, number % 100


def check_version(number, path):
    """Raise ImportError unless `number` is a libram version this binding
    supports; return its (major, minor, patch)."""
    version = version_tuple(number)
    if version[0] != SUPPORTED_MAJOR or version < MIN_VERSION:
        raise ImportError("%s is libram %d.%d.%d; this binding supports %d.x from %d.%d.%d on"
                          % ((path,) + version + (SUPPORTED_MAJOR,) + MIN_VERSION))
    return version


lib, library_path = _open()


def _fn(name, restype, *argtypes):
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise ImportError("%s does not export %s: not libram %d.x"
                          % (library_path, name, SUPPORTED_MAJOR)) from None
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


ram_version_number = _fn("ram_version_number", ctypes.c_uint)
ram_version_string = _fn("ram_version_string", ctypes.c_char_p)
library_version_info = check_version(ram_version_number(), library_path)


# ---- params structs, field for field as in ram.h.  C enums are int-sized on
# every ABI libram supports, so they are c_int here.

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
        # Appended in 0.2 (ABI: params structs grow at their end).
        ("sensor", ctypes.c_int),
        ("core_layers", ctypes.c_int),
        ("upper_core", ctypes.c_int),
        ("context", ctypes.c_int),
        ("objects", ctypes.c_int),
        ("emit_every", ctypes.c_int),
        ("cell_samples", ctypes.c_int),
        ("contrast", ctypes.c_int),
        ("zoom_min", ctypes.c_float),
        ("zoom_max", ctypes.c_float),
        ("conv_channels", ctypes.c_int),
        ("conv_kernel", ctypes.c_int),
        ("conv_stride", ctypes.c_int),
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
        # Appended in 0.2.
        ("soft_training", ctypes.c_int),
        ("reward", ctypes.c_int),
        ("soft_detach_core", ctypes.c_int),
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
        ("weight_decay", ctypes.c_float),
        ("average_decay", ctypes.c_float),
        ("label_smoothing", ctypes.c_float),
        ("products", ctypes.c_int),
    ]


class TrainStatsStruct(ctypes.Structure):
    """ram_train_stats: output only, so it has no struct_size."""
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


# ---- functions

VOIDP = ctypes.c_void_p
FLOATP = ctypes.POINTER(ctypes.c_float)
INTP = ctypes.POINTER(ctypes.c_int)
_STATUS = ctypes.c_int
_OUT = ctypes.POINTER(VOIDP)  # ram_X **out
_SIZE = ctypes.c_size_t
_INT = ctypes.c_int

ram_status_string = _fn("ram_status_string", ctypes.c_char_p, _INT)
ram_last_error = _fn("ram_last_error", ctypes.c_char_p)
ram_set_blas_threads = _fn("ram_set_blas_threads", None, _INT)

ram_glimpse_params_init_sized = _fn("ram_glimpse_params_init_sized", None, VOIDP, _SIZE)
ram_glimpse_create = _fn("ram_glimpse_create", _STATUS, ctypes.POINTER(GlimpseParams), _OUT)
ram_glimpse_free = _fn("ram_glimpse_free", None, VOIDP)
ram_glimpse_size = _fn("ram_glimpse_size", _SIZE, VOIDP, _INT)
ram_glimpse_extract = _fn("ram_glimpse_extract", _STATUS, VOIDP, FLOATP, _INT, _INT, _INT, _INT,
                          FLOATP, FLOATP, _SIZE)

ram_model_params_init_sized = _fn("ram_model_params_init_sized", None, VOIDP, _SIZE)
ram_model_create = _fn("ram_model_create", _STATUS, ctypes.POINTER(ModelParams), _OUT)
ram_model_free = _fn("ram_model_free", None, VOIDP)
ram_model_get_params = _fn("ram_model_get_params", _STATUS, VOIDP, ctypes.POINTER(ModelParams))
ram_model_param_count = _fn("ram_model_param_count", _SIZE, VOIDP)
ram_model_with_glimpses = _fn("ram_model_with_glimpses", _STATUS, VOIDP, _INT, _INT, _OUT)
ram_state_create = _fn("ram_state_create", _STATUS, VOIDP, _INT, _OUT)
ram_state_create_threads = _fn("ram_state_create_threads", _STATUS, VOIDP, _INT, _INT, _OUT)
ram_state_free = _fn("ram_state_free", None, VOIDP)
ram_state_set_precision = _fn("ram_state_set_precision", _STATUS, VOIDP, _INT)
ram_model_classify = _fn("ram_model_classify", _STATUS, VOIDP, VOIDP, FLOATP, _INT, INTP, FLOATP,
                         FLOATP)
ram_model_classify_ex = _fn("ram_model_classify_ex", _STATUS, VOIDP, VOIDP, FLOATP, _INT, _INT,
                            VOIDP, INTP, FLOATP, FLOATP)
ram_model_set_class_names = _fn("ram_model_set_class_names", _STATUS, VOIDP,
                                ctypes.POINTER(ctypes.c_char_p), _INT)
ram_model_class_name = _fn("ram_model_class_name", ctypes.c_char_p, VOIDP, _INT)
ram_model_set_fit = _fn("ram_model_set_fit", _STATUS, VOIDP, _INT)
ram_model_fit = _fn("ram_model_fit", _INT, VOIDP)
ram_image_fit = _fn("ram_image_fit", _STATUS, VOIDP, FLOATP, _INT, _INT, _INT, FLOATP, _SIZE)
ram_model_save = _fn("ram_model_save", _STATUS, VOIDP, ctypes.c_char_p)
ram_model_load = _fn("ram_model_load", _STATUS, ctypes.c_char_p, _OUT)
ram_model_load_memory = _fn("ram_model_load_memory", _STATUS, ctypes.c_char_p, _SIZE, _OUT)

ram_policy_params_init_sized = _fn("ram_policy_params_init_sized", None, VOIDP, _SIZE)
ram_policy_create = _fn("ram_policy_create", _STATUS, ctypes.POINTER(PolicyParams), VOIDP, _OUT)
ram_policy_free = _fn("ram_policy_free", None, VOIDP)
ram_policy_seed = _fn("ram_policy_seed", None, VOIDP, ctypes.c_uint64)

ram_trainer_params_init_sized = _fn("ram_trainer_params_init_sized", None, VOIDP, _SIZE)
ram_trainer_create = _fn("ram_trainer_create", _STATUS, VOIDP, VOIDP,
                         ctypes.POINTER(TrainerParams), _OUT)
ram_trainer_free = _fn("ram_trainer_free", None, VOIDP)
ram_trainer_train_batch = _fn("ram_trainer_train_batch", _STATUS, VOIDP, FLOATP, INTP, _INT,
                              ctypes.POINTER(TrainStatsStruct))
ram_trainer_evaluate = _fn("ram_trainer_evaluate", _STATUS, VOIDP, FLOATP, INTP, _INT,
                           ctypes.POINTER(ctypes.c_double))
ram_trainer_steps = _fn("ram_trainer_steps", ctypes.c_long, VOIDP)

# The 8-bit forms (libram 0.2): a byte b stands for the pixel (float)b / 255.
# None where the library predates them; the module then converts bytes to
# those floats itself.
U8P = ctypes.POINTER(ctypes.c_uint8)


def _optional_fn(name, restype, *argtypes):
    if not hasattr(lib, name):
        return None
    return _fn(name, restype, *argtypes)


ram_model_classify_u8 = _optional_fn("ram_model_classify_u8", _STATUS, VOIDP, VOIDP, U8P, _INT,
                                     INTP, FLOATP, FLOATP)
ram_model_classify_ex_u8 = _optional_fn("ram_model_classify_ex_u8", _STATUS, VOIDP, VOIDP, U8P,
                                        _INT, _INT, VOIDP, INTP, FLOATP, FLOATP)
ram_trainer_train_batch_u8 = _optional_fn("ram_trainer_train_batch_u8", _STATUS, VOIDP, U8P, INTP,
                                          _INT, ctypes.POINTER(TrainStatsStruct))
ram_trainer_evaluate_u8 = _optional_fn("ram_trainer_evaluate_u8", _STATUS, VOIDP, U8P, INTP, _INT,
                                       ctypes.POINTER(ctypes.c_double))
ram_glimpse_extract_u8 = _optional_fn("ram_glimpse_extract_u8", _STATUS, VOIDP, U8P, _INT, _INT,
                                      _INT, _INT, FLOATP, FLOATP, _SIZE)
# Models of several objects (DRAM) and the soft sensor (libram 0.2).  None
# where the library predates them; the module then says so when they are
# needed.  There are no byte (_u8) forms of the _seq functions: the module
# hands them the floats b / 255, which give the same bits.
DOUBLEP = ctypes.POINTER(ctypes.c_double)
ram_model_classify_seq = _optional_fn("ram_model_classify_seq", _STATUS, VOIDP, VOIDP, FLOATP,
                                      _INT, _INT, VOIDP, INTP, FLOATP, FLOATP)
ram_trainer_train_batch_seq = _optional_fn("ram_trainer_train_batch_seq", _STATUS, VOIDP, FLOATP,
                                           INTP, _INT, ctypes.POINTER(TrainStatsStruct))
ram_trainer_evaluate_seq = _optional_fn("ram_trainer_evaluate_seq", _STATUS, VOIDP, FLOATP, INTP,
                                        _INT, DOUBLEP, DOUBLEP)
ram_glimpse_create_sensor = _optional_fn("ram_glimpse_create_sensor", _STATUS,
                                         ctypes.POINTER(GlimpseParams), _INT, _OUT)
ram_glimpse_sensor = _optional_fn("ram_glimpse_sensor", _INT, VOIDP)
ram_model_with_sensor = _optional_fn("ram_model_with_sensor", _STATUS, VOIDP, _INT, _OUT)
ram_glimpse_backward_location = _optional_fn("ram_glimpse_backward_location", _STATUS, VOIDP,
                                             FLOATP, _INT, _INT, _INT, _INT, FLOATP, FLOATP,
                                             _SIZE, FLOATP)

ram_trainer_swap_average = _fn("ram_trainer_swap_average", _STATUS, VOIDP)
ram_trainer_average_in = _fn("ram_trainer_average_in", _INT, VOIDP)
GRADIENT_FN = ctypes.CFUNCTYPE(_STATUS, FLOATP, _SIZE, VOIDP)  # ram_gradient_fn
ram_trainer_set_gradient_hook = _fn("ram_trainer_set_gradient_hook", _STATUS, VOIDP, GRADIENT_FN,
                                    VOIDP)
ram_trainer_gradient_size = _fn("ram_trainer_gradient_size", _SIZE, VOIDP)
ram_trainer_shuffle = _fn("ram_trainer_shuffle", _STATUS, VOIDP, INTP, _INT)
ram_trainer_save_checkpoint = _fn("ram_trainer_save_checkpoint", _STATUS, VOIDP, ctypes.c_char_p,
                                  VOIDP, _SIZE)
ram_trainer_load_checkpoint = _fn("ram_trainer_load_checkpoint", _STATUS, VOIDP, ctypes.c_char_p,
                                  VOIDP, _SIZE, ctypes.POINTER(_SIZE))

_INITS = {
    GlimpseParams: ram_glimpse_params_init_sized,
    ModelParams: ram_model_params_init_sized,
    PolicyParams: ram_policy_params_init_sized,
    TrainerParams: ram_trainer_params_init_sized,
}


# ram.h's defaults of the fields appended to the params structs, for a
# library older than them (which neither fills nor reads them): what it
# does in their place.  Fields not listed default to 0.
LATE_DEFAULTS = {
    ModelParams: {"core_layers": 1, "objects": 1},
}


def known(struct, name):
    """True if the library that filled `struct` (struct_size) knows field
    `name`, i.e. reads it."""
    field = getattr(type(struct), name)
    return field.offset + field.size <= struct.struct_size


def defaults(cls):
    """A `cls` filled with libram's defaults by ram_X_params_init_sized(),
    which writes at most ctypes.sizeof(cls) bytes and sets struct_size to
    what it filled.  Fields an older library does not know get ram.h's
    defaults here (LATE_DEFAULTS); the library reads only as far as
    struct_size says."""
    p = cls()
    _INITS[cls](ctypes.byref(p), ctypes.sizeof(cls))
    for name, value in LATE_DEFAULTS.get(cls, {}).items():
        if not known(p, name):
            setattr(p, name, value)
    return p
# Stopping when sure (libram 0.2): None where the library predates it.
ram_model_classify_stop = _optional_fn("ram_model_classify_stop", _STATUS, VOIDP, VOIDP, FLOATP,
                                       _INT, ctypes.c_float, INTP, FLOATP, INTP)
ram_model_classify_stop_u8 = _optional_fn("ram_model_classify_stop_u8", _STATUS, VOIDP, VOIDP,
                                          U8P, _INT, ctypes.c_float, INTP, FLOATP, INTP)
# The learned stop unit (libram 0.2): None where the library predates it.
class StopParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("cost", ctypes.c_float),
        ("epochs", ctypes.c_int),
        ("batch", ctypes.c_int),
        ("lr", ctypes.c_float),
        ("seed", ctypes.c_uint64),
    ]


ram_stop_params_init_sized = _optional_fn("ram_stop_params_init_sized", None,
                                          ctypes.POINTER(StopParams), ctypes.c_size_t)
ram_model_step_probs = _optional_fn("ram_model_step_probs", _STATUS, VOIDP, VOIDP, FLOATP, _INT,
                                    FLOATP)
ram_model_fit_stop = _optional_fn("ram_model_fit_stop", _STATUS, VOIDP, FLOATP, INTP, _INT,
                                  ctypes.POINTER(StopParams))
ram_model_stop_unit = _optional_fn("ram_model_stop_unit", _STATUS, VOIDP, FLOATP, FLOATP)
ram_model_set_stop_unit = _optional_fn("ram_model_set_stop_unit", _STATUS, VOIDP, FLOATP,
                                       ctypes.c_float)
ram_model_classify_stop_unit = _optional_fn("ram_model_classify_stop_unit", _STATUS, VOIDP,
                                            VOIDP, FLOATP, _INT, INTP, FLOATP, INTP)
ram_model_classify_stop_unit_u8 = _optional_fn("ram_model_classify_stop_unit_u8", _STATUS,
                                               VOIDP, VOIDP, U8P, _INT, INTP, FLOATP, INTP)
# Zoom as an action (libram 0.2): None where the library predates it.
ram_state_zooms = _optional_fn("ram_state_zooms", _STATUS, VOIDP, _INT, FLOATP)
ram_bf16_products_supported = _optional_fn("ram_bf16_products_supported", _INT)
