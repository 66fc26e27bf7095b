"""What a user of the CLI sees, kept: every command's and subcommand's `--help`
text and its parameters (names, flags, types and ranges, defaults, envvars),
walked by click's introspection and compared with tests/fixtures/cli_help.json.

The golden file was written from the CLI as it was before it became a package
(issue 26); a refactor must leave it unchanged. A deliberate change of the
surface rewrites it: `python -m tests.unit.test_cli_surface` (then review the diff).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli_help.json"
#: A fixed width: the help's wrapping must not follow the terminal the test runs in.
WIDTH = 100


def _param(param: click.Parameter) -> dict[str, Any]:
    info = param.to_info_dict()
    # The type's class name too: a Finite range and a plain FloatRange print alike.
    info["type"] = {**info["type"], "class": type(param.type).__name__}
    info["kind"] = type(param).__name__
    return info


def _walk(command: click.Command, ctx: click.Context, out: dict[str, Any]) -> None:
    out[ctx.command_path] = {
        "help": command.get_help(ctx),
        "params": [_param(p) for p in command.get_params(ctx)],
    }
    if isinstance(command, click.Group):
        names = command.list_commands(ctx)
        out[ctx.command_path]["commands"] = names
        for name in names:
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            _walk(sub, click.Context(sub, info_name=name, parent=ctx), out)


def surface() -> dict[str, Any]:
    """Every command path → its help text, its params and (a group) its commands."""
    from reclaim_tui.cli import cli

    ctx = click.Context(cli, info_name="reclaim-tui", terminal_width=WIDTH, max_content_width=WIDTH)
    out: dict[str, Any] = {}
    _walk(cli, ctx, out)
    # Through JSON and back: defaults that are tuples compare as the file's lists.
    loaded: dict[str, Any] = json.loads(json.dumps(out, default=str))
    return loaded


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return surface()


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return loaded


def test_the_same_commands_in_the_same_order(now: dict[str, Any], golden: dict[str, Any]) -> None:
    assert list(now) == list(golden)
    assert {k: v.get("commands") for k, v in now.items()} == {
        k: v.get("commands") for k, v in golden.items()
    }


def _golden_paths() -> list[str]:
    """The golden file's command paths (a missing file: one path that fails)."""
    if not GOLDEN.exists():
        return ["(no golden file)"]
    return sorted(json.loads(GOLDEN.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", _golden_paths())
def test_each_commands_help_and_params_are_unchanged(
    path: str, now: dict[str, Any], golden: dict[str, Any]
) -> None:
    assert path in now, f"{path} is gone"
    assert now[path]["help"] == golden[path]["help"]
    assert now[path]["params"] == golden[path]["params"]


def test_the_walk_sees_every_command(now: dict[str, Any]) -> None:
    """The introspection reaches the lazy commands and the subcommands (else the
    comparison above would pass on a CLI that lost them)."""
    for path in ("reclaim-tui emulator", "reclaim-tui webhooks ping", "reclaim-tui costs"):
        assert path in now
        assert "--help" in now[path]["help"]
    assert len(now) >= 24


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(surface(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
