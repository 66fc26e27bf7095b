"""`reclaim-tui emulator`: run the Interactions API emulator from the command line.

The command is the CLI's (its flags share the CLI's number checks); the
emulator package it starts imports nothing of the CLI or the product."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from reclaim_tui.cli.options import Finite, bound_numbers

if TYPE_CHECKING:
    from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings

__all__ = ["emulator"]

#: A fraction of requests: a real number in [0, 1] (`nan` was accepted).
_SHARE = Finite(0.0, 1.0)


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Bind address (loopback unless told otherwise).",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: any free port).",
)
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
@click.option(
    "--rate-429", default=0.0, type=_SHARE, help="Fraction of requests answered 429 (rate limited)."
)
@click.option(
    "--rate-500",
    default=0.0,
    type=_SHARE,
    help="Fraction of requests answered 500.",
)
@click.option(
    "--rate-503", default=0.0, type=_SHARE, help="Fraction of requests answered 503 (unavailable)."
)
@click.option("--drop-rate", default=0.0, type=float, help="Accepted-then-dropped creates.")
@click.option(
    "--slow-rate",
    default=0.0,
    type=_SHARE,
    help="Fraction answered after --slow-seconds.",
)
@click.option(
    "--slow-seconds", default=0.0, type=float, help="How long a slow request waits (--slow-rate)."
)
@click.option(
    "--seed", default=0, type=int, help="Seed of the fault and latency draws (a run repeats)."
)
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
    "--vanish-rate",
    default=0.0,
    type=float,
    help="Fraction of interactions whose GET answers 404 for --vanish-seconds after their"
    " create, then serves them (a real outage did: python-genai issue 2985).",
)
@click.option(
    "--vanish-seconds",
    default=0.0,
    type=float,
    help="How long a vanished interaction answers 404 (with --vanish-rate).",
)
@click.option(
    "--queued-share",
    default=0.0,
    type=Finite(0.0, 1.0, max_open=True),
    help="Share of a background run spent 'queued' (the real API was recorded never"
    " showing it: 0 by default).",
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
@click.option(
    "--webhook-backoff-base",
    default=0.5,
    show_default=True,
    type=float,
    help="Seconds before a failed webhook delivery's first retry; doubles each time.",
)
@click.option(
    "--webhook-backoff-cap",
    default=60.0,
    show_default=True,
    type=float,
    help="Longest wait between webhook delivery attempts.",
)
@click.option(
    "--webhook-timeout",
    default=10.0,
    show_default=True,
    type=float,
    help="Seconds a receiver has to answer one delivery attempt.",
)
@click.option(
    "--webhook-retry-window",
    default=None,
    type=float,
    help="Give a delivery up this long after its event (default: 24 h x --agent-time-scale).",
)
@click.option(
    "--webhook-max-attempts", default=None, type=int, help="Give a delivery up after N attempts."
)
@click.option(
    "--webhook-disable-after",
    default=20,
    show_default=True,
    type=int,
    help="Failed attempts in a row that disable a static webhook.",
)
@click.option(
    "--webhook-delay", default=0.0, type=float, help="Seconds added before a delivery's first try."
)
@click.option(
    "--webhook-duplicate-rate", default=0.0, type=float, help="Fraction of events sent twice."
)
@click.option(
    "--webhook-reorder-window",
    default=0.0,
    type=float,
    help="Hold events this many seconds, then send them in random order.",
)
@click.option(
    "--webhook-drop-rate",
    default=0.0,
    type=float,
    help="Fraction of delivery attempts lost (then retried).",
)
@click.option(
    "--webhook-seed", default=None, type=int, help="Seed of webhook faults (default: --seed)."
)
def emulator(**kw: Any) -> None:
    """Run the Interactions API emulator (what tests, demo and benchmarks use)."""
    from reclaim_tui.emulator import EmulatorConfig, run_forever

    webhooks, webhook_faults = _webhook_options(kw)
    rates = ("fail_rate", "rate_429", "rate_500", "rate_503", "drop_rate", "slow_rate")
    more = (
        "incomplete_rate",
        "budget_exceeded_rate",
        "requires_action_rate",
        "continuation_rate",
        "vanish_rate",
    )
    if kw["vanish_seconds"] < 0:
        raise click.BadParameter("must not be negative", param_hint="--vanish-seconds")
    for name in (*rates, *more):
        if not 0.0 <= kw[name] <= 1.0:
            raise click.BadParameter(f"must be between 0 and 1, got {kw[name]}", param_hint=name)
    latency_max = kw.pop("latency_max")
    latency_range = (kw["latency"], latency_max) if latency_max is not None else None
    host, port = kw.pop("host"), kw.pop("port")
    config = EmulatorConfig.from_flags(
        latency_range=latency_range, webhooks=webhooks, webhook_faults=webhook_faults, **kw
    )
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


def _webhook_options(kw: dict[str, Any]) -> tuple[WebhookSettings, WebhookFaults]:
    """Take the `--webhook-*` values out of `kw`, checked."""
    from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings

    values = {name: kw.pop(name) for name in list(kw) if name.startswith("webhook_")}
    try:
        faults = WebhookFaults.from_json(
            {
                "delay_seconds": values["webhook_delay"],
                "duplicate_rate": values["webhook_duplicate_rate"],
                "reorder_window": values["webhook_reorder_window"],
                "drop_rate": values["webhook_drop_rate"],
                "seed": values["webhook_seed"],
            }
        )
        settings = WebhookSettings(
            backoff_base=values["webhook_backoff_base"],
            backoff_cap=values["webhook_backoff_cap"],
            attempt_timeout=values["webhook_timeout"],
            retry_window=values["webhook_retry_window"],
            max_attempts=values["webhook_max_attempts"],
            disable_after=values["webhook_disable_after"],
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--webhook-*") from None
    return settings, faults


# Every numeric flag a range, whoever loads the command (the CLI's group or a test).
bound_numbers(emulator)
