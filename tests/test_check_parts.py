"""Every part of a check can fail (DESIGN rule 7, below the level of whole invariants).

An outside review weakened two checks by one part each, and nothing failed: INV-7's table of the
messages a record owes lost a ``needs_revision`` plan's decision, and MSG-6's comparison of a
shutdown acknowledgement with its record lost ``waited_job_ids``. Each invariant had mutants that
broke it, but none that needed that part. Here each part is exercised on its own: a snapshot that
breaks exactly it must be named, the same snapshot with the part whole must pass. The tables
below restate the protocol (REC-3, SHD-5, PLN-2, PLN-5, PLN-10, SHD-10); they are not read from
the checks under test.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from spec import _tables as spec_tables
from spec import ids, invariants, safety
from tests.test_message_parties import _places, _team_snapshot

SECTIONS = (
    "operation_approval",
    "plan_approval",
    "plan_execution",
    "shutdown_request",
    "member",
    "task",
    "message",
    "outbox_entry",
)

OWED = [
    # (record section, status, the message it owes) — what the records owe (REC-3, INV-7)
    ("operation_approval", "requested", "approval_request"),
    ("operation_approval", "approved", "approval_decision"),
    ("operation_approval", "rejected", "approval_decision"),
    ("plan_approval", "pending", "plan_request"),
    ("plan_approval", "approved", "plan_decision"),
    ("plan_approval", "rejected", "plan_decision"),
    ("plan_approval", "needs_revision", "plan_decision"),
    ("plan_approval", "expired", "plan_abandoned"),
    ("shutdown_request", "requested", "shutdown_request"),
    ("shutdown_request", "completed", "shutdown_ack"),
    ("plan_execution", "completed", "plan_completion"),
    ("plan_execution", "rolled_back", "plan_completion"),
    ("member", "unhealthy", "member_lost"),
    ("task", "suspended", "task_suspended"),  # SHD-9: named by the task its body names
]
OWE_NOTHING = [
    ("operation_approval", "consumed"),
    ("operation_approval", "cancelled"),
    ("operation_approval", "expired"),
    ("plan_approval", "draft"),
    ("plan_approval", "consumed"),
    ("plan_approval", "withdrawn"),
    ("shutdown_request", "draining"),
    ("shutdown_request", "cancelled"),
    ("plan_execution", "running"),
    ("plan_execution", "failed"),
    ("member", "running"),
    ("member", "stopped"),
    ("task", "claimed"),
    ("task", "pending"),
]


def _alone(section: str, status: str) -> tuple[dict[str, Any], str]:
    """A snapshot holding one record of ``section`` in ``status`` and no message; its correlation id."""
    snap: dict[str, Any] = {s: [] for s in SECTIONS}
    if section == "member":
        snap["member"] = [{"member_id": "m0", "incarnation": 1, "status": status}]
        return snap, ids.protocol_id("m0", "incarnation-1", "member_lost")
    if section == "task":
        snap["task"] = [{"task_id": "t0", "status": status}]
        return snap, "t0"
    key = "plan_id" if section == "plan_execution" else "protocol_id"
    snap[section] = [{key: "p-1", "status": status}]
    return snap, "p-1"


def _with_message(snap: dict[str, Any], message_type: str, correlation: str) -> dict[str, Any]:
    message = {"message_type": message_type, "correlation_id": correlation, "message_id": "x"}
    if message_type == "task_suspended":  # its stable id counts claims: owed by the task its body names
        message = {**message, "correlation_id": "claim-n", "body": {"task_id": correlation}}
    return {**snap, "outbox_entry": [{"status": "owed", "message": message}]}


@pytest.mark.clause("REC-3", "MSG-6", "SHD-5", "PLN-10", "SHD-10", "SHD-9")
@pytest.mark.parametrize(("section", "status", "message_type"), OWED)
def test_each_record_that_owes_a_message_is_named_when_it_is_missing(
    section: str, status: str, message_type: str
) -> None:
    snap, correlation = _alone(section, status)
    assert [p for p in invariants.owed_messages_present(snap) if f"owes {message_type}" in p]
    assert invariants.owed_messages_present(_with_message(snap, message_type, correlation)) == []


@pytest.mark.clause("REC-3")
@pytest.mark.parametrize(("section", "status"), OWE_NOTHING)
def test_a_record_that_owes_nothing_is_not_asked_for_a_message(section: str, status: str) -> None:
    assert invariants.owed_messages_present(_alone(section, status)[0]) == []


@pytest.fixture(scope="module")
def snap() -> dict[str, Any]:
    return _team_snapshot()


REPLIES = [
    # (message type, body field, another value) — what a reply repeats of its record (MSG-6, SHD-5, PLN-10)
    ("shutdown_ack", "released_task_id", "t9"),
    ("shutdown_ack", "released_task_id", None),
    ("shutdown_ack", "waited_job_ids", ["j9"]),
    ("plan_completion", "outcome", "rolled_back"),
    ("approval_decision", "decision", "rejected"),
    ("plan_decision", "decision", "rejected"),
]


@pytest.mark.clause("MSG-6", "SHD-5", "PLN-10", "APR-4", "PLN-2")
@pytest.mark.parametrize(("message_type", "field", "other"), REPLIES)
def test_a_reply_that_says_other_than_its_record_is_named(
    snap: dict[str, Any], message_type: str, field: str, other: Any
) -> None:
    kind, i, message = next(p for p in _places(snap) if p[2]["message_type"] == message_type)
    assert message["body"][field] != other
    broken = copy.deepcopy(snap)
    broken[kind][i]["message"]["body"][field] = other
    assert safety.messages_agree_with_records(snap) == []
    assert safety.messages_agree_with_records(broken), field


@pytest.mark.clause("PLN-5")
@pytest.mark.parametrize(("started_at", "named"), [(9.0, False), (10.0, False), (10.5, True)])
def test_an_execution_started_after_its_plans_deadline_is_named(started_at: float, named: bool) -> None:
    """The deadline's instant still holds (INV-12); a start after it is named (the plan expired)."""
    plan = {"protocol_id": "p-1", "status": "approved", "deadline": 10.0}
    before = {"clock": started_at, "plan_approval": [plan], "plan_execution": []}
    after = {**before, "plan_execution": [{"plan_id": "p-1", "status": "running", "started_at": started_at}]}
    assert bool(safety.plan_starts_only_before_deadline(before, after)) is named
    assert safety.plan_starts_only_before_deadline(after, after) == []  # only the step that starts it


DEADLINE_EVENTS = ("expire", "time_out")
"""The machines' events that a deadline passing fires (MSG-1, APR-5, PLN-5, SHD-6): the statuses
``expiry_only_after_deadline`` must watch are read from the machines here, not from the check."""
DEADLINE_EDGES = [
    (edge.machine, edge.source, edge.target)
    for machine in ("operation_approval", "plan_approval", "shutdown_request")  # the records with a deadline
    for edge in spec_tables.edges(machine)
    if edge.event in DEADLINE_EVENTS
]


def _deadline_step(machine: str, source: str, target: str, now: float) -> tuple[dict[str, Any], dict[str, Any]]:
    empty: dict[str, Any] = {
        kind: [] for kind in ("operation_approval", "plan_approval", "shutdown_request", "message")
    }
    record = {"protocol_id": "p1", "status": source, "deadline": 10.0}
    before = {**empty, "clock": now - 1, machine: [record]}
    return before, {**empty, "clock": now, machine: [{**record, "status": target}]}


@pytest.mark.clause("APR-5", "PLN-5", "SHD-6")
@pytest.mark.parametrize(("machine", "source", "target"), DEADLINE_EDGES)
def test_every_deadline_edge_before_its_deadline_is_named(machine: str, source: str, target: str) -> None:
    """Each edge a deadline fires, taken at or before the deadline, is named by
    ``expiry_only_after_deadline``; the same edge just after it is not. An edge the check's own
    table left out (a drain timed out early) would pass unseen."""
    assert len(DEADLINE_EDGES) >= 5  # approval ×2, plan ×2, shutdown: expired and timed_out
    for now, named in ((9.0, True), (10.0, True), (10.5, False)):
        before, after = _deadline_step(machine, source, target, now)
        problems = safety.expiry_only_after_deadline(before, after)
        assert bool(problems) is named, (machine, source, target, now, problems)


DECISION_EVENTS = ("approve", "reject", "request_revision", "begin_drain")
"""The machines' events by which a waiting request is decided (APR-4, PLN-2, SHD-2): the reviewer's
or approver's decision, the member's beginning of its drain. Every other way out of waiting (the
deadline, the requester's cancel or withdrawal, the Lead's cancel) is not a decision."""
NOT_DECISIONS = (*DEADLINE_EVENTS, "cancel", "withdraw")
WAITING = {"operation_approval": "requested", "plan_approval": "pending", "shutdown_request": "requested"}
WAITING_EDGES = [
    (edge.machine, edge.source, edge.target, edge.event)
    for machine, waiting in WAITING.items()
    for edge in spec_tables.edges(machine)
    if edge.source == waiting
]


@pytest.mark.clause("APR-4", "PLN-2", "PLN-5", "SHD-2")
@pytest.mark.parametrize(("machine", "source", "target", "event"), WAITING_EDGES)
def test_every_decision_edge_after_its_deadline_is_named(machine: str, source: str, target: str, event: str) -> None:
    """Each edge out of a request's waiting status, read from its machine, taken just after the
    deadline (10): named by ``decisions_only_before_deadline`` exactly when it is a decision (an
    outside review dropped ``needs_revision`` from the check's set and no test failed: every
    decision tested was an approval). At the deadline's instant it is never named."""
    assert event in DECISION_EVENTS or event in NOT_DECISIONS, f"classify {machine}'s {event}"
    for now, named in ((10.0, False), (10.5, event in DECISION_EVENTS)):
        before, after = _deadline_step(machine, source, target, now)
        problems = safety.decisions_only_before_deadline(before, after)
        assert bool(problems) is named, (machine, source, target, now, problems)


def _event(name: str, at: float) -> dict[str, Any]:
    return {"event": name, "at": at, "actor": "lead", "summary": ""}


@pytest.mark.clause("PLN-5", "PLN-6", "APR-4")
@pytest.mark.parametrize(
    ("earlier", "decided_at", "named"),
    [
        ((), 150.0, True),  # approved after the deadline
        ((("approved", 50.0), ("retracted", 60.0)), 150.0, True),  # approved in time, retracted, approved late
        ((), 50.0, False),  # approved in time (the snapshot is taken later)
        ((("approved", 50.0), ("retracted", 60.0)), 90.0, False),  # approved again, still in time
    ],
)
def test_a_decision_after_the_deadline_is_named_whatever_came_before(
    earlier: tuple[tuple[str, float], ...], decided_at: float, named: bool
) -> None:
    """A plan moved from ``pending`` to ``approved`` after its deadline (100) is named, also when an
    earlier approval in time was retracted (PLN-6) before it: the step's decision is the latest
    decision event, not the first."""
    past = [_event("drafted", 0.0), _event("submitted", 1.0), *(_event(name, at) for name, at in earlier)]
    record = {"protocol_id": "p", "deadline": 100.0}
    empty: dict[str, Any] = {"operation_approval": [], "shutdown_request": []}
    before = {**empty, "plan_approval": [{**record, "status": "pending", "events": past}]}
    decided = {**record, "status": "approved", "events": [*past, _event("approved", decided_at)]}
    after = {**empty, "clock": 150.0, "plan_approval": [decided]}
    assert bool(safety.decisions_only_before_deadline(before, after)) is named


@pytest.mark.clause("MSG-1", "APR-5", "PLN-5", "SHD-6")
@pytest.mark.parametrize(("message_type", "section"), list(safety.REQUEST_MESSAGES.items()))
@pytest.mark.parametrize(("now", "named"), [(9.0, True), (10.0, True), (10.5, False)])
def test_a_request_message_expired_while_its_request_can_be_decided_is_named(
    message_type: str, section: str, now: float, named: bool
) -> None:
    """A request's message expiring at or before its request's deadline (10) is named: the request
    can still be decided, so its message must still be deliverable (MSG-1)."""
    assert set(safety.REQUEST_MESSAGES) == {"approval_request", "plan_request", "shutdown_request"}
    empty: dict[str, Any] = {kind: [] for kind in ("operation_approval", "plan_approval", "shutdown_request")}
    request = {"protocol_id": "p1", "status": "requested", "deadline": 10.0}
    envelope = {"message_id": "x1", "message_type": message_type, "correlation_id": "p1"}
    before = {**empty, "clock": now - 1, section: [request], "message": [{"message": envelope, "status": "pending"}]}
    after = {**before, "clock": now, "message": [{"message": envelope, "status": "expired"}]}
    assert bool(safety.expiry_only_after_deadline(before, after)) is named


CAUSES = [
    # (reason, the requester's status before the step, and after it, named)
    ("crashed", "unhealthy", "stopped", False),  # SHD-10: the Lead inspects a lost member
    ("crashed", "running", "running", True),
    ("crashed", "draining", "draining", True),
    ("member_draining", "running", "draining", False),  # XPR-2: its drain begins
    ("member_draining", "draining", "draining", False),  # a drain resumed after a crash
    ("member_draining", "running", "running", True),  # a bystander of another member's drain
    ("member_draining", "unhealthy", "unhealthy", True),
    ("member_draining", "stopped", "stopped", True),
    ("cancelled", "running", "running", False),  # APR-6, PLN-6: its running requester withdrew it
    ("cancelled", "running", "draining", True),  # a drain's cancellation is member_draining's
    ("cancelled", "unhealthy", "unhealthy", True),  # a lost requester withdraws nothing
    ("rejected", "unhealthy", "unhealthy", False),  # reasons a status names are not judged here (the state check)
]


@pytest.mark.clause("XPR-5", "SHD-10", "XPR-2")
@pytest.mark.parametrize("kind", ["operation_approval", "plan_approval"])
@pytest.mark.parametrize(("reason", "status", "now", "named"), CAUSES)
def test_a_reason_that_misnames_what_became_of_the_requester_is_named(
    kind: str, reason: str, status: str, now: str, named: bool
) -> None:
    """Each cause in the table, for both protocols; a record whose status the step left alone is
    not judged again (it ended in an earlier step, its requester's status since is another's). A
    request ended ``member_draining`` while its requester stays running is a bystander's of another
    member's drain (found by ``scripts/model_guards.py``: the drain's requester filter dropped)."""
    open_, ended = ("requested", "cancelled") if kind == "operation_approval" else ("pending", "withdrawn")
    record = {"protocol_id": "r-1", "requester_id": "m0", "status": open_, "reason": None}
    before = {"member": [{"member_id": "m0", "status": status}], "operation_approval": [], "plan_approval": []}
    before[kind] = [record]
    after = {
        **before,
        "member": [{"member_id": "m0", "status": now}],
        kind: [{**record, "status": ended, "reason": reason}],
    }
    assert bool(safety.reasons_name_their_causes(before, after)) is named
    assert safety.reasons_name_their_causes(after, after) == []


@pytest.mark.clause("PLN-6")
@pytest.mark.parametrize(
    ("delivered_before", "delivered_after", "named"),
    [(True, True, True), (True, False, True), (False, True, True), (False, False, False)],
)
@pytest.mark.parametrize("target", ["pending", "rejected"])
def test_a_retraction_after_delivery_is_named_whichever_side_shows_the_delivery(
    target: str, delivered_before: bool, delivered_after: bool, named: bool
) -> None:
    """An approved plan back in ``pending`` or ``rejected`` is named when its decision was delivered
    before the step, after it, or both — also where the step cleared the flag (a second outside
    review kept only the "after" half and no test failed)."""
    plan = {"protocol_id": "p1", "status": "approved", "decision_delivered": delivered_before}
    before = {"plan_approval": [plan]}
    after = {"plan_approval": [{**plan, "status": target, "decision_delivered": delivered_after}]}
    assert bool(safety.retraction_only_before_delivery(before, after)) == named
