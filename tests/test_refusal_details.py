"""What each refusal and each record says, word for word (DESIGN rule 8, STYLE rule 10; APR-1,
APR-4, APR-5, APR-9, MSG-1).

Clause: APR-1, APR-4, APR-5, APR-9, MSG-1, STO-2, XPR-3.
Found by the mutation score: a refusal's message could lose the record, the field or the value it
names, the decision message could say "approved" for a rejection, and a message's time to live
could be rounded up, with every test still passing. The errors are what an agent reads to decide
what to do next; the messages are what the other side acts on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import reference as r
from spec.ids import message_id
from tests.conftest import Team

ARGS = {"path": "srv/app"}


def message(team: Team, call: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as caught:
        call()
    return str(caught.value)


@pytest.mark.clause("APR-5", "APR-9", "APR-4", "STO-2", "XPR-3")
def test_every_refusal_names_the_record_the_field_and_the_values(team: Team) -> None:
    h, pid = team.harness, team.approved()
    call = h.approvals.call
    expected = {
        "other agent": (
            lambda: call(team.ctx("m1"), "deploy", ARGS, pid),
            f"approval {pid} belongs to m0, not m1",
        ),
        "stale": (
            lambda: call(team.ctx(incarnation=2), "deploy", ARGS, pid),
            "call call-1 was made for incarnation 2; the member is now incarnation 1 (XPR-1)",
        ),
        "no task": (
            lambda: call(r.CallContext("m0", 1, "call-1", None), "deploy", ARGS, pid),
            "m0 does not hold task <none> (claim it first)",
        ),
        "unknown task": (
            lambda: call(team.ctx(task="nope"), "deploy", ARGS, pid),
            "m0 does not hold task nope (claim it first)",
        ),
        "not responder": (
            lambda: h.approvals.review("m1", pid, "rejected"),
            f"only lead may review {pid}, not m1 (APR-4)",
        ),
        "bad decision": (
            lambda: h.approvals.review("lead", pid, "maybe"),
            "team_review_approval: invalid at $.decision: 'maybe' is not approved or rejected",
        ),
        "ttl conflict": (
            lambda: h.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=60),
            f"{pid}: a request with this id exists with ttl_seconds=300.0, not 60.0; "
            "use a new tool_call_id for a different request",
        ),
    }
    for name, (action, text) in expected.items():
        assert message(team, action) == text, name
    team.harness.set_profile("m0", ["deploy"])
    changed = message(team, lambda: call(team.ctx(), "deploy", ARGS, pid))
    assert (
        changed == f"approval {pid} was made under profile v1; the profile is now v2 (XPR-4) — request a new approval"
    )
    team.harness.set_profile("m0", [])
    assert message(team, lambda: h.approvals.request(team.ctx(call="c9"), "deploy", ARGS)) == (
        "deploy is not in the capability profile v3 of m0; approval never adds capability (APR-7)"
    )


@pytest.mark.clause("APR-5", "APR-4", "APR-9")
def test_refusals_after_the_deadline_and_after_consumption_say_so(team: Team) -> None:
    h, pid = team.harness, team.approved()
    team.clock.advance(301)
    assert message(team, lambda: h.approvals.call(team.ctx(), "deploy", ARGS, pid)) == (
        f"approval {pid} expired at 1300.0 (now 1301.0)"
    )
    late = h.approvals.request(team.ctx(call="call-2"), "deploy", ARGS)
    team.clock.advance(301)
    assert message(team, lambda: h.approvals.review("lead", late, "approved")) == (
        f"approval {late} expired at 1601.0 (now 1602.0)"
    )
    used = team.approved(call="call-3")
    h.approvals.call(team.ctx(call="call-3"), "deploy", ARGS, used)
    assert message(team, lambda: h.approvals.cancel(team.ctx(call="call-3"), used)) == (
        f"cannot cancel {used}: it was consumed; cancel the job or tool call instead (APR-9)"
    )


@pytest.mark.clause("APR-5")
def test_an_approval_for_another_task_names_both(team: Team) -> None:
    h = team.harness
    pid = team.approved()
    h.finish_task("m0", "t0", "completed", h.task_row("t0").doc["claim_token"])  # the holder's token (TSK-1)
    h.add_task("t2")
    h.claim("m0", "t2")
    assert message(team, lambda: h.approvals.call(team.ctx(task="t2"), "deploy", ARGS, pid)) == (
        f"approval {pid} is for task t0, not t2"
    )


@pytest.mark.clause("APR-1", "AUD-1")
def test_the_requested_record_is_exactly_what_the_call_bound(team: Team) -> None:
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=0.5)
    record = team.harness.read("operation_approval", pid).doc  # type: ignore[union-attr]
    assert record == {
        "protocol_id": pid,
        "kind": "operation_approval",
        "status": "requested",
        "requester_id": "m0",
        "requester_incarnation": 1,
        "responder_id": "lead",
        "task_id": "t0",
        "tool_name": "deploy",
        "tool_call_id": "call-1",
        "arguments_digest": team.harness.tool("deploy").digest(ARGS),
        "profile_version": 1,
        "risk_summary": "",
        "review_summary": None,
        "created_at": 1000.0,
        "deadline": 1000.5,
        "consumed_at": None,
        "reason": None,
        "events": [{"actor": "m0", "event": "requested", "summary": "", "at": 1000.0}],
        "version": 0,
    }
    sent = team.harness.read("message", message_id(pid, "request")).doc["message"]  # type: ignore[union-attr]
    assert sent["ttl_seconds"] == 0.5


@pytest.mark.clause("APR-4", "MSG-1")
@pytest.mark.parametrize("decision", ["approved", "rejected"])
def test_the_decision_message_says_the_decision(team: Team, decision: str) -> None:
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=2)
    team.clock.advance(1.5)
    team.harness.approvals.review("lead", pid, decision, "why")
    sent = team.harness.read("message", message_id(pid, "decision")).doc["message"]  # type: ignore[union-attr]
    assert sent["body"] == {"protocol_id": pid, "decision": decision, "review_summary": "why"}
    assert (sent["sender"], sent["target"], sent["ttl_seconds"]) == ("lead", "m0", 0.5)
    assert sent["reply_to"] == message_id(pid, "request")


@pytest.mark.clause("APR-9", "AUD-1")
def test_a_cancelled_record_keeps_its_events(team: Team) -> None:
    pid = team.approved()
    cancelled = team.harness.approvals.cancel(team.ctx(), pid)
    assert [(e["actor"], e["event"]) for e in cancelled["events"]] == [
        ("m0", "requested"),
        ("lead", "approved"),
        ("m0", "cancelled"),
    ]


@pytest.mark.clause("APR-7", "XPR-3")
def test_a_member_without_a_profile_has_no_tools(storage: r.Storage) -> None:
    """A crash between a member's two set-up writes leaves it without a profile: it may use nothing."""
    team = Team(storage, setup=False)
    storage.faults.crash_after.add("member.add/member")
    with pytest.raises(r.Crash):
        team.harness.add_member("m0", ["deploy"])
    team.harness.add_task("t0")
    team.harness.claim("m0", "t0")
    assert message(team, lambda: team.harness.approvals.request(team.ctx(), "deploy", ARGS)) == (
        "deploy is not in the capability profile v0 of m0; approval never adds capability (APR-7)"
    )


def test_an_unprotected_tool_runs_at_once_with_the_arguments_given(team: Team) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    team.harness.tools["read"] = r.Tool(
        "read", lambda key, args: seen.append((key, args)) or {"ok": True}, protected=False
    )
    result = team.harness.approvals.call(team.ctx(), "read", ARGS)
    assert result == {"status": "done", "result": {"ok": True}} and seen == [("call-1", ARGS)]
    assert team.harness.snapshot()["tool_execution"] == []  # an unprotected call leaves no record
