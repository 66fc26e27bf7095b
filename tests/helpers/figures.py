"""Figures each reliability run produces (kills survived, jobs, duplicates
recorded, creates vs jobs, lost), printed as one summary line and appended to
a JSON file.

The file is `$RECLAIM_FIGURES_DIR/figures.json` when that is set, else
`<tmp>/reclaim-tui-figures/figures-<run>.json`; the path is printed with every
line and at the end of the run. The run is the pid of the pytest process that
was started (`RECLAIM_FIGURES_RUN`, set by tests/conftest.py before pytest-xdist
starts its workers): every worker of one run appends to the same file, under a
lock, and the end-of-run summary reads that file back. The file holds the
figures of the latest run only (a stamp beside it, `<file>.run`, names it).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["RUN_ENV", "all_figures", "figures_path", "record_figures"]

#: The id of the pytest run the figures belong to (see the module's docstring).
RUN_ENV = "RECLAIM_FIGURES_RUN"
_lock = threading.Lock()


def _run_id() -> str:
    return os.environ.get(RUN_ENV) or str(os.getpid())


def figures_path() -> Path:
    base = os.environ.get("RECLAIM_FIGURES_DIR")
    if base:
        return Path(base) / "figures.json"
    return Path(tempfile.gettempdir()) / "reclaim-tui-figures" / f"figures-{_run_id()}.json"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """This thread and every other process of the run (the xdist workers) wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock, open(path.with_suffix(".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _this_runs(path: Path) -> list[dict[str, Any]]:
    """The figures in `path` if this run wrote them, else none (an older run's)."""
    stamp = path.with_suffix(".run")
    try:
        if stamp.read_text() != _run_id():
            return []
        entries: list[dict[str, Any]] = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return entries


def record_figures(name: str, **figures: Any) -> dict[str, Any]:
    """Print `RELIABILITY name: k=v …` and rewrite the JSON file with all figures so far."""
    entry = {"name": name, **figures}
    path = figures_path()
    with _locked(path):
        collected = [*_this_runs(path), entry]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(collected, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)
        path.with_suffix(".run").write_text(_run_id())
    line = " ".join(f"{k}={v}" for k, v in figures.items())
    print(f"RELIABILITY {name}: {line}  [{path}]")
    return entry


def all_figures() -> list[dict[str, Any]]:
    """Every figure this run recorded, in whichever process (xdist worker)."""
    path = figures_path()
    if not path.exists():
        return []  # nothing recorded: no lock file left behind either
    with _locked(path):
        return _this_runs(path)
