"""Issue 22.2: `answer` whose follow-up create answer is lost. The follow-up
turn is a create like a first one: recorded before the call, labelled with
its own attempt, an orphan of its turn when its outcome is unknown; answering
again meanwhile sends nothing; `recover` adopts it by label — through the real
CLI, the real SDK and the emulator (a dropped create answer)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.test_attempt_labels import create_ids, ok, row
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs


def test_a_follow_up_whose_answer_was_lost_is_an_orphan_of_its_turn(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path, latency=0.2) as emu:
        ws = Workspace(tmp_path / "answer", emulator=emu, lookup=True)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "plan it", "key": "plan"}])
        ok(ws.tick(jobs=jobs))
        (first,) = create_ids(emu, "plan")
        emu.finish(first, "requires_action", "Shall I go on?")
        for _ in range(20):
            ok(ws.tick())
            if row(ws, "plan")["held"]:
                break
            time.sleep(0.2)
        assert row(ws, "plan")["held"] == 1
        emu.set_faults(drop_rate=1.0)
        lost = ws.cli("answer", "plan", "yes, go on")
        # The API's answer was lost (a transport failure): exit 6, as for any call
        # the API did not answer (issue 25); the turn is recorded as unknown.
        assert lost.returncode == 6 and "outcome is unknown" in lost.stderr, lost.stderr
        assert "not sent" not in lost.stderr and "recover" in lost.stderr
        emu.set_faults()
        (_, follow_up) = create_ids(emu, "plan")
        again = ws.cli("answer", "plan", "yes, go on")
        assert again.returncode == 5 and "outcome is unknown" in again.stderr, again.stderr
        assert create_ids(emu, "plan") == [first, follow_up]  # no third create
        # A held orphan is recovered when due (ledger/base.py, claim_orphans): wait for
        # it, as an operator's later `recover` would. (This test used to pass only
        # because a CLI process took longer to start than the row took to be due.)
        time.sleep(max(0.0, float(row(ws, "plan")["next_at"]) - time.time()) + 0.05)
        ok(ws.cli("recover", "plan"))
        adopted = row(ws, "plan")
        assert (adopted["handle"], adopted["held"], adopted["inflight"]) == (follow_up, 0, 0)
        time.sleep(0.3)
        ws.settle()
        final = row(ws, "plan")
        assert (final["status"], final["handle"], final["duplicates"]) == (
            "consumed",
            follow_up,
            0,
        )
        assert create_ids(emu, "plan") == [first, follow_up]
