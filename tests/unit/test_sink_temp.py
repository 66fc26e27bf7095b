"""The directory sink's temp folder (issue 40 item 1): it follows no link it
did not make, deletes nothing it did not write, and reports a delivery done
only once its files are in place.

The CLI's refusals (a link, another user's folder, a file) are in
tests/e2e/test_sink_folder.py; here the sink itself, its leftovers, the engine
that stops on a folder made unsafe under it, and real processes racing and
killed mid-batch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, Status, StoredResult
from reclaim_tui.core.sinks import TEMP_DIR, DirectorySink

NOBODY = 65534


def _result(idem: str, text: str = "text") -> StoredResult:
    return StoredResult(idem, "emu-1", text, None, '{"id": "emu-1"}', 0.0)


async def test_only_temp_files_of_its_own_naming_are_deleted(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path / "out")
    temp = tmp_path / "out" / TEMP_DIR
    temp.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("not the sink's")
    (temp / "report.pdf").write_text("a user's file")  # the key's name, not a temp file
    (temp / "report.md.77.tmp").symlink_to(elsewhere)  # a temp name, but a link
    (temp / "report.json.99.tmp").mkdir()  # a temp name, but a folder
    (temp / "report.md.x.tmp.bak").write_text("a copy")  # not the pattern whole
    stale = [
        temp / "report.md.12.tmp",  # a killed delivery of the pid-named version
        temp / "report.json.k1ll3d.tmp",  # of the mkstemp version
        temp / "report.md.4242-0123abcd.reclaim.tmp",  # of this one
        temp / "report.1.png.12.tmp",  # an image of it
    ]
    for path in stale:
        path.write_text("half")
    await sink.deliver("report", _result("report"))
    assert (tmp_path / "out" / "report.md").read_text() == "text"
    assert elsewhere.read_text() == "not the sink's"
    assert sorted(p.name for p in temp.iterdir()) == [
        "report.json.99.tmp",
        "report.md.77.tmp",
        "report.md.x.tmp.bak",
        "report.pdf",
    ]


def test_a_link_planted_under_the_very_temp_name_it_draws_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone who guessed the next temp name and put a link there: the
    create refuses it (O_EXCL, O_NOFOLLOW), the sink draws another name, and
    the link and what it points at are left as they were."""
    temp = tmp_path / TEMP_DIR
    temp.mkdir()
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("not the sink's")
    guessed = temp / f"report.md.{os.getpid()}-00000000.reclaim.tmp"
    guessed.symlink_to(elsewhere)
    draws = iter([b"\0\0\0\0", b"\0\0\0\0", b"\1\1\1\1", b"\2\2\2\2"])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    assert DirectorySink(tmp_path)._write_many([("report", _result("report"))]) == [None]
    assert (tmp_path / "report.md").read_text() == "text"
    assert elsewhere.read_text() == "not the sink's"
    assert [p.name for p in temp.iterdir()] == [guessed.name] and guessed.is_symlink()


async def test_a_temp_file_of_another_user_is_left(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    temp = tmp_path / TEMP_DIR
    temp.mkdir()
    theirs = temp / "report.md.12.tmp"
    theirs.write_text("someone else's")
    os.chown(theirs, NOBODY, NOBODY)
    await DirectorySink(tmp_path).deliver("report", _result("report"))
    assert theirs.read_text() == "someone else's"


def test_the_temp_name_pattern() -> None:
    from reclaim_tui.core.sink_temp import temp_key  # here: the parent's sink has none

    assert temp_key("k-1.md.123-89abcdef.reclaim.tmp") == "k-1"
    assert temp_key("k.media.txt.9.tmp") == "k"
    assert temp_key("k.3.webm.abc_xyz9.tmp") == "k"
    for name in ("k.pdf", "k.md", "k.md.tmp", "K.md.1.tmp", ".k.md.1.tmp", "k.md.1.tmp~"):
        assert temp_key(name) is None, name
    assert temp_key("a" + ".md" * 80 + "\\" * 100) is None  # adversarial input


async def test_a_temp_file_gone_while_listed_does_not_pass_for_a_delivery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The withdrawn descriptor-based sink lost files this way under the
    chaos soak: another process renamed its temp file between the listing
    and the look at it; the error ended the batch before any file was
    written, and every delivery of it was reported done."""
    temp = tmp_path / TEMP_DIR
    temp.mkdir()
    theirs = "other.md.4242-0123abcd.reclaim.tmp"  # another delivery's, in flight
    (temp / theirs).write_text("theirs")
    real = os.scandir

    class Listing:
        def __init__(self, target: int | str) -> None:
            self.entries = real(target)

        def __enter__(self) -> Listing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.entries.close()

        def __iter__(self) -> Iterator[os.DirEntry[str]]:
            for entry in self.entries:
                if entry.name == theirs:  # its owner renames it away now
                    os.replace(temp / theirs, tmp_path / "other.md")
                yield entry

    monkeypatch.setattr(os, "scandir", Listing)
    outcomes = await DirectorySink(tmp_path).deliver_many([("report", _result("report"))])
    assert outcomes == [None]
    assert (tmp_path / "report.md").read_text() == "text"
    assert (tmp_path / "other.md").read_text() == "theirs"


async def test_a_link_made_under_a_running_engine_stops_the_pass(
    ledger: Ledger, fake: FakeBackend, clock: ManualClock, tmp_path: Path
) -> None:
    from reclaim_tui.errors import SinkFolderError  # here: the parent's errors have none

    out = tmp_path / "articles"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "report.pdf").write_bytes(b"%PDF keep me")
    engine = Engine(ledger, fake, DirectorySink(out), owner="t|1|a")
    await engine.submit([JobSpec(input="r", model="m", key="report")])
    row = await ledger.get("report")
    assert row is not None and row.handle is not None
    fake.finish(row.handle)
    clock.advance(2)
    out.mkdir()
    (out / TEMP_DIR).symlink_to("../victim")  # after the engine's start: seen at delivery
    with pytest.raises(SinkFolderError, match="is a link"):
        await engine.reclaim()
    assert sorted(p.name for p in victim.iterdir()) == ["report.pdf"]
    row = await ledger.get("report")
    assert row is not None and row.status == Status.DONE  # delivered once the link is gone
    (out / TEMP_DIR).unlink()
    clock.advance(60)
    await engine.replay(force=True)
    row = await ledger.get("report")
    assert row is not None and row.status == Status.CONSUMED
    assert (out / "report.md").exists()


_DELIVER = """
import json, sys
from pathlib import Path
from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.sinks import DirectorySink

out, keys, batch = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
sink = DirectorySink(out)
said = {"done_without_file": [], "errors": 0}
for start in range(0, len(keys), batch):
    items = [(k, StoredResult(k, "emu", "text of " + k, None, '{"id": "emu"}', 0.0))
             for k in keys[start:start + batch]]
    for (key, _), outcome in zip(items, sink._write_many(items)):
        if outcome is not None:
            said["errors"] += 1
        elif (out / (key + ".md")).read_text() != "text of " + key:
            said["done_without_file"].append(key)
print(json.dumps(said))
"""


def _deliverer(out: Path, keys: list[str], batch: int = 1, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _DELIVER, str(out), json.dumps(keys), str(batch)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def test_two_processes_delivering_into_one_folder_lose_nothing(tmp_path: Path) -> None:
    """Distinct keys and the same keys (a lease holder stalled past its
    lease and its successor) at once: a delivery said done has its file, and
    no temp file is left."""
    out = tmp_path / "out"
    shared = [f"both{n}" for n in range(150)]
    procs = [
        _deliverer(out, [f"first{n}" for n in range(150)] + shared),
        _deliverer(out, [f"second{n}" for n in range(150)] + shared),
    ]
    said = [json.loads(proc.communicate(timeout=240)[0]) for proc in procs]
    assert [s["done_without_file"] for s in said] == [[], []]
    for key in shared:
        assert (out / f"{key}.md").read_text() == f"text of {key}"
    assert len(list(out.glob("*.md"))) == 450
    assert list((out / TEMP_DIR).iterdir()) == []


def test_a_batch_killed_between_its_renames_leaves_nothing_once_redelivered(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    keys = [idempotency_key(JobSpec(input=f"job {n}", model="m")) for n in range(3)]
    killed = _deliverer(out, keys, batch=3, RECLAIM_CRASH_AT="inside_sink")
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    left = sorted(p.name.partition(".")[0] for p in (out / TEMP_DIR).iterdir())
    assert left == sorted(keys[1:] * 2)  # the .md and .json of the keys not yet renamed
    again = _deliverer(out, keys, batch=3)
    assert json.loads(again.communicate(timeout=60)[0]) == {"done_without_file": [], "errors": 0}
    assert list((out / TEMP_DIR).iterdir()) == []
