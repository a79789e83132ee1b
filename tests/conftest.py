"""Shared by every test: the tests folder on sys.path (tests import their helpers by name), and
the suite's knobs.

* One worker per core when pytest-xdist is installed (the ``test`` extra has it) and the command
  line does not choose (``-n 0`` runs in one process; ``-p no:xdist`` without the plugin): the
  tests are independent, most of their time is onnxruntime and subprocesses, and a 2-core machine
  runs the suite in half the time.
* The lint cache's user key lives in a folder of the session (``XDG_CACHE_HOME``), not ``~/.cache``.
* One onnxruntime worker process (``fuzz/shapearith.py``'s ``Runner``: a crash or a hang there
  fails one run and the worker restarts) serves every module of a pytest process (``ort_runner``):
  starting one costs about a second of CPU.
* Every onnxruntime session a test creates runs its kernels on one thread unless the test chooses a
  count: by default each session starts a pool of one thread per core, and starting it costs ten
  times what creating a small model's session otherwise does (the tests create tens of thousands).
* ``-m scale`` runs the tests marked ``scale`` (gigabyte-sized models under ``ulimit -v``), which a
  plain run deselects; ``.ci/run`` runs them as a step of their own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from typing import Any, Iterator

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The lint cache keys its entries with a secret of the user's (shapeflow/cache.py, user_key):
# tests, and the commands they run, keep theirs in a folder of this session, not in ~/.cache.
if "SHAPEFLOW_TESTS_KEEP_XDG" not in os.environ:
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="shapeflow-test-xdg-")
    atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)

# A shape rule that raises is a bug: outside the tests its node's outputs become unknown (and a
# warning says so); here, in this process and in every CLI subprocess, it raises and fails the test.
os.environ["SHAPEFLOW_RAISE_RULE_CRASHES"] = "1"


def _one_thread_sessions() -> None:
    try:
        import onnxruntime
    except ImportError:
        return
    base = onnxruntime.InferenceSession

    class InferenceSession(base):  # type: ignore[misc, valid-type]
        __doc__ = base.__doc__

        def __init__(self, path_or_bytes: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
            options = onnxruntime.SessionOptions() if sess_options is None else sess_options
            if options.intra_op_num_threads == 0:  # 0: one thread per core
                options.intra_op_num_threads = 1
            if options.inter_op_num_threads == 0:
                options.inter_op_num_threads = 1
            super().__init__(path_or_bytes, options, *args, **kwargs)

    onnxruntime.InferenceSession = InferenceSession  # type: ignore[misc]


_one_thread_sessions()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if config.getoption("numprocesses", None) is None and config.getoption("dist", "no") == "no" \
            and not config.getoption("collectonly", False):
        config.option.numprocesses = "auto"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "scale: a scale run (gigabytes, minutes); deselected unless -m scale")
    if not config.getoption("markexpr", ""):
        config.option.markexpr = "not scale"


def pytest_unconfigure(config: pytest.Config) -> None:
    # the interpreters tests/cli_process.py started end with the session (their runs' CPU time is
    # then accounted to this process, as a subprocess's is)
    starters = sys.modules.get("cli_process")
    if starters is not None:
        starters.stop_all()


@pytest.fixture(scope="session")
def ort_runner() -> Iterator[Any]:
    """onnxruntime in a child process, shared by the test modules' ``runner`` fixtures."""
    fuzz = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz")
    if fuzz not in sys.path:
        sys.path.insert(0, fuzz)
    pytest.importorskip("onnxruntime")
    import shapearith

    with shapearith.Runner() as runner:
        yield runner
