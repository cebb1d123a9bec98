"""RAMClassifier: a scikit-learn style estimator over libram's Model, Policy
and Trainer.

    from libram import RAMClassifier

    clf = RAMClassifier(glimpses=4, patch=8, epochs=5, seed=1)
    clf.fit(x_train, y_train)          # x: (n, H, W), (n, H, W, C) or (n, C, H, W)
    print(clf.score(x_test, y_test), clf.history_[-1])
    clf.save("digits.ram")             # a libram checkpoint, the estimator's data inside
    clf = RAMClassifier.load("digits.ram")

    photos = datasets.stream_folder("photos", split="train", size=64, batch_size=64, seed=1)
    clf.fit(photos)                    # a folder larger than memory, a batch at a time

It follows scikit-learn's conventions (parameters stored unchanged by
__init__ and checked by fit, learned attributes ending in "_") and inherits
sklearn.base.BaseEstimator and ClassifierMixin when scikit-learn is
importable; without it, get_params, set_params and score are its own.
NumPy is required.
"""

import inspect
import json
import os
import shutil
import struct
import tempfile
import time

import numpy as np

from . import Model, Policy, Trainer
from .datasets import FolderStream

try:
    from sklearn.base import BaseEstimator as _Base, ClassifierMixin as _Mixin
except ImportError:  # pragma: no cover - depends on the machine
    _Base = _Mixin = None

__all__ = ["RAMClassifier"]

_FORMATS = ("auto", "nhwc", "nchw")
_CHANNEL_COUNTS = (1, 3, 4)
_CONVERT_CHUNK = 4096   # images converted to float32 at a time
_USER_FORMAT = "libram.RAMClassifier"
_USER_VERSION = 1
#: The longest class name a model file stores, in bytes of UTF-8 (ram.h:
#: ram_model_set_class_names); the shortest is 1 byte, and none holds NUL.
MAX_CLASS_NAME = 1024

# Which constructor arguments go to which libram object.
_MODEL_KNOBS = ("glimpses", "patch", "depth", "scale", "form", "glimpse_hidden", "loc_hidden",
                "glimpse_out", "core_hidden", "core", "bound", "loc_std", "loc_range_pixels",
                "init_scale", "context", "core_layers", "upper_core", "cell_samples", "contrast",
                "zoom_min", "zoom_max", "conv_channels", "conv_kernel", "conv_stride")
_POLICY_KNOBS = ("std", "baseline", "reward_scale", "discount", "detach_core",
                 "soft_detach_core")
_TRAINER_KNOBS = ("optimizer", "lr", "momentum", "nesterov", "beta1", "beta2", "eps",
                  "clip_norm", "weight_decay", "average_decay", "label_smoothing", "threads",
                  "products")
# `sensor`, as ram-train --sensor: the model's sensor and the policy's
# soft_training.
_SENSORS = {"hard": ("hard", "backprop"), "soft": ("soft", "backprop"),
            "hybrid": ("soft", "hybrid")}


class _ParamsMixin:
    """get_params / set_params as scikit-learn defines them, for machines
    without scikit-learn."""

    @classmethod
    def _get_param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError("invalid parameter %r for estimator %s; valid parameters: %s"
                                 % (name, type(self).__name__, ", ".join(valid)))
            setattr(self, name, value)
        return self

    def __repr__(self):
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__)
                    .parameters.values() if p.name != "self"}
        changed = ["%s=%r" % (k, v) for k, v in self.get_params().items()
                   if not (v is defaults.get(k) or v == defaults.get(k))]
        return "%s(%s)" % (type(self).__name__, ", ".join(changed))

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of predict(X) against y."""
        y = _labels_array(y)
        hits = (self.predict(X) == y).astype(np.float64)
        if sample_weight is None:
            return float(hits.mean())
        w = np.asarray(sample_weight, dtype=np.float64)
        return float((hits * w).sum() / w.sum())


_BASES = (_Mixin, _Base) if _Base is not None else (_ParamsMixin,)


def _class_names(classes):
    """str(label) of each class, as the model file's class names (CLSN):
    ValueError for a name the C library cannot store."""
    names = []
    for k, label in enumerate(classes):
        name = str(label)
        try:
            # surrogateescape: a folder name os.listdir() could not decode
            # goes back to its bytes, as the C tools store it.
            size = len(name.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:
            raise ValueError("class %d, %r: its name is not text UTF-8 can encode; a model file "
                             "stores class names as UTF-8" % (k, label)) from None
        if not 1 <= size <= MAX_CLASS_NAME or "\0" in name:
            raise ValueError("class %d, %r: its name str(label) is %d bytes%s; a model file stores "
                             "class names of 1 to %d bytes of UTF-8 without NUL: relabel it"
                             % (k, label, size, " with a NUL" if "\0" in name else "",
                                MAX_CLASS_NAME))
        names.append(name)
    return names


def _nameable(classes):
    try:
        _class_names(classes)
    except ValueError:
        return False
    return True


def _labels_array(y):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError("y must be a 1-D array of labels, got shape %s" % (y.shape,))
    return y


class RAMClassifier(*_BASES):
    """Recurrent Attention Model classifier of images.

    Model (Model.create, same names and defaults): glimpses, patch, depth,
    scale, form ("additive", "concat" or DRAM's "mul"), glimpse_hidden,
    loc_hidden, glimpse_out, core_hidden, core, bound, loc_std,
    loc_range_pixels, init_scale, and DRAM's context (0: none; S: the
    context network on the image pooled to S x S), core_layers (1 or 2)
    and upper_core (the second layer's cell); cell_samples (0: every pixel
    of a retina cell; k: at most k x k of each, a cost that does not grow
    with the image) and contrast (True: cells as contrast magnitudes, for
    objects in any colour on any background), hard sensor only; zoom_min and
    zoom_max (0 and 0: none; 1/64 <= A < B <= 16: the policy also chooses each
    glimpse's zoom factor in [A, B]); conv_channels (0: none; C: a
    convolutional layer of C channels between the retina and the glimpse
    network, over every scale of the patch) with conv_kernel and
    conv_stride, its filters' side and step.  sensor: "hard" (average
    pooling, locations trained by REINFORCE), "soft" (exact cell averages,
    locations trained by backpropagation through them) or "hybrid" (the soft
    sensor, sampled locations, REINFORCE plus the backpropagated term), as
    ram-train --sensor.  The image shape and the class count come from the
    data; `seed` seeds the weights.

    Policy (Policy): std (0: the model's loc_std), baseline, reward_scale,
    discount, detach_core, soft_detach_core (the soft and hybrid sensors:
    True, the gradient backpropagated to each location trains the location
    network only, steadier; False, as before, also the core through time);
    its hidden size and steps are the model's.

    Trainer (Trainer): optimizer, lr, lr_final (None: lr, a constant rate),
    decay_steps (None: the whole fit() when lr_final differs from lr, else
    0), momentum, nesterov, beta1, beta2, eps, clip_norm, weight_decay,
    average_decay (> 0: predictions and save() use the weights' moving
    average), label_smoothing (the classifier's target: 1 - e on the label,
    e / K on each class), threads, products ("float", or "bf16": bfloat16
    matrix products in training, on CPUs with AVX512_BF16 only;
    libram.bf16_products_supported() tells); batch_size is the trainer's
    max_batch.

    Data: X with labels y, or a datasets.FolderStream (fit(stream), labels
    from its class folders), read a batch at a time.  The model file names
    its classes str(classes_[k]) (class_names_, what ram-classify prints).

    Fitting: epochs; validation_fraction of the training images held out
    (a split seeded by `seed`; 0: none) unless fit() gets validation_data;
    the epoch with the lowest validation error (ties: lowest validation
    NLL) is kept; patience (None: off) stops after that many epochs without
    improvement.  data_format: "auto", "nhwc" or "nchw" for 4-D inputs
    (auto: NHWC when the last axis is 1, 3 or 4, else NCHW when axis 1 is).
    stop_threshold: None (every glimpse) or P in [0, 1]: predict and
    predict_proba stop each image at the first glimpse whose top class
    probability is at least P (Model.classify_stop); fitting and its
    validation always take every glimpse.  stop_cost: None, or C >= 0: after
    fit(), a stop unit is fitted to the kept model on the training images
    (Model.fit_stop: REINFORCE for the reward [right] - C x glimpses), and
    predict and predict_proba stop each image where it says (not with
    stop_threshold; X an array; partial_fit() removes the unit).
    verbose: progress per epoch (a tqdm bar when tqdm is importable, else a
    line per epoch on stdout).  seed: weights, policy sampling, data order
    and validation split; the same seed, data and threads give the same
    model.
    """

    def __init__(self, glimpses=6, patch=8, depth=1, scale=2.0, form="additive",
                 glimpse_hidden=128, loc_hidden=128, glimpse_out=256, core_hidden=256,
                 core="rnn", bound="tanh", loc_std=0.17, loc_range_pixels=-1.0, init_scale=0.1,
                 context=0, core_layers=1, upper_core="rnn", cell_samples=0, contrast=False,
                 sensor="hard", std=0.0, baseline="linear", reward_scale=1.0, discount=1.0,
                 detach_core=True,
                 optimizer="adam", lr=1e-3, lr_final=None, decay_steps=None, momentum=0.9,
                 nesterov=False, beta1=0.9, beta2=0.999, eps=1e-8, clip_norm=5.0,
                 weight_decay=0.0, average_decay=0.0, threads=1, batch_size=128, epochs=10,
                 validation_fraction=0.1, patience=None, data_format="auto", seed=1,
                 verbose=0, stop_threshold=None, zoom_min=0.0, zoom_max=0.0, stop_cost=None,
                 label_smoothing=0.0, products="float", soft_detach_core=False,
                 conv_channels=0, conv_kernel=3, conv_stride=1):
        self.glimpses = glimpses
        self.patch = patch
        self.depth = depth
        self.scale = scale
        self.form = form
        self.glimpse_hidden = glimpse_hidden
        self.loc_hidden = loc_hidden
        self.glimpse_out = glimpse_out
        self.core_hidden = core_hidden
        self.core = core
        self.bound = bound
        self.loc_std = loc_std
        self.loc_range_pixels = loc_range_pixels
        self.init_scale = init_scale
        self.context = context
        self.core_layers = core_layers
        self.upper_core = upper_core
        self.cell_samples = cell_samples
        self.contrast = contrast
        self.zoom_min = zoom_min
        self.zoom_max = zoom_max
        self.conv_channels = conv_channels
        self.conv_kernel = conv_kernel
        self.conv_stride = conv_stride
        self.sensor = sensor
        self.std = std
        self.baseline = baseline
        self.reward_scale = reward_scale
        self.discount = discount
        self.detach_core = detach_core
        self.soft_detach_core = soft_detach_core
        self.optimizer = optimizer
        self.lr = lr
        self.lr_final = lr_final
        self.decay_steps = decay_steps
        self.momentum = momentum
        self.nesterov = nesterov
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.clip_norm = clip_norm
        self.weight_decay = weight_decay
        self.average_decay = average_decay
        self.label_smoothing = label_smoothing
        self.products = products
        self.threads = threads
        self.batch_size = batch_size
        self.epochs = epochs
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.data_format = data_format
        self.seed = seed
        self.verbose = verbose
        self.stop_threshold = stop_threshold
        self.stop_cost = stop_cost

    def _more_tags(self):
        return {"X_types": ["3darray"], "requires_y": True}

    # ---- inputs

    def _check_knobs(self):
        def whole(name, value, low, allow_none=False):
            if value is None and allow_none:
                return
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError("%s must be an int, not %r" % (name, value))
            if value < low:
                raise ValueError("%s must be >= %d, not %d" % (name, low, value))
        whole("batch_size", self.batch_size, 1)
        whole("epochs", self.epochs, 1)
        whole("patience", self.patience, 1, allow_none=True)
        whole("decay_steps", self.decay_steps, 0, allow_none=True)
        whole("seed", self.seed, 0)
        f = self.validation_fraction
        if f is None:
            f = 0.0
        if isinstance(f, bool) or not isinstance(f, (int, float, np.number)) or not 0 <= f < 1:
            raise ValueError("validation_fraction must be a number in [0, 1), not %r" % (f,))
        if self.data_format not in _FORMATS:
            raise ValueError("data_format must be one of %s, not %r"
                             % (", ".join(_FORMATS), self.data_format))
        if self.stop_cost is not None:
            c = self.stop_cost
            if isinstance(c, bool) or not isinstance(c, (int, float, np.number)) or not c >= 0:
                raise ValueError("stop_cost must be None or a number >= 0, not %r" % (c,))
            if self.stop_threshold is not None:
                raise ValueError("stop_threshold or stop_cost, not both")
        if not isinstance(self.sensor, str) or self.sensor not in _SENSORS:
            raise ValueError("sensor must be one of %s, not %r"
                             % (", ".join(_SENSORS), self.sensor))

    def _layout(self, X, fitted):
        """Check X; return (X as an array, its layout "nhw"/"nhwc"/"nchw")."""
        if not hasattr(X, "shape") or not hasattr(X, "dtype"):
            X = np.asarray(X)
        if X.dtype.kind not in "uf":
            raise TypeError("X must hold uint8, uint16 or float pixels, not %s" % X.dtype)
        if X.dtype.kind == "u" and X.dtype.itemsize > 2:
            raise TypeError("X must hold uint8, uint16 or float pixels, not %s" % X.dtype)
        if X.ndim == 3:
            layout = "nhw"
        elif X.ndim == 4:
            if fitted:  # the fitted layout; guessed only to name a wrong one
                fmt = self.data_format_ if self.data_format_ != "nhw" else "auto"
            else:
                fmt = self.data_format
            if fmt == "auto":
                if X.shape[3] in _CHANNEL_COUNTS:
                    fmt = "nhwc"
                elif X.shape[1] in _CHANNEL_COUNTS:
                    fmt = "nchw"
                else:
                    raise ValueError("X of shape %s: neither the last axis nor axis 1 is 1, 3 or "
                                     "4 channels; set data_format='nhwc' or 'nchw'"
                                     % (X.shape,))
            layout = fmt
        else:
            raise ValueError("X must be images: a 3-D (n, H, W) or 4-D (n, H, W, C) / "
                             "(n, C, H, W) array, got shape %s" % (X.shape,))
        if X.shape[0] < 1:
            raise ValueError("X of shape %s holds no images" % (X.shape,))
        if min(X.shape[1:]) < 1:
            raise ValueError("X of shape %s has empty images" % (X.shape,))
        if fitted:
            if layout != self.data_format_ or tuple(X.shape[1:]) != self.image_shape_:
                raise ValueError("X has images of shape %s (%s); this classifier was fitted on "
                                 "%s (%s)" % (tuple(X.shape[1:]), layout, self.image_shape_,
                                              self.data_format_))
        if X.dtype.kind == "f":
            for i in range(0, X.shape[0], _CONVERT_CHUNK):
                part = np.asarray(X[i:i + _CONVERT_CHUNK])
                if not np.isfinite(part).all():
                    bad = i + int(np.argwhere(~np.isfinite(part))[0][0])
                    raise ValueError("X has NaN or infinite pixels (image %d first)" % bad)
        return X, layout

    @staticmethod
    def _chw(layout, shape):
        if layout == "nhw":
            return (1,) + tuple(shape[1:])
        if layout == "nhwc":
            return (shape[3], shape[1], shape[2])
        return tuple(shape[1:])

    @staticmethod
    def _floats(X, layout, index=None):
        """Images of X (all, a slice or an index array) as contiguous
        float32 (n, C, H, W) in [0, 1] for uint8 and uint16."""
        part = np.asarray(X[index] if index is not None else X)
        unsigned = part.dtype.kind == "u"  # of either byte order
        if unsigned and part.dtype.itemsize == 1:
            out = part.astype(np.float32)
            out /= np.float32(255)  # float32(b / 255) as ram-eval converts bytes
        elif unsigned:
            out = part.astype(np.float32)
            out /= np.float32(65535)
        else:
            out = part.astype(np.float32, copy=False)
        if layout == "nhw":
            out = out[:, None]
        elif layout == "nhwc":
            out = out.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(out)

    def _encode(self, y, what="y"):
        y = _labels_array(y)
        text = y.dtype.kind in "US", self.classes_.dtype.kind in "US"
        if text[0] != text[1] and "O" not in (y.dtype.kind, self.classes_.dtype.kind):
            raise ValueError("%s has labels of type %s, classes_ are %s"
                             % (what, y.dtype, list(self.classes_)))
        try:
            codes = np.searchsorted(self.classes_, y)
        except TypeError:  # labels that do not compare with the classes
            raise ValueError("%s has labels of type %s, classes_ are %s"
                             % (what, y.dtype, list(self.classes_))) from None
        codes = np.clip(codes, 0, len(self.classes_) - 1)
        unknown = self.classes_[codes] != y
        if np.any(unknown):
            raise ValueError("%s has labels not in classes_ %s: %s"
                             % (what, list(self.classes_), list(np.unique(y[unknown])[:5])))
        return codes.astype(np.intc)

    # ---- building

    def _build(self, model=None, names=True):
        """Model (fresh unless given), policy and trainer for this data.
        The model gets the class names str(classes_[k]) (names=False: left
        as they are)."""
        self._close()
        c, h, w = self._chw_
        sensor, soft_training = _SENSORS[self.sensor]
        if model is None:
            knobs = {k: getattr(self, k) for k in _MODEL_KNOBS}
            model = Model.create(channels=c, height=h, width=w, classes=len(self.classes_),
                                 seed=self.seed, sensor=sensor, **knobs)
        try:
            if names:
                named = _class_names(self.classes_)
                if model.class_names != named:
                    model.class_names = named
            policy = Policy(model, seed=self.seed, soft_training=soft_training,
                            **{k: getattr(self, k) for k in _POLICY_KNOBS})
            trainer = Trainer(model, policy, max_batch=self.batch_size,
                              lr_final=self.lr if self.lr_final is None else self.lr_final,
                              decay_steps=self._decay_steps,
                              **{k: getattr(self, k) for k in _TRAINER_KNOBS})
        except BaseException:
            model.close()
            raise
        self.model_ = model
        self.class_names_ = model.class_names
        self._policy = policy
        self._trainer = trainer

    def _close(self):
        # The trainer and policy are private; a model_ someone kept stays
        # usable and is freed when its last reference goes.
        for name in ("_trainer", "_policy"):
            obj = self.__dict__.pop(name, None)
            if obj is not None:
                obj.close()
        self.__dict__.pop("model_", None)

    def _train_mode(self):
        if self._trainer.average_in:
            self._trainer.swap_average()

    def _eval_mode(self):
        if self.average_decay and not self._trainer.average_in:
            self._trainer.swap_average()

    def _check_fitted(self):
        if getattr(self, "model_", None) is None:
            raise _not_fitted("this %s is not fitted yet: call fit() or partial_fit() first"
                              % type(self).__name__)

    # ---- training

    def _array_batches(self, X, layout, codes, index):
        """An epoch's batches of X[index] in a fresh order from the trainer's RNG."""
        order = index[self._trainer.shuffle(len(index))]
        for start in range(0, len(order), self.batch_size):
            # Sorted within the batch: a memory-mapped X is read in file order.
            idx = np.sort(order[start:start + self.batch_size])
            yield self._floats(X, layout, idx), codes[idx]

    def _stream_codes(self, stream, what="the stream"):
        """codes[k]: the class (index into classes_) of the stream's label k."""
        return self._encode(np.asarray(stream.classes), "%s's classes" % what)

    def _stream_batches(self, batches, codes):
        """A stream's batches as floats and codes, cut to batch_size."""
        for images, labels in batches:
            x = self._floats(images, self.data_format_)
            y = codes[labels]
            for start in range(0, len(y), self.batch_size):
                yield x[start:start + self.batch_size], y[start:start + self.batch_size]

    def _epoch(self, batches, bar=None):
        """One pass over the (floats, codes) batches; returns (train_error, nll, lr)."""
        self._train_mode()
        wrong = nll = 0.0
        seen = 0
        lr = float("nan")
        for images, codes in batches:
            stats = self._trainer.train_batch(images, codes)
            wrong += (1.0 - stats.accuracy) * len(codes)
            nll += stats.nll * len(codes)
            seen += len(codes)
            lr = stats.lr
            if bar is not None:
                bar.update(1)
        self._eval_mode()
        if not seen:
            raise ValueError("no image could be read to train on")
        return wrong / seen, nll / seen, lr

    @staticmethod
    def _scores(probs, codes):
        """(error, nll) of the probabilities `probs` of the classes `codes`."""
        p = probs[np.arange(len(codes)), codes]
        error = float(np.mean(np.argmax(probs, axis=1) != codes))
        return error, float(-np.mean(np.log(np.maximum(p, 1e-30))))

    def _measure(self, X, layout, codes, index=None):
        """(error, nll) of the model on X (or X[index]) with mean locations."""
        probs = self._probs(X, layout, index)
        if index is not None:
            codes = codes[index]
        return self._scores(probs, codes)

    def _stream_probs(self, stream, what="the stream"):
        """(probs, codes) of a stream's images in file order (less the
        files found damaged), with mean locations."""
        if tuple(stream.image_shape) != self.image_shape_:
            raise ValueError("%s has images of shape %s; this classifier was fitted on %s"
                             % (what, tuple(stream.image_shape), self.image_shape_))
        table = self._stream_codes(stream, what)
        probs, codes = [], []
        for images, labels in stream._batches(np.arange(len(stream.files))):
            for start in range(0, len(labels), _CONVERT_CHUNK):
                part = images[start:start + _CONVERT_CHUNK]
                probs.append(self.model_.classify(self._floats(part, self.data_format_)).probs)
            codes.append(table[labels])
        if not codes:
            raise ValueError("%s: no image could be read" % what)
        return np.concatenate(probs).astype(np.float64), np.concatenate(codes)

    def _reset(self, layout, shape):
        """The fitted attributes of images of `shape` (one image's) in `layout`."""
        self.data_format_ = layout
        self.image_shape_ = tuple(int(v) for v in shape)
        self._chw_ = self._chw(layout, (0,) + self.image_shape_)
        self.n_features_in_ = int(np.prod(self._chw_))
        self.history_ = []
        self.n_iter_ = 0
        self.best_epoch_ = None

    def _set_classes(self, labels):
        try:
            self.classes_ = np.unique(labels)
        except TypeError as e:
            raise TypeError("labels must be mutually comparable to sort them (%s)" % e) from None
        if len(self.classes_) < 2:
            raise ValueError("need at least 2 classes, got %d (%s)"
                             % (len(self.classes_), list(self.classes_)))
        _class_names(self.classes_)  # refused now rather than after training

    def _start(self, X, y, classes):
        X, layout = self._layout(X, fitted=False)
        y = _labels_array(y)
        if len(y) != X.shape[0]:
            raise ValueError("X has %d images but y has %d labels" % (X.shape[0], len(y)))
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("y has NaN or infinite labels")
        self._set_classes(y if classes is None else _labels_array(classes))
        self._reset(layout, X.shape[1:])
        return X, layout, self._encode(y)

    def _start_stream(self, stream, y, classes):
        if y is not None:
            raise ValueError("y must be None when X is a datasets.FolderStream: its labels are "
                             "its class folders")
        self._set_classes(np.asarray(stream.classes) if classes is None
                          else _labels_array(classes))
        shape = tuple(stream.image_shape)
        self._reset("nhw" if len(shape) == 2 else "nhwc", shape)
        return self._stream_codes(stream)

    def _validation(self, validation_data):
        """validation_data as a function giving (probs, codes)."""
        if isinstance(validation_data, FolderStream):
            return lambda: self._stream_probs(validation_data, "validation_data")
        try:
            Xv, yv = validation_data
        except (TypeError, ValueError):
            raise TypeError("validation_data must be a pair (X, y) or a datasets.FolderStream") \
                from None
        Xv, layout_v = self._layout(Xv, fitted=True)
        yv = _labels_array(yv)
        if len(yv) != Xv.shape[0]:
            raise ValueError("validation_data has %d images but %d labels"
                             % (Xv.shape[0], len(yv)))
        codes = self._encode(yv, "validation_data's y")
        return lambda: (self._probs(Xv, layout_v), codes)

    def fit(self, X, y=None, validation_data=None):
        """Train a fresh model for `epochs` passes over X; keep the epoch of
        lowest validation error.  X is images with their labels y, or a
        datasets.FolderStream (y None: its labels are its class folders).
        validation_data: a pair (X, y), or a FolderStream.  Returns self."""
        self._check_knobs()
        self._close()
        if isinstance(X, FolderStream):
            if self.stop_cost is not None:
                raise ValueError("stop_cost fits its unit on an array X, not a FolderStream")
            codes = self._start_stream(X, y, None)
            n = len(X.files)
        else:
            if y is None:
                raise ValueError("fit requires y to be passed, but the target y is None (only a "
                                 "datasets.FolderStream X brings its own labels)")
            X, layout, codes = self._start(X, y, None)
            n = X.shape[0]
        if validation_data is not None:
            val = self._validation(validation_data)
            train_index = np.arange(n)
        elif self.validation_fraction:
            held = max(1, int(round(n * self.validation_fraction)))
            if held >= n:
                raise ValueError("validation_fraction %g of %d images leaves none to train on"
                                 % (self.validation_fraction, n))
            perm = np.random.default_rng(self.seed).permutation(n)
            held_index = np.sort(perm[:held])
            train_index = np.sort(perm[held:])
            if isinstance(X, FolderStream):
                held_stream = X._subset(held_index)
                val = lambda: self._stream_probs(held_stream)  # noqa: E731
            else:
                val = lambda: (self._probs(X, layout, held_index), codes[held_index])  # noqa: E731
        else:
            val = None
            train_index = np.arange(n)
        if isinstance(X, FolderStream):
            train = X._subset(train_index) if len(train_index) < n else X
            full, rest = divmod(len(train_index), train.batch_size)
            steps_per_epoch = (full * -(-train.batch_size // self.batch_size)
                               + -(-rest // self.batch_size))

            def batches(epoch):
                return self._stream_batches(train.batches(epoch), codes)
        else:
            steps_per_epoch = -(-len(train_index) // self.batch_size)

            def batches(epoch):
                return self._array_batches(X, layout, codes, train_index)
        if self.decay_steps is not None:
            self._decay_steps = self.decay_steps
        elif self.lr_final is not None and self.lr_final != self.lr:
            self._decay_steps = self.epochs * steps_per_epoch
        else:
            self._decay_steps = 0
        self._build()
        scratch = tempfile.mkdtemp(prefix="ramclassifier-")
        best_path = os.path.join(scratch, "best.ckpt")
        best = None
        stale = 0
        bar = self._progress(self.epochs * steps_per_epoch)
        try:
            for epoch in range(self.epochs):
                t0 = time.perf_counter()
                train_error, nll, lr = self._epoch(batches(epoch), bar)
                val_error = val_nll = None
                if val is not None:
                    val_error, val_nll = self._scores(*val())
                record = dict(epoch=epoch + 1, train_error=train_error, nll=nll,
                              val_error=val_error, val_nll=val_nll,
                              seconds=time.perf_counter() - t0, lr=lr,
                              steps=self._trainer.steps)
                self.history_.append(record)
                self.n_iter_ = epoch + 1
                if val is not None:
                    if best is None or (val_error, val_nll) < best:
                        best = (val_error, val_nll)
                        self.best_epoch_ = epoch + 1
                        stale = 0
                        self._checkpoint(best_path)
                    else:
                        stale += 1
                else:
                    self.best_epoch_ = epoch + 1
                self._report(bar, record)
                if self.patience is not None and stale >= self.patience:
                    break
            if val is not None and self.best_epoch_ != self.n_iter_:
                self._train_mode()  # a checkpoint loads with the trained weights in
                self._trainer.load_checkpoint(best_path)
                self._eval_mode()
            if self.stop_cost is not None:
                self._fit_stop(X, layout, codes, train_index)
        except BaseException:
            self._close()
            raise
        finally:
            if bar is not None:
                bar.close()
            shutil.rmtree(scratch, ignore_errors=True)
        return self

    def partial_fit(self, X, y=None, classes=None):
        """One shuffled pass over X, y (or over the datasets.FolderStream X,
        its epoch numbered by the passes so far, y None).  The first call
        needs `classes` (every label the classifier will see; a stream's
        class names by default) and builds the model; later calls continue
        training it (from fit() too).  Returns self."""
        stream = isinstance(X, FolderStream)
        if getattr(self, "model_", None) is None:
            if stream:
                self._check_knobs()
                table = self._start_stream(X, y, classes)
            else:
                if classes is None:
                    raise ValueError("classes must be given on the first call to partial_fit()")
                self._check_knobs()
                X, layout, codes = self._start(X, y, classes)
            self._decay_steps = self.decay_steps or 0
            self._build()
        else:
            if classes is not None and not np.array_equal(np.unique(_labels_array(classes)),
                                                          self.classes_):
                raise ValueError("classes %s differ from classes_ %s of the first call"
                                 % (list(np.unique(classes)), list(self.classes_)))
            if stream:
                if y is not None:
                    raise ValueError("y must be None when X is a datasets.FolderStream: its "
                                     "labels are its class folders")
                if tuple(X.image_shape) != self.image_shape_:
                    raise ValueError("the stream has images of shape %s; this classifier was "
                                     "fitted on %s" % (tuple(X.image_shape), self.image_shape_))
                table = self._stream_codes(X)
            else:
                if y is None:
                    raise ValueError("partial_fit requires y to be passed, but the target y is "
                                     "None (only a datasets.FolderStream X brings its own labels)")
                X, layout = self._layout(X, fitted=True)
                y = _labels_array(y)
                if len(y) != X.shape[0]:
                    raise ValueError("X has %d images but y has %d labels"
                                     % (X.shape[0], len(y)))
                codes = self._encode(y)
        t0 = time.perf_counter()
        if stream:
            batches = self._stream_batches(X.batches(len(self.history_)), table)
        else:
            batches = self._array_batches(X, layout, codes, np.arange(X.shape[0]))
        train_error, nll, lr = self._epoch(batches)
        record = dict(epoch=len(self.history_) + 1, train_error=train_error, nll=nll,
                      val_error=None, val_nll=None, seconds=time.perf_counter() - t0, lr=lr,
                      steps=self._trainer.steps)
        self.history_.append(record)
        self.n_iter_ = len(self.history_)
        self.best_epoch_ = self.n_iter_
        self._report(None, record)
        return self

    def _progress(self, total):
        if not self.verbose:
            return None
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        return tqdm(total=total, desc="RAMClassifier", unit="batch")

    def _report(self, bar, r):
        if not self.verbose:
            return
        text = "train error %.2f%%  nll %.4f" % (100 * r["train_error"], r["nll"])
        if r["val_error"] is not None:
            text += "  val error %.2f%%  val nll %.4f" % (100 * r["val_error"], r["val_nll"])
        if bar is not None:
            bar.set_postfix_str("epoch %d/%d  %s" % (r["epoch"], self.epochs, text))
        else:
            print("epoch %d  %s  lr %.3g  %.2f s" % (r["epoch"], text, r["lr"], r["seconds"]),
                  flush=True)

    # ---- prediction

    def _probs(self, X, layout, index=None):
        n = X.shape[0] if index is None else len(index)
        out = np.empty((n, len(self.classes_)), dtype=np.float64)
        for i in range(0, n, _CONVERT_CHUNK):
            part = slice(i, i + _CONVERT_CHUNK) if index is None else index[i:i + _CONVERT_CHUNK]
            images = self._floats(X, layout, part)
            out[i:i + len(images)] = self.model_.classify(images).probs
        return out

    def _fit_stop(self, X, layout, codes, index):
        """The stop unit on the training images (stop_cost)."""
        g, k = self.model_.glimpses, self.model_.classes
        probs = np.empty((len(index), g, k), dtype=np.float32)
        for i in range(0, len(index), _CONVERT_CHUNK):
            part = index[i:i + _CONVERT_CHUNK]
            probs[i:i + len(part)] = self.model_.step_probs(self._floats(X, layout, part))
        self.model_.fit_stop(None, codes[index], cost=float(self.stop_cost), seed=self.seed,
                             step_probs=probs)

    def predict_proba(self, X):
        """(n, classes) probabilities, columns in classes_ order; with
        stop_threshold or stop_cost, each image's at the glimpse it stopped
        at."""
        self._check_fitted()
        X, layout = self._layout(X, fitted=True)
        if self.stop_threshold is None and self.stop_cost is None:
            return self._probs(X, layout)
        if self.stop_cost is not None and self.model_.stop_unit is None:
            raise ValueError("stop_cost: the model has no stop unit (fit() makes it; "
                             "partial_fit() removes it)")
        out = np.empty((X.shape[0], len(self.classes_)), dtype=np.float64)
        for i in range(0, X.shape[0], _CONVERT_CHUNK):
            images = self._floats(X, layout, slice(i, i + _CONVERT_CHUNK))
            out[i:i + len(images)] = self.model_.classify_stop(images,
                                                               self.stop_threshold).probs
        return out

    def predict(self, X):
        """The most probable class of each image, from classes_."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y=None, sample_weight=None):
        """Mean accuracy of predict(X) against y, or over a
        datasets.FolderStream X (y None) against its class folders."""
        if not isinstance(X, FolderStream):
            return super().score(X, y, sample_weight=sample_weight)
        if y is not None or sample_weight is not None:
            raise ValueError("y and sample_weight must be None when X is a datasets.FolderStream")
        self._check_fitted()
        probs, codes = self._stream_probs(X)
        return float(np.mean(np.argmax(probs, axis=1) == codes))

    # ---- files and pickling

    def _extras(self):
        params = {}
        for name, value in self.get_params(deep=False).items():
            params[name] = value.item() if isinstance(value, np.generic) else value
        classes = self.classes_.tolist()
        extras = dict(format=_USER_FORMAT, version=_USER_VERSION, params=params,
                      classes=classes, classes_dtype=self.classes_.dtype.str,
                      data_format=self.data_format_, image_shape=list(self.image_shape_),
                      chw=list(self._chw_), history=self.history_, best_epoch=self.best_epoch_,
                      decay_steps=self._decay_steps)
        try:
            return json.dumps(extras, sort_keys=True).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise TypeError("cannot save: classes and parameters must be ints, floats, strings, "
                            "bools or None (%s)" % e) from None

    def _checkpoint(self, path, user=b""):
        averaged = self._trainer.average_in
        if averaged:
            self._trainer.swap_average()
        try:
            self._trainer.save_checkpoint(path, user=user)
        finally:
            if averaged:
                self._trainer.swap_average()

    def save(self, path):
        """Write a libram checkpoint to `path` (atomically): model (with the
        class names str(classes_[k])), policy, optimizer state and, in its
        user bytes, the estimator's parameters, classes_, input layout and
        history_ as JSON.  Model.load(), ram-eval and ram-classify read it
        as a model file (with the trained weights, not the average of
        average_decay) and name its classes."""
        self._check_fitted()
        self._checkpoint(path, self._extras())

    @classmethod
    def load(cls, path):
        """A fitted RAMClassifier from a file save() wrote.  Refuses a
        libram model or checkpoint without the estimator's data, or whose
        data do not match its model, with a ValueError."""
        model = Model.load(path)
        try:
            raw = _user_bytes(path)
            if raw is None:
                raise ValueError("%s is a libram model without RAMClassifier data (no USER "
                                 "chunk): load it with libram.Model.load, or save it with "
                                 "RAMClassifier.save" % os.fsdecode(path))
            try:
                extras = json.loads(raw.decode("utf-8"))
                ok = isinstance(extras, dict) and extras.get("format") == _USER_FORMAT
            except (UnicodeDecodeError, ValueError):
                ok = False
            if not ok:
                raise ValueError("%s: its user data are not RAMClassifier data"
                                 % os.fsdecode(path))
            if extras.get("version") != _USER_VERSION:
                raise ValueError("%s: RAMClassifier data of version %r, this package reads %d"
                                 % (os.fsdecode(path), extras.get("version"), _USER_VERSION))
            classes = np.asarray(extras["classes"], dtype=np.dtype(extras["classes_dtype"]))
            if classes.ndim != 1 or not np.array_equal(np.unique(classes), classes):
                raise ValueError("%s: the classes in the RAMClassifier data are not sorted and "
                                 "distinct" % os.fsdecode(path))
            if len(classes) != model.classes:
                raise ValueError("%s: %d classes in the RAMClassifier data, %d in the model"
                                 % (os.fsdecode(path), len(classes), model.classes))
            if tuple(extras["chw"]) != model.image_shape:
                raise ValueError("%s: images %s in the RAMClassifier data, %s in the model"
                                 % (os.fsdecode(path), tuple(extras["chw"]), model.image_shape))
            est = cls(**extras["params"])
            est.classes_ = classes
            est.data_format_ = extras["data_format"]
            est.image_shape_ = tuple(extras["image_shape"])
            est._chw_ = tuple(extras["chw"])
            est.n_features_in_ = int(np.prod(est._chw_))
            est.history_ = extras["history"]
            est.n_iter_ = len(est.history_)
            est.best_epoch_ = extras["best_epoch"]
            est._decay_steps = int(extras["decay_steps"])  # as resolved by fit()
            try:
                names = _class_names(classes)
            except ValueError:  # labels a model file cannot name: it has no names then
                names = None
            stored = model.class_names
            if stored is not None and names is not None and stored != names:
                raise ValueError("%s: class names %s in the model, classes %s in the "
                                 "RAMClassifier data" % (os.fsdecode(path), stored, names))
            est._build(model, names=names is not None)
        except BaseException:
            model.close()
            raise
        est._trainer.load_checkpoint(path)
        est._eval_mode()
        return est

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("model_", "_policy", "_trainer")}
        if getattr(self, "model_", None) is not None:
            with tempfile.TemporaryDirectory(prefix="ramclassifier-") as d:
                path = os.path.join(d, "model.ckpt")
                self._checkpoint(path)
                with open(path, "rb") as f:
                    state["_checkpoint_bytes"] = f.read()
        return state

    def __setstate__(self, state):
        data = state.pop("_checkpoint_bytes", None)
        # A pickle of a version with fewer constructor arguments: the others
        # take their defaults, which are what that version did.
        for p in inspect.signature(type(self).__init__).parameters.values():
            if p.name != "self" and p.default is not p.empty:
                self.__dict__.setdefault(p.name, p.default)
        self.__dict__.update(state)
        if data is not None:
            with tempfile.TemporaryDirectory(prefix="ramclassifier-") as d:
                path = os.path.join(d, "model.ckpt")
                with open(path, "wb") as f:
                    f.write(data)
                self._build(Model.load(path), names=_nameable(self.classes_))
                self._trainer.load_checkpoint(path)
            self._eval_mode()


def _not_fitted(message):
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return AttributeError(message)
    return NotFittedError(message)


_MAGIC = b"\x89RAM\r\n\x1a\n"


def _user_bytes(path):
    """The USER chunk of a libram file (docs/file-format.md), or None.  The
    file was checked by Model.load() first."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != _MAGIC:
        raise ValueError("%s is not a libram file" % os.fsdecode(path))
    pos = 16
    while pos + 16 <= len(data):
        tag = data[pos:pos + 4]
        length, = struct.unpack_from("<Q", data, pos + 8)
        if tag == b"USER":
            return data[pos + 16:pos + 16 + length]
        if tag == b"END ":
            break
        pos += 16 + length
    return None
