"""Bad input through the real CLI (issue 22, points 5, 7 and 9): each is
refused with a clear message and its exit code, nothing lost, no traceback.
`python -m reclaim_tui` in a fresh process, as tests/e2e/test_cli.py does."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from tests.helpers import run_cli
from tests.helpers.procs import clean_env, write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


def _specs(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT idem, spec FROM jobs ORDER BY id").fetchall()
    finally:
        conn.close()


def test_a_key_already_in_the_ledger_for_another_spec_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ledger.db"
    first = write_jobs(tmp_path / "first.jsonl", [{"key": "weekly", "input": "old text"}])
    second = write_jobs(
        tmp_path / "second.jsonl",
        [{"input": "a job of its own"}, {"key": "weekly", "input": "new text"}],
    )
    submit = ["submit", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k"]
    run_cli([*submit, str(first)], timeout=60)
    before = _specs(db)
    assert [idem for idem, _ in before] == ["weekly"]
    # The same job again is already present (exit 0: not a clash).
    again = run_cli([*submit, str(first)], timeout=60)
    assert again.returncode == 0 and "1 already in the ledger" in again.stdout, again.stderr
    clash = run_cli([*submit, str(second)], timeout=60)
    assert clash.returncode == 3, (clash.stdout, clash.stderr)
    assert "Traceback" not in clash.stderr
    assert "'weekly'" in clash.stderr
    assert "'old text'" in clash.stderr and "'new text'" in clash.stderr
    assert _specs(db) == before, "nothing was reserved"


# -- point 7: numeric flags -------------------------------------------------------------


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # every command is lazy: load each
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def _numeric_flags() -> list[tuple[str, click.Command, click.Option]]:
    return [
        (name, command, param)
        for name, command in _commands(cli)
        for param in command.params
        if isinstance(param, click.Option)
        and isinstance(param.type, click.types.FloatParamType | click.types.IntParamType)
    ]


def test_every_numeric_flag_of_every_command_refuses_nan_inf_negative_and_huge() -> None:
    flags = _numeric_flags()
    assert len(flags) > 60, "the walk finds the commands' numeric flags"
    accepted: list[str] = []
    for name, command, option in flags:
        flag = max(option.opts, key=len)
        huge = "1e300" if isinstance(option.type, click.types.FloatParamType) else str(10**30)
        for value in ("nan", "inf", "-inf", "-1", huge):
            # Parsing only (make_context converts every value, runs nothing).
            try:
                command.make_context(name, [flag, value], resilient_parsing=False)
            except click.UsageError as exc:
                assert exc.exit_code == 2
                assert flag in exc.format_message(), (name, flag, exc.format_message())
                continue
            accepted.append(f"{name} {flag} {value}")
    assert accepted == []


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--first-poll", "inf"),
        ("--busy-timeout", "inf"),
        ("--busy-timeout", "nan"),
        ("--request-timeout", "nan"),
        ("--request-timeout", "inf"),
        ("--lease-seconds", "nan"),
    ],
)
def test_the_reported_flags_exit_2_naming_the_flag(tmp_path: Path, flag: str, value: str) -> None:
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "hello"}])
    db = tmp_path / "ledger.db"
    args = ["tick", "--db", str(db), "--jobs", str(jobs), "--base-url", DEAD_API, "--api-key", "k"]
    proc = run_cli([*args, flag, value], timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert flag in proc.stderr and "Traceback" not in proc.stderr
    assert not db.exists(), "nothing was done"


# -- point 9: files that never end ------------------------------------------------------


def _limited(args: list[str], stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI under a 2 GiB address-space limit: reading a file whole fails
    fast with MemoryError instead of taking the machine's memory."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    with open(stdin or os.devnull, "rb") as source:
        return subprocess.run(
            [sys.executable, "-m", "reclaim_tui", *args],
            env=clean_env(),
            stdin=source,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=limit,
        )


def test_a_jobs_file_without_line_ends_is_refused_without_reading_it_whole(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ledger.db"
    args = ["submit", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k"]
    for proc in (_limited([*args, "/dev/zero"]), _limited([*args, "-"], Path("/dev/zero"))):
        assert proc.returncode == 3, proc.stderr[-2000:]
        assert "over 1000000 bytes" in proc.stderr and "reading stopped" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not db.exists() or _specs(db) == []


def test_every_bad_line_is_still_named_around_an_over_long_one(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_bytes(
        b'{"input": "fine"}\n' + b"x" * 5_000_000 + b'\n{"input": 5}\n{"input": "also fine"}'
    )
    db = tmp_path / "ledger.db"
    proc = run_cli(["submit", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k", str(jobs)])
    assert proc.returncode == 3, proc.stderr
    assert "line 2: line is over 1000000 bytes" in proc.stderr
    assert "line 3: 'input' must be" in proc.stderr


def test_numbers_past_a_float_in_a_jobs_file_are_bad_lines_not_tracebacks(
    tmp_path: Path,
) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        '{"input": "a", "deadline": 1' + "0" * 400 + "}\n"
        '{"input": "b", "deadline": NaN}\n'
        '{"input": "c", "config": {"generation_config": {"temperature": 1e400}}}\n'
        '{"input": "d", "deadline": 60}\n'
    )
    db = tmp_path / "ledger.db"
    proc = run_cli(["submit", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k", str(jobs)])
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    for line in (1, 2, 3):
        assert f"line {line}:" in proc.stderr
    assert "line 4" not in proc.stderr


def test_the_emulators_flags_are_explained_and_refuse_nan() -> None:
    """Issue 25, 8: `emulator --help` listed flags with no text; the numeric
    walk never reached the lazily loaded emulator, whose `--queued-share nan`
    was accepted (issue 22, 7)."""
    ctx = click.Context(cli)
    emulator = cli.get_command(ctx, "emulator")
    assert emulator is not None
    unexplained = [p.opts[0] for p in emulator.params if isinstance(p, click.Option) and not p.help]
    assert unexplained == []
    result = CliRunner().invoke(cli, ["emulator", "--queued-share", "nan"])
    assert result.exit_code == 2
    assert "--queued-share" in result.output


# -- a base URL no request can be sent to -----------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("htp://127.0.0.1:9", "--base-url must be an http:// or https:// URL"),
        ("ftp://127.0.0.1:9", "--base-url must be an http:// or https:// URL"),
        ("not a url", "--base-url must not hold spaces"),
        ("127.0.0.1:9", "--base-url must be an http:// or https:// URL"),
        ("http://", "--base-url must name a host"),
        ("http:///v1beta", "--base-url must name a host"),
        ("http://127.0.0.1:99999", "--base-url's port must be a number"),
        ("", "--base-url must not be empty"),
    ],
)
def test_a_base_url_no_request_can_leave_by_is_a_bad_option(
    tmp_path: Path, url: str, why: str
) -> None:
    """Such a URL failed every create on the machine itself: refused at the
    start (exit 2), not sent tick after tick at an attempt each."""
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "a", "key": "a1"}])
    db = tmp_path / "ledger.db"
    for transport in ("aiohttp", "httpx"):
        args = ["--db", str(db), "--base-url", url, "--api-key", "k", "--transport", transport]
        for proc in (
            run_cli(["tick", *args, "--jobs", str(jobs)], timeout=60),
            run_cli(["submit", *args, str(jobs)], timeout=60),
        ):
            assert proc.returncode == 2, (url, proc.stdout, proc.stderr)
            assert f"error: {why}" in proc.stderr
            assert "Traceback" not in proc.stderr
    assert not db.exists(), "nothing was reserved"


def test_a_base_url_the_python_api_is_given_is_checked_as_the_flag() -> None:
    from reclaim_tui.api.settings import settings_for
    from reclaim_tui.errors import ConfigError

    with pytest.raises(ConfigError, match="--base-url must be an http:// or https:// URL"):
        settings_for({"base_url": "htp://127.0.0.1:9"}, environ={})
    with pytest.raises(ConfigError, match="--base-url must name a host"):
        settings_for({}, environ={"RECLAIM_BASE_URL": "http://"})
    assert settings_for({"base_url": "https://u:p@[::1]:8/v"}, environ={}).base_url


# -- `-` (stdin) that cannot be read ----------------------------------------------------


def _no_stdin() -> None:
    os.close(0)


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "write-only"])
def test_jobs_from_a_stdin_that_cannot_be_read_are_refused(tmp_path: Path, closed: bool) -> None:
    """`--jobs -` or `submit -` with stdin closed (`<&-`) or opened for writing
    only: a named refusal (exit 3), not a traceback; nothing reserved."""
    db = tmp_path / "ledger.db"
    write_only = tmp_path / "write-only"
    for args in (
        ["tick", "--jobs", "-", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k"],
        ["submit", "--no-send", "-", "--db", str(db)],
    ):
        with open(write_only, "wb") as stdin:
            proc = subprocess.run(
                [sys.executable, "-m", "reclaim_tui", *args],
                env=clean_env(),
                stdin=None if closed else stdin,
                preexec_fn=_no_stdin if closed else None,
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert proc.returncode == 3, (args, proc.stderr)
        assert "error: cannot read <stdin>: " in proc.stderr, proc.stderr
        assert "nothing was reserved" in proc.stderr and "Traceback" not in proc.stderr
    assert not db.exists() or _specs(db) == []


# -- a --db-file that is not a line of text ---------------------------------------------


def test_a_db_file_that_is_not_text_is_a_bad_option(tmp_path: Path) -> None:
    """`--db-file` given the ledger itself (mixed up with --db), a file not in
    UTF-8 or one far longer than any --db: refused naming the flag (exit 2),
    never a traceback, and nothing of the file quoted."""
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "a", "key": "a1"}])
    db = tmp_path / "ledger.db"
    assert run_cli(["submit", "--no-send", "--db", str(db), str(jobs)]).returncode == 0
    latin1 = tmp_path / "latin1"
    latin1.write_bytes("/tmp/ledger-caf\u00e9.db\n".encode("latin-1"))
    long = tmp_path / "long"
    long.write_text("x" * 20_000 + "\n")
    for given, why in (
        (db, "it is not text (it holds a NUL byte)"),
        (latin1, "it is not UTF-8 text"),
        (long, "it is over 16 KiB"),
    ):
        proc = run_cli(["status", "--db-file", str(given)], timeout=60)
        assert proc.returncode == 2, (given, proc.stdout, proc.stderr)
        assert "--db-file" in proc.stderr and why in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "caf" not in proc.stderr


def test_a_db_file_that_never_ends_is_not_read_whole(tmp_path: Path) -> None:
    proc = _limited(["status", "--db-file", "/dev/zero"])
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "--db-file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_db_file_written_with_a_byte_order_mark_names_the_ledger(tmp_path: Path) -> None:
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "a", "key": "a1"}])
    db = tmp_path / "ledger.db"
    assert run_cli(["submit", "--no-send", "--db", str(db), str(jobs)]).returncode == 0
    db_file = tmp_path / "db-line"
    db_file.write_bytes(b"\xef\xbb\xbf" + str(db).encode() + b"\r\n")
    proc = run_cli(["status", "--json", "--db-file", str(db_file)], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["reserving"]["count"] == 1
