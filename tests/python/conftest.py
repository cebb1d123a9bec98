"""pytest setup for the libram package's tests.

The tests import the package from this source tree (python/libram), so they
test the code beside them, not whatever libram happens to be installed; with
LIBRAM_TEST_INSTALLED=1 they import the installed package instead.  Which
C library it loads is up to LIBRAM_LIBRARY (CTest sets it to the library
just built) and the package's own search.  Nothing is written outside
pytest's temporary directories.
"""

import os
import sys

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                           os.pardir, "python"))
if not os.environ.get("LIBRAM_TEST_INSTALLED"):
    sys.path.insert(0, PYTHON_DIR)

import libram  # noqa: E402


@pytest.fixture(params=["numpy", "plain"])
def buffers(request, monkeypatch):
    """Runs a test twice: with NumPy (arrays in and out) and as if NumPy
    were not installed (sequences in, array.array buffers out)."""
    if request.param == "numpy":
        if libram._np is None:
            pytest.skip("numpy is not installed")
    else:
        monkeypatch.setattr(libram, "_np", None)
    return request.param


def tool(name):
    """The path of the C tool `name` (ram-classify, ...) built beside the
    loaded library, or None (an installed library, or tools not built)."""
    path = os.path.join(os.path.dirname(os.path.abspath(libram.library_path)), name)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
