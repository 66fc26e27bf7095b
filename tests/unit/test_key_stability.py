"""A job's idempotency key is the hash of its canonical spec: a ledger made
by any earlier version holds keys computed that way, and a job submitted
again must find its row. The keys below were computed by the code before
the submit path made each spec's text once (main at 1136be7); a change to
the canonical encoding or to how the key is taken from it fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

STORED = [
    (
        JobSpec(input="un café au lait", model="m"),
        "c465a4526a7bd4f35a8eb435a9288a2f",
        '{"input":"un café au lait","model":"m"}',
    ),
    (
        JobSpec(
            input=[{"role": "user", "content": "hi"}],
            model="gemini-2.5-flash",
            config={"temperature": 0.2, "b": [1, 2]},
            labels={"team": "a", "é": "ü"},
            deadline=3600.0,
        ),
        "176fec35a3c0032e43064da581fd7dcf",
        '{"config":{"b":[1,2],"temperature":0.2},"deadline":3600.0,'
        '"input":[{"content":"hi","role":"user"}],"labels":{"team":"a","é":"ü"},'
        '"model":"gemini-2.5-flash"}',
    ),
    (
        JobSpec(input="next turn", model="", agent="deep-research", previous="abc"),
        "2ba4d1398f254c94fd6e90c53a80c632",
        '{"agent":"deep-research","input":"next turn","previous":"abc"}',
    ),
]


async def _noop(idem: str, result: StoredResult) -> None:
    return None


@pytest.mark.parametrize(("spec", "key", "text"), STORED)
def test_a_spec_keeps_its_stored_key(spec: JobSpec, key: str, text: str) -> None:
    assert spec.to_json() == text
    assert idempotency_key(spec) == key
    assert idempotency_key(spec, text) == key


async def test_a_submit_stores_each_spec_under_the_key_earlier_versions_gave_it(
    tmp_path: Path,
) -> None:
    ledger = await open_ledger(tmp_path / "ledger.db")
    engine = Engine(ledger, FakeBackend(), CallableSink(_noop), owner="test|1|a")
    try:
        # The follow-up names a job that is not in this ledger: submit only
        # the specs a fresh ledger accepts as they are.
        plain = [s for s in STORED if s[0].previous is None]
        await engine.submit([spec for spec, _, _ in plain], send=False)
        rows = await ledger.select("SELECT idem, spec FROM jobs ORDER BY idem")
        assert sorted((r[0], r[1]) for r in rows) == sorted((k, t) for _, k, t in plain)
    finally:
        await ledger.close()
