"""Each message goes between its record's parties and repeats its record's facts (MSG-1, MSG-4).

Found blind by the last outside review: the conformance abstraction reads neither a message's
``sender`` and ``target`` nor an approval request's deadline and arguments digest, and no
predicate compared them with the record, so a shutdown acknowledgement sent back to the member
that wrote it (reference mutant ``ack_misaddressed``), or a request carrying another deadline than
its record, passed every check. ``spec.safety.messages_agree_with_records`` now holds each
request to its record's requester and responder, each reply to the way its request came (and its
``reply_to``), and each request's body to the record's fields it repeats. These tests build real
messages with the reference, then change one thing at a time: every change must be named, and
the messages as written must pass.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import reference as r
import spec
from reference._member_process import MemberProcess
from spec import invariants, safety
from spec.ids import message_id
from spec.schemas import BODIES
from tests.test_plans import STEPS, plan

PARTIES = {
    # message type → (sender, target) as the protocol says, written out here and not read from
    # the table under test: a request from its requester, a reply back the way it came
    "approval_request": ("m0", "lead"),
    "approval_decision": ("lead", "m0"),
    "plan_request": ("m0", "lead"),
    "plan_decision": ("lead", "m0"),
    "plan_completion": ("m0", "lead"),
    "shutdown_request": ("lead", "m1"),
    "shutdown_ack": ("m1", "lead"),
}


def _team_snapshot() -> dict[str, Any]:
    """Every kind of request and reply the protocol exchanges, written by the reference."""
    clock = r.ManualClock(0.0)
    world, copier, swap = r.RecordingTool("deploy"), r.RecordingTool("copy"), r.RecordingTool("swap")
    h = r.Harness(r.MemoryStorage(), clock, [world.tool(), copier.tool(), swap.tool()])
    for m in ("m0", "m1"):
        h.add_member(m, ["deploy"])
        h.add_task(f"t{m[1]}")
        h.claim(m, f"t{m[1]}")
    ctx = r.CallContext("m0", 1, "call-1", "t0")
    result = h.approvals.call(ctx, "deploy", {"path": "srv/app"}, risk_summary="restarts the app")
    h.approvals.review("lead", result["protocol_id"], "approved", "ok")
    pid = h.plans.draft(r.CallContext("m0", 1, "plan", "t0"), "p", plan(*STEPS))
    h.plans.submit(r.CallContext("m0", 1, "plan", "t0"), pid)
    h.plans.decide("lead", pid, "approved")
    h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    h.plans.start(r.CallContext("m0", 1, "plan", "t0"), pid)
    for step_id, action, params in STEPS:
        h.plans.step(r.CallContext("m0", 1, "plan", "t0"), pid, {"id": step_id, "action": action, "params": params})
    h.plans.complete(r.CallContext("m0", 1, "plan", "t0"), pid)
    sid = h.shutdowns.request("lead", "m1", "sd-1")
    h.shutdowns.begin_drain("m1", message_id(sid, "request"))
    h.shutdowns.release_task("m1")
    h.shutdowns.finish("m1")
    return h.snapshot()


@pytest.fixture(scope="module")
def snap() -> dict[str, Any]:
    return _team_snapshot()


NOTICE_PARTIES = {
    # the notices no record answers for, as the protocol says (SHD-8, SHD-9, SHD-10)
    "task_suspended": ("m0", "lead"),
    "member_lost": ("lead", "team"),
    "shutdown_notice": ("m1", "team"),
}


WRONG = {
    # each way a notice can go astray: swapped, to the wrong party, from the team, from another
    "task_suspended": ({"sender": "lead", "target": "m0"}, {"target": "team"}, {"target": "m1"}, {"sender": "m1"}),
    "member_lost": ({"sender": "team", "target": "lead"}, {"target": "m2"}, {"sender": "team"}, {"sender": "m2"}),
    "shutdown_notice": ({"sender": "team", "target": "m1"}, {"target": "lead"}, {"sender": "lead"}),
}


def _notices_snapshot() -> dict[str, Any]:
    """A suspension's, a lapse's and a member's own shutdown notice, written by the reference."""
    clock = r.ManualClock(0.0)
    h = r.Harness(r.MemoryStorage(), clock, [r.RecordingTool("deploy").tool()])
    for m in ("m0", "m1", "m2"):
        h.add_member(m, ["deploy"])
        h.add_task(f"t{m[1]}")
        h.claim(m, f"t{m[1]}")
    clock.advance(500)
    h.members.heartbeat("m2", 1)  # its notice says when it last beat
    clock.advance(500)
    h.tasks.suspend("m0", unit_seconds=5)  # SHD-9
    h.members.lapse("m2")  # SHD-10
    MemberProcess(h, "m1", 1, {}).notify("SIGTERM", "stopped at a safe point")  # SHD-8: the member's own exit
    return h.snapshot()


@pytest.fixture(scope="module")
def notices() -> dict[str, Any]:
    return _notices_snapshot()


def test_every_message_type_has_a_rule_of_its_parties() -> None:
    """A new message type is judged from its first message: no rule, no pass (MSG-1)."""
    assert set(spec.MESSAGE_TYPES) == set(safety._PARTIES) | set(safety.NOTICES)
    assert not set(safety._PARTIES) & set(safety.NOTICES)


@pytest.mark.clause("MSG-1", "SHD-8", "SHD-9", "SHD-10")
def test_the_notices_as_written_go_between_their_parties(notices: dict[str, Any]) -> None:
    assert safety.messages_agree_with_records(notices) == []
    seen = {m["message_type"]: (m["sender"], m["target"]) for _, _, m in _places(notices)}
    assert {t: seen[t] for t in NOTICE_PARTIES} == NOTICE_PARTIES


@pytest.mark.clause("MSG-1", "SHD-8", "SHD-9", "SHD-10")
@pytest.mark.parametrize("message_type", sorted(NOTICE_PARTIES))
def test_a_notice_between_other_parties_is_named(notices: dict[str, Any], message_type: str) -> None:
    kind, i, message = next(p for p in _places(notices) if p[2]["message_type"] == message_type)
    for wrong in WRONG[message_type]:
        found = safety.messages_agree_with_records(_changed(notices, kind, i, lambda m, w=wrong: m.update(w)))
        assert [p for p in found if p.startswith(f"{message_type}/{message['message_id']}: ")], (wrong, found)


def test_a_message_of_a_type_no_rule_covers_is_named(notices: dict[str, Any]) -> None:
    kind, i, message = _places(notices)[0]
    found = safety.messages_agree_with_records(_changed(notices, kind, i, lambda m: m.update(message_type="gossip")))
    assert f"gossip/{message['message_id']}: no rule says who sends a gossip to whom (MSG-1)" in found


def _abandoned_snapshot() -> dict[str, Any]:
    """A plan that expired pending, and its ``plan_abandoned`` owed, written by the reference."""
    clock = r.ManualClock(0.0)
    tools = [r.RecordingTool(name).tool() for name in ("deploy", "copy", "swap")]
    h = r.Harness(r.MemoryStorage(), clock, tools)
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    pid = h.plans.draft(r.CallContext("m0", 1, "plan", "t0"), "p", plan(*STEPS))
    h.plans.submit(r.CallContext("m0", 1, "plan", "t0"), pid)
    clock.advance(10_000)
    h.monitor_pass()
    return h.snapshot()


def test_every_field_of_every_message_body_has_a_rule() -> None:
    """MSG-1, MSG-4: a field added to a message's body is judged before it is sent: the rule table
    names every field of every body schema, and a rule that is a check's name names a check."""
    assert set(safety.BODY_RULES) == set(BODIES)
    for message_type, schema in BODIES.items():
        assert set(safety.BODY_RULES[message_type]) == set(schema["properties"]), message_type
    generic = {"record", "record or empty", "correlation", "text"}
    for rules in safety.BODY_RULES.values():
        assert all(rule in generic or callable(getattr(safety, rule, None)) for rule in rules.values()), rules


def _other(value: Any) -> Any:
    """Another value of the same shape: the field says something else."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return f"other {value}"
    if isinstance(value, list):
        return value[:-1] if value else ["t9"]
    if isinstance(value, dict):
        return {**value, "goal": "another goal"}
    return "other"


def _judged(snap: dict[str, Any], kind: str, i: int) -> set[str]:
    """What the state checks, and the step checks of the step that first wrote it, say of message
    ``i`` of section ``kind``."""
    message = snap[kind][i]["message"]
    before = copy.deepcopy(snap)
    for section in ("message", "outbox_entry"):  # on the bus, its outbox entry too
        before[section] = [row for row in before[section] if row["message"]["message_id"] != message["message_id"]]
    found = [p for _, p in invariants.check_state(snap) + invariants.check_step(before, snap)]
    return {p for p in found if message["message_id"] in p or message["correlation_id"] in p}


BODY_SNAPSHOTS = (_team_snapshot, _notices_snapshot, _abandoned_snapshot)


@pytest.mark.clause("MSG-1", "MSG-4", "SHD-9", "SHD-10", "PLN-5")
@pytest.mark.parametrize(
    ("message_type", "field"),
    [(t, f) for t, rules in sorted(safety.BODY_RULES.items()) for f, rule in rules.items() if rule != "text"],
)
def test_a_body_field_that_says_other_than_its_rule_is_named(message_type: str, field: str) -> None:
    """Each field of a message as the reference writes it, changed alone to another value, is named
    by some check (the message's id in its problem) that the message as written passes — whatever
    rule judges it: the record's field, the correlation id, or the check the table names."""
    snap = next(
        s
        for s in (make() for make in BODY_SNAPSHOTS)
        if any(m["message_type"] == message_type for _, _, m in _places(s))
    )
    kind, i, message = next(p for p in _places(snap) if p[2]["message_type"] == message_type)
    healthy = _judged(snap, kind, i)
    broken = copy.deepcopy(snap)
    for _, _, copied in _places(broken):  # on the bus and in the outbox alike
        if copied["message_id"] == message["message_id"]:
            copied["body"][field] = _other(message["body"].get(field))
    assert _judged(broken, kind, i) - healthy, (field, message["body"].get(field))


@pytest.mark.clause("MSG-4", "REC-3")
def test_a_message_sent_after_it_was_owed_is_its_entrys_very_message() -> None:
    """A notice owed at one instant and sent later is put on the bus as it was owed."""
    clock = r.ManualClock(0.0)
    h = r.Harness(r.MemoryStorage(), clock, [r.RecordingTool("deploy").tool()])
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    clock.advance(10)
    h.tasks.suspend("m0", unit_seconds=5)
    clock.advance(3)
    h.outbox.send_owed()
    snap = h.snapshot()
    assert [row["message"]["message_type"] for row in snap["message"]] == ["task_suspended"]
    assert safety.messages_agree_with_records(snap) == []


@pytest.mark.clause("MSG-4", "REC-3")
def test_a_message_on_the_bus_other_than_its_outbox_entry_is_named(notices: dict[str, Any]) -> None:
    """One id, one message: what the outbox sends is its entry's very message (REC-3), so a bus
    message whose body or envelope differs from its entry's is named."""
    kind, i, message = next(p for p in _places(notices) if p[0] == "message")
    assert any(m["message_id"] == message["message_id"] for section, _, m in _places(notices) if section != "message")
    for change in (lambda m: m["body"].update(reason_text="other"), lambda m: m.update(ttl_seconds=7)):
        found = safety.messages_agree_with_records(_changed(notices, kind, i, change))
        assert [p for p in found if "other than its outbox entry" in p and message["message_id"] in p], found


def _places(snap: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """(section, index, message) of every message on the bus or still owed."""
    return [(kind, i, row["message"]) for kind in ("message", "outbox_entry") for i, row in enumerate(snap[kind])]


def _changed(snap: dict[str, Any], kind: str, i: int, change: Any) -> dict[str, Any]:
    broken = copy.deepcopy(snap)
    change(broken[kind][i]["message"])
    return broken


@pytest.mark.clause("MSG-1", "MSG-4")
def test_the_messages_as_written_go_between_their_records_parties(snap: dict[str, Any]) -> None:
    assert safety.messages_agree_with_records(snap) == []
    seen = {m["message_type"]: (m["sender"], m["target"]) for _, _, m in _places(snap)}
    assert {t: seen[t] for t in PARTIES} == PARTIES  # every kind is exercised, between the right parties


@pytest.mark.clause("MSG-1")
@pytest.mark.parametrize("message_type", sorted(PARTIES))
def test_a_message_between_other_parties_is_named(snap: dict[str, Any], message_type: str) -> None:
    sender, target = PARTIES[message_type]
    kind, i, message = next(p for p in _places(snap) if p[2]["message_type"] == message_type)
    for wrong in ({"sender": target, "target": sender}, {"sender": "m2"}, {"target": sender}):
        found = safety.messages_agree_with_records(_changed(snap, kind, i, lambda m, w=wrong: m.update(w)))
        expected = f"{message_type}/{message['message_id']}: from {wrong.get('sender', sender)} to "
        assert [p for p in found if p.startswith(expected)], (wrong, found)


REPEATED = {
    "approval_request": (
        "protocol_id",
        "requester_id",
        "requester_incarnation",
        "task_id",
        "tool_name",
        "arguments_digest",
        "profile_version",
        "risk_summary",
        "deadline",
    ),
    "plan_request": ("plan", "revision", "supersedes", "requester_incarnation"),
    "shutdown_request": ("protocol_id", "target_incarnation", "reason_text", "deadline"),
}


@pytest.mark.clause("MSG-1", "APR-1", "PLN-1", "SHD-1")
@pytest.mark.parametrize(("message_type", "field"), [(t, f) for t, fields in REPEATED.items() for f in fields])
def test_a_request_that_says_other_than_its_record_is_named(
    snap: dict[str, Any], message_type: str, field: str
) -> None:
    kind, i, message = next(p for p in _places(snap) if p[2]["message_type"] == message_type)
    value = message["body"][field]
    other = value + 1 if isinstance(value, (int, float)) and not isinstance(value, bool) else f"other {value}"
    found = safety.messages_agree_with_records(_changed(snap, kind, i, lambda m: m["body"].update({field: other})))
    assert [p for p in found if p.startswith(f"{message_type}/{message['message_id']}: says {field} ")], found


@pytest.mark.clause("MSG-1")
@pytest.mark.parametrize("message_type", ["approval_decision", "plan_decision", "shutdown_ack", "plan_completion"])
def test_a_reply_names_the_request_it_answers_and_nothing_else_does(snap: dict[str, Any], message_type: str) -> None:
    kind, i, message = next(p for p in _places(snap) if p[2]["message_type"] == message_type)
    if "reply_to" in message:
        assert message["reply_to"] == message_id(message["correlation_id"], "request")
        change = lambda m: m.update({"reply_to": message_id(m["correlation_id"], "ack")})  # noqa: E731
    else:  # a completion answers no request: naming one is wrong
        change = lambda m: m.update({"reply_to": message_id(m["correlation_id"], "request")})  # noqa: E731
    found = safety.messages_agree_with_records(_changed(snap, kind, i, change))
    assert [p for p in found if p.startswith(f"{message_type}/{message['message_id']}: replies to ")], found
