"""Fixtures of the reliability tier (its figures summary is printed by tests/conftest.py,
which the controller of a pytest-xdist run loads too)."""

from tests.helpers.fixtures import emulator, make_workspace

__all__ = ["emulator", "make_workspace"]
