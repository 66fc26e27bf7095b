"""Bad input and bad files: each gets a clear error and its documented exit code
(README / cli/__init__.py: 3 jobs file refused, 4 ledger unusable), never a traceback,
and the ledger is unchanged or consistent afterwards."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reclaim_tui.cli import cli
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.errors import LedgerReadOnlyError
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.procs import FAST_FLAGS, write_jobs

MODEL = "gemini-flash-latest"


def ok(proc: Any) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def refused(proc: Any, code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error: ")
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.fixture
def seeded(make_workspace: Callable[..., Workspace]) -> Workspace:
    """A ledger with two submitted rows."""
    ws = make_workspace("seeded")
    ok(ws.tick(jobs=write_jobs(ws.root / "j.jsonl", [{"input": "one"}, {"input": "two"}])))
    return ws


# -- the jobs file, fuzzed ----------------------------------------------------------------
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
)
_keys = st.one_of(
    st.sampled_from(["../x", "a/b", "A", "-x", "ok-key", "x" * 64, "", "é", "a\x00b", "..", "k."]),
    st.text(max_size=70),
)
_job = st.fixed_dictionaries(
    {"input": st.one_of(st.text(max_size=60), _scalars, st.lists(_scalars, max_size=3))},
    optional={
        "model": st.one_of(st.text(max_size=12), _scalars),
        "key": _keys,
        "config": st.one_of(
            st.dictionaries(st.sampled_from(["temperature", "labels", "stream", "x"]), _scalars),
            _scalars,
        ),
        "extra": _scalars,
    },
)


@st.composite
def _line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["valid", "valid", "valid", "job", "job", "text", "special"]))
    if kind == "valid":
        job: dict[str, Any] = {"input": draw(st.text(min_size=1, max_size=60))}
        if draw(st.booleans()):
            job["key"] = draw(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True))
        return json.dumps(job, ensure_ascii=True)
    if kind == "job":
        return json.dumps(draw(_job), ensure_ascii=draw(st.booleans()))
    if kind == "text":
        return draw(st.text(max_size=40))
    return draw(
        st.sampled_from(
            [
                "[" * 50_000,  # nesting past the recursion limit
                json.dumps({"input": "x" * 1_100_000}),  # over the 1 MB line limit
                '{"input": "\\ud800"}',  # a lone surrogate
                '{"input": "nul \\u0000 inside"}',
                '{"input": 1e999}',
                "\x00\x01\x02",
                "# a comment",
                "",
                '{"input": "dup", "key": "same-key"}',
            ]
        )
    )


@pytest.mark.slow
def test_fuzzed_jobs_files_are_refused_cleanly_or_accepted(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    db = tmp_path / "fuzz.db"
    runner = CliRunner()
    base = ["submit", "--db", str(db), "--base-url", emulator.base_url, *FAST_FLAGS]
    base += ["--concurrency", "4"]
    outcome = {"accepted": 0, "refused": 0}

    def rows() -> set[str]:
        if not db.exists():
            return set()
        conn = sqlite3.connect(db)
        try:
            return {r[0] for r in conn.execute("SELECT idem FROM jobs")}
        finally:
            conn.close()

    @settings(
        max_examples=int(os.environ.get("RECLAIM_FUZZ_EXAMPLES", "60")),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )
    @given(lines=st.lists(_line(), min_size=1, max_size=4))
    def check(lines: list[str]) -> None:
        path = tmp_path / "jobs.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        before = rows()
        result = runner.invoke(cli, [*base, str(path)])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert "Traceback" not in result.output
        if result.exit_code == 3:
            outcome["refused"] += 1
            # A bad line is named; a key an earlier file gave another job, by its key.
            named = "line " in result.output or "in the ledger for another job" in result.output
            assert "nothing was reserved" in result.output and named
            assert rows() == before
        else:
            assert result.exit_code == 0, result.output
            outcome["accepted"] += 1
            assert rows() >= before

    check()
    assert outcome["refused"] > 0 and outcome["accepted"] > 0, outcome
    record_figures("jobs_file_fuzz", **outcome)


def test_unicode_line_separators_inside_strings_are_accepted(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    lines = [json.dumps({"input": f"a{sep}b"}, ensure_ascii=False) for sep in "\u2028\u2029\x85"]
    jobs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "reclaim_tui", "submit", "--db", str(tmp_path / "l.db"),
         "--base-url", "http://127.0.0.1:9", *FAST_FLAGS, str(jobs)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # Nothing listens on port 9: the file is accepted and reserved, and the
    # send says the API is unreachable (exit 6) without failing any job.
    assert proc.returncode == 6 and "API unreachable" in proc.stderr, proc.stderr
    assert proc.stdout.startswith("3 reserved"), proc.stdout


# -- bad ledger files ---------------------------------------------------------------------
def test_corrupt_ledger_exits_4_and_is_left_alone(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace("corrupt")
    garbage = os.urandom(8192)
    ws.db.write_bytes(garbage)
    refused(ws.tick(), 4, "not a usable SQLite ledger")
    refused(ws.cli("status", engine=False), 4)
    assert ws.db.read_bytes() == garbage

    # A real SQLite header over damaged pages.
    good = make_workspace("damaged")
    ok(good.tick(jobs=write_jobs(good.root / "j.jsonl", [{"input": f"d{i}"} for i in range(50)])))
    conn = sqlite3.connect(good.db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(good.db.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)
    good.db.write_bytes(bytes(data))
    proc = good.tick()
    refused(proc, 4)
    assert "not a usable SQLite ledger" in proc.stderr or "malformed" in proc.stderr


def test_newer_schema_exits_4(seeded: Workspace) -> None:
    conn = sqlite3.connect(seeded.db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = seeded.view().fingerprint()
    for proc in (
        seeded.tick(),
        seeded.cli("status", engine=False),
        seeded.cli("export", engine=False),
    ):
        refused(proc, 4, "newer reclaim-tui", "schema 99")
    assert seeded.view().fingerprint() == before


@pytest.fixture
def immutable(seeded: Workspace) -> Iterator[Path]:
    """The ledger file made immutable (root ignores file modes, not `chattr +i`)."""
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("chattr not available; the read-only path is covered through the API")
    proc = subprocess.run([chattr, "+i", str(seeded.db)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"chattr +i not permitted here: {proc.stderr.strip()}")
    try:
        yield seeded.db
    finally:
        subprocess.run([chattr, "-i", str(seeded.db)], check=True)


def test_read_only_ledger_exits_4_and_reads_still_work(seeded: Workspace, immutable: Path) -> None:
    before = seeded.view().fingerprint()
    refused(
        seeded.tick(jobs=write_jobs(seeded.root / "n.jsonl", [{"input": "new"}])),
        4,
        "cannot be written",
    )
    status = seeded.cli("status", "--json", engine=False)
    ok(status)
    assert json.loads(status.stdout)["submitted"]["count"] == 2
    ok(seeded.cli("export", engine=False))
    assert seeded.view().fingerprint() == before


async def test_read_only_connection_refuses_writes(seeded: Workspace) -> None:
    """The read-only code path through the API (works without chattr, and as root)."""
    ledger = await open_ledger(seeded.db, readonly=True, create=False)
    try:
        with pytest.raises(LedgerReadOnlyError):
            await ledger.insert_jobs([("k", "{}", "m")], "test")
        assert len([r async for r in ledger.iter_rows()]) == 2
    finally:
        await ledger.close()


def test_ledger_locked_by_another_process_exits_4(seeded: Workspace) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(seeded.db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "print('locked', flush=True)\n"
            "time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = seeded.view().fingerprint()
        started = time.monotonic()
        proc = seeded.tick(jobs=write_jobs(seeded.root / "n.jsonl", [{"input": "blocked"}]))
        elapsed = time.monotonic() - started
        refused(proc, 4, "locked by another process past busy_timeout")
        # Not a hang: the tick's own timeout (120 s) bounds it; how long it
        # took is a figure, not a judgement (the machine may be loaded).
    finally:
        holder.kill()
        holder.wait()
    assert seeded.view().fingerprint() == before
    ok(seeded.tick())  # the lock is gone: the same ledger works again
    record_figures("locked_ledger", exit_code=4, seconds_to_give_up=round(elapsed, 2))


def test_unopenable_path_exits_4(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", emulator=None, use_recording_sink=False)
    ws.db = tmp_path / "no" / "such" / "dir" / "ledger.db"
    proc = ws.tick("--base-url", "http://127.0.0.1:9")
    refused(proc, 4)


# -- a full disk for the sink -------------------------------------------------------------
def test_full_disk_sink_leaves_done_and_a_later_replay_consumes(seeded: Workspace) -> None:
    ws = seeded
    flag = ws.root / "disk-full"
    flag.touch()
    ws.env_extra["RECLAIM_TEST_SINK_FAIL_FLAG"] = str(flag)
    texts = ["disk full"]
    ok(ws.tick(jobs=write_jobs(ws.root / "full.jsonl", [{"input": t} for t in texts])))
    time.sleep(2.1)
    proc = ws.tick()
    ok(proc)  # row errors stay in their rows; exit 0
    assert "No space left on device" in proc.stderr
    rows = ws.view().rows()
    stuck = {k: r for k, r in rows.items() if r["status"] == "done"}
    assert {r["status"] for r in rows.values()} == {"done"}
    assert len(stuck) == 3  # the seeded two and the new one
    assert all("No space left" in r["last_error"] for r in stuck.values())
    assert all(k in ws.view().results() for k in stuck)  # the result is kept

    flag.unlink()
    ws.settle(confirm=False)
    assert {r["status"] for r in ws.view().rows().values()} == {"consumed"}
    for key in stuck:
        assert (ws.out / f"{key}.md").exists()


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_real_full_disk_for_the_directory_sink(
    make_workspace: Callable[..., Workspace], tiny_tmpfs: Path
) -> None:
    ws = make_workspace("tmpfs", use_recording_sink=False)
    ws.out = tiny_tmpfs / "articles"
    ws.out.mkdir()
    filler = tiny_tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 1024):
            pass
    except OSError:
        pass  # the disk is full now
    finally:
        os.close(fd)
    text = "no room for me"
    ok(ws.tick(jobs=write_jobs(ws.root / "j.jsonl", [{"input": text}])))
    time.sleep(2.1)
    proc = ws.tick()
    ok(proc)
    (row,) = ws.view().rows().values()
    assert row["status"] == "done" and "No space left" in (row["last_error"] or "")
    # No torn file, no temp left behind (temp files live in .reclaim-tmp/).
    assert [p.name for p in ws.out.iterdir() if p.name != ".reclaim-tmp"] == []
    assert not any((ws.out / ".reclaim-tmp").glob("*"))
    filler.unlink()
    ws.settle(confirm=False)
    (row,) = ws.view().rows().values()
    assert row["status"] == "consumed"
    assert (ws.out / f"{row['idem']}.md").read_text(encoding="utf-8").endswith(text)


# -- output paths that try to leave the sink directory -----------------------------------
def test_keys_that_escape_the_sink_directory_are_refused(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace("escape", use_recording_sink=False)
    bad = ["../x", "a/b", "..", "/etc/passwd", "a\\b", ".hidden", "x/../../y"]
    jobs = write_jobs(ws.root / "bad.jsonl", [{"input": "x", "key": k} for k in bad])
    proc = ws.cli("submit", str(jobs))
    refused(proc, 3, "nothing was reserved")
    for number in range(1, len(bad) + 1):
        assert f"line {number}: 'key' must be" in proc.stderr
    assert not ws.db.exists()

    # A row whose key is unsafe anyway (a hand-edited or foreign ledger): the
    # directory sink refuses it, the row stays done with the reason, nothing
    # is written outside the directory.
    ok(ws.tick(jobs=write_jobs(ws.root / "ok.jsonl", [{"input": "fine"}])))
    ws.settle(confirm=False)
    conn = sqlite3.connect(ws.db, isolation_level=None)
    try:
        now = time.time()
        conn.execute(
            Sql(
                lambda d: (
                    "INSERT INTO jobs(idem, spec, model, status, handle, created_at, state_since,"
                    f" updated_at, next_at) VALUES ({d.p}, {d.p}, {d.p}, 'done', 'emu-x', {d.p},"
                    f" {d.p}, {d.p}, {d.p})"
                )
            ),
            ("../escaped", json.dumps({"input": "x", "model": MODEL}), MODEL, now, now, now, now),
        )
        conn.execute(
            Sql(
                lambda d: (
                    "INSERT INTO results(job, idem, interaction_id, output_text, raw_json,"
                    " stored_at)"
                    f" SELECT id, idem, 'emu-x', 'escaped text', '{{}}', {d.p} FROM jobs WHERE"
                    f" idem = {d.p}"
                )
            ),
            (now, "../escaped"),
        )
    finally:
        conn.close()
    proc = ws.tick()
    ok(proc)
    row = ws.view().rows()["../escaped"]
    assert row["status"] == "done" and "refusing key" in row["last_error"]
    assert not (ws.root / "escaped.md").exists() and not (ws.out.parent / "escaped.md").exists()
