"""The emulator's webhook parts on their own: settings, signatures, the registry,
the dispatcher's queue (not started: nothing is sent) and the command-line flags."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest
from click.testing import CliRunner
from standardwebhooks import Webhook as StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError

import reclaim_tui.emulator as emulator_package
from reclaim_tui.cli.emulator import emulator
from reclaim_tui.emulator.config import EmulatorConfig
from reclaim_tui.emulator.delivery import Dispatcher
from reclaim_tui.emulator.delivery_log import Destination, Message
from reclaim_tui.emulator.errors import ApiProblem
from reclaim_tui.emulator.signing import hmac_signature, new_secret
from reclaim_tui.emulator.webhook_registry import DISABLED_BY_FAILURES, WebhookRegistry
from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings

EVENTS = ["interaction.completed"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


# -- settings --------------------------------------------------------------------------------
def test_backoff_doubles_up_to_its_cap() -> None:
    settings = WebhookSettings(backoff_base=0.5, backoff_cap=3.0)
    assert [settings.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert settings.backoff(500) == 3.0


@pytest.mark.parametrize(
    "bad",
    [
        {"backoff_base": 0.0},
        {"backoff_base": 2.0, "backoff_cap": 1.0},
        {"attempt_timeout": 0.0},
        {"max_attempts": 0},
        {"disable_after": 0},
    ],
)
def test_settings_refuse_nonsense(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookSettings(**bad)


@pytest.mark.parametrize(
    "bad", [{"drop_rate": 1.5}, {"delay_seconds": -1}, {"reorder": 1.0}, {"duplicate_rate": -0.1}]
)
def test_webhook_faults_refuse_nonsense(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookFaults.from_json(bad)


def test_webhook_faults_round_trip() -> None:
    faults = WebhookFaults(delay_seconds=1.0, duplicate_rate=0.5, reorder_window=2.0, seed=9)
    assert WebhookFaults.from_json(faults.to_json()) == faults


# -- signatures ------------------------------------------------------------------------------
def test_a_secret_is_whsec_and_32_random_bytes() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith("whsec_") and first != second
    assert len(base64.b64decode(first.removeprefix("whsec_"), validate=True)) == 32


def test_a_signature_lists_one_entry_per_secret() -> None:
    old, new = new_secret(), new_secret()
    now = int(time.time())
    body = '{"type":"interaction.completed"}'
    signature = hmac_signature([new, old], "msg_1", now, body)
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(now), "webhook-signature": signature}
    assert len(signature.split(" ")) == 2
    for secret in (old, new):
        assert StandardWebhook(secret).verify(body, headers) == {"type": "interaction.completed"}
    with pytest.raises(WebhookVerificationError):
        StandardWebhook(new_secret()).verify(body, headers)


# -- the registry ----------------------------------------------------------------------------
def test_rotation_keeps_the_old_secret_for_the_overlap_only() -> None:
    clock = Clock()
    registry = WebhookRegistry(clock=clock, secret_overlap=100.0)
    webhook, first = registry.create({"uri": "https://example.com/h", "subscribed_events": EVENTS})
    second = registry.rotate(webhook, None)
    assert webhook.signing_secrets(clock.now) == [second, first]
    clock.now += 100.0
    assert webhook.signing_secrets(clock.now) == [second]
    third = registry.rotate(webhook, "revoke_previous_secrets_immediately")
    assert webhook.signing_secrets(clock.now) == [third]
    with pytest.raises(ApiProblem):
        registry.rotate(webhook, "revoke_later")


def test_failures_in_a_row_disable_and_a_success_resets_the_count() -> None:
    registry = WebhookRegistry(disable_after=3)
    webhook, _ = registry.create({"uri": "https://example.com/h", "subscribed_events": EVENTS})
    for delivered in (False, False, True, False, False):
        registry.record(webhook.id, delivered=delivered)
    assert webhook.state == "enabled"
    registry.record(webhook.id, delivered=False)
    assert webhook.state == DISABLED_BY_FAILURES
    assert registry.listeners("interaction.completed") == []
    registry.update(webhook, {"state": "enabled"}, None)
    assert registry.listeners("interaction.completed") == [webhook]


def test_a_refused_patch_changes_nothing() -> None:
    registry = WebhookRegistry()
    webhook, _ = registry.create({"uri": "https://example.com/h", "subscribed_events": EVENTS})
    with pytest.raises(ApiProblem):
        registry.update(webhook, {"name": "new", "uri": "ftp://nope"}, None)
    assert (webhook.name, webhook.uri) == (None, "https://example.com/h")
    registry.update(webhook, {"name": "new", "uri": "ftp://ignored"}, "name")
    assert (webhook.name, webhook.uri) == ("new", "https://example.com/h")


# -- the dispatcher's queue ------------------------------------------------------------------
def dispatcher(faults: WebhookFaults) -> Dispatcher:
    return Dispatcher(
        WebhookSettings(),
        retry_window=60.0,
        faults=lambda: faults,
        seed=0,
        sign=lambda message, now: "",
        abandon=lambda message: None,
        outcome=lambda message, delivered: None,
    )


def message(n: int = 0) -> Message:
    return Message(f"msg_{n}", "interaction.completed", f"i-{n}", Destination("x"), "{}", 0.0)


async def test_the_delay_fault_postpones_the_first_attempt() -> None:
    queue = dispatcher(WebhookFaults(delay_seconds=50.0))
    before = time.monotonic()
    queue.add(message())
    due = queue.next_due()
    assert due is not None and due >= before + 50.0
    assert queue.pending == 1


async def test_duplicates_follow_the_seed() -> None:
    def copies(seed: int) -> list[bool]:
        queue = dispatcher(WebhookFaults(duplicate_rate=0.5, seed=seed))
        for n in range(40):
            queue.add(message(n))
        return [m["copy"] for m in queue.log.messages]

    first = copies(3)
    assert first == copies(3)
    assert 0 < sum(first) < 40
    assert first != copies(4)


# -- flags -----------------------------------------------------------------------------------
def test_webhook_flags_reach_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[EmulatorConfig] = []
    monkeypatch.setattr(
        emulator_package, "run_forever", lambda h, p, config, ready: seen.append(config)
    )
    flags = [
        "--webhook-backoff-base=0.1",
        "--webhook-backoff-cap=2",
        "--webhook-timeout=3",
        "--webhook-retry-window=30",
        "--webhook-max-attempts=4",
        "--webhook-disable-after=5",
        "--webhook-delay=0.5",
        "--webhook-duplicate-rate=0.2",
        "--webhook-reorder-window=1",
        "--webhook-drop-rate=0.3",
        "--webhook-seed=8",
    ]
    result = CliRunner().invoke(emulator, flags)
    assert result.exit_code == 0, result.output
    (config,) = seen
    assert config.webhooks == WebhookSettings(0.1, 2.0, 3.0, 30.0, 4, 5)
    assert config.faults.webhooks == WebhookFaults(0.5, 0.2, 1.0, 0.3, 8)


def test_a_bad_webhook_flag_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emulator_package, "run_forever", lambda *a, **k: None)
    result = CliRunner().invoke(emulator, ["--webhook-drop-rate=2"])
    assert result.exit_code == 2
    assert "--webhook-drop-rate" in result.output  # named as typed (bounded at load)
