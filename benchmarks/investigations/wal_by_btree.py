"""Which b-trees the SQLite ledger's WAL is made of.

The run of ledger_only.py (N jobs through every state, the fake backend, a
no-op sink, `synchronous=FULL`) with automatic checkpoints off, then the WAL
read frame by frame: each frame's header names the page it holds and whether
it ends a commit, and the page as written names its b-tree (its kind and its
first cell's record: `classify`). The `dbstat` virtual table's owner at the
end of the run only decides between b-trees of one shape: pages freed by one
b-tree are reused by another during the run. Prints, per b-tree, the
frames the whole run wrote (and KB a job), and the frames of the median
commit by size.

    python benchmarks/investigations/wal_by_btree.py [--jobs 20000] [--json] [--ddl SQL]...
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import shutil
import sqlite3
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from ledger_only import run_ours

from reclaim_tui.core.ledger.port import Ledger

#: A frame: its page number and the page's bytes as the commit wrote them.
Frame = tuple[int, bytes]


def read_wal(path: Path) -> tuple[int, list[list[Frame]]]:
    """(page size, each commit's frames, in order)."""
    data = path.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    commits: list[list[Frame]] = []
    pending: list[Frame] = []
    offset = 32
    while offset + 24 + page_size <= len(data):
        pgno, size_after = struct.unpack(">II", data[offset : offset + 8])
        pending.append((pgno, data[offset + 24 : offset + 24 + page_size]))
        if size_after:
            commits.append(pending)
            pending = []
        offset += 24 + page_size
    return page_size, commits


def _varint(b: bytes, i: int) -> tuple[int, int]:
    value = 0
    for k in range(9):
        byte = b[i + k]
        if k == 8:
            return (value << 8) | byte, i + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, i + k + 1
    raise AssertionError("unreachable")


def _record(b: bytes, i: int) -> list[Any]:
    """The values of the record at `i` (a text or blob as far as the page holds it)."""
    size, j = _varint(b, i)
    end, types = i + size, []
    while j < end:
        t, j = _varint(b, j)
        types.append(t)
    values: list[Any] = []
    for t in types:
        width = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}.get(
            t, (t - 12) // 2 if t >= 12 else 0
        )
        raw = b[end : end + width]
        if t == 0:
            values.append(None)
        elif 1 <= t <= 6:
            values.append(int.from_bytes(raw, "big", signed=True))
        elif t == 7:
            values.append(struct.unpack(">d", raw)[0] if len(raw) == 8 else 0.0)
        elif t in (8, 9):
            values.append(t - 8)
        elif t % 2:
            values.append(raw.decode("utf-8", "replace"))
        else:
            values.append(raw)
        end += width
    return values


def classify(pgno: int, page: bytes, final: dict[int, str]) -> str:
    """The b-tree a frame's page belonged to when it was written, read from
    the page itself (its kind and its first cell's record); where the shape
    fits several, the page's owner at the end of the run among them."""
    if pgno == 1:
        return "sqlite_schema"
    kind, cells = page[0], struct.unpack(">H", page[3:5])[0]
    owner = final.get(pgno, "?")
    if kind not in (2, 5, 10, 13) or cells == 0 or kind == 5:
        return owner if kind in (5, 13) else f"{owner} (no cells)"
    header = 8 if kind in (10, 13) else 12
    cell = struct.unpack(">H", page[header : header + 2])[0]
    if kind == 13:
        _, i = _varint(page, cell)
        _, i = _varint(page, i)
        cols = len(_record(page, i))
        by_width = {25: "jobs", 8: "events", 7: "results", 1: "jobs_fts_top"}
        return by_width.get(cols, owner)
    i = cell + (4 if kind == 2 else 0)
    _, i = _varint(page, i)
    v = _record(page, i)
    text = [isinstance(x, str) for x in v]
    if len(v) == 4 and text == [True, False, True, False]:
        return "jobs_status_age"
    if len(v) == 3 and text == [False, True, False]:
        return "jobs_updated"
    if len(v) == 3 and text == [True, False, False]:
        return owner if owner in ("jobs_due", "jobs_status_age") else "jobs_due|status_age"
    if len(v) == 2 and text == [False, False]:
        if isinstance(v[0], float) or (isinstance(v[0], int) and v[0] > 10**8):
            return "jobs_updated"
        return "events_job"
    if len(v) == 2 and text[0]:
        s = v[0]
        if s.startswith("fake-"):
            return "sqlite_autoindex_jobs_2"
        return "jobs_leased" if "|" in s else "sqlite_autoindex_jobs_1"
    return owner


def page_owners(db: Path) -> dict[int, str]:
    """Page number -> the b-tree it belongs to (dbstat on a copy with its WAL)."""
    con = sqlite3.connect(db)
    try:
        owners = {int(p): str(n) for n, p in con.execute("SELECT name, pageno FROM dbstat")}
    finally:
        con.close()
    return owners


def attribute(n: int, ddl: list[str]) -> dict[str, Any]:
    keep = Path(tempfile.mkdtemp(prefix="walbt-"))

    async def prepare(ledger: Ledger) -> None:
        connection: Any = getattr(ledger, "connection")  # noqa: B009
        for statement in ddl:
            await connection.execute(statement)
        await connection.commit()
        await connection.execute("PRAGMA wal_autocheckpoint = 0")
        await connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def finish(ledger: Ledger) -> None:
        path = Path(str(getattr(ledger, "path")))  # noqa: B009
        shutil.copy(str(path) + "-wal", keep / "copy.db-wal")
        shutil.copy(path, keep / "copy.db")

    with tempfile.TemporaryDirectory() as d:
        asyncio.run(run_ours(n, Path(d), 2000, prepare=prepare, finish=finish))
    page_size, commits = read_wal(keep / "copy.db-wal")
    owners = page_owners(keep / "copy.db")
    shutil.rmtree(keep)
    named = [[classify(p, page, owners) for p, page in frames] for frames in commits]
    total: collections.Counter[str] = collections.Counter()
    moved = 0
    for frames, names in zip(commits, named, strict=True):
        total.update(names)
        moved += sum(1 for (p, _), n in zip(frames, names, strict=True) if owners.get(p) != n)
    sizes = sorted(named, key=len)
    median = sizes[len(sizes) // 2] if sizes else []
    largest = sizes[-1] if sizes else []
    return {
        "jobs": n,
        "page_size": page_size,
        "commits": len(commits),
        "frames": sum(len(f) for f in commits),
        "wal_kb_per_job": sum(len(f) for f in commits) * (page_size + 24) / 1024 / n,
        "by_btree": dict(total.most_common()),
        "frames_whose_page_changed_owner": moved,
        "median_commit": dict(collections.Counter(median)),
        "largest_commit": dict(collections.Counter(largest)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--ddl",
        action="append",
        default=[],
        help="a statement run on the fresh ledger first (a what-if; repeat for more)",
    )
    a = ap.parse_args()
    out = attribute(a.jobs, a.ddl)
    if a.json:
        print(json.dumps(out))
        return
    frames = out["frames"]
    print(
        f"{out['jobs']} jobs, {out['commits']} commits, {frames} frames,"
        f" {out['wal_kb_per_job']:.1f} WAL KB/job (page {out['page_size']})"
    )
    for name, count in out["by_btree"].items():
        per_job = count * (out["page_size"] + 24) / 1024 / out["jobs"]
        print(f"  {name:28} {count:8} frames {100 * count / frames:5.1f} %  {per_job:6.2f} KB/job")
    print(
        "frames of a page that belonged to another b-tree at the end:",
        out["frames_whose_page_changed_owner"],
    )
    print("median commit:", out["median_commit"])
    print("largest commit:", out["largest_commit"])


if __name__ == "__main__":
    main()
