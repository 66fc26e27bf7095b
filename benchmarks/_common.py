"""Helpers shared by the benchmark scripts: the baseline's location, medians, tables,
a free port."""

from __future__ import annotations

import importlib.util
import os
import socket
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def baseline_path() -> Path:
    """The baseline to compare against: $RECLAIM_BASELINE if set, else the
    in-repo copy benchmarks/baseline/seed_ledger.py."""
    env = os.environ.get("RECLAIM_BASELINE")
    path = Path(env) if env else Path(__file__).resolve().parent / "baseline" / "seed_ledger.py"
    if not path.exists():
        sys.exit(f"cannot find the baseline at {path} (set RECLAIM_BASELINE)")
    return path


def load_baseline() -> ModuleType:
    spec = importlib.util.spec_from_file_location("seed_ledger", baseline_path())
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (for a server started as its own process)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "-|-".join("-" * w for w in widths))
    return "\n".join("| " + line + " |" for line in lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if value < 10 else f"{value:.1f}"
    return str(value)
