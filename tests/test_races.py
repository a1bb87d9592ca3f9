"""Two harness instances over one store, as two processes would be: the loser of a race is refused
with a typed, definite error and changes nothing (STO-4, APR-6, APR-9, APR-4, INV-1).

Clause: STO-4, APR-5, APR-6, APR-9, APR-4, INV-1, INV-12.
Each test lets instance A read and check, then runs instance B's whole operation right before A's
write (at A's named write step, where the fault hook sits), then lets A write. On SQLite each
instance has its own connection to one file; on memory both share the storage object. The
exhaustive interleavings of such pairs are the interleaving explorer's; these pin the typed
outcome of each race the issue names, on both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import reference as r
import spec
from spec import invariants
from spec.ids import message_id
from tests.conftest import BACKENDS, Team

ARGS = {"path": "srv/app"}


class RunBefore(r.FaultPlan):
    """A fault plan that runs another instance's operation once, right before a named write step."""

    def __init__(self, step: str, interject: Callable[[], Any]) -> None:
        super().__init__()
        self.step = step
        self.interject: Callable[[], Any] | None = interject

    def before(self, step: str) -> None:
        if step == self.step and self.interject is not None:
            interject, self.interject = self.interject, None
            interject()
        super().before(step)


@pytest.fixture(params=BACKENDS)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Team, Team]]:
    """Two harness instances over one store, sharing a clock and the external world."""
    if request.param == "memory":
        first = second = r.MemoryStorage()
    else:
        first, second = r.SQLiteStorage(tmp_path / "team.db"), r.SQLiteStorage(tmp_path / "team.db")
    a = Team(first)
    b = Team(second, a.clock, a.world, setup=False)
    yield a, b
    first.close()
    second.close()


def race(a: Team, step: str, winner: Callable[[], Any], loser: Callable[[], Any], error: type[Exception]) -> Exception:
    """B's ``winner`` runs whole just before A's write ``step``; A's ``loser`` must then be refused
    with ``error`` (definite), leaving the stores exactly as B left them."""
    after_winner: dict[str, Any] = {}

    def interject() -> None:
        winner()
        after_winner.update(a.harness.snapshot())

    a.storage.faults = RunBefore(step, interject)
    with pytest.raises(error) as caught:
        loser()
    assert after_winner, f"the race never reached {step}"
    assert not isinstance(caught.value, r.VersionConflict)
    assert getattr(caught.value, "definite", True)
    assert a.harness.snapshot() == after_winner, "the loser changed the stores"
    snap = a.harness.snapshot()
    assert invariants.check_state(snap) == []
    spec.validate_snapshot(snap)
    return caught.value


@pytest.mark.clause("STO-4", "APR-6", "INV-1")
def test_consume_against_consume_loser_is_refused_typed(pair: tuple[Team, Team]) -> None:
    """Both instances check the approval; B consumes first; A's compare-and-set loses and A is
    told the approval is consumed, not that a version moved. The tool ran once."""
    a, b = pair
    pid = a.approved()
    error = race(
        a,
        "approval.consume/record",
        lambda: b.harness.approvals.call(b.ctx(), "deploy", ARGS, pid),
        lambda: a.harness.approvals.call(a.ctx(), "deploy", ARGS, pid),
        r.ApprovalNotActive,
    )
    assert error.status == "consumed"  # type: ignore[attr-defined]
    assert len(a.world.calls) == 1


@pytest.mark.clause("STO-4", "APR-9", "APR-5")
def test_consume_against_cancel_loser_is_refused_typed(pair: tuple[Team, Team]) -> None:
    """B cancels while A consumes: A is told the approval is cancelled; nothing ran."""
    a, b = pair
    pid = a.approved()
    error = race(
        a,
        "approval.consume/record",
        lambda: b.harness.approvals.cancel(b.ctx(), pid),
        lambda: a.harness.approvals.call(a.ctx(), "deploy", ARGS, pid),
        r.ApprovalNotActive,
    )
    assert error.status == "cancelled"  # type: ignore[attr-defined]
    assert a.world.calls == []


@pytest.mark.clause("STO-4", "APR-9")
def test_cancel_against_consume_loser_is_refused_typed(pair: tuple[Team, Team]) -> None:
    """B consumes while A cancels: A's cancel is refused as after consumption (APR-9)."""
    a, b = pair
    pid = a.approved()
    error = race(
        a,
        "approval.cancel/record",
        lambda: b.harness.approvals.call(b.ctx(), "deploy", ARGS, pid),
        lambda: a.harness.approvals.cancel(a.ctx(), pid),
        r.CancelRefused,
    )
    assert "consumed" in str(error) and len(a.world.calls) == 1


@pytest.mark.clause("STO-4", "APR-4", "INV-12")
def test_review_against_monitor_expiry_loser_is_refused_typed(pair: tuple[Team, Team]) -> None:
    """A reviews at the deadline; time passes and B's monitor expires the request first: A's
    review is refused as a conflict with the expiry, not a version error."""
    a, b = pair
    pid = a.harness.approvals.request(a.ctx(), "deploy", ARGS)
    a.clock.advance(300)  # exactly at the deadline: the review's check passes

    def expire() -> None:
        a.clock.advance(1)
        assert b.harness.approvals.expire_due() == [pid]

    race(
        a,
        "approval.review/record",
        expire,
        lambda: a.harness.approvals.review("lead", pid, "approved"),
        r.ReviewConflict,
    )


@pytest.mark.clause("STO-4", "INV-12", "APR-9")
def test_monitor_that_loses_to_a_cancel_skips_the_record(pair: tuple[Team, Team]) -> None:
    """The monitor found a request due, B cancelled it first: the pass skips it (no error, no
    second write) and the record stays cancelled."""
    a, b = pair
    pid = a.harness.approvals.request(a.ctx(), "deploy", ARGS)
    a.clock.advance(301)
    a.storage.faults = RunBefore("approval.expire/record", lambda: b.harness.approvals.cancel(b.ctx(), pid))
    assert a.harness.approvals.expire_due() == []
    assert a.harness.read("operation_approval", pid).doc["status"] == "cancelled"


@pytest.mark.clause("APR-6", "INV-1", "STO-4")
def test_the_execution_key_is_the_second_guard(pair: tuple[Team, Team]) -> None:
    """Single consumption is guarded twice: should the compare-and-set ever let two consumers
    through, the execution record's key stops the second before its call (typed, no call)."""
    a, b = pair
    pid = a.approved()
    taken = {
        "idempotency_key": pid,
        "status": "started",
        "requester_id": "m0",
        "task_id": "t0",
        "tool_name": "deploy",
        "arguments_digest": a.harness.tool("deploy").digest(ARGS),
        "profile_version": 1,
        "attempts": 1,
        "result": None,
    }
    a.storage.faults = RunBefore(
        "approval.consume/execution",
        lambda: b.storage.insert("approval.consume/execution", "tool_execution", pid, taken),
    )
    with pytest.raises(r.ApprovalNotActive):
        a.harness.approvals.call(a.ctx(), "deploy", ARGS, pid)
    assert a.world.calls == []
    assert a.harness.read("tool_execution", pid).doc == taken


@pytest.mark.clause("STO-4", "XPR-3")
def test_a_write_that_keeps_losing_fails_closed(team: Team) -> None:
    """A compare-and-set lost on every attempt (a writer faster each time) ends in a definite
    FailClosed after a bounded number of attempts, never a raw VersionConflict."""
    pid = team.approved()
    writes = 0

    class Contender(r.FaultPlan):
        def before(self, step: str) -> None:
            nonlocal writes
            if step == "approval.cancel/record":
                writes += 1
                stored = team.storage.read("operation_approval", pid)
                team.storage.update("test/contender", "operation_approval", pid, stored.doc, stored.version)  # type: ignore[union-attr]

    team.storage.faults = Contender()
    with pytest.raises(r.FailClosed) as caught:
        team.harness.approvals.cancel(team.ctx(), pid)
    assert caught.value.definite and writes == 3
    assert str(caught.value).startswith(
        "refused: a write that lost 3 compare-and-sets in a row could not be completed ("
    )


@pytest.mark.clause("MSG-5", "STO-4")
def test_a_receipt_that_loses_to_another_gets_the_recorded_result_or_the_refusal(pair: tuple[Team, Team]) -> None:
    """The generic receipt (``Harness.deliver``, the conformance driver's) of a message another
    process receives, or expires, between this one's read and its write: the duplicate's recorded
    result, or ``MessageNotPending`` — never a raw version conflict (a second outside review's
    finding), and the message delivered once."""
    a, b = pair
    pid = a.harness.approvals.request(a.ctx(), "deploy", ARGS)
    mid = message_id(pid, "request")
    got: list[dict[str, Any]] = []
    a.storage.faults = RunBefore("message.deliver/message", lambda: got.append(b.harness.deliver(mid, pid)))
    assert a.harness.deliver(mid, pid) == got[0] == b.harness.deliver(mid, pid)
    row = a.storage.read("message", mid)
    assert row is not None and (row.doc["status"], row.doc["recorded_result"]) == ("delivered", got[0])
    key = a.harness.approvals.request(a.ctx(call="call-2"), "deploy", ARGS)
    late = message_id(key, "request")

    def expire() -> None:
        stored = b.storage.read("message", late)
        assert stored is not None
        b.storage.update("monitor.pass/records", "message", late, {**stored.doc, "status": "expired"}, stored.version)

    a.storage.faults = RunBefore("message.deliver/message", expire)
    with pytest.raises(r.MessageNotPending):
        a.harness.deliver(late, key)
    row = a.storage.read("message", late)
    assert row is not None and (row.doc["status"], row.doc["recorded_result"]) == ("expired", None)


@pytest.mark.clause("STO-2", "STO-4", "SHD-1")
def test_two_shutdown_requests_under_one_key_with_other_reasons_leave_the_first(pair: tuple[Team, Team]) -> None:
    """Two writers at once: B's request of key k1 is written just before A's own insert of the same
    key with another reason. A loses the insert and, on the record it finds, is refused as a
    conflict (STO-2), definite, with the stores as B left them — never given B's id as its own."""
    a, b = pair
    error = race(
        a,
        "shutdown.request/record",
        lambda: b.harness.shutdowns.request("lead", "m0", "k1", "scale down", ttl_seconds=30),
        lambda: a.harness.shutdowns.request("lead", "m0", "k1", "rebalance", ttl_seconds=30),
        r.ProtocolConflict,
    )
    assert error.field == "reason_text"  # type: ignore[attr-defined]
