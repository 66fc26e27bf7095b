"""The benchmarks tell the truth about what they compare against (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COPY = ROOT / "benchmarks" / "baseline" / "seed_ledger.py"
#: The original, where a checkout has the project's shared folder beside it (CI does).
ORIGINAL = ROOT.parent / "shared" / "baseline" / "seed_ledger.py"
HEADER_LINES = 7


def test_the_baseline_copy_is_byte_identical_below_its_header() -> None:
    """Its header promised byte-identical; it had been reformatted (9 hunks)."""
    if not ORIGINAL.exists():
        pytest.skip(f"no original at {ORIGINAL}")
    copy = COPY.read_bytes().split(b"\n", HEADER_LINES)
    assert all(line.startswith(b"#") for line in copy[:HEADER_LINES])
    assert copy[HEADER_LINES] == ORIGINAL.read_bytes()


def test_the_service_profile_puts_the_event_loop_in_its_own_bucket() -> None:
    """cli.py became a package (cli/__init__.py, cli/common.py): its frames at the root
    of every sample made every idle-loop sample "ours"."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from service_profile import bucket
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    root = [
        "<module> (reclaim_tui/__main__.py:6)",
        "main (reclaim_tui/cli/__init__.py:87)",
        "wrapper (reclaim_tui/cli/common.py:95)",
        "run (asyncio/runners.py:118)",
    ]
    assert bucket([*root, "select (selectors.py:468)"]) == "asyncio"
    ours = [
        "run_service (reclaim_tui/runner/service.py:80)",
        "get (reclaim_tui/core/gemini/backend.py:270)",
    ]
    assert bucket([*root, *ours, "send (httpcore/_async/connection.py:101)"]) == "HTTP stack"
    assert bucket([*root, *ours, "loads (json/__init__.py:346)"]) == "ours"
