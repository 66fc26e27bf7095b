"""The objects the engine's hot path makes for a job, counted (never timed):
the frozen values built without a call per field (core/frozen_make.py),
JSON encoders made once rather than once a call."""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import pickle
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.frozen_make import maker
from reclaim_tui.core.gemini.backend import interaction_from_json
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.schema import COLUMNS, row_from_tuple
from reclaim_tui.core.models import (
    JobSpec,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
    StoredResult,
    Transition,
    make_transition,
)
from reclaim_tui.core.sinks import CallableSink
from tests.helpers.python_calls import python_calls

JOBS = 200


async def _noop(idem: str, result: StoredResult) -> None:
    return None


@contextmanager
def _inits(*codes: CodeType) -> Iterator[Counter[CodeType]]:
    """How often each of `codes` ran while the block runs."""
    wanted = set(codes)
    seen: Counter[CodeType] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in wanted:
            seen[frame.f_code] += 1

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


ROW_INIT = Row.__init__.__code__
SPEC_INIT = JobSpec.__init__.__code__
ENCODER_INIT = json.JSONEncoder.__init__.__code__
TRANSITION_INIT = Transition.__init__.__code__
RESULT_INIT = StoredResult.__init__.__code__
INTERACTION_INIT = RemoteInteraction.__init__.__code__


async def test_a_job_makes_no_row_spec_or_encoder_through_a_call_per_field(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(_noop),
        owner="test|1|a",
        config=EngineConfig(concurrency=16),
    )
    jobs = [JobSpec(input=f"job {i}", model="m") for i in range(JOBS)]
    try:
        codes = (ROW_INIT, SPEC_INIT, ENCODER_INIT, TRANSITION_INIT, RESULT_INIT, INTERACTION_INIT)
        with _inits(*codes) as seen:
            submitted = await engine.submit(jobs)
            clock.advance(5)
            report = await engine.tick()
        assert submitted.counts["sent"] == JOBS
        assert report.counts["consumed"] == JOBS
        # Every row a claim took (3 a job: sent, marked sending, polled) is
        # made by row_from_tuple's twin, never by Row's frozen __init__.
        assert seen[ROW_INIT] == 0, f"Row.__init__ ran {seen[ROW_INIT]} times"
        # The spec read back for each send and labelled for its create.
        assert seen[SPEC_INIT] == 0, f"JobSpec.__init__ ran {seen[SPEC_INIT]} times"
        # The canonical spec and the stored result's JSON: encoders made once.
        assert seen[ENCODER_INIT] == 0, f"JSONEncoder.__init__ ran {seen[ENCODER_INIT]} times"
        # The edges every job takes (sent, completed, delivered) and the
        # result it delivers.
        assert seen[TRANSITION_INIT] == 0, f"Transition.__init__ ran {seen[TRANSITION_INIT]} times"
        assert seen[RESULT_INIT] == 0, f"StoredResult.__init__ ran {seen[RESULT_INIT]} times"
        # A create's and a poll's answer (the fake makes them as the real
        # backend does: core/gemini/backend.py's interaction_from_json).
        assert seen[INTERACTION_INIT] == 0, f"RemoteInteraction ran {seen[INTERACTION_INIT]} times"
    finally:
        await ledger.close()


def _row_values() -> list[Any]:
    values: list[Any] = [f"v{i}" for i in range(len(COLUMNS.split(",")))]
    values[3] = "submitted"
    values[5:11] = [1, 2, 1, 0, 3, 4]
    values[13:15] = [10.5, 11.5]
    values[16:22] = [1.0, 2.0, None, None, None, 3.0]
    values[22:] = [2.5, 1]
    return values


def test_a_row_made_by_its_twin_is_an_ordinary_row() -> None:
    values = _row_values()
    row = row_from_tuple(values)
    expected = Row(*[*values[:3], Status.SUBMITTED, values[4], 1, 2, True, False, *values[9:]])
    assert type(row) is Row
    assert row == expected and hash(row) == hash(expected)
    assert [getattr(row, f.name) for f in dataclasses.fields(Row)] == [
        getattr(expected, f.name) for f in dataclasses.fields(Row)
    ]
    assert row.inflight is True and row.held is False and row.status is Status.SUBMITTED
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.idem = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(row)) == row
    assert copy.copy(row) == row and copy.deepcopy(row) == row
    assert dataclasses.asdict(row) == dataclasses.asdict(expected)
    assert dataclasses.replace(row, attempts=9).attempts == 9
    assert repr(row) == repr(expected)


def test_a_row_with_an_unknown_status_is_refused() -> None:
    values = _row_values()
    values[3] = "exploded"
    with pytest.raises(ValueError, match="exploded"):
        row_from_tuple(values)


def test_a_spec_read_back_is_an_ordinary_spec() -> None:
    spec = JobSpec(input="x", model="m", labels={"a": "b"}, deadline=5.0, previous="p")
    back = JobSpec.from_json(spec.to_json())
    assert type(back) is JobSpec and back == spec
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.model = "other"  # type: ignore[misc]
    assert back.to_json() == json.dumps(
        {"input": "x", "model": "m", "labels": {"a": "b"}, "deadline": 5.0, "previous": "p"},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )


def test_only_a_frozen_slots_dataclass_that_only_stores_gets_a_twin() -> None:
    @dataclasses.dataclass(slots=True)
    class Plain:
        a: int

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    @dataclasses.dataclass(frozen=True, slots=True)
    class Unset:
        a: int
        b: list[int] = dataclasses.field(init=False)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Named:
        a: int
        b: int = dataclasses.field(default=2, kw_only=True)

    make_named = maker(Named)
    assert make_named(1, b=3) == Named(1, b=3) and make_named(1) == Named(1)
    with pytest.raises(TypeError):
        make_named(1, 3)  # keyword-only, as Named's own

    for cls in (Plain, NoSlots, Checked, Unset):
        with pytest.raises(TypeError):
            maker(cls)


def test_an_interaction_keeps_its_json_without_a_list_of_its_own() -> None:
    raw = {"id": "i1", "status": "completed", "labels": {"idem": "k"}, "é": [1, 2.5]}
    interaction = RemoteInteraction("i1", RemoteState.COMPLETED, "completed", raw=raw)
    text = interaction.raw_json()
    assert text == json.dumps(raw, sort_keys=True, ensure_ascii=False)
    assert interaction.raw_json() is text  # encoded once
    assert not [r for r in gc.get_referents(interaction) if type(r) is list]
    assert interaction == RemoteInteraction("i1", RemoteState.COMPLETED, "completed", raw=raw)


def test_a_transition_made_by_its_twin_takes_the_same_arguments_and_defaults() -> None:
    plain = Transition("k", Status.DONE, Status.CONSUMED, "delivered", tally="consumed")
    made = make_transition("k", Status.DONE, Status.CONSUMED, "delivered", tally="consumed")
    assert type(made) is Transition and made == plain
    assert made.changes == {} and made.release is True and made.result is None
    other = make_transition("k", Status.DONE, Status.CONSUMED, "delivered")
    assert other.changes is not made.changes  # a default factory, not one shared dict
    with pytest.raises(TypeError):
        make_transition("k", Status.DONE)  # the same required arguments
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.note = "x"  # type: ignore[misc]


def test_an_interaction_from_json_is_an_ordinary_interaction() -> None:
    raw = {"id": "i1", "status": "completed", "usage": {"total_input_tokens": 3}}
    made = interaction_from_json(raw)
    assert type(made) is RemoteInteraction
    assert made == RemoteInteraction(
        "i1", RemoteState.COMPLETED, "completed", None, {"total_input_tokens": 3}, None, raw
    )
    assert made.raw_json() == json.dumps(raw, sort_keys=True, ensure_ascii=False)


def test_a_twin_made_value_costs_two_python_calls() -> None:
    with python_calls() as seen:
        made = make_transition("k", Status.DONE, Status.CONSUMED, "delivered")
    assert type(made) is Transition
    # `make` and the twin's own __init__: nothing around them (no
    # typing.cast, a call of its own for each of the ten values a job makes).
    calls = {k: n for k, n in seen.items() if k[0] not in ("contextlib.py", "python_calls.py")}
    assert calls == {("frozen_make.py", "make"): 1, ("<string>", "__init__"): 1}, calls
