"""Every model mutant is caught, by the invariant named for it (DESIGN rule 7).

A check no mutant can trip is not counted: this is where each INV-* shows it can fail.
"""

from __future__ import annotations

import pytest

from spec.explore import explore
from spec.model import MUTANTS, Model, load_config


@pytest.mark.clause(
    "INV-1", "INV-2", "INV-3", "INV-4", "INV-5", "INV-6", "INV-7", "INV-8", "INV-9", "INV-10", "INV-11", "INV-12"
)
@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.clause(MUTANTS[name].breaks)) for name in sorted(MUTANTS)]
)
def test_mutant_is_caught_by_its_invariant(name: str) -> None:
    """The model's check of the mutant's clause is real: removing it trips the named invariant."""
    mutant = MUTANTS[name]
    report = explore(Model(load_config(mutant.config), name), stop_on=mutant.caught_by)
    caught = {v.clause for v in report.violations.values()} | set(report.violations)
    assert mutant.caught_by in caught, f"{name} survived (violations: {sorted(caught)})"
    violation = next(v for v in report.violations.values() if mutant.caught_by in (v.clause, v.invariant))
    assert len(violation.trace) >= 2
    if not mutant.caught_by.startswith("INV-"):
        # issue 19: the named predicate is the one that catches it — no other check fired first
        assert set(report.violations) == {mutant.caught_by, *mutant.also}, f"{name}: {sorted(report.violations)}"
        assert len(violation.trace) - 1 == SHORTEST[name], f"{name}: shortest trace {len(violation.trace) - 1}"


SHORTEST = {
    "begin_drain_forgets_request": 2,  # a request, then the drain begun without its id on the member
    "call_before_execution_record": 4,  # request, approve, consume cut after its call: no record knows it
    "outcome_before_call": 4,  # request, approve, consume cut after its outcome: a success never called
    "recovery_assumes_call_failed": 5,  # request, approve, consume cut after the call, the restart's look-up
    "recovery_forgets_unrun_call": 5,  # a claim, request, approve, consume cut after its record, the restart
    "monitor_expires_early": 4,
    "request_message_expires_at_deadline": 5,  # submitted, the clock at the deadline, the monitor's pass
    "monitor_fails_run_at_deadline": 8,  # to the run live at its deadline, then the pass that fails it
    "draining_member_consumes": 6,
    "begin_drain_keeps_accepting": 2,
    "restart_keeps_incarnation": 4,
    "retract_after_delivery": 6,
    "drain_signals_non_cancellable": 5,
    "suspend_while_job_runs": 7,
    "finish_beside_busy_job": 3,  # a job started, the task finished beside it
    "draining_member_finishes_task": 5,  # a claim, the member lost, its task still finished
    "drain_cancels_others_requests": 4,  # m0 requests, m1 is asked to stop and drains: m0's request cancelled
    "request_without_task": 1,  # a request before any claim
    "job_without_task": 1,  # a job before any claim
    "reconcile_reports_every_member_lost": 2,  # a claim, a crash mid-step: its reconciliation
    "draining_member_requests": 4,  # a claim, a drain begun, then a request
    "draining_member_drafts_plan": 4,  # a claim, a drain begun, then a draft
    "draining_member_submits_plan": 5,  # a draft, the member lost, then its submission
    "inspect_treats_draining_as_lost": 10,
    "lapse_flags_other_task": 2,
    "decision_before_record": 4,
    "reconcile_wrong_decision_phase": 6,
    "review_after_deadline": 6,
    "start_before_delivery": 5,
    "review_refused_at_deadline": 3,  # the trace ends with the review taken before the deadline
    "begin_drain_refused_at_deadline": 2,
    "start_refused_at_deadline": 6,
    "request_message_expires_late": 8,  # requested, three ticks and passes, the late expiry last
    "monitor_expires_begun_drain_message": 7,  # requested, a drain cut short, the restart, two ticks and passes
    "timeout_recorded_as_expired": 6,
    "start_after_deadline": 9,  # approved and delivered, then the clock past the deadline, then the start
    "claim_drops_checkpoint": 5,
    "withdraw_without_reason": 3,
    "suspended_task_stuck": 6,
    "draining_member_runs_steps": 9,
    "draining_member_completes_run": 10,  # every step run, then the drain, then the completion
    "lapse_owes_before_flagging": 2,  # a claim, then the lapse
    "reconciled_submit_without_deadline": 4,  # a claim, a draft, its submit cut after the message, the restart
    "drain_forgets_waited": 5,  # a claim, a job, the request, the drain begun, the job asked
    "restart_keeps_shutdown": 5,
    "plan_start_ignores_incarnation": 12,
    "inspection_cancels_as_draining": 5,  # a draft plan, the lapse, its notice, the inspection
    "cancel_recorded_as_rejected": 3,  # a claim, the request, its cancel
    "drain_cancels_as_cancelled": 4,  # a claim, the request, the shutdown request, the drain begun
    "shutdown_deadline_from_claim": 4,  # a claim, a tick, its pass, the request
    "profile_removal_keeps_version": 1,  # the change itself
    "release_notes_before_task": 4,  # claim, request, begin, the release cut after its note
    "release_unnoted": 4,  # claim, request, begin, the release
    "run_completes_a_step_early": 8,  # to the plan's first step run, then its completion
    "release_drops_checkpoint": 4,  # claim, request, begin, the release
    "run_inherits_plan_deadline": 8,  # claim, draft, submit, approve, deliver, a tick and its pass, the start
}
"""The length (steps after the initial state) of each issue-19 mutant's shortest trace: breadth-first
search finds the shortest, so a change of it is a change of the model to review."""


def test_every_invariant_has_a_mutant() -> None:
    """INV-1 … INV-12 and every named predicate of spec.safety each have a mutant that must trip them."""
    from reference._mutants import MUTANTS as REFERENCE_MUTANTS
    from spec.clause_checks import EXPLORER_CHECKS
    from spec.invariants import INVARIANTS

    wanted = {inv.clause if inv.clause.startswith("INV-") else inv.name for inv in INVARIANTS}
    # Invariants of what the model abstracts away (the audit log) are tripped by reference mutants.
    assert all(name in REFERENCE_MUTANTS for names in REFERENCE_ONLY.values() for name in names)
    model_wanted = wanted - set(REFERENCE_ONLY)
    assert model_wanted <= {m.caught_by for m in MUTANTS.values()} <= model_wanted | EXPLORER_CHECKS


REFERENCE_ONLY = {
    "decisions_audited": ("expiry_not_audited", "reconcile_skips_audit", "plan_not_audited", "audit_clears_later_mark"),
    "members_hold_their_claims": ("claim_repair_only_running",),
    "audit_log_is_a_chain": ("audit_hash_omits_time",),
    "records_keep_their_status_events": ("review_event_saved_apart",),
}
"""Invariant → the reference mutants that trip it (``teamproto mutants``), where the model keeps no
record the invariant reads (AUD-5: the model abstracts the audit log away) or cannot reach the
state it judges: the model has one harness, which reconciles at once after a crash, so a claim cut
short never meets a drain begun by another instance before the reconciliation (REC-2;
``model_tests/test_interleave_crashes.py`` races two instances with a crash)."""


def test_mutants_are_named_checks_of_real_clauses() -> None:
    import spec
    from spec.clause_checks import EXPLORER_CHECKS
    from spec.invariants import INVARIANTS

    names = {inv.name for inv in INVARIANTS} | EXPLORER_CHECKS
    for mutant in MUTANTS.values():
        assert mutant.breaks in spec.CLAUSES and (mutant.caught_by in spec.CLAUSES or mutant.caught_by in names)
        assert set(mutant.also) <= names
        assert mutant.description


def test_every_named_guard_of_the_model_is_a_mutant() -> None:
    """A guard written as a named check (``checks = (("name", condition), ...)``, each removable by
    ``model.broken(name)``) is a guard only if removing it is caught: so every such name is a model
    mutant, which ``test_mutant_is_caught_by_its_invariant`` then explores. An outside review found
    two checks of consume (and plan.start's incarnation check) that no mutant removed, so no pinned
    configuration had to show that they decide anything (DESIGN rule 7, XPR-1, APR-5)."""
    import ast
    from pathlib import Path

    import spec.model

    named: dict[str, str] = {}
    for path in sorted(Path(spec.model.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "checks" for t in node.targets):
                assert isinstance(node.value, ast.Tuple), f"{path.name}:{node.lineno}: checks is not a tuple"
                for check in node.value.elts:
                    assert isinstance(check, ast.Tuple) and isinstance(check.elts[0], ast.Constant)
                    named[str(check.elts[0].value)] = f"{path.name}:{check.lineno}"
    assert named, "no named checks found: the model's guards moved; update this test"
    unnamed = {name: where for name, where in named.items() if name not in MUTANTS}
    assert unnamed == {}, f"named checks that no model mutant removes: {unnamed}"
