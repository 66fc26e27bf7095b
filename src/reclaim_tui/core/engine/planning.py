"""Deep Research's collaborative planning (DESIGN.md §8).

With `agent_config.collaborative_planning` true the agent *completes* the
interaction with a research plan as its output; the user approves or refines
it in the next turn (`previous_interaction_id`): sent with
`collaborative_planning` false the agent runs the research, sent with it
true it answers with a revised plan. Sources: the SDK's
`DeepResearchAgentConfig` docstring; the cookbook's Get_started_Deep_Research
notebook (it polls the plan until `completed`).

In the ledger a completed plan is not the job's result: the row stops as
"plan ready" (held, the plan stored with the row and shown), and `answer`
sends the next turn; `cancel` declines the plan (the row ends `cancelled`,
no research runs). Only the research's report goes to the sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reclaim_tui.core.models import Row, Status
from reclaim_tui.core.row_notes import PLAN_READY

__all__ = ["PLAN_READY", "follow_up_config", "is_plan", "is_plan_ready"]


def is_plan(raw: Mapping[str, Any]) -> bool:
    """Whether a completed interaction is a plan: its own `agent_config`
    (the API's Interaction resource returns the request's) asked for one."""
    config = raw.get("agent_config")
    return isinstance(config, Mapping) and config.get("collaborative_planning") is True


def is_plan_ready(row: Row) -> bool:
    """The row waits for an answer to its research plan (no turn in flight)."""
    return (
        row.status == Status.SUBMITTED
        and bool(row.held)
        and not row.inflight
        and (row.last_error or "").startswith(PLAN_READY)
    )


def follow_up_config(
    config: Mapping[str, Any], previous: str, *, plan: bool, refine: bool
) -> dict[str, Any]:
    """The create parameters of the turn that answers interaction `previous`:
    chained to it; when it answers a plan, `collaborative_planning` false to
    approve it (the research runs), true to ask for a revised plan."""
    out = {**config, "previous_interaction_id": previous}
    agent_config = config.get("agent_config")
    if plan and isinstance(agent_config, Mapping):
        out["agent_config"] = {**agent_config, "collaborative_planning": refine}
    return out
