"""Secrets: a distinctive API key, given through GEMINI_API_KEY, GOOGLE_API_KEY and
`--api-key`, never reaches the ledger file (+ its -wal/-shm), the events,
the logs (stderr with -v), the exports, `show`, or the articles. A wrong key
(refused by the emulator) is not written anywhere either."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.procs import write_jobs

pytestmark = pytest.mark.slow


def test_the_api_key_is_never_stored_or_logged(tmp_path: Path) -> None:
    key = f"AIzaSECRET{secrets.token_hex(12)}"
    wrong = f"AIzaWRONG{secrets.token_hex(12)}"
    outputs: list[str] = []
    with EmulatorProcess(tmp_path, api_key=key) as emu:
        ws = Workspace(tmp_path / "ws", emulator=emu, pass_api_key=False)

        def keep(proc: object) -> None:
            outputs.append(proc.stdout + proc.stderr)  # type: ignore[attr-defined]
            assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]

        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"secret test {i}"} for i in range(3)])
        keep(ws.tick("-v", jobs=jobs, env={"GEMINI_API_KEY": key}))
        # A wrong key: refused (400 API_KEY_INVALID, as the real API answers),
        # recorded in the row, the key itself nowhere.
        more = write_jobs(ws.root / "more.jsonl", [{"input": "sent with a wrong key"}])
        refused = ws.tick("-v", "--api-key", wrong, jobs=more)
        outputs.append(refused.stdout + refused.stderr)
        # Every call refused for the key: the API refuses us (exit 6).
        assert refused.returncode == 6, refused.stderr
        wal_bytes = b"".join(
            p.read_bytes() for p in ws.root.glob("ledger.db*") if p.is_file()
        )  # before any checkpoint folds the WAL away
        for run in ws.settle(extra=("-v", "--api-key", key)):
            outputs.append(run.stdout + run.stderr)
        keep(ws.tick("-v", env={"GOOGLE_API_KEY": key}))
        keep(ws.cli("status", "--json", engine=False))
        keep(ws.cli("export", "--format", "jsonl", engine=False))
        keep(ws.cli("export", "--format", "csv", engine=False))
        for idem in ws.view().rows():
            keep(ws.cli("show", idem, engine=False))
        errors = [r["last_error"] for r in ws.view().rows().values() if r["last_error"]]

    assert any("400" in e for e in errors) or any("400" in o for o in outputs)
    rows = ws.view().rows()
    assert {r["status"] for r in rows.values()} == {"consumed"}
    files = [p for p in ws.root.rglob("*") if p.is_file()]
    blobs = {str(p): p.read_bytes() for p in files}
    blobs["ledger+wal before checkpoint"] = wal_bytes
    conn = sqlite3.connect(ws.db)
    try:
        blobs["sql dump"] = "\n".join(conn.iterdump()).encode()
    finally:
        conn.close()
    blobs["command output"] = "\n".join(outputs).encode()
    for secret in (key, wrong):
        for needle in (secret, secret[4:]):  # also without the common prefix
            leaks = [name for name, data in blobs.items() if needle.encode() in data]
            assert leaks == [], f"the key leaked into {leaks}"
    assert any(p.suffix == ".md" for p in files) and len(outputs) > 8
    record_figures(
        "secrets",
        places_checked=len(blobs),
        commands_checked=len(outputs),
        leaks=0,
    )
