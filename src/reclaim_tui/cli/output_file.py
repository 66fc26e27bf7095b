"""A file a command writes whole (`export -o`): all of it, or nothing new.

The text goes to a temp file beside the target, is made durable, and is
renamed over the target at the end: a reader never finds a half-written
export under the name it asked for, and a failed write (no room, the disk
erring) leaves the old file as it was. A target that is not a regular file
(a device such as /dev/stdout, a pipe) is written in place: renaming over
it would replace the device itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from reclaim_tui.errors import ConfigError, OutputError

__all__ = ["written_whole"]


@contextlib.contextmanager
def written_whole(output: str) -> Iterator[TextIO]:
    """A text stream whose content becomes `output` once the block ends
    without an error. ConfigError (exit 2) for a folder that is not there;
    OutputError (exit 4) for a write that failed, the target left untouched."""
    target = Path(output).resolve()  # a link named by the user is written through
    folder = target.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(f"--output {output}: the folder {folder} {what}")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"--output {output}: {exc.strerror}") from exc
    if mode is not None and not stat.S_ISREG(mode):
        yield from _in_place(output, target)
        return
    tmp = folder / f".{target.name}.{os.getpid()}.tmp"
    try:
        tmp.unlink(missing_ok=True)  # a leftover of a killed export of this pid
        with open(tmp, "x", encoding="utf-8", newline="") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))  # the export keeps the file's permissions
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(
            f"--output {output}: {exc.strerror or exc}; nothing was written"
            + (" (the file is as it was)" if mode is not None else "")
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)


def _in_place(output: str, target: Path) -> Iterator[TextIO]:
    try:
        with open(target, "w", encoding="utf-8", newline="") as out:
            yield out
    except OSError as exc:
        raise OutputError(f"--output {output}: {exc.strerror or exc}") from exc
