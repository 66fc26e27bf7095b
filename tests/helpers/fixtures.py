"""Pytest fixtures shared by tests/e2e and tests/reliability (imported by their conftests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.emulator import EmulatorProcess
from tests.helpers.figures import all_figures, figures_path
from tests.helpers.procs import Workspace

__all__ = ["emulator", "figures_summary", "make_workspace"]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    """One emulator process per test module, latency 0, no faults. Tests that
    change faults start their own (`EmulatorProcess(...)`)."""
    with EmulatorProcess(tmp_path_factory.mktemp("emulator")) as emu:
        yield emu


@pytest.fixture
def make_workspace(tmp_path: Path, emulator: EmulatorProcess) -> Callable[..., Workspace]:
    """`make_workspace(name, **options)`: a fresh ledger directory on the module's emulator."""

    def make(name: str = "ws", **options: Any) -> Workspace:
        options.setdefault("emulator", emulator)
        return Workspace(tmp_path / name, **options)

    return make


def figures_summary(terminalreporter: Any) -> None:
    figures = all_figures()
    if not figures:
        return
    terminalreporter.section("reliability figures")
    for entry in figures:
        rest = " ".join(f"{k}={v}" for k, v in entry.items() if k != "name")
        terminalreporter.write_line(f"{entry['name']}: {rest}")
    terminalreporter.write_line(f"(JSON: {figures_path()})")
