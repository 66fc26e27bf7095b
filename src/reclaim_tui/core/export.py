"""Rows, results, events and pass reports as plain JSON-able dicts, and rows as
JSON Lines / CSV: shared by the CLI (`export`, `show --json`, every `--json`),
the archive of `prune` (core/ledger/prune.py) and the console's export.

Times are ISO-8601 UTC strings with milliseconds (`2026-12-03T19:55:01.123Z`,
`iso_time`): what `datetime.fromisoformat` and every JSON consumer reads,
not epoch floats a reader must know to convert. A row's spec is its JSON
object, not a string holding JSON.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from reclaim_tui.core.models import Event, PassReport, Row, StoredResult

__all__ = [
    "EXPORT_FIELDS",
    "event_record",
    "export_record",
    "iso_time",
    "job_record",
    "report_record",
    "row_dict",
    "write_export",
]


def iso_time(at: float | None) -> str | None:
    """Epoch seconds as ISO-8601 UTC with milliseconds and a `Z`; None stays None."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def row_dict(row: Row) -> dict[str, Any]:
    """Every column of a row, JSON-able (times as epoch seconds: `show`'s text)."""
    return {
        "idem": row.idem,
        "status": row.status.value,
        "model": row.model,
        "handle": row.handle,
        "attempts": row.attempts,
        "polls": row.polls,
        "inflight": row.inflight,
        "held": row.held,
        "duplicates": row.duplicates,
        "lease_owner": row.lease_owner,
        "lease_until": row.lease_until,
        "next_at": row.next_at,
        "last_error": row.last_error,
        "created_at": row.created_at,
        "state_since": row.state_since,
        "submitted_at": row.submitted_at,
        "done_at": row.done_at,
        "consumed_at": row.consumed_at,
        "updated_at": row.updated_at,
        "spec": row.spec,
    }


#: The columns of an export, in order (JSONL keys and CSV header alike).
EXPORT_FIELDS = (
    "idem",
    "status",
    "model",
    "handle",
    "attempts",
    "polls",
    "duplicates",
    "last_error",
    "created_at",
    "state_since",
    "submitted_at",
    "done_at",
    "consumed_at",
    "updated_at",
    "spec",
    "output_text",
    "usage",
    "result_stored_at",
)
_TIMES = frozenset(
    {"created_at", "state_since", "submitted_at", "done_at", "consumed_at", "updated_at"}
)


def _spec_object(spec: str) -> Any:
    """The stored spec as JSON; a hand-edited spec that is not JSON stays its text."""
    try:
        return json.loads(spec)
    except ValueError:
        return spec


def export_record(row: Row, result: StoredResult | None = None) -> dict[str, Any]:
    """One row as an export writes it: EXPORT_FIELDS, ISO times, the spec as
    an object, and its stored result's text and usage (None without one)."""
    columns = row_dict(row)
    record: dict[str, Any] = {}
    for name in EXPORT_FIELDS[:-3]:
        value = columns[name]
        record[name] = iso_time(value) if name in _TIMES else value
    record["spec"] = _spec_object(row.spec)
    record["output_text"] = result.output_text if result is not None else None
    record["usage"] = dict(result.usage) if result is not None and result.usage else None
    record["result_stored_at"] = iso_time(result.stored_at) if result is not None else None
    return record


def event_record(event: Event) -> dict[str, Any]:
    """One timeline line, its time in ISO-8601."""
    return {
        "id": event.id,
        "at": iso_time(event.at),
        "actor": event.actor,
        "from_status": event.from_status,
        "to_status": event.to_status,
        "note": event.note,
    }


def job_record(row: Row, result: StoredResult | None, events: Sequence[Event]) -> dict[str, Any]:
    """Everything the ledger holds about one job: its export record, the
    rest of its columns (leases, flags), the stored interaction JSON as an
    object and its timeline. `show --json` prints it; `prune --archive`
    writes one a line, so an archive loses nothing of what it deleted."""
    record = export_record(row, result)
    record.update(
        inflight=row.inflight,
        held=row.held,
        error_streak=row.error_streak,
        outside_streak=row.outside_streak,
        lease_owner=row.lease_owner,
        lease_until=iso_time(row.lease_until) if row.lease_until else None,
        next_at=iso_time(row.next_at) if row.next_at else None,
        sent_at=iso_time(row.sent_at),
        interaction_id=result.interaction_id if result is not None else None,
        interaction=result.raw if result is not None else None,
        events=[event_record(e) for e in events],
    )
    return record


def report_record(report: PassReport, **extra: Any) -> dict[str, Any]:
    """A pass's report (tick, replay, recover) as one JSON document."""
    return {
        "summary": report.summary(),
        "counts": {k: v for k, v in sorted(report.counts.items()) if v},
        "errors": [{"idem": idem, "message": message} for idem, message in report.errors],
        "unavailable": (
            {"cause": report.unavailable[0], "message": report.unavailable[1]}
            if report.unavailable
            else None
        ),
        **extra,
    }


def _csv_value(value: Any) -> Any:
    """CSV holds text: objects (spec, usage) as compact JSON."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return value


def write_export(
    rows: Sequence[Row],
    fmt: str,
    out: TextIO,
    *,
    results: Mapping[str, StoredResult] | None = None,
    header: bool = True,
) -> None:
    """Rows as JSONL or CSV (shared with the console's export). `results`:
    the stored results by key (their text and usage fill those columns);
    `header`: False for the second and later batches of one CSV file."""
    found = results or {}
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS)
        if header:
            writer.writeheader()
        for row in rows:
            record = export_record(row, found.get(row.idem))
            writer.writerow({k: _csv_value(v) for k, v in record.items()})
        return
    for row in rows:
        out.write(json.dumps(export_record(row, found.get(row.idem)), ensure_ascii=False) + "\n")
