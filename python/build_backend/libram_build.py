"""A PEP 517 build backend for the pure-Python libram package, standard
library only.

Why not setuptools: pip builds in an isolated environment and installs the
backend's requirements there from an index first, so `pip install ./python`
with build-backend = "setuptools.build_meta" fails on a machine without
network access.  This backend needs nothing (requires = [] in
pyproject.toml), so pip never goes to an index.  It packs libram/*.py into
a py3-none-any wheel with the metadata of pyproject.toml's [project] table;
it also makes sdists and editable wheels (pip install -e).  Archives are
reproducible: fixed timestamps (SOURCE_DATE_EPOCH if set) and sorted entries.
"""

import ast
import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "libram"
WHEEL_TAG = "py3-none-any"
# The sdist carries what is needed to build the wheel again, plus the examples:
# the repository's examples/python, or an unpacked sdist's own examples.
SDIST_DIRS = ("build_backend", PACKAGE)
EXAMPLES = "examples" if os.path.isdir(os.path.join(ROOT, "examples")) else \
    os.path.join(os.pardir, "examples", "python")


# ---- pyproject.toml

def _parse_toml_subset(text):
    """The part of TOML pyproject.toml uses: [tables], key = "string",
    key = ["strings", ...] (possibly over several lines) and
    key = {key = "string", ...}.  Only for Pythons without tomllib (< 3.11);
    anything else raises ValueError rather than being misread."""
    tables = {}
    current = tables
    pending = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if not pending and line.startswith("["):
            current = tables
            for part in line.strip("[]").split("."):
                current = current.setdefault(part.strip().strip('"'), {})
            continue
        pending += line + " "
        if pending.count("[") > pending.count("]") or pending.count("{") > pending.count("}"):
            continue  # a value continued on the next line
        match = re.match(r'^([A-Za-z0-9_"-]+)\s*=\s*(.+)$', pending.strip())
        pending = ""
        if not match:
            raise ValueError("pyproject.toml:%d: cannot parse %r" % (number, raw))
        value = match.group(2)
        # An inline table {key = "v"} is a Python dict once its keys are quoted.
        value = re.sub(r'([{,]\s*)([A-Za-z0-9_-]+)\s*=', r'\1"\2":', value)
        try:
            current[match.group(1).strip('"')] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError("pyproject.toml:%d: unsupported value %r" % (number, raw)) from None
    return tables


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
    except ImportError:
        return _parse_toml_subset(data.decode("utf-8"))
    return tomllib.loads(data.decode("utf-8"))


def _project():
    project = _pyproject()["project"]
    for key in ("name", "version"):
        if not isinstance(project.get(key), str):
            raise ValueError("pyproject.toml: [project] needs a string %s" % key)
    return project


def _dist_name(project):
    """The name as wheel and sdist file names spell it (PEP 427/625)."""
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    """Core metadata 2.1 (PKG-INFO / METADATA) from the [project] table."""
    lines = ["Metadata-Version: 2.1", "Name: %s" % project["name"],
             "Version: %s" % project["version"]]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    licence = project.get("license")
    if isinstance(licence, dict) and licence.get("text"):
        lines.append("License: %s" % licence["text"])
    for author in project.get("authors", []):
        if author.get("name"):
            lines.append("Author: %s" % author["name"])
    if project.get("keywords"):
        lines.append("Keywords: %s" % ",".join(project["keywords"]))
    for classifier in project.get("classifiers", []):
        lines.append("Classifier: %s" % classifier)
    for label, url in project.get("urls", {}).items():
        lines.append("Project-URL: %s, %s" % (label, url))
    for requirement in project.get("dependencies", []):
        lines.append("Requires-Dist: %s" % requirement)
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append("Provides-Extra: %s" % extra)
        for requirement in requirements:
            lines.append('Requires-Dist: %s; extra == "%s"' % (requirement, extra))
    return "\n".join(lines) + "\n"


# ---- archives

def _timestamp():
    # Zip cannot store times before 1980.
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _package_files(directory):
    """Sources under `directory` (relative to ROOT), sorted, without
    bytecode or anything else a build or a test run leaves behind."""
    found = []
    for base, dirs, files in os.walk(os.path.join(ROOT, directory)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py") or name == "py.typed":
                found.append(os.path.relpath(os.path.join(base, name), ROOT))
    return found


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _write_wheel(wheel_directory, entries, project):
    """Write a wheel holding `entries` ((archive path, bytes) pairs) and the
    dist-info files; return its file name."""
    dist_info = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    entries = list(entries) + [(dist_info + "/" + name, data.encode("utf-8"))
                               for name, data in _dist_info_files(project).items()]
    record = "".join("%s,%s,%d\n" % (path, _record_hash(data), len(data))
                     for path, data in entries)
    record += dist_info + "/RECORD,,\n"
    entries.append((dist_info + "/RECORD", record.encode("utf-8")))

    filename = "%s-%s-%s.whl" % (_dist_name(project), project["version"], WHEEL_TAG)
    stamp = time.gmtime(_timestamp())[:6]
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as whl:
        for path, data in entries:
            info = zipfile.ZipInfo(path, stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    return filename


def _dist_info_files(project):
    files = {
        "METADATA": _metadata(project),
        "WHEEL": "Wheel-Version: 1.0\nGenerator: libram_build\nRoot-Is-Purelib: true\n"
                 "Tag: %s\n" % WHEEL_TAG,
        "top_level.txt": PACKAGE + "\n",
    }
    # [project.scripts]: the installer makes the commands from this file.
    scripts = project.get("scripts") or {}
    if scripts:
        files["entry_points.txt"] = "[console_scripts]\n" + "".join(
            "%s = %s\n" % item for item in sorted(scripts.items()))
    return files


# ---- PEP 517 / PEP 660 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    dist_info = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, data in _dist_info_files(project).items():
        with open(os.path.join(metadata_directory, dist_info, name), "w",
                  encoding="utf-8") as f:
            f.write(data)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for path in _package_files(PACKAGE):
        with open(os.path.join(ROOT, path), "rb") as f:
            entries.append((path.replace(os.sep, "/"), f.read()))
    return _write_wheel(wheel_directory, entries, _project())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth file imports a finder that maps `libram` to this
    source tree.  Adding the tree itself to sys.path would also expose
    build_backend and examples as top-level packages."""
    package_dir = os.path.join(ROOT, PACKAGE)
    finder = (
        "import importlib.machinery, sys\n\n\n"
        "class _LibramSourceFinder:\n"
        "    @classmethod\n"
        "    def find_spec(cls, name, path=None, target=None):\n"
        "        if name != %r:\n"
        "            return None\n"
        "        return importlib.machinery.PathFinder.find_spec(name, [%r])\n\n\n"
        "sys.meta_path.append(_LibramSourceFinder)\n" % (PACKAGE, os.path.dirname(package_dir)))
    entries = [("__editable___%s_finder.py" % PACKAGE, finder.encode("utf-8")),
               ("__editable__.%s.pth" % PACKAGE,
                ("import __editable___%s_finder\n" % PACKAGE).encode("utf-8"))]
    return _write_wheel(wheel_directory, entries, _project())


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    files = [(p, p) for p in ["pyproject.toml"] + [p for d in SDIST_DIRS for p in _package_files(d)]]
    files += [(p, os.path.join("examples", os.path.relpath(p, EXAMPLES)))
              for p in _package_files(EXAMPLES)]
    filename = base + ".tar.gz"
    stamp = _timestamp()

    def add(tar, name, data):
        info = tarfile.TarInfo("%s/%s" % (base, name.replace(os.sep, "/")))
        info.size, info.mtime, info.mode = len(data), stamp, 0o644
        tar.addfile(info, io.BytesIO(data))

    # gzip's own header would record the current time: write it with mtime fixed.
    with open(os.path.join(sdist_directory, filename), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=stamp, filename="") as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "PKG-INFO", _metadata(project).encode("utf-8"))
        for path, name in files:
            with open(os.path.join(ROOT, path), "rb") as f:
                add(tar, name, f.read())
    return filename
