"""The directory sink's temp folder, `<out>/.reclaim-tmp/`: a folder of its
own, opened without following links, in which every temp file is written,
renamed from and removed through that open folder, so a link put there later
is never followed and nothing the sink did not write is ever deleted. A part
of core/sinks.py (the DirectorySink uses it)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from reclaim_tui.core.keys import valid_key
from reclaim_tui.errors import SinkFolderError

__all__ = ["TEMP_DIR", "open_temp_dir"]

TEMP_DIR = ".reclaim-tmp"


def open_temp_dir(temp_dir: Path, *, create: bool = True) -> int | None:
    """A descriptor of the sink's temp folder (made if missing and `create`;
    None when missing and not). Every name in it is then used through this
    descriptor, so a link put there later is never followed.

    Refused (SinkFolderError): a link, anything but a folder, or a folder of
    another user. The sink writes and deletes files in it: through a link
    to another folder it would delete files it never wrote."""
    if create:
        temp_dir.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(temp_dir)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temp_dir, flags)
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        what = "a link" if temp_dir.is_symlink() else "not a folder"
        raise SinkFolderError(
            f"{temp_dir} is {what}: the sink writes only in a temp folder of its own"
            " (remove it; the sink makes it again)"
        ) from exc
    owner = os.fstat(fd).st_uid
    if owner != os.geteuid():
        os.close(fd)
        raise SinkFolderError(
            f"{temp_dir} belongs to user {owner}, not to this one ({os.geteuid()}): the sink"
            " writes only in a temp folder of its own (remove it; the sink makes it again)"
        )
    return fd


def _write_temp(path: Path, data: bytes, temp_fd: int) -> tuple[str, Path]:
    """Write `data` to a temp file in the temp folder (`temp_fd`); not yet
    durable, not yet visible under its name: (temp name, target).

    The name is the target's and this process's (`<idem>.md.<pid>.tmp`), created
    with O_EXCL: a key is delivered by its lease holder alone, so one open(2)
    does it — `tempfile.mkstemp` drew random names and retried, a visible
    share of the service's CPU at two files a job. Another process's
    leftover for the key is removed before staging (`_leftovers`); one of this
    pid's own (a reused pid after a crash) is replaced."""
    tmp = f"{path.name}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=temp_fd)  # the umask applies, as for any file
    except FileExistsError:
        os.unlink(tmp, dir_fd=temp_fd)  # a link is removed, never followed
        fd = os.open(tmp, flags, 0o666, dir_fd=temp_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        _remove(tmp, temp_fd)
        raise
    return tmp, path


def _remove(name: str, temp_fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=temp_fd)


def _temp_key(entry: os.DirEntry[str], uid: int) -> str | None:
    """The key a temp file was written for, when `entry` is one the sink
    writes (`<key>.<suffix>.<pid>.tmp`, an older version's `<key>.<suffix>.<random>.tmp`;
    a plain file of this user); None for anything else, which is never deleted."""
    key, dot, rest = entry.name.partition(".")
    head, _, tag = rest.removesuffix(".tmp").rpartition(".")
    if not (dot and rest.endswith(".tmp") and head and tag and valid_key(key)):
        return None
    if not entry.is_file(follow_symlinks=False):
        return None
    return key if entry.stat(follow_symlinks=False).st_uid == uid else None


def _leftovers(temp_fd: int) -> dict[str, list[str]]:
    """Temp files in the temp folder by the key they were written for. Listed
    once per batch: temp files live in their own small directory, so this is
    a scan of the deliveries killed in flight, not of every article written."""
    found: dict[str, list[str]] = {}
    uid = os.geteuid()
    with os.scandir(temp_fd) as entries:
        for entry in entries:
            key = _temp_key(entry, uid)
            if key is not None:
                found.setdefault(key, []).append(entry.name)
    return found
