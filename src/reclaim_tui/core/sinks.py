"""Result sinks: where a finished job's result goes (the side effect).

The contract (DESIGN.md rule 5): a sink receives the job's idempotency key
and its stored result, and **must be idempotent by key**. The ledger delivers
at least once — a crash after the sink but before `consumed` is committed
means the sink runs again on the next pass — so "exactly once" holds for the
*effect* only when delivering the same key twice leaves the same state as
delivering it once (overwrite a file named by the key, upsert by key, send
with the key as the provider's idempotency key, …).

A custom sink is named `module:callable`; the callable is called as
`fn(idem, result)` with a `StoredResult`, may be sync (run in a worker
thread, so it never blocks the event loop) or async, and signals failure by
raising: the row then stays `done` and is replayed later.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.keys import valid_key
from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.outputs import output_media
from reclaim_tui.errors import ConfigError, SinkError

__all__ = ["CallableSink", "DirectorySink", "Sink", "load_sink"]


class Sink(Protocol):
    async def deliver(self, idem: str, result: StoredResult) -> None:
        """Apply the result's side effect; idempotent by `idem`; raise on failure."""
        ...


TEMP_DIR = ".reclaim-tmp"


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    # The only portable way to read the umask is to set it; done once, at the
    # first delivery, before any other thread of ours creates files.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, data: bytes, temp_dir: Path) -> None:
    # Temp file on the same filesystem, fsync, rename: a reader sees the old
    # file or the whole new one, never a torn write. The caller fsyncs the
    # directory once for all its renames (_fsync_dir) before reporting success.
    fd, tmp = tempfile.mkstemp(dir=temp_dir, prefix=f"{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes 0600; the delivered file gets what any tool would
        # create under the user's umask (0644 under the usual 022).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _fsync_dir(directory: Path) -> None:
    """Make the renames durable: until the directory is synced, a power cut
    may forget them (the row is not `consumed` before this returns)."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class DirectorySink:
    """Writes `<idem>.md` (the output text) and `<idem>.json` (the full
    interaction) into one directory, atomically (temp files in its
    `.reclaim-tmp/` subdirectory). Idempotent: a second delivery of the same
    key rewrites the same bytes."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path_for(self, idem: str, suffix: str) -> Path:
        """The target path; refuses any key that could leave the directory."""
        if not valid_key(idem):
            raise SinkError(f"refusing key {idem!r}: not a safe file name")
        base = self.directory.resolve()
        target = (base / f"{idem}{suffix}").resolve()
        if target.parent != base:
            raise SinkError(f"refusing key {idem!r}: path escapes {base}")
        return target

    def _write(self, idem: str, result: StoredResult) -> None:
        try:
            md = self.path_for(idem, ".md")
            js = self.path_for(idem, ".json")
            # Temp files live in their own small directory, so sweeping a
            # killed delivery's leftovers for this key is a scan of the
            # deliveries in flight, not of every article ever written.
            temp_dir = self.directory / TEMP_DIR
            temp_dir.mkdir(parents=True, exist_ok=True)
            with os.scandir(temp_dir) as entries:
                for entry in entries:
                    if entry.name.startswith(f"{idem}."):
                        Path(entry.path).unlink(missing_ok=True)
            _atomic_write(md, result.output_text.encode("utf-8"), temp_dir)
            crashpoint("inside_sink")
            self._write_media(idem, result, temp_dir)
            pretty = json.dumps(result.raw, indent=2, sort_keys=True, ensure_ascii=False)
            _atomic_write(js, pretty.encode("utf-8") + b"\n", temp_dir)
            _fsync_dir(js.parent)
        except OSError as exc:
            raise SinkError(f"cannot write result for {idem} in {self.directory}: {exc}") from exc

    def _write_media(self, idem: str, result: StoredResult, temp_dir: Path) -> None:
        """Images, audio and video the model produced, beside the .md as
        `<idem>.<n>.<ext>`; an output the API keeps by URI is listed in
        `<idem>.media.txt` instead (the URI may expire: fetch it soon)."""
        uris: list[str] = []
        for n, media in enumerate(output_media(result.raw), start=1):
            if media.data is not None:
                path = self.path_for(idem, f".{n}.{media.extension}")
                _atomic_write(path, media.data, temp_dir)
            elif media.uri is not None:
                uris.append(f"{n}\t{media.kind}\t{media.mime_type}\t{media.uri}\n")
        if uris:
            _atomic_write(self.path_for(idem, ".media.txt"), "".join(uris).encode(), temp_dir)

    async def deliver(self, idem: str, result: StoredResult) -> None:
        await asyncio.to_thread(self._write, idem, result)

    def __repr__(self) -> str:
        return f"DirectorySink({str(self.directory)!r})"


class CallableSink:
    """Adapts a user's `fn(idem, result)` (sync or async) to the Sink protocol."""

    def __init__(self, fn: Callable[[str, StoredResult], Any], name: str = "") -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))

    async def deliver(self, idem: str, result: StoredResult) -> None:
        try:
            if inspect.iscoroutinefunction(self.fn):
                await self.fn(idem, result)
                return
            value = await asyncio.to_thread(self.fn, idem, result)
            if inspect.isawaitable(value):
                await value
        except SinkError:
            raise
        except Exception as exc:
            raise SinkError(f"sink {self.name} failed for {idem}: {exc!r}") from exc

    def __repr__(self) -> str:
        return f"CallableSink({self.name})"


def load_sink(spec: str | None, out_dir: str | Path) -> Sink:
    """`None` → DirectorySink(out_dir); `module:callable` → that callable.

    A callable that is a class or factory returning an object with `deliver`
    is not guessed at: the name must point at the function to call.
    """
    if not spec:
        return DirectorySink(out_dir)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--sink {spec!r}: expected module:callable")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--sink {spec!r}: cannot import {module_name}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"--sink {spec!r}: {module_name} has no {attr}")
    if not callable(target):
        raise ConfigError(f"--sink {spec!r}: {attr} is not callable")
    fn: Callable[[str, StoredResult], Any | Awaitable[Any]] = target
    return CallableSink(fn, spec)
