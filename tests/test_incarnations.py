"""Fencing by incarnation (XPR-1, INV-11): after a real restart, a caller that still holds the
older incarnation's context changes nothing, whatever the operation; and an approval made for an
older incarnation is refused by its own binding even where every other check passes.

Clause: XPR-1, INV-11, APR-5, APR-9, AUD-4.
The model-based stateful test has one incarnation per member; incarnations are tested here, on
both backends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import reference as r
from spec import invariants
from tests.conftest import Team

ARGS = {"path": "srv/app"}


def restarted(team: Team) -> Team:
    """m0 restarts (incarnation 2) and claims its task again; a new harness reconciles. Only a
    stopped member restarts: its heartbeat lapses and it is inspected first (SHD-10, SHD-7)."""
    h = team.harness
    h.members.lapse("m0")
    h.members.inspect("m0")
    assert h.restart_member("m0") == 2
    task = h.read("task", "t0")
    assert task is not None
    released = {**task.doc, "status": "pending", "owner_id": None, "owner_incarnation": None, "claim_token": None}
    team.storage.update("test/release", "task", "t0", released, task.version)
    team = team.restart()
    team.harness.claim("m0", "t0")
    return team


def stale_operations(team: Team, pid: str) -> dict[str, Callable[[], Any]]:
    """Every operation a member can call, with the context of incarnation 1 (now stale)."""
    old = team.ctx(incarnation=1)
    h, tools = team.harness, r.AGENT_TOOLS
    return {
        "request": lambda: h.approvals.request(team.ctx(call="call-9", incarnation=1), "deploy", ARGS),
        "call": lambda: h.approvals.call(team.ctx(call="call-9", incarnation=1), "deploy", ARGS),
        "retry": lambda: h.approvals.request(old, "deploy", ARGS),
        "consume": lambda: h.approvals.call(old, "deploy", ARGS, approval_id=pid),
        "cancel": lambda: h.approvals.cancel(old, pid),
        "team_request_approval": lambda: tools["team_request_approval"](
            h, team.ctx(call="call-9", incarnation=1), {"tool_name": "deploy", "arguments": ARGS}
        ),
        "team_cancel_protocol": lambda: tools["team_cancel_protocol"](h, old, {"protocol_id": pid}),
    }


@pytest.mark.clause("XPR-1", "INV-11", "APR-9", "AUD-4")
@pytest.mark.parametrize(
    "operation",
    ["request", "call", "retry", "consume", "cancel", "team_request_approval", "team_cancel_protocol"],
)
def test_a_stale_context_changes_nothing_in_any_operation(team: Team, operation: str) -> None:
    """The approval is live and the member runs again (incarnation 2): every operation called with
    the incarnation-1 context is refused as stale, definite, and no record changes."""
    pid = team.approved()
    team = restarted(team)
    ctx2 = team.ctx(call="call-2", incarnation=2)  # a live approval of the new incarnation
    pid2 = team.harness.approvals.request(ctx2, "deploy", ARGS)
    team.harness.approvals.review("lead", pid2, "approved")
    target = pid if operation in ("retry",) else pid2
    action = stale_operations(team, target)[operation]
    before = team.harness.snapshot()
    with pytest.raises(r.StaleIncarnation) as caught:
        action()
    assert caught.value.definite
    after = team.harness.snapshot()
    assert after == before
    assert invariants.stale_incarnation_changes_nothing(before, after) == []
    assert team.world.calls == []


@pytest.mark.clause("XPR-1", "INV-11", "APR-5")
def test_an_approval_of_an_older_incarnation_is_refused_by_its_own_binding(team: Team) -> None:
    """The new incarnation holds the same task, under the same profile, with the same arguments,
    within the deadline, and calls with its own current context: only the approval's
    ``requester_incarnation`` differs, and that alone must refuse the call."""
    pid = team.approved()
    team = restarted(team)
    before = team.harness.snapshot()
    with pytest.raises(r.StaleIncarnation) as caught:
        team.harness.approvals.call(team.ctx(incarnation=2), "deploy", ARGS, approval_id=pid)
    assert str(caught.value) == f"approval {pid} was made for incarnation 1; the member is now incarnation 2 (XPR-1)"
    assert team.harness.snapshot() == before and team.world.calls == []


@pytest.mark.clause("XPR-1", "APR-9")
def test_the_current_incarnation_may_cancel_its_members_older_request(team: Team) -> None:
    """Cancelling only takes away: the member's current incarnation may cancel a request its
    older incarnation left (the model allows it too); the stale one may not (above)."""
    pid = team.approved()
    team = restarted(team)
    cancelled = team.harness.approvals.cancel(team.ctx(incarnation=2), pid)
    assert cancelled["status"] == "cancelled"


@pytest.mark.clause("XPR-1", "MEM-1")
def test_a_shutdown_request_of_an_earlier_incarnation_keeps_no_claim_from_the_new_one(team: Team) -> None:
    """MEM-1 refuses a claim while a shutdown request targets the member; the request is bound to
    the incarnation it was made for (XPR-1), so once that incarnation is lost, inspected and
    restarted, the new one claims, the old request still open beside it. Where the request targets
    the claiming incarnation itself, the claim is refused (the other side of the same guard)."""
    h = team.harness
    old = h.shutdowns.request("lead", "m0", "sd-old", ttl_seconds=10)
    h.members.lapse("m0")
    h.members.inspect("m0")
    assert h.restart_member("m0") == 2
    stored = h.read("shutdown_request", old)
    assert stored is not None and stored.doc["status"] in ("requested", "draining")
    assert stored.doc["target_incarnation"] == 1
    task = h.read("task", "t0")
    assert task is not None and task.doc["status"] == "needs_inspection"
    h.tasks.inspect("t0", "pending")
    team = team.restart()
    token = team.harness.claim("m0", "t0")
    claimed = team.harness.read("task", "t0")
    assert claimed is not None and (claimed.doc["status"], claimed.doc["owner_incarnation"]) == ("claimed", 2)
    assert invariants.check_state(team.harness.snapshot()) == []
    # the same guard's other side: a request that targets the claiming incarnation refuses the claim
    team.harness.finish_task("m0", "t0", "completed", token)
    team.harness.add_task("t2")
    team.harness.shutdowns.request("lead", "m0", "sd-new", ttl_seconds=10)
    with pytest.raises(r.ClaimRefused, match="targets it"):
        team.harness.claim("m0", "t2")
