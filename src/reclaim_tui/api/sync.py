"""`SyncLedger`: the Python API for a script without an event loop. Each
call runs the async `Ledger`'s on a private event loop (`asyncio.Runner`),
the same loop for the ledger's whole life, since its connections belong to
the loop that opened them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TextIO, TypeVar

from reclaim_tui.api.jobs import Job
from reclaim_tui.api.ledger import JobLike, Ledger, ResultCallback, connect
from reclaim_tui.core.models import PassReport
from reclaim_tui.core.sinks import Sink

__all__ = ["SyncLedger", "connect_sync"]

T = TypeVar("T")


def connect_sync(
    db: str | Path | None = None,
    *,
    on_result: ResultCallback | None = None,
    sink: Sink | None = None,
    readonly: bool = False,
    create: bool = True,
    **settings: Any,
) -> SyncLedger:
    """`connect`'s ledger for a `with` block (see `connect` for the arguments)."""
    return SyncLedger(
        connect(db, on_result=on_result, sink=sink, readonly=readonly, create=create, **settings)
    )


class SyncLedger:
    """The calls of `Ledger`, each run to its end before it returns. Not for
    use inside a running event loop (use `Ledger` there)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._runner: asyncio.Runner | None = None

    def _run(self, call: Any) -> Any:
        if self._runner is None:
            call.close()
            raise RuntimeError("the ledger is not open: use `with connect_sync(...)`")
        return self._runner.run(call)

    def __enter__(self) -> Self:
        self._runner = asyncio.Runner()
        try:
            self._runner.run(self.ledger.open())
        except BaseException:
            self._runner.close()
            self._runner = None
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            runner.run(self.ledger.aclose())
        finally:
            runner.close()

    def submit(self, jobs: JobLike | Iterable[JobLike], *, send: bool = False) -> list[str]:
        keys: list[str] = self._run(self.ledger.submit(jobs, send=send))
        return keys

    def reserve(self, jobs: JobLike | Iterable[JobLike], *, send: bool = False) -> PassReport:
        report: PassReport = self._run(self.ledger.reserve(jobs, send=send))
        return report

    def tick(self, jobs: JobLike | Iterable[JobLike] = ()) -> PassReport:
        report: PassReport = self._run(self.ledger.tick(jobs))
        return report

    def serve(
        self,
        *,
        interval: float = 5.0,
        jobs: JobLike | Iterable[JobLike] = (),
        log_to: TextIO | None = None,
        metrics_listen: str | None = None,
    ) -> int:
        """The service loop until Ctrl-C: the first drains, a second cancels
        the pass (the runner turns SIGINT into a cancel of this call)."""
        serving = self.ledger.serve(
            interval=interval, jobs=jobs, log_to=log_to, metrics_listen=metrics_listen
        )
        code: int = self._run(serving)
        return code

    def get(self, key: str, *, timeline: bool = True) -> Job | None:
        job: Job | None = self._run(self.ledger.get(key, timeline=timeline))
        return job

    def get_many(self, keys: Sequence[str]) -> dict[str, Job]:
        jobs: dict[str, Job] = self._run(self.ledger.get_many(keys))
        return jobs

    def wait(self, keys: str | Iterable[str], *, timeout: float | None = None) -> dict[str, Job]:
        jobs: dict[str, Job] = self._run(self.ledger.wait(keys, timeout=timeout))
        return jobs

    def finished(self, keys: str | Iterable[str], *, timeout: float | None = None) -> Iterator[Job]:
        """Each job as it settles (see `Ledger.finished`)."""
        stream = self.ledger.finished(keys, timeout=timeout)
        try:
            while True:
                try:
                    job: Job = self._run(anext(stream))
                except StopAsyncIteration:
                    return
                yield job
        finally:
            if self._runner is not None:
                self._runner.run(stream.aclose())

    def cancel(self, key: str) -> Job:
        job: Job = self._run(self.ledger.cancel(key))
        return job

    def retry(self, key: str) -> Job:
        job: Job = self._run(self.ledger.retry(key))
        return job

    def answer(self, key: str, text: str, *, refine: bool = False) -> Job:
        job: Job = self._run(self.ledger.answer(key, text, refine=refine))
        return job

    def replay(self, keys: Sequence[str] | None = None) -> PassReport:
        report: PassReport = self._run(self.ledger.replay(keys))
        return report
