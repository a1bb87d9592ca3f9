"""Which tests catch each reference mutant, so ``teamproto mutants`` runs those first.

``CAUGHT_BY[name]`` lists pytest node ids (``path::test``, ``path::Class`` or a parametrized
``path::test[id]``). ``teamproto mutants`` runs them alone with the mutant switched on and ``-x``;
if none fails it runs the whole selection as for a mutant with no entry (the model tests, then the
example tests), so a wrong or stale entry costs time, never a verdict. A mutant counts as caught
only when a test fails under it, and every test that caught one is run again without any mutant:
a test that fails there too catches nothing. A new mutant needs no entry; add one (the test that
``teamproto mutants --only NAME`` reports) when its run is slow. ``tests/test_mutant_selection.py``
checks that every entry names a mutant and tests that pytest collects.
"""

from __future__ import annotations

from ._plan_mutants import PLAN_CAUGHT_BY
from ._process_mutants import CAUGHT_BY as PROCESS_CAUGHT_BY

RECOVERY_CAUGHT_BY: dict[str, list[str]] = {
    "reconcile_keeps_half_drain": ["tests/test_recovery_rows.py", "tests/test_convergence.py"],
    "resumed_drain_keeps_requests": ["tests/test_recovery_rows.py"],
    "unhealthy_member_not_reported": ["tests/test_recovery_rows.py"],
    "signal_notice_not_recovered": ["tests/test_recovery_rows.py"],
    "reconcile_reowes_sent_outbox": ["tests/test_convergence.py"],
    "shutdown_not_audited": ["tests/test_recovery_rows.py"],
    "monitor_reads_history": ["tests/test_deadlines.py::test_the_monitor_reads_the_open_records_not_the_history"],
    "sqlite_reads_walk_history": ["tests/test_history_cost.py"],
    "sqlite_log_count_walks_log": ["tests/test_history_cost.py"],
    "delivery_not_settled": [
        "tests/test_races.py::test_a_receipt_that_loses_to_another_gets_the_recorded_result_or_the_refusal"
    ],
    "stopped_member_drain_left_timed_out": [
        "tests/test_shutdown_in_force.py::test_reconciliations_shutdown_rows_status_by_status"
    ],
    "lapse_ignores_fresh_beat": [
        "tests/test_member_details.py::"
        "test_a_member_that_beats_between_the_watchers_read_and_its_lapse_is_not_declared_lost"
    ],
    "repeat_review_skips_responder": [
        "tests/test_approval.py::test_review_only_by_the_responder_idempotent_and_redacted"
    ],
    "inspection_exit_unsigned": ["tests/test_team.py::test_a_lost_members_jobs_are_recorded_killed_by_the_inspection"],
    "entry_sent_before_message": [
        "tests/test_outbox_details.py::test_a_send_cut_short_leaves_the_entry_owed_until_its_message_is_on_the_bus"
    ],
    "claim_token_per_member": [
        "tests/test_team.py::test_a_second_claim_by_the_same_member_makes_its_first_token_stale"
    ],
    "claim_under_timed_out_request": [
        "tests/test_shutdown_in_force.py::test_a_running_member_claims_exactly_when_no_request_for_it_is_in_force"
    ],
    "completed_drain_reported_lost": [
        "tests/test_shutdown_in_force.py::"
        "test_reconciliation_reports_a_draining_member_lost_exactly_when_its_request_no_longer_stands"
    ],
    "schema_stamped_before_statements": [
        "tests/test_storage_contract.py::"
        "test_an_open_that_fails_part_way_leaves_the_file_unstamped_and_the_next_open_finishes_it"
    ],
    "schema_stamp_skips_triggers": [
        "tests/test_storage_contract.py::test_a_file_stamped_under_any_other_schema_is_brought_to_this_one"
    ],
    "busy_jobs_read_history": ["tests/test_history_cost.py"],
    "drain_cancels_one_approval": ["tests/test_many_requests.py"],
    "inspection_ends_noted_drain_only": [
        "tests/test_shutdown_details.py::test_an_inspection_ends_a_drain_its_member_never_noted"
    ],
    "force_terminate_any_drain": [
        "tests/test_shutdown_details.py::test_a_stale_requests_last_rung_never_hits_the_drain_the_member_runs_now"
    ],
    "reconcile_leaves_old_drain": [
        "tests/test_shutdown_details.py::test_a_drain_of_a_restarted_members_old_incarnation_is_completed_never_resumed"
    ],
    "waited_keeps_last_job": ["tests/test_many_jobs.py"],
    "drain_asks_before_noting": [
        "model_tests/test_stateful.py::test_each_team_write_step_crashed_under_refinement[shutdown.drain_jobs/jobs-memory]"
    ],
    "recovered_failure_succeeds": ["tests/test_approval_crashes.py::test_crash_at_every_write_step_converges"],
    "status_by_id_unscoped": ["tests/test_status_scope.py"],
    "monitor_expires_begun_drain": [
        "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant[begin_drain||expire_shutdowns-memory]"
    ],
    "drain_logged_by_its_last_deliverer": [
        "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[begin_drain||begin_drain-memory]"
    ],
    "reconcile_clears_release_unnoted": [
        "tests/test_recovery_rows.py::test_a_release_cut_short_is_noted_on_the_request_before_the_member_lets_go",
        "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant[release||reconcile_finish-memory]",
    ],
    "release_notes_flagged_task": [
        "tests/test_shutdown_details.py::test_a_release_that_finds_its_task_flagged_refuses_as_after_the_termination",
        "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant[release||force_inspect-memory]",
    ],
    "inspection_clears_release_unnoted": [
        "tests/test_recovery_rows.py::test_a_release_cut_short_is_noted_by_whoever_clears_the_unhealthy_members_task",
        "tests/test_shutdown_details.py::test_a_release_in_flight_is_noted_by_the_inspection_that_ends_its_request",
    ],
    "cut_release_judged_by_status": [
        "tests/test_recovery_rows.py::test_a_task_the_lead_put_back_is_not_noted_as_released",
    ],
    "release_judged_by_its_hold": [
        "tests/test_shutdown_details.py::test_a_release_whose_task_the_lead_put_back_meanwhile_refuses_and_notes_nothing",
        "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant[release||force_inspect_claim-memory]",
    ],
    "cut_release_judged_by_last_move": [
        "tests/test_shutdown_details.py::test_a_release_in_flight_is_noted_though_another_member_claimed_its_task",
        "model_tests/test_interleave.py::test_every_caller_gets_what_some_serial_order_gives[release||force_inspect_claim-memory]",
    ],
    "drain_refusal_reads_member_once": [
        "model_tests/test_interleave.py::test_every_caller_gets_what_some_serial_order_gives[release||force_inspect-memory]",
    ],
    "flag_loses_raw": [
        "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[release||force_inspect-memory]",
    ],
    "release_task_loses_raw": [
        "model_tests/test_interleave.py::test_every_caller_gets_what_some_serial_order_gives[release||force_inspect-memory]",
    ],
    "suspend_refusal_names_stale_task": [
        "model_tests/test_interleave.py::test_every_caller_gets_what_some_serial_order_gives[release||suspend-memory]",
    ],
    "suspend_loses_raw": [
        "model_tests/test_interleave.py::test_every_caller_gets_what_some_serial_order_gives[release||suspend-memory]",
    ],
    "release_clears_member_first": [
        "tests/test_recovery_rows.py::test_a_release_cut_short_is_noted_on_the_request_before_the_member_lets_go",
        "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant[drain_pass||finish_drain-memory]",
    ],
    "delivery_reads_request_first": [
        "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[begin_drain||begin_drain-memory]"
    ],
    "inspection_ignores_survivors": [
        "tests/test_member_processes.py::test_an_inspection_kills_a_job_process_that_left_its_group_or_refuses"
    ],
    "first_beat_never_registered": [
        "tests/test_member_details.py::test_a_member_that_never_beats_lapses_from_its_registration"
    ],
    "finish_in_flight_refused": [
        "model_tests/test_interleave.py::test_every_caller_gets_what_some_serial_order_gives[finish_drain||finish_drain-memory]"
    ],
    "delivery_records_expired_request": [
        "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[begin_drain||expire_shutdowns-memory]"
    ],
    "drain_resumes_any_request": [
        "tests/test_shutdown_details.py::"
        "test_a_request_whose_drain_was_cut_short_is_refused_while_its_member_drains_for_another"
    ],
    "approval_request_never_expires": [
        "tests/test_deadlines.py::test_an_approval_request_message_expires_unread_once_its_deadline_passed"
    ],
    "free_text_not_redacted": ["tests/test_plans.py::test_the_free_text_of_plans_and_shutdowns_is_stored_redacted"],
    "audit_clears_mark_one_early": [
        "tests/test_audit_catch_up.py::"
        "test_a_reconciliation_cut_off_between_two_catch_up_appends_is_finished_by_the_next[memory]"
    ],
    "audit_clears_later_mark": [
        "model_tests/test_interleave_crashes.py::"
        "test_a_crash_of_either_instance_and_its_restart_beside_the_other_keep_every_invariant[review||cancel-memory]"
    ],
    "claim_repair_only_running": [
        "model_tests/test_interleave_crashes.py::test_a_crash_of_either_instance_and_its_restart_beside_the_other_"
        "keep_every_invariant[claim||request_shutdown;begin_drain-memory]",
        "tests/test_recovery_rows.py::test_a_claim_cut_short_is_repaired_for_a_member_that_began_to_drain_since",
    ],
}
"""Recovery and audit mutants → the quick example tests that catch them (``teamproto mutants`` runs
these instead of the model tests, as for the process mutants)."""

STATEFUL = "model_tests/test_stateful.py"
APPROVAL = f"{STATEFUL}::TestApprovalProtocol"
TEAM = f"{STATEFUL}::TestTeamProtocol"

INTERLEAVE = "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant"
BINDING = "tests/test_binding.py"
BOUNDARIES = "tests/test_deadline_boundaries.py"

CAUGHT_BY: dict[str, list[str]] = {
    **{
        name: [APPROVAL]
        for name in (
            "skip_digest_check",
            "skip_deadline_on_consume",
            "skip_ownership_check",
            "consume_twice",
            "message_before_record",
            "unstable_message_id",
            "dedup_disabled",
            "reconcile_skips_redelivery",
            "secret_not_redacted",
            "profile_version_ignored",
            "cancel_after_consume",
            "recovery_repeats_call",
            "cancel_ignores_incarnation",
            "idempotency_key_is_tool_call_id",
            "expiry_not_audited",
            "reconcile_skips_audit",
            "anyone_may_reject",
            "result_not_redacted",
        )
    },
    **{
        name: [TEAM]
        for name in (
            "claim_while_draining",
            "claim_ignores_shutdown_request",
            "release_before_jobs_settle",
            "drain_completes_task",
            "stale_incarnation_accepted",
            "stale_claim_token_accepted",
            "lapse_twice",
            "clean_exit_member_lost",
            "timed_out_as_completed",
            "signal_non_cancellable",
            "drain_keeps_requests",
            "reconcile_skips_outbox",
            "ack_misaddressed",
        )
    },
    # two instances over one store (DESIGN rule 9): the interleaving explorer, and the races
    "sqlite_cas_check_then_act": [INTERLEAVE],
    "consume_rereads_before_cas": [INTERLEAVE],
    "request_unguarded": [
        "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[request||begin_drain-memory]"
    ],
    "claim_repair_reads_tasks_first": ["model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders"],
    "reconcile_takes_live_work": [  # the example first (1 s); the explorer catches it too (about 2 min)
        "tests/test_instances.py::test_a_live_instances_consumption_is_left_and_a_closed_ones_taken_over",
        "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[consume||reconcile-memory]",
    ],
    "ladder_signals_current_incarnation": [
        "tests/test_shutdown_details.py::test_a_stale_requests_ladder_signals_only_the_incarnation_it_was_made_for"
    ],
    "driver_replies_every_error_definite": [
        "tests/test_conformance.py::test_a_write_the_store_could_not_make_is_replied_indefinite"
    ],
    "expiry_logged_before_notice": [
        "tests/test_plans.py::test_a_plan_expiry_cut_short_at_any_write_owes_its_notice_once"
    ],
    "process_facts_outlive_fork": ["tests/test_instances.py::test_a_forked_child_registers_its_own_start_time"],
    "version_conflict_escapes": ["tests/test_races.py"],
    "execution_overwritten": ["tests/test_races.py::test_the_execution_key_is_the_second_guard"],
    # what the model abstracts away: the audit chain's verifier, the arguments' digest
    "audit_hash_omits_time": ["tests/test_audit_log.py"],
    "audit_link_unchecked": ["tests/test_audit_log.py"],
    "audit_out_of_record_order": ["tests/test_audit_log.py"],
    # only a restarted member's old approval, or a crash between a drain's ack and its record, shows these
    "approval_incarnation_ignored": [
        "tests/test_incarnations.py::test_an_approval_of_an_older_incarnation_is_refused_by_its_own_binding",
        f"{STATEFUL}::test_an_older_incarnations_approval_is_refused_after_a_restart",
    ],
    "ack_before_record": [f"{STATEFUL}::test_each_team_write_step_crashed_under_refinement"],
    # through the conformance driver and the articles' message layout
    "shutdown_by_anyone": ["tests/test_conformance.py::test_the_reference_refuses_the_teams_bad_input"],
    "force_terminate_spares_cancelling_jobs": [
        "tests/test_team.py::test_force_termination_kills_a_job_already_asked_to_cancel",
        "tests/test_conformance_mutants.py::test_a_reference_mutant_is_caught_through_the_driver"
        "[force_terminate_spares_cancelling_jobs]",
    ],
    "receive_keeps_article_layout": ["tests/test_articles.py::test_the_reference_receives_them_in_its_own_layout"],
    "defaults_override": [f"{BINDING}::test_defaults_never_override_what_the_caller_gave"],
    # every reader of every deadline, exactly on it (tests/test_deadline_boundaries.py). The stateful
    # approval test meets the very instant only by chance (a review at it after 130 of its 200 CI
    # examples, or never: its seed follows the machine's source), so the boundaries' test is declared.
    "review_closed_at_deadline": [BOUNDARIES],
    "consume_closed_at_deadline": [BOUNDARIES],
    "monitor_expires_at_deadline": [BOUNDARIES],
    "shutdown_expires_at_deadline": [BOUNDARIES],
    "plan_run_timed_out_at_deadline": [BOUNDARIES],
    "every_string_a_path": [f"{BINDING}::test_only_the_documented_fields_are_paths"],
    "numbers_conflated": [f"{BINDING}::test_one_one_point_oh_true_and_the_string_one_are_four_arguments"],
    "list_order_ignored": [f"{BINDING}::test_any_undocumented_change_changes_the_digest"],
    # one mutant for each clause that had none (STO-2, AUD-1, APR-3, MSG-3, XPR-3, TSK-2)
    "retry_binding_unchecked": ["tests/test_approval.py::test_retry_returns_the_same_record_and_message"],
    "review_event_saved_apart": [f"{STATEFUL}::test_each_write_step_crashed_under_refinement[approval.review/record]"],
    "requester_from_arguments": [
        "tests/test_approval.py::test_identity_inside_the_tools_own_arguments_is_content_not_identity"
    ],
    "acknowledge_approves": ["tests/test_approval.py::test_delivery_is_deduplicated_and_reading_completes_nothing"],
    "owe_swallows_store_errors": [
        "tests/test_outbox_details.py::test_a_finish_whose_ack_cannot_be_owed_fails_and_reconciliation_owes_it"
    ],
    # a store that fails at a write step and a process that lives on (XPR-3 at every step)
    "store_failure_retried": [
        "model_tests/test_storage_failures.py::test_an_approval_step_that_fails_is_reported_and_reconciled"
        "[approval.cancel/record-after]"
    ],
    # outside review 52: the conformance suite's new guard cases and actor check see these (a test
    # that fails with the mutant on; test_conformance_mutants.py's own test passes then, by design)
    "late_review_accepted": ["tests/test_approval.py::test_review_after_the_deadline_fails"],
    "review_event_names_requester": ["tests/test_conformance.py::test_the_reference_driver_conforms"],
    "finish_stops_member_first": [
        "model_tests/test_stateful.py::test_each_team_write_step_crashed_under_refinement[shutdown.finish/record-memory]",
        "model_tests/test_stateful.py::test_each_team_write_step_crashed_under_refinement[shutdown.finish/member-memory]",
    ],
    "restart_skips_monitor_pass": [
        "model_tests/test_monitor_pass_crashes.py::test_a_crash_after_any_write_of_the_pass_restarts_to_the_whole_pass"
        "[1-memory]"
    ],
    "suspension_notice_misaddressed": [
        "tests/test_message_parties.py::test_the_notices_as_written_go_between_their_parties"
    ],
    # outside review 63: the conformance suite's conflicting retries see these too
    # (tests/test_conformance_mutants.py, whose own test passes with the mutant on, by design)
    "restart_expires_approved": [
        "tests/test_conformance.py::test_the_reference_driver_restarts_quietly_where_the_model_reconciles_nothing"
    ],
    "retry_ttl_unchecked": [
        "tests/test_refusal_details.py::test_every_refusal_names_the_record_the_field_and_the_values"
    ],
    "shutdown_retry_reason_unchecked": [
        "tests/test_shutdown_details.py::test_a_shutdown_request_key_again_is_a_retry_only_with_the_same_reason_and_timeout"
    ],
    # the conformance suite's random programs see it too: a refusal's code is checked against the
    # model's failing guards (conformance/_refusals.py; outside review 63's P15)
    # the vectors take every edge beside an open record of an earlier incarnation too (review 63's P10)
    "claim_fenced_by_old_request": [
        "tests/test_incarnations.py::test_a_shutdown_request_of_an_earlier_incarnation_keeps_no_claim_from_the_new_one"
    ],
    # the vectors send every guard's refusal alone, in the shortest context that has it (review 63's P3)
    "inspect_ignores_stopping_job": [
        "tests/test_task_details.py::test_an_inspection_waits_for_every_job_of_the_task_that_has_not_exited"
    ],
    # AUD-1's actor of every event, after every step of the conformance suite (review 64's P7)
    "drain_event_by_lead": ["tests/test_event_actors.py::test_a_shutdown_and_its_tasks_name_who_took_each_step"],
    "rolled_forward_by_lead": [
        "tests/test_event_actors.py::test_a_plan_step_finished_by_reconciliation_keeps_its_requester_as_actor"
    ],
    # outside review 64: the vectors' late and again contexts, and the refusals of more operations
    "late_cancel_refused": [
        "tests/test_approval.py::test_an_approved_approval_past_its_deadline_may_still_be_cancelled"
    ],
    "unit_deadline_from_first_claim": [
        "tests/test_team.py::test_a_reclaimed_tasks_unit_deadline_runs_from_its_current_claim"
    ],
    "shutdown_of_lost_member": ["tests/test_team.py::test_only_a_running_member_is_asked_to_shut_down"],
    "restart_spares_stopping_jobs": [
        "tests/test_team.py::test_a_stopped_member_restarts_or_retires_only_once_its_jobs_exited"
    ],
    "reconcile_tells_approvals_only": [
        "tests/test_approval_crashes.py::test_crash_in_a_rejection_converges_and_the_rejection_is_delivered"
    ],
    "redelivery_before_correlation": [
        "tests/test_approval.py::test_a_delivery_under_another_correlation_id_is_no_duplicate"
    ],
    "plan_body_unbound": ["tests/test_plans.py::test_a_plan_key_again_is_the_same_plan_only_with_the_same_body"],
    "final_cancel_not_active": ["tests/test_approval.py::test_cancel_before_consumption_only"],
    "job_command_stored_raw": ["tests/test_redaction.py::test_a_jobs_command_is_run_as_given_and_stored_redacted"],
    "send_restamps_message": [
        "tests/test_message_parties.py::test_a_message_sent_after_it_was_owed_is_its_entrys_very_message"
    ],
    "lost_notice_heartbeat_zero": [
        "tests/test_message_parties.py::test_the_notices_as_written_go_between_their_parties"
    ],
    "suspension_notice_per_task": ["tests/test_team.py::test_each_suspension_of_a_task_owes_its_own_notice"],
    "task_refusal_reads_member_once": [
        "model_tests/test_interleave_generated.py::test_every_interleaving_of_a_generated_pair_is_some_serial_orders"
        "[approval.request||member.lapse]"
    ],
    "own_claim_refused_as_taken": [
        "model_tests/test_interleave_generated.py::test_every_interleaving_of_a_generated_pair_is_some_serial_orders"
        "[task.claim||task.claim]"
    ],
    "inspection_member_write_rereads": [
        "model_tests/test_interleave_generated.py::test_every_interleaving_of_a_generated_pair_is_some_serial_orders"
        "[member.inspect||member.inspect]"
    ],
    "job_start_unguarded": [
        "model_tests/test_interleave_generated.py::test_every_interleaving_of_a_generated_pair_is_some_serial_orders"
        "[job.start||task.finish]"
    ],
    "job_refusal_reads_member_once": [
        "model_tests/test_interleave_generated.py::test_every_interleaving_of_a_generated_pair_is_some_serial_orders"
        "[job.start||member.lapse]"
    ],
    "cut_pass_marked_done_first": [
        "tests/test_takeover_crashes.py::test_a_takeover_of_a_cut_pass_killed_after_any_write_converges"
    ],
    "shutdown_key_race_unjudged": [
        "model_tests/test_interleave_generated.py::test_every_interleaving_of_a_generated_pair_is_some_serial_orders"
        "[shutdown.request||shutdown.request@apart]"
    ],
    "shutdown_refused_after_record": ["tests/test_conformance.py::test_the_reference_refuses_the_teams_bad_input"],
    "checkpoint_not_round_tripped": ["tests/test_team.py::test_a_checkpoint_holds_only_plain_json"],
    # the compiled validator of writes: its differential test and the stores' refusal
    "validator_drops_pattern": ["tests/test_compiled_validator.py"],
    **PROCESS_CAUGHT_BY,  # the real-process mutants: only these tests can catch them
    **PLAN_CAUGHT_BY,  # plans: the plan machine and the plan examples
    **RECOVERY_CAUGHT_BY,
}
"""Mutant → the tests that caught it, run first by ``teamproto mutants``."""
