"""No dead code in src/: vulture, with tests/vulture.toml's hook patterns and
tests/vulture_whitelist.py's names, reports nothing (so CI checks it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "tests" / "vulture.toml"


def _vulture(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vulture", "--config", str(CONFIG), *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_vulture_finds_no_dead_code_in_src() -> None:
    run = _vulture()
    assert run.stdout.splitlines() == []
    assert run.stderr == "" and run.returncode == 0


def test_the_hook_patterns_hide_hooks_and_nothing_else(tmp_path: Path) -> None:
    """The same settings over a scratch module: Textual's and click's hooks
    pass, a function and a method nobody calls are reported."""
    module = tmp_path / "scratch.py"
    module.write_text(
        "import click\n"
        "from textual import on\n"
        "from textual.app import App\n\n\n"
        "class Console(App[None]):\n"
        "    BINDINGS = []\n"
        "    def on_mount(self) -> None: ...\n"
        "    def action_quit_now(self) -> None: ...\n"
        "    @on(object)\n"
        "    def _picked(self) -> None: ...\n"
        "    def tally_forgotten(self) -> int: return 1\n\n\n"
        "@click.command()\n"
        "def serve() -> None: ...\n\n\n"
        "def never_called() -> None: ...\n\n\n"
        "Console().run()\n",
        encoding="utf-8",
    )
    run = _vulture(module)
    reported = sorted(line.split("'")[1] for line in run.stdout.splitlines())
    assert reported == ["never_called", "tally_forgotten"]
    assert run.returncode == 3
