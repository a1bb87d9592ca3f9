"""Two status sets of the safety checks, status by status, each read from its machine rather than
from the check (SHD-4, SHD-7, SHD-10): a busy job (``BUSY_JOB``) and a live task owner
(``LIVE_MEMBER``). A sweep that dropped one member of such a set at a time found these two passing
every test and ``teamproto check``: the model mutants reach each check through one status only.
"""

from __future__ import annotations

from typing import Any

import pytest

from spec import _tables, safety

JOB_STATUSES = sorted({edge.source for edge in _tables.edges("job")} | {e.target for e in _tables.edges("job")})
MEMBER_STATUSES = sorted({e.source for e in _tables.edges("member")} | {e.target for e in _tables.edges("member")})
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
    may carry any reason the schemas publish, and is named for any other. The status-set sweep
    found ``force_killed`` droppable from the check's set with every test passing (no operation
    records it yet)."""
    snap: dict[str, Any] = {kind: [] for kind in ("operation_approval", "plan_approval", "shutdown_request")}
    snap["shutdown_request"] = [{"protocol_id": "sd-0", "status": "cancelled", "reason": reason}]
    named = bool(safety.terminal_outcomes_carry_reasons(snap))
    assert named is (reason not in _schema_reasons())


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
