"""Every clause of :data:`spec.CLAUSES`, and what checks it (issue 19).

A clause that promises something about the protocol's states or steps names the predicates that
check it: invariants of :data:`spec.invariants.INVARIANTS` (by name) or the explorer's own checks
(:data:`EXPLORER_CHECKS`). Where the promise is kept by a guard of the model rather than stated
as a predicate, the entry names that guard and a model mutant that removes it, and some predicate
catches the mutant — the proof that the argument holds. A clause that promises nothing a
snapshot can show (a hashing rule, a storage format, a runtime signal) is in :data:`NOT_OF_STATES`
with the reason and the test that checks it instead. ``tests/test_clause_checks.py`` fails when a
clause is in neither table, or an entry names a check, guard, mutant or test that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

EXPLORER_CHECKS: Final = frozenset(
    {
        "reconcile_is_idempotent",
        "no_deadlock",
        "every_request_can_finish",
        "no_cycle_avoids_finish",
        "deadline_is_the_last_instant",
        "deadline_boundaries_reached",
        "world_agrees_with_executions",
    }
)
"""Checks the explorer runs besides the invariants (see :mod:`spec.explore`)."""


@dataclass(frozen=True)
class Checked:
    predicates: tuple[str, ...]
    guard: str = ""  # "module:function" of the model guard that keeps the promise, if a guard does
    mutant: str = ""  # the model mutant that removes that guard; a predicate above must catch it


_C = Checked
_AFTER_RECONCILE = ("owed_messages_present", "shutdown_completed_iff_member_stopped", "messages_agree_with_records")

_CHECKS: dict[str, Checked] = {
    "STO-1": _C((*_AFTER_RECONCILE, "reconcile_is_idempotent")),
    "STO-2": _C(("retry_creates_no_duplicate",)),
    "MSG-1": _C(("messages_agree_with_records", "expiry_only_after_deadline")),
    "MSG-3": _C(("stale_incarnation_changes_nothing", "transitions_follow_tables")),
    "MSG-4": _C(("retry_creates_no_duplicate", "messages_agree_with_records")),
    "MSG-5": _C(("retry_creates_no_duplicate", "messages_agree_with_records")),
    "MSG-6": _C(("messages_agree_with_records", "owed_messages_present")),
    "APR-1": _C(
        (
            "approval_consumed_at_most_once",
            "work_binds_a_held_task",
            "deadline_runs_from_submission",
            "requests_created_within_their_step",
        )
    ),
    "APR-4": _C(("decisions_only_before_deadline", "no_secret_stored", "deadline_boundaries_reached")),
    "APR-5": _C(
        (
            "approval_consumed_at_most_once",
            "approval_grants_no_capability",
            "expiry_only_after_deadline",
            "stopped_member_acts_not",
            "deadline_boundaries_reached",
        )
    ),
    "APR-6": _C(("approval_consumed_at_most_once", "world_agrees_with_executions")),
    "APR-7": _C(("approval_grants_no_capability",)),
    "APR-8": _C(("approval_consumed_at_most_once", "world_agrees_with_executions", "consumed_calls_have_outcomes")),
    "APR-9": _C(("transitions_follow_tables",), "spec.model._ops:approval_ops", "cancel_after_consume"),
    "PLN-2": _C(("messages_agree_with_records",)),
    "PLN-3": _C(("plan_starts_only_after_delivery",)),
    "PLN-4": _C(("plan_executes_once_and_only_approved_steps", "completed_run_ran_every_step")),
    "PLN-5": _C(
        (
            "plan_executes_once_and_only_approved_steps",
            "requests_final_by_deadline",
            "expiry_only_after_deadline",
            "plan_starts_only_before_deadline",
            "deadline_boundaries_reached",
            "deadline_runs_from_submission",
        )
    ),
    "PLN-6": _C(("retraction_only_before_delivery", "messages_agree_with_records")),
    "PLN-7": _C(("plan_executes_once_and_only_approved_steps",)),
    "PLN-8": _C(("transitions_follow_tables",)),
    "PLN-9": _C(
        (
            "run_starts_within_its_step",
            "requests_final_by_deadline",
            "every_request_can_finish",
            "no_cycle_avoids_finish",
            "deadline_is_the_last_instant",
        )
    ),
    "PLN-10": _C(("owed_messages_present", "messages_agree_with_records")),
    "PLN-11": _C(("transitions_follow_tables", "stopped_member_acts_not")),
    "MEM-1": _C(("claims_only_by_eligible_members", "draining_member_accepts_nothing")),
    "MEM-3": _C(("stopped_member_acts_not",)),
    "SHD-1": _C(
        (
            "owed_messages_present",
            "messages_agree_with_records",
            "deadline_runs_from_submission",
            "requests_created_within_their_step",
        )
    ),
    "SHD-2": _C(
        (
            "claims_only_by_eligible_members",
            "draining_member_accepts_nothing",
            "decisions_only_before_deadline",
            "stale_incarnation_changes_nothing",
            "deadline_boundaries_reached",
        )
    ),
    "SHD-3": _C(
        (
            "release_only_after_jobs_settle",
            "task_leaves_owner_after_jobs_settle",
            "released_task_left_its_member",
            "released_task_has_checkpoint",
            "asked_jobs_are_waited_for",
            "release_noted_on_its_request",
        )
    ),
    "SHD-4": _C(("task_leaves_owner_after_jobs_settle", "non_cancellable_job_never_signalled")),
    "SHD-5": _C(("shutdown_completed_iff_member_stopped", "owed_messages_present", "messages_agree_with_records")),
    "SHD-6": _C(
        (
            "requests_final_by_deadline",
            "expiry_only_after_deadline",
            "deadline_is_the_last_instant",
            "deadline_boundaries_reached",
        )
    ),
    "SHD-7": _C(
        ("task_flagged_only_for_its_lost_owner", "shutdown_completed_iff_member_stopped", "every_request_can_finish")
    ),
    "SHD-9": _C(("task_leaves_owner_after_jobs_settle", "transitions_follow_tables", "owed_messages_present")),
    "SHD-10": _C(
        (
            "task_flagged_only_for_its_lost_owner",
            "lost_notice_names_its_flagged_tasks",
            "owed_messages_present",
            "every_request_can_finish",
        )
    ),
    "TSK-3": _C(("checkpoint_never_lost", "released_task_has_checkpoint")),
    "JOB-1": _C(
        (
            "task_leaves_owner_after_jobs_settle",
            "release_only_after_jobs_settle",
            "transitions_follow_tables",
            "asked_jobs_are_waited_for",
        )
    ),
    "JOB-2": _C(("non_cancellable_job_never_signalled",)),
    "XPR-1": _C(("stale_incarnation_changes_nothing", "restart_raises_incarnation")),
    "XPR-2": _C(("stopped_member_acts_not", "requests_final_by_deadline", "every_request_can_finish")),
    "XPR-4": _C(("approval_grants_no_capability", "profile_changes_raise_version")),
    "XPR-5": _C(("terminal_outcomes_carry_reasons", "reasons_name_their_causes")),
    "REC-1": _C(("reconcile_is_idempotent",)),
    "REC-2": _C(
        (*_AFTER_RECONCILE, "members_hold_their_claims", "consumed_calls_have_outcomes", "every_request_can_finish")
    ),
    "REC-3": _C(("owed_messages_present", "messages_agree_with_records")),
    "AUD-3": _C(("no_secret_stored",)),
    "INV-1": _C(("approval_consumed_at_most_once",)),
    "INV-2": _C(("claims_only_by_eligible_members",)),
    "INV-3": _C(("transitions_follow_tables",)),
    "INV-4": _C(("shutdown_completed_iff_member_stopped",)),
    "INV-5": _C(("release_only_after_jobs_settle",)),
    "INV-6": _C(("retry_creates_no_duplicate",)),
    "INV-7": _C(("owed_messages_present", "reconcile_is_idempotent")),
    "INV-8": _C(("plan_executes_once_and_only_approved_steps",)),
    "INV-9": _C(("approval_grants_no_capability",)),
    "INV-10": _C(("no_secret_stored",)),
    "INV-11": _C(("stale_incarnation_changes_nothing",)),
    "AUD-1": _C(("records_keep_their_status_events",)),
    "AUD-5": _C(("decisions_audited", "audit_log_is_a_chain")),
    "INV-12": _C(("requests_final_by_deadline", "no_deadlock", "every_request_can_finish", "no_cycle_avoids_finish")),
}

CLAUSE_CHECKS: Final = MappingProxyType(_CHECKS)
"""Clause id → the named checks of its promise about states or steps."""

_NOT: dict[str, tuple[str, str]] = {
    "STO-3": ("a storage format: atomic files, torn records reported", "tests/test_storage_contract.py"),
    "STO-4": ("a deployment rule: compare-and-set across processes", "tests/test_storage_contract.py"),
    "MSG-2": ("schema validation of one message", "tests/test_schemas.py"),
    "MSG-7": ("the list of message types: the schemas", "tests/test_schemas.py"),
    "APR-2": ("a hashing rule for one call's arguments", "tests/test_approval.py"),
    "APR-3": ("which fields the harness injects: the reference's tool surface", "tests/test_approval.py"),
    "PLN-1": ("the fields of one plan request: its JSON Schema", "tests/test_schemas.py"),
    "MEM-2": ("safe points of a running thread; every model operation is one", ""),
    "MEM-4": ("an architecture rule: long commands are jobs (the model has only jobs)", ""),
    "SHD-8": ("process signals of a runtime; the model has no processes", ""),
    "TSK-1": (
        "who acted is not in a snapshot: the model's guard is Model.holds, the reference's token check is tested",
        "tests/test_approval_crashes.py",
    ),
    "TSK-2": ("what a checkpoint may hold: serialisable business state", ""),
    "REC-4": (
        "which instance writes the work in flight, and whether its process lives, is not in a snapshot: the "
        "model has one process, which a crash kills; two instances are raced by the interleaving explorer",
        "model_tests/test_interleave.py",
    ),
    "REC-5": (
        "a crash between two writes of the monitor's pass, one step of the model with no crash point inside "
        "it: the reference is killed after each of the pass's writes and must restart to the whole pass",
        "model_tests/test_monitor_pass_crashes.py",
    ),
    "XPR-3": ("a failing store or hook refuses: the reference's error paths", "tests/test_approval.py"),
    "AUD-2": ("what the audit trail stores, abstracted away by the model", "tests/test_approval.py"),
    "AUD-4": ("the names of the agent-facing tools", "tests/test_approval.py"),
}

NOT_OF_STATES: Final = MappingProxyType(_NOT)
"""Clause id → (why no snapshot predicate can check it, the test that checks it instead or "")."""

__all__ = ["CLAUSE_CHECKS", "EXPLORER_CHECKS", "NOT_OF_STATES", "Checked"]
