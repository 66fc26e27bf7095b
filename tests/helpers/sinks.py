"""A recording test sink for `--sink tests.helpers.sinks:record`.

It does what the directory sink does (so the `inside_sink` crash point and
the atomic-write path are exercised) and then appends one line per
*completed* delivery to a log: `idem TAB interaction_id TAB sha256(text)`.
The log counts deliveries (at-least-once); the files, named by key, are the
idempotent effect (exactly once per key). Configured by environment:

    RECLAIM_TEST_SINK_DIR         article directory (required)
    RECLAIM_TEST_SINK_LOG         delivery log (required)
    RECLAIM_TEST_SINK_FAIL_FLAG   while this file exists, every delivery fails
                                  with ENOSPC (a full disk)
    RECLAIM_TEST_SINK_ENTERED     a file touched when a delivery begins
    RECLAIM_TEST_SINK_SLEEP       seconds to sleep when a delivery begins
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
from pathlib import Path

from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.sinks import DirectorySink

__all__ = ["record"]


def record(idem: str, result: StoredResult) -> None:
    entered = os.environ.get("RECLAIM_TEST_SINK_ENTERED")
    if entered:
        Path(entered).touch()
    pause = float(os.environ.get("RECLAIM_TEST_SINK_SLEEP") or 0)
    if pause:
        time.sleep(pause)
    flag = os.environ.get("RECLAIM_TEST_SINK_FAIL_FLAG")
    if flag and os.path.exists(flag):
        raise OSError(errno.ENOSPC, "No space left on device (injected)")
    # The directory sink's own write path (temp file, fsync, rename; crash point).
    DirectorySink(os.environ["RECLAIM_TEST_SINK_DIR"])._write(idem, result)
    digest = hashlib.sha256(result.output_text.encode("utf-8")).hexdigest()
    line = f"{idem}\t{result.interaction_id}\t{digest}\n".encode()
    fd = os.open(os.environ["RECLAIM_TEST_SINK_LOG"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, line)  # one short O_APPEND write: never interleaved
        os.fsync(fd)
    finally:
        os.close(fd)
