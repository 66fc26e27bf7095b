"""Crash-point sweep: SIGKILL a real `tick` at every named crash point, then
tick until nothing changes, and check the ledger against the emulator's
independent create log and the sink's delivery log.

Delivery is at-least-once: a crash after the sink ran but before `consumed`
was committed delivers again. The *effect* is exactly once because the sink
is idempotent by key: one `<idem>.md`/`.json` per job with the right bytes,
and the delivery log has every key (deliveries and distinct keys are counted
separately).

Creates are exactly one per job everywhere except the create window
(`before_create`, `after_create_before_handle`): there, the rows whose
create was in flight at the kill (at most --concurrency) are orphans.
Without a lookup an orphan is resubmitted (2 creates if its create had
landed) and its history says "possible duplicate"; with `--emulator-lookup`
it is adopted (1 create), or, not found once the request window passed,
resent as a recorded possible duplicate. Rows never sent are never marked.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.crash import CRASH_POINTS
from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import TEMP_DIR, DirectorySink
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.ledgerdb import account_for_creates
from tests.helpers.procs import write_jobs

pytestmark = pytest.mark.slow

MODEL = "gemini-flash-latest"
CREATE_WINDOW = ("before_create", "after_create_before_handle")
RECLAIM_PHASE = (
    "after_fetch_before_done",
    "after_done_before_sink",
    "inside_sink",
    "after_sink_before_consumed",
)
#: Points the sink has not been reached at: nothing may be delivered twice.
BEFORE_SINK = (
    "after_reserve_commit",
    *CREATE_WINDOW,
    "after_handle_commit",
    "after_fetch_before_done",
    "after_done_before_sink",
)


@dataclass(frozen=True)
class Scenario:
    """One crash: a point, a seed and a lookup mode.

    The seed varies what the crash hits without costing extra ticks: seed 1
    has more jobs, sends and delivers them one at a time (`--concurrency 1`),
    dies in the 2nd delivery at `inside_sink`, and at the reclaim-phase
    points meets rows in two states (some submitted by the preparing tick,
    the rest sent by the crashing one).
    """

    point: str
    seed: int
    lookup: bool

    @property
    def name(self) -> str:
        return f"{self.point}-s{self.seed}-{'lookup' if self.lookup else 'nolookup'}"

    @property
    def texts(self) -> list[str]:
        return [f"crash sweep {self.name} job {i}" for i in range(3 + 2 * self.seed)]

    @property
    def early(self) -> list[str]:
        """Jobs the preparing tick submits before the crash tick (reclaim phase)."""
        if self.point not in RECLAIM_PHASE:
            return []
        return self.texts[:3] if self.seed else self.texts

    @property
    def flags(self) -> tuple[str, ...]:
        return ("--concurrency", "1") if self.seed else ()

    @property
    def crash_spec(self) -> str:
        return f"inside_sink:{1 + self.seed}" if self.point == "inside_sink" else self.point


def scenarios(point: str) -> list[Scenario]:
    """Both lookup modes on both seeds in the create window (where they differ);
    elsewhere seed 0 without lookup and seed 1 with it."""
    if point in CREATE_WINDOW:
        return [Scenario(point, s, lk) for s in (0, 1) for lk in (False, True)]
    return [Scenario(point, 0, False), Scenario(point, 1, True)]


def ok(proc: Any) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr and "locked" not in proc.stderr


def wait_until_due(ws: Workspace) -> None:
    wait = ws.view().seconds_until_due()
    if wait is not None and wait > 0:
        time.sleep(wait + 0.05)


def run_scenario(sc: Scenario, ws: Workspace) -> dict[str, Any]:
    """Prepare, crash at the point, settle; return what the checks need."""
    all_jobs = write_jobs(ws.root / "all.jsonl", [{"input": t} for t in sc.texts])
    if sc.early:
        ok(ws.tick(jobs=write_jobs(ws.root / "early.jsonl", [{"input": t} for t in sc.early])))
        wait_until_due(ws)
    crash = ws.tick(jobs=all_jobs, crash_at=sc.crash_spec)
    assert crash.returncode == -9, f"{sc.name} did not die by SIGKILL: {crash.stderr}"
    # "Until nothing changes" is checked by one more tick in the seed-0 runs
    # (a budget choice: every tick costs ~1 s of CPU for the SDK import).
    runs = ws.settle(confirm=sc.seed == 0)
    for run in runs:
        ok(run)
    return {"recovery_ticks": len(runs)}


def check_scenario(sc: Scenario, ws: Workspace, emu: EmulatorProcess) -> dict[str, Any]:
    view = ws.view()
    rows = view.rows()
    keys = {idempotency_key(JobSpec(input=t, model=MODEL)): t for t in sc.texts}
    assert set(rows) == set(keys), sc.name
    assert {r["status"] for r in rows.values()} == {"consumed"}, (sc.name, view.status_counts())
    assert view.bad_transitions() == [] and view.consumed_without_done() == []

    # The effect, exactly once per key, with the emulator's text.
    results = view.results()
    for key, text in keys.items():
        md = (ws.out / f"{key}.md").read_text(encoding="utf-8")
        assert md == fake_output_text(text) == results[key]["output_text"], sc.name
        assert f'"id": "{rows[key]["handle"]}"' in (ws.out / f"{key}.json").read_text()
    # A delivery killed mid-write leaves its hidden temp file (see
    # test_stale_temp_files_of_a_killed_delivery_are_removed); counted here.
    temp_dir = ws.out / TEMP_DIR
    litter = sorted(p.name for p in temp_dir.iterdir()) if temp_dir.exists() else []

    # Delivery: at least once per key; twice only once the sink had run.
    delivered = Counter(d["idem"] for d in ws.deliveries())
    assert set(delivered) == set(keys), sc.name
    redeliveries = sum(delivered.values()) - len(keys)
    if sc.point in BEFORE_SINK:
        assert redeliveries == 0, (sc.name, delivered)
    if sc.point == "after_sink_before_consumed":
        assert redeliveries >= 1, (sc.name, delivered)

    # Creates, from the emulator's own log.
    creates = emu.creates_by_idem()
    in_window = sc.point in CREATE_WINDOW
    bound = 1 if sc.seed else 16  # --concurrency
    # Each attempt is committed right before its own create: only the rows
    # whose create was in flight at the kill have an unknown outcome (at most
    # --concurrency of them); a row never sent is sent once and never marked.
    notes = {k: " | ".join(e.note for e in view.events(k)) for k in keys}
    unknown = [k for k in keys if "orphan" in notes[k]]
    marked = [k for k in keys if rows[k]["duplicates"]]
    if in_window:
        assert 1 <= len(unknown) <= bound, (sc.name, unknown)
    elif sc.point == "after_handle_commit":
        # Killed after one row's handle was committed: the rows whose creates
        # were in flight beside it are the unknown ones.
        assert len(unknown) <= bound - 1, (sc.name, unknown)
    else:
        assert unknown == [], (sc.name, unknown)
    assert set(marked) <= set(unknown), (sc.name, marked, unknown)
    for key in keys:
        count = len(creates.get(key, []))
        if key not in unknown:
            assert count == 1 and key not in marked, (sc.name, key, count, notes[key])
        elif sc.lookup:
            # Found and adopted (its create landed before the kill), or not
            # found once the request window passed: resent, a recorded
            # possible duplicate.
            if "orphan adopted" in notes[key]:
                assert key not in marked and count == 1, (sc.name, notes[key], count)
            else:
                assert "not found by label" in notes[key] and key in marked, (sc.name, notes)
                assert count == 1, (sc.name, key, count)
        else:
            assert "possible duplicate" in notes[key] and key in marked, (sc.name, notes[key])
            # Its create may or may not have reached the API before the kill.
            assert 1 <= count <= 2, (sc.name, key, count)
    if in_window and not sc.lookup and sc.point == "after_create_before_handle":
        # The answer that reached the crash point came from a create that landed.
        assert any(len(creates.get(k, [])) == 2 for k in unknown), (sc.name, creates)
    assert account_for_creates(view, {k: creates.get(k, []) for k in keys}) == []
    return {
        "jobs": len(keys),
        "creates": sum(len(creates.get(k, [])) for k in keys),
        "duplicates_recorded": sum(r["duplicates"] for r in rows.values()),
        "deliveries": sum(delivered.values()),
        "redeliveries": redeliveries,
        "lost": len(keys) - sum(1 for r in rows.values() if r["status"] == "consumed"),
        "temp_litter": len(litter),
    }


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_at_every_point_recovers_every_job(
    point: str, make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    cases = scenarios(point)
    spaces = {sc: make_workspace(sc.name, lookup=sc.lookup, extra_flags=sc.flags) for sc in cases}
    with ThreadPoolExecutor(len(cases)) as pool:
        runs = dict(
            zip(cases, pool.map(lambda sc: run_scenario(sc, spaces[sc]), cases), strict=True)
        )
    totals: Counter[str] = Counter()
    for sc in cases:
        figures = check_scenario(sc, spaces[sc], emulator)
        totals.update(figures)
        totals["recovery_ticks"] += runs[sc]["recovery_ticks"]
    record_figures(
        f"crash_sweep[{point}]",
        scenarios=len(cases),
        kills_survived=len(cases),
        **dict(totals),
    )


def test_orphan_policy_hold_ends_in_the_held_state(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace("hold", orphan_policy="hold")
    texts = [f"held orphan {i}" for i in range(3)]
    keys = [idempotency_key(JobSpec(input=t, model=MODEL)) for t in texts]
    # One crash per job: a pass sends one create at a time until the API has
    # answered once (the circuit breaker's probe), so a single crash at the
    # first answer leaves one orphan; three crashes leave three.
    for n, text in enumerate(texts):
        jobs = write_jobs(ws.root / f"jobs-{n}.jsonl", [{"input": text}])
        crash = ws.tick(jobs=jobs, crash_at="after_create_before_handle")
        assert crash.returncode == -9
    for run in ws.settle():
        ok(run)

    rows = ws.view().rows()
    for key in keys:
        row = rows[key]
        # The documented held state: reserving, in flight, held, with the reason.
        assert (row["status"], row["inflight"], row["held"]) == ("reserving", 1, 1)
        assert row["last_error"] == "orphan: outcome of create unknown"
        assert row["duplicates"] == 0 and row["handle"] is None
        notes = [e.note for e in ws.view().events(key)]
        assert notes.count("orphan held for an operator (policy=hold)") == 1
    assert emulator.create_counts() & Counter(dict.fromkeys(keys, 99)) == Counter(
        dict.fromkeys(keys, 1)
    )
    status = ws.cli("status", "--json", engine=False)
    ok(status)
    assert json.loads(status.stdout)["orphans"]["count"] == 3

    # An operator settles two: one forced resubmit (possible duplicate), one adopted.
    forced = ws.cli("recover", "--force", keys[0])
    ok(forced)
    assert "marked for resend=1" in forced.stdout
    wrong = ws.cli("adopt", keys[1], emulator.find(keys[2])[0]["id"])
    assert wrong.returncode == 5 and "labelled for job" in wrong.stderr
    missing = ws.cli("adopt", keys[1], "emu-nope-0000000")
    assert missing.returncode == 5 and "404" in missing.stderr
    interaction = emulator.find(keys[1])[0]["id"]
    adopted = ws.cli("adopt", keys[1][:9], interaction)
    ok(adopted)
    assert adopted.stdout.strip() == f"{keys[1]}: submitted ({interaction})"
    for run in ws.settle(confirm=False):
        ok(run)
    rows = ws.view().rows()
    assert rows[keys[0]]["status"] == rows[keys[1]]["status"] == "consumed"
    assert rows[keys[0]]["duplicates"] == 1
    assert (rows[keys[2]]["status"], rows[keys[2]]["held"]) == ("reserving", 1)
    creates = emulator.create_counts()
    assert [creates[k] for k in keys] == [2, 1, 1]
    # The held one's interaction is unknown to the ledger until an operator acts.
    by_idem = emulator.creates_by_idem()
    assert account_for_creates(ws.view(), {k: by_idem[k] for k in keys[:2]}) == []
    record_figures(
        "orphan_policy_hold",
        jobs=3,
        held_left=1,
        creates=sum(creates[k] for k in keys),
        duplicates_recorded=rows[keys[0]]["duplicates"],
        lost=0,
    )


async def test_stale_temp_files_of_a_killed_delivery_are_removed(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path)
    idem = "a" * 32
    # What a SIGKILL between creating the temp file and os.replace leaves (an older
    # version's name: mkstemp's random letters).
    (tmp_path / TEMP_DIR).mkdir()
    stale = tmp_path / TEMP_DIR / f"{idem}.json.k1ll3d.tmp"
    stale.write_bytes(b'{"half": ')
    result = StoredResult(idem, "emu-1", "text", None, '{"id": "emu-1"}', 0.0)
    await sink.deliver(idem, result)
    assert (tmp_path / f"{idem}.json").exists()
    assert not stale.exists(), "the redelivery of the same key leaves the dead write's temp file"
