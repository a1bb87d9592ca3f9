"""Named mutants of plan approval and plan execution (DESIGN rule 7; reference/_plans.py).

Each removes one check of a PLN or XPR clause. They are part of :data:`reference._mutants.MUTANTS`;
``teamproto mutants`` runs the tests named in :data:`PLAN_CAUGHT_BY` for each (the plan model
tests and the plan example tests), which must fail.
"""

from __future__ import annotations

PLAN_MUTANTS: dict[str, str] = {
    "ttl_approves_plan": "PLN-5: the monitor approves a pending plan whose ttl ran out",
    "plan_executed_twice": "PLN-7: a second start of a consumed plan runs its steps again",
    "rejected_plan_redrafted": "PLN-8: drafting again under a rejected or expired plan's key reopens that plan "
    "as a draft under the same id",
    "decision_comment_in_reason": "PLN-2: the approver's free text of a plan decision is recorded as the plan's "
    "reason, outside comment",
    "step_deviation_allowed": "PLN-4: a step that differs from the next approved step runs",
    "late_decision_acted_on": "PLN-3: a decision for a plan no longer awaiting it is taken as delivered",
    "retraction_after_delivery": "PLN-6: the approver retracts an approval whose decision was delivered",
    "deviation_skips_rollback": "PLN-4, PLN-9: a deviation fails the execution but its rollback never runs",
    "complete_with_steps_left": "PLN-4: a completion with approved steps still to run completes the execution",
    "marker_after_first_step": "PLN-7: the executed marker is written with the first step, not before it",
    "draft_unguarded": "XPR-2: a plan draft's insert is not guarded by the requester's row (a drain begun "
    "between the draft's read and its write leaves the draft for a draining member)",
    "drain_keeps_plans": "XPR-2: a draining (or inspected) member's draft and pending plans are kept",
    "plan_incarnation_ignored": "XPR-1: a plan approved for an older incarnation is started by the new one",
    "plan_not_audited": "AUD-5: a plan's decisions (submit, decision, retraction, delivery, withdrawal, "
    "expiry, start) never reach the team log",
    "decision_sequence_unchecked": "PLN-3, PLN-6: a decision is matched by its plan's id and status, not its "
    "sequence, so one superseded by a retraction is taken while its message is still pending",
    "reconcile_plans_reads_history": "REC-1: reconciliation reads every plan ever written, not the active and "
    "unlogged ones (its cost follows history)",
    "start_acknowledges_first_decision": "PLN-6, PLN-7: the start acknowledges the plan's first decision, not "
    "the one that stands after a retraction",
    "marker_ignores_plan_version": "PLN-5, PLN-7, STO-4: the start inserts its executed marker whatever became of "
    "the plan since it judged it, so a monitor's expiry in between leaves a run beside an expired plan",
    "reconcile_reads_finished_runs": "REC-3, PLN-10: reconciliation owes again the plan_completion of every "
    "execution that ever finished, not of those the storage marks owed (its cost follows history)",
    "owed_mark_never_set": "REC-3, PLN-10: the storage never marks a finished execution's completion owed, so a "
    "crash between the execution's last write and its outbox entry loses the plan_completion",
    "decision_comment_not_redacted": "AUD-3, INV-10: the approver's comment on a plan decision is stored and "
    "sent as written",
    "cut_submit_keeps_draft_deadline": "PLN-5, REC-2: reconciliation finishes a submit cut short after its "
    "message with the draft's provisional deadline, not a whole ttl from the restart",
    "run_timed_by_plan_deadline": "PLN-9, INV-12: the monitor times a running execution out by its plan's "
    "deadline (submit + ttl), not its own (start + ttl)",
    "expiry_ignores_marker": "PLN-5, PLN-7, PLN-11, STO-4: the monitor's expiry and the requester's withdrawal "
    "of an approved plan ignore its executed marker, so a start that committed is left with a run beside an "
    "expired or withdrawn plan",
    "stale_plan_misstated": "XPR-1, DESIGN rule 8: a stale plan's refusal states the member's current "
    "incarnation as the one the plan was made for and the other way round",
}

_STATEFUL = "model_tests/test_stateful.py::TestPlanProtocol"
_EXAMPLES = "tests/test_plans.py"
PLAN_CAUGHT_BY: dict[str, list[str]] = {name: [_STATEFUL, _EXAMPLES] for name in PLAN_MUTANTS}
_RACE = "model_tests/test_interleave.py::test_every_interleaving_keeps_every_invariant[start_plan||expire_plans-memory]"
PLAN_CAUGHT_BY["marker_ignores_plan_version"] = [_RACE]
PLAN_CAUGHT_BY["rejected_plan_redrafted"] = [
    "tests/test_plans.py::test_a_rejected_plan_is_never_retried_and_a_revision_is_a_new_record_in_its_lineage"
]
PLAN_CAUGHT_BY["decision_comment_in_reason"] = [
    "tests/test_plans.py::test_the_approvers_comment_is_stored_and_sent_redacted_in_every_decision"
]
PLAN_CAUGHT_BY["draft_unguarded"] = [
    "model_tests/test_interleave.py::test_every_final_state_is_some_serial_orders[draft_plan||begin_drain-memory]"
]
PLAN_CAUGHT_BY["expiry_ignores_marker"] = [_RACE]
PLAN_CAUGHT_BY["stale_plan_misstated"] = [
    f"{_EXAMPLES}::test_a_plan_approved_for_an_older_incarnation_is_not_started_by_the_new_one"
]
PLAN_CAUGHT_BY["plan_not_audited"] = [f"{_EXAMPLES}::test_every_plan_decision_is_in_the_team_log"]
PLAN_CAUGHT_BY["decision_sequence_unchecked"] = ["tests/test_superseded_decisions.py"]
PLAN_CAUGHT_BY["start_acknowledges_first_decision"] = [
    f"{_EXAMPLES}::test_the_start_acknowledges_the_decision_that_stands"
]
PLAN_CAUGHT_BY["reconcile_plans_reads_history"] = [
    f"{_EXAMPLES}::test_reconciliation_reads_active_and_unlogged_plans_not_the_history"
]
PLAN_CAUGHT_BY["reconcile_reads_finished_runs"] = ["tests/test_history_cost.py"]
PLAN_CAUGHT_BY["owed_mark_never_set"] = ["tests/test_owed_completions.py"]
PLAN_CAUGHT_BY["run_timed_by_plan_deadline"] = ["tests/test_deadline_boundaries.py"]
PLAN_CAUGHT_BY["decision_comment_not_redacted"] = [
    f"{_EXAMPLES}::test_the_approvers_comment_is_stored_and_sent_redacted_in_every_decision"
]
PLAN_CAUGHT_BY["cut_submit_keeps_draft_deadline"] = [
    f"{_EXAMPLES}::test_a_submit_cut_short_after_its_message_is_finished_by_the_restart_with_a_whole_ttl_from_then"
]
"""Mutant → the tests that must fail with it (run by ``teamproto mutants`` for it)."""

__all__ = ["PLAN_CAUGHT_BY", "PLAN_MUTANTS"]
