"""Compiled bytecode for the suite's processes: the xdist workers and the thousands of
`python -m reclaim_tui …` processes the tests start.

With PYTHONDONTWRITEBYTECODE set (as in this machine's environment) no process
writes a `.pyc`, so every CLI, tick and console process of the suite compiled
each module of reclaim_tui it imported from source again (some 0.1–0.2 s of
CPU per process, thousands of processes per run), and every xdist worker
rewrote and compiled every test module to collect them (some 11 of its 17 s
of CPU). `precompile()` compiles the package and tests/ (the helpers the
processes import; the test modules as pytest's assertion rewriting makes them)
once, at the start of the run, into a folder of its own (PYTHONPYCACHEPREFIX,
which every process of the run inherits: the workers and their subprocesses),
and nothing else changes: Python and pytest still check each `.pyc` against its
source's mtime and size, the source tree gets no `__pycache__`, and no process
writes one (PYTHONDONTWRITEBYTECODE still holds; the folder is only read).

Nothing is done when bytecode may be written (each process then caches its own)
or when PYTHONPYCACHEPREFIX is already set (the caller's choice).
"""

from __future__ import annotations

import compileall
import fnmatch
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

__all__ = ["PREFIX_ENV", "precompile", "remove"]

PREFIX_ENV = "PYTHONPYCACHEPREFIX"
#: The folder this process made (the run's first process only: the workers
#: inherit the variable, not this).
_made: list[str] = []


def _sources() -> list[Path]:
    spec = importlib.util.find_spec("reclaim_tui")
    assert spec is not None and spec.submodule_search_locations is not None
    package = [Path(p) for p in spec.submodule_search_locations]
    return [*package, Path(__file__).resolve().parents[1]]


def _rewritten_tests(config: pytest.Config, tests: Path) -> None:
    """The test modules and conftests as pytest's assertion rewriting compiles them,
    where it looks for them (`get_cache_dir`, under sys.pycache_prefix). Its
    helpers are pytest's own: on a pytest without them, the workers compile."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:  # pragma: no cover - another pytest
        return
    needed = ("_rewrite_test", "_write_pyc_fp", "get_cache_dir", "PYC_TAIL")
    if config.getoption("assertmode", "rewrite") != "rewrite" or not all(
        hasattr(rewrite, name) for name in needed
    ):
        return
    patterns = [*config.getini("python_files"), "conftest.py"]
    for path in sorted(tests.rglob("*.py")):
        if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns):
            continue
        stat, code = rewrite._rewrite_test(path, config)
        folder = rewrite.get_cache_dir(path)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / (path.name[:-3] + rewrite.PYC_TAIL), "wb") as pyc:
            rewrite._write_pyc_fp(pyc, stat, code)


def precompile(config: pytest.Config) -> None:
    """In the process that starts the run (before pytest-xdist starts its workers)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get(PREFIX_ENV):
        return
    prefix = tempfile.mkdtemp(prefix="reclaim-pycache-")
    # This process reads it too from now on: without xdist, it collects the tests.
    sys.pycache_prefix = prefix
    for folder in _sources():
        compileall.compile_dir(folder, quiet=1, workers=1)
    if config.getoption("numprocesses", None):  # else this process rewrites what it collects
        _rewritten_tests(config, _sources()[-1])
    os.environ[PREFIX_ENV] = prefix
    _made.append(prefix)


def remove() -> None:
    """At the end of the run, in the process that started it."""
    while _made:
        prefix = _made.pop()
        if os.environ.get(PREFIX_ENV) == prefix:
            del os.environ[PREFIX_ENV]
        if sys.pycache_prefix == prefix:
            sys.pycache_prefix = None
        shutil.rmtree(prefix, ignore_errors=True)
