"""The jobs file: JSON Lines, one job per line.

Each line is an object with `input` (a non-empty string, or a JSON list /
object the API accepts as input) and optionally `model` (string) or `agent`
(an agent such as `deep-research-preview-04-2026`, instead of a model),
`key` (the job's own idempotency key: 1–63 of a-z 0-9 _ -, starting with a
letter or digit), `config` (an object of extra `interactions.create`
arguments, `agent_config` among them), `labels` (the job's own labels,
for cost attribution; `idem` is the ledger's), `deadline` (seconds the
job may run once submitted before it is cancelled) and `previous` (the key
of a job this one continues: sent once that job is done, with its
interaction as `previous_interaction_id`).
Blank lines and lines starting with `#` are skipped. The whole file is
validated before anything is reserved: one bad line refuses the file, with
every bad line named.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reclaim_tui.core.keys import idempotency_key, valid_key
from reclaim_tui.core.models import ATTEMPT_LABEL, JobSpec
from reclaim_tui.errors import JobsFileError

__all__ = ["MAX_INPUT_BYTES", "parse_jobs", "parse_jobs_bytes", "read_jobs_file"]

#: A job bigger than this, as it is SENT (JSON with non-ASCII escaped, which
#: is how a request body may travel: up to 6 bytes per character), is a
#: mistake, not a prompt; it would be refused as 413 by a server that takes
#: 1 MiB, such as an aiohttp one with its default limit.
MAX_INPUT_BYTES = 1_000_000
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
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError("'config' must be an object")
    clash = sorted(set(config) & _RESERVED_CONFIG)
    if clash:
        raise ValueError(f"'config' may not set {', '.join(clash)}")
    labels = _labels(obj.get("labels"))
    deadline = obj.get("deadline")
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, int | float) or deadline <= 0
    ):
        raise ValueError("'deadline' must be a positive number of seconds")
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
    if "agent" in obj:
        agent = obj["agent"]
        if "model" in obj:
            raise ValueError("'model' and 'agent' are exclusive: name one")
        if not isinstance(agent, str) or not agent.strip() or len(agent) > 200:
            raise ValueError("'agent' must be a non-empty string")
        return "", agent.strip()
    model = obj.get("model", default_model)
    if not isinstance(model, str) or not model.strip() or len(model) > 200:
        raise ValueError("'model' must be a non-empty string")
    return model.strip(), None


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


def parse_jobs(lines: Iterable[str], *, source: str, default_model: str) -> list[JobSpec]:
    """Validate every line; return the jobs or raise JobsFileError naming each bad line."""
    jobs: list[JobSpec] = []
    problems: list[tuple[int, str]] = []
    example_said = False  # what a line looks like, shown with the first non-JSON line only
    keys: dict[str, tuple[int, bool]] = {}  # key → (first line, explicit?)
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
            problems.append((number, f"line is over {MAX_INPUT_BYTES} bytes"))
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append((number, _json_problem(text, exc, example=not example_said)))
            example_said = True
            continue
        except RecursionError:
            problems.append((number, "nested too deeply to read"))
            continue
        try:
            job = _validate(obj, default_model)
            idem = idempotency_key(job)
            job.to_json().encode("utf-8")  # lone surrogates cannot be stored or sent
            _check_sent_size(job)
        except (ValueError, RecursionError, UnicodeError) as exc:
            problems.append((number, str(exc).splitlines()[0][:200]))
            continue
        first = keys.get(idem)
        if first is not None and (job.key is not None or first[1]):
            # An explicit key equal to another line's key (explicit or derived)
            # would make one of the two jobs vanish: refuse, naming both lines.
            # Two lines with the same spec and no key are the same job.
            problems.append((number, f"key {idem!r} already used on line {first[0]}"))
            continue
        keys.setdefault(idem, (number, job.key is not None))
        jobs.append(job)
    if problems:
        raise JobsFileError(source, problems)
    return jobs


def parse_jobs_bytes(data: bytes, *, source: str, default_model: str) -> list[JobSpec]:
    """Split raw bytes into lines and parse them; a line that is not UTF-8 is
    named by its number like any other bad line."""
    lines: list[str] = []
    problems: list[tuple[int, str]] = []
    # split on b"\n" only: U+2028/U+2029/U+0085 are legal inside a JSON
    # string and must not end a line.
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as exc:
            problems.append((number, f"not UTF-8 (byte {exc.start + 1} of the line)"))
            lines.append("")
    try:
        jobs = parse_jobs(lines, source=source, default_model=default_model)
    except JobsFileError as exc:
        problems = sorted(problems + exc.problems)
        raise JobsFileError(source, problems) from None
    if problems:
        raise JobsFileError(source, problems)
    return jobs


def read_jobs_file(path: str | Path, *, default_model: str) -> list[JobSpec]:
    """Read and parse a jobs file; a file that cannot be read is a
    JobsFileError that says why, with its path."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise JobsFileError(str(path), [(0, f"cannot read {path}: {reason}")]) from exc
    return parse_jobs_bytes(data, source=str(path), default_model=default_model)
