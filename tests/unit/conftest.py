"""Fixtures shared by some unit test modules, requested by name."""

from tests.helpers.fast_path import emu, fast_path_trusted

__all__ = ["emu", "fast_path_trusted"]
