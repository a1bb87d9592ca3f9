"""A shutdown request in force, status by status (MEM-1, INV-2, REC-2, SHD-10).

"In force" is one set, the shutdown machine's states no edge ends (``spec.open_states``), read by
the INV-2 check, the model, the reference's claim (check and write guard) and its
reconciliation. An outside review dropped ``timed_out`` from the reference's claim set, from the
invariant's, and ``completed`` from reconciliation's valid drains: no test failed, since every
example and mutant reached those sets through ``requested`` alone. Here each status of the machine
is tried, against expectations written out from the protocol (never read back from the sets).
"""

from __future__ import annotations

from typing import Any

import pytest

import reference as r
from reference import Storage, _recovery
from spec import invariants, machine_table
from spec.ids import message_id
from tests.test_team import Team

STATUSES = machine_table("shutdown_request").states
IN_FORCE = {"requested": True, "draining": True, "timed_out": True, "completed": False, "cancelled": False,
            "expired": False}  # fmt: skip
"""MEM-1, SHD-6, SHD-7: a request binds its member from the request until it is completed,
cancelled or expired; a timed-out drain still binds it (the Lead's ladder is not over)."""

A_DRAIN_STANDS = {**IN_FORCE, "completed": True}
"""REC-2, SHD-10: a draining member whose request is in force, or completed (its member not yet
stopped: the finish's second write is still to come), drains validly; under any other it is lost."""


def test_every_status_is_judged_and_the_sets_agree() -> None:
    assert set(IN_FORCE) == set(STATUSES) == set(A_DRAIN_STANDS)
    assert set(invariants.ACTIVE_SHUTDOWN) == {s for s, binding in IN_FORCE.items() if binding}


def _as(storage: Storage, pid: str, status: str) -> None:
    row = storage.read("shutdown_request", pid)
    assert row is not None
    doc: dict[str, Any] = {**row.doc, "status": status}
    if status in ("cancelled", "expired"):
        doc["reason"] = "cancelled" if status == "cancelled" else "expired"
    storage.update("test/status", "shutdown_request", pid, doc, row.version)


@pytest.mark.clause("MEM-1", "INV-2")
@pytest.mark.parametrize("status", STATUSES)
def test_a_running_member_claims_exactly_when_no_request_for_it_is_in_force(storage: Storage, status: str) -> None:
    """The request's status alone differs: the member is running and accepting in every case, as
    after a drain cut short before its member write and timed out by the monitor since."""
    team = Team(storage).setup()
    pid = team.request("m0")
    _as(storage, pid, status)
    assert (team.member("m0")["status"], team.member("m0")["accepting_new_tasks"]) == ("running", True)
    if IN_FORCE[status]:
        with pytest.raises(r.ClaimRefused):
            team.h.claim("m0", "t0")
        assert team.task("t0")["status"] == "pending"
    else:
        team.h.claim("m0", "t0")
        assert team.task("t0")["owner_id"] == "m0"


def _claim_beside(status: str) -> tuple[dict[str, Any], dict[str, Any]]:
    member = {"member_id": "m0", "status": "running", "incarnation": 1, "accepting_new_tasks": True}
    request = {"protocol_id": "sd-1", "status": status, "target_id": "m0", "target_incarnation": 1}
    before = {"member": [member], "shutdown_request": [request],
              "task": [{"task_id": "t0", "status": "pending", "claim_token": None}]}  # fmt: skip
    after = {**before, "task": [{"task_id": "t0", "status": "claimed", "claim_token": "c1", "owner_id": "m0"}]}
    return before, after


@pytest.mark.clause("INV-2", "MEM-1")
@pytest.mark.parametrize("status", STATUSES)
def test_the_claim_check_names_a_claim_exactly_under_a_request_in_force(status: str) -> None:
    problems = invariants.claims_only_by_eligible_members(*_claim_beside(status))
    assert bool(problems) == IN_FORCE[status], problems


@pytest.mark.clause("REC-2", "SHD-10")
@pytest.mark.parametrize("status", STATUSES)
def test_reconciliation_reports_a_draining_member_lost_exactly_when_its_request_no_longer_stands(
    storage: Storage, status: str
) -> None:
    """Reconciliation's member row (``_recovery._members``) on its own: the request's row is
    another live instance's to finish (REC-4), as between a finish's two writes."""
    team = Team(storage).setup()
    pid = team.drain("m0")
    _as(storage, pid, status)
    _recovery._members(team.h)
    assert team.member("m0")["status"] == ("draining" if A_DRAIN_STANDS[status] else "unhealthy")


@pytest.mark.clause("MEM-1", "SHD-6", "REC-4")
def test_a_drain_cut_short_and_timed_out_by_another_process_still_refuses_the_members_claim(storage: Storage) -> None:
    """The path to ``timed_out`` with the member still running, taken for real: the drain dies
    after its request write, the Lead's process (another harness over the store) times the request
    out before any reconciliation, and the member's claim is refused (the outside review's case)."""
    team = Team(storage).setup()
    pid = team.request("m0")
    storage.faults.crash_after.add("shutdown.begin_drain/record")
    with pytest.raises(r.Crash):
        team.h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    storage.faults.crash_after.clear()
    lead = Team(storage, team.clock)
    team.clock.advance(11)
    lead.h.monitor_pass()
    assert (lead.h.shutdowns.require(pid).doc["status"], lead.member("m0")["status"]) == ("timed_out", "running")
    with pytest.raises(r.ClaimRefused):
        lead.h.claim("m0", "t0")
    assert invariants.check_state(lead.h.snapshot()) == []


MEMBER_STATUSES = ("running", "draining", "stopped", "unhealthy")
_ = None  # the request's or the member's status as it was
RECONCILED = {  # REC-2's shutdown rows: (request, member) after reconciliation, for the member's own incarnation
    "requested": dict.fromkeys(MEMBER_STATUSES, (_, _)),  # its message delivered again; nothing moves
    "draining": {"running": (_, "draining"), "draining": (_, _), "stopped": ("completed", _), "unhealthy": (_, _)},
    "timed_out": {"running": (_, "draining"), "draining": (_, _), "stopped": ("completed", _), "unhealthy": (_, _)},
    "completed": {"running": (_, _), "draining": (_, "stopped"), "stopped": (_, _), "unhealthy": (_, _)},
    "cancelled": dict.fromkeys(MEMBER_STATUSES, (_, _)),
    "expired": dict.fromkeys(MEMBER_STATUSES, (_, _)),
}
"""SHD-2's member half finished, a stopped member's drain completed, a completed drain's member
stopped; the Lead's ladder, not reconciliation, ends an unhealthy member's drain (SHD-7)."""

RECONCILED_OLDER = {"draining": "completed", "timed_out": "completed"}
"""XPR-1, INV-12: a request for an incarnation restarted since is over once its drain began (its
incarnation has stopped); the new incarnation is never touched."""


@pytest.mark.clause("REC-2", "SHD-2", "SHD-5", "XPR-1")
@pytest.mark.parametrize("older", [False, True], ids=["same-incarnation", "restarted-since"])
@pytest.mark.parametrize("member", MEMBER_STATUSES)
@pytest.mark.parametrize("status", STATUSES)
def test_reconciliations_shutdown_rows_status_by_status(
    storage: Storage, status: str, member: str, older: bool
) -> None:
    """Reconciliation's request rows (``_recovery._shutdowns``) for each request status beside each
    member status, the member drained for that request (an outside review dropped ``timed_out``
    from the stopped member's row and only one conformance vector noticed)."""
    team = Team(storage).setup()
    pid = team.request("m0")
    _as(storage, pid, status)
    row = storage.read("member", "m0")
    assert row is not None
    doc = {**row.doc, "status": member, "accepting_new_tasks": member == "running",
           "shutdown_request_id": None if member == "running" else pid,
           "incarnation": 2 if older else 1}  # fmt: skip
    storage.update("test/status", "member", "m0", doc, row.version)
    _recovery._shutdowns(team.h, _recovery.Owners(storage))
    request, after = team.h.shutdowns.require(pid).doc["status"], team.member("m0")["status"]
    if older:
        assert (request, after) == (RECONCILED_OLDER.get(status, status), member)
    else:
        want_request, want_member = RECONCILED[status][member]
        assert (request, after) == (want_request or status, want_member or member)
