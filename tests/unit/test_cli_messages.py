"""What the CLI says when it refuses: an ambiguous key prefix with its true
count (on both engines), a model name too long said once with its limit,
and a key given to `recover` many times refused once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.cli.common import resolve_key
from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.jobsfile import parse_jobs
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.errors import ConfigError, JobsFileError, OperatorError

#: Nothing listens on port 9: no command here reaches an API.
DEAD_API = "http://127.0.0.1:9"


async def test_an_ambiguous_prefix_says_how_many_keys_match(
    db_url: str, clock: ManualClock
) -> None:
    ledger = await open_ledger(db_url, clock=clock)
    try:
        spec = json.dumps({"input": "hello", "model": "m"})
        keys = [f"job{n}" for n in range(1, 13)] + [f"six{n}" for n in range(6)]
        keys += [f"five{n}" for n in range(5)] + ["two-a", "two-b", "only-one"]
        await ledger.insert_jobs([(k, spec, "m") for k in keys], "t")

        with pytest.raises(OperatorError) as twelve:
            await resolve_key(ledger, "job")
        assert str(twelve.value) == (
            "job is ambiguous (more than 5 keys): job1, job10, job11, job12, job2 and more"
        )
        with pytest.raises(OperatorError, match=r"^six is ambiguous \(more than 5 keys\): "):
            await resolve_key(ledger, "six")
        with pytest.raises(OperatorError) as five:
            await resolve_key(ledger, "five")
        assert str(five.value) == "five is ambiguous (5 keys): five0, five1, five2, five3, five4"
        with pytest.raises(OperatorError, match=r"^two- is ambiguous \(2 keys\): two-a, two-b$"):
            await resolve_key(ledger, "two-")
        # A unique prefix, and a key that is also a prefix of others, name one row.
        assert await resolve_key(ledger, "only") == "only-one"
        assert await resolve_key(ledger, "job1") == "job1"
        with pytest.raises(OperatorError, match="no job with key nope"):
            await resolve_key(ledger, "nope")
    finally:
        await ledger.close()


def test_a_model_name_too_long_is_refused_once_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^--model is 201 characters long: .* at most 200$"):
        Settings(model="m" * 201).validate()
    assert Settings(model="m" * 200).validate().model == "m" * 200

    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"input": "a"}\n{"input": "b"}\n')
    db = str(tmp_path / "ledger.db")
    result = CliRunner().invoke(
        cli, ["submit", "--no-send", str(jobs), "--db", db, "--model", "m" * 201]
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("201 characters") == 1 and "--model" in result.output
    assert "line" not in result.output and "non-empty" not in result.output


def test_a_jobs_file_names_too_long_says_so_with_the_limit() -> None:
    lines = [
        json.dumps({"input": "a", "model": "m" * 201}),
        json.dumps({"input": "b", "agent": "a" * 300}),
        json.dumps({"input": "c", "model": " "}),
        json.dumps({"input": "d", "model": "m" * 200}),
    ]
    with pytest.raises(JobsFileError) as caught:
        parse_jobs(lines, source="f", default_model="m")
    assert caught.value.problems == [
        (1, "'model' is 201 characters long: at most 200"),
        (2, "'agent' is 300 characters long: at most 200"),
        (3, "'model' must be a non-empty string"),
    ]


def test_recover_takes_each_key_once(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"input": "a", "key": "a1"}\n{"input": "b", "key": "b1"}\n')
    db = str(tmp_path / "ledger.db")
    runner = CliRunner()
    env = {"GEMINI_API_KEY": "x", "RECLAIM_BASE_URL": DEAD_API}
    submitted = runner.invoke(cli, ["submit", "--no-send", str(jobs), "--db", db], env=env)
    assert submitted.exit_code == 0, submitted.output

    # a1 three times, once by its unique prefix: one refusal for it, then b1's.
    args = ["recover", "a1", "a1", "a", " a1", "b1", "a1", "--db", db]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code != 0, result.output
    assert result.output.count("a1 is reserving, not an orphan") == 1, result.output
    assert result.output.count("b1 is reserving, not an orphan") == 1, result.output
    assert result.output.index("a1 is") < result.output.index("b1 is")
