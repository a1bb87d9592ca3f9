"""Plan approval and plan execution in the reference, by example (PLN-1 … PLN-11, XPR-1, XPR-2).

The model abstracts a plan's contents; what binds an execution to its approved steps (PLN-4) is
checked here alone: one test per kind of deviation. The plan model tests
(``model_tests/test_stateful.py::TestPlanProtocol``) check the rest against the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import reference as r
import spec
import spec._tables
from spec import invariants
from spec.ids import message_id
from spec.secret_corpus import CARRIERS, carrier

TTL = 5


def plan(*steps: tuple[str, str, dict[str, Any]], ttl: float = TTL) -> dict[str, Any]:
    return {
        "goal": "migrate the orders table",
        "steps": [{"id": i, "action": a, "params": p} for i, a, p in steps],
        "estimated_cost": 2.5,
        "rollback": "restore the backup",
        "risks": ["lock contention"],
        "ttl_seconds": ttl,
    }


STEPS = (("s1", "copy", {"path": "data/orders"}), ("s2", "swap", {"table": "orders"}), ("s3", "copy", {"path": "x"}))


class Team:
    """A team of two members (m0 holds t0, m1 holds t1) and a world that records tool calls."""

    def __init__(self, storage: r.Storage | None = None) -> None:
        self.clock = r.ManualClock(0.0)
        self.copy, self.swap = r.RecordingTool("copy"), r.RecordingTool("swap")
        tools = [self.copy.tool(r.normalize_paths("path")), self.swap.tool()]
        self.storage = storage or r.MemoryStorage()
        self.h = r.Harness(self.storage, self.clock, tools)
        for m in ("m0", "m1"):
            self.h.add_member(m, [])
            self.h.add_task(f"t{m[1]}")
            self.h.claim(m, f"t{m[1]}")

    def ctx(self, member: str = "m0", incarnation: int | None = None) -> r.CallContext:
        doc = self.h.member(member)
        inc = doc["incarnation"] if incarnation is None else incarnation
        return r.CallContext(member, inc, "call", doc["current_task_id"])

    def pending(self, key: str = "p", body: dict[str, Any] | None = None) -> str:
        pid = self.h.plans.draft(self.ctx(), key, body or plan(*STEPS))
        self.h.plans.submit(self.ctx(), pid)
        return pid

    def approved(self, deliver: bool = True) -> str:
        pid = self.pending()
        self.h.plans.decide("lead", pid, "approved")
        if deliver:
            self.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
        return pid

    def started(self) -> str:
        pid = self.approved()
        self.h.plans.start(self.ctx(), pid)
        return pid

    def plan_doc(self, pid: str) -> dict[str, Any]:
        return self.h.plans.require(pid).doc

    def run(self, pid: str) -> dict[str, Any]:
        row = self.h.read("plan_execution", pid)
        assert row is not None
        return row.doc

    def owed(self, kind: str) -> list[dict[str, Any]]:
        return [e["message"] for e in self.h.snapshot()["outbox_entry"] if e["message"]["message_type"] == kind]


@pytest.fixture(params=["memory", "sqlite"])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Team:
    return Team(r.SQLiteStorage(tmp_path / "team.db") if request.param == "sqlite" else None)


@pytest.mark.clause("PLN-1", "PLN-2", "PLN-3", "PLN-4", "PLN-7", "PLN-10", "MSG-2")
def test_an_approved_plan_runs_its_steps_once_and_reports_completion(team: Team) -> None:
    pid = team.started()
    run = team.run(pid)
    assert (run["status"], run["executed_step_ids"]) == ("running", [])  # PLN-7: marker before step 1
    assert team.plan_doc(pid)["status"] == "consumed"
    # normalised parameters (APR-2's normaliser of the tool) match the approved step
    team.h.plans.step(team.ctx(), pid, {"id": "s1", "action": "copy", "params": {"path": "data/./orders"}})
    for step in STEPS[1:]:
        team.h.plans.step(team.ctx(), pid, {"id": step[0], "action": step[1], "params": step[2]})
    team.h.plans.complete(team.ctx(), pid)
    assert team.run(pid)["executed_step_ids"] == ["s1", "s2", "s3"]
    assert [key for key, _ in team.copy.calls] == [f"{pid}/s1", f"{pid}/s3"]
    assert [m["body"]["outcome"] for m in team.owed("plan_completion")] == ["completed"]
    assert team.owed("plan_completion")[0]["correlation_id"] == pid  # PLN-10
    with pytest.raises(r.PlanAlreadyStarted):
        team.h.plans.start(team.ctx(), pid)
    assert invariants.check_state(team.h.snapshot()) == []


DEVIATIONS = {
    "unknown_step": [{"id": "s9", "action": "copy", "params": {"path": "data/orders"}}],
    "changed_parameters": [{"id": "s1", "action": "copy", "params": {"path": "data/customers"}}],
    "changed_tool": [{"id": "s1", "action": "swap", "params": {"path": "data/orders"}}],
    "reordered": [{"id": "s2", "action": "swap", "params": {"table": "orders"}}],
    "repeated": [STEPS[0], STEPS[0]],
    "extra_step": [*STEPS, STEPS[2]],
}


@pytest.mark.clause("PLN-4", "PLN-9", "INV-8")
@pytest.mark.parametrize("kind", [*DEVIATIONS, "skipped"])
def test_each_kind_of_deviation_fails_the_execution_and_rolls_it_back(kind: str) -> None:
    """Checked before the step runs: the deviating step never reaches its tool; the execution is
    failed, then rolled back; the typed error names the step and the difference."""
    team = Team()
    pid = team.started()
    steps = [
        s if isinstance(s, dict) else {"id": s[0], "action": s[1], "params": s[2]}
        for s in DEVIATIONS.get(kind, STEPS[:2])
    ]
    *good, last = steps
    for step in good:
        team.h.plans.step(team.ctx(), pid, step)
    calls = len(team.copy.calls) + len(team.swap.calls)
    with pytest.raises(r.PlanDeviation) as caught:
        if kind == "skipped":
            team.h.plans.step(team.ctx(), pid, last)
            team.h.plans.complete(team.ctx(), pid)
        else:
            team.h.plans.step(team.ctx(), pid, last)
    assert caught.value.deviation == kind
    assert f"step {caught.value.index + 1}" in str(caught.value)
    if kind != "skipped":
        assert len(team.copy.calls) + len(team.swap.calls) == calls, "the deviating step ran"
    run = team.run(pid)
    assert run["status"] == "rolled_back"
    assert [e["event"] for e in run["events"]][-2:] == ["failed", "rolled_back"]
    assert [m["body"]["outcome"] for m in team.owed("plan_completion")] == ["rolled_back"]
    with pytest.raises(r.ExecutionNotRunning):
        team.h.plans.step(team.ctx(), pid, {"id": "s1", "action": "copy", "params": {"path": "data/orders"}})


@pytest.mark.clause("PLN-5", "PLN-8", "INV-12")
def test_a_timeout_never_approves_and_an_expired_id_is_never_tried_again(team: Team) -> None:
    pid = team.pending()
    team.clock.advance(TTL + 1)
    team.h.monitor_pass()
    doc = team.plan_doc(pid)
    assert (doc["status"], doc["reason"]) == ("expired", "expired")
    assert [m["body"]["reason"] for m in team.owed("plan_abandoned")] == ["expired"]
    before = team.h.snapshot()
    for call in (
        lambda: team.h.plans.decide("lead", pid, "approved"),
        lambda: team.h.plans.submit(team.ctx(), pid),
        lambda: team.h.plans.start(team.ctx(), pid),
    ):
        with pytest.raises(r.PlanRefused) as caught:
            call()
        assert caught.value.definite
    assert team.h.plans.draft(team.ctx(), "p", plan(*STEPS)) == pid  # the same id, still expired
    assert team.h.snapshot() == before


@pytest.mark.clause("PLN-8")
def test_a_rejected_plan_is_never_retried_and_a_revision_is_a_new_record_in_its_lineage() -> None:
    """A revision counts its lineage from the record it supersedes: 1, 2, 3 (outside review 39 read
    the number off the plan's body, and a revision of a revision was numbered 2 again)."""
    team = Team()
    rejected = team.pending("a")
    team.h.plans.decide("lead", rejected, "rejected", comment="too risky")
    before = team.h.snapshot()
    assert team.h.plans.draft(team.ctx(), "a", plan(*STEPS)) == rejected  # the same id, still rejected
    assert team.h.snapshot() == before
    with pytest.raises(r.PlanStatusConflict):
        team.h.plans.submit(team.ctx(), rejected)
    with pytest.raises(r.PlanStatusConflict):
        team.h.plans.draft(team.ctx(), "a2", plan(*STEPS), supersedes=rejected)
    sent_back = team.pending("b")
    team.h.plans.decide("lead", sent_back, "needs_revision", comment="split s2")
    revision = team.h.plans.draft(team.ctx(), "b2", plan(*STEPS[:1]), supersedes=sent_back)
    doc = team.plan_doc(revision)
    assert (doc["revision"], doc["supersedes"], doc["status"]) == (2, sent_back, "draft")
    assert revision != sent_back and team.plan_doc(sent_back)["status"] == "needs_revision"
    team.h.plans.submit(team.ctx(), revision)  # sent back again: a revision of a revision is the third
    team.h.plans.decide("lead", revision, "needs_revision", comment="smaller still")
    third = team.h.plans.draft(team.ctx(), "b3", plan(*STEPS[:1]), supersedes=revision)
    assert (team.plan_doc(third)["revision"], team.plan_doc(third)["supersedes"]) == (3, revision)
    decision = team.h.read("message", message_id(rejected, "decision-0"))
    assert decision is not None and decision.doc["message"]["body"]["comment"] == "too risky"  # PLN-2


@pytest.mark.clause("PLN-6")
def test_an_approval_is_retracted_only_before_its_decision_is_delivered() -> None:
    team = Team()
    pid = team.approved(deliver=False)
    team.h.plans.retract("lead", pid, "pending")
    decision0 = team.h.read("message", message_id(pid, "decision-0"))
    assert decision0 is not None and decision0.doc["status"] == "expired"
    team.h.plans.decide("lead", pid, "approved")
    team.h.plans.deliver_decision("m0", message_id(pid, "decision-1"))
    before = team.h.snapshot()
    for to in ("pending", "rejected"):
        with pytest.raises(r.PlanStatusConflict, match="PLN-6"):
            team.h.plans.retract("lead", pid, to)
    assert team.h.snapshot() == before
    with pytest.raises(r.MessageNotPending):  # the retracted decision arrives late: refused, ignored
        team.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))


@pytest.mark.clause("PLN-6", "PLN-7", "MSG-3")
@pytest.mark.parametrize("retractions", [0, 1, 2])
def test_the_start_acknowledges_the_decision_that_stands(retractions: int) -> None:
    """After each retraction a new decision is sent (phase ``decision-<n>``); the start acknowledges
    the one it acted on, the delivered decision that stands, and no earlier one."""
    team = Team()
    pid = team.approved(deliver=False)
    for _ in range(retractions):
        team.h.plans.retract("lead", pid, "pending")
        team.h.plans.decide("lead", pid, "approved")
    team.h.plans.deliver_decision("m0", message_id(pid, f"decision-{retractions}"))
    team.h.plans.start(team.ctx(), pid)
    statuses = [team.h.read("message", message_id(pid, f"decision-{n}")).doc["status"] for n in range(retractions + 1)]  # type: ignore[union-attr]
    assert statuses == ["expired"] * retractions + ["acknowledged"]


DECIDED = sorted(
    edge.target
    for edge in spec._tables.edges("plan_approval")
    if edge.source == "pending" and edge.event in ("approve", "reject", "request_revision")
)


@pytest.mark.clause("PLN-2", "PLN-3", "MSG-5")
@pytest.mark.parametrize("decision", DECIDED)
def test_every_decision_delivered_in_time_is_matched(team: Team, decision: str) -> None:
    """Each decision the machine lets the approver take (read from it, not from the code under
    test) is matched when its requester reads it: the plan notes it delivered. An outside review
    had ``needs_revision`` recorded as "ignored: late" and no test failed (each delivery tested was
    an approval's)."""
    assert DECIDED == ["approved", "needs_revision", "rejected"]
    pid = team.pending()
    team.h.plans.decide("lead", pid, decision)
    result = team.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    assert result["outcome"] == "matched", result
    assert team.plan_doc(pid)["status"] == decision
    assert team.plan_doc(pid)["decision_delivered"] is (decision == "approved")  # PLN-6 reads it of an approval


@pytest.mark.clause("PLN-3", "MSG-5")
def test_a_late_or_unmatched_decision_is_recorded_and_ignored() -> None:
    team = Team()
    pid = team.approved(deliver=False)
    team.h.plans.withdraw(team.ctx(), pid)
    late = team.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    assert (late["outcome"], late["reason"]) == ("ignored", "late: the plan is withdrawn")
    doc = team.plan_doc(pid)
    assert (doc["status"], doc["decision_delivered"]) == ("withdrawn", False)
    assert team.h.plans.deliver_decision("m0", message_id(pid, "decision-0")) == late  # duplicate
    forged = team.h.envelope(
        "plan_decision", spec.ids.protocol_id("m9", "x", "plan_approval"), "decision-0", "lead", "m0",
        {"decision": "approved", "sequence": 0}, 5, reply_to="request",
    )  # fmt: skip
    team.h.post("test/forged", forged)
    unmatched = team.h.plans.deliver_decision("m0", forged["message_id"])
    assert unmatched["outcome"] == "ignored" and unmatched["reason"].startswith("unmatched")
    with pytest.raises(r.BadDecisionMessage):  # addressed to another member
        team.h.plans.deliver_decision("m1", forged["message_id"])


@pytest.mark.clause("PLN-3", "PLN-11", "XPR-1")
def test_only_the_requester_starts_or_withdraws_and_only_after_delivery(team: Team) -> None:
    pid = team.approved(deliver=False)
    before = team.h.snapshot()
    for error, call in (
        (r.DecisionNotDelivered, lambda: team.h.plans.start(team.ctx(), pid)),
        (r.NotPlanRequester, lambda: team.h.plans.start(team.ctx("m1"), pid)),
        (r.NotPlanRequester, lambda: team.h.plans.withdraw(team.ctx("m1"), pid)),
        (r.StaleIncarnation, lambda: team.h.plans.withdraw(team.ctx(incarnation=0), pid)),
        (r.NotResponder, lambda: team.h.plans.retract("m1", pid, "rejected")),
        (spec.SchemaError, lambda: team.h.plans.draft(team.ctx(), "q", {"goal": "no steps"})),
    ):
        with pytest.raises(error) as caught:
            call()
        assert caught.value.definite
    assert team.h.snapshot() == before
    team.h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    team.h.plans.start(team.ctx(), pid)
    with pytest.raises(r.PlanStatusConflict, match="stop it instead"):
        team.h.plans.withdraw(team.ctx(), pid)
    team.h.plans.fail(team.ctx(), pid)
    team.h.plans.rollback("lead", pid)
    assert team.run(pid)["status"] == "rolled_back"


@pytest.mark.clause("XPR-2")
def test_a_draining_member_s_draft_and_pending_plans_are_withdrawn() -> None:
    team = Team()
    draft = team.h.plans.draft(team.ctx(), "d", plan(*STEPS))
    pending = team.pending("p")
    approved = team.pending("a")
    team.h.plans.decide("lead", approved, "approved")
    team.h.shutdowns.request("lead", "m0", "s")
    sid = spec.ids.protocol_id("lead", "s", "shutdown_request")
    team.h.shutdowns.begin_drain("m0", team.h.shutdowns.request_message_id(sid))
    for pid, status in ((draft, "withdrawn"), (pending, "withdrawn"), (approved, "approved")):
        doc = team.plan_doc(pid)
        assert (doc["status"], doc["reason"] if status == "withdrawn" else None) == (
            status,
            "member_draining" if status == "withdrawn" else None,
        )
    team.h.plans.deliver_decision("m0", message_id(approved, "decision-0"))  # recorded; the member cannot start
    with pytest.raises(r.PlanMemberNotRunning):
        team.h.plans.start(team.ctx(), approved)


@pytest.mark.clause("XPR-1")
def test_a_plan_approved_for_an_older_incarnation_is_not_started_by_the_new_one() -> None:
    team = Team()
    pid = team.approved()
    team.h.members.lapse("m0")
    team.h.members.inspect("m0")
    team.h.members.restart("m0")
    before = team.h.snapshot()
    with pytest.raises(r.StalePlan):
        team.h.plans.start(team.ctx(), pid)
    assert team.h.snapshot() == before
    team.h.plans.withdraw(team.ctx(), pid)
    assert team.plan_doc(pid)["status"] == "withdrawn"


@pytest.mark.clause("PLN-9")
def test_an_execution_out_of_time_fails_and_is_rolled_back() -> None:
    team = Team()
    pid = team.started()
    team.clock.advance(TTL + 1)
    team.h.monitor_pass()
    assert (team.run(pid)["status"], team.run(pid)["reason"]) == ("failed", "timed_out")
    team.h.plans.rollback("lead", pid)
    assert [m["body"]["outcome"] for m in team.owed("plan_completion")] == ["rolled_back"]


@pytest.mark.clause("PLN-7", "REC-1")
def test_reconcile_never_starts_a_second_execution_and_changes_nothing_the_second_time(team: Team) -> None:
    pid = team.approved()
    team.storage.faults.crash_after.add("plan.start/execution")
    with pytest.raises(r.Crash):
        team.h.plans.start(team.ctx(), pid)
    again = r.Harness(team.storage, team.clock, list(team.h.tools.values()))
    again.reconcile()
    assert again.plans.require(pid).doc["status"] == "consumed"
    once = again.snapshot()
    again.reconcile()
    assert again.snapshot() == once
    with pytest.raises(r.PlanAlreadyStarted):
        again.plans.start(team.ctx(), pid)


@pytest.mark.clause("AUD-4", "APR-3", "PLN-1", "SHD-1", "MSG-4")
def test_agent_tools_for_plans_and_shutdowns() -> None:
    team, tools = Team(), r.AGENT_TOOLS
    h, lead = team.h, r.CallContext("lead", 1, "lead-call")
    body = plan(*STEPS)
    request = tools["team_request_plan_approval"]
    first = request(h, team.ctx(), {"plan": body})
    assert first["status"] == "pending" and request(h, team.ctx(), {"plan": body}) == first  # a retry: same id
    messages = [m for m in h.snapshot()["message"] if m["message"]["message_type"] == "plan_request"]
    assert len(messages) == 1
    before = h.snapshot()
    for error, call in (
        (r.ForgedIdentity, lambda: request(h, team.ctx(), {"plan": body, "requester_id": "m1"})),
        (spec.SchemaError, lambda: request(h, team.ctx(), {"plan": {**body, "steps": []}})),
        (
            r.NotResponder,
            lambda: tools["team_decide_plan"](
                h, team.ctx("m1"), {"protocol_id": first["protocol_id"], "decision": "approved"}
            ),
        ),
        (r.NotLead, lambda: tools["team_request_shutdown"](h, team.ctx("m1"), {"target_id": "m0"})),
        (
            r.NotPlanRequester,
            lambda: tools["team_cancel_protocol"](h, team.ctx("m1"), {"protocol_id": first["protocol_id"]}),
        ),
    ):
        with pytest.raises(error):
            call()
    assert h.snapshot() == before
    decided = tools["team_decide_plan"](h, lead, {"protocol_id": first["protocol_id"], "decision": "approved"})
    assert decided["status"] == "approved"
    shutdown = tools["team_request_shutdown"](h, lead, {"target_id": "m1", "reason_text": "scale down"})
    status = tools["team_protocol_status"]
    assert [(x["kind"], x["status"]) for x in status(h, team.ctx(), {})["records"]] == [("plan_approval", "approved")]
    assert [(x["kind"], x["status"]) for x in status(h, team.ctx("m1"), {})["records"]] == [
        ("shutdown_request", "requested")
    ]
    assert {x["kind"] for x in status(h, lead, {})["records"]} == {"plan_approval", "shutdown_request"}
    assert status(h, team.ctx(), {})["records"][0]["execution"] is None
    cancel = tools["team_cancel_protocol"]
    assert cancel(h, team.ctx(), {"protocol_id": first["protocol_id"]})["status"] == "withdrawn"
    assert cancel(h, lead, {"protocol_id": shutdown["protocol_id"]})["status"] == "cancelled"
    assert [tools[name].schema()["name"] for name in ("team_request_plan_approval", "team_decide_plan")] == [
        "team_request_plan_approval",
        "team_decide_plan",
    ]


@pytest.mark.clause("PLN-7")
def test_the_plan_write_steps_are_the_model_s_in_its_order() -> None:
    """DESIGN rule 3: one definition of the steps: the reference's plan steps are the model's."""
    from spec.model import WRITE_STEPS

    logged = tuple(step for step in r.PLAN_STEPS if not step.endswith("/audit"))  # the team log (AUD-5)
    assert tuple(step for step in WRITE_STEPS if step.startswith("plan.")) == logged
    for index, step in enumerate(r.PLAN_STEPS):  # the log entry is its operation's last write
        after = r.PLAN_STEPS[index + 1 : index + 2]
        assert not step.endswith("/audit") or not after or after[0].split("/")[0] != step.split("/")[0]


def audited(team: Team, pid: str) -> list[str]:
    return [row.doc["event"] for row in team.storage.scan("audit_entry") if row.doc["subject_id"] == pid]


@pytest.mark.clause("AUD-1", "AUD-5", "PLN-2", "PLN-5", "PLN-6", "PLN-7", "PLN-11")
def test_every_plan_decision_is_in_the_team_log(team: Team) -> None:
    """Each event of a plan (draft, submission, decision, retraction, delivery, withdrawal,
    expiry, start) is appended to the hash-chained team log, in order; executions are not."""
    started = team.started()
    retracted = team.pending("r")
    team.h.plans.decide("lead", retracted, "approved")
    team.h.plans.retract("lead", retracted, "rejected")
    withdrawn = team.pending("w")
    team.h.plans.withdraw(team.ctx(), withdrawn)
    sent_back = team.pending("n")
    team.h.plans.decide("lead", sent_back, "needs_revision", comment="smaller steps")
    expired = team.pending("e")
    team.clock.advance(TTL + 1)
    team.h.monitor_pass()
    snap = team.h.snapshot()
    assert invariants.decisions_audited(snap) == []
    assert r.verify_audit_log(team.storage).ok
    base = ["plan.drafted", "plan.pending"]
    assert audited(team, started) == [*base, "plan.approved", "plan.decision_delivered", "plan.consumed"]
    assert audited(team, retracted) == [*base, "plan.approved", "plan.retracted"]
    assert audited(team, withdrawn) == [*base, "plan.withdrawn"]
    assert audited(team, sent_back) == [*base, "plan.needs_revision"]
    assert audited(team, expired) == [*base, "plan.expired"]
    assert not [e for e in snap["audit_entry"] if e["event"].startswith("plan.") and "started" in e["event"]]


@pytest.mark.clause("AUD-5", "REC-2")
@pytest.mark.parametrize("step", ["plan.decide/audit", "plan.expire/audit", "plan.start/audit"])
def test_reconciliation_logs_a_plan_decision_a_crash_left_out(team: Team, step: str) -> None:
    """A crash before a plan's log entry leaves the log short (the invariant says so); the
    restart's reconciliation appends it, once, from the unlogged plans alone."""
    pid = team.pending() if step != "plan.start/audit" else team.approved()
    team.storage.faults.crash_before.add(step)
    with pytest.raises(r.Crash):
        if step == "plan.decide/audit":
            team.h.plans.decide("lead", pid, "rejected")
        elif step == "plan.expire/audit":
            team.clock.advance(TTL + 1)
            team.h.monitor_pass()
        else:
            team.h.plans.start(team.ctx(), pid)
    assert invariants.decisions_audited(team.h.snapshot())
    team.storage.faults.crash_before.clear()
    again = r.Harness(team.storage, team.clock, list(team.h.tools.values()))
    again.reconcile()
    assert invariants.decisions_audited(again.snapshot()) == []
    assert audited(team, pid)[-1] == f"plan.{again.plans.require(pid).doc['status']}"
    assert r.verify_audit_log(team.storage).ok
    once = again.snapshot()
    again.reconcile()
    assert again.snapshot() == once


@pytest.mark.clause("PLN-5", "MSG-6", "REC-3", "AUD-5")
@pytest.mark.parametrize("step", ["plan.expire/record", "plan.expire/outbox", "plan.expire/audit"])
def test_a_plan_expiry_cut_short_at_any_write_owes_its_notice_once(team: Team, step: str) -> None:
    """The monitor expires a pending plan in three writes: the record, the ``plan_abandoned``
    notice owed, the log entry last (while unlogged, the record is the restart's to finish). Cut
    short after any of them, the restart's reconciliation and the next monitor pass leave the plan
    expired, its notice owed exactly once, its log entry once and the chain intact (an outside
    review logged before owing: a crash between lost the notice for good, and only a two-instance
    crash search saw it)."""
    pid = team.pending()
    team.clock.advance(TTL + 1)
    team.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        team.h.monitor_pass()
    team.storage.faults.crash_after.clear()
    again = r.Harness(team.storage, team.clock, list(team.h.tools.values()))
    again.reconcile()
    again.monitor_pass()
    assert again.plans.require(pid).doc["status"] == "expired"
    notices = [e.doc["message"] for e in team.storage.scan("outbox_entry")]
    assert [m["message_type"] for m in notices].count("plan_abandoned") == 1, notices
    assert audited(team, pid).count("plan.expired") == 1
    assert r.verify_audit_log(team.storage).ok
    assert invariants.check_state(again.snapshot()) == []


@pytest.mark.clause("REC-1", "AUD-5")
def test_reconciliation_reads_active_and_unlogged_plans_not_the_history(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recovery's cost follows active work (``bench/reconcile.py``): finished, logged plans are
    never read; a final plan a crash left unlogged is (its decision is re-posted and logged)."""
    finished = [team.pending(f"old{i}") for i in range(3)]
    for pid in finished:
        team.h.plans.decide("lead", pid, "rejected")
    cut = team.pending("cut")
    team.storage.faults.crash_after.add("plan.decide/record")
    with pytest.raises(r.Crash):
        team.h.plans.decide("lead", cut, "rejected")
    read: list[str] = []
    for name in ("read", "scan"):
        original = getattr(team.storage, name)

        def spy(table: str, *args: Any, _original: Any = original) -> Any:
            if table == "plan_approval":
                read.append(args[0] if args else "*")
            return _original(table, *args)

        monkeypatch.setattr(team.storage, name, spy)
    again = r.Harness(team.storage, team.clock, list(team.h.tools.values()))
    again.reconcile()
    assert "*" not in read and not set(finished) & set(read), read
    assert cut in read
    assert again.read("message", message_id(cut, "decision-0")) is not None
    assert invariants.decisions_audited(again.snapshot()) == []


@pytest.mark.clause("AUD-3", "INV-10", "PLN-1", "SHD-1")
def test_the_free_text_of_plans_and_shutdowns_is_stored_redacted(team: Team) -> None:
    """A plan's goal, rollback and risks, and a shutdown's reason, are written by agents and may
    carry what a real tool would (a token pasted into a goal): every shape of the corpus is
    redacted before the record and its message are stored; the words around it are kept."""
    text = "rotate " + " and ".join(carrier(name) for name in CARRIERS) + " tonight"  # every secret, in use
    pid = team.pending("secret", {**plan(*STEPS), "goal": text, "rollback": text, "risks": [text, "lock contention"]})
    sid = team.h.shutdowns.request(team.h.lead_id, "m1", "secret", reason_text=text)
    snap = team.h.snapshot()
    assert invariants.no_secret_stored(snap) == []
    body = team.plan_doc(pid)["plan"]
    assert body["goal"].startswith("rotate ") and body["goal"].endswith(" tonight") and "[REDACTED]" in body["goal"]
    assert body["risks"][1] == "lock contention" and body["steps"] == plan(*STEPS)["steps"]
    shutdown = team.h.read("shutdown_request", sid)
    assert shutdown is not None and shutdown.doc["reason_text"].endswith(" tonight")


@pytest.mark.clause("AUD-3", "INV-10", "PLN-2", "PLN-6")
@pytest.mark.parametrize("decision", ["approved", "rejected", "needs_revision"])
def test_the_approvers_comment_is_stored_and_sent_redacted_in_every_decision(team: Team, decision: str) -> None:
    """The Lead's comment on a plan is free text too: decided in each way, and retracted into a
    rejection that is sent again, the record, its events and the decision messages carry no secret
    of the corpus (a second outside review stored it as written; the tests' comments were benign)."""
    text = "use " + " or ".join(carrier(name) for name in CARRIERS) + " instead"
    pid = team.pending()
    team.h.plans.decide("lead", pid, decision, comment=text)
    if decision == "approved":
        team.h.plans.retract("lead", pid, "rejected")
    assert invariants.no_secret_stored(team.h.snapshot()) == []
    decisions = [m for m in team.h.snapshot()["message"] if m["message"]["message_type"] == "plan_decision"]
    assert len(decisions) == (2 if decision == "approved" else 1)
    assert all("[REDACTED]" in str(m["message"]["body"]) for m in decisions)


@pytest.mark.clause("PLN-5", "REC-2")
def test_a_submit_cut_short_after_its_message_is_finished_by_the_restart_with_a_whole_ttl_from_then(
    team: Team,
) -> None:
    """The submit dies after its request message and before its record; the restart comes later
    and finishes it as the model's reconciliation does: pending, due ``ttl`` after the restart
    (not after the draft), and a decision late in that ttl is taken. A second outside review's
    plant kept the draft's provisional deadline; every crash test restarted at the draft's instant."""
    pid = team.h.plans.draft(team.ctx(), "p", plan(*STEPS))
    team.storage.faults.crash_after.add("plan.submit/message")
    with pytest.raises(r.Crash):
        team.h.plans.submit(team.ctx(), pid)
    team.storage.faults.crash_after.clear()
    team.clock.advance(2 * TTL)
    team.h = r.Harness(team.storage, team.clock, [team.copy.tool(r.normalize_paths("path")), team.swap.tool()])
    team.h.reconcile()
    doc = team.plan_doc(pid)
    assert (doc["status"], doc["deadline"]) == ("pending", team.clock.now() + TTL)
    team.clock.advance(TTL - 1)
    team.h.plans.decide("lead", pid, "approved")
    assert team.plan_doc(pid)["status"] == "approved"


@pytest.mark.clause("PLN-1", "MSG-1")
def test_a_plan_names_its_own_correlation_id_or_none_and_a_draft_shows_its_deadline_if_sent_now() -> None:
    """A plan's ``correlation_id`` is the plan's own id: given as another id, the draft is refused
    naming the field, and nothing is written; given as its own id, or left out, it is the same
    draft. Until it is submitted, a draft's deadline is the one it would have if sent now
    (mutation testing of the plans: both survived every test)."""
    team = Team()
    team.clock.advance(7)
    before = team.h.snapshot()
    pid = r.plan_key_id("m0", "p")
    with pytest.raises(spec.SchemaError, match=r"\$\.correlation_id: must be the plan id"):
        team.h.plans.draft(team.ctx(), "p", {**plan(*STEPS), "correlation_id": "plan-of-another"})
    assert team.h.snapshot() == before
    assert team.h.plans.draft(team.ctx(), "p", {**plan(*STEPS), "correlation_id": pid}) == pid
    assert team.h.plans.draft(team.ctx(), "p", plan(*STEPS)) == pid
    assert team.plan_doc(pid)["deadline"] == 7 + TTL


@pytest.mark.clause("APR-4", "PLN-2")
def test_a_plan_decided_by_another_than_its_approver_is_refused_naming_who() -> None:
    team = Team()
    pid = team.pending()
    before = team.h.snapshot()
    with pytest.raises(r.NotResponder, match=f"only lead may review {pid}, not m1"):
        team.h.plans.decide("m1", pid, "approved")
    assert team.h.snapshot() == before


@pytest.mark.clause("STO-2", "MSG-4", "PLN-1")
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda body: {**body, "steps": body["steps"][:1]}, id="a step less"),
        pytest.param(
            lambda body: {**body, "steps": [*body["steps"][:1], {**body["steps"][1], "params": {}}]}, id="params"
        ),
        pytest.param(lambda body: {**body, "goal": "drop the orders table"}, id="goal"),
        pytest.param(lambda body: {**body, "rollback": "none"}, id="rollback"),
        pytest.param(lambda body: {**body, "ttl_seconds": body["ttl_seconds"] + 1}, id="ttl"),
    ],
)
def test_a_plan_key_again_is_the_same_plan_only_with_the_same_body(team: Team, change: Any) -> None:
    """STO-2, MSG-4: drafting the same plan key again returns the same plan and changes nothing;
    with any other content it is refused as a conflict naming the plan, and the stored plan is as
    it was (an outside review left ``plan`` out of the binding and every test passed)."""
    body = plan(*STEPS)
    pid = team.h.plans.draft(team.ctx(), "k", body)
    before = team.h.snapshot()
    assert team.h.plans.draft(team.ctx(), "k", plan(*STEPS)) == pid
    assert team.h.snapshot() == before
    with pytest.raises(r.ProtocolConflict) as refused:
        team.h.plans.draft(team.ctx(), "k", change(body))
    assert (refused.value.protocol_id, refused.value.field) == (pid, "plan")
    assert team.h.snapshot() == before
