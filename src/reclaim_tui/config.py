"""One frozen Settings object built from flags and the environment; the
console's remembered settings (`ConsoleSettings`, a small TOML file); no I/O
at import."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reclaim_tui.core.models import MAX_TARGET_CHARS, TRANSPORTS, Actor, GonePolicy, OrphanPolicy
from reclaim_tui.errors import ConfigError

if TYPE_CHECKING:
    from reclaim_tui.core.engine.policy import EngineConfig

__all__ = [
    "COLUMN_NAMES",
    "DEFAULT_DB",
    "DEFAULT_MODEL",
    "DEFAULT_OUT",
    "PANELS",
    "ConsoleSettings",
    "Settings",
    "console_settings_path",
    "load_console_settings",
    "save_console_settings",
]

DEFAULT_DB = "./reclaim_ledger.db"
DEFAULT_MODEL = "gemini-flash-latest"
DEFAULT_OUT = "./articles"
#: Without --concurrency, calls in flight start here and grow up to the ceiling.
ADAPTIVE_START = 16
#: the most lanes a process runs (core/engine/lanes.py): each holds a server connection
MAX_LANES = 8
ADAPTIVE_CEILING = 64


@dataclass(frozen=True)
class Settings:
    db: str = DEFAULT_DB
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    out: str = DEFAULT_OUT
    sink: str | None = None
    # repr=False: the key never shows up in a log line, traceback or export.
    api_key: str | None = field(default=None, repr=False)
    #: API calls in flight; None: 16, or adaptive (16 up to 64, core/engine/pacing.py)
    #: with `adaptive_concurrency`
    concurrency: int | None = None
    adaptive_concurrency: bool = False
    batch_size: int = 500
    request_timeout: float = 30.0
    busy_timeout: float = 10.0
    lease_seconds: float | None = None
    max_attempts: int = 5
    first_poll: float = 2.0
    orphan_policy: OrphanPolicy = OrphanPolicy.RESUBMIT
    emulator_lookup: bool = False
    actor: Actor = Actor.CLI
    #: seconds a submitted job may run before it is cancelled (None: the
    #: defaults — no limit for model jobs, 4 h for agent jobs)
    deadline: float | None = None
    on_gone: GonePolicy = GonePolicy.RESUBMIT
    #: days the API keeps a stored interaction (55 paid, 1 free tier):
    #: `status` warns about submitted rows older than that
    retention_days: float = 55.0
    #: seconds a 404 inside retention is polled again before the row is held
    gone_grace: float = 6 * 3600.0
    #: where the API should send this ledger's webhook events (an inbox,
    #: `reclaim-tui inbox`): every create carries a webhook_config naming it
    webhook_url: str | None = None
    #: with webhooks: seconds an orphan waits for an event naming it
    webhook_grace: float = 900.0
    #: with webhooks: the age of a job at its first fallback poll
    webhook_poll: float = 120.0
    #: the HTTP transport of API calls: "aiohttp" (httpx-aiohttp's client under
    #: the SDK's httpx2 API: less CPU per call) or "httpx" (the SDK's own client)
    transport: str = "aiohttp"
    #: `--create`: start a new SQLite ledger even beside another one in its
    #: folder (core/ledger/sqlite/new_ledger.py)
    create_ledger: bool = False
    #: PostgreSQL: the send and reclaim passes as this many claim–write loops
    #: at once, each on a connection of its own (core/engine/lanes.py)
    lanes: int = 1

    @property
    def lease(self) -> float:
        """The lease outlasts any single call: 3 × (request timeout + busy timeout)."""
        minimum = 3 * (self.request_timeout + self.busy_timeout)
        return self.lease_seconds if self.lease_seconds is not None else max(120.0, minimum)

    def validate(self) -> Settings:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"--{f.name.replace('_', '-')} must be a finite number")
        if self.concurrency is not None and not 1 <= self.concurrency <= 1024:
            raise ConfigError("--concurrency must be between 1 and 1024")
        if not 1 <= self.lanes <= MAX_LANES:
            raise ConfigError(f"--lanes must be between 1 and {MAX_LANES}")
        if self.lanes > 1 and not _on_server(self.db):
            raise ConfigError(
                f"--lanes {self.lanes} needs a PostgreSQL ledger: SQLite takes one writer"
                " at a time, so a second lane would only wait for the first (on SQLite,"
                " a second process on the same ledger works while the first writes)"
            )
        if self.lanes > (self.concurrency or ADAPTIVE_START):
            raise ConfigError(
                f"--lanes {self.lanes} needs at least {self.lanes} API calls in flight"
                " (--concurrency): the calls are shared out over the lanes"
            )
        if self.batch_size < 1:
            raise ConfigError("--batch-size must be at least 1")
        if self.request_timeout <= 0 or self.busy_timeout < 0:
            raise ConfigError("timeouts must be positive")
        if self.max_attempts < 1:
            raise ConfigError("--max-attempts must be at least 1")
        minimum = 3 * (self.request_timeout + self.busy_timeout)
        if self.lease < minimum:
            raise ConfigError(
                f"--lease-seconds {self.lease:g} is shorter than 3 × (request timeout + busy"
                f" timeout) = {minimum:g}: a slow call could outlive its lease"
            )
        if self.first_poll < 0:
            raise ConfigError("--first-poll must not be negative")
        if not self.model.strip():
            raise ConfigError("--model must not be empty")
        if len(self.model) > MAX_TARGET_CHARS:
            raise ConfigError(
                f"--model is {len(self.model):,} characters long:"
                f" a model's name is at most {MAX_TARGET_CHARS}"
            )
        if not self.retention_days > 0:
            raise ConfigError("--retention-days must be positive")
        if not self.gone_grace >= 0:
            raise ConfigError("--gone-grace must not be negative")
        if self.deadline is not None and not self.deadline > 0:
            raise ConfigError("--deadline must be positive")
        if self.webhook_url is not None and not self.webhook_url.startswith(
            ("https://", "http://")
        ):
            raise ConfigError("--webhook-url must be an http(s) URL")
        if self.transport not in TRANSPORTS:
            raise ConfigError(f"--transport must be one of {', '.join(TRANSPORTS)}")
        if self.base_url is not None:
            _check_base_url(self.base_url)
        if self.webhook_grace < 0 or self.webhook_poll <= 0:
            raise ConfigError("--webhook-grace must not be negative, --webhook-poll positive")
        return self

    def engine_config(self, actor: Actor | None = None) -> EngineConfig:
        # Here, not at the top: a command that only reads the ledger (status, show,
        # export) never imports the engine.
        from reclaim_tui.core.engine.policy import EngineConfig

        config = EngineConfig(
            concurrency=self.concurrency or ADAPTIVE_START,
            max_concurrency=self.concurrency
            or (ADAPTIVE_CEILING if self.adaptive_concurrency else ADAPTIVE_START),
            batch_size=self.batch_size,
            lease_seconds=self.lease,
            max_attempts=self.max_attempts,
            first_poll=self.first_poll,
            orphan_policy=self.orphan_policy,
            # A create may land until its request timed out; the grace (one
            # more request timeout) covers a server that answers late.
            lookup_window=2 * self.request_timeout,
            actor=actor or self.actor,
            on_gone=self.on_gone,
            retention=self.retention_days * 86400.0,
            gone_grace=self.gone_grace,
        )
        if self.webhook_url:
            # Events wake the rows; polls are the rare fallback for events
            # that never come: later and sparser (up to every 30 min).
            config = replace(
                config,
                webhooks=True,
                webhook_grace=self.webhook_grace,
                first_poll=max(self.first_poll, self.webhook_poll),
                poll_cap=max(config.poll_cap, 1800.0),
            )
        if self.deadline is None:
            return config
        return replace(config, deadline_model=self.deadline, deadline_agent=self.deadline)

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_wire(self) -> dict[str, Any]:
        """Every setting but the API key, as JSON values (for the engine worker)."""
        # The key travels in the worker's environment: never on a pipe or in argv.
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api_key"}
        out["orphan_policy"] = self.orphan_policy.value
        out["on_gone"] = self.on_gone.value
        out["actor"] = self.actor.value
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Settings:
        """Settings from `to_wire`'s form; unknown names are ignored, the key is None."""
        known = {f.name for f in fields(cls)} - {"api_key"}
        values = {k: v for k, v in data.items() if k in known}
        values["orphan_policy"] = OrphanPolicy(values.get("orphan_policy", OrphanPolicy.RESUBMIT))
        values["actor"] = Actor(values.get("actor", Actor.CLI))
        values["on_gone"] = GonePolicy(values.get("on_gone", GonePolicy.RESUBMIT))
        return cls(**values)


#: The console's settings file is a few lines: a bigger one is not read whole.
MAX_SETTINGS_BYTES = 64 * 1024
#: The longest console interval between passes, in seconds (a day).
MAX_INTERVAL = 86_400.0

#: The console's panels an operator can hide (the detail pane, the loop log).
PANELS = ("detail", "log")
#: The ledger table's columns, as the operator names them (`columns = [...]`).
COLUMN_NAMES = (
    "key",
    "status",
    "model",
    "handle",
    "attempts",
    "age",
    "next",
    "updated",
    "error",
)


@dataclass(frozen=True)
class ConsoleSettings:
    """What the console remembers between runs; None: not set (the default applies)."""

    theme: str | None = None
    interval: float | None = None
    page_size: int | None = None
    hidden: frozenset[str] = frozenset()
    #: The detail pane's share of the lower panels' width (1–4, the log has 1).
    detail_width: int | None = None
    #: Ask before an action that sends a job to the API again (retry, recover).
    confirm: bool = True
    #: The table's columns the operator chose (COLUMN_NAMES); None: all that fit.
    columns: tuple[str, ...] | None = None
    #: Named filters (`[views] name = "filter text"`, the file only), by `:view NAME`.
    views: tuple[tuple[str, str], ...] = ()

    def to_toml(self) -> str:
        lines = ["# reclaim-tui console settings, rewritten by the console when one changes"]
        if self.theme is not None:
            lines.append(f"theme = {json.dumps(self.theme)}")
        if self.interval is not None:
            lines.append(f"interval = {self.interval!r}")
        if self.page_size is not None:
            lines.append(f"page_size = {self.page_size}")
        if self.detail_width is not None:
            lines.append(f"detail_width = {self.detail_width}")
        lines.append(f"hidden = {json.dumps(sorted(self.hidden))}")
        if not self.confirm:
            lines.append("confirm = false")
        if self.columns is not None:
            lines.append(f"columns = {json.dumps(list(self.columns))}")
        if self.views:  # a table last: the keys after it would be its own
            lines.append("\n[views]")
            lines += [f"{json.dumps(name)} = {json.dumps(text)}" for name, text in self.views]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, data: Mapping[str, Any]) -> ConsoleSettings:
        """ValueError names the first value that is not what it should be."""
        theme, interval = data.get("theme"), data.get("interval")
        page_size, width = data.get("page_size"), data.get("detail_width")
        hidden, confirm = data.get("hidden", []), data.get("confirm", True)
        if theme is not None and not isinstance(theme, str):
            raise ValueError("theme must be a string")
        if interval is not None and not (
            isinstance(interval, int | float)
            and not isinstance(interval, bool)
            and 0 < interval <= MAX_INTERVAL  # also refuses nan and inf
        ):
            raise ValueError(
                f"interval must be a number of seconds above 0, at most {MAX_INTERVAL:g}"
            )
        if page_size is not None and not (isinstance(page_size, int) and 10 <= page_size <= 5000):
            raise ValueError("page_size must be a whole number from 10 to 5000")
        if width is not None and not (isinstance(width, int) and 1 <= width <= 4):
            raise ValueError("detail_width must be 1, 2, 3 or 4")
        if not (isinstance(hidden, list) and set(hidden) <= set(PANELS)):
            raise ValueError(f"hidden must be a list of {', '.join(PANELS)}")
        if not isinstance(confirm, bool):
            raise ValueError("confirm must be true or false")
        columns = data.get("columns")
        if columns is not None and not (
            isinstance(columns, list) and columns and set(columns) <= set(COLUMN_NAMES)
        ):
            raise ValueError(f"columns must be a list of {', '.join(COLUMN_NAMES)}")
        views = data.get("views", {})
        if not (
            isinstance(views, dict)
            and all(isinstance(v, str) and name.strip() for name, v in views.items())
        ):
            raise ValueError('views must be a table of name = "filter text"')
        interval = float(interval) if interval is not None else None
        chosen = tuple(dict.fromkeys(columns)) if columns is not None else None
        named = tuple(views.items())
        return cls(theme, interval, page_size, frozenset(hidden), width, confirm, chosen, named)


def console_settings_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$RECLAIM_CONFIG`, else `$XDG_CONFIG_HOME/reclaim-tui/settings.toml`
    (`~/.config` when XDG_CONFIG_HOME is unset or empty, as the XDG spec says)."""
    env = os.environ if environ is None else environ
    if env.get("RECLAIM_CONFIG"):
        return Path(env["RECLAIM_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "reclaim-tui" / "settings.toml"


def load_console_settings(path: Path) -> tuple[ConsoleSettings, str | None]:
    """The file's settings, or the defaults and why the file could not be
    used (None: it was fine, or there is none yet)."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_SETTINGS_BYTES + 1)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        return ConsoleSettings(), None
    except (OSError, UnicodeDecodeError) as exc:
        return ConsoleSettings(), f"cannot read {path}: {exc}"
    if len(raw) > MAX_SETTINGS_BYTES:
        return ConsoleSettings(), f"{path} is over {MAX_SETTINGS_BYTES:,} bytes"
    import tomllib  # the console's file only: not every command's start-up

    try:
        return ConsoleSettings.from_toml(tomllib.loads(text)), None
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        return ConsoleSettings(), f"{path} is not valid: {exc}"
    except RecursionError:
        return ConsoleSettings(), f"{path} is not valid: nested too deeply to read"


def save_console_settings(path: Path, settings: ConsoleSettings) -> None:
    """Write the file atomically (a reader never sees half of it); OSError says why not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(settings.to_toml(), encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _check_base_url(url: str) -> None:
    """Refuse a base URL no request can be sent to: one that is not http(s),
    names no host, has a port that is not a number, or holds a space. Such a
    URL fails every call before it leaves the machine, on every tick: a bad
    setting, said at the start. The URL is not quoted: it may hold a password."""
    from urllib.parse import urlsplit

    if not url.strip():
        raise ConfigError("--base-url must not be empty (omit it for the real Gemini API)")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError("--base-url must not hold spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket
        raise ConfigError("--base-url is not a URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError("--base-url must be an http:// or https:// URL")
    if not parts.hostname:
        raise ConfigError("--base-url must name a host: http(s)://HOST[:PORT][/PATH]")
    try:
        _ = parts.port  # read for its ValueError
    except ValueError:
        raise ConfigError("--base-url's port must be a number from 0 to 65535") from None


def _on_server(db: str) -> bool:
    """Whether `db` names a PostgreSQL ledger (imported here: only a
    command given `--lanes` asks)."""
    from reclaim_tui.core.ledger.opening import ledger_file

    return ledger_file(db) is None
