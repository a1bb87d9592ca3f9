"""Ticks that land exactly on a deadline, on both backends with the same cases (APR-4, APR-5,
INV-12): at the deadline an approval still counts, one instant later it does not.

Clause: APR-4, APR-5, INV-12, REC-2.
A deadline is the last instant a request may be used: every check reads ``now > deadline`` as
passed. The stateful test reaches the boundary only as its draws fall; these cases reach it on
purpose, for every check that reads a deadline — review, consume, the monitor and reconciliation.
"""

from __future__ import annotations

import pytest

import reference as r
from spec.ids import message_id
from tests.conftest import Team

ARGS = {"path": "srv/app"}
TTL_SECONDS = 300.0
LATER = [0.0, 1e-6, 1.0]
"""How far past the deadline the clock is: exactly on it, then the least and a whole tick after."""


def status(team: Team, pid: str) -> str:
    return str(team.harness.read("operation_approval", pid).doc["status"])  # type: ignore[union-attr]


@pytest.mark.clause("APR-4", "INV-12")
@pytest.mark.parametrize("past", LATER)
def test_review_at_and_after_the_deadline(team: Team, past: float) -> None:
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=TTL_SECONDS)
    team.clock.advance(TTL_SECONDS + past)
    if past == 0:
        assert team.harness.approvals.review("lead", pid, "approved")["status"] == "approved"
    else:
        with pytest.raises(r.ApprovalExpired):
            team.harness.approvals.review("lead", pid, "approved")
        assert status(team, pid) == "requested"


@pytest.mark.clause("APR-5", "INV-12", "INV-1")
@pytest.mark.parametrize("past", LATER)
def test_consume_at_and_after_the_deadline(team: Team, past: float) -> None:
    pid = team.approved()
    team.clock.advance(TTL_SECONDS + past)
    if past == 0:
        assert team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)["status"] == "done"
        assert len(team.world.calls) == 1
    else:
        with pytest.raises(r.ApprovalExpired):
            team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
        assert team.world.calls == [] and status(team, pid) == "approved"


@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("past", LATER)
@pytest.mark.parametrize("reviewed", [False, True], ids=["requested", "approved"])
def test_the_monitor_at_and_after_the_deadline(team: Team, past: float, reviewed: bool) -> None:
    pid = team.approved() if reviewed else team.harness.approvals.request(team.ctx(), "deploy", ARGS)
    team.clock.advance(TTL_SECONDS + past)
    assert team.harness.approvals.expire_due() == ([] if past == 0 else [pid])
    assert status(team, pid) == (("approved" if reviewed else "requested") if past == 0 else "expired")


@pytest.mark.clause("REC-2", "INV-12")
@pytest.mark.parametrize("past", LATER)
def test_reconciliation_at_and_after_the_deadline(team: Team, past: float) -> None:
    """Reconciliation expires a request it finds past its deadline, not one at it."""
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS)
    team.clock.advance(TTL_SECONDS + past)
    team = team.restart()
    assert status(team, pid) == ("requested" if past == 0 else "expired")


@pytest.mark.clause("INV-12", "APR-4", "SHD-6", "PLN-5", "REC-3")
def test_the_monitor_reads_the_open_records_not_the_history(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    """The monitor runs on every tick, so its cost must follow the open work: it reads approvals,
    plans, shutdowns, messages and outbox entries by status (``Storage.scan_status``, an index on
    SQLite), never by scanning a table's history; and it still expires what is due."""
    for i in range(3):  # history: settled approvals and their delivered messages
        done = team.approved(call=f"old-{i}")
        team.harness.approvals.call(team.ctx(call=f"old-{i}"), "deploy", {"path": "srv/app"}, approval_id=done)
    due = team.harness.approvals.request(team.ctx(call="open"), "deploy", ARGS, ttl_seconds=TTL_SECONDS)
    team.clock.advance(TTL_SECONDS + 1.0)
    scanned: list[str] = []
    original = team.storage.scan

    def spy(table: str) -> list[r.Stored]:
        scanned.append(table)
        return original(table)

    monkeypatch.setattr(team.storage, "scan", spy)
    team.harness.monitor_pass()
    team.harness.outbox.owed()
    assert scanned == [], f"the monitor scanned whole tables: {scanned}"
    assert status(team, due) == "expired"


@pytest.mark.clause("MSG-1", "INV-12", "MSG-5")
@pytest.mark.parametrize("past", LATER)
@pytest.mark.parametrize("fate", ["requested", "approved", "consumed", "delivered"])
def test_an_approval_request_message_expires_unread_once_its_deadline_passed(
    team: Team, past: float, fate: str
) -> None:
    """The monitor expires the request's message once the approval's deadline passed, whatever
    became of the approval (the model's monitor does); at the deadline it is still pending, and
    one its target already read stays delivered (a read message does not expire)."""
    if fate in ("requested", "delivered"):
        pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=TTL_SECONDS)
    else:
        pid = team.approved()
    if fate == "consumed":
        team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    mid = message_id(pid, "request")
    if fate == "delivered":
        team.harness.deliver(mid, pid)
    team.clock.advance(TTL_SECONDS + past)
    team.harness.monitor_pass()
    message = team.harness.read("message", mid)
    assert message is not None
    expected = "delivered" if fate == "delivered" else "pending" if past == 0 else "expired"
    assert message.doc["status"] == expected
