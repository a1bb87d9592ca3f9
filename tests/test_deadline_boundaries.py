"""Every reader of every deadline, exactly on it and just past it (SHD-2, SHD-6, PLN-2, PLN-5, PLN-9,
APR-4, APR-5, INV-12), on both backends.

A deadline is the last instant a record may still be used: every check reads ``now > deadline``
as passed (``tests/test_deadlines.py`` states it for approvals). The stateful tests reach the
exact instant only as their draws fall, and an outside review found that they never did for a
shutdown request or a plan execution: a monitor that expired a shutdown request, or timed out a
plan's run, one instant early passed every test. Here each reader is a row of one table, set up
to the record's status, the clock put exactly on the record's own ``deadline`` (read from the
store, not assumed) and then just past it; the reader must treat the record as live at the
deadline and as passed after it. ``test_every_record_with_a_deadline_has_its_readers`` keeps the
table in step with the record schemas: a record kind that gains a ``deadline`` needs its rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import reference as r
from spec.ids import message_id
from spec.schemas import RECORD_SCHEMAS

PAST = [0.0, 1e-6]
"""How far past the deadline the clock stands: exactly on it, then the least instant after."""
TTL = 5.0
STEPS = [{"id": "s1", "action": "copy", "params": {"path": "a"}}]


class Team:
    """The Lead, members m0 and m1 holding tasks t0 and t1; the tools ``deploy`` (protected) and ``copy``."""

    def __init__(self, storage: r.Storage) -> None:
        self.clock = r.ManualClock(1000.0)
        self.deploy, self.copy = r.RecordingTool(), r.RecordingTool("copy")
        self.h = r.Harness(storage, self.clock, [self.deploy.tool(), self.copy.tool()])
        for m in ("m0", "m1"):
            self.h.add_member(m, ["deploy"])
            self.h.add_task(f"t{m[1]}")
            self.h.claim(m, f"t{m[1]}")

    def ctx(self, member: str = "m0") -> r.CallContext:
        return r.CallContext(member, self.h.member(member)["incarnation"], "call-1", f"t{member[1]}")

    def status(self, table: str, key: str) -> str:
        row = self.h.read(table, key)
        assert row is not None, f"{table}/{key}"
        return str(row.doc["status"])

    # ---- records in each status whose deadline a reader looks at -------------------------------
    def approval(self, approved: bool) -> str:
        pid = self.h.approvals.request(self.ctx(), "deploy", {"path": "srv"}, ttl_seconds=TTL)
        if approved:
            self.h.approvals.review("lead", pid, "approved")
        return pid

    def shutdown(self, draining: bool) -> str:
        pid = self.h.shutdowns.request("lead", "m0", "sd-1", ttl_seconds=TTL)
        if draining:
            assert self.h.shutdowns.begin_drain("m0", message_id(pid, "request"))["outcome"] == "draining"
        return pid

    def plan(self, status: str) -> str:
        body = {"goal": "g", "steps": STEPS, "estimated_cost": 1.0, "rollback": "r", "risks": [], "ttl_seconds": TTL}
        pid = self.h.plans.draft(self.ctx(), "p", body)
        self.h.plans.submit(self.ctx(), pid)
        if status in ("approved", "delivered", "running", "running_late"):
            self.h.plans.decide("lead", pid, "approved")
        if status in ("delivered", "running", "running_late"):
            self.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
        if status == "running_late":  # started just before the approval's own deadline
            self.clock.advance(self.deadline("plan_approval", pid) - 1 - self.clock.now())
        if status in ("running", "running_late"):
            started = self.clock.now()
            self.h.plans.start(self.ctx(), pid)
            assert self.deadline("plan_execution", pid) == started + TTL  # PLN-9: the run's own ttl
        return pid

    def deadline(self, table: str, key: str) -> float:
        row = self.h.read(table, key)
        assert row is not None
        return float(row.doc["deadline"])


@dataclass(frozen=True)
class Reader:
    """One reader of one record's deadline: ``setup`` makes the record (its table and key) in the
    status the reader looks at; ``read`` runs the reader and says whether it took the record as
    still live (``True``) or as past its deadline (``False``)."""

    clauses: tuple[str, ...]
    table: str
    setup: Callable[[Team], str]
    read: Callable[[Team, Reader, str], bool]


def _monitor(phase: str = "") -> Callable[[Team, Reader, str], bool]:
    """The monitor's pass; live when the record kept its status (or, with ``phase``, its message)."""

    def read(team: Team, reader: Reader, key: str) -> bool:
        table, watched = ("message", message_id(key, phase)) if phase else (reader.table, key)
        before = team.status(table, watched)
        team.h.monitor_pass()
        return team.status(table, watched) == before

    return read


def _refused(call: Callable[[], Any], *errors: type[Exception]) -> bool:
    try:
        call()
    except errors:
        return False
    return True


def _begin_drain(team: Team, _: Reader, pid: str) -> bool:
    result = team.h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    return bool(result["outcome"] == "draining")


READERS: dict[str, Reader] = {
    "monitor_approval_requested": Reader(
        ("INV-12", "APR-5"), "operation_approval", lambda t: t.approval(False), _monitor()
    ),
    "monitor_approval_approved": Reader(
        ("INV-12", "APR-5"), "operation_approval", lambda t: t.approval(True), _monitor()
    ),
    "review_approval_requested": Reader(
        ("APR-4",),
        "operation_approval",
        lambda t: t.approval(False),
        lambda t, _, k: _refused(lambda: t.h.approvals.review("lead", k, "approved"), r.ApprovalExpired),
    ),
    "consume_approval_approved": Reader(
        ("APR-5",),
        "operation_approval",
        lambda t: t.approval(True),
        lambda t, _, k: _refused(lambda: t.h.approvals.call(t.ctx(), "deploy", {"path": "srv"}, k), r.ApprovalExpired),
    ),
    "monitor_shutdown_requested": Reader(
        ("SHD-6", "INV-12"), "shutdown_request", lambda t: t.shutdown(False), _monitor()
    ),
    "monitor_shutdown_request_message": Reader(
        ("SHD-6", "MSG-3"),
        "shutdown_request",
        lambda t: t.shutdown(False),
        _monitor("request"),
    ),
    "monitor_shutdown_draining": Reader(
        ("SHD-6", "INV-12"), "shutdown_request", lambda t: t.shutdown(True), _monitor()
    ),
    "begin_drain_shutdown_requested": Reader(("SHD-2",), "shutdown_request", lambda t: t.shutdown(False), _begin_drain),
    "monitor_plan_pending": Reader(("PLN-5", "INV-12"), "plan_approval", lambda t: t.plan("pending"), _monitor()),
    "monitor_plan_request_message": Reader(
        ("PLN-5", "MSG-3"),
        "plan_approval",
        lambda t: t.plan("pending"),
        _monitor("request"),
    ),
    "monitor_plan_approved": Reader(("PLN-5", "INV-12"), "plan_approval", lambda t: t.plan("approved"), _monitor()),
    "decide_plan_pending": Reader(
        ("PLN-2", "PLN-5"),
        "plan_approval",
        lambda t: t.plan("pending"),
        lambda t, _, k: _refused(lambda: t.h.plans.decide("lead", k, "approved"), r.PlanExpired),
    ),
    "start_plan_delivered": Reader(
        ("PLN-5", "PLN-7"),
        "plan_approval",
        lambda t: t.plan("delivered"),
        lambda t, _, k: _refused(lambda: t.h.plans.start(t.ctx(), k), r.PlanExpired),
    ),
    "monitor_plan_execution_running": Reader(
        ("PLN-9", "INV-12"), "plan_execution", lambda t: t.plan("running"), _monitor()
    ),
    # started late in the approval's ttl: the run's deadline lies well past the plan's, and the
    # monitor reads the run's (a second outside review's plant read the plan's, and every row
    # above started the run at the instant it was approved)
    "monitor_plan_execution_started_late": Reader(
        ("PLN-9", "INV-12"), "plan_execution", lambda t: t.plan("running_late"), _monitor()
    ),
}
"""Every reader of a deadline in the reference, by what reads it and the record's status."""


@pytest.fixture(params=["memory", "sqlite"])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Team:
    return Team(r.SQLiteStorage(tmp_path / "team.db") if request.param == "sqlite" else r.MemoryStorage())


@pytest.mark.clause("SHD-2", "SHD-6", "PLN-2", "PLN-5", "PLN-9", "APR-4", "APR-5", "INV-12")
@pytest.mark.parametrize("past", PAST)
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.clause(*READERS[n].clauses)) for n in sorted(READERS)]
)
def test_a_deadline_still_holds_at_its_instant_and_has_passed_after_it(team: Team, name: str, past: float) -> None:
    reader = READERS[name]
    key = reader.setup(team)
    team.clock.advance(team.deadline(reader.table, key) + past - team.clock.now())
    live = reader.read(team, reader, key)
    assert live == (past == 0), f"{name}: {'passed' if not live else 'still live'} at deadline + {past}"


def test_every_record_with_a_deadline_has_its_readers() -> None:
    """The table covers every record kind whose schema has a ``deadline`` (a new one needs rows)."""
    with_deadline = {kind for kind, schema in RECORD_SCHEMAS.items() if "deadline" in schema.get("properties", {})}
    covered = {reader.table for reader in READERS.values()}
    assert with_deadline == covered, f"no reader of the deadline of {sorted(with_deadline - covered)}"
