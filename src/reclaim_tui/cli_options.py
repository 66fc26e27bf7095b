"""The flags every ledger command shares, in two groups: where and how to
reach things, and the policies of the engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from reclaim_tui.config import DEFAULT_DB, DEFAULT_MODEL, DEFAULT_OUT
from reclaim_tui.core.models import GonePolicy, OrphanPolicy

__all__ = ["common"]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _connection() -> list[Decorator]:
    """Ledger, API, output and timeouts."""
    return [
        click.option(
            "--db", default=DEFAULT_DB, show_default=True, envvar="RECLAIM_DB", help="Ledger file."
        ),
        click.option(
            "--base-url",
            default=None,
            envvar="RECLAIM_BASE_URL",
            help="API base URL (the emulator's); omit for the real Gemini API.",
        ),
        click.option(
            "--model",
            default=DEFAULT_MODEL,
            show_default=True,
            help="Model for jobs that name none.",
        ),
        click.option(
            "--out", default=DEFAULT_OUT, show_default=True, help="Directory of the default sink."
        ),
        click.option("--sink", default=None, help="module:callable sink instead of --out."),
        click.option(
            "--api-key",
            default=None,
            help="API key (else GEMINI_API_KEY / GOOGLE_API_KEY). Never stored.",
        ),
        click.option("--concurrency", default=16, show_default=True, type=int),
        click.option("--request-timeout", default=30.0, show_default=True, type=float),
        click.option("--busy-timeout", default=10.0, show_default=True, type=float),
        click.option(
            "--lease-seconds",
            default=None,
            type=float,
            help="Lease length; at least 3 × (request + busy timeout).",
        ),
    ]


def _policies() -> list[Decorator]:
    """Attempts, polls, orphans, vanished interactions, deadlines, logging."""
    return [
        click.option("--max-attempts", default=5, show_default=True, type=int),
        click.option(
            "--first-poll",
            default=2.0,
            show_default=True,
            type=float,
            help="Age of a job at its first poll; later polls at 2x, 4x, 8x … that.",
        ),
        click.option(
            "--orphan-policy",
            type=click.Choice([p.value for p in OrphanPolicy]),
            default=OrphanPolicy.RESUBMIT.value,
            show_default=True,
        ),
        click.option(
            "--on-gone",
            type=click.Choice([p.value for p in GonePolicy]),
            default=GonePolicy.RESUBMIT.value,
            show_default=True,
            help="A 404 for a created interaction (past retention): resend it (recorded as a"
            " possible duplicate spend) or hold it for an operator.",
        ),
        click.option(
            "--deadline",
            default=None,
            type=float,
            help="Seconds a submitted job may run before it is cancelled (default: none for"
            " models, 4 h for agents; a job's own 'deadline' wins).",
        ),
        click.option(
            "--retention-days",
            default=55.0,
            show_default=True,
            type=float,
            help="How long the API keeps an interaction (55 paid tier, 1 free tier): the"
            " console warns about submitted rows older than that.",
        ),
        click.option(
            "--webhook-url",
            default=None,
            envvar="RECLAIM_WEBHOOK_URL",
            help="Send every create with a webhook_config naming this URL (your `reclaim-tui"
            " inbox`, reachable by the API): events wake their rows, polls become a rare"
            " fallback, and an orphan is adopted from the event that names it.",
        ),
        click.option(
            "--webhook-grace",
            default=900.0,
            show_default=True,
            type=float,
            help="With --webhook-url: seconds an orphan waits for an event naming it before"
            " --orphan-policy applies (events come when a job ends: set it above your jobs'"
            " usual run time).",
        ),
        click.option(
            "--webhook-poll",
            default=120.0,
            show_default=True,
            type=float,
            help="With --webhook-url: a job's age at its first fallback poll (then 2x, up to"
            " every 30 min).",
        ),
        click.option(
            "--emulator-lookup/--no-emulator-lookup",
            default=False,
            envvar="RECLAIM_EMULATOR_LOOKUP",
            help="Adopt orphans through the emulator's find-by-label admin API.",
        ),
        click.option("-v", "--verbose", is_flag=True, help="Log each pass to stderr."),
    ]


def common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Flags every ledger command shares."""
    for option in reversed([*_connection(), *_policies()]):
        fn = option(fn)
    return fn
