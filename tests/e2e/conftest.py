"""Fixtures of the CLI end-to-end tier: a real emulator process per module."""

from tests.helpers.fixtures import emulator, make_workspace

__all__ = ["emulator", "make_workspace"]
