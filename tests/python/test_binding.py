"""Tests of the ctypes binding python/ram.py.  Standard library only.

Run with RAM_LIBRARY pointing at the libram to test (CTest does), e.g.
    RAM_LIBRARY=build/libram.so.0 python3 tests/python/test_binding.py
Writes only inside a temporary directory.
"""

import ctypes
import gc
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


# A tiny trainable model for 12 x 12 images; glimpses at +-1 reach the edges.
TINY = dict(height=12, width=12, patch=4, glimpse_hidden=16, loc_hidden=16, glimpse_out=16,
            core_hidden=16, glimpses=3, classes=3, loc_range_pixels=0.0)
TINY_PIXELS = 12 * 12


def thirds(n, seed):
    """n 12 x 12 images whose class is the bright third (columns 0-3, 4-7 or
    8-11), with noise everywhere.  Returns (flat pixels, labels)."""
    rng = random.Random(seed)
    pixels, labels = [], []
    for _ in range(n):
        k = rng.randrange(3)
        labels.append(k)
        for _row in range(12):
            for col in range(12):
                pixels.append((0.8 if col // 4 == k else 0.0) + 0.2 * rng.random())
    return pixels, labels


def batch(pixels, labels, index):
    """The images and labels at the positions `index`."""
    out = []
    for i in index:
        out.extend(pixels[i * TINY_PIXELS:(i + 1) * TINY_PIXELS])
    return out, [labels[i] for i in index]


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
        self.assertEqual((t.optimizer, t.decay_steps, t.lr_final),
                         (ram.OPTIMIZERS["adam"], 0, t.lr))
        p = ram._defaults(ram.PolicyParams, ram.ram_policy_params_init)
        self.assertEqual((p.std, p.baseline, p.hidden, p.steps, p.reward_scale, p.discount,
                          p.detach_core, p.seed), (0.0, 0, 0, 0, 1.0, 1.0, 1, 1))
        self.assertEqual(ctypes.sizeof(ram.TrainStats), 9 * ctypes.sizeof(ctypes.c_float))


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


class TestTraining(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def make(self, model_seed=1, policy_seed=1, **trainer):
        """A fresh TINY model, policy and trainer, closed after the test."""
        model = ram.Model.create(seed=model_seed, **TINY)
        policy = ram.Policy(model, std=0.2, seed=policy_seed)
        trainer = ram.Trainer(model, policy, **dict(dict(lr=3e-3, max_batch=32), **trainer))
        for obj in (model, policy, trainer):  # cleanups run last-in first-out
            self.addCleanup(obj.close)
        return model, policy, trainer

    def test_learns_thirds(self):
        train_x, train_y = thirds(576, seed=1)
        test_x, test_y = thirds(300, seed=2)
        # Chance: the error of always answering the most frequent class.
        chance = 1.0 - max(test_y.count(k) for k in range(3)) / len(test_y)
        self.assertGreater(chance, 0.6)
        model, policy, trainer = self.make()
        before = trainer.evaluate(test_x, test_y)
        self.assertGreater(before, chance / 2)  # untrained: not already solved
        stats = None
        for step in range(200):
            if step % 18 == 0:
                order = trainer.shuffle(576)
            i = step % 18 * 32
            stats = trainer.train_batch(*batch(train_x, train_y, order[i:i + 32]))
        self.assertEqual(trainer.steps, 200)
        self.assertEqual(sorted(stats), sorted(f for f, _ in ram.TrainStats._fields_))
        for key, value in stats.items():
            self.assertTrue(math.isfinite(value), key)
        self.assertAlmostEqual(stats["lr"], 3e-3, places=7)
        self.assertAlmostEqual(stats["loss"],
                               stats["nll"] + stats["baseline_mse"] + stats["reinforce"], places=5)
        after = trainer.evaluate(test_x, test_y)
        self.assertLess(after, chance / 4, "error %.3f, chance %.3f" % (after, chance))
        # evaluate() agrees with classify() (both use mean locations).
        labels, _, _ = model.classify(test_x)
        wrong = sum(a != b for a, b in zip(labels, test_y)) / len(test_y)
        self.assertAlmostEqual(after, wrong, places=12)

    def test_checkpoint_resumes_exactly(self):
        data_x, data_y = thirds(64, seed=3)
        probe = data_x[:8 * TINY_PIXELS]
        user = bytes(range(256)) * 40  # longer than load_checkpoint's first buffer

        def steps(trainer, count):
            stats = []
            for _ in range(count):
                order = trainer.shuffle(64)[:16]  # the trainer's RNG is checkpointed too
                stats.append(trainer.train_batch(*batch(data_x, data_y, order)))
            return stats

        model, _, trainer = self.make()
        whole = steps(trainer, 10)
        expected = model.classify(probe)

        path = os.path.join(self.tmp.name, "run.ckpt")
        model, policy, trainer = self.make()
        first = steps(trainer, 5)
        self.assertEqual(first, whole[:5])
        trainer.save_checkpoint(path, user)
        trainer.close()
        policy.close()
        model.close()

        # Other seeds: weights and every RNG must come from the checkpoint.
        model, _, trainer = self.make(model_seed=99, policy_seed=98)
        self.assertNotEqual(model.classify(probe), expected)
        self.assertEqual(trainer.load_checkpoint(path), user)
        self.assertEqual(trainer.steps, 5)
        self.assertEqual(steps(trainer, 5), whole[5:])
        self.assertEqual(trainer.steps, 10)
        self.assertEqual(model.classify(probe), expected)  # bit-identical probabilities

        # Short and empty user data; a checkpoint is also a model file.
        trainer.save_checkpoint(path, b"epoch 3")
        self.assertEqual(trainer.load_checkpoint(path), b"epoch 3")
        trainer.save_checkpoint(path)
        self.assertEqual(trainer.load_checkpoint(path), b"")
        with ram.Model.load(path) as loaded:
            self.assertEqual(loaded.classify(probe), expected)

    def test_lr_schedule(self):
        x, y = thirds(4, seed=4)
        _, _, trainer = self.make(lr=0.01, decay_steps=5)  # lr_final defaults to lr
        self.assertAlmostEqual(trainer.train_batch(x, y)["lr"], 0.01, places=7)
        _, _, trainer = self.make(optimizer="sgd", lr=0.01, lr_final=0.0, decay_steps=2,
                                  momentum=0.5, nesterov=True)
        lrs = [trainer.train_batch(x, y)["lr"] for _ in range(3)]
        self.assertEqual([round(v, 7) for v in lrs], [0.01, 0.005, 0.0])

    def test_bad_labels_and_lengths(self):
        _, _, trainer = self.make()
        x, y = thirds(4, seed=5)
        for bad in (3, -1):  # out of [0, classes): refused by libram
            for call in (trainer.train_batch, trainer.evaluate):
                with self.assertRaises(ram.RamError) as cm:
                    call(x, y[:3] + [bad])
                self.assertEqual(cm.exception.status, ram.ERR_INVALID_ARGUMENT)
                self.assertIn("label", cm.exception.message)
        for xs, ys in ((x, y[:3]), (x, y + [0]), (x[:-1], y), (x + [0.0], y), ([], y), (x, [])):
            for call in (trainer.train_batch, trainer.evaluate):  # caught in Python
                with self.assertRaises(ram.RamError) as cm:
                    call(xs, ys)
                self.assertEqual(cm.exception.status, ram.ERR_INVALID_ARGUMENT)
                self.assertIn("need", cm.exception.message)
        for call in (trainer.train_batch, trainer.evaluate):
            with self.assertRaises(ram.RamError) as cm:  # n = 0: libram's own message
                call([], [])
            self.assertIn("n = 0", cm.exception.message)
        big_x, big_y = thirds(33, seed=6)  # more than max_batch = 32
        with self.assertRaises(ram.RamError) as cm:
            trainer.train_batch(big_x, big_y)
        self.assertEqual(cm.exception.status, ram.ERR_INVALID_ARGUMENT)
        self.assertLess(trainer.evaluate(big_x, big_y), 1.01)  # evaluate splits batches
        with self.assertRaises(TypeError):
            trainer.train_batch(x, [0.5, 1.0, 2.0, 0.0])
        with self.assertRaises(TypeError):
            trainer.train_batch(x, "abcd")
        with self.assertRaises(ram.RamError):
            trainer.train_batch(x, [0, 1, 2, 2 ** 40])
        nan = list(x)
        nan[5] = math.nan
        with self.assertRaises(ram.RamError) as cm:
            trainer.train_batch(nan, y)
        self.assertEqual(cm.exception.status, ram.ERR_NUMERIC)
        self.assertEqual(trainer.steps, 0)  # no failed call took a step
        self.assertEqual(trainer.shuffle(0), [])
        self.assertEqual(sorted(trainer.shuffle(7)), list(range(7)))
        with self.assertRaises(ram.RamError):
            trainer.shuffle(-1)

    def test_bad_params(self):
        model = ram.Model.create(**TINY)
        self.addCleanup(model.close)
        with self.assertRaises(ValueError):
            ram.Policy(model, baseline="huge")
        with self.assertRaises(TypeError):
            ram.Policy(model, no_such_field=1)
        with self.assertRaises(ram.RamError) as cm:  # no model to take std/hidden/steps from
            ram.Policy(None)
        self.assertEqual(cm.exception.status, ram.ERR_INVALID_ARGUMENT)
        with self.assertRaises(ram.RamError):
            ram.Policy(model, discount=2.0)
        with ram.Policy(None, std=0.1, hidden=16, steps=3, baseline="scalar") as free:
            ram.Trainer(model, free).close()  # a model-less policy that fits the model
        with ram.Policy(model, steps=5) as wrong, self.assertRaises(ram.RamError) as cm:
            ram.Trainer(model, wrong)  # steps differ from the model's glimpses
        self.assertIn("steps", cm.exception.message)
        with ram.Policy(model, baseline=ram.BASELINE_TYPES["none"]) as policy:
            with self.assertRaises(ValueError):
                ram.Trainer(model, policy, optimizer="rmsprop")
            with self.assertRaises(TypeError):
                ram.Trainer(model, policy, learning_rate=0.1)
            with self.assertRaises(TypeError):
                ram.Trainer(model, policy, max_batch=1.5)
            with self.assertRaises(ram.RamError):
                ram.Trainer(model, policy, max_batch=2 ** 40)  # would wrap in ctypes
            with self.assertRaises(ram.RamError):
                ram.Trainer(model, policy, lr=-1.0)
            with self.assertRaises(TypeError):
                ram.Trainer(policy, model)
            with ram.Trainer(model, policy) as trainer, self.assertRaises(TypeError):
                trainer.save_checkpoint(os.path.join(self.tmp.name, "c"), "text")

    def test_load_checkpoint_errors(self):
        model, _, trainer = self.make()
        x, y = thirds(4, seed=7)
        trainer.train_batch(x, y)
        path = os.path.join(self.tmp.name, "a.ckpt")
        trainer.save_checkpoint(path, b"keep")
        with self.assertRaises(ram.RamError) as cm:
            trainer.load_checkpoint(os.path.join(self.tmp.name, "missing.ckpt"))
        self.assertEqual(cm.exception.status, ram.ERR_IO)
        plain = os.path.join(self.tmp.name, "plain.ram")
        model.save(plain)
        with self.assertRaises(ram.RamError) as cm:
            trainer.load_checkpoint(plain)
        self.assertEqual(cm.exception.status, ram.ERR_FORMAT)
        other = ram.Model.create(**dict(TINY, core_hidden=8))
        self.addCleanup(other.close)
        with ram.Policy(other) as policy, ram.Trainer(other, policy) as wrong:
            with self.assertRaises(ram.RamError) as cm:
                wrong.load_checkpoint(path)
            self.assertEqual(cm.exception.status, ram.ERR_MISMATCH)
            self.assertEqual(wrong.steps, 0)
        with ram.Policy(model, baseline="scalar") as policy, ram.Trainer(model, policy) as wrong:
            with self.assertRaises(ram.RamError) as cm:
                wrong.load_checkpoint(path)
            self.assertEqual(cm.exception.status, ram.ERR_MISMATCH)
        self.assertEqual(trainer.load_checkpoint(path), b"keep")
        self.assertEqual(trainer.steps, 1)

    def test_lifetimes(self):
        x, y = thirds(4, seed=8)
        # The trainer alone keeps the borrowed model and policy alive.
        model = ram.Model.create(**TINY)
        trainer = ram.Trainer(model, ram.Policy(model))
        del model
        gc.collect()
        trainer.train_batch(x, y)
        self.assertIsInstance(trainer.model, ram.Model)
        self.assertEqual(len(trainer.model.classify(x)[0]), 4)
        trainer.close()
        trainer.close()  # idempotent
        with self.assertRaises(ValueError):
            trainer.train_batch(x, y)
        with self.assertRaises(ValueError):
            trainer.steps
        # Closing the model or the policy closes its trainers first.
        for owner in ("model", "policy"):
            model, policy, trainer = self.make()
            getattr(trainer, owner).close()
            with self.assertRaises(ValueError):
                trainer.evaluate(x, y)
            self.assertEqual(len(model._trainers) + len(policy._trainers), 0)
        with ram.Model.create(**TINY) as model, ram.Policy(model) as policy:
            with ram.Trainer(model, policy) as trainer:
                trainer.train_batch(x, y)
            policy.seed(7)
            with self.assertRaises(ValueError):
                trainer.shuffle(3)


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

    def test_training_matches_lists(self):
        x, y = thirds(16, seed=9)
        results = []
        for as_numpy in (False, True):
            with ram.Model.create(**TINY) as model, ram.Policy(model) as policy, \
                    ram.Trainer(model, policy, max_batch=16) as trainer:
                xs, ys = x, y
                if as_numpy:  # float64 and int64 are converted
                    xs = numpy.array(x, dtype=numpy.float64).reshape(16, 1, 12, 12)
                    ys = numpy.array(y, dtype=numpy.int64)
                stats = [trainer.train_batch(xs, ys) for _ in range(3)]
                results.append((stats, trainer.evaluate(xs, ys), trainer.shuffle(5)))
                if as_numpy:
                    with self.assertRaises(TypeError):
                        trainer.train_batch(xs, ys.astype(numpy.float32))
                    with self.assertRaises(ram.RamError):
                        trainer.train_batch(xs[:15], ys)
        self.assertEqual(results[0], results[1])


if __name__ == "__main__":
    unittest.main()
