"""Tests of the ctypes binding python/ram.py.  Standard library only.

Run with RAM_LIBRARY pointing at the libram to test (CTest does), e.g.
    RAM_LIBRARY=build/libram.so.0 python3 tests/python/test_binding.py
Writes only inside a temporary directory.
"""

import ctypes
import math
import os
import random
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                os.pardir, "python"))
import ram  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None

# A small model keeps the test fast; every field differs from its default so
# a misdeclared struct field cannot go unnoticed.
SMALL = dict(channels=1, height=12, width=14, patch=4, depth=2, scale=1.5, form="concat",
             glimpse_hidden=9, loc_hidden=7, glimpse_out=11, core_hidden=13, core="lstm",
             glimpses=3, classes=5, bound="hardtanh", loc_std=0.25, loc_range_pixels=5.5,
             init_scale=0.2, seed=12345678901)


def images(n, pixels, seed=1):
    rng = random.Random(seed)
    return [rng.random() for _ in range(n * pixels)]


class TestVersion(unittest.TestCase):
    def test_major_matches(self):
        major, minor, patch = ram.version()
        self.assertEqual(major, ram.VERSION_MAJOR)
        self.assertEqual(ram.version_string(), "%d.%d.%d" % (major, minor, patch))

    def test_other_major_is_refused(self):
        ram._check_version(ram.VERSION_MAJOR * 10000 + 99)
        with self.assertRaises(ram.RamError) as cm:
            ram._check_version((ram.VERSION_MAJOR + 1) * 10000)
        self.assertEqual(cm.exception.status, ram.ERR_VERSION)

    def test_struct_size_is_ctypes_size(self):
        for cls, init in ((ram.GlimpseParams, ram.ram_glimpse_params_init),
                          (ram.ModelParams, ram.ram_model_params_init),
                          (ram.PolicyParams, ram.ram_policy_params_init),
                          (ram.TrainerParams, ram.ram_trainer_params_init)):
            p = ram._defaults(cls, init)
            self.assertEqual(p.struct_size, ctypes.sizeof(cls))
            self.assertEqual(cls._fields_[0][0], "struct_size")
        # ram.h's documented defaults arrive in the right fields.
        p = ram._defaults(ram.ModelParams, ram.ram_model_params_init)
        self.assertEqual((p.channels, p.height, p.width, p.glimpses, p.classes), (1, 28, 28, 6, 10))
        self.assertEqual((p.glimpse.patch, p.glimpse.depth, p.glimpse.scale), (8, 1, 2.0))
        self.assertEqual(p.seed, 1)
        t = ram._defaults(ram.TrainerParams, ram.ram_trainer_params_init)
        self.assertEqual((t.max_batch, t.threads), (128, 1))
        self.assertAlmostEqual(t.beta2, 0.999, places=6)


class TestModel(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.model = ram.Model.create(**SMALL)
        self.addCleanup(self.model.close)
        c, h, w = self.model.image_shape
        self.pixels = c * h * w

    def test_params_round_trip(self):
        p = self.model.params
        for key, value in SMALL.items():
            got = p["glimpse"][key] if key in ("patch", "depth", "scale") else p[key]
            if isinstance(value, float):
                self.assertAlmostEqual(got, value, places=6, msg=key)
            else:
                self.assertEqual(got, value, key)
        again = ram.Model.create(**p)
        self.assertEqual(again.params, p)
        self.assertEqual(again.param_count, self.model.param_count)
        again.close()

    def test_param_count(self):
        self.assertGreater(self.model.param_count, 0)
        default = ram.Model.create()
        self.assertGreater(default.param_count, 200000)  # the paper's model: ~209k
        default.close()

    def test_save_load_classify_equal(self):
        n = 7
        x = images(n, self.pixels)
        labels, probs, locs = self.model.classify(x, n)
        self.assertEqual(len(labels), n)
        self.assertEqual(len(probs), n)
        self.assertEqual(len(locs), n)
        for i in range(n):
            self.assertEqual(len(probs[i]), SMALL["classes"])
            self.assertAlmostEqual(sum(probs[i]), 1.0, places=5)
            self.assertEqual(labels[i], max(range(SMALL["classes"]), key=probs[i].__getitem__))
            self.assertEqual(len(locs[i]), SMALL["glimpses"])
            for lx, ly in locs[i]:
                self.assertTrue(-1.0 <= lx <= 1.0 and -1.0 <= ly <= 1.0)

        path = os.path.join(self.tmp.name, "small.ram")
        self.model.save(path)
        loaded = ram.Model.load(path)
        self.addCleanup(loaded.close)
        self.assertEqual(loaded.params, self.model.params)
        self.assertEqual(loaded.param_count, self.model.param_count)
        # Bit-identical weights give bit-identical outputs.
        self.assertEqual(loaded.classify(x, n), (labels, probs, locs))
        # n defaults to what the length implies; a single image works too.
        self.assertEqual(loaded.classify(x), (labels, probs, locs))
        one = loaded.classify(x[:self.pixels])
        self.assertEqual(one, ([labels[0]], [probs[0]], [locs[0]]))

    def test_sources(self):
        n = 4
        x = images(n, self.pixels, seed=2)
        a = self.model.classify(x, n, source="sampled", seed=5)
        b = self.model.classify(x, n, source="sampled", seed=5)
        self.assertEqual(a, b)  # same seed, same samples
        centre = self.model.classify(x, n, source="center")
        for row in centre[2]:
            self.assertEqual(row, [(0.0, 0.0)] * SMALL["glimpses"])
        with self.assertRaises(ValueError):
            self.model.classify(x, n, source="nowhere")

    def test_wrong_n_raises(self):
        x = images(3, self.pixels)
        for n in (2, 4, 1000):  # lengths that do not match: caught before libram reads
            with self.assertRaises(ram.RamError) as cm:
                self.model.classify(x, n)
            self.assertEqual(cm.exception.status, ram.ERR_INVALID_ARGUMENT)
            self.assertIn("need", cm.exception.message)
        for n in (0, -1):  # refused by libram itself, with its message
            with self.assertRaises(ram.RamError) as cm:
                self.model.classify(x, n)
            self.assertEqual(cm.exception.status, ram.ERR_INVALID_ARGUMENT)
            self.assertTrue(cm.exception.message)
        with self.assertRaises(ram.RamError):
            self.model.classify(x[:-1])  # not a whole number of images
        with self.assertRaises(ram.RamError):
            self.model.classify([])
        with self.assertRaises(TypeError):
            self.model.classify(["a"] * self.pixels, 1)
        with self.assertRaises(TypeError):
            self.model.classify(x, 3.0)

    def test_nan_pixel_raises_numeric(self):
        # Every pixel of image 0: libram only inspects pixels a glimpse reads.
        x = images(2, self.pixels)
        x[:self.pixels] = [math.nan] * self.pixels
        with self.assertRaises(ram.RamError) as cm:
            self.model.classify(x, 2)
        self.assertEqual(cm.exception.status, ram.ERR_NUMERIC)

    def test_bad_create_raises(self):
        with self.assertRaises(ram.RamError) as cm:
            ram.Model.create(glimpses=0)
        self.assertEqual(cm.exception.name, "invalid argument")
        self.assertIn("glimpses", cm.exception.message)
        with self.assertRaises(TypeError):
            ram.Model.create(no_such_field=1)
        with self.assertRaises(ValueError):
            ram.Model.create(core="gru")

    def test_closed_model(self):
        m = ram.Model.create(**SMALL)
        m.close()
        m.close()  # idempotent
        with self.assertRaises(ValueError):
            m.classify(images(1, self.pixels), 1)


class TestLoadErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_missing_file(self):
        path = os.path.join(self.tmp.name, "missing.ram")
        with self.assertRaises(ram.RamError) as cm:
            ram.Model.load(path)
        e = cm.exception
        self.assertEqual(e.status, ram.ERR_IO)
        self.assertIn("missing.ram", e.message)
        self.assertIn(e.name, str(e))

    def test_not_a_model(self):
        path = os.path.join(self.tmp.name, "junk.ram")
        with open(path, "wb") as f:
            f.write(b"this is not a libram model file\n" * 4)
        with self.assertRaises(ram.RamError) as cm:
            ram.Model.load(path)
        self.assertEqual(cm.exception.status, ram.ERR_FORMAT)
        self.assertTrue(cm.exception.message)

    def test_truncated(self):
        path = os.path.join(self.tmp.name, "cut.ram")
        m = ram.Model.create(**SMALL)
        m.save(path)
        m.close()
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) // 2])
        with self.assertRaises(ram.RamError) as cm:
            ram.Model.load(path)
        self.assertEqual(cm.exception.status, ram.ERR_CORRUPT)

    def test_save_to_missing_directory(self):
        m = ram.Model.create(**SMALL)
        self.addCleanup(m.close)
        with self.assertRaises(ram.RamError) as cm:
            m.save(os.path.join(self.tmp.name, "no", "such", "dir.ram"))
        self.assertEqual(cm.exception.status, ram.ERR_IO)


class TestGlimpse(unittest.TestCase):
    def test_centre_patch(self):
        g = ram.Glimpse(patch=2, depth=1, scale=2.0)
        self.addCleanup(g.close)
        self.assertEqual(g.size(1), 4)
        img = [float(i + 1) for i in range(16)]  # 4 x 4, value = row * 4 + col + 1
        # (0, 0) is the image centre: the 2 x 2 square over rows and columns 1..2.
        out = g.extract(img, [(0.0, 0.0)], shape=(1, 1, 4, 4))
        self.assertEqual(out, [[6.0, 7.0, 10.0, 11.0]])
        # Top-left corner (flat locations): one pixel inside, the rest reads zeros.
        out = g.extract(img, [-1.0, -1.0], shape=(1, 1, 4, 4))
        self.assertEqual(out, [[0.0, 0.0, 0.0, 1.0]])

    def test_two_scales(self):
        g = ram.Glimpse(patch=1, depth=2, scale=2.0)
        self.addCleanup(g.close)
        img = [1.0] * 16
        out = g.extract(img, [(0.0, 0.0)], shape=(1, 1, 4, 4))
        self.assertEqual(out, [[1.0, 1.0]])

    def test_errors(self):
        with self.assertRaises(ram.RamError):
            ram.Glimpse(patch=0)
        g = ram.Glimpse(patch=2)
        self.addCleanup(g.close)
        img = [0.0] * 16
        with self.assertRaises(ram.RamError):
            g.extract(img, [(0.0, 0.0)], shape=(2, 1, 4, 4))  # too few pixels
        with self.assertRaises(ram.RamError):
            g.extract(img, [(0.0, 0.0), (0.0, 0.0)], shape=(1, 1, 4, 4))  # too many locations
        with self.assertRaises(ram.RamError) as cm:
            g.extract(img, [(math.nan, 0.0)], shape=(1, 1, 4, 4))
        self.assertEqual(cm.exception.status, ram.ERR_NUMERIC)
        with self.assertRaises(ram.RamError):
            g.extract(img, [], shape=(0, 1, 4, 4))  # libram refuses n = 0
        with self.assertRaises(TypeError):
            g.extract(img, [(0.0, 0.0)])  # a flat list needs its shape


@unittest.skipIf(numpy is None, "numpy is not installed")
class TestNumpy(unittest.TestCase):
    def test_classify_matches_lists(self):
        m = ram.Model.create(**SMALL)
        self.addCleanup(m.close)
        c, h, w = m.image_shape
        x = images(5, c * h * w, seed=3)
        labels, probs, locs = m.classify(x, 5)
        arr = numpy.array(x, dtype=numpy.float64).reshape(5, c, h, w)  # converted to float32
        nl, np_, nx = m.classify(arr)
        self.assertEqual(nl.tolist(), labels)
        self.assertEqual(np_.shape, (5, SMALL["classes"]))
        self.assertEqual(nx.shape, (5, SMALL["glimpses"], 2))
        self.assertEqual(np_.tolist(), [[float(v) for v in row] for row in probs])
        self.assertEqual(nx.tolist(), [[list(p) for p in row] for row in locs])
        with self.assertRaises(ram.RamError):
            m.classify(arr, 4)

    def test_glimpse(self):
        g = ram.Glimpse(patch=2)
        self.addCleanup(g.close)
        img = numpy.arange(32, dtype=numpy.float32).reshape(2, 4, 4)
        out = g.extract(img, numpy.zeros((2, 2)))
        self.assertEqual(out.shape, (2, 1, 1, 2, 2))
        self.assertEqual(out[1].ravel().tolist(), [21.0, 22.0, 25.0, 26.0])


if __name__ == "__main__":
    unittest.main()
