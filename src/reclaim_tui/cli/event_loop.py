"""`--loop`: the event loop `run` and `tick` run on, asyncio's own or uvloop's
(the `fast` extra). The console is not offered it: it runs on Textual's loop.

One design, a flag with its environment variable as the other flags have
(`--transport` / RECLAIM_TRANSPORT): a unit file or a crontab line says it
once, and `--help` shows the choice and its default. asyncio is the default,
so nothing changes for an install without the extra. uvloop asked for and not
importable is a usage error (exit 2), said while the flags are read: before a
log, a ledger or a socket is opened.

Only the loop changes: the command's coroutine runs in an `asyncio.Runner`
whose loop factory is uvloop's, so the signal handlers, aiosqlite's thread,
the inbox, metrics and control servers and the drain on stop are the code
they are on asyncio's loop.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any, TypeVar

import click

from reclaim_tui.cli.common import guarded

__all__ = ["LOOPS", "loop_option", "run_on_loop"]

#: The choices of `--loop`; the first is the default.
LOOPS = ("asyncio", "uvloop")

T = TypeVar("T")


def _importable(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value == "uvloop":
        try:
            importlib.import_module("uvloop")
        except ImportError as exc:
            raise click.BadParameter(
                f"uvloop is not installed ({exc}): pip install 'reclaim-tui[fast]',"
                " or leave --loop at asyncio",
                ctx,
                param,
            ) from None
    return value


def loop_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--loop",
        "loop",
        default=LOOPS[0],
        show_default=True,
        envvar="RECLAIM_LOOP",
        type=click.Choice(LOOPS),
        callback=_importable,
        help="Event loop: asyncio's own, or uvloop (less CPU a job; pip install"
        " 'reclaim-tui[fast]').",
    )(fn)


def _factory(loop: str) -> Callable[[], Any] | None:
    """The `asyncio.Runner` loop factory for `loop` (None: asyncio's default)."""
    if loop == "uvloop":
        factory: Callable[[], Any] = importlib.import_module("uvloop").new_event_loop
        return factory
    return None


def run_on_loop(coro_fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """`common.run` on the loop the command's `--loop` names (its `loop` argument)."""

    @wraps(coro_fn)
    def wrapper(*args: Any, loop: str, **kwargs: Any) -> T:
        import asyncio  # here: an idle tick ends before it needs an event loop

        with asyncio.Runner(loop_factory=_factory(loop)) as runner:
            return runner.run(coro_fn(*args, **kwargs))

    return guarded(wrapper)
