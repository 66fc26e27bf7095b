"""google-genai 2.x, what pydantic-ai and other frameworks pin (`<3`), makes every
Interactions call it has against the emulator (genai2_calls.py), in a virtualenv
of its own made once per machine (tests/helpers/clients.py); every answer it
got fits google-genai 3.x's models (emulator_shapes.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from tests.contract.emulator_shapes import Recorder, recording
from tests.helpers.clients import GENAI2_VERSION, genai2_python

__all__ = ["recording"]  # the fixture, imported for pytest

DRIVER = Path(__file__).with_name("genai2_calls.py")
_RUN_TIMEOUT = 180


@pytest.fixture(scope="module")
def python2() -> Path:
    return genai2_python()


@pytest.fixture
async def report(python2: Path, recording: Recorder) -> AsyncIterator[dict[str, Any]]:
    server = EmulatorServer(EmulatorConfig(latency=0.05, api_key="genai2-key"))
    server.app.middlewares.append(recording.middleware)
    async with server:
        process = await asyncio.create_subprocess_exec(
            str(python2),
            str(DRIVER),
            server.base_url,
            server.api_key or "",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), _RUN_TIMEOUT)
        assert process.returncode == 0, err.decode()[-3000:]
        yield json.loads(out)
    assert recording.check_all() > 0


async def test_every_call_of_google_genai_2_works(report: dict[str, Any]) -> None:
    assert report["sdk"] == GENAI2_VERSION
    failed = {
        name: r["error"] for name, r in report.items() if isinstance(r, dict) and "error" in r
    }
    assert not failed, failed
    assert report["foreground"]["status"] == "completed"
    assert report["foreground"]["service_tier"] == "standard"
    assert report["background"]["statuses"][-1] == "completed"
    assert report["cancel_and_delete"] == {
        "cancelled": "cancelled",
        "after_delete": "NotFoundError",
    }
    kinds = report["streaming"]["kinds"]
    assert kinds[:2] == ["interaction.created", "interaction.status_update"]
    assert kinds[-1] == "interaction.completed" and report["streaming"]["text"]
    assert report["stateful"]["status"] == "completed" and report["stateful"]["cached"] > 0


async def test_a_stateless_tool_call_completes_as_pydantic_ai_makes_it(
    report: dict[str, Any],
) -> None:
    call = report["stateless_function_call"]
    assert call["asked"] == "requires_action"
    assert call["history"] == ["user_input", "thought", "function_call", "function_result"]
    assert call["status"] == "completed" and "get_weather returned sunny" in call["text"]


async def test_structured_output_parses(report: dict[str, Any]) -> None:
    value = report["structured"]["value"]
    assert isinstance(value["name"], str) and isinstance(value["age"], int)
