"""Jobs-file validation, keys, and the sinks' safety and idempotency."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reclaim_tui.core.jobsfile import MAX_INPUT_BYTES, parse_jobs, read_jobs_file
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import DirectorySink, load_sink
from reclaim_tui.errors import ConfigError, JobsFileError, SinkError


def test_every_bad_line_is_named() -> None:
    lines = [
        '{"input": "ok"}',
        "not json",
        '{"input": ""}',
        '{"prompt": "x"}',
        '{"input": "x", "key": "../../etc/passwd"}',
        '{"input": "x", "model": 3}',
        "",
        "# a comment",
        '{"input": "x", "config": {"background": false}}',
        "[1, 2]",
    ]
    with pytest.raises(JobsFileError) as err:
        parse_jobs(lines, source="jobs.jsonl", default_model="m")
    assert [n for n, _ in err.value.problems] == [2, 3, 4, 5, 6, 9, 10]
    assert "jobs.jsonl: 7 bad line(s), nothing was reserved" in str(err.value)


def test_good_file_and_keys() -> None:
    jobs = parse_jobs(
        ['{"input": "a"}', '{"input": "b", "model": "x", "key": "job-1"}'],
        source="f",
        default_model="m",
    )
    assert jobs[0] == JobSpec(input="a", model="m")
    assert idempotency_key(jobs[0]) == idempotency_key(JobSpec(input="a", model="m"))
    assert len(idempotency_key(jobs[0])) == 32
    assert idempotency_key(jobs[1]) == "job-1"


def test_duplicate_own_keys_are_refused() -> None:
    with pytest.raises(JobsFileError, match="already used on line 1"):
        parse_jobs(
            ['{"input": "a", "key": "k"}', '{"input": "b", "key": "k"}'],
            source="f",
            default_model="m",
        )


def test_an_explicit_key_equal_to_a_derived_key_refuses_the_file() -> None:
    derived = idempotency_key(JobSpec(input="a", model="m"))
    explicit = json.dumps({"input": "b", "key": derived})
    for lines, (first, second) in (
        (['{"input": "a"}', explicit], (1, 2)),
        ([explicit, '{"input": "a"}'], (1, 2)),
    ):
        with pytest.raises(JobsFileError) as err:
            parse_jobs(lines, source="f", default_model="m")
        assert err.value.problems == [(second, f"key {derived!r} already used on line {first}")]
    # The same spec twice without a key is one job, as before.
    assert len(parse_jobs(['{"input": "a"}', '{"input": "a"}'], source="f", default_model="m")) == 2


def test_invalid_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "jobs.jsonl"
    path.write_bytes(b'{"input": "ok"}\n{"input": "ok 2"}\n{"input": "caf\xe9"}\n')
    with pytest.raises(JobsFileError) as err:
        read_jobs_file(path, default_model="m")
    assert [n for n, _ in err.value.problems] == [3]
    assert "not UTF-8" in str(err.value) and "line 0" not in str(err.value)


def test_a_missing_file_says_so_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(JobsFileError) as err:
        read_jobs_file(path, default_model="m")
    message = str(err.value)
    assert f"cannot read {path}" in message and "No such file" in message
    assert "line 0" not in message


def test_a_line_that_is_not_json_says_so_plainly() -> None:
    """Issue 15, defect 10: the parser's "Expecting value: line 1 column 1
    (char 0)" named neither the problem nor what a line should be."""
    lines = [
        "hello",  # a bare word
        "{'prompt': 'x'}",  # Python's quotes
        '{"prompt": "x"',  # not closed
        '{"prompt": "x"} {"prompt": "y"}',  # two objects on one line
        '{"prompt": "x",}',  # a trailing comma
    ]
    with pytest.raises(JobsFileError) as err:
        parse_jobs(lines, source="jobs.jsonl", default_model="m")
    problems = dict(err.value.problems)
    assert sorted(problems) == [1, 2, 3, 4, 5]
    for number, why in problems.items():
        assert why.startswith("not JSON"), why
        assert "Expecting" not in why and "char " not in why, why
        # What a line should look like, said once.
        assert ('{"input": ' in why) is (number == 1), why
    assert "column 1" in problems[1]
    assert "double quotes" in problems[2]
    assert "ends before" in problems[3]
    assert "one object per line" in problems[4]
    assert "double quotes" in problems[5] or "comma" in problems[5]
    # The example it gives is a job this parser takes.
    example = problems[1].split("e.g. ", 1)[1]
    assert len(parse_jobs([example], source="example", default_model="m")) == 1


def test_size_is_measured_as_sent_not_as_typed() -> None:
    # 600 KB of UTF-8 (two bytes a character) is 1.8 MB of \u escapes on the wire.
    line = json.dumps({"input": "é" * 300_000}, ensure_ascii=False)
    assert len(line.encode("utf-8")) < MAX_INPUT_BYTES
    with pytest.raises(JobsFileError, match="as sent"):
        parse_jobs([line], source="f", default_model="m")
    ascii_line = json.dumps({"input": "e" * 300_000})
    assert len(parse_jobs([ascii_line], source="f", default_model="m")) == 1


def _result(text: str = "hello") -> StoredResult:
    return StoredResult("k1", "i1", text, None, json.dumps({"id": "i1"}), 0.0)


async def test_directory_sink_is_idempotent(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path / "out")
    await sink.deliver("k1", _result())
    await sink.deliver("k1", _result())
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [".reclaim-tmp", "k1.json", "k1.md"]
    assert list((tmp_path / "out" / ".reclaim-tmp").iterdir()) == []  # no temp left
    assert (tmp_path / "out" / "k1.md").read_text() == "hello"


@pytest.mark.parametrize("umask", [0o022, 0o027])
async def test_delivered_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    import os
    import stat

    old = os.umask(umask)
    try:
        await DirectorySink(tmp_path / "out").deliver("k1", _result())
    finally:
        os.umask(old)
    for name in ("k1.md", "k1.json"):
        mode = stat.S_IMODE((tmp_path / "out" / name).stat().st_mode)
        assert mode == 0o666 & ~umask, oct(mode)


@pytest.mark.parametrize("key", ["../x", "a/b", ".hidden", "A", "x" * 64, ""])
async def test_directory_sink_refuses_escaping_keys(tmp_path: Path, key: str) -> None:
    with pytest.raises(SinkError):
        await DirectorySink(tmp_path).deliver(key, _result())
    assert list(tmp_path.iterdir()) == []


async def test_directory_sink_disk_error_is_a_sink_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(SinkError, match="cannot write"):
        await DirectorySink(blocker / "out").deliver("k1", _result())


def test_load_sink_errors() -> None:
    with pytest.raises(ConfigError, match="module:callable"):
        load_sink("nocolon", "out")
    with pytest.raises(ConfigError, match="cannot import"):
        load_sink("no_such_module_xyz:fn", "out")
    with pytest.raises(ConfigError, match="has no"):
        load_sink("json:nope", "out")


def test_core_does_not_import_textual() -> None:
    code = (
        "import sys, reclaim_tui.core.engine.engine, reclaim_tui.core.gemini, reclaim_tui.cli;"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')"
        " or m.startswith('reclaim_tui.tui')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_agent_jobs_and_their_own_labels() -> None:
    """Issue 11: Deep Research jobs name an agent; jobs carry cost labels."""
    lines = [
        json.dumps(
            {
                "input": "Research the history of SQLite's WAL",
                "agent": "deep-research-preview-04-2026",
                "config": {"agent_config": {"type": "deep-research"}},
                "labels": {"team": "docs", "projekt": "überblick", "empty": ""},
            }
        ),
        '{"input": "x", "model": "m", "agent": "a"}',
        '{"input": "x", "labels": {"idem": "mine"}}',
        '{"input": "x", "labels": {"Team": "a"}}',
        '{"input": "x", "labels": {"team": "' + "a" * 64 + '"}}',
        '{"input": "x", "config": {"agent": "a"}}',
    ]
    with pytest.raises(JobsFileError) as err:
        parse_jobs(lines, source="f", default_model="m")
    assert [n for n, _ in err.value.problems] == [2, 3, 4, 5, 6]
    assert "exclusive" in err.value.problems[0][1]
    assert "ledger's own" in err.value.problems[1][1]
    (job,) = parse_jobs(lines[:1], source="f", default_model="m")
    assert job.agent == "deep-research-preview-04-2026" and job.model == ""
    assert job.target == job.agent and job.labels["projekt"] == "überblick"
    assert JobSpec.from_json(job.to_json()) == JobSpec(
        job.input, "", job.config, None, job.agent, job.labels
    )


def test_a_plain_model_job_keeps_its_key() -> None:
    """Keys of existing ledgers must not change: the canonical JSON of a model
    job without labels is what earlier versions hashed."""
    job = JobSpec(input="a", model="m")
    assert job.to_json() == '{"input":"a","model":"m"}'


@pytest.mark.parametrize(
    ("change", "message"),
    [({"retention_days": 0.0}, "--retention-days"), ({"deadline": -3.0}, "--deadline")],
)
def test_settings_refuse_a_non_positive_retention_or_deadline(
    change: dict[str, float], message: str
) -> None:
    from reclaim_tui.config import Settings

    with pytest.raises(ConfigError, match=message):
        Settings(**change).validate()  # type: ignore[arg-type]


@pytest.mark.parametrize("number", [2**63, -(2**63) - 1, 10**400])
def test_a_whole_number_past_64_bits_is_refused_where_the_line_is_read(number: int) -> None:
    """The API's integers are 64-bit: a larger one in a job's config is a typo."""
    line = json.dumps({"input": "a", "config": {"max_output_tokens": number}})
    with pytest.raises(JobsFileError) as caught:
        parse_jobs([line], source="jobs.jsonl", default_model="m")
    assert "past the largest whole number a job can carry" in str(caught.value)
    assert "line 1" in str(caught.value)
    fine = json.dumps(
        {"input": "a", "config": {"max_output_tokens": 2**63 - 1, "seed": -(2**63) + 1}}
    )
    assert len(parse_jobs([fine], source="jobs.jsonl", default_model="m")) == 1


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ('{"input": "a", "key": "k-one", "key": "k-two"}', "key"),
        ('{"input": "send this", "input": "no, this"}', "input"),
        ('{"input": "a", "config": {"tools": [], "tools": [{"x": 1}]}}', "tools"),
        ('{"input": [{"role": "user", "role": "model", "content": "a"}]}', "role"),
    ],
)
def test_a_name_given_twice_in_one_object_is_refused_on_its_line(line: str, name: str) -> None:
    # JSON keeps the last of two equal names silently: the job reserved would
    # not be the one the line seems to say ("k-one" or "send this").
    with pytest.raises(JobsFileError) as err:
        parse_jobs(['{"input": "fine"}', "", line], source="j.jsonl", default_model="m")
    [(number, why)] = err.value.problems
    assert number == 3
    assert f"{name!r} is given twice" in why


@pytest.mark.parametrize("config", ["[]", "false", "0", '""', "[1]", "true", '"x"'])
def test_a_config_that_is_not_an_object_is_refused(config: str) -> None:
    with pytest.raises(JobsFileError) as err:
        parse_jobs([f'{{"input": "a", "config": {config}}}'], source="j", default_model="m")
    [(number, why)] = err.value.problems
    assert number == 1
    assert "'config' must be an object" in why


def test_a_null_config_is_no_config() -> None:
    # null is "not given" for every optional field (key, labels, deadline, previous).
    [job] = parse_jobs(['{"input": "a", "config": null}'], source="j", default_model="m")
    assert job.config == {}
    assert job == parse_jobs(['{"input": "a"}'], source="j", default_model="m")[0]
