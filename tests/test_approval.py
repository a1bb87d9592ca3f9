"""The operation-approval protocol, clause by clause, on both backends.

Clause: APR-1 … APR-9, STO-2, MSG-3 … MSG-6, XPR-3 … XPR-5, AUD-1, AUD-3 … AUD-5, INV-1, INV-6, INV-10.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference as r
import spec
from spec import invariants
from spec.ids import arguments_digest, message_id, protocol_id
from spec.secret_corpus import SECRETS, carrier
from tests.conftest import Team

ARGS = {"path": "srv/app"}


def refused(team: Team, error: type[Exception], action: Callable[[], Any]) -> Exception:
    """The action raises ``error`` and every store is exactly as it was (definite)."""
    before = team.harness.snapshot()
    with pytest.raises(error) as caught:
        action()
    assert team.harness.snapshot() == before
    assert getattr(caught.value, "definite", True)
    return caught.value


def holds(team: Team) -> None:
    snap = team.harness.snapshot()
    spec.validate_snapshot(snap)
    assert invariants.check_state(snap) == []


@pytest.mark.clause("APR-1", "MSG-6", "MSG-1")
def test_protected_call_without_approval_executes_nothing_and_requests(team: Team) -> None:
    """APR-1: no call happens; a requested record bound to the call and a stable request message."""
    result = team.harness.approvals.call(team.ctx(), "deploy", ARGS, risk_summary="rolls out srv/app")
    assert result["status"] == "approval_required" and team.world.calls == []
    record = team.harness.read("operation_approval", result["protocol_id"]).doc
    assert (record["status"], record["requester_id"], record["task_id"], record["responder_id"]) == (
        "requested",
        "m0",
        "t0",
        "lead",
    )
    assert record["arguments_digest"] == arguments_digest("deploy", ARGS)
    message = team.harness.read("message", message_id(result["protocol_id"], "request"))
    assert message is not None and message.doc["message"]["message_type"] == "approval_request"
    assert team.harness.wake.get_nowait() == message.key
    holds(team)


@pytest.mark.clause("APR-2")
@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers() | st.text(max_size=5), max_size=5))
def test_digest_ignores_key_order_and_changes_with_any_value(arguments: dict[str, Any]) -> None:
    reordered = dict(reversed(list(arguments.items())))
    assert arguments_digest("deploy", arguments) == arguments_digest("deploy", reordered)
    changed = {**arguments, "extra-key": "x"}
    assert arguments_digest("deploy", arguments) != arguments_digest("deploy", changed)
    for key, value in arguments.items():
        other = {**arguments, key: [value]}
        assert arguments_digest("deploy", arguments) != arguments_digest("deploy", other)


@pytest.mark.clause("APR-2")
def test_per_tool_normalisation_runs_before_hashing() -> None:
    tool = r.RecordingTool().tool(r.normalize_paths("path", defaults={"mode": "safe"}))
    assert tool.digest({"path": "srv/./app/../app"}) == tool.digest({"path": "srv/app", "mode": "safe"})
    assert tool.digest({"path": "srv/app"}) != tool.digest({"path": "srv/other"})


@pytest.mark.clause("APR-3", "AUD-4")
def test_agent_tools_take_identity_from_the_harness(team: Team) -> None:
    tool = r.AGENT_TOOLS["team_request_approval"]
    for forged in ("actor_id", "requester_id", "tool_call_id"):
        refused(
            team,
            r.ForgedIdentity,
            lambda f=forged: tool(team.harness, team.ctx(), {"tool_name": "deploy", "arguments": ARGS, f: "m1"}),
        )
    result = tool(team.harness, team.ctx(), {"tool_name": "deploy", "arguments": ARGS})
    assert team.harness.read("operation_approval", result["protocol_id"]).doc["requester_id"] == "m0"
    refused(team, spec.SchemaError, lambda: tool(team.harness, team.ctx(), {"tool_name": "deploy"}))
    assert set(r.AGENT_TOOLS) == {
        "team_request_approval",
        "team_review_approval",
        "team_protocol_status",
        "team_cancel_protocol",
        "team_request_plan_approval",
        "team_decide_plan",
        "team_request_shutdown",
    }


@pytest.mark.clause("APR-3", "APR-5")
def test_identity_inside_the_tools_own_arguments_is_content_not_identity(team: Team) -> None:
    """APR-3: the protected tool's own arguments are what the model wrote; a ``requester_id`` or
    ``actor_id`` among them is business content (hashed with the rest), never who asks. The
    record names the caller the harness knows, through the agent tool and directly, and only that
    caller may use it (mutant ``requester_from_arguments``)."""
    forged = {"path": "srv/app", "requester_id": "m1", "actor_id": "m1"}
    tool = r.AGENT_TOOLS["team_request_approval"]
    pid = tool(team.harness, team.ctx(), {"tool_name": "deploy", "arguments": forged})["protocol_id"]
    doc = team.harness.read("operation_approval", pid).doc
    assert (doc["requester_id"], doc["task_id"]) == ("m0", "t0")
    deploy = team.harness.tool("deploy")
    assert doc["arguments_digest"] == deploy.digest(forged) != deploy.digest(ARGS)
    direct = team.harness.approvals.request(team.ctx(call="call-2"), "deploy", forged)
    assert team.harness.read("operation_approval", direct).doc["requester_id"] == "m0"
    team.harness.approvals.review("lead", pid, "approved")
    refused(
        team,
        r.ApprovalOtherAgent,
        lambda: team.harness.approvals.call(team.ctx("m1"), "deploy", forged, approval_id=pid),
    )
    result = team.harness.approvals.call(team.ctx(), "deploy", forged, approval_id=pid)
    assert result["status"] == "done"
    assert team.harness.read("operation_approval", pid).doc["status"] == "consumed"


@pytest.mark.clause("APR-4", "AUD-3")
def test_review_only_by_the_responder_idempotent_and_redacted(team: Team) -> None:
    pid = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    refused(team, r.NotResponder, lambda: team.harness.approvals.review("m1", pid, "approved"))
    secret_summary = "fine, use " + carrier("github_token")
    first = team.harness.approvals.review("lead", pid, "approved", secret_summary)
    assert SECRETS["github_token"] not in str(first)
    again = team.harness.approvals.review("lead", pid, "approved", "again")
    assert again["status"] == "approved" and len(again["events"]) == len(first["events"])
    refused(team, r.ReviewConflict, lambda: team.harness.approvals.review("lead", pid, "rejected"))
    # once decided too, only the responder's word counts: the same decision again from another
    # member is refused (not taken as the idempotent repeat), and so is a different one
    for decision in ("approved", "rejected"):
        refused(team, r.NotResponder, lambda d=decision: team.harness.approvals.review("m1", pid, d))


@pytest.mark.clause("APR-4", "INV-12")
def test_review_after_the_deadline_fails(team: Team) -> None:
    pid = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    team.clock.advance(301)
    refused(team, r.ApprovalExpired, lambda: team.harness.approvals.review("lead", pid, "approved"))
    assert team.harness.approvals.expire_due() == [pid]
    assert team.harness.read("operation_approval", pid).doc["reason"] == "expired"


@pytest.mark.clause("APR-5", "APR-6", "INV-1")
def test_consume_runs_the_call_once_and_never_again(team: Team) -> None:
    pid = team.approved()
    result = team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    assert result["idempotency_key"] == pid and len(team.world.calls) == 1
    assert team.harness.read("operation_approval", pid).doc["status"] == "consumed"
    error = refused(team, r.ApprovalNotActive, lambda: team.harness.approvals.call(team.ctx(), "deploy", ARGS, pid))
    assert "never reused" in str(error)
    assert len(team.world.calls) == 1
    holds(team)


@pytest.mark.clause("APR-6")
def test_a_failed_call_still_consumes_its_approval(team: Team) -> None:
    pid = team.approved()
    team.world.fail = True
    result = team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    assert result["result"]["ok"] is False
    assert team.harness.read("tool_execution", pid).doc["status"] == "failed"
    refused(team, r.ApprovalNotActive, lambda: team.harness.approvals.call(team.ctx(), "deploy", ARGS, pid))


@pytest.mark.clause("APR-5", "XPR-4", "APR-7", "XPR-1")
def test_every_consumption_refusal_is_typed_and_changes_nothing(team: Team) -> None:
    pid = team.approved()
    call = team.harness.approvals.call
    refused(team, r.ApprovalOtherAgent, lambda: call(team.ctx("m1"), "deploy", ARGS, pid))
    refused(team, r.NotTaskOwner, lambda: call(team.ctx(task="t1"), "deploy", ARGS, pid))
    error = refused(team, r.ArgumentsChanged, lambda: call(team.ctx(), "deploy", {"path": "srv/other"}, pid))
    assert error.expected_digest == arguments_digest("deploy", ARGS)  # type: ignore[attr-defined]
    refused(team, r.StaleIncarnation, lambda: call(team.ctx(incarnation=2), "deploy", ARGS, pid))
    refused(team, r.UnknownApproval, lambda: call(team.ctx(), "deploy", ARGS, "not-an-id"))
    team.harness.tools["other"] = r.RecordingTool("other").tool()
    team.harness.set_profile("m0", ["deploy", "other"])
    refused(team, r.ToolMismatch, lambda: call(team.ctx(), "other", ARGS, pid))
    refused(team, r.ProfileChanged, lambda: call(team.ctx(), "deploy", ARGS, pid))
    team.harness.set_profile("m0", [])
    refused(team, r.ToolNotInProfile, lambda: call(team.ctx(), "deploy", ARGS, pid))
    assert team.world.calls == []


@pytest.mark.clause("APR-5", "INV-12")
def test_consume_after_the_deadline_is_refused(team: Team) -> None:
    pid = team.approved()
    team.clock.advance(301)
    refused(team, r.ApprovalExpired, lambda: team.harness.approvals.call(team.ctx(), "deploy", ARGS, pid))


@pytest.mark.clause("APR-7", "INV-9")
def test_approval_never_adds_capability(team: Team) -> None:
    team.harness.set_profile("m0", [])
    refused(team, r.ToolNotInProfile, lambda: team.harness.approvals.call(team.ctx(), "deploy", ARGS))


@pytest.mark.clause("XPR-2")
def test_a_member_that_is_not_running_cannot_consume(team: Team) -> None:
    pid = team.approved()
    stored = team.harness.read("member", "m0")
    team.storage.update(
        "test/drain", "member", "m0", {**stored.doc, "status": "draining", "accepting_new_tasks": False}, stored.version
    )
    refused(team, r.MemberNotRunning, lambda: team.harness.approvals.call(team.ctx(), "deploy", ARGS, pid))


@pytest.mark.clause("XPR-3")
def test_fail_closed_when_a_check_cannot_complete(team: Team) -> None:
    pid = team.approved()
    team.storage.corrupt("capability_profile", "m0", "{torn")  # type: ignore[attr-defined]
    writes = team.storage.writes
    with pytest.raises(r.FailClosed) as caught:
        team.harness.approvals.call(team.ctx(), "deploy", ARGS, pid)
    assert "capability_profile/m0" in str(caught.value) and caught.value.definite
    assert team.world.calls == [] and team.storage.writes == writes
    assert team.harness.read("operation_approval", pid).doc["status"] == "approved"


@pytest.mark.clause("APR-9", "XPR-5")
def test_cancel_before_consumption_only(team: Team) -> None:
    pid = team.approved()
    refused(team, r.ApprovalOtherAgent, lambda: team.harness.approvals.cancel(team.ctx("m1"), pid))
    cancelled = team.harness.approvals.cancel(team.ctx(), pid)
    assert (cancelled["status"], cancelled["reason"]) == ("cancelled", "cancelled")
    used = team.approved(call="call-2")
    team.harness.approvals.call(team.ctx(call="call-2"), "deploy", ARGS, approval_id=used)
    error = refused(team, r.CancelRefused, lambda: team.harness.approvals.cancel(team.ctx(), used))
    assert "consumed" in str(error)


@pytest.mark.clause("APR-9")
def test_an_approved_approval_past_its_deadline_may_still_be_cancelled(team: Team) -> None:
    """APR-9: the requester may cancel until the approval is consumed. Past its deadline, before the
    monitor's pass, it is still ``approved`` (only the monitor expires it), so the cancel is taken."""
    pid = team.approved()
    team.clock.advance(301)
    cancelled = team.harness.approvals.cancel(team.ctx(), pid)
    assert (cancelled["status"], cancelled["reason"]) == ("cancelled", "cancelled")


@pytest.mark.clause("STO-2", "MSG-4", "INV-6")
def test_retry_returns_the_same_record_and_message(team: Team) -> None:
    first = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    before = team.harness.snapshot()
    again = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    assert again == first and team.harness.snapshot() == before
    refused(team, r.ProtocolConflict, lambda: team.harness.approvals.call(team.ctx(), "deploy", {"path": "x"}))
    assert invariants.retry_creates_no_duplicate(team.harness.snapshot()) == []


@pytest.mark.clause("MSG-5", "MSG-3")
def test_delivery_is_deduplicated_and_reading_completes_nothing(team: Team) -> None:
    pid = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    mid = message_id(pid, "request")
    first = team.harness.deliver(mid, pid)
    team.clock.advance(5)
    assert team.harness.deliver(mid, pid) == first
    team.harness.acknowledge(mid)
    assert team.harness.read("operation_approval", pid).doc["status"] == "requested"


@pytest.mark.clause("MSG-5")
@pytest.mark.parametrize("delivered", [False, True], ids=["pending", "delivered"])
def test_a_delivery_under_another_correlation_id_is_no_duplicate(team: Team, delivered: bool) -> None:
    """MSG-5 deduplicates on the pair (message, correlation id): the message under another request's
    correlation id is unknown, whether or not it was delivered under its own (a duplicate check
    placed before the comparison answers it with the first delivery's result)."""
    pid = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    mid = message_id(pid, "request")
    if delivered:
        team.harness.deliver(mid, pid)
    other = protocol_id("m1", "call-9", "operation_approval")
    refused(team, r.UnknownRecord, lambda: team.harness.deliver(mid, other))


@pytest.mark.clause("MSG-3", "MSG-1", "INV-3")
@pytest.mark.parametrize("status", ["pending", "expired"])
def test_only_a_delivered_message_is_acknowledged(team: Team, status: str) -> None:
    """A message is acknowledged only after it was read (delivered → acknowledged, INV-3): a
    message still pending (never read) or expired unread (MSG-1) is refused by its machine and
    nothing changes — an expired request brought back as acknowledged would look handled, and the
    storage itself does not enforce the machine (outside review 44 P7: the guard deleted)."""
    pid = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    mid = message_id(pid, "request")
    if status == "expired":
        team.clock.advance(301)
        team.harness.monitor_pass()
    assert team.harness.read("message", mid).doc["status"] == status
    refused(team, spec.IllegalTransition, lambda: team.harness.acknowledge(mid))


@pytest.mark.clause("AUD-1", "AUD-2", "AUD-5")
def test_events_are_kept_with_the_record_and_chained_in_the_team_log(team: Team) -> None:
    pid = team.approved()
    team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    events = [e["event"] for e in team.harness.read("operation_approval", pid).doc["events"]]
    assert events == ["requested", "approved", "consumed"]
    assert r.verify_audit_log(team.storage).ok
    assert r.verify_audit_log(team.storage).entries == 3


@pytest.mark.clause("AUD-5")
def test_the_verifier_names_the_first_broken_link(team: Team) -> None:
    pid = team.approved()
    team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    row = team.storage.read("audit_entry", f"{1:012d}")
    import json

    team.storage.corrupt("audit_entry", row.key, json.dumps({**row.doc, "summary": "nothing to see"}))  # type: ignore[attr-defined]
    report = r.verify_audit_log(team.storage)
    assert (report.ok, report.first_bad) == (False, 1) and "altered" in report.reason


@pytest.mark.clause("AUD-3", "INV-10")
def test_no_secret_reaches_any_store(team: Team) -> None:
    for number, name in enumerate(sorted(SECRETS)):
        call = f"call-{number}"
        pid = team.harness.approvals.call(
            team.ctx(call=call), "deploy", {"path": f"p{number}"}, risk_summary=carrier(name)
        )["protocol_id"]
        team.harness.approvals.review("lead", pid, "approved", carrier(name))
    assert invariants.no_secret_stored(team.harness.snapshot()) == []


@pytest.mark.clause("AUD-4")
def test_status_shows_only_records_the_caller_takes_part_in(team: Team) -> None:
    pid = team.harness.approvals.call(team.ctx(), "deploy", ARGS)["protocol_id"]
    status = r.AGENT_TOOLS["team_protocol_status"]
    assert [x["protocol_id"] for x in status(team.harness, team.ctx(), {})["records"]] == [pid]
    assert status(team.harness, team.ctx("m1"), {})["records"] == []
    assert status(team.harness, r.CallContext("lead", 1, "x"), {})["records"][0]["protocol_id"] == pid
    review = r.AGENT_TOOLS["team_review_approval"]
    assert review(team.harness, r.CallContext("lead", 1, "x"), {"protocol_id": pid, "decision": "rejected"}) == {
        "protocol_id": pid,
        "status": "rejected",
    }
    cancel = r.AGENT_TOOLS["team_cancel_protocol"]
    refused(team, r.CancelRefused, lambda: cancel(team.harness, team.ctx(), {"protocol_id": pid}))


@pytest.mark.clause("MSG-6", "MSG-4", "STO-2")
@pytest.mark.parametrize("cut", ["approval.request/record", "approval.request/message"])
def test_a_retry_after_a_cut_request_owes_its_message_before_any_reconciliation(team: Team, cut: str) -> None:
    """The request cut after its record (a crash, or a storage error on the message's insert) and
    its caller's retry, the same call, before any restart: the retry finds the record and posts
    the request message it still owes — once, under its stable id (outside review 39 posted it
    only from the call that created the record: the retry returned the id, and the approver was
    never told until a restart reconciled)."""
    h = team.harness
    h.storage.faults.crash_after.add(cut)
    with pytest.raises(r.Crash):
        h.approvals.request(team.ctx(), "deploy", ARGS)
    h.storage.faults.crash_after.clear()
    pid = h.approvals.request(team.ctx(), "deploy", ARGS)
    sent = [m["message"] for m in h.snapshot()["message"] if m["message"]["correlation_id"] == pid]
    assert [(m["message_type"], m["message_id"]) for m in sent] == [("approval_request", message_id(pid, "request"))]
    assert h.read("operation_approval", pid).doc["status"] == "requested"
