"""The deployment files in contrib/: the systemd units pass `systemd-analyze
verify` (where the machine has it), and every command line they and the
Dockerfile run is one the CLI takes."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from reclaim_tui.cli import cli

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
UNITS = sorted((CONTRIB / "systemd").iterdir())


def _command_lines() -> list[list[str]]:
    """reclaim-tui's arguments in every ExecStart and in the Dockerfile's CMD."""
    lines = []
    for unit in UNITS:
        for found in re.findall(r"^ExecStart=\S+reclaim-tui (.*)$", unit.read_text(), re.M):
            lines.append(shlex.split(found))
    docker = (CONTRIB / "docker" / "Dockerfile").read_text()
    [cmd] = re.findall(r"^CMD (\[.*\])$", docker, re.M)
    lines.append(json.loads(cmd))
    return lines


@pytest.mark.parametrize("args", _command_lines(), ids=lambda a: " ".join(a[:1]))
def test_each_command_line_parses(args: list[str]) -> None:
    ctx = click.Context(cli, info_name="reclaim-tui")
    command = cli.get_command(ctx, args[0])
    assert command is not None, args[0]
    command.make_context(args[0], list(args[1:]), parent=ctx)  # raises on a bad flag


def test_the_container_runs_as_a_user_with_the_ledger_on_a_volume() -> None:
    docker = (CONTRIB / "docker" / "Dockerfile").read_text()
    assert re.search(r"^USER reclaim$", docker, re.M)
    assert 'VOLUME ["/data"]' in docker and "RECLAIM_DB=/data/ledger.db" in docker


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    # ExecStart must name an executable that exists: this environment's reclaim-tui.
    here = Path(sys.executable).parent / "reclaim-tui"
    assert here.exists()
    for unit in UNITS:
        text = unit.read_text().replace("/opt/reclaim-tui/bin/reclaim-tui", str(here))
        (tmp_path / unit.name).write_text(text)
    names = [f"./{unit.name}" for unit in UNITS]
    done = subprocess.run(
        ["systemd-analyze", "verify", *names],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
