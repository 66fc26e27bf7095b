"""A Deep Research-shaped jobs file end to end (issue 11): real `tick`
processes, the real google-genai SDK, the emulator's agent (its minutes of
research scaled down). The .md holds the final report; the stored JSON and
the .json beside the .md hold every step the API returned."""

from __future__ import annotations

import json
import time
from pathlib import Path

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.outputs import output_text
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs

AGENT = "deep-research-preview-04-2026"


def test_a_deep_research_job_delivers_the_final_report(tmp_path: Path) -> None:
    flags = ("--agent-time-scale", "0.005")  # ~4 minutes of research in about a second
    with EmulatorProcess(tmp_path, flags=flags) as emu:
        ws = Workspace(tmp_path / "dr", emulator=emu, use_recording_sink=False)
        line = {
            "input": "Research how SQLite's write-ahead log lets readers and a writer coexist.",
            "agent": AGENT,
            "labels": {"team": "docs"},
        }
        key = idempotency_key(
            JobSpec(input=line["input"], model="", agent=AGENT, labels={"team": "docs"})
        )
        first = ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", [line]))
        assert first.returncode == 0, first.stderr
        for _ in range(40):
            if ws.view().rows()[key]["status"] == "consumed":
                break
            time.sleep(max(0.05, min(ws.view().seconds_until_due() or 0.2, 2.0)))
            run = ws.tick()
            assert run.returncode == 0, run.stderr
        row = ws.view().rows()[key]
        assert row["status"] == "consumed", row
        assert row["model"] == AGENT

        (interaction,) = emu.find(key)
        assert interaction["agent"] == AGENT and interaction.get("model") is None
        labels = dict(interaction["labels"])
        # The create names its attempt too (issue 22.1): `1-<send time in µs>`.
        assert labels.pop("idem_attempt").startswith("1-")
        assert labels == {"team": "docs", "idem": key}
        kinds = [s["type"] for s in interaction["steps"]]
        # A completed Deep Research GET holds the input and the report, as a
        # recorded real run does (tests/contract/recorded/issue24_real_answers.json);
        # tests/unit/test_outputs.py holds the interim outputs' case.
        assert kinds == ["user_input", "model_output"], kinds

        report = (ws.out / f"{key}.md").read_text(encoding="utf-8")
        assert report and report == output_text(interaction)  # the SDK's output_text
        stored = json.loads((ws.out / f"{key}.json").read_text(encoding="utf-8"))
        assert [s["type"] for s in stored["steps"]] == kinds  # every step kept
        assert ws.view().results()[key]["output_text"] == report
