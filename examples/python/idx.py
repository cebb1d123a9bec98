"""Read MNIST's IDX files for the libram examples, with NumPy when it is
importable and with the standard library otherwise.

Pixels become float32 byte / 255, exactly as ram-eval and ram-train
(tools/common/idx.c) convert them, so a model scores the same here as there.
Files may be gzip-compressed, as downloaded.
"""

import array
import gzip
import os
import struct

try:
    import numpy
except ImportError:
    numpy = None

IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dimension

# float32(b / 255.0) equals the float32 division C does for every byte value,
# so the table reproduces ram-eval's pixels bit for bit.
_PIXEL = array.array("f", [b / 255.0 for b in range(256)])


def read_idx(path, magic):
    """(dims, payload bytes) of an unsigned-byte IDX file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    ndims = magic & 0xFF
    header = 4 + 4 * ndims
    if len(data) < header or struct.unpack(">I", data[:4])[0] != magic:
        raise ValueError("%s: not an IDX file of magic 0x%08x" % (path, magic))
    dims = struct.unpack(">%dI" % ndims, data[4:header])
    count = 1
    for d in dims:
        count *= d
    if len(data) != header + count:
        raise ValueError("%s: header promises %d bytes, file has %d"
                         % (path, header + count, len(data)))
    return dims, data[header:]


def load_images(path):
    """(pixels, n, height, width): pixels as a float32 NumPy array of shape
    (n, 1, height, width), or a flat array.array("f") without NumPy."""
    (n, height, width), payload = read_idx(path, IMAGES_MAGIC)
    if numpy is not None:
        pixels = numpy.frombuffer(payload, dtype=numpy.uint8).astype(numpy.float32)
        pixels /= numpy.float32(255)
        return pixels.reshape(n, 1, height, width), n, height, width
    return array.array("f", [_PIXEL[b] for b in payload]), n, height, width


def load_labels(path):
    """Labels as a NumPy int array, or an array.array("i") without NumPy."""
    (n,), payload = read_idx(path, LABELS_MAGIC)
    if numpy is not None:
        return numpy.frombuffer(payload, dtype=numpy.uint8).astype(numpy.intc)
    return array.array("i", list(payload))  # from bytes, array() would copy raw memory


def load_split(directory, split):
    """The images and labels of `split` ("train" or "t10k") in `directory`:
    (pixels, labels, (n, height, width))."""
    def find(name):
        path = os.path.join(directory, name)
        if not os.path.exists(path) and os.path.exists(path + ".gz"):
            return path + ".gz"
        return path
    pixels, n, height, width = load_images(find("%s-images-idx3-ubyte" % split))
    labels = load_labels(find("%s-labels-idx1-ubyte" % split))
    if len(labels) != n:
        raise ValueError("%s: %d images but %d labels" % (directory, n, len(labels)))
    return pixels, labels, (n, height, width)


def take(pixels, image_size, index):
    """The images at the positions `index`, in that order, as one batch."""
    if numpy is not None:
        return pixels[numpy.asarray(index)]
    out = array.array("f")
    for i in index:
        out.extend(pixels[i * image_size:(i + 1) * image_size])
    return out
