"""Fixtures of the reliability tier, and the figures summary at the end of a run."""

from typing import Any

from tests.helpers.fixtures import emulator, figures_summary, make_workspace

__all__ = ["emulator", "make_workspace"]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    figures_summary(terminalreporter)
