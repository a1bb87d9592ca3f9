"""Named mutants of the reference's approval path and stores (DESIGN rule 7).

A mutant is switched on for a whole process by ``TEAMPROTO_MUTANT=<name>`` (``teamproto mutants``
runs the model tests once per mutant in a subprocess, so nothing in the working tree is edited).
Each names the clause whose check it removes; the model tests must catch every one.
"""

from __future__ import annotations

import os
from typing import Any

from spec.ids import canonical_json

from ._plan_mutants import PLAN_MUTANTS
from ._process_mutants import PROCESS_MUTANTS

MUTANTS: dict[str, str] = {
    "skip_digest_check": "APR-5: consume accepts changed arguments",
    "skip_deadline_on_consume": "APR-5: consume ignores the approval's deadline",
    "skip_ownership_check": "APR-5: consume ignores who holds the task and who requested",
    "consume_twice": "APR-6: a consumed approval can be used again",
    "retry_binding_unchecked": "STO-2: a retried request with the same id is not compared with what the first "
    "bound (another task, tool or arguments get the stored approval back)",
    "review_event_saved_apart": "AUD-1: a review writes the record's new status, then its event in a second "
    "write (a crash between leaves a decision no event records)",
    "requester_from_arguments": "APR-3: a request takes its requester from a requester_id in the tool's "
    "arguments, which the model wrote",
    "acknowledge_approves": "MSG-3: acknowledging an approval_request message approves the request",
    "owe_swallows_store_errors": "XPR-3, REC-3: owing a message swallows a store failure with the duplicate it "
    "ignores, so the operation reports success with nothing owed",
    "store_failure_retried": "STO-4, XPR-3: the compare-and-set retry loop retries a store failure too, so a "
    "write whose answer was lost is judged again as if another writer had made it",
    "late_review_accepted": "APR-4: a review after the approval's deadline (before the monitor's pass) is taken",
    "review_event_names_requester": "AUD-2: a review's event names the requester as its actor, in the record "
    "and the log alike",
    "finish_stops_member_first": "SHD-5: a finish writes the member stopped before the request completed (the model's "
    "order swapped; reconciliation heals either order, so only the order check sees it)",
    "restart_skips_monitor_pass": "REC-5: reconciliation leaves the deadline monitor's pass to the monitor's next "
    "turn, so a pass a crash cut short stays half done after the restart",
    "suspension_notice_misaddressed": "MSG-1, SHD-9: a task_suspended notice goes from the Lead to the "
    "member, not from the task's holder to the Lead",
    "restart_expires_approved": "REC-1, APR-5: a restart expires an approved approval past its deadline, the "
    "monitor's job (the model's reconciliation expires only a requested one and sends an approved one's decision)",
    "retry_ttl_unchecked": "STO-2: a retried approval request under the same tool_call_id with another timeout "
    "gets the first request's approval back, its deadline and all",
    "shutdown_retry_reason_unchecked": "STO-2: the same shutdown request_key again with another reason is taken as "
    "a retry of the first",
    "claim_fenced_by_old_request": "XPR-1, MEM-1: a restarted member's claim is refused by a shutdown request "
    "its earlier incarnation got and that is still open",
    "inspect_ignores_stopping_job": "SHD-7, SHD-4: a lost member's task is inspected while a job on it that "
    "was asked to stop has not exited",
    "late_cancel_refused": "APR-9: a cancel of an approved approval past its deadline, before the monitor's "
    "pass, is refused as expired (the approval is still approved: its requester may cancel it)",
    "unit_deadline_from_first_claim": "SHD-9: a unit's deadline is counted from the task's first claim, not "
    "the current one (a re-claimed task is suspended early)",
    "shutdown_of_lost_member": "SHD-1: a shutdown request is refused only for a stopped or retired member, so an "
    "unhealthy or draining one gets a second request",
    "restart_spares_stopping_jobs": "SHD-4, XPR-1: a restart counts only running jobs: a member restarts while a "
    "job asked to stop has not exited",
    "reconcile_tells_approvals_only": "REC-3, INV-7: reconciliation sends again the decision of an approved "
    "approval cut short, not of a rejected one (the rejection is never told)",
    "redelivery_before_correlation": "MSG-5: a delivered message sent again under another correlation id is "
    "answered as a duplicate (the first result), not refused as unknown",
    "plan_body_unbound": "STO-2: a plan drafted again under its plan_key with another plan body gets the first "
    "plan back (the body is not compared)",
    "drain_event_by_lead": "AUD-1, SHD-2: a drain's draining event names the Lead (who asked for it) as its "
    "actor, not the member that began it",
    "rolled_forward_by_lead": "AUD-1, REC-2: a plan's submission or start that reconciliation finishes after a "
    "crash is recorded as the Lead's, not its requester's",
    "final_cancel_not_active": "APR-9: a cancel of a consumed or otherwise final approval is refused as "
    "approval_not_active, not cancel_refused (the refusal names no guard of the cancel)",
    "job_command_stored_raw": "INV-10, AUD-3: a job's record keeps its command as given, secrets and all (the "
    "runner still runs it as given)",
    "send_restamps_message": "MSG-4, REC-3: the outbox puts its entry's message on the bus stamped with the "
    "time it is sent, not as it was owed: one id, two messages",
    "lost_notice_heartbeat_zero": "SHD-10, MSG-1: a member_lost notice says its member last beat at 0, "
    "whatever its record says",
    "suspension_notice_per_task": "SHD-9, INV-7: a task_suspended notice's id names the task's first claim, "
    "whatever claim was suspended: a later suspension's notice is taken for the first's and never owed",
    "task_refusal_reads_member_once": "STO-4, XPR-2: a request or a plan's draft that finds its task flagged "
    "refuses for the task by the member it read before, not as the member now is (a lapse between the two "
    "reads: the refusal no serial order gives)",
    "own_claim_refused_as_taken": "STO-4, MEM-1: a member's claim sent twice at once: the second, finding the "
    "task claimed by the member itself before its member record says so, is refused as taken by another",
    "inspection_member_write_rereads": "STO-4, SHD-7: an inspection's member write re-reads the member after a "
    "lost compare-and-set and writes again without judging again, so two inspections at once both succeed",
    "job_start_unguarded": "STO-4, JOB-1: a job's start and a task's finish judge each other's records without a "
    "guard, so one at once with the other both succeed: a job runs for a finished task",
    "job_refusal_reads_member_once": "STO-4: a job start that finds its task flagged refuses for the task by the "
    "member it read before, not as the member now is (a lapse between the two reads)",
    "cut_pass_marked_done_first": "REC-5, REC-4: a restart taking over a dead instance's cut monitor pass marks "
    "that instance's row done before finishing the pass itself (a crash between leaves the pass half done for "
    "good)",
    "shutdown_key_race_unjudged": "STO-2: a shutdown request whose insert loses to another writer's of the same "
    "key returns that request's id without comparing its target: two requests for two members both told the one id",
    "shutdown_refused_after_record": "SHD-1: a shutdown request for a member that is not running is refused, "
    "but only after its record was written",
    "checkpoint_not_round_tripped": "TSK-2: a checkpoint keeps the state as given instead of its JSON round trip "
    "(tuples, non-string keys)",
    "message_before_record": "MSG-6: the request message is written before the protocol record",
    "unstable_message_id": "MSG-4: a retried request gets a fresh message id",
    "dedup_disabled": "MSG-5: a duplicate delivery records a new result",
    "reconcile_skips_redelivery": "REC-3: reconciliation does not re-send owed messages",
    "secret_not_redacted": "AUD-3: the risk summary is stored as written",
    "profile_version_ignored": "XPR-4: consume ignores the capability profile's version and tools",
    "cancel_after_consume": "APR-9: a consumed approval can be cancelled",
    "recovery_repeats_call": "APR-8: recovery re-issues a started call instead of looking it up",
    "sqlite_cas_check_then_act": "STO-4: the SQLite compare-and-set reads the version, then updates unconditionally",
    "consume_rereads_before_cas": "APR-5, APR-6: consume re-reads the approval just before its compare-and-set",
    "claim_repair_reads_tasks_first": "REC-2, STO-4: reconciliation reads the tasks, then the members, "
    "and repairs a member over a fresh read",
    "claim_repair_only_running": "REC-2: reconciliation completes a claim cut short only for a running member "
    "(another process began its drain between the crash and the restart)",
    "audit_clears_later_mark": "AUD-5, REC-4: an audit entry clears its record's unlogged mark though the record "
    "holds events the log does not (another instance's later write; memory backend)",
    "audit_clears_mark_one_early": "AUD-5, REC-4: an audit entry clears its record's unlogged mark while the "
    "log still misses one of the record's events (memory backend)",
    "request_unguarded": "XPR-2: an approval's insert is not guarded by the requester's row (a drain begun "
    "between the request's read and its write leaves the approval open)",
    "claim_while_draining": "MEM-1: a member that is not running or not accepting may claim",
    "claim_ignores_shutdown_request": "MEM-1: a claim ignores an active shutdown request (the window "
    "between persisting the request and updating the member)",
    "release_before_jobs_settle": "SHD-3: a drain releases the task while a job still runs",
    "drain_completes_task": "SHD-3: a draining member completes its task to get out of the drain",
    "ack_before_record": "SHD-5: the shutdown_ack is owed before the completed record is persisted",
    "stale_incarnation_accepted": "XPR-1: a shutdown request for an older incarnation begins a drain",
    "stale_claim_token_accepted": "TSK-1: a stale claim token may finish the task",
    "lapse_twice": "SHD-10: a heartbeat lapse owes two member_lost notices",
    "clean_exit_member_lost": "SHD-10: a clean finished drain also owes member_lost",
    "timed_out_as_completed": "SHD-6: the monitor completes a drain past its deadline instead of timing it out",
    "signal_non_cancellable": "JOB-2: a drain pass asks a non-cancellable job to cancel",
    "force_terminate_spares_cancelling_jobs": "SHD-7: the last rung kills only the running jobs, not those "
    "already asked to cancel (they stay cancel_requested, and the task's inspection waits for them forever)",
    "drain_keeps_requests": "XPR-2: beginning a drain keeps the member's own requested approvals",
    "reconcile_skips_outbox": "REC-3: reconciliation does not owe the messages the records owe",
    "ack_misaddressed": "MSG-1, SHD-5: the shutdown_ack is addressed to the member that sends it, not to the "
    "Lead that asked",
    "cancel_ignores_incarnation": "XPR-1, INV-11: cancel takes a caller of an older incarnation",
    "approval_incarnation_ignored": "XPR-1: consume ignores the incarnation the approval was made for",
    "idempotency_key_is_tool_call_id": "APR-5, APR-8: the tool is called under the tool call id, not the approval id",
    "expiry_not_audited": "AUD-5: the monitor's expiry of an approval is never written to the audit log",
    "audit_hash_omits_time": "AUD-5: an audit entry's time is outside its hash",
    "audit_link_unchecked": "AUD-5: the verifier does not check that each entry links to the one before",
    "reconcile_skips_audit": "AUD-5, REC-2: reconciliation does not append the decisions the log misses",
    "reconcile_keeps_half_drain": "PROTOCOL §5, REC-2: a request draining while its member still runs is left "
    "so (the member keeps accepting work)",
    "resumed_drain_keeps_requests": "XPR-2: (PROTOCOL §5) a resumed drain does not cancel the draining member's "
    "pending requests again",
    "unhealthy_member_not_reported": "PROTOCOL §5, SHD-10: a member draining without its request is not marked "
    "unhealthy, and no member_lost is owed",
    "signal_notice_not_recovered": "SHD-8, REC-3: a member stopped on a signal whose shutdown_notice was never "
    "owed stays silent",
    "repeat_review_skips_responder": "APR-4: a review repeating the recorded decision is taken as the "
    "idempotent repeat before the responder is checked: any member may re-approve",
    "inspection_exit_unsigned": "SHD-7, JOB-1: the Lead's inspection records a killed job's exit as code 9, "
    "not -SIGKILL: the job seems to have exited by itself, and one asked to cancel is recorded failed",
    "entry_sent_before_message": "REC-3: an outbox entry is marked sent before its message is on the bus: a "
    "crash between the two loses the message for good",
    "reconcile_reowes_sent_outbox": "REC-1, REC-3: reconciliation marks a sent outbox entry owed again",
    "shutdown_not_audited": "AUD-5: a shutdown request's decisions (request, drain, completion, expiry, "
    "cancellation) are kept in its record only, never in the team log",
    "audit_out_of_record_order": "AUD-5: an operation appends only its own event, so two processes "
    "deciding on one record log in the order they append, and a reconciliation beside them logs an event twice",
    "defaults_override": "APR-2: a tool's defaults override the values the caller gave",
    "every_string_a_path": "APR-2: path normalisation applied to every string argument, not the path fields",
    "numbers_conflated": "APR-2: the digest reads numbers as JavaScript does (1 and 1.0 are one argument)",
    "list_order_ignored": "APR-2: the digest sorts lists (a reordered list is the same argument)",
    "anyone_may_reject": "APR-4: only approving is kept to the responder; any member may reject",
    "review_closed_at_deadline": "APR-4: a review exactly at the deadline is refused as expired",
    "consume_closed_at_deadline": "APR-5: a call exactly at the deadline is refused as expired",
    "monitor_expires_at_deadline": "INV-12: the monitor expires a request exactly at its deadline",
    "approval_request_never_expires": "MSG-1: an approval's request message stays pending after its deadline "
    "passed (the monitor expires the record, never its message)",
    "drain_resumes_any_request": "SHD-2: a draining request's delivery resumes its drain though the member drains "
    "for another request",
    "shutdown_expires_at_deadline": "SHD-6, INV-12: the monitor expires a shutdown request (or times out its drain) "
    "exactly at its deadline",
    "plan_run_timed_out_at_deadline": "PLN-9, INV-12: the monitor fails a plan's execution exactly at its deadline",
    "result_not_redacted": "AUD-3, INV-10: a tool's result is stored as the tool returned it",
    "version_conflict_escapes": "STO-4: the loser of a compare-and-set race gets a raw VersionConflict",
    "execution_overwritten": "APR-6: an existing execution record is overwritten and the call made again",
    "shutdown_by_anyone": "SHD-1: any member may request another member's shutdown, not only the Lead",
    "monitor_reads_history": "INV-12, REC-3: the deadline monitor and the outbox read every record ever written, "
    "not the open ones (their cost follows history)",
    "sqlite_reads_walk_history": "REC, AUD-5: SQLite answers a read by status or by log subject with one OR over "
    "the index, which walks every row of the table (every operation's cost follows the history)",
    "busy_jobs_read_history": "SHD-3, JOB-1: a member's busy jobs are found by reading every job ever started "
    "(a drain pass, a release, a finish and a claim cost more with every job of the team's history)",
    "recovered_failure_succeeds": "APR-8: recovery records every call the tool remembers as succeeded, a failed "
    "one too",
    "waited_keeps_last_job": "AUD-2, SHD-3: a drain's request names only the last job it asked to stop",
    "drain_asks_before_noting": "AUD-2, SHD-3: a drain asks a job to stop before it notes the job on its "
    "request (a crash between the two leaves a job asked that no request names)",
    "inspection_ends_noted_drain_only": "SHD-7, INV-12: an inspection completes only the drain its member's "
    "record names (a drain cut short before that write stays open forever)",
    "reconcile_leaves_old_drain": "INV-12, REC-2: reconciliation leaves a restarted member's old incarnation's "
    "drain open forever",
    "force_terminate_any_drain": "SHD-7, XPR-1: a timed-out request force-terminates its member whatever "
    "request the member drains for now (a stale one hits a restarted member's new drain)",
    "drain_cancels_one_approval": "XPR-2, INV-12: a drain or an inspection cancels only the first of its "
    "member's requested approvals",
    "sqlite_log_count_walks_log": "AUD-5, REC-4: the trigger that clears an unlogged mark counts the subject's "
    "log entries by the primary key, walking the whole log at every audited decision",
    "schema_stamped_before_statements": "STO-3, STO-1: a SQLite file is stamped with the current schema "
    "before its statements run, outside their transaction (an open cut short leaves a file stamped current "
    "without its triggers, and every later open skips them)",
    "schema_stamp_skips_triggers": "STO-3, REC-3: the schema stamp hashes the table and its indexes only, "
    "so a file of a version with other triggers opens as current",
    "delivery_not_settled": "MSG-5, STO-4: the generic receipt of a message writes against the version it "
    "read and fails with a raw version conflict where another process delivered or expired it meanwhile",
    "stopped_member_drain_left_timed_out": "REC-2, INV-4, INV-12: reconciliation completes a stopped member's "
    "drain only from draining; a timed-out one stays open for good",
    "lapse_ignores_fresh_beat": "SHD-10, STO-4: the watcher lapses every member it read as lapsed, though one "
    "beat (or was restarted) between its read and the lapse: a live member is declared lost",
    "claim_token_per_member": "TSK-1: the claim token names the claimer, not the claim: a member's second "
    "claim of a task gets its first token again, and that stale token still acts",
    "claim_under_timed_out_request": "MEM-1, SHD-6: a claim is refused under a requested or draining shutdown "
    "request only; a timed-out one (its drain cut short before the member's write) lets the member claim",
    "completed_drain_reported_lost": "REC-2, SHD-10: reconciliation reports a draining member lost when its "
    "request is completed (between a finish's record write and its member write, by another instance)",
    "free_text_not_redacted": "AUD-3, INV-10: a shutdown's reason and a plan's goal, rollback and risks are "
    "stored and sent as written",
    "receive_keeps_article_layout": "MSG-1, PLN-1: a message received in the source article's layout is "
    "stored as it came, its defaults never filled",
    "validator_drops_pattern": "MSG-2, STO-1: the compiled validator of every write and read leaves out the "
    "pattern keyword (a digest or hash that is not 64 hex digits is stored)",
    "reconcile_takes_live_work": "REC-4: reconciliation takes every harness instance for dead and takes over "
    "the work a live one has in flight (its consumption, its request's or decision's message)",
    "ladder_signals_current_incarnation": "SHD-7, XPR-1: the Lead's escalation ladder looks up the member's "
    "processes by its current incarnation, not the request's: a stale request's SIGTERM and SIGKILL reach the "
    "restarted member",
    "driver_replies_every_error_definite": "DESIGN rule 8, STO-3: the conformance driver replies definite to every "
    "refusal, so a write the store could not make (it may have landed) is reported as nothing changed",
    "expiry_logged_before_notice": "PLN-5, MSG-6, AUD-5: the monitor logs a plan's expiry before it owes the "
    "plan_abandoned notice, so a crash between leaves a logged plan no restart revisits: the notice is lost",
    "process_facts_outlive_fork": "REC-4: an instance's process start time is read once for the harness's "
    "process, not once per process: a forked child registers its parent's, and is judged gone (its live work "
    "taken over) as soon as anyone looks",
    "status_by_id_unscoped": "AUD-4: the status tool asked for one record by id returns it to any caller",
    "monitor_expires_begun_drain": "SHD-2, MSG-1: the monitor expires the unread message of a shutdown request a "
    "drain began under (the drain's delivery, its last write, then meets an expired message)",
    "drain_logged_by_its_last_deliverer": "AUD-5, SHD-2, STO-4: a drain is logged only by a delivery that both "
    "began it and recorded the delivery, so one that began it and lost the last write to a second delivery "
    "leaves it unlogged",
    "reconcile_clears_release_unnoted": "SHD-3, REC-2: reconciliation clears a draining member's task that a release "
    "cut short put back to pending without noting it on the request first, so a finish then completes the request "
    "with nothing released (beside a release in flight, its note then lands on the completed request)",
    "release_notes_flagged_task": "SHD-3, SHD-7: a release that found its task flagged needs_inspection (the Lead "
    "force-terminated the member after the release read it draining) still notes the task on the request, so "
    "the request and its shutdown_ack say a task was released that its member still holds",
    "inspection_clears_release_unnoted": "SHD-3, SHD-7, MSG-6: the Lead's inspection clears the task of a member "
    "whose release was cut short (or is in flight) after the task's write without noting it on the request, so "
    "the request completes, its shutdown_ack owed, with nothing released",
    "drain_refusal_reads_member_once": "STO-4, SHD-2: a drain step that finds its request ended refuses by the "
    "member it read before the request, though the Lead's inspection stopped the member in between: the "
    "refusal names an ended request no serial order shows a draining member with",
    "flag_loses_raw": "STO-4, SHD-7: flagging a member's claimed task does not re-read it after losing a "
    "compare-and-set (a release put the task back meanwhile): the Lead's force-termination fails with a raw "
    "VersionConflict and the member is never terminated",
    "release_task_loses_raw": "STO-4, SHD-3: a release's task write that lost a compare-and-set (the Lead's "
    "force-termination flagged the task meanwhile) is not run again from its read: the member gets a raw "
    "VersionConflict instead of the refusal a release after the termination gets",
    "cut_release_judged_by_status": "SHD-3, SHD-7, REC-2: a release cut short is told by its task being back in "
    "pending, not by the member's own release since its last claim: a task the Lead flagged and re-pended is "
    "noted on the request as released",
    "release_judged_by_its_hold": "SHD-3, SHD-7, MSG-6: a release refuses only when its member still holds the task "
    "after the task write, not unless its own release is the task's news: when the Lead terminated and inspected "
    "the member and put the task back meanwhile, the release notes a task it never let go on the request the "
    "inspection completed, its shutdown_ack saying nothing released",
    "cut_release_judged_by_last_move": "SHD-3, SHD-7, MSG-6: a release cut short is told by the task's last move "
    "being the member's release: when another member claimed the task before the Lead's inspection, the "
    "request completes saying nothing was released, which no serial order says",
    "suspend_refusal_names_stale_task": "STO-4, SHD-9: a suspension that finds the task its member named released "
    'meanwhile refuses by the task it read ("task t0 is not held"), where a suspension after the release, '
    "reading a member that holds nothing, gives another refusal: no serial order gives the first",
    "suspend_loses_raw": "STO-4, SHD-9: a suspension whose task write lost a compare-and-set (a release put the "
    "task back meanwhile) is not run again from its read: the caller gets a raw VersionConflict",
    "release_clears_member_first": "SHD-3, SHD-5, STO-4: a release clears the member's task before it notes the "
    "task on the request, so a finish by a second process of the member between the two completes the request "
    "with nothing released and the release then notes its task on the completed request",
    "delivery_reads_request_first": "SHD-2, STO-4: a shutdown delivery reads the request before the member, so "
    "beside another delivery's drain it sees a stale requested request and a draining member and records a "
    "refusal of a drain that began",
    "inspection_ignores_survivors": "SHD-7: a lost member's inspection kills each process's group only and "
    "records its jobs' exits whatever outlived the kill (a job process that left its group runs on)",
    "first_beat_never_registered": "SHD-10: a member's registration (or restart) is not its first heartbeat, so a "
    "member process that dies before it ever beats is never found lost",
    "finish_in_flight_refused": "SHD-5, STO-4: a finish beside another process's finish in flight (the request "
    "completed, the member not stopped yet) is refused, where a serial second finish is a no-op",
    "delivery_records_expired_request": "SHD-6, MSG-1: a shutdown request's delivery between the monitor's "
    "expiry of the request and of its message records a refusal, an end no serial order reaches",
}

MUTANTS.update(PROCESS_MUTANTS)  # caught by the real-process tests (reference._process_mutants)
MUTANTS.update(PLAN_MUTANTS)  # plans (reference._plan_mutants): the plan model and example tests


ACTIVE = os.environ.get("TEAMPROTO_MUTANT", "")
if ACTIVE and ACTIVE not in MUTANTS:
    raise SystemExit(f"TEAMPROTO_MUTANT={ACTIVE!r} is not a reference mutant; known: {', '.join(MUTANTS)}")


if ACTIVE == "validator_drops_pattern":  # the compiled checks are built in spec.schemas, without it
    from spec.schemas import use_checks

    use_checks(drop=frozenset({"pattern"}))


def broken(name: str) -> bool:
    """True when mutant ``name`` is switched on in this process."""
    assert name in MUTANTS, name
    return name == ACTIVE


def mutated_arguments(value: Any) -> Any:
    """Mutants ``numbers_conflated`` and ``list_order_ignored`` of a tool's digest: numbers read as
    JavaScript reads them (``1`` is ``1.0``), or lists read as sets."""
    if isinstance(value, dict):
        return {key: mutated_arguments(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [mutated_arguments(item) for item in value]
        return sorted(items, key=canonical_json) if broken("list_order_ignored") else items
    if isinstance(value, int) and not isinstance(value, bool) and broken("numbers_conflated"):
        return float(value)
    return value
