"""The service's `--log` file: a line that cannot be written is dropped,
said once on stderr, and the service goes on.

The log reports the ledger's work; it never stops it. A full disk under the
log (or a file-size limit, an I/O error) used to raise out of the first
`print` and end the service with a traceback, while the ledger beside it
had room. Each line is written whole with one `write(2)` where the system
allows (O_APPEND); once writing works again, the outage is said on stderr
with the number of lines lost, and a line torn by the failure is ended so
that the next one starts on its own line.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO

from reclaim_tui.errors import ConfigError

__all__ = ["service_log"]


class _ForgivingFile(io.RawIOBase):
    """Raw writes to the log's descriptor; a failed write is counted, not raised."""

    def __init__(self, fd: int, path: str, say: TextIO) -> None:
        super().__init__()
        self.fd, self.path, self.say = fd, path, say
        self.dropped = 0
        self.torn = False

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        view = memoryview(data)  # type: ignore[arg-type]  # a bytes-like object, as RawIOBase takes
        size = len(view)
        try:
            if self.torn:
                os.write(self.fd, b"\n")
                self.torn = False
            done = 0
            while done < size:
                wrote = os.write(self.fd, view[done:])
                if wrote == 0:
                    raise OSError(errno.EIO, "nothing written")
                done += wrote
                self.torn = view[done - 1] != ord("\n")
        except OSError as exc:
            self._failed(exc)
            return size  # dropped: the service goes on
        if self.dropped:
            self._tell(f"written again; {self.dropped} line(s) were lost")
            self.dropped = 0
        return size

    def _failed(self, exc: OSError) -> None:
        if not self.dropped:
            why = exc.strerror or str(exc)
            self._tell(f"cannot be written ({why}); its lines are dropped until it can")
        self.dropped += 1

    def _tell(self, what: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            print(f"reclaim-tui: the log {self.path} {what}", file=self.say, flush=True)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


@contextlib.contextmanager
def service_log(path: str, *, say: TextIO | None = None) -> Iterator[TextIO]:
    """The log at `path`, opened for appending; ConfigError (exit 2) when it
    cannot be opened at all (a missing folder, no permission). Once open,
    no write to it raises: a failure is said once on `say` (stderr)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise ConfigError(f"--log {path}: cannot open it ({exc.strerror or exc})") from exc
    raw = _ForgivingFile(fd, path, say or sys.stderr)
    # Line-buffered: each JSON line reaches the file (one write) as it is said.
    log = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", line_buffering=True)
    try:
        yield log
    finally:
        log.close()
