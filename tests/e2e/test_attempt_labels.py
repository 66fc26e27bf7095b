"""Issue 22.1: an orphan is adopted only from an interaction made for its
*current* attempt, never an older one of the same key — through the real
CLI, the real SDK, the emulator (a dropped create answer, a kill before the
create) and a real inbox process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.inbox import InboxProcess
from tests.helpers.procs import write_jobs

#: The emulator retries a refused delivery quickly (the inbox may be down).
HOOK_FLAGS = ("--webhook-backoff-base", "0.2", "--webhook-backoff-cap", "1")


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr


def events(ws: Workspace) -> int:
    return int(ws.view()._query("SELECT COUNT(*) AS n FROM inbox")[0]["n"])


def wait_events(ws: Workspace, n: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while events(ws) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert events(ws) >= n, f"{events(ws)} inbox events, expected {n}"


def row(ws: Workspace, key: str) -> dict[str, object]:
    return ws.view().rows()[key]


def create_ids(emu: EmulatorProcess, key: str) -> list[str]:
    return [entry["id"] for entry in emu.creates() if entry["idem"] == key]


def inbox_for(ws: Workspace, emu: EmulatorProcess, tmp_path: Path) -> InboxProcess:
    return InboxProcess(ws.db, f"{emu.base_url}/.well-known/jwks.json", tmp_path)


def test_a_retry_whose_answer_was_lost_never_adopts_the_old_failed_interaction(
    tmp_path: Path,
) -> None:
    # Jobs run until the test ends them (admin finish), so events come when told.
    with EmulatorProcess(tmp_path, latency=600, flags=HOOK_FLAGS) as emu:
        ws = Workspace(tmp_path / "retry", emulator=emu)
        with inbox_for(ws, emu, tmp_path) as inbox:
            hooks = ("--webhook-url", inbox.url, "--webhook-poll", "600", "--webhook-grace", "600")
            ws.extra_flags = hooks
            jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "a report", "key": "report"}])
            ok(ws.tick(jobs=jobs))
            emu.finish(create_ids(emu, "report")[0], "failed")
            wait_events(ws, 1)  # its interaction.failed event is kept
            ok(ws.tick())
            assert row(ws, "report")["status"] == "failed"
            ok(ws.cli("retry", "report"))
            emu.set_faults(drop_rate=1.0)
            ok(ws.tick())  # the resend: created, its answer lost
            emu.set_faults()
            first, resent = create_ids(emu, "report")
            orphan = row(ws, "report")
            assert orphan["status"] == "reserving"
            # Once the orphan is due for recovery, the old failed event (the
            # only one yet) must not settle the retry.
            time.sleep(max(0.0, float(orphan["next_at"]) - time.time()) + 0.1)  # type: ignore[arg-type]
            ok(ws.tick())
            assert row(ws, "report")["status"] == "reserving"
            assert row(ws, "report")["handle"] is None
            emu.finish(resent, "completed", "the retry's text")
            wait_events(ws, 2)  # the retry's own event
            ok(ws.tick())
            final = row(ws, "report")
            assert (final["status"], final["handle"]) == ("consumed", resent)
            assert [d["interaction_id"] for d in ws.deliveries()] == [resent]
            assert create_ids(emu, "report") == [first, resent]


def test_a_late_event_of_a_pruned_job_is_not_news_of_a_new_job_with_its_key(
    tmp_path: Path,
) -> None:
    with EmulatorProcess(tmp_path, latency=0.2, flags=HOOK_FLAGS) as emu:
        ws = Workspace(tmp_path / "late", emulator=emu)
        inbox = inbox_for(ws, emu, tmp_path)
        hooks = ("--webhook-url", inbox.url, "--webhook-grace", "600")
        # The inbox is down: the old job's event waits at the emulator.
        old = write_jobs(ws.root / "old.jsonl", [{"input": "last week", "key": "weekly"}])
        ok(ws.tick(*hooks, "--webhook-poll", "0.5", jobs=old))
        for _ in range(20):  # collected by the fallback polls
            time.sleep(0.3)
            ok(ws.tick(*hooks, "--webhook-poll", "0.5"))
            if row(ws, "weekly")["status"] == "consumed":
                break
        assert row(ws, "weekly")["status"] == "consumed"
        (old_id,) = create_ids(emu, "weekly")
        ok(ws.cli("prune", "--older-than", "0", "--yes"))
        assert ws.view().rows() == {}
        new = write_jobs(ws.root / "new.jsonl", [{"input": "this week", "key": "weekly"}])
        emu.set_faults(drop_rate=1.0)
        ok(ws.tick(jobs=new))  # no webhook for this one: only the old event can come
        emu.set_faults()
        (_, new_id) = create_ids(emu, "weekly")
        with inbox:
            wait_events(ws, 1)  # the pruned job's event, late
            ok(ws.tick(*hooks))
            now = row(ws, "weekly")
            assert now["handle"] != old_id and now["status"] == "reserving", now
            ok(ws.cli("adopt", "weekly", new_id))
            ok(ws.tick(*hooks))
        final = row(ws, "weekly")
        assert (final["status"], final["handle"]) == ("consumed", new_id)
        assert [d["interaction_id"] for d in ws.deliveries()] == [old_id, new_id]


def test_label_lookup_after_a_kill_never_adopts_a_pruned_jobs_interaction(
    tmp_path: Path,
) -> None:
    with EmulatorProcess(tmp_path, latency=0.2) as emu:
        ws = Workspace(tmp_path / "lookup", emulator=emu, lookup=True)
        old = write_jobs(ws.root / "old.jsonl", [{"input": "last week", "key": "weekly"}])
        ok(ws.tick(jobs=old))
        time.sleep(0.5)
        ws.settle()
        assert row(ws, "weekly")["status"] == "consumed"
        (old_id,) = create_ids(emu, "weekly")
        ok(ws.cli("prune", "--older-than", "0", "--yes"))
        new = write_jobs(ws.root / "new.jsonl", [{"input": "this week", "key": "weekly"}])
        # Killed after the attempt was committed, before its create was sent.
        assert ws.tick(jobs=new, crash_at="before_create").returncode == -9
        ok(ws.tick())  # nothing found for this attempt: resent, recorded (or waits)
        assert row(ws, "weekly")["handle"] != old_id
        ws.settle()
        final = row(ws, "weekly")
        (_, new_id) = create_ids(emu, "weekly")
        assert (final["status"], final["handle"], final["duplicates"]) == ("consumed", new_id, 1)
        assert [d["interaction_id"] for d in ws.deliveries()] == [old_id, new_id]
