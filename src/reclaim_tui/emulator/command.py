"""`reclaim-tui emulator`: run the Interactions API emulator from the command line."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["emulator"]


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Bind address (loopback unless told otherwise).",
)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option(
    "--api-key",
    default=None,
    help="Refuse requests without this key (default: accept any key, as local emulators of"
    " cloud APIs do).",
)
@click.option(
    "--latency",
    default=2.0,
    show_default=True,
    type=float,
    help="Seconds until an interaction completes.",
)
@click.option(
    "--latency-max",
    default=None,
    type=float,
    help="With --latency, draw each job's duration in [latency, latency-max].",
)
@click.option(
    "--fail-rate", default=0.0, type=float, help="Fraction of interactions ending failed."
)
@click.option("--rate-429", default=0.0, type=float)
@click.option("--rate-500", default=0.0, type=float)
@click.option("--rate-503", default=0.0, type=float)
@click.option("--drop-rate", default=0.0, type=float, help="Accepted-then-dropped creates.")
@click.option("--slow-rate", default=0.0, type=float)
@click.option("--slow-seconds", default=0.0, type=float)
@click.option("--seed", default=0, type=int)
@click.option(
    "--incomplete-rate",
    default=0.0,
    type=float,
    help="Fraction of interactions ending incomplete (partial output).",
)
@click.option(
    "--budget-exceeded-rate",
    default=0.0,
    type=float,
    help="Fraction ending budget_exceeded (partial output).",
)
@click.option(
    "--requires-action-rate",
    default=0.0,
    type=float,
    help="Fraction stopping on a function call (requires_action).",
)
@click.option(
    "--continuation-rate",
    default=0.0,
    type=float,
    help="Fraction of foreground runs pausing at requires_continuation.",
)
@click.option(
    "--agent-time-scale",
    default=1.0,
    show_default=True,
    type=float,
    help="Multiply agents' run times (Deep Research takes minutes).",
)
@click.option(
    "--retention", default=None, type=float, help="Seconds an interaction is kept; then 404."
)
@click.option(
    "--strict-models/--any-model",
    "strict_models",
    default=False,
    help="Refuse model names the SDK does not list (400).",
)
@click.option(
    "--full-steps/--answer-steps",
    "full_steps",
    default=True,
    show_default=True,
    help="GET shows user_input and thought steps, as the real API does.",
)
def emulator(**kw: Any) -> None:
    """Run the Interactions API emulator (what tests, demo and benchmarks use)."""
    from reclaim_tui.emulator import EmulatorConfig, run_forever

    rates = ("fail_rate", "rate_429", "rate_500", "rate_503", "drop_rate", "slow_rate")
    more = ("incomplete_rate", "budget_exceeded_rate", "requires_action_rate", "continuation_rate")
    for name in (*rates, *more):
        if not 0.0 <= kw[name] <= 1.0:
            raise click.BadParameter(f"must be between 0 and 1, got {kw[name]}", param_hint=name)
    latency_max = kw.pop("latency_max")
    latency_range = (kw["latency"], latency_max) if latency_max is not None else None
    host, port = kw.pop("host"), kw.pop("port")
    config = EmulatorConfig.from_flags(latency_range=latency_range, **kw)
    try:
        run_forever(
            host,
            port,
            config,
            ready=lambda url: click.echo(
                f"emulator on {url} (admin: {url}/_emulator/stats)", err=True
            ),
        )
    except KeyboardInterrupt:
        pass
