"""Named, deliberately broken variants of the model (DESIGN rule 7).

Each mutant disables one check of one protocol step. ``teamproto check --mutant NAME`` must find a
violation, and ``model_tests/test_model_mutants.py`` asserts that it is found by the invariant
named here — proof that the invariant and the check are real.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # the clause whose check is removed
    caught_by: str  # the invariant that must catch it: its clause (INV-*) or its name
    config: str  # the smallest configuration that shows it
    description: str
    also: tuple[str, ...] = ()  # other predicates that catch it in the very same step (none, mostly)

    def found_in(self, violations: Mapping[str, Any]) -> bool:
        """Whether a report's ``violations`` (invariant name → violation) hold the one named here."""
        return self.caught_by in violations or any(v.clause == self.caught_by for v in violations.values())


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "consume_without_digest_check",
            "APR-5",
            "INV-1",
            "tiny",
            "consume accepts a call whose arguments differ from the approved digest",
        ),
        Mutant(
            "consume_after_deadline",
            "APR-5",
            "INV-1",
            "tiny",
            "consume skips the deadline check (before the monitor has expired it)",
        ),
        Mutant(
            "consume_by_other_member",
            "APR-5",
            "INV-1",
            "pair",
            "consume skips the requester check: another member's call uses the approval",
        ),
        Mutant(
            "approval_grants_capability",
            "APR-7",
            "INV-9",
            "tiny",
            "consume skips the capability-profile check and the profile version check",
        ),
        Mutant(
            "consume_ignores_profile_version",
            "APR-7",
            "INV-9",
            "tiny",
            "consume checks that the tool is still in the requester's profile, but not that the profile is "
            "the version the approval was bound to (a profile changed and the tool kept)",
        ),
        Mutant(
            "cancel_after_consume",
            "APR-9",
            "INV-3",
            "tiny",
            "the requester may cancel an approval that was already consumed",
        ),
        Mutant(
            "recovery_repeats_call",
            "APR-8",
            "INV-1",
            "tiny",
            "reconcile re-issues a started call instead of looking its outcome up",
        ),
        Mutant(
            "recovery_assumes_call_failed",
            "APR-8",
            "world_agrees_with_executions",
            "tiny",
            "reconcile records a started call failed without asking the tool by its key: a call that reached "
            "the world before the crash is recorded failed (the stores alone look right; only the world shows it)",
        ),
        Mutant(
            "call_before_execution_record",
            "APR-6",
            "world_agrees_with_executions",
            "tiny",
            "the consume calls the tool before it writes the execution record ahead: a crash between the two "
            "leaves a call no record knows of",
        ),
        Mutant(
            "outcome_before_call",
            "APR-8",
            "world_agrees_with_executions",
            "tiny",
            "the consume records the call succeeded before it makes the call: a crash between the two leaves "
            "an outcome the world never saw",
        ),
        Mutant(
            "finish_leaves_member_draining",
            "SHD-5",
            "INV-4",
            "shutdown",
            "the finish completes the request and owes its ack but leaves the member draining: a completed "
            "shutdown whose member never stopped",
        ),
        Mutant(
            "inspection_leaves_drain_open",
            "SHD-7",
            "INV-4",
            "shutdown",
            "the inspection stops a lost member but leaves the drain it was in open: a stopped member whose "
            "request never completes",
        ),
        Mutant(
            "begin_drain_forgets_request",
            "SHD-2",
            "draining_member_accepts_nothing",
            "shutdown",
            "a member begins to drain without naming the request it drains for on its record: reconciliation "
            "and the finish cannot tell which drain it is in",
        ),
        Mutant(
            "retry_new_message_id",
            "MSG-4",
            "INV-6",
            "tiny",
            "a retried request gets a fresh message id instead of its stable id",
        ),
        Mutant("secret_not_redacted", "AUD-3", "INV-10", "tiny", "the risk summary is stored without redaction"),
        Mutant(
            "claim_ignores_shutdown_request",
            "MEM-1",
            "INV-2",
            "shutdown",
            "claim checks the member record only, not the persisted shutdown requests",
        ),
        Mutant(
            "release_before_jobs_settle",
            "SHD-3",
            "INV-5",
            "shutdown",
            "a drain pass releases the task while the member's job is still running",
        ),
        Mutant(
            "release_while_cancel_requested",
            "SHD-3",
            "INV-5",
            "shutdown",
            "a drain pass takes a job asked to cancel as stopped: it releases the task (and may finish) "
            "while the job, cancel_requested, has not exited",
        ),
        Mutant(
            "release_unnoted",
            "SHD-3",
            "release_noted_on_its_request",
            "shutdown",
            "a drain's release writes its task back to pending and clears its member's task, but never notes "
            "the task on the request: the request and the shutdown_ack it owes are silent about the task the "
            "drain handed back (AUD-2)",
        ),
        Mutant(
            "run_completes_a_step_early",
            "PLN-4",
            "completed_run_ran_every_step",
            "plan",
            "a plan execution may complete with its last approved step never run: the executed steps are a "
            "prefix of the approved ones (INV-8 holds), and the plan_completion reports a plan done that was not",
        ),
        Mutant(
            "release_notes_before_task",
            "SHD-3",
            "released_task_left_its_member",
            "shutdown",
            "the release notes its task on the request before it writes the task back to pending: a crash "
            "between the two leaves a request that says it released a task its member still holds (and a "
            "Lead's inspection then completes it so, its shutdown_ack saying so too)",
            also=("released_task_has_checkpoint",),  # the task named is not yet checkpointed either
        ),
        Mutant(
            "release_drops_checkpoint",
            "TSK-3",
            "released_task_has_checkpoint",
            "shutdown",
            "a drain pass releases the task without checkpointing it: the request says it released the "
            "task, and the next claimer has nothing to resume from",
        ),
        Mutant(
            "reconcile_ignores_incarnation",
            "XPR-1",
            "INV-4",
            "restarts",
            "reconciliation repairs a member by a shutdown request made for an earlier incarnation: the "
            "old request's completion stops the new incarnation while it drains for a new request",
        ),
        Mutant(
            "finish_keeps_task",
            "SHD-5",
            "INV-4",
            "shutdown",
            "finishing a shutdown stops the member without the task having been released",
        ),
        Mutant(
            "stale_incarnation_accepted",
            "XPR-1",
            "INV-11",
            "fencing",
            "begin-drain accepts a shutdown_request made for an older incarnation",
        ),
        Mutant(
            "reconcile_skips_redelivery",
            "REC-3",
            "INV-7",
            "tiny",
            "reconcile does not re-deliver a request whose message was lost in a crash",
        ),
        Mutant(
            "timeout_approves_plan",
            "PLN-5",
            "INV-8",
            "plan",
            "the deadline monitor approves a pending plan instead of expiring it",
        ),
        Mutant(
            "execute_plan_twice",
            "PLN-7",
            "INV-8",
            "plan",
            "plan start ignores the executed marker and starts the steps again",
        ),
        Mutant(
            "monitor_skips_shutdown",
            "SHD-6",
            "INV-12",
            "monitor",
            "the deadline monitor never expires or times out shutdown requests",
        ),
        Mutant(
            "resumed_drain_keeps_requests",
            "XPR-2",
            "INV-12",
            "plan_drain",
            "reconcile resumes a drain that crashed after the member's half without cancelling the "
            "member's own requests: its draft plan can never become final",
        ),
        Mutant(
            "inspection_keeps_requests",
            "SHD-10",
            "INV-12",
            "plan_lost",
            "inspecting a lost member leaves its draft plan open: only its running requester could end it",
        ),
        Mutant(
            "inspection_cancels_as_draining",
            "XPR-5",
            "reasons_name_their_causes",
            "plan_lost",
            "inspecting a lost member ends its open requests with reason member_draining, not crashed",
        ),
        # ---- issue 19: one per new safety predicate, each a bug that only moved the pinned counts
        Mutant(
            "request_message_expires_at_deadline",
            "MSG-1",
            "expiry_only_after_deadline",
            "plan",
            "the monitor expires a request's message at its deadline, while the request can still be decided",
        ),
        Mutant(
            "monitor_expires_begun_drain_message",
            "MSG-1",
            "expiry_only_after_deadline",
            "shutdown",
            "the monitor expires the unread message of a shutdown request a drain began under (a crash "
            "between the drain's first write and its delivery's), which its reader would still record",
        ),
        Mutant(
            "monitor_expires_early",
            "APR-5",
            "expiry_only_after_deadline",
            "tiny",
            "the deadline monitor expires an approval one tick before its deadline",
        ),
        Mutant(
            "monitor_fails_run_at_deadline",
            "PLN-9",
            "deadline_is_the_last_instant",
            "plan",
            "the deadline monitor fails a plan's execution at its deadline, not after it (removes a last step "
            "at the deadline; no snapshot shows it: a run may fail at any time)",
        ),
        Mutant(
            "draining_member_consumes",
            "XPR-2",
            "stopped_member_acts_not",
            "approval_drain",
            "a draining member's call consumes its approved approval",
        ),
        Mutant(
            "begin_drain_keeps_accepting",
            "SHD-2",
            "draining_member_accepts_nothing",
            "shutdown",
            "begin-drain leaves accepting_new_tasks set (the status guard masks it from claims)",
        ),
        Mutant(
            "restart_keeps_incarnation",
            "XPR-1",
            "restart_raises_incarnation",
            "fencing",
            "a restart keeps the incarnation (it made fencing's search infinite)",
            also=("messages_agree_with_records",),  # the lost incarnation's member_lost now names a running one
        ),
        Mutant(
            "retract_after_delivery",
            "PLN-6",
            "retraction_only_before_delivery",
            "plan",
            "the approver's retraction is honoured after the plan_decision was delivered",
            ("messages_agree_with_records",),  # the delivered decision now contradicts the record
        ),
        Mutant(
            "drain_signals_non_cancellable",
            "JOB-2",
            "non_cancellable_job_never_signalled",
            "shutdown",
            "a drain pass asks a job marked non-cancellable to cancel",
        ),
        Mutant(
            "suspend_while_job_runs",
            "SHD-9",
            "task_leaves_owner_after_jobs_settle",
            "shutdown",
            "a unit deadline suspends the task while its member's job runs; resume re-pends it",
        ),
        Mutant(
            "finish_beside_busy_job",
            "SHD-4",
            "task_leaves_owner_after_jobs_settle",
            "shutdown",
            "a member finishes its task (completed or failed) while its job still runs",
        ),
        Mutant(
            "draining_member_finishes_task",
            "MEM-3",
            "stopped_member_acts_not",
            "shutdown",
            "a member that is no longer running (draining, unhealthy) still marks its task completed or failed",
        ),
        Mutant(
            "drain_cancels_others_requests",
            "XPR-2",
            "reasons_name_their_causes",
            "pair_crashes",
            "a drain beginning cancels every member's requested approvals, not only its own member's",
        ),
        Mutant(
            "draining_member_requests",
            "XPR-2",
            "stopped_member_acts_not",
            "approval_drain",
            "a member that is no longer running still requests approvals (after its drain cancelled its requests)",
        ),
        Mutant(
            "draining_member_drafts_plan",
            "XPR-2",
            "stopped_member_acts_not",
            "plan_drain",
            "a member that is no longer running still drafts plans (after its drain withdrew its plans)",
        ),
        Mutant(
            "draining_member_submits_plan",
            "XPR-2",
            "stopped_member_acts_not",
            "plan_lost",
            "a member that is no longer running (lost, before its inspection) still submits its draft plan",
        ),
        Mutant(
            "request_ignores_profile",
            "APR-7",
            "INV-9",
            "tiny",
            "an approval is requested for a tool the requester's profile no longer holds",
        ),
        Mutant(
            "request_without_task",
            "APR-1",
            "work_binds_a_held_task",
            "tiny",
            "a running member that holds no task requests an approval, bound to no task it holds",
        ),
        Mutant(
            "job_without_task",
            "APR-1",
            "work_binds_a_held_task",
            "shutdown",
            "a running member that holds no task starts a job, bound to no task it holds",
        ),
        Mutant(
            "cancel_recorded_as_rejected",
            "XPR-5",
            "terminal_outcomes_carry_reasons",
            "tiny",
            "a requester's cancel records its approval cancelled with reason rejected, a decision never made",
        ),
        Mutant(
            "drain_cancels_as_cancelled",
            "XPR-5",
            "reasons_name_their_causes",
            "approval_drain",
            "a drain ends its member's open requests with reason cancelled, as if the member had withdrawn them",
        ),
        Mutant(
            "reconcile_forgets_suspension",
            "SHD-9",
            "INV-7",
            "shutdown",
            "reconciliation does not owe the task_suspended notice of a suspension a crash cut short",
        ),
        Mutant(
            "shutdown_deadline_from_claim",
            "SHD-1",
            "requests_created_within_their_step",
            "shutdown",
            "a shutdown request's deadline runs from its target's claim of its task, not from the request "
            "(the unit deadline's start, SHD-9, taken for the request's)",
        ),
        Mutant(
            "monitor_spares_unstarted_runs",
            "PLN-9",
            "INV-12",
            "plan",
            "the deadline monitor leaves a running execution past its deadline alone while it has run no step "
            "(nothing to roll back, it reasons): the run never ends",
        ),
        Mutant(
            "profile_removal_keeps_version",
            "XPR-4",
            "profile_changes_raise_version",
            "tiny",
            "a profile change that removes the protected tool keeps the profile's version (the tool's absence "
            "refuses its calls anyway, the change reasons)",
        ),
        Mutant(
            "reconcile_reports_every_member_lost",
            "SHD-10",
            "messages_agree_with_records",
            "tiny",
            "reconciliation owes member_lost for every member, running ones too, not only the unhealthy",
        ),
        Mutant(
            "reconcile_consumes_unstarted_plan",
            "PLN-7",
            "INV-8",
            "plan",
            "reconciliation marks every approved plan consumed, started or not (no executed marker)",
        ),
        Mutant(
            "reconciled_submit_without_deadline",
            "PLN-5",
            "deadline_runs_from_submission",
            "plan",
            "reconciliation finishes a cut submit (draft, request on the bus) as pending but keeps the "
            "draft's deadline: the plan waits for no time at all",
        ),
        Mutant(
            "drain_forgets_waited",
            "SHD-3",
            "asked_jobs_are_waited_for",
            "shutdown",
            "a drain pass asks its member's job to stop but never notes the job on its request: the "
            "request and its shutdown_ack are silent about the job they waited for (AUD-2)",
        ),
        Mutant(
            "decision_names_approver",
            "AUD-2",
            "INV-8",
            "plan",
            "every plan decision records the Lead's approval, a rejection or a request for revision too",
        ),
        Mutant(
            "monitor_keeps_unread_shutdown_requests",
            "SHD-6",
            "INV-12",
            "monitor",
            "the monitor never expires a shutdown request's unread message, a drain begun under it or not",
        ),
        Mutant(
            "inspect_treats_draining_as_lost",
            "SHD-7",
            "task_flagged_only_for_its_lost_owner",
            "shutdown",
            "task inspection treats a draining owner as lost and re-pends its flagged task",
        ),
        Mutant(
            "lapse_flags_other_task",
            "SHD-10",
            "task_flagged_only_for_its_lost_owner",
            "pair_lapses",
            "a heartbeat lapse flags every claimed task, another member's too",
            also=("members_hold_their_claims",),
        ),
        Mutant(
            "review_after_deadline",
            "APR-4",
            "decisions_only_before_deadline",
            "tiny",
            "the approver may review a request after its deadline has passed",
        ),
        Mutant(
            "review_refused_at_deadline",
            "APR-4",
            "deadline_boundaries_reached",
            "tiny",
            "the approver may not review a request at its deadline, the last instant APR-4 allows",
        ),
        Mutant(
            "begin_drain_refused_at_deadline",
            "SHD-2",
            "deadline_boundaries_reached",
            "monitor",
            "a shutdown request delivered at its deadline is refused (SHD-2's deadline check one tick too strict)",
        ),
        Mutant(
            "start_refused_at_deadline",
            "PLN-5",
            "deadline_boundaries_reached",
            "plan",
            "the requester may not start an approved plan at its deadline, the last instant PLN-5 allows",
        ),
        Mutant(
            "request_message_expires_late",
            "MSG-1",
            "deadline_boundaries_reached",
            "tiny",
            "the monitor expires a request's unread message a tick after its request's deadline passed, not at once",
            also=("requests_final_by_deadline",),  # INV-12: the message is still unread a pass after its deadline
        ),
        Mutant(
            "timeout_recorded_as_expired",
            "XPR-5",
            "terminal_outcomes_carry_reasons",
            "monitor",
            "the monitor times a drain out with reason expired, the code of a request never taken up",
        ),
        Mutant(
            "start_before_delivery",
            "PLN-3",
            "plan_starts_only_after_delivery",
            "plan",
            "the requester starts an approved plan whose decision it has not received",
        ),
        Mutant(
            "start_after_deadline",
            "PLN-5",
            "plan_starts_only_before_deadline",
            "plan",
            "the requester starts an approved plan after its deadline, before the monitor expired it",
        ),
        Mutant(
            "claim_drops_checkpoint",
            "TSK-3",
            "checkpoint_never_lost",
            "pair_lapses",
            "a claim of a released task starts from no checkpoint",
            also=("released_task_has_checkpoint",),  # the request still names the task as released
        ),
        Mutant(
            "withdraw_without_reason",
            "XPR-5",
            "terminal_outcomes_carry_reasons",
            "plan",
            "the requester's withdrawal of its plan records no reason code",
        ),
        Mutant(
            "suspended_task_stuck",
            "SHD-9",
            "every_request_can_finish",
            "shutdown",
            "a suspended task is never resumed: only the liveness goal, which tasks joined, sees it",
            ("no_deadlock",),  # at the clock bound nothing else is left to do
        ),
        Mutant(
            "decision_before_record",
            "MSG-6",
            "messages_agree_with_records",
            "tiny",
            "the approval decision message is written before its record: after a crash they disagree",
        ),
        Mutant(
            "reconcile_wrong_decision_phase",
            "REC-3",
            "messages_agree_with_records",
            "plan",
            "reconcile re-delivers a plan decision under phase 0, not the current one after a retraction",
        ),
        Mutant(
            "draining_member_runs_steps",
            "MEM-3",
            "stopped_member_acts_not",
            "plan_drain",
            "a draining requester goes on with its plan's steps (and may complete it) instead of stopping "
            "between two steps",
        ),
        Mutant(
            "lapse_owes_before_flagging",
            "SHD-10",
            "lost_notice_names_its_flagged_tasks",
            "pair_lapses",
            "a lapse owes its member_lost before it flags the member's claims: the notice names none of "
            "the tasks that need inspection",
        ),
        Mutant(
            "send_marks_entry_first",
            "REC-3",
            "INV-7",
            "shutdown",
            "the outbox marks an entry sent before it posts the message: a crash between the two loses "
            "the message, which the outbox never sends again",
        ),
        Mutant(
            "consume_execution_first",
            "INV-3",
            "INV-3",
            "tiny",
            "the consume writes its execution record before it marks the approval consumed: a crash "
            "between the two leaves the approval approved, and the next consume creates the execution "
            "again over the first",
        ),
        Mutant(
            "draining_member_completes_run",
            "XPR-2",
            "stopped_member_acts_not",
            "plan_drain",
            "a requester that ran every step of its plan, then began to drain, completes the run instead of "
            "stopping before it (the completion, no step, is the action)",
        ),
        Mutant(
            "restart_keeps_shutdown",
            "XPR-1",
            "draining_member_accepts_nothing",
            "fencing",
            "a restart begins the new incarnation running but keeps the old incarnation's shutdown request id",
        ),
        Mutant(
            "consume_ignores_incarnation",
            "XPR-1",
            "INV-11",
            "approval_fencing",
            "consume skips the incarnation check: the restarted member's new incarnation uses an approval made "
            "for its old one",
        ),
        Mutant(
            "consume_unapproved",
            "APR-5",
            "INV-3",
            "tiny",
            "consume accepts an approval that is not approved (requested, rejected, cancelled or spent)",
        ),
        Mutant(
            "consume_without_task",
            "APR-5",
            "INV-1",
            "tiny",
            "consume skips the ownership check: a requester that no longer holds the approval's task uses it",
        ),
        Mutant(
            "run_inherits_plan_deadline",
            "PLN-9",
            "run_starts_within_its_step",
            "plan",
            "plan.start gives the execution its plan's deadline instead of a whole ttl from the start, so the "
            "monitor fails a run as soon as its plan's time is up",
        ),
        Mutant(
            "monitor_one_shutdown_a_pass",
            "SHD-6",
            "INV-12",
            "monitor_pair",
            "the deadline monitor moves one overdue shutdown request a pass; the next waits a pass (outside review "
            "65's P1: no configuration had two records of a kind under a clock)",
        ),
        Mutant(
            "monitor_one_approval_a_pass",
            "INV-12",
            "INV-12",
            "approvals_two",
            "the deadline monitor expires one overdue approval a pass; the next waits a pass",
        ),
        Mutant(
            "recovery_forgets_unrun_call",
            "APR-8",
            "consumed_calls_have_outcomes",
            "tiny",
            "recovery leaves a consumed call whose write-ahead execution record is missing with no outcome (outside "
            "review 65's P4: only the effects pin moved)",
        ),
        Mutant(
            "recovered_execution_unbound",
            "APR-8",
            "INV-1",
            "pair_crashes",
            "recovery writes the failed execution of a consumed call that never ran without its approval's "
            "profile version (the field left as it was)",
        ),
        Mutant(
            "plan_start_ignores_incarnation",
            "XPR-1",
            "restart_raises_incarnation",
            "plan_fencing",
            "plan.start skips the incarnation check: the restarted member's new incarnation starts a plan approved "
            "for its old one",
        ),
    )
}
