"""Crash before and after every write step of the approval operations, then restart and finish.

Clause: STO-1, REC-1, REC-2, REC-3, APR-8, MSG-6, INV-1, INV-6, INV-7.
After each crash a new harness is built over the same storage (a restart), reconciliation runs,
and the operation is retried with the same ids. The outcome must be exactly one call at most,
every invariant must hold, reconciling again must change nothing, and the audit chain must be
intact.
"""

from __future__ import annotations

import pytest

import reference as r
import spec
from spec import invariants
from tests.conftest import Team

ARGS = {"path": "srv/app"}


def finish_call(team: Team) -> str:
    """Request, approve and call — each step skipped when the stores say it is done."""
    h = team.harness
    pid = h.approvals.request(team.ctx(), "deploy", ARGS)
    if h.read("operation_approval", pid).doc["status"] == "requested":
        h.approvals.review("lead", pid, "approved")
    if h.read("operation_approval", pid).doc["status"] == "approved":
        h.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    return pid


def finish_cancel(team: Team) -> str:
    h = team.harness
    pid = h.approvals.request(team.ctx(), "deploy", ARGS)
    if h.read("operation_approval", pid).doc["status"] == "requested":
        h.approvals.cancel(team.ctx(), pid)
    return pid


@pytest.mark.clause("STO-1", "REC-1", "REC-2", "REC-3", "APR-8", "MSG-6", "INV-1", "INV-6", "INV-7")
@pytest.mark.parametrize("tool_fails", [False, True], ids=["tool-succeeds", "tool-fails"])
@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("step", r.APPROVAL_STEPS)
def test_crash_at_every_write_step_converges(team: Team, step: str, when: str, tool_fails: bool) -> None:
    """Crashed at a write step, restarted, the operation finished: at most one call, and the
    recorded outcome is the call's own — a failed call is never recovered as succeeded (APR-8:
    the outcome is looked up by key; an outside review's plant that recovered every call the tool
    remembered as succeeded passed when every tool here succeeded)."""
    scenario = finish_cancel if step.startswith("approval.cancel") else finish_call
    team.world.fail = tool_fails
    (team.storage.faults.crash_before if when == "before" else team.storage.faults.crash_after).add(step)
    with pytest.raises(r.Crash):
        scenario(team)
    assert team.storage.faults.fired == [(when, step)], "the armed step was never reached"
    team = team.restart()
    restarted = team.harness.snapshot()
    assert invariants.check_state(restarted) == [], "reconciliation alone must restore every invariant"
    pid = scenario(team)
    record = team.harness.read("operation_approval", pid).doc
    assert len(team.world.calls) <= 1
    if scenario is finish_call:
        assert record["status"] == "consumed"
        execution = team.harness.read("tool_execution", pid).doc
        ran = len(team.world.calls) == 1
        assert execution["status"] == ("succeeded" if ran and not tool_fails else "failed")
        assert execution["result"]["ok"] is (ran and not tool_fails)
    else:
        assert record["status"] == "cancelled" and team.world.calls == []
    snap = team.harness.snapshot()
    spec.validate_snapshot(snap)
    assert invariants.check_state(snap) == []
    team.harness.reconcile()
    assert team.harness.snapshot() == snap, "reconcile is not idempotent"
    assert r.verify_audit_log(team.storage).ok


def finish_reject(team: Team) -> str:
    h = team.harness
    pid = h.approvals.request(team.ctx(), "deploy", ARGS)
    if h.read("operation_approval", pid).doc["status"] == "requested":
        h.approvals.review("lead", pid, "rejected")
    return pid


REJECTION_STEPS = [step for step in r.APPROVAL_STEPS if step.startswith(("approval.request/", "approval.review/"))]


@pytest.mark.clause("STO-1", "REC-1", "REC-2", "REC-3", "MSG-6", "INV-7")
@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("step", REJECTION_STEPS)
def test_crash_in_a_rejection_converges_and_the_rejection_is_delivered(team: Team, step: str, when: str) -> None:
    """A rejection is a decision too: cut off at any write step and restarted, the approval ends
    ``rejected``, its one ``approval_decision`` saying so is on the bus (REC-3 re-sends it when the
    crash fell between the record and the message), nothing was called, and reconciling again
    changes nothing. (The crash matrix above approves every review it crashes: a reconciliation
    that re-sent approvals' decisions and not rejections' passed it.)"""
    (team.storage.faults.crash_before if when == "before" else team.storage.faults.crash_after).add(step)
    with pytest.raises(r.Crash):
        finish_reject(team)
    assert team.storage.faults.fired == [(when, step)], "the armed step was never reached"
    team = team.restart()
    assert invariants.check_state(team.harness.snapshot()) == [], "reconciliation alone must restore every invariant"
    pid = finish_reject(team)
    assert team.harness.read("operation_approval", pid).doc["status"] == "rejected" and team.world.calls == []
    snap = team.harness.snapshot()
    decisions = [
        m["message"]["body"]["decision"]
        for m in snap["message"]
        if m["message"]["message_type"] == "approval_decision" and m["message"]["body"]["protocol_id"] == pid
    ]
    assert decisions == ["rejected"], "the rejection must reach its requester once"
    assert invariants.check_state(snap) == []
    team.harness.reconcile()
    assert team.harness.snapshot() == snap, "reconcile is not idempotent"
    assert r.verify_audit_log(team.storage).ok


@pytest.mark.clause("APR-8")
def test_crash_after_the_call_is_looked_up_not_repeated(team: Team) -> None:
    """The call happened, its outcome was not recorded: recovery asks the tool by key."""
    team.storage.faults.crash_after.add("approval.consume/call")
    with pytest.raises(r.Crash):
        finish_call(team)
    assert len(team.world.calls) == 1
    team = team.restart()
    pid = finish_call(team)
    assert len(team.world.calls) == 1
    assert team.harness.read("tool_execution", pid).doc["status"] == "succeeded"


@pytest.mark.clause("REC-1", "REC-2", "TSK-1")
@pytest.mark.parametrize(
    ("step", "holds"), [("task.claim/task", "t2"), ("task.finish/task", None)], ids=["claim", "finish"]
)
def test_a_crash_between_the_writes_of_a_claim_is_repaired_from_the_task(
    team: Team, step: str, holds: str | None
) -> None:
    """The task record is written first; after a crash before the member's write, reconciliation
    sets the member's current task from the task it holds (found by random walks of the model
    replayed on the reference: the reference used to leave the member empty-handed)."""
    h = team.harness
    h.finish_task("m0", "t0", "completed", h.read("task", "t0").doc["claim_token"])
    h.add_task("t2")
    token = h.claim("m0", "t2") if step == "task.finish/task" else ""
    team.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        if step == "task.claim/task":
            h.claim("m0", "t2")
        else:
            h.finish_task("m0", "t2", "completed", token)
    team = team.restart()
    assert team.harness.read("member", "m0").doc["current_task_id"] == holds
    snap = team.harness.snapshot()
    team.harness.reconcile()
    assert team.harness.snapshot() == snap, "reconcile is not idempotent"
