"""`--loop` (issue 39.4): `run` and `tick` run their coroutine on the event
loop the flag (or RECLAIM_LOOP) names; asyncio's by default; uvloop where it
cannot be imported is refused while the flags are read (exit 2)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import reclaim_tui.cli.jobs as jobs_cli
from reclaim_tui.cli import cli
from reclaim_tui.cli.event_loop import run_on_loop
from reclaim_tui.runner.service_start import loop_name

needs_uvloop = pytest.mark.skipif(
    importlib.util.find_spec("uvloop") is None,
    reason="uvloop is not installed (the `fast` extra: pip install -e '.[fast]')",
)


async def _running_loop() -> str:
    return loop_name()


def test_the_runner_runs_on_asyncio_by_name() -> None:
    assert run_on_loop(_running_loop)(loop="asyncio") == "asyncio"


@needs_uvloop
def test_the_runner_runs_on_uvloop_by_name() -> None:
    import uvloop

    async def loop_type() -> type:
        return type(asyncio.get_running_loop())

    assert run_on_loop(loop_type)(loop="uvloop") is uvloop.Loop
    assert run_on_loop(_running_loop)(loop="uvloop") == "uvloop"


def _tick_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *flags: str) -> list[str]:
    """`tick FLAGS` with a jobs file (so not the idle early exit); its pass replaced
    by one that records the loop it runs on."""
    seen: list[str] = []

    async def recording_tick(*args: object) -> None:
        seen.append(loop_name())

    monkeypatch.setattr(jobs_cli, "_tick", recording_tick)
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"input": "x"}\n')
    args = ["tick", "--db", str(tmp_path / "l.db"), "--jobs", str(jobs), *flags]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return seen


@needs_uvloop
def test_tick_runs_its_pass_on_the_loop_its_flag_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RECLAIM_LOOP", raising=False)
    assert _tick_on(monkeypatch, tmp_path) == ["asyncio"]
    assert _tick_on(monkeypatch, tmp_path, "--loop", "uvloop") == ["uvloop"]
    monkeypatch.setenv("RECLAIM_LOOP", "uvloop")
    assert _tick_on(monkeypatch, tmp_path) == ["uvloop"]
    assert _tick_on(monkeypatch, tmp_path, "--loop", "asyncio") == ["asyncio"]


def test_uvloop_hidden_is_refused_before_the_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    ran: list[object] = []

    async def recording_tick(*args: object) -> None:
        ran.append(args)

    monkeypatch.setattr(jobs_cli, "_tick", recording_tick)
    args = ["tick", "--db", str(tmp_path / "l.db"), "--loop", "uvloop"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "Invalid value for '--loop': uvloop is not installed" in result.output
    assert ran == [] and not (tmp_path / "l.db").exists()


def test_an_unknown_loop_is_refused() -> None:
    result = CliRunner().invoke(cli, ["run", "--loop", "trio"])
    assert result.exit_code == 2
    assert "'trio' is not one of 'asyncio', 'uvloop'" in result.output
