"""A prune's archive (core/ledger/prune.py): each pruned row as one JSON
line (every column, its stored result and interaction, its timeline:
`export.job_record`), appended and fsync'd before its batch is deleted; a
last line a kill cut short is cut off before the next append.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from reclaim_tui.core.export import iso_time, job_record
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.reads import stored_usage
from reclaim_tui.core.models import Event, Row, StoredResult
from reclaim_tui.errors import ConfigError

__all__ = ["append_synced", "archive_lines"]


async def archive_lines(db: Any, ids: str, rows: Sequence[Row], now: float) -> list[str]:
    """Each row's job_record (result, interaction, timeline) as a JSON line."""
    by_id = Sql(lambda d: f"IN (SELECT CAST(value AS INTEGER) FROM {d.each()})")
    order = {int(i): row.idem for i, row in zip(json.loads(ids), rows, strict=True)}
    results: dict[str, StoredResult] = {}
    async with db.execute(
        "SELECT job, interaction_id, output_text, usage, raw_json, stored_at"
        " FROM results WHERE job " + by_id,
        (ids,),
    ) as cur:
        for r in await cur.fetchall():
            idem = order[int(r[0])]
            usage = stored_usage(r[3])
            results[idem] = StoredResult(idem, r[1], r[2], usage, r[4], r[5])
    events: dict[str, list[Event]] = {row.idem: [] for row in rows}
    async with db.execute(
        "SELECT id, at, idem, actor, from_status, to_status, note FROM events WHERE job "
        + by_id
        + " ORDER BY job, id",
        (ids,),
    ) as cur:
        for r in await cur.fetchall():
            events[r[2]].append(Event(*r))
    pruned_at = iso_time(now)
    lines = []
    for row in rows:
        record = job_record(row, results.get(row.idem), events[row.idem])
        record["pruned_at"] = pruned_at
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
    return lines


def append_synced(path: Path, lines: Sequence[str]) -> None:
    """Append `lines` to `path` and fsync it (and, for a new file, its folder)."""
    created = not path.exists()
    with open(path, "a+b") as out:
        _end_torn_line(out)
        out.write("".join(lines).encode("utf-8"))
        out.flush()
        os.fsync(out.fileno())
    if created:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


#: How every archive line begins (`archive_lines`: the record's first key).
_RECORD_START = b'{"idem": '


def _end_torn_line(out: BinaryIO) -> None:
    """A last line without its newline is what a kill mid-write leaves: its
    batch was not deleted (the fsync had not returned), so the next prune
    writes it again. Cut it off (a line that is whole JSON only gets its
    newline), or the next line would be glued to it."""
    end = out.seek(0, os.SEEK_END)
    if end == 0:
        return
    out.seek(end - 1)
    if out.read(1) == b"\n":
        return
    start = max(0, end - _TAIL)
    out.seek(start)
    tail = out.read(end - start)
    cut = tail.rfind(b"\n")
    if cut < 0 and start > 0:
        raise ConfigError(f"{out.name}: its last line is longer than {_TAIL} bytes and unfinished")
    line = tail[cut + 1 :]
    try:
        json.loads(line)
    except ValueError:
        # Only a line that begins like one of ours is cut: a file that is not
        # an archive (a gzip, notes passed by mistake) is refused, untouched.
        if not line.startswith(_RECORD_START):
            raise ConfigError(
                f"{out.name}: does not end like a prune archive (JSON Lines); not appending"
                " to it — name a new file or an archive prune wrote"
            ) from None
        out.truncate(start + cut + 1)
        return
    out.write(b"\n")


#: How far back from its end an archive is read for an unfinished last line.
_TAIL = 64 << 20
