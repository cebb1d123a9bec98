"""libram's model file format (docs/file-format.md) read and written in Python.

The C API has no weight accessor, so the PyTorch bridge (libram.torch) reads
and writes the file itself.  A file read here and written back unchanged is
the same bytes: every chunk other than ARCH and WGHT is kept as it was, in
its place, and ARCH keeps any bytes a later version appended.

    f = modelfile.read("models/mnist.ram")
    f.arch["core_hidden"], f.tensors["cls_w"].shape   # 256, (10, 256)
    assert f.to_bytes() == open("models/mnist.ram", "rb").read()

A DRAM model's file (a DRAM chunk: two core layers, a context network or
several objects) has five tensors more (DRAM_TENSORS), shaped by f.dram;
a model with a convolutional layer (a CONV chunk) lists those five and two
more (CONV_TENSORS), shaped by f.conv; a soft-sensor model's names its
sensor in a SENS chunk (f.sensor).

Needs NumPy.  Checks what libram's loader checks about the container (magic,
version, chunk lengths, the END chunk and its CRC) and that the weights have
the shapes the architecture implies; libram itself checks the rest when the
bytes are loaded into a Model.
"""

import struct
import zlib

import numpy as np

__all__ = ["MAGIC", "TENSORS", "DRAM_TENSORS", "CONV_TENSORS", "ARCH_FIELDS", "DRAM_FIELDS",
           "CONV_FIELDS", "ModelFile", "read", "parse", "shapes", "conv_fields", "conv_payload",
           "FileFormatError"]

MAGIC = b"\x89RAM\r\n\x1a\n"
VERSION = 1

#: The 15 tensors of the WGHT chunk, in file order (docs/file-format.md).
TENSORS = ("g1_w", "g1_b", "l1_w", "l1_b", "g2_w", "g2_b", "l2_w", "l2_b",
           "core_wx", "core_wh", "core_b", "loc_w", "loc_b", "cls_w", "cls_b")

#: The ARCH chunk's fields in order, with their struct codes.
ARCH_FIELDS = (("channels", "I"), ("height", "I"), ("width", "I"), ("patch", "I"),
               ("depth", "I"), ("scale", "f"), ("form", "I"), ("glimpse_hidden", "I"),
               ("loc_hidden", "I"), ("glimpse_out", "I"), ("core_hidden", "I"), ("core", "I"),
               ("glimpses", "I"), ("classes", "I"), ("bound", "I"), ("loc_std", "f"),
               ("loc_range_pixels", "f"), ("init_scale", "f"), ("seed", "Q"))
_ARCH = struct.Struct("<" + "".join(code for _, code in ARCH_FIELDS))

#: The 5 tensors a file with a DRAM chunk lists after TENSORS: the upper
#: core layer (W_x, W_h, b) and the context network (W, b), 0 rows where
#: the model has no such part.
DRAM_TENSORS = ("core2_wx", "core2_wh", "core2_b", "ctx_w", "ctx_b")
#: The DRAM chunk's u32 fields in order.
DRAM_FIELDS = ("core_layers", "upper_core", "context", "objects", "emit_every")
_DRAM = struct.Struct("<5I")
#: The 2 tensors a file with a CONV chunk lists after DRAM_TENSORS: the
#: convolutional layer's filters and biases.
CONV_TENSORS = ("conv_w", "conv_b")
#: The CONV chunk's u32 fields in order.
CONV_FIELDS = ("channels", "kernel", "stride")
_CONV = struct.Struct("<3I")


def conv_fields(payload, name="model file"):
    """A CONV chunk's payload as its fields by name (CONV_FIELDS);
    FileFormatError if it is not the chunk's size."""
    if len(payload) != _CONV.size:
        raise FileFormatError("%s: CONV chunk of %d bytes, %d expected"
                              % (name, len(payload), _CONV.size))
    return dict(zip(CONV_FIELDS, _CONV.unpack(payload)))


def conv_payload(fields):
    """The CONV chunk's payload of fields by name (CONV_FIELDS)."""
    return _CONV.pack(*(fields[k] for k in CONV_FIELDS))
_NO_DRAM = {"core_layers": 1, "upper_core": 0, "context": 0, "objects": 1, "emit_every": 0}
_CHUNK = struct.Struct("<4sIQ")


def _names(dram, conv):
    return TENSORS + DRAM_TENSORS + CONV_TENSORS if conv else (
        TENSORS + DRAM_TENSORS if dram else TENSORS)


class FileFormatError(ValueError):
    """Bytes that are not a libram model file, or a damaged one."""


def shapes(arch, dram=None, loc=2, conv=None):
    """{tensor: (rows, cols)} that an architecture implies, in file order;
    with `dram` (the DRAM chunk's fields by name) DRAM_TENSORS too; with
    `conv` (the CONV chunk's fields by name) DRAM_TENSORS and CONV_TENSORS;
    `loc`, the floats of a location: 2 (x, y), or 3 with a ZOOM chunk (x, y
    and the zoom)."""
    planes, patch = arch["channels"] * arch["depth"], arch["patch"]
    d = planes * patch ** 2
    extra = {}
    if conv is not None:
        c, k, s = conv["channels"], conv["kernel"], conv["stride"]
        q = (patch - k) // s + 1
        d = c * q * q
        extra = {**_dram_shapes(arch, dram or _NO_DRAM), "conv_w": (c, planes * k * k),
                 "conv_b": (c, 1)}
    elif dram is not None:
        extra = _dram_shapes(arch, dram)
    hg, hl, g, h, k = (arch["glimpse_hidden"], arch["loc_hidden"], arch["glimpse_out"],
                       arch["core_hidden"], arch["classes"])
    gates = 4 * h if arch["core"] == 1 else h
    concat = arch["form"] == 1
    return {"g1_w": (hg, d), "g1_b": (hg, 1), "l1_w": (hl, loc), "l1_b": (hl, 1),
            "g2_w": (g, hg + hl) if concat else (g, hg), "g2_b": (g, 1),
            "l2_w": (0, hl) if concat else (g, hl), "l2_b": (0, 1) if concat else (g, 1),
            "core_wx": (gates, g), "core_wh": (gates, h), "core_b": (gates, 1),
            "loc_w": (loc, h), "loc_b": (loc, 1), "cls_w": (k, h), "cls_b": (k, 1), **extra}


def _dram_shapes(arch, dram):
    h = arch["core_hidden"]
    upper = (4 * h if dram["upper_core"] == 1 else h) if dram["core_layers"] == 2 else 0
    side = dram["context"]
    ctx = h if side else 0
    return {"core2_wx": (upper, h), "core2_wh": (upper, h), "core2_b": (upper, 1),
            "ctx_w": (ctx, arch["channels"] * side * side), "ctx_b": (ctx, 1)}


class ModelFile:
    """A model file's content.

    arch: the ARCH fields by name (ARCH_FIELDS); tensors: {name: float32
    array of (rows, cols)} (TENSORS); chunks: every chunk in file order as
    [tag, reserved, payload], the payload None for ARCH and WGHT (written from
    arch and tensors); arch_tail: ARCH bytes after the 80 this version knows;
    kind: the header's reserved word.  With a DRAM chunk among the chunks,
    tensors holds DRAM_TENSORS too."""

    def __init__(self, arch, tensors, chunks=None, arch_tail=b"", kind=0):
        self.arch = dict(arch)
        # libram's own order for a file it writes: ARCH, WGHT, then the
        # optional chunks, which the caller appends.
        self.chunks = [list(c) for c in chunks] if chunks is not None else [
            [b"ARCH", 0, None], [b"WGHT", 0, None]]
        self.tensors = {name: np.ascontiguousarray(tensors[name], dtype=np.float32)
                        for name in self.tensor_names()}
        self.arch_tail = bytes(arch_tail)
        self.kind = kind
        self.check()

    @property
    def dram(self):
        """The DRAM chunk's fields by name (DRAM_FIELDS), or None for a
        model with one core layer, no context and one object."""
        payload = self.chunk(b"DRAM")
        if payload is None:
            return None
        if len(payload) != _DRAM.size:
            raise FileFormatError("DRAM chunk of %d bytes, %d expected"
                                  % (len(payload), _DRAM.size))
        return dict(zip(DRAM_FIELDS, _DRAM.unpack(payload)))

    @property
    def conv(self):
        """The CONV chunk's fields by name (CONV_FIELDS), or None for a
        model without a convolutional layer."""
        payload = self.chunk(b"CONV")
        return None if payload is None else conv_fields(payload)

    @property
    def sensor(self):
        """The retina's sensor from the SENS chunk: 0 hard (none), 1 soft."""
        payload = self.chunk(b"SENS")
        return struct.unpack("<I", payload)[0] if payload is not None and len(payload) == 4 else 0

    def tensor_names(self):
        """The WGHT chunk's tensors in order: TENSORS, DRAM_TENSORS with a
        DRAM chunk, DRAM_TENSORS and CONV_TENSORS with a CONV chunk."""
        return _names(self.chunk(b"DRAM") is not None, self.chunk(b"CONV") is not None)

    def loc_dims(self):
        """Floats per location: 3 with a ZOOM chunk (zoom as an action), else 2."""
        return 3 if self.chunk(b"ZOOM") is not None else 2

    def check(self):
        """Raise FileFormatError unless every tensor has its implied shape."""
        want = shapes(self.arch, self.dram, self.loc_dims(), self.conv)
        for name in self.tensor_names():
            got = tuple(self.tensors[name].shape)
            if got != want[name]:
                raise FileFormatError("tensor %s is %s, the architecture implies %s"
                                      % (name, "x".join(map(str, got)),
                                         "x".join(map(str, want[name]))))

    def chunk(self, tag):
        """The payload of the first chunk `tag` (bytes, 4 ASCII), or None."""
        for t, _, payload in self.chunks:
            if t == tag:
                return payload
        return None

    def set_chunk(self, tag, payload):
        """Replace chunk `tag` (or append it before END); None removes it."""
        for i, c in enumerate(self.chunks):
            if c[0] == tag:
                if payload is None:
                    del self.chunks[i]
                else:
                    c[2] = bytes(payload)
                return
        if payload is not None:
            self.chunks.append([tag, 0, bytes(payload)])

    def arch_bytes(self):
        return _ARCH.pack(*(self.arch[name] for name, _ in ARCH_FIELDS)) + self.arch_tail

    def weight_bytes(self):
        want = shapes(self.arch, self.dram, self.loc_dims(), self.conv)
        names = self.tensor_names()
        head = struct.pack("<I", len(names)) + b"".join(
            struct.pack("<II", *want[name]) for name in names)
        return head + b"".join(self.tensors[name].astype("<f4").tobytes() for name in names)

    def to_bytes(self):
        self.check()
        out = [MAGIC, struct.pack("<II", VERSION, self.kind)]
        for tag, reserved, payload in self.chunks:
            if tag == b"ARCH":
                payload = self.arch_bytes()
            elif tag == b"WGHT":
                payload = self.weight_bytes()
            out.append(_CHUNK.pack(tag, reserved, len(payload)))
            out.append(payload)
        body = b"".join(out)
        crc = zlib.crc32(body) & 0xFFFFFFFF
        return body + _CHUNK.pack(b"END ", 0, 4) + struct.pack("<I", crc)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())


def parse(data, name="model file"):
    """A ModelFile from the bytes of a whole file; FileFormatError if they
    are not a libram model file of format version 1 or are damaged."""
    data = bytes(data)
    if len(data) < 16 or data[:8] != MAGIC:
        raise FileFormatError("%s: not a libram model file (no \\x89RAM magic)" % name)
    version, kind = struct.unpack_from("<II", data, 8)
    if version != VERSION:
        raise FileFormatError("%s: format version %d, this reader knows %d"
                              % (name, version, VERSION))
    chunks, pos, end = [], 16, None
    while pos < len(data):
        if pos + _CHUNK.size > len(data):
            raise FileFormatError("%s: truncated chunk header at byte %d" % (name, pos))
        tag, reserved, length = _CHUNK.unpack_from(data, pos)
        start = pos + _CHUNK.size
        if length > len(data) - start:
            raise FileFormatError("%s: chunk %r runs past the end of the file" % (name, tag))
        if tag == b"END ":
            end = pos
            if length != 4 or start + 4 != len(data):
                raise FileFormatError("%s: the END chunk does not close the file" % name)
            (crc,) = struct.unpack_from("<I", data, start)
            if zlib.crc32(data[:pos]) & 0xFFFFFFFF != crc:
                raise FileFormatError("%s: CRC mismatch (damaged file)" % name)
            break
        chunks.append([tag, reserved, data[start:start + length]])
        pos = start + length
    if end is None:
        raise FileFormatError("%s: truncated (no END chunk)" % name)
    tags = [c[0] for c in chunks]
    for need in (b"ARCH", b"WGHT"):
        if need not in tags:
            raise FileFormatError("%s: no %s chunk" % (name, need.decode()))
    arch_payload = chunks[tags.index(b"ARCH")][2]
    if len(arch_payload) < _ARCH.size:
        raise FileFormatError("%s: ARCH chunk of %d bytes, %d expected"
                              % (name, len(arch_payload), _ARCH.size))
    arch = dict(zip((n for n, _ in ARCH_FIELDS), _ARCH.unpack_from(arch_payload)))
    arch_tail = arch_payload[_ARCH.size:]
    dram = None
    if b"DRAM" in tags:
        payload = chunks[tags.index(b"DRAM")][2]
        if len(payload) != _DRAM.size:
            raise FileFormatError("%s: DRAM chunk of %d bytes, %d expected"
                                  % (name, len(payload), _DRAM.size))
        dram = dict(zip(DRAM_FIELDS, _DRAM.unpack(payload)))
    conv = None
    if b"CONV" in tags:
        conv = conv_fields(chunks[tags.index(b"CONV")][2], name)
        if not (conv["kernel"] >= 1 and conv["stride"] >= 1 and conv["kernel"] <= arch["patch"]):
            raise FileFormatError("%s: CONV chunk with filters of %d at stride %d on a patch of %d"
                                  % (name, conv["kernel"], conv["stride"], arch["patch"]))
    names = _names(dram is not None, conv is not None)
    w = chunks[tags.index(b"WGHT")][2]
    if len(w) < 4 or struct.unpack_from("<I", w)[0] != len(names):
        raise FileFormatError("%s: WGHT chunk does not hold %d tensors%s"
                              % (name, len(names), " (a model with a convolutional layer)"
                                 if conv is not None else "" if dram is None
                                 else " (a DRAM model)"))
    table = 4 + 8 * len(names)
    if len(w) < table:
        raise FileFormatError("%s: WGHT chunk truncated in its tensor table" % name)
    dims = [struct.unpack_from("<II", w, 4 + 8 * i) for i in range(len(names))]
    want = shapes(arch, dram, 3 if b"ZOOM" in tags else 2, conv)
    for tname, got in zip(names, dims):
        if tuple(got) != want[tname]:
            raise FileFormatError("%s: tensor %s is %dx%d, the architecture implies %dx%d"
                                  % (name, tname, got[0], got[1], *want[tname]))
    count = sum(r * c for r, c in dims)
    if len(w) != table + 4 * count:
        raise FileFormatError("%s: WGHT chunk holds %d bytes of weights, %d expected"
                              % (name, len(w) - table, 4 * count))
    flat = np.frombuffer(w, dtype="<f4", count=count, offset=table).astype(np.float32)
    tensors, at = {}, 0
    for tname, (r, c) in zip(names, dims):
        tensors[tname] = flat[at:at + r * c].reshape(r, c)
        at += r * c
    for c in chunks:
        if c[0] in (b"ARCH", b"WGHT"):
            c[2] = None
    return ModelFile(arch, tensors, chunks, arch_tail, kind)


def read(path):
    """parse() of the file at `path`."""
    with open(path, "rb") as f:
        return parse(f.read(), str(path))
