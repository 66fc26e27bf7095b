"""`service pause|resume|status SOCK`: a running service (`run --control
SOCK`) paused, resumed or asked how it is, through its control socket, as
an attached console's `P` does. A paused service runs no pass until it is
resumed, and says so in the registry (`status` lists it): nothing else
resumes it, not even a console that attached and quit."""

from __future__ import annotations

import json
import time

import click

from reclaim_tui.cli.common import json_option, run
from reclaim_tui.errors import ConfigError
from reclaim_tui.runner.commands import ServiceState

__all__ = ["service"]


@click.group()
def service() -> None:
    """Pause, resume or look at a running service through its --control socket."""


@service.command("pause")
@click.argument("control", metavar="SOCK", type=click.Path(dir_okay=False))
@json_option
@run
async def service_pause(control: str, as_json: bool) -> None:
    """Pause the service at SOCK: the pass in progress finishes, no other starts."""
    _said(await _set(control, paused=True), as_json)


@service.command("resume")
@click.argument("control", metavar="SOCK", type=click.Path(dir_okay=False))
@json_option
@run
async def service_resume(control: str, as_json: bool) -> None:
    """Resume the service at SOCK: its passes start again."""
    _said(await _set(control, paused=False), as_json)


@service.command("status")
@click.argument("control", metavar="SOCK", type=click.Path(dir_okay=False))
@json_option
@run
async def service_status(control: str, as_json: bool) -> None:
    """The service's state (up, paused, draining), interval and last pass."""
    _said(await _set(control, paused=None), as_json)


async def _set(control: str, *, paused: bool | None) -> ServiceState:
    from reclaim_tui.runner.control import AttachedHost

    host = AttachedHost(control)
    try:
        await host.start()
    except ConfigError as exc:  # said for a console's --attach: here SOCK is an argument
        raise ConfigError(str(exc).removeprefix("--attach ")) from None
    try:
        if paused is None:
            return await host.status()
        return await host.set_pace(paused=paused)
    finally:
        await host.stop()


def _said(state: ServiceState, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"pid": state.pid, **_fields(state)}, indent=2))
        return
    last = "no pass yet"
    if state.last_pass_at is not None:
        when = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(state.last_pass_at))
        last = f"last pass {when}: {state.last_summary or 'idle'}"
    note = " (no pass runs until `service resume`)" if state.state == "paused" else ""
    click.echo(
        f"service pid {state.pid}: {state.state}{note}; a pass at least every"
        f" {state.interval:g}s, concurrency {state.concurrency}; {last}"
    )


def _fields(state: ServiceState) -> dict[str, object]:
    from reclaim_tui.core.export import iso_time

    at = state.last_pass_at
    return {
        "state": state.state,
        "interval_s": state.interval,
        "concurrency": state.concurrency,
        "passes": state.passes,
        "last_pass_at": None if at is None else iso_time(at),
        "last_summary": state.last_summary,
    }
