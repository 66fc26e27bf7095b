"""The known-long tests first, so the xdist workers never wait on one at the end.

`--dist loadgroup` hands the tests out in collection order, one (plus one queued) per
worker at a time: a 2-minute soak collected late keeps its worker busy after the others
have emptied the queue. Under xdist (`pytest -n N`) every worker sorts its collection
the same way, longest first by the seconds below, the rest in collection order after
them; a run in one process keeps pytest's order (its scoped fixtures, the PgBouncer
pair, are set up once per group that way). The seconds only order: a test missing
here, or slower or faster than written, runs as before, just not first.

Measured with `./dev test --durations=60` (4 workers, tmpfs, the 2-core machine at load
~4, the CLI processes forked from the fork server: the full run of 2026-12-05 10:01 that
took 8 min 51 s), the tests of 8 s and more; a parametrized test is one entry (its
longest case), by file and name.
"""

from __future__ import annotations

import pytest

__all__ = ["LONG_SECONDS", "slow_first"]

LONG_SECONDS: dict[str, dict[str, int]] = {
    "tests/reliability/test_chaos_inbox.py": {
        "test_chaos_with_the_inbox_never_creates_an_accepted_job_twice": 118,
    },
    "tests/reliability/test_chaos.py": {
        "test_chaos_soak_loses_nothing": 97,
        "test_chaos_soak_on_postgresql_across_hosts_and_a_server_restart": 41,
    },
    "tests/reliability/test_state_machine.py": {
        "test_ledger_state_machine": 80,
    },
    "tests/reliability/test_secrets.py": {
        "test_the_api_key_is_never_stored_or_logged": 51,
    },
    "tests/e2e/test_pgbouncer.py": {
        "test_every_command_and_the_inbox_through_the_pooler": 23,
        "test_run_waits_out_a_poolers_statement_clash": 13,
    },
    "tests/reliability/test_crash_sweep.py": {
        "test_orphan_policy_hold_ends_in_the_held_state": 22,
        "test_crash_at_every_point_recovers_every_job": 8,
    },
    "tests/reliability/test_no_hidden_retries.py": {
        "test_one_post_per_attempt_when_the_answer_is_lost_or_late": 19,
    },
    "tests/e2e/test_cli_json_prune.py": {
        "test_operator_commands_print_the_row_as_json_and_errors_keep_their_codes": 18,
    },
    "tests/e2e/test_attach_service_state.py": {
        "test_the_attached_console_shows_and_sets_the_services_own_state": 15,
    },
    "tests/e2e/test_cli_planning.py": {
        "test_plan_ready_then_refine_then_approve_through_the_cli": 14,
    },
    "tests/e2e/test_attempt_labels.py": {
        "test_label_lookup_after_a_kill_never_adopts_a_pruned_jobs_interaction": 13,
        "test_a_late_event_of_a_pruned_job_is_not_news_of_a_new_job_with_its_key": 11,
        "test_a_retry_whose_answer_was_lost_never_adopts_the_old_failed_interaction": 8,
    },
    "tests/tui/test_keys_operate.py": {
        "test_s_jsonl_tab_then_tab_reaches_the_path_field": 12,
    },
    "tests/tui/test_engine_process.py": {
        "test_console_keys_drive_the_worker_process": 11,
    },
    "tests/reliability/test_overlap.py": {
        "test_eight_ticks_at_once_create_and_consume_each_job_once": 10,
    },
    "tests/tui/test_pace_commands.py": {
        "test_interval_sets_the_local_loop_and_bad_values_are_refused": 10,
    },
    "tests/e2e/test_ledger_full.py": {
        "test_full_disk_under_the_ledger_makes_the_service_wait_then_go_on": 10,
    },
    "tests/e2e/test_pg_startup.py": {
        "test_run_started_before_its_database_waits_for_it": 10,
        "test_a_full_session_pool_is_named_while_waited_for": 9,
    },
    "tests/unit/test_forkserver.py": {
        "test_environment_folder_and_stdin_are_the_requests": 10,
    },
    "tests/tui/test_cost_filter_console.py": {
        "test_cost_filter_shows_the_rows_the_consoles_prices_put_above_or_below": 9,
    },
    "tests/tui/test_command_line.py": {
        "test_model_and_filter": 9,
    },
    "tests/e2e/test_cli.py": {
        "test_operator_retry_cancel_adopt": 9,
    },
    "tests/unit/test_pg_secrets.py": {
        "test_keyword_dsn_is_a_server_not_a_file": 9,
    },
    "tests/e2e/test_follow_up_orphan.py": {
        "test_a_follow_up_whose_answer_was_lost_is_an_orphan_of_its_turn": 8,
    },
    "tests/tui/test_tools.py": {
        "test_costs_cover_the_rows_the_filter_shows": 8,
    },
    "tests/tui/test_console_postgres.py": {
        "test_tabs_detail_and_filter_read_postgresql": 8,
    },
}


def _seconds(item: pytest.Item) -> int:
    path, _, name = item.nodeid.split("[", 1)[0].partition("::")
    return LONG_SECONDS.get(path, {}).get(name, 0)


def slow_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Sorts `items` in place on an xdist worker (stable: ties keep their order)."""
    if not hasattr(config, "workerinput"):
        return
    items.sort(key=lambda item: -_seconds(item))
