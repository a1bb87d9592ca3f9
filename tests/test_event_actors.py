"""Who each event names (AUD-1): the party that took the step, under a Lead not called ``lead``.

The model abstracts events away, so only these tests and the conformance suite
(``conformance/_actors.py``, checked after every step of a vector or program) read an event's
actor; the audit chain compares the log with the records (AUD-5), so an actor wrong in both passes
it. The Lead here is ``captain``: a step that wrote the literal ``"lead"`` would name nobody."""

from __future__ import annotations

from typing import Any

import pytest

import reference as r
from spec.ids import message_id
from tests.test_plans import STEPS, plan

LEAD = "captain"


def harness(storage: r.Storage, clock: r.ManualClock) -> r.Harness:
    return r.Harness(storage, clock, [r.RecordingTool().tool()], lead_id=LEAD, jobs=r.InProcessJobRunner())


def actors(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["event"], e["actor"]) for e in events]


@pytest.mark.clause("AUD-1", "SHD-1", "SHD-2", "SHD-5", "SHD-6", "SHD-7", "SHD-9", "SHD-10")
def test_a_shutdown_and_its_tasks_name_who_took_each_step(storage: r.Storage) -> None:
    clock = r.ManualClock(0.0)
    h = harness(storage, clock)
    for m in ("m0", "m1"):
        h.add_member(m, ["deploy"])
    h.add_task("t0")
    h.claim("m1", "t0")
    # m0 drains and finishes: the Lead asked, the member began and finished
    done = h.shutdowns.request(LEAD, "m0", "sd-0", ttl_seconds=10)
    h.shutdowns.begin_drain("m0", message_id(done, "request"))
    h.shutdowns.finish("m0")
    assert actors(h.shutdowns.require(done).doc["events"]) == [
        ("requested", LEAD),
        ("draining", "m0"),
        ("completed", "m0"),
    ]
    # m1 drains past its deadline holding t0 and a job that cannot stop: the monitor times the drain
    # out, the Lead terminates it by force (flagging t0), inspects it (completing the drain), and
    # sends t0 back to the pool
    h.jobs.start("m1", "job-1", "migrate", cancellable=False)
    late = h.shutdowns.request(LEAD, "m1", "sd-1", ttl_seconds=1)
    h.shutdowns.begin_drain("m1", message_id(late, "request"))
    clock.advance(2)
    h.monitor_pass()
    h.shutdowns.force_terminate(late)
    h.members.inspect("m1")
    h.tasks.inspect("t0", "pending")
    assert actors(h.shutdowns.require(late).doc["events"]) == [
        ("requested", LEAD),
        ("draining", "m1"),
        ("timed_out", "monitor"),
        ("completed", LEAD),
    ]
    assert actors(h.task_row("t0").doc["history"]) == [
        ("claimed", "m1"),
        ("needs_inspection", LEAD),
        ("pending", LEAD),
    ]


@pytest.mark.clause("AUD-1", "REC-2", "PLN-7")
@pytest.mark.parametrize(("step", "event"), [("plan.submit/message", "pending"), ("plan.start/execution", "consumed")])
def test_a_plan_step_finished_by_reconciliation_keeps_its_requester_as_actor(step: str, event: str) -> None:
    """A submission cut after its message, or a start cut after its execution record, is finished by
    the restart's reconciliation (REC-2): the event is still the requester's, not the Lead's."""
    storage, clock = r.MemoryStorage(), r.ManualClock(0.0)
    h = harness(storage, clock)
    h.add_member("m0", [])
    h.add_task("t0")
    h.claim("m0", "t0")
    ctx = r.CallContext("m0", h.member("m0")["incarnation"], "call", "t0")
    pid = h.plans.draft(ctx, "p", plan(*STEPS))
    if event == "consumed":
        h.plans.submit(ctx, pid)
        h.plans.decide(LEAD, pid, "approved")
        h.plans.deliver_decision("m0", message_id(pid, "decision-0"))
    storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        (h.plans.submit if event == "pending" else h.plans.start)(ctx, pid)
    storage.faults.crash_after.clear()
    again = harness(storage, clock)
    again.reconcile()
    events = actors(again.plans.require(pid).doc["events"])
    assert (event, "m0") in events and all(actor != LEAD for name, actor in events if name == event)
