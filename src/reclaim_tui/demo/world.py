"""The demo's world, engine side: seeded jobs, light faults, a flaky sink and
the embedded emulator. No Textual here: the console's engine worker process
builds it (`open_demo_engine`, named in its launch as `demo.OPENER`), so the
emulator's CPU is not the console's. tui/demo.py is the console's side.

Jobs take 3–40 s, some answers are slow, a few creates are rate limited,
~8 % of jobs end `failed`, and a couple of creates are accepted and then
dropped, so orphans appear. Lookup by label is off and orphans are held for
the operator (`o` recovers, `a` adopts) — until a webhook event names them:
the demo runs a webhook inbox (reclaim_tui/inbox) on a loopback port, the
emulator delivers its dynamic webhooks there (a few twice, as the API may),
and the engine sends every create with a webhook_config, so events wake
finished jobs and orphans are adopted from the events that name them. A
sink that now and then refuses leaves some rows `done` for `R`.

The demo stays alive: after the seeded jobs, a `Trickle` reserves a new job
every 3–8 s (seeded), through the engine's `submit` under the actor `demo`;
the console's loop sends it (a paused loop sends none) — mostly models, now
and then a Deep Research agent that runs for minutes, some of which plan
first and wait for an answer ("plan ready", `w`). The emulator's usage is
scaled up (`usage_scale`) so that costs look like a real ledger's: a model
job costs cents, a research run about a dollar.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from reclaim_tui.bootstrap import open_engine, open_ledger
from reclaim_tui.config import Settings
from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.models import Actor, JobSpec, StoredResult
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.demo import DEMO_MODELS
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.errors import ReclaimError, SinkError
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Verifier

__all__ = [
    "FlakySink",
    "Trickle",
    "demo_faults",
    "demo_jobs",
    "open_demo_engine",
]

_TASKS = (
    "Summarise the attached incident report in five bullet points: {}",
    "Translate into French, keeping the tone: {}",
    "Write a product description for {}",
    "List the risks and mitigations of {}",
    "Draft a polite follow-up email about {}",
    "Explain to a new engineer how {} works",
    "Classify the sentiment of customer feedback about {}",
    "Extract every date and amount mentioned in the contract for {}",
)
_TOPICS = (
    "the Q3 billing migration",
    "our on-call rotation",
    "the warehouse robot fleet",
    "a solar-powered water pump",
    "the March outage of the EU region",
    "the new onboarding checklist",
    "the loyalty programme renewal",
    "a Postgres major-version upgrade",
    "the mobile app's offline mode",
    "the supplier contract with Nordlicht GmbH",
)


def demo_jobs(count: int, seed: int) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs = []
    for n in range(count):
        prompt = rng.choice(_TASKS).format(rng.choice(_TOPICS)) + f" (#{n + 1})"
        jobs.append(JobSpec(input=prompt, model=DEMO_MODELS[n % 3 == 2]))
    return jobs


#: The trickle's models, weighted; its agents (the emulator's run times, scaled by
#: AGENT_TIME_SCALE: about 1 and 4 minutes).
TRICKLE_MODELS = {"gemini-flash-latest": 6, "gemini-pro-latest": 2, "gemini-flash-lite-latest": 2}
TRICKLE_AGENTS = ("deep-research-preview-04-2026", "deep-research-max-preview-04-2026")
AGENT_SHARE = 0.15
#: Of the agent jobs, those that plan first and wait for an operator's answer.
PLANNING_SHARE = 0.3
AGENT_TIME_SCALE = 0.25
#: Token counts times this for models, for agents: demo prompts are a sentence
#: and answers a paragraph; real prompts carry documents, research reads the web.
USAGE_SCALE = (50.0, 400.0)
_RESEARCH = (
    "Research the history of {} and write a cited report",
    "Compare the published approaches to {}, with sources",
    "Survey what is known about the costs of {}",
)


class Trickle:
    """New demo jobs at seeded intervals of `every` seconds, each handed to
    `submit` (the engine's, as the console's `s` calls it). `sleep` and the
    run's `tag` (in every prompt, so a demo run again on the same ledger
    still adds new keys) are injectable for tests."""

    def __init__(
        self,
        submit: Callable[[list[JobSpec]], Awaitable[Any]],
        seed: int,
        *,
        every: tuple[float, float] = (3.0, 8.0),
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        tag: str | None = None,
    ) -> None:
        self.submit = submit
        self.rng = random.Random(f"trickle-{seed}")
        self.every = every
        self.sleep = sleep
        self.tag = tag if tag is not None else secrets.token_hex(2)
        self.numbers = itertools.count(1)
        self.sent: list[JobSpec] = []

    def next_job(self) -> JobSpec:
        n = next(self.numbers)
        topic = self.rng.choice(_TOPICS)
        suffix = f" (live #{n} · {self.tag})"
        if self.rng.random() < AGENT_SHARE:
            agent = self.rng.choice(TRICKLE_AGENTS)
            config: dict[str, Any] = {}
            if self.rng.random() < PLANNING_SHARE:
                config["agent_config"] = {"type": "deep-research", "collaborative_planning": True}
            prompt = self.rng.choice(_RESEARCH).format(topic) + suffix
            return JobSpec(input=prompt, model="", agent=agent, config=config)
        models, weights = zip(*TRICKLE_MODELS.items(), strict=True)
        model = self.rng.choices(models, weights)[0]
        return JobSpec(input=self.rng.choice(_TASKS).format(topic) + suffix, model=model)

    async def step(self) -> JobSpec:
        """Wait the next interval, then submit one new job."""
        await self.sleep(self.rng.uniform(*self.every))
        job = self.next_job()
        await self.submit([job])
        self.sent.append(job)
        return job

    async def run(self) -> None:
        """Submit for ever (until cancelled); a refused submit (a busy ledger)
        is skipped, the trickle goes on."""
        while True:
            try:
                await self.step()
            except ReclaimError:
                continue


def demo_faults(jobs: int) -> FaultConfig:
    return FaultConfig.from_json(
        {
            "create": {"rate_429": 0.04},
            "get": {"rate_503": 0.02},
            "slow_rate": 0.05,
            "slow_seconds": 1.5,
            "fail_rate": 0.08,
            # About two accepted-then-dropped creates per demo.
            "drop_rate": min(0.5, 2.0 / max(jobs, 1)),
            "webhooks": {"duplicate_rate": 0.05},
        }
    )


class FlakySink:
    """The default directory sink, except that a seeded ~12 % of first
    deliveries fail: those rows wait `done` (unconsumed) for a replay."""

    def __init__(self, directory: str, seed: int) -> None:
        self.inner = DirectorySink(directory)
        self.rng = random.Random(seed)
        self.refused: set[str] = set()

    async def deliver(self, idem: str, result: StoredResult) -> None:
        if idem not in self.refused and self.rng.random() < 0.12:
            self.refused.add(idem)
            raise SinkError(f"demo sink: {idem[:8]}.md not written (disk quota, emulated)")
        await self.inner.deliver(idem, result)


@asynccontextmanager
async def open_demo_engine(
    settings: Settings,
    *,
    actor: Actor,
    jobs: int,
    seed: int,
    latency: Sequence[float],
    trickle: Sequence[float] | None = (3.0, 8.0),
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> AsyncIterator[Engine]:
    """The emulator and a webhook inbox on loopback ports, the engine on
    them, `jobs` seeded jobs reserved, and while it is open a `Trickle` of
    new jobs every `trickle` = (low, high) seconds (None: none).

    `latency` is the (low, high) range of a job's run time in seconds.
    """
    low, high = (float(x) for x in latency)
    emulator = EmulatorServer(
        EmulatorConfig(
            latency_range=(low, high),
            seed=seed,
            faults=demo_faults(jobs),
            agent_time_scale=AGENT_TIME_SCALE,
            usage_scale=USAGE_SCALE,
        )
    )
    await emulator.start()
    try:
        async with open_ledger(settings) as inbox_ledger:
            jwks = f"{emulator.base_url}/.well-known/jwks.json"
            inbox = InboxServer(inbox_ledger, Verifier(SystemClock(), jwks_url=jwks), port=0)
            await inbox.start()
            try:
                settings = settings.with_(webhook_url=inbox.url)
                backend = GeminiBackend(
                    api_key=emulator.api_key, base_url=emulator.base_url, webhook_url=inbox.url
                )
                sink = FlakySink(settings.out, seed)
                async with open_engine(settings, actor=actor, backend=backend, sink=sink) as engine:
                    seeding = engine.acting_as(Actor.DEMO)
                    await seeding.submit(demo_jobs(jobs, seed), send=False)
                    async with _trickling(engine, seed, trickle, sleep):
                        yield engine
            finally:
                await inbox.stop()
    finally:
        await emulator.stop()


@asynccontextmanager
async def _trickling(
    engine: Engine,
    seed: int,
    every: Sequence[float] | None,
    sleep: Callable[[float], Awaitable[Any]],
) -> AsyncIterator[Trickle | None]:
    if every is None:
        yield None
        return
    low, high = (float(x) for x in every)

    demo = engine.acting_as(Actor.DEMO)

    async def submit(jobs: list[JobSpec]) -> None:
        # Reserved under the demo's own actor, not the operator's, and left
        # to the loop's passes: a paused loop sends none of them.
        await demo.submit(jobs, send=False)

    trickle = Trickle(submit, seed, every=(low, high), sleep=sleep)
    task = asyncio.create_task(trickle.run())
    try:
        yield trickle
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
