"""`reclaim-tui demo`: the console on the embedded emulator, with seeded jobs.

The emulator runs on the engine host's loop (a thread, never the UI's) with
light, realistic faults: jobs take 3–40 s, some answers are slow, a few
creates are rate limited, ~8 % of jobs end `failed`, and a couple of creates
are accepted and then dropped, so orphans appear. Lookup by label is off
and orphans are held for the operator (`o` recovers, `a` adopts). A sink that
now and then refuses leaves some rows `done` for `R`.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.engine import Engine, OrphanPolicy
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.errors import SinkError
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.context import ConsoleConfig

__all__ = ["DEMO_MODELS", "demo_faults", "demo_jobs", "make_demo_app"]

DEMO_MODELS = ("gemini-flash-latest", "gemini-pro-latest")
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


def demo_setup(
    settings: Settings, jobs: int, seed: int, clock: Clock, latency: tuple[float, float]
) -> Callable[[], Awaitable[tuple[Engine, Callable[[], Awaitable[None]]]]]:
    async def setup() -> tuple[Engine, Callable[[], Awaitable[None]]]:
        emulator = EmulatorServer(
            EmulatorConfig(latency_range=latency, seed=seed, faults=demo_faults(jobs))
        )
        await emulator.start()
        backend = GeminiBackend(
            api_key=emulator.api_key, base_url=emulator.base_url, emulator_lookup=False
        )
        ledger = await Ledger.open(settings.db, clock=clock)
        sink = FlakySink(settings.out, seed)
        engine = Engine(ledger, backend, sink, config=settings.engine_config("console"))
        await engine.submit(demo_jobs(jobs, seed), send=False)

        async def teardown() -> None:
            await ledger.close()
            await backend.aclose()
            await emulator.stop()

        return engine, teardown

    return setup


def make_demo_app(
    db_path: str | None = None,
    jobs: int = 36,
    seed: int = 7,
    *,
    interval: float = 2.0,
    latency: tuple[float, float] = (3.0, 40.0),
    clock: Clock | None = None,
) -> ReclaimApp:
    workdir = Path(tempfile.mkdtemp(prefix="reclaim-demo-"))
    settings = Settings(
        db=db_path or str(workdir / "demo-ledger.db"),
        out=str(workdir / "articles"),
        model=DEMO_MODELS[0],
        orphan_policy=OrphanPolicy.HOLD,
        emulator_lookup=False,
        actor="console",
    )
    clock = clock or SystemClock()
    config = ConsoleConfig(
        settings=settings,
        engine_setup=demo_setup(settings, jobs, seed, clock, latency),
        interval=interval,
        clock=clock,
        models=list(DEMO_MODELS),
        subtitle=f"demo · embedded emulator · {settings.db}",
    )
    return ReclaimApp(config)
