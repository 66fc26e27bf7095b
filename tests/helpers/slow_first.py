"""The known-long tests first, so the xdist workers never wait on one at the end.

`--dist loadgroup` hands the tests out in collection order, one (plus one queued) per
worker at a time: a 2-minute soak collected late keeps its worker busy after the others
have emptied the queue. Under xdist (`pytest -n N`) every worker sorts its collection
the same way, longest first by the seconds below, the rest in collection order after
them; a run in one process keeps pytest's order (its scoped fixtures, the PgBouncer
pair, are set up once per group that way). The seconds only order: a test missing
here, or slower or faster than written, runs as before, just not first.

Measured with `./dev test --durations=60` (4 workers, tmpfs, a loaded 2-core machine,
the full run of 2026-12-05 that took 15 min 40 s); a parametrized test is one entry
(its cases took about the same), by file and name.
"""

from __future__ import annotations

import pytest

__all__ = ["LONG_SECONDS", "slow_first"]

LONG_SECONDS: dict[str, dict[str, int]] = {
    "tests/reliability/test_chaos_inbox.py": {
        "test_chaos_with_the_inbox_never_creates_an_accepted_job_twice": 141,
    },
    "tests/reliability/test_chaos.py": {
        "test_chaos_soak_loses_nothing": 119,
        "test_chaos_soak_on_postgresql_across_hosts_and_a_server_restart": 86,
    },
    "tests/reliability/test_secrets.py": {
        "test_the_api_key_is_never_stored_or_logged": 102,
    },
    "tests/reliability/test_crash_sweep.py": {
        "test_orphan_policy_hold_ends_in_the_held_state": 101,
        "test_crash_at_every_point_recovers_every_job": 44,
    },
    "tests/reliability/test_state_machine.py": {
        "test_ledger_state_machine": 86,
    },
    "tests/reliability/test_no_hidden_retries.py": {
        "test_one_post_per_attempt_when_the_answer_is_lost_or_late": 63,
    },
    "tests/e2e/test_pgbouncer.py": {
        "test_every_command_and_the_inbox_through_the_pooler": 45,
        "test_every_tick_through_the_pooler_works": 26,
        "test_no_session_state_leaks_through_a_transaction_pooler": 25,
        "test_a_pass_that_could_not_record_its_sends_says_so": 24,
        "test_run_waits_out_a_poolers_statement_clash": 15,
    },
    "tests/e2e/test_attempt_labels.py": {
        "test_a_late_event_of_a_pruned_job_is_not_news_of_a_new_job_with_its_key": 44,
        "test_a_retry_whose_answer_was_lost_never_adopts_the_old_failed_interaction": 38,
        "test_label_lookup_after_a_kill_never_adopts_a_pruned_jobs_interaction": 35,
    },
    "tests/e2e/test_cli_planning.py": {
        "test_plan_ready_then_refine_then_approve_through_the_cli": 43,
    },
    "tests/e2e/test_cli_json_prune.py": {
        "test_operator_commands_print_the_row_as_json_and_errors_keep_their_codes": 42,
        "test_pass_and_read_commands_print_one_json_document_with_iso_times": 18,
    },
    "tests/reliability/test_overlap.py": {
        "test_eight_ticks_at_once_create_and_consume_each_job_once": 42,
    },
    "tests/e2e/test_follow_up_orphan.py": {
        "test_a_follow_up_whose_answer_was_lost_is_an_orphan_of_its_turn": 38,
    },
    "tests/reliability/test_bad_inputs.py": {
        "test_full_disk_sink_leaves_done_and_a_later_replay_consumes": 38,
        "test_keys_that_escape_the_sink_directory_are_refused": 33,
        "test_real_full_disk_for_the_directory_sink": 27,
    },
    "tests/reliability/test_replay_kill.py": {
        "test_a_replay_killed_half_way_loses_nothing": 37,
    },
    "tests/e2e/test_cli.py": {
        "test_operator_retry_cancel_adopt": 34,
        "test_a_refused_key_exits_6_spends_nothing_and_the_jobs_resume_once_fixed": 22,
        "test_tick_until_consumed_then_status_show_export": 19,
        "test_two_ticks_at_once_create_and_consume_each_job_once": 15,
        "test_jobs_from_stdin": 15,
    },
    "tests/e2e/test_inbox.py": {
        "test_static_webhooks_over_the_cli_and_their_hmac_deliveries": 34,
        "test_events_wake_rows_one_create_one_get_per_job": 20,
    },
    "tests/reliability/test_zombie.py": {
        "test_zombie_inside_the_sink_changes_nothing": 29,
        "test_zombie_in_a_slow_create_changes_nothing": 25,
    },
    "tests/e2e/test_cli_defects.py": {
        "test_retry_and_recover_say_the_next_tick_sends": 28,
    },
    "tests/e2e/test_nul_text.py": {
        "test_nul_in_input_and_result_ticks_on_both_engines": 27,
    },
    "tests/e2e/test_ledger_replaced.py": {
        "test_mv_of_an_older_copy_under_run_stops_it": 21,
        "test_cp_of_an_older_copy_under_run_stops_it": 16,
        "test_truncated_under_run_stops_it_and_a_tick_refuses_to_start_over": 16,
    },
    "tests/e2e/test_attach_service_state.py": {
        "test_the_attached_console_shows_and_sets_the_services_own_state": 20,
    },
    "tests/e2e/test_cancel_pending.py": {
        "test_cancel_with_the_api_down_exits_6_and_the_next_tick_cancels_remotely": 20,
    },
    "tests/tui/test_engine_process.py": {
        "test_console_keys_drive_the_worker_process": 18,
    },
    "tests/unit/test_pg_secrets.py": {
        "test_keyword_dsn_is_a_server_not_a_file": 17,
    },
    "tests/e2e/test_cli_small.py": {
        "test_run_once_with_the_api_down_exits_6_like_tick": 15,
    },
    "tests/e2e/test_deep_research.py": {
        "test_a_deep_research_job_delivers_the_final_report": 15,
    },
    "tests/e2e/test_fleet_attached.py": {
        "test_the_fleet_shows_the_attached_services_state": 14,
    },
    "tests/tui/test_keys_operate.py": {
        "test_s_jsonl_tab_then_tab_reaches_the_path_field": 13,
    },
    "tests/e2e/test_pg_startup.py": {
        "test_a_full_session_pool_is_named_while_waited_for": 12,
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
