"""The directory sink's temp folder, `<out>/.reclaim-tmp/`: a folder of its
own (a real folder of this user, made 0700), opened once per batch without
following links; every temp file is created, flushed, renamed from and
removed through that open folder, so a link put there is never followed.
Only files of the sink's own naming, plain files of this user, are ever
removed. A part of core/sinks.py (the DirectorySink uses it)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

from reclaim_tui.errors import SinkFolderError

__all__ = ["TEMP_DIR", "TempFolder"]

TEMP_DIR = ".reclaim-tmp"

#: A temp file's name: the target's (`<key><suffix>`), then this version's tag
#: (`<pid>-<8 hex>.reclaim.tmp`) or an older version's (`<pid>.tmp`, or
#: mkstemp's random letters `.tmp`) — a kill mid-write leaves those, and the
#: next delivery of the key removes them. Bounded and without nested
#: quantifiers: it reads names from a folder others may write in.
_TEMP_NAME = re.compile(
    r"(?P<key>[a-z0-9][a-z0-9_-]{0,62})"
    r"\.(?:md|json|media\.txt|[0-9]{1,9}\.[a-z0-9]{1,9})"
    r"\.(?:[0-9]{1,10}-[0-9a-f]{8}\.reclaim|[a-z0-9_]{1,20})\.tmp"
)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FILE = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_REMEDY = "the sink writes only in a temp folder of its own (remove it; the sink makes it again)"


def temp_key(name: str) -> str | None:
    """The key a temp file of the sink's naming was written for; None for any
    other name (never removed)."""
    found = _TEMP_NAME.fullmatch(name)
    return found["key"] if found else None


class TempFolder:
    """The temp folder, open. Used for one batch, then closed."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path
        # A temp file's tag: one random draw for the folder's batch, then a
        # count, so a batch of files costs neither a pid nor a random read
        # per file (the names stay the pattern's; O_EXCL still refuses any
        # name that exists).
        self._pid = os.getpid()
        self._tag: int | None = None

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> TempFolder | None:
        """The folder, made (0700) if missing and `create`; None when missing
        and not. Refused (SinkFolderError): a link, anything but a folder, a
        folder of another user — through a link the sink would write and
        delete in a folder it never made."""
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o700)
        try:
            fd = os.open(path, _DIR_FLAGS)
        except FileNotFoundError:
            if create:
                raise
            return None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            refused = _what_stands_there(path)
            if refused is None:
                raise  # a folder above it is not one: said by each delivery
            raise SinkFolderError(f"{path} is {refused}: {_REMEDY}") from exc
        owner = os.fstat(fd).st_uid
        if owner != os.geteuid():
            os.close(fd)
            raise SinkFolderError(
                f"{path} belongs to user {owner}, not to this one ({os.geteuid()}): {_REMEDY}"
            )
        return cls(fd, path)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> TempFolder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def write(self, target: Path, data: bytes | Iterable[bytes | str]) -> str:
        """`data` (bytes, or parts of bytes and text) in a new temp file for
        `target`; its name. Not yet durable.

        Created with O_EXCL and O_NOFOLLOW under a name no other process
        draws (the pid and a random tag), so it is always a new file of this
        process: nothing that stood there is followed or overwritten."""
        name, fd = self._create(target.name)
        try:
            # Straight to the descriptor: no file object (and its size,
            # terminal and position checks) for a file written once.
            try:
                _write_parts(fd, [data] if isinstance(data, bytes) else data)
            finally:
                os.close(fd)
        except BaseException:
            self.remove(name)
            raise
        return name

    def _next_tag(self, fresh: bool) -> str:
        if self._tag is None or fresh:
            self._tag = int.from_bytes(os.urandom(4), "big")
        else:
            self._tag = (self._tag + 1) & 0xFFFFFFFF
        return f"{self._tag:08x}"

    def _create(self, target_name: str) -> tuple[str, int]:
        tries = 3  # a random tag met twice in a row: something else is wrong
        fresh = False
        while True:
            name = f"{target_name}.{self._pid}-{self._next_tag(fresh)}.reclaim.tmp"
            try:
                return name, os.open(name, _NEW_FILE, 0o666, dir_fd=self.fd)  # the umask applies
            except FileExistsError:
                tries -= 1
                if not tries:
                    raise
                fresh = True  # a name taken: draw a new random tag

    def remove(self, name: str) -> None:
        """Remove a temp file of this folder (unlink never follows a link)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def replace(self, name: str, target: Path) -> None:
        """Show a temp file under its target's name (a link there is
        replaced, not followed)."""
        os.replace(name, target, src_dir_fd=self.fd)

    def fsync_each(self, names: Sequence[str]) -> None:
        """Make each temp file's data durable (where syncfs cannot)."""
        for name in names:
            fd = os.open(name, _READ_FILE, dir_fd=self.fd)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def leftovers(self) -> dict[str, list[str]]:
        """Temp files a killed delivery left, by the key they were written
        for: names of the sink's own pattern, plain files of this user. One
        that goes while listed (another process renamed or removed its own)
        is skipped. Listed once per batch: a scan of the deliveries killed in
        flight, not of every article written."""
        found: dict[str, list[str]] = {}
        uid = os.geteuid()
        with os.scandir(self.fd) as entries:
            for entry in entries:
                key = temp_key(entry.name)
                if key is None:
                    continue
                try:
                    info = os.stat(entry.name, dir_fd=self.fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_uid == uid:
                    found.setdefault(key, []).append(entry.name)
        return found


def _what_stands_there(path: Path) -> str | None:
    """What stands at `path` instead of a folder, or None when the path itself
    cannot be looked at (a folder above it is missing or not one)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a link"
    return None if stat.S_ISDIR(info.st_mode) else "not a folder"


#: Characters of text encoded at a time when a file is written.
_SLICE = 1 << 20


def _write_parts(fd: int, parts: Iterable[bytes | str]) -> None:
    """Bytes as they are, text as UTF-8 a slice at a time: a large result is
    never held twice over (its text and its encoding). Small pieces go out
    together (a result and its closing newline: one write)."""
    pending = b""
    for part in parts:
        if isinstance(part, bytes):
            pieces: Iterable[bytes] = [part]
        else:
            pieces = (part[at : at + _SLICE].encode("utf-8") for at in range(0, len(part), _SLICE))
        for piece in pieces:
            if pending and len(pending) + len(piece) > _SLICE:
                _write_all(fd, pending)
                pending = b""
            pending = pending + piece if pending else piece
    if pending:
        _write_all(fd, pending)


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` (a write may take only part of it)."""
    done = os.write(fd, data)
    if done == len(data):
        return
    view = memoryview(data)
    while done < len(data):
        step = os.write(fd, view[done:])
        if step == 0:  # nothing taken: never loop on it
            raise OSError(errno.EIO, "a write took none of its bytes")
        done += step
