"""AUD-4 on every argument shape of the status tool: whatever a caller asks for, it sees only the
records it takes part in (an outside review planted a status tool that, asked by id, handed any
record to anyone; every test called it with no arguments and passed).

Clause: AUD-4.
"""

from __future__ import annotations

import pytest

import reference as r
from spec.ids import message_id

ARGS = {"path": "srv/app"}
PLAN = {
    "goal": "move the app",
    "steps": [{"id": "s1", "action": "deploy", "params": ARGS}],
    "estimated_cost": 1,
    "rollback": "move it back",
    "risks": [],
    "ttl_seconds": 300,
}
PARTIES = {
    "operation_approval": ("requester_id", "responder_id"),
    "plan_approval": ("requester_id", "responder_id"),
    "shutdown_request": ("requester_id", "target_id"),
}
"""Who takes part in a record of each kind, read off the record (the protocol's roles)."""
CALLERS = ("m0", "m1", "m2", "lead", "stranger")


def world() -> r.Harness:
    """m0 and m1 each requested an approval, m0 submitted a plan, the Lead asked m2 to stop."""
    h = r.Harness(r.MemoryStorage(), r.ManualClock(0.0), [r.RecordingTool("deploy").tool()])
    for member in ("m0", "m1", "m2"):
        h.add_member(member, ["deploy"])
        h.add_task(f"t{member[1]}")
        h.claim(member, f"t{member[1]}")
    h.approvals.call(r.CallContext("m0", 1, "call-a", "t0"), "deploy", ARGS)
    h.approvals.call(r.CallContext("m1", 1, "call-b", "t1"), "deploy", ARGS)
    plan = h.plans.draft(r.CallContext("m0", 1, "call-p", "t0"), "plan-1", PLAN)
    h.plans.submit(r.CallContext("m0", 1, "call-p", "t0"), plan)
    h.shutdowns.request("lead", "m2", "sd-1")
    return h


@pytest.mark.clause("AUD-4")
@pytest.mark.parametrize("caller", CALLERS)
def test_status_shows_a_caller_only_its_own_records_whatever_it_asks_for(caller: str) -> None:
    """For no id, every id in the store (its own and everyone else's) and an unknown id, the
    caller gets exactly its own records that match; reading changes nothing."""
    h = world()
    before = h.snapshot()
    ids = [doc["protocol_id"] for kind in PARTIES for doc in before[kind]]
    own = {
        doc["protocol_id"]
        for kind, roles in PARTIES.items()
        for doc in before[kind]
        if caller in (doc[p] for p in roles)
    }
    assert len(ids) == 4 and bool(own) == (caller != "stranger")  # every party has some; the stranger none
    status = r.AGENT_TOOLS["team_protocol_status"]
    ctx = r.CallContext(caller, 1, "status-call")
    for wanted in (None, *ids, "no-such-id"):
        got = sorted(
            x["protocol_id"] for x in status(h, ctx, {} if wanted is None else {"protocol_id": wanted})["records"]
        )
        expected = sorted(own) if wanted is None else [wanted] if wanted in own else []
        assert got == expected, f"{caller} asking for {wanted}"
    assert h.snapshot() == before


@pytest.mark.clause("AUD-4", "PLN-7")
def test_a_plans_status_carries_its_own_executions_status_through_its_life() -> None:
    """A plan's view shows the status of the execution under the plan's own id: none before it
    starts, ``running`` once started, ``completed`` once completed; the plan beside it that never
    started still shows none (outside review 39 read the execution under the task's id: the tool
    said None all along, and only the view before a start was tested)."""
    h = world()
    status, ctx = r.AGENT_TOOLS["team_protocol_status"], r.CallContext("m0", 1, "call-p", "t0")
    pid = next(doc["protocol_id"] for doc in h.snapshot()["plan_approval"])
    other = h.plans.draft(ctx, "plan-2", {**PLAN, "goal": "a second plan"})

    def executions() -> dict[str, str | None]:
        return {x["protocol_id"]: x["execution"] for x in status(h, ctx, {})["records"] if x["kind"] == "plan_approval"}

    assert executions() == {pid: None, other: None}
    h.plans.decide("lead", pid, "approved")
    h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    h.plans.start(ctx, pid)
    assert executions() == {pid: "running", other: None}
    h.plans.step(ctx, pid, PLAN["steps"][0])
    h.plans.complete(ctx, pid)
    assert executions() == {pid: "completed", other: None}
    assert status(h, ctx, {"protocol_id": pid})["records"][0]["execution"] == "completed"
