"""Rows as plain dicts and as JSON Lines / CSV: shared by the CLI and the console."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from typing import Any, TextIO

from reclaim_tui.core.models import Row

__all__ = ["EXPORT_FIELDS", "row_dict", "write_export"]


def row_dict(row: Row) -> dict[str, Any]:
    """Every column of a row, JSON-able."""
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
    "submitted_at",
    "done_at",
    "consumed_at",
    "updated_at",
    "spec",
)


def write_export(rows: Sequence[Row], fmt: str, out: TextIO) -> None:
    """Rows as JSONL or CSV (shared with the console's export)."""
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS)
        writer.writeheader()
    for row in rows:
        data = {k: v for k, v in row_dict(row).items() if k in EXPORT_FIELDS}
        if fmt == "csv":
            writer.writerow(data)
        else:
            out.write(json.dumps(data, ensure_ascii=False) + "\n")
