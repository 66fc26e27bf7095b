"""The demo's room (reclaim_tui/demo): the console names the demo's world by a
string its engine worker resolves, and loads no emulator module itself
(pyproject.toml's import-linter contracts keep the direction statically)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

from reclaim_tui.demo import OPENER


def test_the_opener_names_the_demo_world() -> None:
    module_name, _, name = OPENER.partition(":")
    opener = getattr(importlib.import_module(module_name), name)
    assert module_name == "reclaim_tui.demo.world"
    assert inspect.signature(opener).parameters.keys() >= {"settings", "actor", "jobs", "seed"}


def test_the_consoles_demo_loads_no_emulator() -> None:
    code = (
        "import sys, reclaim_tui.tui.demo, reclaim_tui.bootstrap, reclaim_tui.runner.worker;"
        "loaded = [m for m in sys.modules if m.startswith('reclaim_tui.emulator')];"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
