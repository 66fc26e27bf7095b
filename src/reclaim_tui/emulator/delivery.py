"""Sending webhook messages: at least once, retried with backoff, with faults.

One background task (`Dispatcher.run`, owned by the server) takes each
message when it is due and POSTs it from a task of its own. An answer that
is not 2xx, a timeout or a refused connection (a receiver that is not up
yet) is retried after `WebhookSettings.backoff(n)`, until the retry window
or `max_attempts` is used up; then the message is given up and counted.
Every attempt of a message carries the same `webhook-id` and a fresh
`webhook-timestamp` and signature.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import time
from collections.abc import Callable
from dataclasses import replace

import aiohttp

from reclaim_tui.emulator.delivery_log import DeliveryLog, Message
from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings

__all__ = ["Dispatcher"]

#: Attempts in flight at once; more wait their turn.
_CONCURRENCY = 64
_USER_AGENT = "reclaim-tui-emulator-webhooks"

#: Signs one attempt: (message, unix seconds) -> the `webhook-signature` value.
Signer = Callable[[Message, int], str]
#: Why a message is no longer wanted (its static webhook is gone), or None.
Abandon = Callable[[Message], str | None]
#: Tells the static webhook's owner how an attempt went.
Outcome = Callable[[Message, bool], None]


class Dispatcher:
    """The queue of messages and the task that sends them."""

    def __init__(
        self,
        settings: WebhookSettings,
        *,
        retry_window: float,
        faults: Callable[[], WebhookFaults],
        seed: int,
        sign: Signer,
        abandon: Abandon,
        outcome: Outcome,
    ) -> None:
        self.settings = settings
        self.retry_window = retry_window
        self.log = DeliveryLog()
        self._faults = faults
        self._default_seed = seed
        self._seed: int | None = None
        self._random = random.Random(seed)
        self._sign, self._abandon, self._outcome = sign, abandon, outcome
        self._due: list[tuple[float, int, Message]] = []
        self._order = itertools.count()
        self._held: list[Message] = []
        self._held_until: float | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(_CONCURRENCY)
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    # -- the queue ------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Messages waiting, held or in flight."""
        return len(self._due) + len(self._held) + len(self._inflight)

    def next_due(self) -> float | None:
        """When the next queued attempt is due (`time.monotonic()`), None if none is."""
        return self._due[0][0] if self._due else None

    def _dice(self) -> random.Random:
        wanted = self._faults().seed
        seed = self._default_seed if wanted is None else wanted
        if seed != self._seed:
            self._seed, self._random = seed, random.Random(seed)
        return self._random

    def _roll(self, rate: float) -> bool:
        return rate > 0.0 and self._dice().random() < rate

    def add(self, message: Message) -> None:
        """Queue a new message (and, by the duplicate fault, a copy of it)."""
        faults = self._faults()
        copies = [message]
        if self._roll(faults.duplicate_rate):
            copies.append(replace(message, copy=True))
        for each in copies:
            self.log.message(each)
            if faults.reorder_window > 0:
                self._hold(each, faults.reorder_window)
            else:
                self._schedule(each, self._now() + faults.delay_seconds)

    def _hold(self, message: Message, window: float) -> None:
        if self._held_until is None:
            self._held_until = self._now() + window
        self._held.append(message)
        self._wake.set()

    def _release_held(self, now: float) -> None:
        if self._held_until is None or now < self._held_until:
            return
        held, self._held, self._held_until = self._held, [], None
        self._dice().shuffle(held)
        for message in held:
            self._schedule(message, now + self._faults().delay_seconds)

    def _schedule(self, message: Message, at: float) -> None:
        heapq.heappush(self._due, (at, next(self._order), message))
        self._wake.set()

    @staticmethod
    def _now() -> float:
        # The clock of `Message.born`; not the store's, which tests may inject.
        return time.monotonic()

    # -- the task -------------------------------------------------------------------------
    async def start(self) -> None:
        self._session = aiohttp.ClientSession(headers={"user-agent": _USER_AGENT})
        self._task = asyncio.create_task(self._run(), name="emulator-webhook-dispatcher")

    async def stop(self) -> None:
        """Cancel the task and every attempt in flight; close the HTTP session."""
        tasks = [t for t in (self._task, *self._inflight) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def reset(self) -> None:
        """Forget every message and count (attempts in flight are cancelled)."""
        for task in self._inflight:
            task.cancel()
        self._due.clear()
        self._held.clear()
        self._held_until = None
        self.log.reset()

    async def _run(self) -> None:
        while True:
            now = self._now()
            self._release_held(now)
            while self._due and self._due[0][0] <= now:
                message = heapq.heappop(self._due)[2]
                task = asyncio.create_task(self._deliver(message))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
            due = self.next_due()
            next_at = [] if due is None else [due]
            if self._held_until is not None:
                next_at.append(self._held_until)
            self._wake.clear()
            try:
                timeout = max(min(next_at) - now, 0.001) if next_at else None
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass

    # -- one message ----------------------------------------------------------------------
    async def _deliver(self, message: Message) -> None:
        reason = self._abandon(message)
        if reason is not None:
            self.log.given_up(message, reason)
            return
        async with self._slots:
            message.attempts += 1
            outcome, status = await self._attempt(message)
        self.log.attempt(message, outcome, status)
        self._outcome(message, outcome == "delivered")
        if outcome != "delivered":
            self._retry(message)

    def _retry(self, message: Message) -> None:
        settings = self.settings
        if settings.max_attempts is not None and message.attempts >= settings.max_attempts:
            self.log.given_up(message, f"{message.attempts} attempts failed")
            return
        at = self._now() + settings.backoff(message.attempts)
        if at - message.born > self.retry_window:
            self.log.given_up(message, f"retry window of {self.retry_window:g} s used up")
            return
        self._schedule(message, at)

    async def _attempt(self, message: Message) -> tuple[str, int | None]:
        """One POST: (outcome, HTTP status)."""
        if self._roll(self._faults().drop_rate):
            return "dropped", None
        assert self._session is not None, "the dispatcher is not started"
        now = int(time.time())
        headers = {
            "content-type": "application/json",
            "webhook-id": message.msg_id,
            "webhook-timestamp": str(now),
            "webhook-signature": self._sign(message, now),
        }
        timeout = aiohttp.ClientTimeout(total=self.settings.attempt_timeout)
        try:
            async with self._session.post(
                message.destination.uri,
                data=message.body.encode("utf-8"),
                headers=headers,
                timeout=timeout,
                # A redirect counts as a failed attempt: the event goes to
                # the registered URL only.
                allow_redirects=False,
            ) as response:
                await response.read()
                outcome = "delivered" if 200 <= response.status < 300 else "http_error"
                return outcome, response.status
        except TimeoutError:
            return "timeout", None
        except (aiohttp.ClientError, OSError, ValueError):
            # ValueError: a dynamic URI the client cannot use; retried like
            # an unreachable one until it is given up, never lost uncounted.
            return "connection_error", None
