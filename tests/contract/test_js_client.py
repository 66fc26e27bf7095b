"""The official JavaScript SDK (`@google/genai` on node) runs its own published
interactions samples against the emulator (js_client/README.md names their
source and licence): each exits 0, every answer it got fits google-genai's
models (emulator_shapes.py), and what it did is checked in the emulator's store.

node and npm come from the system; the SDK and tsx are installed by the test
itself, cached (tests/helpers/clients.py).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.emulator.interaction import StoredInteraction
from tests.contract.emulator_shapes import Recorder, recording
from tests.helpers.clients import JS_CLIENT, js_client_dir

__all__ = ["recording"]  # the fixture, imported for pytest

SAMPLES = sorted(p.name for p in (JS_CLIENT / "samples").glob("interactions_*.ts"))
_RUN_TIMEOUT = 180


@pytest.fixture(scope="module")
def samples_dir() -> Path:
    return js_client_dir()


@pytest.fixture
async def server(recording: Recorder) -> AsyncIterator[EmulatorServer]:
    server = EmulatorServer(EmulatorConfig(latency=0.05, api_key="js-sample-key"))
    server.app.middlewares.append(recording.middleware)
    async with server:
        yield server
    assert recording.check_all() > 0


async def run_sample(samples: Path, server: EmulatorServer, name: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_"))}
    env.update(GEMINI_API_KEY=server.api_key or "", GOOGLE_GEMINI_BASE_URL=server.base_url)
    process = await asyncio.create_subprocess_exec(
        str(samples.parent / "node_modules" / ".bin" / "tsx"),
        name,
        cwd=samples,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), _RUN_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def interactions(server: EmulatorServer) -> list[StoredInteraction]:
    return list(server.store.interactions.values())


def final_text(interaction: StoredInteraction) -> str:
    outputs = [s for s in interaction.timed_steps() if s[1]["type"] == "model_output"]
    return "".join(b.get("text", "") for b in outputs[-1][1]["content"])


def input_types(interaction: StoredInteraction) -> list[str]:
    value: Any = interaction.request.input
    return [item["type"] for item in value] if isinstance(value, list) else []


@pytest.mark.parametrize("name", SAMPLES)
async def test_the_sample_runs_against_the_emulator(
    samples_dir: Path, server: EmulatorServer, name: str
) -> None:
    code, out, err = await run_sample(samples_dir, server, name)
    assert code == 0, f"{name} exited {code}\n{out[-3000:]}\n{err[-3000:]}"
    made = interactions(server)
    assert made, f"{name} created no interaction"
    assert all(i.status not in ("failed", "queued", "in_progress") for i in made), [
        (i.id, i.status) for i in made
    ]


async def test_the_client_state_function_calling_sample_completes_its_call(
    samples_dir: Path, server: EmulatorServer
) -> None:
    code, out, err = await run_sample(
        samples_dir, server, "interactions_function_calling_client_state.ts"
    )
    assert code == 0, err[-3000:]
    assert "Function call: schedule_meeting" in out
    asked, answered = interactions(server)
    assert asked.status == "requires_action"
    # The whole history, the call answered within the same input, no previous id.
    assert answered.request.previous_interaction_id is None
    assert input_types(answered) == ["user_input", "thought", "function_call", "function_result"]
    assert answered.status == "completed"
    assert "schedule_meeting returned Meeting scheduled successfully." in final_text(answered)


async def test_the_structured_output_sample_gets_json_that_fits_its_schema(
    samples_dir: Path, server: EmulatorServer
) -> None:
    code, _, err = await run_sample(samples_dir, server, "interactions_structured_output_json.ts")
    assert code == 0, err[-3000:]
    (done,) = interactions(server)
    assert done.request.echo["response_format"]["type"] == "array"
    value = json.loads(final_text(done))
    assert isinstance(value, list) and value
