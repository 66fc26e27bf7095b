"""The jobs file: JSON Lines, one job per line.

Each line is an object with `input` (a non-empty string, or a JSON list /
object the API accepts as input) and optionally `model` (string) or `agent`
(an agent such as `deep-research-preview-04-2026`, instead of a model),
`key` (the job's own idempotency key: 1–63 of a-z 0-9 _ -, starting with a
letter or digit), `config` (an object, or null for none, of extra
`interactions.create` arguments, `agent_config` among them), `labels` (the job's own labels,
for cost attribution; `idem` is the ledger's), `deadline` (seconds the
job may run once submitted before it is cancelled) and `previous` (the key
of a job this one continues, of the same file or of the ledger: sent once
that job is done, with its interaction as `previous_interaction_id`; one
that names no job is refused when the jobs are reserved, where the ledger
is known).
Blank lines and lines starting with `#` are skipped. The whole file is
validated before anything is reserved: one bad line refuses the file, with
every bad line named; so do jobs whose `previous` chain is a cycle (a job
naming itself, two naming each other): they could never run. An object
that gives a name twice is refused (core/job_numbers.py): JSON would keep
the last silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from reclaim_tui.core.chains import chain_cycles, cycle_text
from reclaim_tui.core.job_numbers import load_line
from reclaim_tui.core.keys import idempotency_key, valid_key
from reclaim_tui.core.models import ATTEMPT_LABEL, MAX_TARGET_CHARS, JobSpec
from reclaim_tui.errors import JobsFileError

__all__ = [
    "MAX_INPUT_BYTES",
    "check_job",
    "key_clash",
    "parse_jobs",
    "parse_jobs_bytes",
    "read_jobs_file",
    "read_jobs_stream",
    "spec_summary",
]

#: A job bigger than this, as it is SENT (JSON with non-ASCII escaped, which
#: is how a request body may travel: up to 6 bytes per character), is a
#: mistake, not a prompt; it would be refused as 413 by a server that takes
#: 1 MiB, such as an aiohttp one with its default limit.
MAX_INPUT_BYTES = 1_000_000
#: The longest `deadline` a job may name: 55 days, as long as the API keeps an
#: interaction (core/ledger/retention.py's PAID_TIER_DAYS; not imported: it loads the ledger).
MAX_DEADLINE = 55 * 86_400
_ALLOWED = {"input", "model", "agent", "key", "config", "labels", "deadline", "previous"}
# create() arguments the ledger sets itself; a job may not override them.
_RESERVED_CONFIG = {"model", "agent", "input", "background", "labels", "stream"}
# A chain names its previous job by key ("previous"); the interaction id is
# the ledger's to fill in once that job is done.
#: The label the ledger writes on every create: a job may not set it.
RESERVED_LABEL = "idem"


def _validate(obj: Any, default_model: str) -> JobSpec:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - _ALLOWED)
    if unknown:
        allowed = ", ".join(sorted(_ALLOWED))
        raise ValueError(f"unknown field(s) {', '.join(unknown)} (allowed: {allowed})")
    value = _input(obj)
    model, agent = _target(obj, default_model)
    key = obj.get("key")
    if key is not None and (not isinstance(key, str) or not valid_key(key)):
        raise ValueError(
            "'key' must be 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit"
        )
    config = obj.get("config")
    if config is None:  # null, as for every optional field: not given
        config = {}
    elif not isinstance(config, dict):  # [], false, 0 and "" too: no empty stand-in for {}
        raise ValueError(f"'config' must be an object, not {_json_type(config)}")
    clash = sorted(set(config) & _RESERVED_CONFIG)
    if clash:
        raise ValueError(f"'config' may not set {', '.join(clash)}")
    labels = _labels(obj.get("labels"))
    deadline = obj.get("deadline")
    if deadline is not None and (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not 0 < deadline <= MAX_DEADLINE  # also refuses NaN, and a huge int before float()
    ):
        raise ValueError(
            f"'deadline' must be a positive number of seconds, at most {MAX_DEADLINE:,.0f}"
            " (55 days, the API's retention)"
        )
    previous = obj.get("previous")
    if previous is not None and (not isinstance(previous, str) or not valid_key(previous)):
        raise ValueError("'previous' must be the key of another job")
    if previous is not None and "previous_interaction_id" in config:
        raise ValueError("name either 'previous' or config 'previous_interaction_id', not both")
    return JobSpec(
        input=value,
        model=model,
        config=config,
        key=key,
        agent=agent,
        labels=labels,
        deadline=float(deadline) if deadline is not None else None,
        previous=previous,
    )


def _json_type(value: Any) -> str:
    """The JSON name of a value's type, as the line's writer knows it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else type(value).__name__


def _input(obj: dict[str, Any]) -> Any:
    if "input" not in obj:
        raise ValueError("missing 'input'")
    value = obj["input"]
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("'input' is empty")
    elif not isinstance(value, list | dict) or not value:
        raise ValueError("'input' must be a non-empty string, list or object")
    return value


def _target(obj: dict[str, Any], default_model: str) -> tuple[str, str | None]:
    """(model, agent): an agent job names no model (the API refuses both)."""
    if "agent" in obj and "model" in obj:
        raise ValueError("'model' and 'agent' are exclusive: name one")
    field = "agent" if "agent" in obj else "model"
    value = obj.get(field, default_model)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"'{field}' must be a non-empty string")
    if len(value) > MAX_TARGET_CHARS:
        raise ValueError(f"'{field}' is {len(value):,} characters long: at most {MAX_TARGET_CHARS}")
    return ("", value.strip()) if field == "agent" else (value.strip(), None)


def _label_text_ok(text: str, *, key: bool) -> bool:
    # The API's rule (google-genai's `labels` docstring): ≤ 63 characters of
    # lowercase letters (non-ASCII lowercase too), digits, '_' and '-'; a key
    # starts with a letter, a value may be empty.
    if len(text) > 63 or (key and not (text and text[0].isalpha() and text[0].islower())):
        return False
    return all((c.isalpha() and c.islower()) or c.isdigit() or c in "_-" for c in text)


def _labels(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ValueError("'labels' must be an object of string values")
    for reserved in (RESERVED_LABEL, ATTEMPT_LABEL):
        if reserved in raw:
            raise ValueError(f"label {reserved!r} is the ledger's own")
    for name, value in raw.items():
        if not _label_text_ok(name, key=True) or not _label_text_ok(value, key=False):
            raise ValueError(
                f"label {name!r}: keys and values are ≤ 63 lowercase letters, digits, '_'"
                " or '-', a key starting with a letter"
            )
    return dict(raw)


def _check_sent_size(job: JobSpec) -> None:
    body = {"input": job.input, "target": job.target, "labels": dict(job.labels)}
    body.update(job.config)
    sent = len(json.dumps(body, ensure_ascii=True))
    if sent > MAX_INPUT_BYTES:
        raise ValueError(
            f"the job is {sent:,} bytes as sent (JSON, non-ASCII escaped), over {MAX_INPUT_BYTES:,}"
        )


def spec_summary(job: JobSpec) -> str:
    """A job in a few words: its model or agent and the start of its input."""
    text = job.input if isinstance(job.input, str) else json.dumps(job.input, ensure_ascii=False)
    text = " ".join(text.split())
    return f"{job.target} {text if len(text) <= 60 else text[:59] + '…'!r}"


def key_clash(stored: JobSpec, new: JobSpec) -> str | None:
    """Why `new` cannot take the key a job of the ledger (`stored`) already
    has, or None when the two are the same job."""
    if stored.to_json() == new.to_json():
        return None
    before, after = json.loads(stored.to_json()), json.loads(new.to_json())
    differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return (
        f"key {new.key!r} is already in the ledger for another job ({', '.join(differ)} differ):"
        f" stored {spec_summary(stored)}, this one {spec_summary(new)}; give it another key"
    )


#: The json module's messages, said for someone writing a jobs file by hand.
_JSON_REASONS = {
    "Expecting value": "a value was expected (text goes in double quotes)",
    "Expecting property name enclosed in double quotes": (
        "names go in double quotes, and no comma after the last one"
    ),
    "Expecting ',' delimiter": "a comma is missing",
    "Expecting ':' delimiter": "a colon is missing after a name",
    "Extra data": "more follows the first object: one object per line",
    "Unterminated string starting at": "a string is not closed",
    "Invalid \\escape": "a backslash escape JSON does not know",
    "Invalid control character at": "a tab or line break inside a string (write \\t or \\n)",
}
_JSON_EXAMPLE = '{"input": "Write a haiku about SQLite"}'


def _json_problem(text: str, exc: json.JSONDecodeError, *, example: bool) -> str:
    """What is wrong with a line that is not JSON, without the parser's jargon
    (and, the first time, what a line looks like)."""
    if exc.pos >= len(text) and exc.msg != "Extra data":
        reason = 'the line ends before its JSON does (a {, [ or " not closed)'
    else:
        reason = _JSON_REASONS.get(exc.msg, exc.msg[:1].lower() + exc.msg[1:])
    hint = f"; each line is one object, e.g. {_JSON_EXAMPLE}" if example else ""
    return f"not JSON at column {exc.colno}: {reason}{hint}"


def _refuse_cycles(jobs: Sequence[JobSpec], lines: Sequence[int]) -> list[tuple[int, str]]:
    keys = [idempotency_key(job) for job in jobs]
    line_of = dict(zip(keys, lines, strict=True))
    previous_of = {key: job.previous for key, job in zip(keys, jobs, strict=True)}
    problems: list[tuple[int, str]] = []
    for key, cycle in chain_cycles(previous_of, keys).items():
        where = ", ".join(f"{k!r} on line {line_of[k]}" for k in cycle[:-1])
        problems.append((line_of[key], f"{cycle_text(cycle)} ({where})"))
    return problems


def _checked(obj: Any, default_model: str) -> JobSpec:
    """A line's object as a job, with every check a line gets (ValueError,
    RecursionError or UnicodeError say what is wrong)."""
    job = _validate(obj, default_model)
    idempotency_key(job)
    job.to_json().encode("utf-8")  # lone surrogates cannot be stored or sent
    _check_sent_size(job)
    return job


def check_job(fields: dict[str, Any], *, source: str, default_model: str) -> JobSpec:
    """One job built outside a jobs file (a prompt typed in the console), with
    the checks a jobs file's line gets: JobsFileError says what is wrong,
    before anything is reserved (a 1 MB prompt was reserved, then refused
    with 413 by the API)."""
    return check_jobs([fields], source=source, default_model=default_model)[0]


def check_jobs(jobs: Iterable[Any], *, source: str, default_model: str) -> list[JobSpec]:
    """Jobs given as objects (the Python API's dicts), with the checks a jobs
    file's lines get, each and across them (a key used twice, a cycle of
    `previous` keys): JobsFileError names every bad one by its number (1, …)."""
    checked, problems = _checked_all(enumerate(jobs, start=1), default_model)
    if problems:
        raise JobsFileError(source, sorted(problems))
    return checked


def _checked_all(
    numbered: Iterable[tuple[int, Any]], default_model: str
) -> tuple[list[JobSpec], list[tuple[int, str]]]:
    jobs: list[JobSpec] = []
    problems: list[tuple[int, str]] = []
    keys: dict[str, tuple[int, bool]] = {}  # key → (first number, explicit?)
    numbers: list[int] = []
    for number, obj in numbered:
        try:
            job = _checked(obj, default_model)
            idem = idempotency_key(job)
        except (ValueError, RecursionError, UnicodeError) as exc:
            problems.append((number, str(exc).splitlines()[0][:200]))
            continue
        first = keys.get(idem)
        if first is not None and (job.key is not None or first[1]):
            # An explicit key equal to another job's (explicit or derived) would make
            # one vanish: refuse, naming both. The same spec twice with no key is one job.
            problems.append((number, f"key {idem!r} already used on line {first[0]}"))
            continue
        keys.setdefault(idem, (number, job.key is not None))
        jobs.append(job)
        numbers.append(number)
    return jobs, problems + _refuse_cycles(jobs, numbers)


def parse_jobs(lines: Iterable[str], *, source: str, default_model: str) -> list[JobSpec]:
    """Validate every line; return the jobs or raise JobsFileError naming each bad line."""
    problems: list[tuple[int, str]] = []
    example_said = False  # what a line looks like, shown with the first non-JSON line only
    objects: list[tuple[int, Any]] = []  # each line's object, with its number
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
            problems.append((number, f"line is over {MAX_INPUT_BYTES} bytes"))
            continue
        try:
            objects.append((number, load_line(text)))
        except json.JSONDecodeError as exc:
            problems.append((number, _json_problem(text, exc, example=not example_said)))
            example_said = True
        except ValueError as exc:  # a number that is no number (NaN, 1e400), or too long
            problems.append((number, str(exc)[:200]))
        except RecursionError:
            problems.append((number, "nested too deeply to read"))
    jobs, more = _checked_all(objects, default_model)
    problems = sorted(problems + more)
    if problems:
        raise JobsFileError(source, problems)
    return jobs


def parse_jobs_bytes(data: bytes, *, source: str, default_model: str) -> list[JobSpec]:
    """Split raw bytes into lines and parse them; a line that is not UTF-8 is
    named by its number like any other bad line."""
    # split on b"\n" only: U+2028/U+2029/U+0085 are legal inside a JSON
    # string and must not end a line.
    return _parse_raw(data.split(b"\n"), [], source=source, default_model=default_model)


def read_jobs_stream(stream: BinaryIO, *, source: str, default_model: str) -> list[JobSpec]:
    """Parse a jobs file from a binary stream without ever holding more than
    one bounded line of it: a line past `READ_LIMIT` bytes is named and its
    rest skipped (a file with no line end in sight, such as /dev/zero, is
    refused once `SKIP_LIMIT` bytes of it went by)."""
    problems: list[tuple[int, str]] = []
    return _parse_raw(
        _bounded_lines(stream, problems), problems, source=source, default_model=default_model
    )


#: Longest raw line held in memory: a job's limit plus room for spaces around it.
READ_LIMIT = 2 * MAX_INPUT_BYTES
#: How much of one over-long line is skipped, looking for its end, before reading stops.
SKIP_LIMIT = 64 * MAX_INPUT_BYTES


def _bounded_lines(stream: BinaryIO, problems: list[tuple[int, str]]) -> Iterator[bytes]:
    number = 0
    while raw := stream.readline(READ_LIMIT + 1):
        number += 1
        if len(raw) <= READ_LIMIT or raw.endswith(b"\n"):
            yield raw.removesuffix(b"\n")
            continue
        problems.append((number, f"line is over {MAX_INPUT_BYTES} bytes"))
        yield b""  # counted as a line; its rest is skipped below
        skipped = 0
        while not raw.endswith(b"\n"):
            if skipped > SKIP_LIMIT:
                problems.append((number, f"no line end in {skipped:,} bytes: reading stopped"))
                return
            raw = stream.readline(MAX_INPUT_BYTES)
            if not raw:
                return
            skipped += len(raw)


def _parse_raw(
    raws: Iterable[bytes],
    problems: list[tuple[int, str]],
    *,
    source: str,
    default_model: str,
) -> list[JobSpec]:
    lines: list[str] = []
    utf8: list[tuple[int, str]] = []
    for number, raw in enumerate(raws, start=1):
        try:
            lines.append(raw.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as exc:
            utf8.append((number, f"not UTF-8 (byte {exc.start + 1} of the line)"))
            lines.append("")
    problems = problems + utf8
    try:
        jobs = parse_jobs(lines, source=source, default_model=default_model)
    except JobsFileError as exc:
        problems = sorted(problems + exc.problems)
        raise JobsFileError(source, problems) from None
    if problems:
        raise JobsFileError(source, sorted(problems))
    return jobs


def read_jobs_file(path: str | Path, *, default_model: str) -> list[JobSpec]:
    """Read and parse a jobs file; a file that cannot be read is a
    JobsFileError that says why, with its path."""
    try:
        with open(path, "rb") as stream:
            return read_jobs_stream(stream, source=str(path), default_model=default_model)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise JobsFileError(str(path), [(0, f"cannot read {path}: {reason}")]) from exc
