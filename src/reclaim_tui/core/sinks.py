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

A sink may also offer `deliver_many` (the `BatchSink` protocol): the engine
then hands it a pass's whole batch at once, so the directory sink makes a
batch durable with two flushes instead of three `fsync`s per job.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import functools
import importlib
import inspect
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.keys import valid_key
from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.outputs import output_media
from reclaim_tui.core.sink_temp import TEMP_DIR, TempFolder
from reclaim_tui.errors import ConfigError, SinkError

__all__ = ["BatchSink", "CallableSink", "DirectorySink", "Sink", "load_sink"]


class Sink(Protocol):
    async def deliver(self, idem: str, result: StoredResult) -> None:
        """Apply the result's side effect; idempotent by `idem`; raise on failure."""
        ...


@runtime_checkable
class BatchSink(Protocol):
    async def deliver_many(
        self, items: Sequence[tuple[str, StoredResult]]
    ) -> list[BaseException | None]:
        """Deliver every item (same contract as `deliver`); one outcome per
        item, in order: None once its effect is durable, else its error."""
        ...


#: A media block's type as a JSON string token: inside a string a quote is
#: escaped, so the token appears only as a value of the document itself.
_MEDIA_TOKENS = ('"image"', '"audio"', '"video"')


def _may_hold_media(raw_json: str) -> bool:
    """Whether the stored interaction may hold an image, audio or video
    block (False: it holds none, and need not be parsed to find them)."""
    return any(token in raw_json for token in _MEDIA_TOKENS)


def _fsync_dir(directory: Path) -> None:
    """Make the renames durable: until the directory is synced, a power cut
    may forget them (the row is not `consumed` before this returns)."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@functools.lru_cache(maxsize=1)
def _libc_syncfs() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    fn = getattr(ctypes.CDLL(name, use_errno=True), "syncfs", None)
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    syncfs: Callable[[int], int] = fn
    return syncfs


#: The first Linux whose syncfs(2) returns the filesystem's writeback errors: an older
#: one returns 0 whatever became of the data it flushed.
SYNCFS_REPORTS_ERRORS_FROM = (5, 8)


def kernel_release() -> str:
    """The running Linux kernel's release (`uname -r`), or "" on another system."""
    uname = os.uname()
    return uname.release if uname.sysname == "Linux" else ""


def _syncfs_reports_errors(release: str) -> bool:
    found = re.match(r"(\d+)\.(\d+)", release)
    return found is not None and (int(found[1]), int(found[2])) >= SYNCFS_REPORTS_ERRORS_FROM


def _flush_files(folder: TempFolder, names: Sequence[str]) -> None:
    """Make the data of every temp file in `names` (in `folder`) durable.

    Linux's syncfs(2) flushes the whole filesystem in one call, far cheaper than
    an fsync per file on a batch (benchmarks/README.md). It is used only where it
    reports writeback errors (`SYNCFS_REPORTS_ERRORS_FROM`): before that a failed
    writeback still returned 0, and rows would be marked consumed whose files are
    not on disk. Elsewhere (an older kernel, another system, an old libc) every
    file is fsync'd, which reports its own errors; the caller syncs the directory
    after the renames either way.
    """
    syncfs = _libc_syncfs() if _syncfs_reports_errors(kernel_release()) else None
    if syncfs is not None:
        if syncfs(folder.fd) == 0:
            return
        err = ctypes.get_errno()
        if err != errno.ENOSYS:
            raise OSError(err, os.strerror(err), str(folder.path))
    folder.fsync_each(names)


class DirectorySink:
    """Writes `<idem>.md` (the output text) and `<idem>.json` (the full
    interaction) into one directory, atomically: temp files in its
    `.reclaim-tmp/` subdirectory, made durable, then renamed over the
    targets, then the directory synced. A reader sees a key's old file or
    the whole new one, never a torn write. Idempotent: a second delivery of
    the same key rewrites the same bytes. The temp folder must be a real
    folder of this user (`core/sink_temp.py`): anything else is refused
    (SinkFolderError), never written or cleaned up through.

    A batch is staged whole (every temp file written), flushed once, renamed,
    and the directory synced once: two flushes per batch instead of three
    fsyncs per job, with the same order (data durable before the rename that
    shows it; renames durable before the engine commits `consumed`)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._base: Path | None = None

    def path_for(self, idem: str, suffix: str) -> Path:
        """The target path; refuses any key that could leave the directory.

        A valid key is a plain file name (no separator, no dot), so the target
        is always a direct child; a symlink there is replaced, not followed
        (rename(2)). The directory itself is resolved once.
        """
        if not valid_key(idem):
            raise SinkError(f"refusing key {idem!r}: not a safe file name")
        if self._base is None:
            self._base = self.directory.resolve()
        return self._base / f"{idem}{suffix}"

    def check(self) -> None:
        """Refuse (SinkFolderError) a temp folder that is a link, not a
        folder or not this user's, before any pass. A missing one is made at
        the first delivery; one that cannot be looked at is said by each
        delivery (its row's error), as a folder that cannot be written is."""
        try:
            folder = TempFolder.open(self.directory / TEMP_DIR, create=False)
        except SinkError:
            raise
        except OSError:
            return
        if folder is not None:
            folder.close()

    def _stage(
        self, idem: str, result: StoredResult, folder: TempFolder, leftovers: Sequence[str]
    ) -> list[tuple[str, Path]]:
        """Every file of one delivery written to temp files, (temp name,
        target) each; on an error the ones already written are removed.
        `leftovers`: temp files a killed delivery of this key left, removed
        first."""
        staged: list[tuple[str, Path]] = []
        try:
            for name in leftovers:
                folder.remove(name)
            md = self.path_for(idem, ".md")
            staged.append((folder.write(md, [result.output_text]), md))
            if _may_hold_media(result.raw_json):
                staged.extend(self._stage_media(idem, result, folder))
            # The stored text as it is: a large result is neither parsed
            # again nor encoded again to be delivered.
            js = self.path_for(idem, ".json")
            staged.append((folder.write(js, [result.raw_json, "\n"]), js))
        except BaseException:
            for tmp, _ in staged:
                folder.remove(tmp)
            raise
        return staged

    def _stage_media(
        self, idem: str, result: StoredResult, folder: TempFolder
    ) -> list[tuple[str, Path]]:
        """Images, audio and video the model produced, beside the .md as
        `<idem>.<n>.<ext>`; an output the API keeps by URI is listed in
        `<idem>.media.txt` instead (the URI may expire: fetch it soon)."""
        staged: list[tuple[str, Path]] = []
        uris: list[str] = []
        for n, media in enumerate(output_media(result.raw), start=1):
            if media.data is not None:
                path = self.path_for(idem, f".{n}.{media.extension}")
                staged.append((folder.write(path, media.data), path))
            elif media.uri is not None:
                uris.append(f"{n}\t{media.kind}\t{media.mime_type}\t{media.uri}\n")
        if uris:
            path = self.path_for(idem, ".media.txt")
            staged.append((folder.write(path, "".join(uris).encode()), path))
        return staged

    def _write_many(self, items: Sequence[tuple[str, StoredResult]]) -> list[BaseException | None]:
        outcomes: list[BaseException | None] = [None] * len(items)
        todo: list[int] = []
        for n, (idem, _) in enumerate(items):
            try:
                self.path_for(idem, ".md")  # a refused key creates nothing
                todo.append(n)
            except SinkError as exc:
                outcomes[n] = exc
        if not todo:
            return outcomes
        try:
            folder = TempFolder.open(self.directory / TEMP_DIR)  # SinkFolderError: the pass
        except SinkError:
            raise
        except OSError as exc:  # the folder cannot be made (read-only, full): each row's error
            return [out or self._error(items[n][0], exc) for n, out in enumerate(outcomes)]
        assert folder is not None  # made when missing
        with folder:
            written = self._write_staged(items, todo, folder)
        for n in todo:
            outcomes[n] = written[n]
        return outcomes

    def _write_staged(
        self, items: Sequence[tuple[str, StoredResult]], todo: Sequence[int], folder: TempFolder
    ) -> dict[int, BaseException | None]:
        """The outcome of each of `todo`: None only once its files are renamed
        into place and the directory synced; an error in any step before that
        (listing the temp folder included) is the outcome of every delivery it
        left unfinished."""
        outcomes: dict[int, BaseException | None] = {}
        staged: list[tuple[int, list[tuple[str, Path]]]] = []
        try:
            leftovers = folder.leftovers()
            for n in todo:
                idem, result = items[n]
                try:
                    staged.append((n, self._stage(idem, result, folder, leftovers.get(idem, []))))
                except SinkError as exc:
                    outcomes[n] = exc
                except OSError as exc:
                    outcomes[n] = self._error(idem, exc)
            if staged:
                _flush_files(folder, [tmp for _, files in staged for tmp, _ in files])
                renamed: list[int] = []
                for n, files in staged:
                    try:
                        for tmp, target in files:
                            folder.replace(tmp, target)
                        renamed.append(n)
                    except OSError as exc:
                        # This key's target cannot be replaced (a directory
                        # stands there, …): this delivery fails, not the batch.
                        outcomes[n] = self._error(items[n][0], exc)
                        for tmp, _ in files:
                            folder.remove(tmp)
                    crashpoint("inside_sink")
                _fsync_dir(self.directory)
                outcomes.update(dict.fromkeys(renamed))
        except OSError as exc:
            # The listing, the flush or the directory sync failed: no delivery
            # of this batch is known durable; each stays `done` and is
            # delivered again.
            for _, files in staged:
                for tmp, _ in files:
                    folder.remove(tmp)
            for n in todo:
                outcomes.setdefault(n, self._error(items[n][0], exc))
        return outcomes

    def _error(self, idem: str, exc: OSError) -> SinkError:
        err = SinkError(f"cannot write result for {idem} in {self.directory}: {exc}")
        err.__cause__ = exc
        return err

    def _write(self, idem: str, result: StoredResult) -> None:
        (outcome,) = self._write_many([(idem, result)])
        if outcome is not None:
            raise outcome

    async def deliver(self, idem: str, result: StoredResult) -> None:
        await asyncio.to_thread(self._write, idem, result)

    async def deliver_many(
        self, items: Sequence[tuple[str, StoredResult]]
    ) -> list[BaseException | None]:
        return await asyncio.to_thread(self._write_many, items)

    def __repr__(self) -> str:
        return f"DirectorySink({str(self.directory)!r})"


class CallableSink:
    """Adapts a user's `fn(idem, result)` (sync or async) to the Sink protocol."""

    def __init__(self, fn: Callable[[str, StoredResult], Any], name: str = "") -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        #: `fn` itself when it is a coroutine function: asked once here, not
        #: at every delivery (inspect's test is five Python calls)
        self._coroutine_fn = fn if inspect.iscoroutinefunction(fn) else None

    async def deliver(self, idem: str, result: StoredResult) -> None:
        try:
            if self._coroutine_fn is self.fn:
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
