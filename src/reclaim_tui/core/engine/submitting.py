"""Submitting new jobs: reserve a row for each (existing keys are left
alone), refusing, before anything is reserved, a job whose own key names
another spec already in the ledger, whose `previous` names a job that is
neither submitted with it nor in the ledger, or whose `previous` chain
comes back to itself; then, unless told not to, the send pass (sending.py) over these
jobs only.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaim_tui.core.chains import chain_cycles, cycle_text
from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import sending
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.jobsfile import key_clash
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec, PassReport, Row
from reclaim_tui.errors import JobsFileError

__all__ = ["reserve", "submit"]


async def submit(parts: EngineParts, jobs: Sequence[JobSpec], *, send: bool = True) -> PassReport:
    """Reserve rows for new jobs (existing keys are left alone), then send."""
    report, keys = await reserve(parts, jobs)
    if send:
        # Only these jobs: other reserved rows (a `--no-send` file, a paused
        # loop's backlog) are sent by a pass, never by someone else's submit.
        report.merge(await sending.send_reserved(parts, keys))
    return report


async def reserve(parts: EngineParts, jobs: Sequence[JobSpec]) -> tuple[PassReport, list[str]]:
    """Reserve rows for new jobs (existing keys are left alone); the report
    and the jobs' keys, each once, in the jobs' order."""
    report = PassReport()
    await _refuse_key_clashes(parts, jobs)
    texts = [j.to_json() for j in jobs]  # made once: the key is its hash
    rows = [(idempotency_key(j, t), t, j.target) for j, t in zip(jobs, texts, strict=True)]
    # lists, not generators, over the jobs: a resume per job otherwise
    if any([j.previous is not None for j in jobs]):
        await _refuse_broken_chains(parts, jobs, [r[0] for r in rows])
    inserted, present = await parts.ledger.insert_jobs(rows, parts.config.actor)
    report.counts["inserted"] += len(inserted)
    report.counts["already_present"] += len(present)
    crashpoint("after_reserve_commit")
    return report, list(dict.fromkeys([r[0] for r in rows]))


async def _refuse_broken_chains(
    parts: EngineParts, jobs: Sequence[JobSpec], keys: Sequence[str]
) -> None:
    """Refuse (JobsFileError, exit 3; nothing reserved) new jobs whose
    `previous` is neither one of these jobs nor in the ledger (a typo: the
    job would fail at once, its key taken by the failed row), and new jobs
    whose `previous` chain comes back to them, through these jobs or the
    rows already in the ledger: such a job waits for itself and never runs.
    A key already in the ledger keeps its stored spec, so its chain is
    the stored one."""
    stored = await parts.ledger.get_many(list(dict.fromkeys(keys)))
    previous_of: dict[str, str | None] = {}
    for key, job in zip(keys, jobs, strict=True):
        previous_of.setdefault(
            key, _stored_previous(stored[key]) if key in stored else job.previous
        )
    # Follow each chain into the ledger, a round of lookups per step.
    wanted = {p for p in previous_of.values() if p is not None} - previous_of.keys()
    missing: set[str] = set()  # keys looked up in the ledger and not there
    for _ in range(1000):
        if not wanted:
            break
        found = await parts.ledger.get_many(sorted(wanted))
        for key in wanted:
            previous_of[key] = _stored_previous(found[key]) if key in found else None
        missing |= wanted - found.keys()
        wanted = {p for p in previous_of.values() if p is not None} - previous_of.keys()
    new = [k for k in dict.fromkeys(keys) if k not in stored]
    position = {k: n for n, k in reversed(list(enumerate(keys, start=1)))}
    problems = [
        (0, f"job {position[key]} of {len(keys)} ({key!r}): {_dangling_text(previous)}")
        for key in new
        if (previous := previous_of[key]) is not None and previous in missing
    ]
    problems += [
        (0, f"job {position[key]} of {len(keys)}: {cycle_text(cycle)}")
        for key, cycle in chain_cycles(previous_of, new).items()
    ]
    if problems:
        raise JobsFileError("the jobs submitted", problems)


def _dangling_text(previous: str) -> str:
    """A refusal's words for a job whose `previous` names no job."""
    return (
        f"its 'previous' {previous!r} is the key of no job, here or in the ledger:"
        " it would fail at once (is the key mistyped?)"
    )


async def _refuse_key_clashes(parts: EngineParts, jobs: Sequence[JobSpec]) -> None:
    """A job's own key already in the ledger for another spec would be
    `already_present` and the new job never run: refused, nothing reserved."""
    keyed = {j.key: j for j in jobs if j.key is not None}
    if not keyed:
        return
    stored = await parts.ledger.get_many(list(keyed))
    problems = [
        (0, why)
        for key, row in stored.items()
        if (why := key_clash(row.job, keyed[key])) is not None
    ]
    if problems:
        raise JobsFileError("jobs", problems)


def _stored_previous(row: Row) -> str | None:
    """The key a stored row continues (None for a spec that is not readable)."""
    try:
        return row.job.previous
    except (ValueError, KeyError, TypeError):
        return None
