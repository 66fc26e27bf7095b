"""The operator's actions' checks and questions, asked before anything
irreversible (actions/rows.py and actions/tools.py ask them; operations.py
does the work): which of the targets an action applies to, why a row
refuses one, and the confirmation's text, with what a resend would cost."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reclaim_tui.core.cost_estimate import Estimate
from reclaim_tui.core.costs import format_usd
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.prune import PruneCount
from reclaim_tui.core.models import Row, Status
from reclaim_tui.core.row_notes import ASKS, PLAN_READY, is_pending

__all__ = [
    "CANCELLABLE",
    "RETRYABLE",
    "Checked",
    "adopt_refusal",
    "answer_refusal",
    "asked",
    "cancel_question",
    "check_rows",
    "decline_question",
    "estimate_line",
    "export_file_name",
    "export_summary",
    "prune_question",
    "recover_question",
    "replay_question",
    "retry_question",
    "rows_word",
]

#: The statuses retry and cancel apply to (core/engine/operator.py's rule). The
#: engine stays the judge; the console checks first so that it never asks
#: about rows the engine would refuse.
RETRYABLE = (Status.FAILED, Status.CANCELLED)
CANCELLABLE = (Status.RESERVING, Status.SUBMITTED)
#: What a retry says of a cancelled row whose remote cancel is not confirmed.
PENDING_LEFT = "cancel pending (its interaction may still run: retry once the API confirms)"


def rows_word(count: int) -> str:
    """ "row" or "rows", for `count`."""
    return f"row{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class Checked:
    """The targets of a row action split into those it applies to and the rest."""

    verb: str  # "retry", "cancel"
    applies_to: tuple[Status, ...]
    eligible: list[str]
    #: The others, by what they are ("consumed", "gone").
    left: Counter[str]
    #: The first of the others, to name it when it is the only target.
    first_left: str = ""

    @property
    def total(self) -> int:
        return len(self.eligible) + self.left.total()

    def left_text(self) -> str:
        """'1 is consumed, 2 are submitted'."""
        return ", ".join(
            f"{n:,} {'is' if n == 1 else 'are'} {what}" for what, n in self.left.most_common()
        )

    def refusal(self) -> str:
        """Why nothing can be done (when `eligible` is empty)."""
        allowed = "/".join(s.value for s in self.applies_to)
        if self.total == 1:
            what = self.left.most_common(1)[0][0]
            if what == PENDING_LEFT:
                return f"{self.first_left} is {what}"
            return f"{self.first_left} is {what}; {self.verb} applies to {allowed} rows"
        past = {"retry": "retried", "cancel": "cancelled"}.get(self.verb, self.verb)
        return (
            f"none of the {self.total:,} marked rows can be {past}"
            f" ({self.left_text()}; {self.verb} applies to {allowed} rows)"
        )


async def check_rows(
    reader: ConsoleReader, verb: str, idems: Sequence[str], applies_to: tuple[Status, ...]
) -> Checked:
    """Which of `idems` the action applies to, as the ledger has them now."""
    rows = await reader.rows_by_idem(idems)
    eligible, left = [], Counter[str]()
    first_left = ""
    for idem in idems:
        row = rows.get(idem)
        if verb == "retry" and row is not None and is_pending(row):
            # The engine refuses it (operator.py): its old interaction's
            # cancel is not confirmed, and a retry would drop it.
            left[PENDING_LEFT] += 1
        elif row is not None and row.status in applies_to:
            eligible.append(idem)
            continue
        else:
            left[row.status.value if row is not None else "gone"] += 1
        first_left = first_left or idem
    return Checked(verb, applies_to, eligible, left, first_left)


def _of_marked(checked: Checked) -> str:
    count = len(checked.eligible)
    if checked.left:
        return f"{count:,} of {checked.total:,} marked rows"
    return f"{count:,} marked {rows_word(count)}"


def _left_alone(checked: Checked) -> str:
    return f"\n{checked.left_text()}: left alone." if checked.left else ""


def retry_question(
    checked: Checked, estimate: Estimate | None = None, *, marked: bool = True
) -> str:
    if not marked:
        return (
            f"Retry {checked.eligible[0]}?"
            "\nIt is sent to the API again with a fresh attempt budget: it spends again."
            + (f"\n{estimate_line(estimate)}" if estimate is not None else "")
        )
    return (
        f"Retry {_of_marked(checked)}?"
        "\nEach is sent to the API again with a fresh attempt budget: each one spends again."
        + (f"\n{estimate_line(estimate)}" if estimate is not None else "")
        + _left_alone(checked)
    )


def estimate_line(estimate: Estimate) -> str:
    """What sending the rows again would cost, and how the figure was made."""
    if not estimate.estimated:
        return (
            f"Cost: unknown (no completed run of their model in this ledger, and no"
            f" typical figure in the price table, for {estimate.rows:,}"
            f" {rows_word(estimate.rows)})."
        )
    how = []
    if estimate.from_average:
        how.append(
            f"{estimate.from_average:,} at what their model's completed runs cost in this"
            f" ledger ({estimate.runs:,} averaged)"
        )
    if estimate.from_typical:
        how.append(f"{estimate.from_typical:,} at the price table's typical run")
    if estimate.unknown:
        how.append(f"{estimate.unknown:,} unknown, not counted")
    return f"Cost: about {format_usd(estimate.usd)} ({', '.join(how)})."


def prune_question(found: PruneCount, age: str, archive: Path) -> str:
    """The confirmation of `:prune`: how many rows, of which status, how old."""
    parts = ", ".join(f"{n:,} {status}" for status, n in found.by_status.items())
    return (
        f"Prune {found.count:,} {rows_word(found.count)} ({parts})"
        f" in that state for more than {age}?"
        f"\nThey are appended to {archive} (fsync'd) before they leave the ledger,"
        " with their history and results."
    )


def cancel_question(checked: Checked, marked: bool) -> str:
    which = _of_marked(checked) if marked else checked.eligible[0]
    return f"Cancel {which}? Submitted jobs are cancelled at the API too." + _left_alone(checked)


def decline_question(idem: str, handle: str) -> str:
    """`c` on a row whose research plan waits for an answer: it declines it."""
    return (
        f"Decline the research plan of {idem} ({handle})?"
        "\nThe row ends cancelled (declined, in its history); the research is not run"
        " and nothing more is paid."
    )


def recover_question(count: int, marked: bool, estimate: Estimate | None = None) -> str:
    what = "marked" if marked else "orphan"
    cost = f"\nIf every one is sent again: {estimate_line(estimate)}" if estimate else ""
    return (
        f"Force recovery of {count:,} {what} {rows_word(count)}?"
        "\nEach is looked up by label where the backend can, else sent again"
        " (a possible duplicate spend, recorded on the row)." + cost
    )


def replay_question(marked: int, waiting: int) -> str:
    count = marked or waiting
    rows = f"{count:,} {'marked' if marked else 'done'} {rows_word(count)}"
    return (
        f"Replay {rows} now from the stored results?"
        + (" Marked rows that are not done are left alone." if marked else "")
        + "\nThe sink runs again (idempotent by key); the API is not called."
        " Rows waiting out a sink back-off go now too, each tried once."
    )


def adopt_refusal(row: Row) -> str | None:
    """Why `row` cannot adopt an interaction, or None when it can."""
    if row.status not in (Status.RESERVING, Status.FAILED):
        return f"{row.idem} is {row.status}; adopt applies to reserving/failed rows"
    return None


def answer_refusal(row: Row) -> str | None:
    """Why `row` cannot be answered, or None when its interaction asks something."""
    if row.status != Status.SUBMITTED or not row.held or not row.handle:
        return (
            f"{row.idem} is not waiting for an answer (only a held submitted row"
            " whose interaction requires action is)"
        )
    return None


def asked(row: Row) -> str:
    """What the row's interaction asks, as the poll that held it recorded it."""
    return (row.last_error or "").removeprefix(ASKS).removeprefix(PLAN_READY)


def export_summary(tab_label: str, filter_text: str, files_dir: Path) -> str:
    summary = f"Rows of tab '{tab_label}'"
    summary += f" matching '{filter_text}'" if filter_text else ""
    return summary + f".\nA relative path is under {files_dir}."


def export_file_name(now: float) -> str:
    return f"reclaim-export-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}.jsonl"
