"""The PyTorch bridge (libram.torch, libram.kevinzakka, ram-convert): files
converted to PyTorch and back are the same bytes, the module classifies as
libram does, what libram cannot represent is refused.  Skipped without
PyTorch.  Needs no MNIST: the images are synthetic; the committed models'
agreement on the 10,000 test images is a figure in docs/python.md."""

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

try:
    import torch
except ImportError:
    pytest.skip("PyTorch is not installed: the PyTorch bridge is not tested",
                allow_module_level=True)

import libram
import libram.kevinzakka as kz
import libram.torch as lt
from libram import modelfile

from conftest import PYTHON_DIR
from test_examples import random_digits, run_example, write_idx

MODELS = os.path.join(os.path.dirname(PYTHON_DIR), "models")
TOL = 1e-4


def strokes(n, c, h, w, seed):
    """Images with a few bright bars on a dark ground, some touching the
    border: glimpses move, and some read outside the image."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, c, h, w), np.float32)
    for i in range(n):
        for _ in range(3):
            r, q = rng.integers(0, h), rng.integers(0, w)
            x[i, :, max(0, r - 2):r + 2, q:q + w // 3] = rng.uniform(0.3, 1.0)
            x[i, :, r:r + h // 3, max(0, q - 1):q + 2] = rng.uniform(0.3, 1.0)
    return x


def agree(model, net, images):
    """libram's and the module's mean-location classification: labels equal,
    probabilities within TOL, the same glimpse locations."""
    lab, prob, locs = model.classify(images)
    with torch.no_grad():
        out = net(torch.from_numpy(images))
    p = out.log_probs.exp().numpy()
    np.testing.assert_array_equal(p.argmax(1), np.asarray(lab))
    assert np.abs(p - np.asarray(prob)).max() <= TOL
    where = (out.locations * net.loc_scale).numpy().transpose(1, 0, 2)
    np.testing.assert_allclose(where.reshape(np.asarray(locs).shape), np.asarray(locs),
                               atol=1e-5)
    return p


def round_trip(data):
    """The bytes of `data` -> to_torch -> torch.save/load of the state dict
    -> model_file."""
    buf = io.BytesIO()
    torch.save(lt.to_torch(data).state_dict(), buf)
    buf.seek(0)
    return lt.model_file(torch.load(buf)).to_bytes()


@pytest.mark.parametrize("name", ["mnist.ram", "translated60.ram", "cluttered100.ram"])
def test_committed_model_round_trip_and_agreement(name, tmp_path):
    path = os.path.join(MODELS, name)
    original = open(path, "rb").read()
    assert round_trip(original) == original
    rebuilt = lt.RAM.from_state_dict(lt.to_torch(original).state_dict())
    assert lt.model_file(rebuilt).to_bytes() == original
    model = libram.Model.load(path)
    net = lt.to_torch(model)
    back = tmp_path / "back.ram"
    lt.from_torch(net).save(str(back))  # through libram's own writer too
    assert back.read_bytes() == original
    c, h, w = model.image_shape
    agree(model, net, strokes(64, c, h, w, seed=len(name)))


def test_mnist_test_set_agrees():
    """models/mnist.ram and its module on all 10,000 MNIST test images, when
    RAM_MNIST_DIR holds them (CTest passes the build's)."""
    d = os.environ.get("RAM_MNIST_DIR", "")
    images = os.path.join(d, "t10k-images-idx3-ubyte")
    if not d or not os.path.exists(images):
        pytest.skip("no MNIST test set in RAM_MNIST_DIR: the synthetic images above stand in")
    from libram import datasets
    x, y = datasets.load_idx(images, os.path.join(d, "t10k-labels-idx1-ubyte"))
    x = np.asarray(x, np.float32)[:, None] / 255.0
    model = libram.Model.load(os.path.join(MODELS, "mnist.ram"))
    p = agree(model, lt.to_torch(model), x)
    assert (p.argmax(1) != np.asarray(y)).sum() == 80  # ram-eval's 0.80 %


def random_model(seed, **params):
    p = dict(height=14, width=18, patch=4, glimpse_hidden=12, loc_hidden=10, glimpse_out=16,
             core_hidden=20, glimpses=4, classes=5, init_scale=0.4, seed=seed)
    p.update(params)
    return libram.Model.create(**p)


ARCHS = [dict(),
         dict(form="concat"),
         dict(core="lstm"),
         dict(form="concat", core="lstm", bound="hardtanh"),
         dict(bound="hardtanh", loc_std=0.3),
         dict(channels=3, depth=3, scale=1.5, patch=5),    # 5, 8 (7.5 rounded), 11 pixels
         dict(depth=2, scale=2.0, loc_range_pixels=0.0),   # +-1 is the image edge
         dict(loc_range_pixels=12.0, height=20, width=20),  # beyond the image: zeros read
         dict(channels=2, patch=3, depth=2, scale=3.0, core="lstm", form="concat"),
         # the convolutional layer: over one plane, over 3 channels x 3 scales, strided
         dict(conv_channels=4),
         dict(conv_channels=5, channels=3, depth=3, scale=1.5, patch=5),
         dict(conv_channels=3, conv_kernel=2, conv_stride=2, core="lstm", init_scale=0.6)]


@pytest.mark.parametrize("arch", ARCHS, ids=lambda a: ",".join("%s=%s" % kv for kv in a.items())
                         or "default")
def test_every_architecture_agrees(arch):
    model = random_model(7, **arch)
    net = lt.to_torch(model)
    c, h, w = model.image_shape
    images = strokes(48, c, h, w, seed=3)
    p = agree(model, net, images)
    # Outputs that hardly depend on the image would show little.
    assert np.ptp(p, axis=0).max() > 1e-2
    data = lt.model_file(net).to_bytes()
    assert data == lt._model_bytes(model)


def test_agreement_check_can_fail():
    """A one-pixel change of the retina is seen: the checks above compare
    what matters."""
    model = random_model(3, depth=2)
    net = lt.to_torch(model)
    images = torch.from_numpy(strokes(8, 1, 14, 18, seed=1))
    where = torch.full((8, 2), 0.3)
    rho = net.retina(images, where)
    moved = net.retina(images, where + torch.tensor([2.0 / 18, 0.0]))
    assert not torch.equal(rho, moved)
    with torch.no_grad():
        net.classifier.bias[0] += 5.0
    with pytest.raises(AssertionError):
        agree(model, net, strokes(16, 1, 14, 18, seed=2))


def test_retina_matches_libram_sensor():
    """The module's retina is libram's sensor (ram_glimpse_extract) at any
    location, the image's edges and beyond included."""
    rng = np.random.default_rng(5)
    images = rng.uniform(size=(40, 2, 11, 13)).astype(np.float32)
    locs = rng.uniform(-1.4, 1.4, size=(40, 2)).astype(np.float32)
    locs[:4] = [[-1, -1], [1, 1], [0.5, -1], [1, 0.1234]]
    for patch, depth, scale in ((4, 3, 2.0), (3, 2, 1.7), (5, 1, 1.0)):
        g = libram.Glimpse(patch=patch, depth=depth, scale=scale)
        want = np.asarray(g.extract(images, locs)).reshape(40, -1)
        got = lt.Retina(patch, depth, scale)(torch.from_numpy(images), torch.from_numpy(locs))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_class_names_and_fit_carried(tmp_path):
    model = random_model(2)
    model.class_names = ["zero", "one", "two", "three", "vier"]
    model.fit = "crop"
    path = tmp_path / "named.ram"
    model.save(str(path))
    original = path.read_bytes()
    assert round_trip(original) == original
    net = lt.to_torch(original)
    assert net.class_names == ["zero", "one", "two", "three", "vier"]
    assert net.fit == "crop"
    net.fit = "pad"
    net.class_names = list("abcde")
    back = lt.from_torch(net)
    assert back.fit == "pad" and back.class_names == list("abcde")
    with pytest.raises(ValueError):
        net.class_names = ["too", "few"]


def test_checkpoint_chunks_kept_only_with_their_weights(tmp_path):
    model = random_model(4, height=12, width=12)
    trainer = libram.Trainer(model, lr=1e-3, max_batch=8)
    images = strokes(8, 1, 12, 12, seed=4)
    trainer.train_batch(images, np.arange(8) % 5)
    ckpt = tmp_path / "ckpt.ram"
    trainer.save_checkpoint(str(ckpt), user=b"epoch 1")
    original = ckpt.read_bytes()
    assert round_trip(original) == original
    net = lt.to_torch(original)
    with torch.no_grad():
        net.g1.weight[0, 0] += 0.25
    f = lt.model_file(net)
    tags = [c[0] for c in f.chunks]
    assert not set(tags) & {b"PLCY", b"OPTM", b"AVRG", b"USER"}, tags
    changed = libram.Model.from_bytes(f.to_bytes())
    assert changed.param_count == model.param_count


def learnable(n, seed):
    """Class = the quadrant holding a bright square: learnable in a few
    hundred steps when the glimpses learn where to look or see enough."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 1, 16, 16), np.float32)
    y = rng.integers(0, 4, n)
    for i in range(n):
        r0, c0 = (y[i] // 2) * 8 + rng.integers(1, 4), (y[i] % 2) * 8 + rng.integers(1, 4)
        x[i, 0, r0:r0 + 4, c0:c0 + 4] = 1.0
    return x, y


def test_trained_in_torch_agrees_in_libram(tmp_path):
    torch.manual_seed(0)
    with libram.Model.create(height=16, width=16, patch=4, glimpse_hidden=16, loc_hidden=16,
                             glimpse_out=32, core_hidden=32, glimpses=3, classes=4) as fresh:
        net = lt.to_torch(fresh)
    x, y = learnable(1024, seed=1)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    first = None
    for step in range(200):
        pick = np.arange(step * 32, step * 32 + 32) % len(y)
        loss, stats = net.loss(torch.from_numpy(x[pick]), torch.from_numpy(y[pick]))
        opt.zero_grad()
        loss.backward()
        if step == 0:
            first = stats["nll"]
            for name, p in net.named_parameters():
                if p.requires_grad:
                    assert p.grad is not None and p.grad.abs().sum() > 0, name
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
    assert stats["nll"] < 0.7 * first, (first, stats)
    path = tmp_path / "trained.ram"
    lt.from_torch(net).save(str(path))
    model = libram.Model.load(str(path))
    xt, yt = learnable(300, seed=2)
    p = agree(model, net, xt)
    assert (p.argmax(1) == yt).mean() > 0.4  # chance: 0.25


def test_conv_layer_from_torch():
    """A module built in PyTorch with the layer is a model libram runs the
    same; a state dict without extra state gives its stride by g1.weight's
    width, or by conv_stride= where several fit; bad layers are refused."""
    arch = lt.to_torch(random_model(2)).arch
    torch.manual_seed(5)
    net = lt.RAM(arch, conv={"channels": 3, "kernel": 2, "stride": 3})
    assert net.conv_fields == {"channels": 3, "kernel": 2, "stride": 3}
    assert tuple(net.conv.weight.shape) == (3, 1, 2, 2) and net.g1.weight.shape[1] == 3
    model = lt.from_torch(net)
    assert model.params["conv_channels"] == 3 and model.params["conv_stride"] == 3
    agree(model, net, strokes(32, 1, 14, 18, seed=5))
    sd = {k: v for k, v in net.state_dict().items() if k != "_extra_state"}
    fields = dict(height=14, width=18, patch=4, glimpses=4)
    # 2 x 2 filters over a 4-pixel patch: strides 3 and 4 both leave one position.
    refused(sd, "strides 3, 4 all fit", **fields)
    again = lt.from_torch(sd, conv_stride=3, **fields)
    assert again.params["conv_stride"] == 3
    agree(again, net, strokes(16, 1, 14, 18, seed=6))
    # stride 1: three positions a side, which only stride 1 gives
    one = lt.RAM(arch, conv={"channels": 2, "kernel": 2})
    sd1 = {k: v for k, v in one.state_dict().items() if k != "_extra_state"}
    assert lt.model_file(sd1, **fields).conv == {"channels": 2, "kernel": 2, "stride": 1}
    bad = dict(sd1, **{"conv.weight": torch.zeros(2, 3, 2, 2)})
    refused(bad, "planes", **fields)
    refused(dict(sd1, **{"g1.weight": torch.zeros(arch["glimpse_hidden"], 7)}),
            "fit no stride", **fields)
    plain = {k: v for k, v in sd.items() if not k.startswith("conv.")}
    refused(plain, "conv_stride given", **dict(fields, conv_stride=2))
    with pytest.raises(lt.ConversionError, match="kernel and stride"):
        lt.RAM(arch, conv={"channels": 2, "kernel": 5})
    with pytest.raises(lt.ConversionError, match="unknown field"):
        lt.RAM(arch, conv={"filters": 2})
    # a module and a state dict whose layers differ (here only in the
    # stride, the weights alike) do not mix
    other = lt.RAM(arch, conv={"channels": 3, "kernel": 2, "stride": 4})
    with pytest.raises(lt.ConversionError, match="architecture"):
        other.load_state_dict(net.state_dict())


def test_reinforce_reaches_the_core_only_when_asked():
    model = random_model(6)
    images = torch.from_numpy(strokes(16, 1, 14, 18, seed=6))
    for detach, reaches in ((True, False), (False, True)):
        net = lt.to_torch(model, baseline="none", detach_core=detach)
        out = net(images, "sampled", generator=torch.Generator().manual_seed(1))
        log_pi = torch.distributions.Normal(out.means, net.std).log_prob(out.locations).sum()
        log_pi.backward()
        assert net.locator.weight.grad.abs().sum() > 0
        core = net.core_x.weight.grad
        assert (core is not None and core.abs().sum() > 0) == reaches


def test_sampled_and_contrast_retinas_refused():
    """The module's retina averages every pixel of a cell: a model that
    samples its cells or reads contrast is refused, not computed wrong."""
    for extra, match in (({"cell_samples": 2}, "cell samples"), ({"contrast": 1}, "contrast")):
        model = libram.Model.create(height=14, width=18, patch=4, depth=3, classes=4, **extra)
        with pytest.raises(lt.ConversionError, match=match):
            lt.to_torch(model)


def refused(obj, match, **kw):
    with pytest.raises(lt.ConversionError, match=match):
        lt.model_file(obj, **kw)


def test_libram_layout_refusals():
    sd = lt.to_torch(random_model(1)).state_dict()
    bare = {k: v for k, v in sd.items() if k != "_extra_state"}
    refused(dict(bare, **{"g1.weight": torch.zeros(12, 17)}), "g1.weight", height=14, width=18,
            patch=4, glimpses=4)
    refused(dict(sd, **{"core_x.weight": torch.zeros(20, 17)}), "core_x.weight")
    refused({k: v for k, v in bare.items() if k != "classifier.weight"}, "classifier.weight")
    refused(dict(sd, extra=torch.zeros(1)), "extra")
    refused(dict(sd, **{"g2.bias": torch.full((16,), float("nan"))}), "NaN")
    refused([1, 2], "state dict")
    refused(bare, "columns|g1.weight", patch=5)  # 4x4 glimpses do not fit a 5x5 retina
    refused(sd, "layout", layout="tensorflow")
    # Without extra state the sizes come from the shapes, the rest from the options.
    f = lt.model_file(bare, height=14, width=18, patch=4, glimpses=4, init_scale=0.4)
    assert f.to_bytes() == lt._model_bytes(random_model(1))


def kz_state(seed, hg=16, hl=16, h=32, k=5, d=2 * 2 * 16, two_layer=False):
    """A random state dict with kevinzakka's keys and shapes (its
    RecurrentAttention with h_g, h_l, hidden h = h_g + h_l, k classes)."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: (torch.rand(*shape, generator=g) - 0.5) * 0.6
    sd = {"sensor.fc1.weight": r(hg, d), "sensor.fc1.bias": r(hg),
          "sensor.fc2.weight": r(hl, 2), "sensor.fc2.bias": r(hl),
          "sensor.fc3.weight": r(hg + hl, hg), "sensor.fc3.bias": r(hg + hl),
          "sensor.fc4.weight": r(hg + hl, hl), "sensor.fc4.bias": r(hg + hl),
          "rnn.i2h.weight": r(h, h), "rnn.i2h.bias": r(h),
          "rnn.h2h.weight": r(h, h), "rnn.h2h.bias": r(h),
          "classifier.fc.weight": r(k, h), "classifier.fc.bias": r(k),
          "baseliner.fc.weight": r(1, h), "baseliner.fc.bias": r(1)}
    if two_layer:
        sd.update({"locator.fc.weight": r(h // 2, h), "locator.fc.bias": r(h // 2),
                   "locator.fc_lt.weight": r(2, h // 2), "locator.fc_lt.bias": r(2)})
    else:
        sd.update({"locator.fc.weight": r(2, h) * 4, "locator.fc.bias": r(2)})
    return sd


KZ = dict(glimpses=4, patch=4, depth=2, scale=2)


def test_kevinzakka_converts_exactly_under_libram_conventions():
    """Two channels and two scales: its [scale][channel] glimpse columns
    reordered into libram's [channel][scale]; its two core biases summed.
    With libram's retina rounding and first location its forward pass and
    the converted model agree as libram agrees with itself."""
    sd = kz_state(1)
    ckpt = {"epoch": 3, "model_state": sd, "optim_state": {}, "best_valid_acc": 50.0}
    model = libram.Model.from_bytes(kz.model_file(ckpt, height=20, **KZ).to_bytes())
    images = strokes(64, 2, 20, 20, seed=9)
    lab, prob, _ = model.classify(images)
    logp, locs = kz.forward(sd, torch.from_numpy(images), centre="round", **KZ)
    p = logp.exp().numpy()
    np.testing.assert_array_equal(p.argmax(1), np.asarray(lab))
    assert np.abs(p - np.asarray(prob)).max() <= TOL
    assert len(set(np.asarray(lab))) > 1
    # Its own retina truncates the centre: each glimpse moves by at most one
    # pixel per axis (docs/python.md measures what that costs).
    for side in (4, 8):
        c = (locs.double() + 1.0) * 20 * 0.5
        ours = torch.floor(c - side * 0.5 + 0.5).long()
        theirs = (0.5 * ((locs + 1.0) * 20)).long() - side // 2
        assert set((ours - theirs).unique().tolist()) <= {0, 1}
    floor = kz.forward(sd, torch.from_numpy(images), centre="floor", **KZ)[0].exp().numpy()
    assert np.abs(floor - np.asarray(prob)).max() > TOL  # the difference is real


def test_kevinzakka_normalisation_folded_exactly_inside_the_image():
    """Glimpses that stay inside the image (all at the centre here) see the
    normalised pixels through the folded first layer exactly."""
    sd = kz_state(2)
    sd["locator.fc.weight"].zero_()
    sd["locator.fc.bias"].zero_()
    model = libram.Model.from_bytes(
        kz.model_file(sd, height=20, normalize=(0.1307, 0.3081), **KZ).to_bytes())
    raw = strokes(32, 2, 20, 20, seed=4)
    lab, prob, _ = model.classify(raw)
    normed = (torch.from_numpy(raw) - 0.1307) / 0.3081
    p = kz.forward(sd, normed, centre="round", **KZ)[0].exp().numpy()
    np.testing.assert_array_equal(p.argmax(1), np.asarray(lab))
    assert np.abs(p - np.asarray(prob)).max() <= TOL


def test_kevinzakka_refusals():
    refused(kz_state(1, two_layer=True), "hidden layer", layout="kevinzakka", height=20, **KZ)
    refused(kz_state(1), "square", layout="kevinzakka", height=20, width=24, **KZ)
    refused(kz_state(1), "integer", layout="kevinzakka", height=20, glimpses=4, patch=4,
            depth=2, scale=1.5)
    refused(kz_state(1), "multiple", layout="kevinzakka", height=20, glimpses=4, patch=5,
            depth=2, scale=2)
    bad = kz_state(1)
    bad["rnn.h2h.weight"] = torch.zeros(32, 31)
    refused(bad, "rnn.h2h.weight", layout="kevinzakka", height=20, **KZ)
    bad = kz_state(1)
    del bad["classifier.fc.bias"]
    refused(bad, "classifier.fc.bias", layout="kevinzakka", height=20, **KZ)
    refused(lt.to_torch(random_model(1)).state_dict(), "libram", layout="kevinzakka")


def run_python(args, cwd):
    """python3 on this tree's package, from `cwd` (not the build directory,
    where libram.so would be taken for the package)."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable] + list(args), env=env, cwd=str(cwd),
                          capture_output=True, text=True)


def convert(*args, cwd):
    return run_python(["-m", "libram.convert"] + list(args), cwd)


def test_ram_convert(tmp_path):
    src = os.path.join(MODELS, "mnist.ram")
    pt, back = str(tmp_path / "state.pt"), str(tmp_path / "back.ram")
    r = convert("--to", "torch", src, "--out", pt, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = convert("--from", "torch", pt, "--out", back, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert open(back, "rb").read() == open(src, "rb").read()

    ckpt = str(tmp_path / "kz.pth.tar")
    torch.save({"epoch": 1, "model_state": kz_state(3), "optim_state": {}}, ckpt)
    out = str(tmp_path / "kz.ram")
    r = convert("--from", "kevinzakka", ckpt, "--out", out, "--height", "20", "--glimpses", "4",
                "--patch", "4", "--depth", "2", "--scale", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert libram.Model.load(out).glimpses == 4

    bad_shape = kz_state(3)
    bad_shape["sensor.fc2.weight"] = torch.zeros(16, 3)
    torch.save(bad_shape, str(tmp_path / "bad.pt"))
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    for args, words in ((["--from", "kevinzakka", str(tmp_path / "bad.pt"), "--height", "20",
                          "--patch", "4", "--depth", "2"], "sensor.fc2.weight"),
                        (["--from", "torch", ckpt], "kevinzakka"),
                        (["--from", "torch", str(junk)], "not a PyTorch checkpoint"),
                        (["--from", "torch", src], "not a PyTorch checkpoint"),
                        (["--to", "torch", str(junk)], "libram"),
                        (["--to", "torch", str(tmp_path / "missing.ram")], "No such file")):
        r = convert(*(args + ["--out", str(tmp_path / "x")]), cwd=tmp_path)
        assert r.returncode == 1, (args, r.stderr)
        assert words in r.stderr, (args, r.stderr)
        assert not os.path.exists(tmp_path / "x")
    for args in ([], ["--to", "torch", src], ["--from", "onnx", src, "--out", "x"],
                 ["--to", "torch", src, "--out", "x", "--height", "3"]):
        assert convert(*args, cwd=tmp_path).returncode == 2, args


def test_import_libram_needs_no_torch(tmp_path):
    code = ("import sys; sys.modules['torch'] = None\n"
            "import libram\n"
            "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            "try:\n    import libram.torch\nexcept ImportError:\n    print('refused')\n")
    r = run_python(["-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "refused"


def test_modelfile_rejects_damage():
    data = open(os.path.join(MODELS, "mnist.ram"), "rb").read()
    for bad, words in ((data[:-1], "END"), (data[:100], "runs past|truncated"),
                       (b"PK" + data[2:], "magic"),
                       (data[:40] + bytes([data[40] ^ 1]) + data[41:], "CRC")):
        with pytest.raises(modelfile.FileFormatError, match=words):
            modelfile.parse(bad)


def test_examples_run(tmp_path):
    """The three PyTorch examples end to end on tiny synthetic IDX files."""
    for split, n, seed in (("train", 48, 3), ("t10k", 40, 4)):
        pixels, labels = random_digits(n, 28, 28, 10, seed)
        write_idx(tmp_path, split, pixels, labels, 28, 28)
    images = [str(tmp_path / "t10k-images-idx3-ubyte"), str(tmp_path / "t10k-labels-idx1-ubyte")]
    out = tmp_path / "trained.ram"
    r = run_example("torch_train.py", [str(tmp_path), "--steps", "3", "--batch", "16",
                                       "--out", str(out)], False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "predictions agree: 40 / 40" in r.stdout
    r = run_example("torch_train.py", [str(tmp_path), "--steps", "2", "--init", str(out),
                                       "--out", str(tmp_path / "again.ram")], False)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_example("torch_agreement.py", [str(out)] + images + ["--batch", "16"], False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "file back byte for byte: yes" in r.stdout
    assert "predictions agree: 40 / 40" in r.stdout
    ckpt = tmp_path / "kz.pth.tar"
    torch.save({"model_state": kz_state(5, d=64), "epoch": 1}, str(ckpt))
    r = run_example("kevinzakka_agreement.py", [str(ckpt)] + images, False)
    assert r.returncode == 0, r.stdout + r.stderr
    # With libram's conventions its forward pass is libram's.
    assert re.search(r"round, libram's l_0 +40 / 40", r.stdout), r.stdout


@pytest.mark.parametrize("arch", [dict(), dict(core="lstm", form="concat", bound="hardtanh"),
                                  dict(conv_channels=3, conv_kernel=2, depth=2)],
                         ids=["rnn", "lstm-concat", "conv"])
def test_gradient_is_libram_s(arch):
    """The module's NLL gradient is the one libram's trainer computes (its
    gradient hook), with REINFORCE off and a std of 1e-4.  The locations are
    held fixed (the locator's weights zero) away from any pixel boundary:
    libram's noise, which the module cannot draw, then moves no glimpse."""
    net = lt.to_torch(random_model(8, **arch), baseline="none")
    with torch.no_grad():
        net.locator.weight.zero_()
        net.locator.bias.copy_(torch.tensor([0.3, -0.45]))
    a = net.arch
    for side in net.retina.sides:  # the precondition, checked
        for l, extent, scale in ((0.3, a["width"], net.loc_scale[0]),
                                 (-0.45, a["height"], net.loc_scale[1])):
            where = float(np.float32(l) * np.float32(scale))
            start = (where + 1.0) * extent * 0.5 - side * 0.5 + 0.5
            assert abs(start - round(start)) > 0.05
    model = lt.from_torch(net)
    images = strokes(16, 1, a["height"], a["width"], seed=8)
    labels = np.arange(16) % 5
    policy = libram.Policy(model, std=1e-4, reward_scale=0.0, baseline="none")
    trainer = libram.Trainer(model, policy, lr=1e-3, clip_norm=0.0, max_batch=16)
    seen = []
    trainer.set_gradient_hook(lambda g: seen.append(np.array(g, copy=True)))
    stats = trainer.train_batch(images, labels)
    out = net(torch.from_numpy(images))
    nll = torch.nn.functional.nll_loss(out.log_probs, torch.from_numpy(labels))
    assert abs(float(nll) - stats.nll) < 1e-4
    nll.backward()
    shapes = modelfile.shapes(a, conv=net.conv_fields)
    parts = {name: np.zeros(shape, np.float32) for name, shape in shapes.items()}
    for key, name in lt.RAM.KEYS.items():
        p = lt._param(net, key)
        if p is not None and p.grad is not None:
            parts[name] = p.grad.numpy().reshape(shapes[name])
    # libram's gradient is laid out as the file lists the tensors.
    ours = np.concatenate([parts[name].ravel() for name in shapes])
    if net.conv is not None:
        assert np.abs(parts["conv_w"]).max() > 1e-4
    theirs = seen[0][:ours.size]
    assert np.abs(ours).max() > 1e-3
    assert np.abs(ours - theirs).max() <= 1e-3 * np.abs(theirs).max()
