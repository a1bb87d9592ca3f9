"""Two status sets of the safety checks, status by status, each read from its machine rather than
from the check (SHD-4, SHD-7, SHD-10): a busy job (``BUSY_JOB``) and a live task owner
(``LIVE_MEMBER``). A sweep that dropped one member of such a set at a time found these two passing
every test and ``teamproto check``: the model mutants reach each check through one status only.
"""

from __future__ import annotations

from typing import Any

import pytest

from spec import _tables, safety


def _statuses(machine: str) -> list[str]:
    return sorted({e.source for e in _tables.edges(machine)} | {e.target for e in _tables.edges(machine)})


JOB_STATUSES = _statuses("job")
MEMBER_STATUSES = _statuses("member")
BUSY = {status for status in JOB_STATUSES if status not in _tables.final_states("job")}
"""A job not yet ended may still run: asking it to cancel is not its having stopped (SHD-3)."""
LIVE = {"running", "draining"}
"""MEM-2, SHD-10: the statuses in which a member's incarnation still works (neither lost nor ended)."""


def test_the_sets_are_what_the_machines_say() -> None:
    assert BUSY == {"running", "cancel_requested"} == set(safety.BUSY_JOB)
    assert set(safety.LIVE_MEMBER) == LIVE
    assert LIVE.issubset(MEMBER_STATUSES) and set(MEMBER_STATUSES) != LIVE


@pytest.mark.clause("SHD-4", "SHD-3", "JOB-1")
@pytest.mark.parametrize("job", JOB_STATUSES)
def test_a_task_out_of_its_owners_hands_beside_a_busy_job_is_named(job: str) -> None:
    """A released task (``pending``) whose job is in ``job``: named exactly when the job may still run."""
    snap = {
        "task": [{"task_id": "t0", "status": "pending"}],
        "job": [{"job_id": "j0", "task_id": "t0", "status": job}],
    }
    assert bool(safety.task_leaves_owner_after_jobs_settle(snap)) is (job in BUSY)


def _members(status: str) -> list[dict[str, Any]]:
    return [{"member_id": "m0", "incarnation": 1, "status": status}]


@pytest.mark.clause("SHD-7", "SHD-10")
@pytest.mark.parametrize("owner", MEMBER_STATUSES)
def test_a_task_leaves_inspection_only_when_its_owner_was_lost(owner: str) -> None:
    """A task going ``needs_inspection`` → ``pending`` while its owner's incarnation is in ``owner``
    is named exactly when that owner still works."""
    task = {"task_id": "t0", "owner_id": "m0", "owner_incarnation": 1}
    before = {"task": [{**task, "status": "needs_inspection"}], "member": _members(owner), "shutdown_request": []}
    after = {**before, "task": [{**task, "status": "pending"}]}
    assert bool(safety.task_flagged_only_for_its_lost_owner(before, after)) is (owner in LIVE)


@pytest.mark.clause("SHD-7", "SHD-10")
@pytest.mark.parametrize("owner", MEMBER_STATUSES)
def test_a_task_is_flagged_only_when_its_owner_is_lost(owner: str) -> None:
    """A task going ``claimed`` → ``needs_inspection`` while its owner (no drain forced) is in
    ``owner`` after the step is named exactly when that owner still works."""
    task = {"task_id": "t0", "owner_id": "m0", "owner_incarnation": 1}
    before = {"task": [{**task, "status": "claimed"}], "member": _members(owner), "shutdown_request": []}
    after = {**before, "task": [{**task, "status": "needs_inspection"}]}
    assert bool(safety.task_flagged_only_for_its_lost_owner(before, after)) is (owner in LIVE)


def _schema_reasons() -> list[str]:
    """XPR-5's taxonomy as the record schemas publish it (the contract), not as the check holds it."""
    from spec.schemas import RECORD_SCHEMAS

    enums = {
        tuple(r for r in RECORD_SCHEMAS[kind]["properties"]["reason"]["enum"] if r is not None)
        for kind in ("operation_approval", "plan_approval", "shutdown_request")
    }
    assert len(enums) == 1, f"the request kinds publish different taxonomies: {enums}"
    return list(enums.pop())


@pytest.mark.clause("XPR-5")
@pytest.mark.parametrize("reason", [*_schema_reasons(), "killed", "", None])
def test_a_cancelled_request_carries_any_reason_of_the_taxonomy_and_no_other(reason: str | None) -> None:
    """Reason by reason: a ``cancelled`` request (an outcome the taxonomy does not name by itself)
    may carry any reason the schemas publish but those an outcome names by itself (``rejected``,
    ``expired``, ``timed_out``: a cancelled request was not rejected, nor did it expire), and is
    named for any other. The status-set sweep found ``force_killed`` droppable from the check's set
    with every test passing (no operation records it yet)."""
    snap: dict[str, Any] = {kind: [] for kind in ("operation_approval", "plan_approval", "shutdown_request")}
    snap["shutdown_request"] = [{"protocol_id": "sd-0", "status": "cancelled", "reason": reason}]
    named = bool(safety.terminal_outcomes_carry_reasons(snap))
    assert named is (reason not in _schema_reasons() or reason in ("rejected", "expired", "timed_out"))


@pytest.mark.clause("SHD-3", "MSG-6")
@pytest.mark.parametrize(
    ("status", "owner", "incarnation", "named"),
    [
        ("claimed", "m0", 1, True),  # the release never wrote the task
        ("needs_inspection", "m0", 1, True),  # flagged by the Lead before any release (SHD-7)
        ("suspended", "m0", 1, True),
        ("completed", "m0", 1, True),
        ("pending", None, None, False),  # released
        ("claimed", "m1", 1, False),  # released, then claimed by another member
        ("needs_inspection", "m1", 1, False),
        ("claimed", "m0", 2, False),  # released, then claimed by a later incarnation of m0
        ("failed", None, None, False),
    ],
)
def test_a_request_names_as_released_only_a_task_its_member_let_go(
    status: str, owner: str | None, incarnation: int | None, named: bool
) -> None:
    """``released_task_left_its_member``, case by case: a request of m0's incarnation 1 that names
    t0 as released is named exactly when t0 is still held by that very incarnation, whatever its
    status (an outside review's plant that judged ``claimed`` alone passed every other test)."""
    snap = {
        "task": [{"task_id": "t0", "status": status, "owner_id": owner, "owner_incarnation": incarnation}],
        "shutdown_request": [
            {
                "protocol_id": "sd-0",
                "status": "completed",
                "target_id": "m0",
                "target_incarnation": 1,
                "released_task_id": "t0",
            },
            {
                "protocol_id": "sd-1",
                "status": "draining",
                "target_id": "m0",
                "target_incarnation": 1,
                "released_task_id": None,
            },
        ],
    }
    assert len(safety.released_task_left_its_member(snap)) == int(named)


# The expectations below are the protocol's, written out here status by status: each table is
# this test's own statement, never the check's set read back (the 2026-12-05 sweep of
# ``spec/safety.py``'s sets found each of these members droppable with every fast test passing).

OUT_OF_HAND = {"pending": True, "suspended": True, "completed": True, "claimed": False}
OUT_OF_HAND |= {"needs_inspection": False, "failed": True}
"""SHD-4, SHD-9, SHD-3: a task released, suspended or ended (completed or failed) is out of its
owner's hands; a claimed one is still its owner's, a flagged one the Lead's inspection's (which
kills its jobs before it fails or frees the task). A failed task beside a running job was not named
until an outside review's plant let a member finish beside its job: the completed half was caught,
the failed half was not."""


@pytest.mark.clause("SHD-4", "SHD-9", "JOB-1")
@pytest.mark.parametrize("task", _statuses("task"))
def test_a_busy_job_beside_its_task_is_named_status_by_status(task: str) -> None:
    """``task_leaves_owner_after_jobs_settle``: a task in ``task`` with a job still running is named
    exactly when the task is out of its owner's hands."""
    snap = {
        "task": [{"task_id": "t0", "status": task}],
        "job": [{"job_id": "j0", "task_id": "t0", "status": "running"}],
    }
    assert set(OUT_OF_HAND) == set(_statuses("task"))
    assert bool(safety.task_leaves_owner_after_jobs_settle(snap)) is OUT_OF_HAND[task]


HELD = {"claimed": True, "suspended": True}
"""REC-2, SHD-9: the statuses in which a task its member names is still that member's."""


@pytest.mark.clause("REC-2", "TSK-1", "SHD-9")
@pytest.mark.parametrize("task", _statuses("task"))
def test_a_member_naming_its_own_task_is_named_unless_it_holds_it(task: str) -> None:
    """``members_hold_their_claims``: a running m0 naming t0, owned by m0's incarnation, in ``task``:
    named exactly when that status is not one in which m0 holds it."""
    snap = {
        "member": [{"member_id": "m0", "incarnation": 1, "status": "running", "current_task_id": "t0"}],
        "task": [{"task_id": "t0", "status": task, "owner_id": "m0", "owner_incarnation": 1}],
    }
    assert bool(safety.members_hold_their_claims(snap)) is not HELD.get(task, False)


@pytest.mark.clause("REC-2", "SHD-2")
@pytest.mark.parametrize("member", MEMBER_STATUSES)
def test_a_member_in_each_status_naming_a_task_it_does_not_hold_is_named_while_it_works(member: str) -> None:
    """``members_hold_their_claims`` judges a member that still works (running, or draining: a drain
    is exactly where a claim cut short must have been repaired, REC-2), and no other: m0 in
    ``member`` naming a pending task, and m0 holding no task while t0 is claimed by it, are named
    exactly when m0 is live (an outside review judged running members only, and no test failed)."""
    names = {
        "member": [{"member_id": "m0", "incarnation": 1, "status": member, "current_task_id": "t0"}],
        "task": [{"task_id": "t0", "status": "pending", "owner_id": None, "owner_incarnation": None}],
    }
    holds_none = {
        "member": [{"member_id": "m0", "incarnation": 1, "status": member, "current_task_id": None}],
        "task": [{"task_id": "t0", "status": "claimed", "owner_id": "m0", "owner_incarnation": 1}],
    }
    for snap in (names, holds_none):
        assert bool(safety.members_hold_their_claims(snap)) is (member in LIVE)


AFTER_DELIVERY = {"approved", "consumed", "withdrawn", "expired"}
"""PLN-6: what an approved plan may become once its decision was delivered: run, withdrawn by its
requester, or past its deadline; never pending, rejected or back to a draft."""


@pytest.mark.clause("PLN-6")
@pytest.mark.parametrize("plan", _statuses("plan_approval"))
def test_a_delivered_plan_is_named_in_any_status_a_retraction_gives(plan: str) -> None:
    """``retraction_only_before_delivery``: a plan delivered and now in ``plan`` is named exactly
    when no delivered plan may be in that status."""
    before = {"plan_approval": [{"protocol_id": "p0", "status": "approved", "decision_delivered": True}]}
    after = {"plan_approval": [{"protocol_id": "p0", "status": plan, "decision_delivered": True}]}
    assert bool(safety.retraction_only_before_delivery(before, after)) is (plan not in AFTER_DELIVERY)


APPROVAL_SAYS = {"approved": {"approved", "consumed", "cancelled", "expired"}, "rejected": {"rejected"}}
"""MSG-6: an approval a decision message says is approved may since have been consumed, cancelled
or expired; one it says is rejected stays rejected."""


@pytest.mark.clause("MSG-6", "APR-5")
@pytest.mark.parametrize("decision", sorted(APPROVAL_SAYS))
@pytest.mark.parametrize("approval", _statuses("operation_approval"))
def test_an_approval_decision_disagrees_with_its_record_status_by_status(decision: str, approval: str) -> None:
    snap = {
        "operation_approval": [{"protocol_id": "a0", "status": approval}],
        "message": [{"status": "delivered", "message": _decision("approval_decision", "a0", decision=decision)}],
        "outbox_entry": [],
    }
    assert bool(safety._approval_decisions_agree(snap)) is (approval not in APPROVAL_SAYS[decision])


PLAN_SAYS = {"approved": AFTER_DELIVERY, "rejected": {"rejected"}, "needs_revision": {"needs_revision"}}


@pytest.mark.clause("MSG-6", "PLN-6")
@pytest.mark.parametrize("decision", sorted(PLAN_SAYS))
@pytest.mark.parametrize("plan", _statuses("plan_approval"))
def test_a_live_plan_decision_disagrees_with_its_record_status_by_status(decision: str, plan: str) -> None:
    snap = {
        "plan_approval": [{"protocol_id": "p0", "status": plan, "decision_delivered": True}],
        "message": [
            {"status": "delivered", "message": _decision("plan_decision", "p0", decision=decision, sequence=0)}
        ],
        "outbox_entry": [],
    }
    assert bool(safety._plan_decisions_agree(snap)) is (plan not in PLAN_SAYS[decision])


def _decision(kind: str, pid: str, **body: object) -> dict[str, Any]:
    return {"message_type": kind, "correlation_id": pid, "message_id": f"{pid}-decision", "body": body}


DECIDED = ("operation_approval", "plan_approval", "shutdown_request")
NEEDS_REASON = {"rejected", "cancelled", "expired", "withdrawn", "timed_out"}
"""XPR-5: the outcomes other than success; ``NAMED`` are those the taxonomy names by themselves."""
NAMED = {"rejected", "expired", "timed_out"}


@pytest.mark.clause("XPR-5")
@pytest.mark.parametrize(
    ("kind", "status"),
    [
        (kind, status)
        for kind in ("operation_approval", "plan_approval", "shutdown_request")
        for status in _statuses(kind)
    ],
)
def test_an_outcome_without_its_reason_is_named_status_by_status(kind: str, status: str) -> None:
    """``terminal_outcomes_carry_reasons``, per status of each decided record: with no reason it is
    named exactly when the status is an outcome other than success; with a reason of the taxonomy
    that is not its own (``superseded``) exactly when the taxonomy names the status by itself; with
    its own status as the reason, where that is a reason, never."""

    def named(reason: str | None) -> bool:
        snap: dict[str, Any] = {k: [] for k in DECIDED}
        snap[kind] = [{"protocol_id": "r0", "status": status, "reason": reason}]
        return bool(safety.terminal_outcomes_carry_reasons(snap))

    assert named(None) is (status in NEEDS_REASON)
    assert named("superseded") is (status in NAMED)
    if status in _schema_reasons():
        assert not named(status)


FINISHES = [("claimed", "completed"), ("claimed", "failed"), ("needs_inspection", "failed")]


@pytest.mark.clause("MEM-3", "SHD-3", "SHD-7")
@pytest.mark.parametrize("member", MEMBER_STATUSES)
@pytest.mark.parametrize(("was", "now"), FINISHES)
def test_a_task_finished_by_a_member_not_running_is_named(member: str, was: str, now: str) -> None:
    """``stopped_member_acts_not``: m0's claimed task finished while m0 was in ``member`` is named
    exactly when m0 was not running (MEM-3: a draining member stops between two steps; SHD-3: a
    drain releases the task, never completes it to get out); a flagged task failed by the Lead's
    inspection is not m0's act (found by ``scripts/model_guards.py``: the finish's running guard
    dropped moved only the pinned counts)."""
    member_row = {"member_id": "m0", "incarnation": 1, "status": member}
    empty: dict[str, list[Any]] = {"operation_approval": [], "plan_approval": [], "plan_execution": [], "job": []}
    task = {"task_id": "t0", "owner_id": "m0", "owner_incarnation": 1}
    before = {**empty, "member": [member_row], "task": [{**task, "status": was}]}
    after = {**empty, "member": [member_row], "task": [{**task, "status": now}]}
    named = bool(safety.stopped_member_acts_not(before, after))
    assert named is (member != "running" and was == "claimed")
