"""Figures each reliability run produces (kills survived, jobs, duplicates
recorded, creates vs jobs, lost), printed as one summary line and appended to
a JSON file.

The file is `$RECLAIM_FIGURES_DIR/figures.json` when that is set, else
`<tmp>/reclaim-tui-figures/figures-<pid of the pytest run>.json`; the path is
printed with every line and at the end of the run.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["all_figures", "figures_path", "record_figures"]

_lock = threading.Lock()
_collected: list[dict[str, Any]] = []


def figures_path() -> Path:
    base = os.environ.get("RECLAIM_FIGURES_DIR")
    if base:
        return Path(base) / "figures.json"
    return Path(tempfile.gettempdir()) / "reclaim-tui-figures" / f"figures-{os.getpid()}.json"


def record_figures(name: str, **figures: Any) -> dict[str, Any]:
    """Print `RELIABILITY name: k=v …` and rewrite the JSON file with all figures so far."""
    entry = {"name": name, **figures}
    with _lock:
        _collected.append(entry)
        path = figures_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(_collected, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)
    line = " ".join(f"{k}={v}" for k, v in figures.items())
    print(f"RELIABILITY {name}: {line}  [{path}]")
    return entry


def all_figures() -> list[dict[str, Any]]:
    with _lock:
        return list(_collected)
