"""What the console asks of its engine: typed commands, their replies, one codec.

    command                             reply
    Tick(interval, paused)              Passed(report)   paused: no pass, an empty report
    Retry(idems) · Cancel(idems)        RowsOutcome(applied, refused)
    PollNow(idems)                      RowsOutcome   due at once: the next pass polls
    Discard(idems, archive)             RowsOutcome   archive line fsync'd, then deleted
    Adopt(idem, interaction_id)         RowsOutcome
    Answer(idem, text)                  RowsOutcome
    Recover(idems)                      Passed    always force: "recover now"
    Replay(idems | None)                Passed    always force: "replay now"
    Submit(jobs, send)                  Passed
    Prune(statuses, older_than_s, …)    Pruned(report)   archive fsync'd before each delete
    any of them, refused or broken      Failed(kind, error)

Both hosts run them with `execute` (execute.py). The process host and its
worker also exchange Launch → Started | Failed, Abort and Quit; a service's
control socket also answers ServiceStatus and SetPace(paused, interval,
concurrency) with ServiceState (or Failed). Every message is one JSON line:
`encode`/`decode`, tagged with the message's class name.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any, Self, TypeGuard, get_args

from reclaim_tui import errors
from reclaim_tui.config import Settings
from reclaim_tui.core.models import Actor, JobSpec, PassReport
from reclaim_tui.errors import ReclaimError

__all__ = [
    "ACTOR",
    "LINE_LIMIT",
    "Abort",
    "Adopt",
    "Answer",
    "Cancel",
    "Command",
    "Discard",
    "Failed",
    "Launch",
    "Message",
    "Passed",
    "PollNow",
    "Prune",
    "Pruned",
    "Quit",
    "Recover",
    "Replay",
    "Reply",
    "Retry",
    "RowCommand",
    "RowsOutcome",
    "ServiceState",
    "ServiceStatus",
    "SetPace",
    "Started",
    "Submit",
    "Tick",
    "decode",
    "encode",
    "is_command",
    "is_reply",
]

#: The console's engine writes its events as the console.
ACTOR = Actor.CONSOLE
#: Longest JSON line either side accepts (a 500-job submit chunk of big prompts).
LINE_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class Message:
    """One JSON object on the wire. Fields travel as they are unless a
    subclass converts them (tuples, JobSpecs, reports, Settings)."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls(**data)


# -- commands ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Tick(Message):
    """One reclaim pass, as the loop runs it every `interval` seconds;
    `paused`: no pass, the loop only says it is paused (the process
    registry, core/ledger/registry.py)."""

    interval: float | None = None
    paused: bool = False


@dataclass(frozen=True)
class _OnKeys(Message):
    """A command over ledger keys."""

    idems: tuple[str, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls(tuple(data["idems"]))


@dataclass(frozen=True)
class Retry(_OnKeys):
    """Send each row again; an OperatorError refuses that row only."""


@dataclass(frozen=True)
class Cancel(_OnKeys):
    """Cancel each row (at the API too when it was sent)."""


@dataclass(frozen=True)
class PollNow(_OnKeys):
    """Make each in-flight row due at once (the next pass polls it)."""


@dataclass(frozen=True)
class Discard(Message):
    """Delete each finished row, its archive line appended to `archive` first."""

    idems: tuple[str, ...]
    archive: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls(tuple(data["idems"]), str(data["archive"]))


@dataclass(frozen=True)
class Recover(_OnKeys):
    """Force orphan recovery of these rows."""


@dataclass(frozen=True)
class Adopt(Message):
    """Attach an interaction the operator found to a reserving or failed row."""

    idem: str
    interaction_id: str

    @property
    def idems(self) -> tuple[str, ...]:
        return (self.idem,)


@dataclass(frozen=True)
class Answer(Message):
    """Answer a row whose interaction requires action, or approve its research
    plan: a follow-up interaction (`previous_interaction_id`) carrying `text`
    (`refine`: ask the agent for a new plan instead, core/engine/planning.py)."""

    idem: str
    text: str
    refine: bool = False

    @property
    def idems(self) -> tuple[str, ...]:
        return (self.idem,)


@dataclass(frozen=True)
class Replay(Message):
    """Replay these done rows now, or every done row (`None`)."""

    idems: tuple[str, ...] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        idems = data.get("idems")
        return cls(None if idems is None else tuple(idems))


@dataclass(frozen=True)
class Submit(Message):
    """Reserve rows for the jobs; `send` also sends them in this pass."""

    jobs: tuple[JobSpec, ...]
    send: bool

    def to_json(self) -> dict[str, Any]:
        return {"jobs": [{"spec": j.to_json(), "key": j.key} for j in self.jobs], "send": self.send}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        jobs = []
        for item in data["jobs"]:
            spec = JobSpec.from_json(item["spec"])
            key = item.get("key")
            jobs.append(dataclasses.replace(spec, key=key) if key else spec)
        return cls(tuple(jobs), bool(data["send"]))


@dataclass(frozen=True)
class Prune(Message):
    """Delete terminal rows in `statuses` older than `older_than_s` (core/ledger/prune.py),
    archiving each batch to `archive` first when given."""

    statuses: tuple[str, ...]
    older_than_s: float
    archive: str | None = None
    #: The instant the age counts from: the one the operator's count used, so
    #: rows crossing the line while the confirmation was open are not taken.
    at: float | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        at = data.get("at")
        return cls(
            tuple(data["statuses"]),
            float(data["older_than_s"]),
            data.get("archive"),
            None if at is None else float(at),
        )


Command = (
    Tick | Retry | Cancel | Adopt | Answer | PollNow | Discard | Recover | Replay | Submit | Prune
)
RowCommand = Retry | Cancel | Adopt | Answer | PollNow | Discard


# -- replies ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Passed(Message):
    """A pass ran; what it did."""

    report: PassReport

    def to_json(self) -> dict[str, Any]:
        report = self.report
        return {"counts": dict(report.counts), "errors": [list(e) for e in report.errors]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        counts = Counter({str(k): int(v) for k, v in data["counts"].items()})
        return cls(PassReport(counts, [(str(i), str(m)) for i, m in data.get("errors", [])]))


@dataclass(frozen=True)
class Pruned(Message):
    """What a prune deleted: `PruneReport.as_json()` (ISO times)."""

    report: dict[str, Any]


@dataclass(frozen=True)
class RowsOutcome(Message):
    """A row action over several keys: how many applied, and each refusal."""

    applied: int = 0
    refused: list[str] = field(default_factory=list)
    #: Cancelled here, but the API's cancel failed: why, one line a row
    #: (the row is "cancel pending", core/engine/cancelling.py).
    pending: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Failed(Message):
    """The engine said no (`kind` names the ReclaimError) or broke (`crash`)."""

    kind: str
    error: str

    @classmethod
    def of(cls, exc: BaseException) -> Failed:
        if isinstance(exc, ReclaimError):
            return cls(type(exc).__name__, str(exc))
        return cls("crash", f"{type(exc).__name__}: {exc}")

    def exception(self) -> ReclaimError:
        """The error rebuilt on this side: the same class, found by name in `errors`."""
        if self.kind == "crash":
            return ReclaimError(f"engine error: {self.error}")
        found = getattr(errors, self.kind, None) if self.kind in errors.__all__ else None
        if not (isinstance(found, type) and issubclass(found, ReclaimError)):
            return ReclaimError(self.error)
        try:
            return found(self.error)
        except TypeError:
            # JobsFileError and NotCreatedError need more than a message, and
            # their extra fields do not travel: the base class carries the text.
            return ReclaimError(self.error)


Reply = Passed | RowsOutcome | Pruned | Failed


# -- the worker process's own messages ----------------------------------------------------
@dataclass(frozen=True)
class Launch(Message):
    """The worker's first line: call `opener` ("module:function") with the
    settings, the console's actor and `args`; `path` is the console's sys.path."""

    settings: Settings
    opener: str
    args: dict[str, Any]
    path: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "settings": self.settings.to_wire()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        settings = Settings.from_wire(data["settings"])
        return cls(settings, str(data["opener"]), dict(data["args"]), tuple(data["path"]))


@dataclass(frozen=True)
class Started(Message):
    """The engine is up: its owner, and the settings as the worker read them."""

    owner: str
    settings: dict[str, Any]


@dataclass(frozen=True)
class Abort(Message):
    """Cancel the command sent with id `target` (its console worker was cancelled)."""

    target: int


@dataclass(frozen=True)
class Quit(Message):
    """Cancel what runs, close the engine, exit."""


# -- a service's own state, over its control socket (control_server.py) ---------------
@dataclass(frozen=True)
class ServiceStatus(Message):
    """How the service runs now: replied with `ServiceState`."""


@dataclass(frozen=True)
class SetPace(Message):
    """Pause/resume the service, set its pass interval or calls in flight (None:
    as it is) → the new `ServiceState`, or Failed(ConfigError): nothing changed."""

    paused: Any = None
    interval: Any = None
    concurrency: Any = None


@dataclass(frozen=True)
class ServiceState(Message):
    """A service's own state (runner/service_state.py)."""

    state: str  # up / paused / draining (a stopped service answers nothing)
    interval: float
    concurrency: int
    max_concurrency: int | None  # the adaptive ceiling (None: a fixed limit)
    passes: int
    last_pass_at: float | None = None  # epoch seconds
    last_summary: str = ""
    #: (cause, message): its last pass found the API unreachable or refusing it
    last_unavailable: tuple[str, str] | None = None
    totals: dict[str, int] = field(default_factory=dict)
    pid: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        down = data.get("last_unavailable")
        data = {**data, "last_unavailable": None if down is None else (str(down[0]), str(down[1]))}
        return cls(**data)


_PROCESS_MESSAGES = (Launch, Started, Abort, Quit, ServiceStatus, SetPace, ServiceState)
#: Every message by its wire tag; the unions above are the one list of commands and replies.
_KINDS: dict[str, type[Message]] = {
    kind.__name__: kind for kind in (*get_args(Command), *get_args(Reply), *_PROCESS_MESSAGES)
}


def is_command(message: Message) -> TypeGuard[Command]:
    return isinstance(message, get_args(Command))


def is_reply(message: Message) -> TypeGuard[Reply]:
    return isinstance(message, get_args(Reply))


def encode(message: Message, ident: int = 0) -> bytes:
    """One JSON line: `{"id": ident, "type": "<class name>", ...fields}`."""
    body = {"id": ident, "type": type(message).__name__, **message.to_json()}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> tuple[int, Message]:
    """The id and the message of one `encode`d line."""
    data = json.loads(line)
    ident, kind = int(data.pop("id", -1)), data.pop("type", None)
    message_type = _KINDS.get(str(kind))
    if message_type is None:
        raise ReclaimError(f"unknown engine message {kind!r}")
    return ident, message_type.from_json(data)
