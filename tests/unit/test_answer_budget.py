"""A round of concurrent polls holds no more answers than the pass's budget
(issue 40 point 14): a poll whose answer would pass it while others are
held is deferred unread, its row given back and polled once later in the
same pass. Counted: the bytes the budget saw held at once, and the polls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reclaim_tui.core import answer_budget
from reclaim_tui.core.answer_budget import AnswerBudget
from reclaim_tui.core.engine import reclaiming
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, RemoteInteraction, Status
from reclaim_tui.core.sinks import DirectorySink

SIZE = 1000


class _ReadingBackend(FakeBackend):
    """Counts each answer's text through the budget as the fast path does."""

    def __init__(self) -> None:
        super().__init__()
        self.budgets: list[AnswerBudget] = []
        self.polls: Counter[str] = Counter()
        self.read: Counter[str] = Counter()

    async def get(self, handle: str) -> RemoteInteraction:
        self.polls[handle] += 1
        out = await super().get(handle)
        poll = answer_budget._POLL.get()
        if poll is not None and poll[0] not in self.budgets:
            self.budgets.append(poll[0])
        answer_budget.take(len(out.output_text or ""))
        self.read[handle] += 1
        return out


def test_the_budget_refuses_only_beside_other_answers() -> None:
    budget = AnswerBudget(100)
    assert budget.take("a", 150)  # alone: taken, whatever its size
    assert not budget.take("b", 1)  # beside it: refused
    budget.release(["a"])
    assert budget.held == 0 and budget.take("b", 60) and budget.take("b", 60)
    assert not budget.take("c", 50) and budget.held == 120
    budget.release(["b", "c"])
    assert budget.held == 0 and budget.peak == 150


async def test_a_round_past_the_budget_defers_polls_and_polls_each_row_once(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reclaiming, "RESULT_BUDGET", int(2.5 * SIZE))
    backend = _ReadingBackend()
    ledger = await open_ledger(db_url)
    try:
        config = EngineConfig(concurrency=8, first_poll=0)
        engine = Engine(ledger, backend, DirectorySink(tmp_path / "out"), config=config)
        jobs = [JobSpec(input=f"job {n}", model="m", key=f"k{n}") for n in range(8)]
        await engine.submit(jobs)
        for handle in list(backend.remotes):
            backend.finish(handle, str(handle[-1]) * SIZE)
        report = await engine.reclaim()
    finally:
        rows = [await ledger.get(f"k{n}") for n in range(8)]
        await ledger.close()
    # Every row done and delivered in this one pass; each answer read once.
    assert report.counts["polled"] == 8 and report.counts["consumed"] == 8
    assert all(r is not None and r.status == Status.CONSUMED for r in rows)
    assert set(backend.read.values()) == {1} and len(backend.read) == 8
    # Eight polls at once, but never more than two answers held at a time.
    (budget,) = backend.budgets
    assert budget.peak <= 2 * SIZE and budget.held == 0
    # Six deferred, then polled as many at a time as the budget took (two):
    # each deferred row asked once more, not again at every round.
    assert sorted(backend.polls.values()) == [1, 1, 2, 2, 2, 2, 2, 2]


class _Chunks:
    """An answer body sent in chunks without a declared length."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent = 0
        self.closed = False

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for chunk in self.chunks:
            self.sent += 1
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


def _answer(stream: _Chunks, declared: int | None = None) -> object:
    import httpx2

    class Stream(httpx2.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def,override]
            async for chunk in stream:
                yield chunk

        async def aclose(self) -> None:
            await stream.aclose()

    headers = {} if declared is None else {"content-length": str(declared)}
    return httpx2.Response(200, headers=headers, stream=Stream())


async def test_a_body_without_a_length_is_counted_as_read_and_left_when_refused() -> None:
    from reclaim_tui.core.gemini.fastpath import _FastCall

    call = _FastCall.__new__(_FastCall)
    call._p = {"_WRAP_EXCEPTIONS": (OSError,)}
    budget = AnswerBudget(250)
    budget.take("other", 100)
    taken = _Chunks([b"x" * 100] * 5)
    with answer_budget.polling_under(budget, "mine"):
        with pytest.raises(answer_budget.AnswerDeferred):
            await call._read_body(_answer(taken))
    assert taken.sent == 2 and taken.closed  # the third chunk is not read
    assert budget.held == 100  # its bytes dropped with it
    budget.release(["other"])
    alone = _Chunks([b"y" * 100] * 5)
    response = _answer(alone)
    with answer_budget.polling_under(budget, "mine"):
        await call._read_body(response)
    assert response.text == "y" * 500 and budget.held == 500  # type: ignore[attr-defined]


async def test_a_declared_length_is_counted_before_the_body_is_read() -> None:
    from reclaim_tui.core.gemini.fastpath import _FastCall

    call = _FastCall.__new__(_FastCall)
    call._p = {"_WRAP_EXCEPTIONS": (OSError,)}
    budget = AnswerBudget(250)
    budget.take("other", 100)
    unread = _Chunks([b"x" * 200])
    with answer_budget.polling_under(budget, "mine"):
        with pytest.raises(answer_budget.AnswerDeferred):
            await call._read_body(_answer(unread, 200), 200)
    assert unread.sent == 0 and unread.closed and budget.held == 100
