"""Bad input: each case sets up a team, sends one bad request, and requires the right typed
error, ``definite``, and a snapshot after equal to the snapshot before (nothing changed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec.ids import canonical_json

from ._abstract import approval_labels, plan_labels
from ._cases import Case, Session
from ._client import Crashed
from ._replay import missing_capabilities
from ._schema_src import MAX_ARGUMENTS_BYTES, MAX_LINE_BYTES
from ._translate import CHANGED, REASON_TEXT, REVIEW_TEXT, SAME, plan_document

TEAM = {
    "type": "init",
    "team": {
        "lead": "lead",
        "members": [
            {"member_id": "m0", "tools": ["deploy", "restart_service"]},
            {"member_id": "m1", "tools": ["deploy", "restart_service"]},
        ],
        "tasks": ["t0", "t1", "t2"],
    },
    "tools": [{"name": "deploy", "protected": True}, {"name": "restart_service", "protected": True}],
    "config": {"name": "bad-input"},
}
BASE_OPS = ["task.claim", "approval.request", "approval.review"]
PLAN_OPS = ("plan.draft", "plan.submit", "plan.decide", "plan.deliver_decision", "plan.retract")
DRAIN_OPS = ("shutdown.request", "shutdown.begin_drain")


def call(member: str, slot: int, task: str, incarnation: int = 1) -> dict[str, Any]:
    return {"actor": {"member_id": member, "incarnation": incarnation}, "tool_call_id": f"call-{slot}", "task_id": task}


def request(member: str = "m0", slot: int = 0, task: str = "t0", arguments: Any = None) -> dict[str, Any]:
    extra = {
        "tool": "deploy",
        "arguments": SAME if arguments is None else arguments,
        "risk_summary": "deploy",
        "ttl_seconds": 1,
    }
    return {"type": "approval.request", **call(member, slot, task), **extra}


def consume(
    pid: str, member: str = "m0", task: str = "t0", arguments: Any = None, incarnation: int = 1
) -> dict[str, Any]:
    body = {"protocol_id": pid, "tool": "deploy", "arguments": SAME if arguments is None else arguments}
    return {"type": "approval.consume", **call(member, 0, task, incarnation), **body}


def review(pid: str, actor: str = "lead", decision: str = "approved") -> dict[str, Any]:
    body = {"protocol_id": pid, "decision": decision, "summary": REVIEW_TEXT}
    return {"type": "approval.review", "actor": {"member_id": actor}, **body}


@dataclass(frozen=True)
class Bad:
    name: str
    title: str
    clauses: tuple[str, ...]
    codes: tuple[str, ...]  # the typed errors that are right; () = must succeed and change nothing
    send: Callable[[Session, str], dict[str, Any]]  # (session, the approval's id) -> the reply
    setup: tuple[str, ...] = ()  # steps before the "before" snapshot: restart_member, tick, half_tick, consume …
    operations: tuple[str, ...] = ()
    group: str = "operation approval"
    outcome: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], str] | None = None
    """For a request that is answered, not refused, and may record that it was (a delivery's
    recorded result): what is wrong with (reply, snapshot before, snapshot after), '' if nothing —
    instead of "nothing changed"."""


def _raw(session: Session, text: str) -> dict[str, Any]:
    session.impl.send_raw(text)
    reply = session.impl.reply(None)
    session.note(f"raw line {text[:60]!r}{'…' if len(text) > 60 else ''}", reply)
    return reply


def _deliver_expired_shutdown(session: Session) -> dict[str, Any]:
    message = next(m["message"] for m in session.last["message"] if m["message"]["message_type"] == "shutdown_request")
    return session.call(
        {"type": "message.deliver", "message_id": message["message_id"], "correlation_id": message["correlation_id"]}
    )


def _deliver_twice(session: Session, pid: str) -> dict[str, Any]:
    message = next(m["message"] for m in session.last["message"] if m["message"]["correlation_id"] == pid)
    return session.call({"type": "message.deliver", "message_id": message["message_id"], "correlation_id": pid})


BIG = {"target": "staging", "blob": "x" * (MAX_ARGUMENTS_BYTES + 1)}
_PAD = len(canonical_json({"target": "staging", "blob": ""}).encode("utf-8"))
_AT_LIMIT = {"target": "staging", "blob": "x" * (MAX_ARGUMENTS_BYTES - _PAD)}
"""Arguments whose canonical JSON is exactly the limit: they must be taken (MSG-2)."""

GHOST = {"member_id": "ghost"}
"""A member id no team record names: an operation naming it is refused ``unknown_id`` (an outside
review mapped the reference's unknown member to ``refused``, and no case named one)."""
GHOST_JOB = {**GHOST, "job_id": "job-ghost", "command": "sleep 1", "cancellable": True}


_JOB = {"job_id": "job-bad", "command": "sleep 1", "cancellable": True}
"""A background job m0 may start while it runs (``job_m0`` starts it non-cancellable: a drain waits)."""


def _refused_drain(reply: dict[str, Any], before: dict[str, Any], after: dict[str, Any], member: str) -> str:
    """A shutdown request delivered to an incarnation it was not made for (XPR-1): the delivery is
    answered with a recorded refusal, and the member and the request are as they were."""
    if reply["type"] != "ok":
        return f"refused with {reply['error']['code']}; the delivery must be answered with a recorded refusal"
    outcome = reply["result"].get("recorded_result", {}).get("outcome")
    if outcome != "refused":
        return f"the delivery's recorded result is {outcome!r}, not 'refused'"

    def kept(snap: dict[str, Any]) -> Any:
        return (
            [m for m in snap["member"] if m["member_id"] == member],
            [(sd["protocol_id"], sd["status"]) for sd in snap["shutdown_request"]],
            [(t["task_id"], t["status"], t["owner_id"]) for t in snap["task"]],
        )

    if kept(before) != kept(after):
        return f"{member}, its tasks or the shutdown request changed: a stale request drains nobody"
    return ""


def _accepted(reply: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> str:
    """A request within every limit must be taken (a limit is the largest size allowed)."""
    if reply["type"] != "ok":
        return f"refused with {reply['error']['code']}; a request at the limit must be taken"
    return ""


def _not_cancelled(reply: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> str:
    """JOB-1: a job nobody asked to cancel that exits on a signal failed; it was not cancelled (or the
    exit is refused, definite, changing nothing)."""
    if reply["type"] == "error":
        same = canonical_json(before) == canonical_json(after)
        return "" if reply["error"]["definite"] and same else "refused, but the snapshot changed or not definite"
    job = next((j for j in after.get("job", []) if j["job_id"] == _JOB["job_id"]), None)
    status = None if job is None else job["status"]
    return "" if status == "failed" else f"recorded {status}: only a job asked to cancel ends cancelled (JOB-1)"


def _no_secret_of_any_shape(reply: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> str:
    """AUD-3, INV-10: the request carried one secret of every shape of the corpus in a free-text
    field; it is taken, and none is stored."""
    from spec.invariants import no_secret_stored

    if reply["type"] != "ok":
        return f"refused with {reply['error']['code']}; the request was due"
    found = no_secret_stored(after)
    return found[0] if found else ""


def _summary_of_every_shape() -> str:
    from spec.secret_corpus import CARRIERS, carrier

    return "approved; " + " | ".join(carrier(name) for name in sorted(CARRIERS))


RETRY_CHANGES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("conflicting-retry", "other arguments", {"arguments": CHANGED}),
    ("conflicting-retry-tool", "another tool of the profile", {"tool": "restart_service"}),
    ("conflicting-retry-ttl", "another timeout", {"ttl_seconds": 2}),
)
"""STO-2: a request again under the same ``tool_call_id`` (so the same stable id, MSG-4) with one
thing it binds changed: refused as a conflict, never answered with the first request's record. One
case per field the request binds that the caller chooses (the requester, its incarnation and the
responder come from the call itself; another task is refused earlier, as not the caller's). Outside
review 63: a retry whose timeout was not compared got the first approval back and passed the suite,
which changed only the arguments."""


def _resend(first: Callable[[], dict[str, Any]], change: dict[str, Any]) -> Callable[[Session, str], dict[str, Any]]:
    """The request ``first()`` sent again with ``change``: a retry that binds something else."""

    def send(session: Session, pid: str) -> dict[str, Any]:
        return session.call({**first(), **change})

    return send


SHUTDOWN_RETRY_CHANGES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("conflicting-shutdown-retry-reason", "another reason", {"reason_text": "another reason"}),
    ("conflicting-shutdown-retry-ttl", "another timeout", {"ttl_seconds": 30}),
)
"""STO-2, as :data:`RETRY_CHANGES` for a shutdown request: its ``request_key`` names it (another
target under the same key is another case, ``shutdown_key_race_unjudged``'s)."""


PLAN_RETRY_CHANGES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("conflicting-plan-draft-steps", "other steps", {"steps": plan_document(0, 1, 2, 60)["steps"]}),
    ("conflicting-plan-draft-goal", "another goal", {"goal": "drop the orders table"}),
    ("conflicting-plan-draft-ttl", "another timeout", {"ttl_seconds": 30}),
)
"""STO-2, as :data:`RETRY_CHANGES` for a plan draft: its ``plan_key`` names it, and the plan it drafts
is what it binds (outside review 64's P12: a draft again under one key with another body got the
first plan's id back, and passed the suite, which drafted each key once)."""


def _redraft(change: dict[str, Any]) -> Callable[[Session, str], dict[str, Any]]:
    """m1's set-up plan (``plan_pending``) drafted again under its key with ``change`` in its body."""

    def send(session: Session, pid: str) -> dict[str, Any]:
        actor = {"member_id": "m1", "incarnation": 1}
        plan = {**plan_document(0, 1, 1, 60), **change}
        return session.call({"type": "plan.draft", "actor": actor, "task_id": "t1", "plan_key": "plan-0", "plan": plan})

    return send


def _ghost(name: str, title: str, clause: str, group: str, request: dict[str, Any]) -> Bad:
    """The case of ``request``, which names :data:`GHOST`: refused ``unknown_id``, nothing changed."""
    return Bad(
        f"unknown-member-{name}",
        f"{title} of a member the team does not have",
        (clause,),
        ("unknown_id",),
        lambda s, p: s.call(request),
        (),
        (request["type"],),
        group,
    )


CASES: tuple[Bad, ...] = (
    Bad(
        "schema-missing-field",
        "a consume without protocol_id",
        ("MSG-2",),
        ("schema_invalid",),
        lambda s, p: s.call({k: v for k, v in consume(p).items() if k != "protocol_id"}),
    ),
    Bad(
        "schema-wrong-type",
        "a review whose decision is a number",
        ("MSG-2",),
        ("schema_invalid",),
        lambda s, p: s.call({**review(p), "decision": 1}),
    ),
    Bad(
        "schema-not-json",
        "a line that is not JSON",
        ("MSG-2",),
        ("schema_invalid",),
        lambda s, p: _raw(s, '{"type": "snap'),
    ),
    Bad(
        "forged-argument",
        "the model writes requester_id into the arguments",
        ("APR-3",),
        ("forged_identity",),
        lambda s, p: s.call(request(slot=1, arguments={**SAME, "requester_id": "m1"})),
    ),
    Bad(
        "forged-consumer",
        "m1 consumes m0's approval",
        ("APR-3", "APR-5"),
        ("approval_other_agent",),
        lambda s, p: s.call(consume(p, member="m1", task="t1")),
    ),
    Bad(
        "forged-reviewer",
        "m0 reviews its own request",
        ("APR-4",),
        ("not_responder",),
        lambda s, p: s.call(review(p, actor="m0")),
    ),
    Bad(
        "forged-canceller",
        "m1 cancels m0's request",
        ("APR-9",),
        ("approval_other_agent",),
        lambda s, p: s.call({"type": "approval.cancel", **call("m1", 0, "t1"), "protocol_id": p}),
    ),
    Bad(
        "stale-incarnation",
        "m0 restarted; a call of its old incarnation",
        ("XPR-1", "INV-11"),
        ("stale_incarnation",),
        lambda s, p: s.call(consume(p, incarnation=1)),
        ("restart_member",),
        ("member.restart",),
    ),
    Bad(
        "claim-while-draining",
        "m1 drains for a shutdown request; it claims a pending task",
        ("MEM-1",),
        ("claim_refused", "member_not_running"),
        lambda s, p: s.call({"type": "task.claim", "member_id": "m1", "task_id": "t2"}),
        ("drain",),
        ("task.finish", "shutdown.request", "shutdown.begin_drain"),
        "shutdown",
    ),
    Bad(
        "consume-while-draining",
        "m0's call was approved; m0 begins to drain (still holding its task); it makes the approved call",
        ("XPR-2", "APR-5"),
        ("member_not_running",),
        lambda s, p: s.call(consume(p)),
        ("drain_m0",),
        DRAIN_OPS,
        "shutdown",
    ),
    Bad(
        "request-while-draining",
        "m0 drains (still holding its task); it asks for a new approval",
        ("XPR-2",),
        ("member_not_running",),
        lambda s, p: s.call(request(slot=1)),
        ("drain_m0",),
        DRAIN_OPS,
        "shutdown",
    ),
    Bad(
        "forged-shutdown-requester",
        "m0 asks m1 to shut down: only the Lead may",
        ("SHD-1",),
        ("not_lead",),
        lambda s, p: s.call({"type": "shutdown.request", **_shutdown("m1"), "actor": {"member_id": "m0"}}),
        (),
        ("shutdown.request",),
        "shutdown",
    ),
    Bad(
        "unknown-id-drain",
        "m1 handles a shutdown request nobody made",
        ("SHD-2",),
        ("unknown_id",),
        lambda s, p: s.call(
            {"type": "shutdown.begin_drain", "member_id": "m1", "protocol_id": "protocol-00000000feedface"}
        ),
        (),
        ("shutdown.begin_drain",),
        "shutdown",
    ),
    _ghost("job", "a job started in the name", "MEM-4", "jobs", {**GHOST_JOB, "type": "job.start"}),
    _ghost(
        "suspend", "a unit of work suspended", "SHD-9", "tasks", {"type": "task.suspend", **GHOST, "unit_seconds": 1}
    ),
    _ghost("release", "a drain's release of the task", "SHD-3", "shutdown", {"type": "shutdown.release_task", **GHOST}),
    _ghost("finish", "a drain finished", "SHD-5", "shutdown", {"type": "shutdown.finish", **GHOST}),
    _ghost("retire", "the retirement", "MEM-2", "members", {"type": "member.retire", **GHOST}),
    Bad(
        "retract-after-delivery",
        "the Lead retracts m1's plan approval after its decision was delivered",
        ("PLN-6",),
        ("plan_status_conflict",),
        lambda s, p: s.call(
            {"type": "plan.retract", "actor": {"member_id": "lead"}, "plan_id": s.plan_id, "to": "rejected"}  # type: ignore[attr-defined]
        ),
        ("plan_delivered",),
        PLAN_OPS,
        "plan approval",
    ),
    Bad(
        "start-before-delivery",
        "the Lead approved m1's plan, its decision not yet delivered; m1 starts the plan",
        ("PLN-3", "PLN-6"),
        ("decision_not_delivered",),
        lambda s, p: s.call(_plan_start(s)),
        ("plan_approved",),
        ("plan.draft", "plan.submit", "plan.decide", "plan.start"),
        "plan approval",
    ),
    Bad(
        "start-while-draining",
        "m1's approved plan was delivered; m1 begins to drain (still holding its task); it starts the plan",
        ("XPR-2", "PLN-3"),
        ("member_not_running",),
        lambda s, p: s.call(_plan_start(s)),
        ("plan_delivered", "drain_m1"),
        (*PLAN_OPS, *DRAIN_OPS, "plan.start"),
        "plan approval",
    ),
    Bad(
        "changed-arguments",
        "the approved call with other arguments",
        ("APR-2", "APR-5"),
        ("arguments_changed",),
        lambda s, p: s.call(consume(p, arguments=CHANGED)),
    ),
    Bad(
        "expired-approval",
        "the approved call past its deadline, before the monitor's pass",
        ("APR-5",),
        ("approval_expired",),
        lambda s, p: s.call(consume(p)),
        ("tick",),
        ("tick",),
    ),
    Bad(
        "duplicate-consume",
        "the approved call made twice",
        ("APR-6", "INV-1"),
        ("approval_not_active",),
        lambda s, p: s.call(consume(p)),
        ("consume",),
        ("approval.consume",),
    ),
    Bad(
        "duplicate-request",
        "the same request again: the same id, nothing new",
        ("MSG-4", "INV-6", "STO-2"),
        (),
        lambda s, p: s.call(request()),
    ),
    *(
        Bad(
            name,
            f"the same tool_call_id with {what}",
            ("STO-2", "MSG-4"),
            ("protocol_conflict",),
            _resend(request, change),
        )
        for name, what, change in RETRY_CHANGES
    ),
    *(
        Bad(
            name,
            f"the Lead's shutdown request again under its request_key, with {what}",
            ("STO-2", "MSG-4", "SHD-1"),
            ("protocol_conflict",),
            _resend(lambda: {"type": "shutdown.request", **_shutdown("m0")}, change),
            ("shutdown_m0",),
            ("shutdown.request",),
            "shutdown",
        )
        for name, what, change in SHUTDOWN_RETRY_CHANGES
    ),
    Bad(
        "redelivered-message",
        "the request message delivered again",
        ("MSG-5", "MSG-3"),
        (),
        _deliver_twice,
        ("deliver",),
        ("message.deliver", "tick"),
    ),
    Bad(
        "reordered-consume",
        "a consume before the review",
        ("APR-5",),
        ("approval_not_active",),
        lambda s, p: s.call(consume(p)),
        ("unreviewed",),
        ("approval.consume",),
    ),
    Bad(
        "reordered-review",
        "a review after the consume",
        ("APR-4", "APR-6"),
        ("review_conflict",),
        lambda s, p: s.call(review(p, decision="rejected")),
        ("consume",),
        ("approval.consume",),
    ),
    Bad(
        "contrary-review",
        "the Lead approved m0's request; the Lead reviews it again, rejecting it",
        ("APR-4",),
        ("review_conflict",),
        lambda s, p: s.call(review(p, decision="rejected")),
        (),
        ("approval.review",),
    ),
    Bad(
        "unknown-id-review",
        "a review of an id nobody made",
        ("APR-4",),
        ("unknown_id",),
        lambda s, p: s.call(review("no-such-protocol")),
    ),
    *(
        Bad(
            name,
            f"m0's request message{when} delivered under another request's correlation id",
            ("MSG-5",),
            ("unknown_id",),
            lambda s, p: s.call(
                {
                    "type": "message.deliver",
                    "message_id": next(m["message"] for m in s.last["message"] if m["message"]["correlation_id"] == p)[
                        "message_id"
                    ],
                    "correlation_id": "protocol-00000000deadbeef",
                }
            ),
            setup,
            ("message.deliver",),
        )
        # MSG-5 deduplicates on the pair (message, correlation id): another pair is no duplicate, in
        # either phase of the message (review 64's P9 answered a delivered one as the first delivery)
        for name, when, setup in (
            ("wrong-correlation-delivery", "", ()),
            ("wrong-correlation-redelivery", ", already delivered,", ("deliver",)),
        )
    ),
    Bad(
        "deliver-expired",
        "the Lead's shutdown request to m1 delivered after it expired unread (past its deadline, the monitor's pass)",
        ("MSG-1", "MSG-3", "SHD-6"),
        ("message_not_pending",),
        lambda s, p: _deliver_expired_shutdown(s),
        ("shutdown_expired",),
        ("message.deliver", "monitor.pass", "shutdown.request"),
    ),
    Bad(
        "restart-in-place",
        "the driver's own restart, nothing having crashed: the stores and the clock as they were",
        ("REC-1", "REC-2"),
        (),
        lambda s, p: s.call({"type": "restart"}),
        ("half_tick",),
        ("restart", "tick"),
    ),
    Bad(
        "forged-reviewer-peer",
        "m1, a member but not the responder, approves m0's request",
        ("APR-4",),
        ("not_responder",),
        lambda s, p: s.call(review(p, actor="m1")),
        ("unreviewed",),
    ),
    Bad(
        "forged-canceller-lead",
        "the Lead cancels m0's request: only its requester may (the Lead rejects instead)",
        ("APR-9",),
        ("approval_other_agent", "unknown_id"),
        lambda s, p: s.call({"type": "approval.cancel", **call("lead", 0, "t0"), "protocol_id": p}),
        ("unreviewed",),
        ("approval.cancel",),
    ),
    Bad(
        "request-for-others-task",
        "m0 asks for an approval for t1, the task m1 holds",
        ("APR-1", "APR-3"),
        ("not_task_owner",),
        lambda s, p: s.call(request(slot=1, task="t1")),
    ),
    Bad(
        "request-for-unclaimed-task",
        "m0 asks for an approval for t2, a task nobody has claimed",
        ("APR-1", "APR-3"),
        ("not_task_owner",),
        lambda s, p: s.call(request(slot=1, task="t2")),
    ),
    Bad(
        "stale-claim-token",
        "m0 finishes its task naming a claim token that is not the current one",
        ("TSK-1",),
        ("not_claim_holder", "not_task_owner"),
        lambda s, p: s.call(
            {
                "type": "task.finish",
                "member_id": "m0",
                "task_id": "t0",
                "outcome": "completed",
                "claim_token": "claim-0",
            }
        ),
        (),
        ("task.finish",),
        "tasks",
    ),
    Bad(
        "consume-after-profile-change",
        "m0's profile changed (the same tools, a new version) after its approval; it makes the approved call",
        ("XPR-4", "APR-5"),
        ("profile_changed",),
        lambda s, p: s.call(consume(p)),
        ("profile_bump_m0",),
        ("profile.change",),
    ),
    Bad(
        "request-tool-not-in-profile",
        "m0's profile lost the tool; it asks for an approval to call it",
        ("APR-7",),
        ("tool_not_in_profile",),
        lambda s, p: s.call(request(slot=1)),
        ("profile_drop_m0",),
        ("profile.change",),
    ),
    Bad(
        "cancel-after-consume",
        "m0 cancels its approval after the approved call was made",
        ("APR-9",),
        ("cancel_refused",),
        lambda s, p: s.call({"type": "approval.cancel", **call("m0", 0, "t0"), "protocol_id": p}),
        ("consume",),
        ("approval.consume", "approval.cancel"),
    ),
    Bad(
        "stale-incarnation-cancel",
        "m0 restarted; its old incarnation cancels its request",
        ("XPR-1", "INV-11"),
        ("stale_incarnation",),
        lambda s, p: s.call({"type": "approval.cancel", **call("m0", 0, "t0", incarnation=1), "protocol_id": p}),
        ("restart_member",),
        ("member.restart", "approval.cancel"),
    ),
    Bad(
        "stale-incarnation-request",
        "m0 restarted; its old incarnation asks for a new approval",
        ("XPR-1", "INV-11"),
        ("stale_incarnation",),
        lambda s, p: s.call(request(slot=1)),
        ("restart_member",),
        ("member.restart",),
    ),
    Bad(
        "old-incarnations-approval",
        "m0's call was approved; m0 was lost, restarted and claims its task again; the new incarnation "
        "makes the approved call",
        ("XPR-1", "INV-11"),
        ("stale_incarnation", "approval_other_agent"),
        lambda s, p: s.call(consume(p, incarnation=2)),
        ("restart_member", "reclaim_m0"),
        ("member.restart", "member.lapse", "member.inspect", "task.inspect"),
    ),
    Bad(
        "stale-shutdown-request",
        "the Lead asked m0 to shut down; m0 restarted; the old request is delivered to the new incarnation",
        ("XPR-1", "SHD-2"),
        (),
        lambda s, p: s.call(
            {"type": "shutdown.begin_drain", "member_id": "m0", "protocol_id": s.shutdown_id}  # type: ignore[attr-defined]
        ),
        ("shutdown_m0", "restart_member"),
        ("member.restart", *DRAIN_OPS),
        "shutdown",
        lambda reply, before, after: _refused_drain(reply, before, after, "m0"),
    ),
    Bad(
        "job-while-draining",
        "m0 drains (still holding its task); it starts a background job",
        ("XPR-2", "MEM-3"),
        ("job_refused", "member_not_running"),
        lambda s, p: s.call({"type": "job.start", "member_id": "m0", **_JOB}),
        ("drain_m0",),
        ("job.start", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "cancel-draining-shutdown",
        "m1 began to drain; the Lead cancels its shutdown request (only a requested one may be cancelled)",
        ("SHD-1", "INV-3"),
        ("shutdown_refused", "illegal_transition"),
        lambda s, p: s.call({"type": "shutdown.cancel", "actor": {"member_id": "lead"}, "protocol_id": s.shutdown_id}),  # type: ignore[attr-defined]
        ("drain_m1",),
        ("shutdown.cancel", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "drain-signals-non-cancellable",
        "m0 drains while its only job, non-cancellable, still runs; the drain pass asks its jobs to stop",
        ("JOB-2", "SHD-4"),
        ("shutdown_refused",),
        lambda s, p: s.call({"type": "shutdown.drain_jobs", "member_id": "m0"}),
        ("job_m0", "drain_m0"),
        ("job.start", "shutdown.drain_jobs", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "release-while-job-runs",
        "m0 drains while its non-cancellable job still runs; it releases its task",
        ("SHD-3", "SHD-4", "JOB-2"),
        ("drain_not_ready",),
        lambda s, p: s.call({"type": "shutdown.release_task", "member_id": "m0"}),
        ("job_m0", "drain_m0"),
        ("job.start", "shutdown.release_task", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "finish-while-job-runs",
        "m0 drains while its non-cancellable job still runs; it finishes the drain",
        ("SHD-5", "SHD-4"),
        ("drain_not_ready",),
        lambda s, p: s.call({"type": "shutdown.finish", "member_id": "m0"}),
        ("job_m0", "drain_m0"),
        ("job.start", "shutdown.finish", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "unknown-id-consume",
        "a consume of an id nobody made",
        ("APR-5",),
        ("unknown_id",),
        lambda s, p: s.call(consume("protocol-00000000deadbeef")),
    ),
    # ---- every guard of an operation's precondition, one case each (review 52) ----------------
    Bad(
        "late-review",
        "the Lead reviews m0's request past its deadline, before the monitor's pass",
        ("APR-4",),
        ("approval_expired",),
        lambda s, p: s.call(review(p)),
        ("unreviewed", "tick"),
        ("tick",),
    ),
    Bad(
        "consume-other-tool",
        "m0 makes its approved call with another tool of its profile (the same arguments)",
        ("APR-5",),
        ("tool_mismatch",),
        lambda s, p: s.call({**consume(p), "tool": "restart_service"}),
    ),
    Bad(
        "finish-holding-task",
        "m0 drains still holding its task; it finishes the drain without releasing it",
        ("SHD-5", "SHD-3", "INV-4"),
        ("shutdown_refused", "drain_not_ready"),
        lambda s, p: s.call({"type": "shutdown.finish", "member_id": "m0"}),
        ("drain_m0",),
        ("shutdown.finish", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "early-force-terminate",
        "m0 drains, its request not timed out; the Lead force-terminates it (the ladder's last rung)",
        ("SHD-7", "SHD-6"),
        ("shutdown_refused",),
        lambda s, p: s.call(
            {"type": "shutdown.force_terminate", "actor": {"member_id": "lead"}, "protocol_id": s.shutdown_id}  # type: ignore[attr-defined]
        ),
        ("drain_m0",),
        ("shutdown.force_terminate", *DRAIN_OPS),
        "shutdown",
    ),
    Bad(
        "shutdown-of-stopped-member",
        "m1 was lost and inspected (stopped); the Lead asks it to shut down",
        ("SHD-1", "SHD-2"),
        ("shutdown_refused", "member_not_running"),
        lambda s, p: s.call({"type": "shutdown.request", **_shutdown("m1")}),
        ("stop_m1",),
        ("shutdown.request", "member.lapse", "member.inspect"),
        "shutdown",
    ),
    *(
        Bad(
            name,
            f"m1's plan drafted again under its plan_key, with {what}",
            ("STO-2", "MSG-4", "PLN-1"),
            ("protocol_conflict",),
            _redraft(change),
            ("plan_pending",),
            ("plan.draft", "plan.submit"),
            "plan approval",
        )
        for name, what, change in PLAN_RETRY_CHANGES
    ),
    Bad(
        "forged-plan-decider",
        "m0, a member but not the responder, approves m1's pending plan",
        ("PLN-2", "APR-3"),
        ("not_responder",),
        lambda s, p: s.call(
            {"type": "plan.decide", "actor": {"member_id": "m0"}, "plan_id": s.plan_id, "decision": "approved"}  # type: ignore[attr-defined]
        ),
        ("plan_pending",),
        ("plan.draft", "plan.submit", "plan.decide"),
        "plan approval",
    ),
    Bad(
        "redelivered-plan-decision",
        "m1's plan decision delivered again: the recorded result, nothing new",
        ("MSG-5", "PLN-3"),
        (),
        lambda s, p: s.call(
            {"type": "plan.deliver_decision", "member_id": "m1", "plan_id": s.plan_id, "sequence": 0}  # type: ignore[attr-defined]
        ),
        ("plan_approved", "deliver_plan_again"),
        PLAN_OPS,
        "plan approval",
    ),
    Bad(
        "job-signalled-unasked",
        "m0's job, never asked to cancel, exits on a signal",
        ("JOB-1",),
        (),
        lambda s, p: s.call({"type": "job.exit", "job_id": _JOB["job_id"], "outcome": "cancelled"}),
        ("job_m0",),
        ("job.start", "job.exit"),
        "jobs",
        _not_cancelled,
    ),
    Bad(
        "secret-of-every-shape",
        "the Lead's review summary carries one secret of every shape of the corpus",
        ("AUD-3",),
        (),
        lambda s, p: s.call({**review(p), "summary": _summary_of_every_shape()}),
        ("unreviewed",),
        (),
        "operation approval",
        _no_secret_of_any_shape,
    ),
    Bad(
        "secret-in-job-command",
        "m0 starts a job whose command carries one secret of every shape of the corpus",
        ("AUD-3",),
        (),
        lambda s, p: s.call(
            {"type": "job.start", "member_id": "m0", **_JOB, "command": f"make deploy {_summary_of_every_shape()}"}
        ),
        (),
        ("job.start",),
        "jobs",
        _no_secret_of_any_shape,
    ),
    Bad(
        "arguments-at-limit",
        f"tool arguments of exactly {MAX_ARGUMENTS_BYTES} bytes (the limit)",
        ("MSG-2",),
        (),
        lambda s, p: s.call(request(slot=1, arguments=_AT_LIMIT)),
        (),
        (),
        "operation approval",
        _accepted,
    ),
    Bad(
        "oversized-arguments",
        f"tool arguments over {MAX_ARGUMENTS_BYTES} bytes",
        ("MSG-2",),
        ("payload_too_large",),
        lambda s, p: s.call(request(slot=1, arguments=BIG)),
    ),
    Bad(
        "oversized-line",
        f"a request line over {MAX_LINE_BYTES} bytes",
        ("MSG-2",),
        ("payload_too_large",),
        lambda s, p: _raw(s, canonical_json({**review(p), "msg_id": 10**6, "summary": "x" * MAX_LINE_BYTES})),
    ),
)


def _set_up(session: Session, bad: Bad, caps: dict[str, Any]) -> str:
    session.start()
    for member, task in (("m0", "t0"), ("m1", "t1")):
        session.call({"type": "task.claim", "member_id": member, "task_id": task})
    session.call(request())
    pid = next(iter(approval_labels(session.snapshot())), "")
    if "unreviewed" not in bad.setup:
        session.call(review(pid))
    for step in bad.setup:
        if step == "restart_member":
            if {"member.lapse", "member.inspect"} <= set(caps.get("operations", [])):
                # a member is restarted once stopped (the model's member.restart): lost, then inspected
                session.call({"type": "member.lapse", "member_id": "m0"})
                session.call({"type": "member.inspect", "member_id": "m0"})
            session.call({"type": "member.restart", "member_id": "m0"})
        elif step == "tick":
            session.call({"type": "tick", "seconds": 2})
        elif step == "half_tick":  # time passes, no deadline with it (ttl 1)
            session.call({"type": "tick", "seconds": 0.5})
        elif step == "shutdown_expired":  # m1 never begins to drain: past the deadline the monitor expires it
            session.call({"type": "shutdown.request", **_shutdown("m1")})
            session.call({"type": "tick", "seconds": 61})
            session.call({"type": "monitor.pass"})
        elif step == "consume":
            session.call(consume(pid))
        elif step == "profile_bump_m0":  # a new profile version with the same tools (XPR-4)
            session.call({"type": "profile.change", "member_id": "m0", "tools": ["deploy"]})
        elif step == "profile_drop_m0":
            session.call({"type": "profile.change", "member_id": "m0", "tools": []})
        elif step == "reclaim_m0":  # the lost incarnation's task inspected, then claimed by the new one
            session.call({"type": "task.inspect", "task_id": "t0", "outcome": "pending"})
            session.call({"type": "task.claim", "member_id": "m0", "task_id": "t0"})
        elif step == "shutdown_m0":
            reply = session.call({"type": "shutdown.request", **_shutdown("m0")})
            session.shutdown_id = reply.get("result", {}).get("protocol_id", "")  # type: ignore[attr-defined]
        elif step == "job_m0":
            session.call({"type": "job.start", "member_id": "m0", **_JOB, "cancellable": False})
        elif step == "drain":
            _drain(session, "m1", "t1")
        elif step in ("drain_m0", "drain_m1"):
            _drain(session, step[-2:], None)
        elif step in ("plan_approved", "plan_delivered"):
            deliver = step == "plan_delivered"
            session.plan_id = _approved_plan(session, "m1", "t1", deliver)  # type: ignore[attr-defined]
        elif step == "stop_m1":  # m1 lost and inspected: stopped (SHD-10, SHD-7)
            session.call({"type": "member.lapse", "member_id": "m1"})
            session.call({"type": "member.inspect", "member_id": "m1"})
        elif step == "plan_pending":  # m1's plan submitted, not decided
            actor = {"member_id": "m1", "incarnation": 1}
            document = plan_document(0, 1, 1, 60)
            reply = session.call(
                {"type": "plan.draft", "actor": actor, "task_id": "t1", "plan_key": "plan-0", "plan": document}
            )
            session.plan_id = reply.get("result", {}).get("plan_id", "")  # type: ignore[attr-defined]
            session.call({"type": "plan.submit", "actor": actor, "task_id": "t1", "plan_id": session.plan_id})  # type: ignore[attr-defined]
        elif step == "deliver_plan_again":  # the first delivery's result, kept to compare
            session.first_delivery = session.call(  # type: ignore[attr-defined]
                {"type": "plan.deliver_decision", "member_id": "m1", "plan_id": session.plan_id, "sequence": 0}  # type: ignore[attr-defined]
            )
            session.call({"type": "tick", "seconds": 1})
        elif step == "deliver":
            session.snapshot()
            session.first_delivery = _deliver_twice(session, pid)  # type: ignore[attr-defined]
            session.call({"type": "tick", "seconds": 1})  # a later delivery: a new result would differ
    return pid


def _shutdown(member: str) -> dict[str, Any]:
    """The Lead's request to shut ``member`` down (the fields after ``type``)."""
    lead = {"actor": {"member_id": "lead"}, "request_key": f"shutdown-{member}", "reason_text": REASON_TEXT}
    return {"member_id": member, **lead, "ttl_seconds": 60}


def _approved_plan(session: Session, member: str, task: str, deliver: bool) -> str:
    """``member`` drafts and submits a plan for ``task``; the Lead approves it and, if ``deliver``,
    the decision is delivered (PLN-3): from then on the approval cannot be retracted (PLN-6), and
    only from then on may the requester start it. Returns the plan's id."""
    actor = {"member_id": member, "incarnation": 1}
    document = plan_document(0, int(member[1:]), 1, 60)
    reply = session.call(
        {"type": "plan.draft", "actor": actor, "task_id": task, "plan_key": "plan-0", "plan": document}
    )
    plan_id: str = reply.get("result", {}).get("plan_id") or next(iter(plan_labels(session.snapshot())), "")
    session.call({"type": "plan.submit", "actor": actor, "task_id": task, "plan_id": plan_id})
    lead = {"actor": {"member_id": "lead"}, "plan_id": plan_id}
    session.call({"type": "plan.decide", **lead, "decision": "approved"})
    if deliver:
        session.call({"type": "plan.deliver_decision", "member_id": member, "plan_id": plan_id, "sequence": 0})
    return plan_id


def _plan_start(session: Session) -> dict[str, Any]:
    """m1 (the requester of the set-up plan, of its first incarnation) starts the plan."""
    actor = {"member_id": "m1", "incarnation": 1}
    return {"type": "plan.start", "actor": actor, "task_id": "t1", "plan_id": session.plan_id}  # type: ignore[attr-defined]


def _drain(session: Session, member: str, task: str | None) -> None:
    """``member`` finishes ``task`` if one is given (it then holds none, so only the drain keeps it
    from claiming, MEM-1), and the Lead's shutdown request for it is delivered: it drains (SHD-2).
    Without ``task`` it drains still holding its task, its approved approval and its delivered plan
    kept (XPR-2 cancels only requested approvals and pending plans): only the drain refuses them."""
    if task is not None:
        session.call({"type": "task.finish", "member_id": member, "task_id": task, "outcome": "completed"})
    reply = session.call({"type": "shutdown.request", **_shutdown(member)})
    pid = reply.get("result", {}).get("protocol_id", "")
    session.shutdown_id = pid  # type: ignore[attr-defined]
    session.call({"type": "shutdown.begin_drain", "member_id": member, "protocol_id": pid})


def run_bad(command: str, bad: Bad, caps: dict[str, Any], root: Path) -> Case:
    case = Case(f"bad-{bad.name}", "bad input", bad.group, bad.title, sorted(bad.clauses))
    missing = missing_capabilities([*BASE_OPS, *bad.operations], [], caps)
    if missing:
        return case.unimplemented(missing)
    started = time.monotonic()
    session = Session(command, TEAM, root)
    try:
        pid = _set_up(session, bad, caps)
        before = session.snapshot()
        reply = bad.send(session, pid)
        after = session.snapshot()
        if bad.outcome is not None:
            wrong = bad.outcome(reply, before, after)
            if wrong:
                case.fail(wrong, bad.clauses, session.trace)
        else:
            _judge(case, bad, reply, canonical_json(before) == canonical_json(after), session.trace)
        _same_answer(case, bad, session, reply, pid)
    except Crashed as error:
        case.fail(f"the process died ({error})", bad.clauses, session.trace)
    finally:
        session.close()
        case.seconds = time.monotonic() - started
    return case


def _judge(case: Case, bad: Bad, reply: dict[str, Any], unchanged: bool, trace: list[str]) -> None:
    if bad.codes and reply["type"] != "error":
        case.fail(f"accepted; expected a typed error {' or '.join(bad.codes)}", bad.clauses, trace)
    elif bad.codes and reply["error"]["code"] not in bad.codes:
        case.fail(f"refused with {reply['error']['code']}; expected {' or '.join(bad.codes)}", bad.clauses, trace)
    elif bad.codes and not reply["error"]["definite"]:
        case.fail("refused, but not definite: nothing was changed, so the error must say so", bad.clauses, trace)
    elif not bad.codes and reply["type"] != "ok":
        case.fail(
            f"refused with {reply['error']['code']}; a duplicate must be answered as the first", bad.clauses, trace
        )
    elif not unchanged:
        case.fail("the snapshot changed: bad input must change nothing", bad.clauses, trace)


def _same_answer(case: Case, bad: Bad, session: Session, reply: dict[str, Any], pid: str) -> None:
    """A duplicate is answered as the first was: the same id (MSG-4), the same recorded result (MSG-5)."""
    if case.verdict != "OK" or reply["type"] != "ok":
        return
    if bad.name == "duplicate-request" and reply["result"].get("protocol_id") != pid:
        case.fail(
            f"the retry gave id {reply['result'].get('protocol_id')!r}, the first {pid!r}", bad.clauses, session.trace
        )
    first = getattr(session, "first_delivery", None)
    if bad.name == "redelivered-plan-decision" and (first is None or first.get("result") != reply["result"]):
        case.fail("the second delivery returned another result than the first", bad.clauses, session.trace)
    if bad.name == "redelivered-message" and (first is None or first.get("result") != reply["result"]):
        case.fail("the second delivery returned another result than the first", bad.clauses, session.trace)


__all__ = ["CASES", "run_bad"]
