"""The benchmarks tell the truth about what they compare against (issue 27)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COPY = ROOT / "benchmarks" / "baseline" / "seed_ledger.py"
#: The original, where a checkout has the project's shared folder beside it (CI does).
ORIGINAL = ROOT.parent / "shared" / "baseline" / "seed_ledger.py"
#: The original's SHA-256, kept here so that a checkout without it checks the copy too.
ORIGINAL_SHA256 = "a2d73b020ea2d25ca775b31ffce4ed576e88aad6b2656a0351499041cd90b4c6"
HEADER_LINES = 7


def _below_the_header() -> bytes:
    copy = COPY.read_bytes().split(b"\n", HEADER_LINES)
    assert all(line.startswith(b"#") for line in copy[:HEADER_LINES])
    return copy[HEADER_LINES]


def test_the_baseline_copy_is_byte_identical_below_its_header() -> None:
    """Its header promised byte-identical; it had been reformatted (9 hunks)."""
    assert hashlib.sha256(_below_the_header()).hexdigest() == ORIGINAL_SHA256


def test_the_kept_checksum_is_the_originals() -> None:
    """Where the original is at hand, the checksum above is its own."""
    if not ORIGINAL.exists():
        pytest.skip(f"no original at {ORIGINAL}: the copy was checked against the checksum")
    assert hashlib.sha256(ORIGINAL.read_bytes()).hexdigest() == ORIGINAL_SHA256
    assert _below_the_header() == ORIGINAL.read_bytes()


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


def test_the_service_benchmark_keeps_every_runs_files_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run's folder (ledger, 2 x N result files) was removed as the run ended: on
    an ext4 without a journal the kernel then skips every recently freed inode, one by
    one, for each file the next runs create, so the later runs measured the benchmark's
    own cleanup (the sink's thread, kernel CPU, rose run after run). Every run's folder
    now stays until all runs are done, then all go, an error included."""
    import sys
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import service
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    with pytest.raises(RuntimeError), service._kept_runs():
        first = service._run_dir("bench-service-")
        (first / "out").mkdir()
        (first / "out" / "k.md").write_text("x")
        second = service._run_dir("bench-tick loop-")
        assert first.parent == second.parent == tmp_path
        assert (first / "out" / "k.md").exists() and second.is_dir()
        raise RuntimeError("a run failed")
    assert list(tmp_path.iterdir()) == []
    # Every leg's folder comes from it: none is removed as its run ends.
    source = (ROOT / "benchmarks" / "service.py").read_text()
    assert "TemporaryDirectory" not in source
    assert source.count("_run_dir(") == 4  # its definition and the three legs
