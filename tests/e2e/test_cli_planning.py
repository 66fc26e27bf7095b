"""Issue 24, point 1, through the real CLI: a collaborative-planning job stops
as "plan ready" (`status` counts it, `show` has the plan), `answer --refine`
asks for a new plan, `answer` approves it, and only the final report is
delivered, once. Real processes, a real ledger file, the emulator process."""

from __future__ import annotations

import json
import time
from pathlib import Path

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs

AGENT = "deep-research-preview-04-2026"
PLANNING = {"type": "deep-research", "collaborative_planning": True}


def ok(proc: object) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]


def _until_plan_ready(ws: Workspace, key: str, handle: str | None) -> dict[str, object]:
    for _ in range(40):
        ok(ws.tick())
        row = ws.view().rows()[key]
        if row["held"] and row["handle"] != handle:
            return row
        time.sleep(0.25)
    raise AssertionError(ws.view().rows()[key])


def test_plan_ready_then_refine_then_approve_through_the_cli(tmp_path: Path) -> None:
    # Deep Research's 4 minutes scaled to about a second; its plan to a tenth of that.
    with EmulatorProcess(tmp_path, flags=("--agent-time-scale", "0.004")) as emulator:
        ws = Workspace(tmp_path / "ws", emulator=emulator)
        job = {
            "agent": AGENT,
            "input": "Research Google TPUs.",
            "config": {"agent_config": PLANNING},
        }
        key = idempotency_key(
            JobSpec(input=job["input"], model="", agent=AGENT, config={"agent_config": PLANNING})
        )
        ok(ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", [job])))
        first = _until_plan_ready(ws, key, None)
        assert str(first["last_error"]).startswith("plan ready: ")
        status = ws.cli("status", "--json", engine=False)
        ok(status)
        assert json.loads(status.stdout)["plans_ready"]["count"] == 1
        plain = ws.cli("status", engine=False)
        ok(plain)
        assert "research plan ready" in plain.stderr and "answer --refine" in plain.stderr
        shown = ws.cli("show", key, engine=False)
        ok(shown)
        assert "Research plan for" in shown.stdout
        assert ws.deliveries() == []

        ok(ws.cli("answer", "--refine", key, "Focus on v5 chips."))
        second = _until_plan_ready(ws, key, str(first["handle"]))
        assert second["handle"] != first["handle"]

        ok(ws.cli("answer", key, "Looks good, go ahead."))
        for run in ws.settle(max_wait=1.0, max_ticks=40):
            ok(run)
        row = ws.view().rows()[key]
        assert row["status"] == "consumed"
        delivered = ws.deliveries()
        assert len(delivered) == 1 and delivered[0]["idem"] == key
        report = (ws.out / f"{key}.md").read_text(encoding="utf-8")
        assert "Research plan for" not in report and "TPUs" in report
        chain = [emulator.find(key)]
        assert len(chain[0]) == 3  # plan, refined plan, research: one key, three turns
