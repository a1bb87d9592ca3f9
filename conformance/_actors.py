"""Who takes each step (AUD-1): the actor every event of a protocol record must name.

AUD-1 keeps an actor with every event; the protocol's clauses say who takes each step (SHD-1 the
Lead requests a shutdown, SHD-2 the target member begins its drain, SHD-6 the deadline monitor
expires, SHD-7 the Lead inspects, XPR-2 a drain or an inspection ends the member's own requests
on its behalf …). :data:`ACTORS` states that once, per record kind and event: the parties that
may take it, each with the driver protocol's operations through which it does. After every step
of a vector or a random program, each event the step appended must name a party its rule allows
for the operations the step ran (:func:`event_actor_problems`); a restart after a crash ran the
crashed operation's steps (reconciliation completes them, keeping their actor) and
reconciliation's own (``restart``). A refused call ran none: any event it appended is reported.

The model abstracts events away, so no other check of the suite reads an actor but the
approvals' and plans' decisions (:func:`spec.invariants.decisions_audited` compares the log with
the records, so a wrong actor written to both passes it). Events of a name no rule has (a
delivery note, say) are not judged here; :func:`spec.invariants.records_keep_their_status_events`
reads their names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MONITOR = "monitor"
"""The deadline monitor's name as an actor (SHD-6, SHD-9, APR-7, PLN-5; the log format's too)."""

DRAIN_ENDS = ("shutdown.begin_drain", "member.inspect", "restart")
"""The operations that end a member's own open requests on its behalf (XPR-2, SHD-10): its drain,
the Lead's inspection, and reconciliation re-applying either after a crash (REC-2)."""

MONITOR_MOVES = ("monitor.pass", "task.suspend", "restart")
"""The operations in which a deadline passes: the monitor's pass, a unit deadline's suspension
(SHD-9), and reconciliation finishing a pass a crash cut short (REC-5) or expiring what is past."""

ACTORS: dict[tuple[str, str], tuple[tuple[str, tuple[str, ...]], ...]] = {
    # (record kind, event): ((role, the operations through which that role appends it), …)
    ("operation_approval", "requested"): (("requester", ("approval.request",)),),
    ("operation_approval", "approved"): (("responder", ("approval.review",)),),
    ("operation_approval", "rejected"): (("responder", ("approval.review",)),),
    ("operation_approval", "consumed"): (("requester", ("approval.consume",)),),
    ("operation_approval", "cancelled"): (("requester", ("approval.cancel", *DRAIN_ENDS)),),
    ("operation_approval", "expired"): (("monitor", MONITOR_MOVES),),
    ("plan_approval", "drafted"): (("requester", ("plan.draft",)),),
    ("plan_approval", "pending"): (("requester", ("plan.submit",)),),
    ("plan_approval", "approved"): (("responder", ("plan.decide",)),),
    ("plan_approval", "rejected"): (("responder", ("plan.decide",)),),
    ("plan_approval", "needs_revision"): (("responder", ("plan.decide",)),),
    ("plan_approval", "retracted"): (("responder", ("plan.retract",)),),
    ("plan_approval", "decision_delivered"): (("requester", ("plan.deliver_decision",)),),
    ("plan_approval", "consumed"): (("requester", ("plan.start",)),),
    ("plan_approval", "withdrawn"): (("requester", ("plan.withdraw", *DRAIN_ENDS)),),
    ("plan_approval", "expired"): (("monitor", MONITOR_MOVES),),
    ("plan_execution", "started"): (("plan_requester", ("plan.start",)),),
    ("plan_execution", "step"): (("plan_requester", ("plan.step",)),),
    ("plan_execution", "completed"): (("plan_requester", ("plan.complete",)),),
    # PLN-4, PLN-11: the requester stops it, or a deviation it sent does; PLN-9: its time runs out
    ("plan_execution", "failed"): (
        ("plan_requester", ("plan.fail", "plan.step", "plan.complete")),
        ("monitor", MONITOR_MOVES),
    ),
    # PLN-9: the Lead has a failed execution rolled back; a deviation rolls back at once (PLN-4)
    ("plan_execution", "rolled_back"): (
        ("lead", ("plan.rollback",)),
        ("plan_requester", ("plan.step", "plan.complete")),
    ),
    ("shutdown_request", "requested"): (("lead", ("shutdown.request",)),),
    ("shutdown_request", "cancelled"): (("lead", ("shutdown.cancel",)),),
    ("shutdown_request", "draining"): (("target", ("shutdown.begin_drain",)),),
    # SHD-5: the target finishes its drain; SHD-7: the Lead's inspection completes every drain
    ("shutdown_request", "completed"): (("target", ("shutdown.finish",)), ("lead", ("member.inspect",))),
    ("shutdown_request", "expired"): (("monitor", MONITOR_MOVES),),
    ("shutdown_request", "timed_out"): (("monitor", MONITOR_MOVES),),
    ("task", "claimed"): (("owner", ("task.claim",)),),
    ("task", "released"): (("holder", ("shutdown.release_task",)),),
    ("task", "completed"): (("owner", ("task.finish",)),),
    ("task", "failed"): (("owner", ("task.finish",)), ("lead", ("task.inspect",))),
    ("task", "suspended"): (("monitor", MONITOR_MOVES),),
    # SHD-7, SHD-10: the Lead flags a task for inspection (its member inspected, lost or killed)
    ("task", "needs_inspection"): (("lead", ("member.inspect", "member.lapse", "shutdown.force_terminate")),),
    ("task", "pending"): (("lead", ("task.inspect", "task.resume")),),
}

_KEYS = {
    "operation_approval": "protocol_id",
    "plan_approval": "protocol_id",
    "shutdown_request": "protocol_id",
    "plan_execution": "plan_id",
    "task": "task_id",
}
_EVENTS = {"task": "history"}


def _who(role: str, kind: str, record: dict[str, Any], old: dict[str, Any], snap: dict[str, Any], lead: str) -> Any:
    """The id ``role`` stands for on ``record`` (``old``: the same record before the step, or {})."""
    if role == "lead":
        return lead
    if role == "monitor":
        return MONITOR
    if role == "owner":
        return record.get("owner_id")
    if role == "holder":  # the member that held the task before the step (a release clears it)
        return old.get("owner_id")
    if role == "plan_requester":
        plans = (p for p in snap.get("plan_approval", []) if p.get("protocol_id") == record.get("plan_id"))
        return next((p.get("requester_id") for p in plans), None)
    return record.get({"requester": "requester_id", "responder": "responder_id", "target": "target_id"}[role])


def event_actor_problems(
    before: dict[str, Any], after: dict[str, Any], operations: Iterable[str], lead: str
) -> list[str]:
    """AUD-1: each event a step appended (in ``after``, not in ``before``, record by record) names
    a party :data:`ACTORS` allows for one of ``operations``, the driver protocol's operations the
    step ran (none for a refused call); ``lead``: the team's Lead."""
    ran = set(operations)
    problems = []
    for kind, key in _KEYS.items():
        field = _EVENTS.get(kind, "events")
        earlier = {r.get(key): r for r in before.get(kind, [])}
        for record in after.get(kind, []):
            old = earlier.get(record.get(key), {})
            events = record.get(field) or []
            for event in events[len(old.get(field) or []) :]:
                rule = ACTORS.get((kind, event.get("event")))
                if rule is None:
                    continue
                allowed = {
                    role: _who(role, kind, record, old, after, lead) for role, through in rule if ran & set(through)
                }
                what = f"{kind}/{record.get(key)}: its {event.get('event')} event"
                if not allowed:
                    done = ", ".join(sorted(ran)) or "a refused call"
                    problems.append(f"{what} was appended by {done}, which never takes that step")
                elif event.get("actor") not in allowed.values():
                    parties = " or ".join(f"{who!r} ({role})" for role, who in allowed.items())
                    problems.append(f"{what} names {event.get('actor')!r} as its actor, not {parties}")
    return problems


def decision_actors(snap: dict[str, Any]) -> list[str]:
    """AUD-1, AUD-2 on a snapshot alone, whatever step came before (the bad-input and status cases
    read no step): every event of an approval or a plan names a party its rule in :data:`ACTORS`
    allows for some operation — its requester, its responder or the monitor, as the event says.
    The audit chain is checked against the records (AUD-5), so a wrong actor in both is seen only
    here and in :func:`event_actor_problems`."""
    problems = []
    for kind in ("operation_approval", "plan_approval"):
        for record in snap.get(kind, []):
            for event in record.get("events", []):
                rule = ACTORS.get((kind, event.get("event")))
                wanted = {role: _who(role, kind, record, {}, snap, "") for role, _ in rule or ()}
                if rule is not None and event.get("actor") not in wanted.values():
                    parties = " or ".join(f"{who!r} ({role})" for role, who in wanted.items())
                    problems.append(
                        f"{kind}/{record.get('protocol_id')}: its {event.get('event')} event names "
                        f"{event.get('actor')!r}, not {parties}"
                    )
    return problems


__all__ = ["ACTORS", "MONITOR", "decision_actors", "event_actor_problems"]
