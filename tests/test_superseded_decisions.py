"""A plan decision taken back is never taken, whoever delivers it and wherever a crash cut the
retraction (PLN-3, PLN-6, MSG-5), on both backends.

A retraction writes the plan record first, then expires the undelivered decision message
(``plan.retract/record`` → ``plan.retract/message``). Between the two writes — a crash of the
Lead's process, or simply another process running in between — the old decision is still a
``pending`` message while the plan already says otherwise. The requester's process, which does not
reconcile the Lead's writes, may deliver it then: only the decision's sequence number (how many
retractions it was sent after) tells it apart from the current one. An outside review that removed
that comparison passed every test: no test delivered a superseded decision while it was still
pending. Here every crash point of the retraction is tried, for both retraction targets, and the
superseded decision is delivered by a second harness over the same store before any
reconciliation: it is refused or recorded as ignored, never matched, and the plan's record does
not change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import reference as r
from spec import invariants
from spec.ids import message_id
from tests.test_plans import Team

RETRACT_STEPS = [step for step in r.PLAN_STEPS if step.startswith("plan.retract/")]


@pytest.fixture(params=["memory", "sqlite"])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Team:
    return Team(r.SQLiteStorage(tmp_path / "team.db") if request.param == "sqlite" else None)


@pytest.mark.clause("PLN-3", "PLN-6", "MSG-5")
@pytest.mark.parametrize("to", ["pending", "rejected"])
@pytest.mark.parametrize("crash", [None, *RETRACT_STEPS])
def test_a_superseded_decision_is_never_matched(team: Team, crash: str | None, to: str) -> None:
    pid = team.approved(deliver=False)
    superseded = message_id(pid, "decision-0")
    if crash is not None:
        team.storage.faults.crash_after.add(crash)
    try:
        team.h.plans.retract("lead", pid, to)
    except r.Crash:
        assert crash is not None
    requester = r.Harness(team.storage, team.clock, [])  # the member's own process: no reconciliation
    plan = requester.plans.require(pid).doc
    try:
        result = requester.plans.deliver_decision("m0", superseded)
    except r.MessageNotPending:
        result = None
    assert result is None or result["outcome"] == "ignored", f"{result} after a retraction to {to} cut at {crash}"
    after = requester.plans.require(pid).doc
    assert (after["status"], after["decision_delivered"]) == (plan["status"], plan["decision_delivered"])
    assert not after["decision_delivered"]


@pytest.mark.clause("PLN-3", "PLN-6")
@pytest.mark.parametrize("crash", [None, *RETRACT_STEPS])
def test_the_decision_after_a_retraction_is_the_one_taken(team: Team, crash: str | None) -> None:
    """The other half: once the Lead's process has reconciled and decided again, the current
    decision is matched and the superseded one is not (whatever order they come in)."""
    pid = team.approved(deliver=False)
    if crash is not None:
        team.storage.faults.crash_after.add(crash)
    try:
        team.h.plans.retract("lead", pid, "pending")
    except r.Crash:
        team.h = r.Harness(team.storage, team.clock, [])
        team.h.reconcile()
    team.h.plans.decide("lead", pid, "approved")
    current = team.h.plans.deliver_decision("m0", message_id(pid, "decision-1"))
    assert current["outcome"] == "matched" and team.plan_doc(pid)["decision_delivered"]
    with pytest.raises(r.MessageNotPending):
        team.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    assert invariants.check_state(team.h.snapshot()) == []
