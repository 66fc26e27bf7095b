"""Fixtures of the fast path's unit tests (tests/unit/conftest.py imports them).

`fast_path_trusted`: the installed google-genai counts as verified, so the fast
path runs whatever SDK the suite has (how a new version gets verified: see
tests/unit/test_gemini_fastpath.py), and each test gets its own first "stock
path" warning. `emu`: an in-process emulator, no latency, its clock frozen, so
two creates differ only in their id. A module that needs another emulator
defines its own `emu`, which takes precedence.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from google import genai

from reclaim_tui.core.gemini import fastpath
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer

__all__ = ["VERIFIED_SDKS", "emu", "fast_path_trusted"]

#: the fast path's verified versions as shipped, before any test adds the installed one
VERIFIED_SDKS = fastpath.FAST_PATH_SDK_VERSIONS


@pytest.fixture
def fast_path_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = str(genai.__version__)
    if installed not in VERIFIED_SDKS:
        monkeypatch.setattr(fastpath, "FAST_PATH_SDK_VERSIONS", (*VERIFIED_SDKS, installed))
    monkeypatch.setattr(fastpath, "_warned", [])


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    config = EmulatorConfig(latency=None, clock=lambda: 1_800_000_000.0)
    async with EmulatorServer(config) as server:
        yield server
