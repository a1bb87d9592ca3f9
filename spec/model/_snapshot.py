"""Model state → the canonical snapshot (DESIGN rule 5): the same JSON documents, validated by the
same schemas, that the reference harness and foreign implementations export.

Names are derived from indices (``m0``, ``t1``); ids are the stable name-based ids of MSG-4; the
one protected tool is ``deploy`` with arguments ``{"target": "staging"}`` (or ``"production"``
for a call with changed arguments). Audit events are abstracted away except the approving actor
of a plan, which the snapshot's team log holds too (:func:`audit_log`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from .. import ids
from ._config import Config
from ._state import NONE, Approval, Execution, Job, Member, Message, Owed, Plan, PlanRun, Shutdown, State, Task

TOOL = "deploy"
LEAD = "lead"
DIGEST_SAME = ids.arguments_digest(TOOL, {"target": "staging"})
DIGEST_CHANGED = ids.arguments_digest(TOOL, {"target": "production"})
TTL_SECONDS = 60


def member_id(m: int) -> str:
    return f"m{m}"


def task_id(t: int) -> str:
    return f"t{t}"


def job_id(m: int) -> str:
    return f"job-m{m}"


@cache
def approval_id(a: int, requester: int) -> str:
    return ids.protocol_id(member_id(requester), f"call-{a}", "operation_approval")


@cache
def plan_id(p: int, requester: int) -> str:
    return ids.protocol_id(member_id(requester), f"plan-{p}", "plan_approval")


@cache
def shutdown_id(slot: int) -> str:
    return ids.protocol_id(LEAD, f"shutdown-{slot}", "shutdown_request")


def _nullable(index: int, name: Any) -> Any:
    return None if index == NONE else name(index)


@lru_cache(maxsize=65536)
def member_doc(m: int, member: Member) -> dict[str, Any]:
    return {
        "member_id": member_id(m),
        "status": member.status,
        "incarnation": member.incarnation,
        "accepting_new_tasks": member.accepting,
        "shutdown_request_id": _nullable(member.shutdown, shutdown_id),
        "current_task_id": _nullable(member.task, task_id),
        "last_heartbeat_at": None,
        "version": 0,
    }


def profile_tools(has_tool: bool, edits: int) -> list[str]:
    """A capability profile's tools: the protected one if it holds it, and after each change of the
    profile the other tool that change gave it (``notes-N``, XPR-4: every change shows)."""
    return ([TOOL] if has_tool else []) + ([f"notes-{edits}"] if edits else [])


def changed_profile_tools(member: Member, keep_tool: bool) -> list[str]:
    """The tools ``profile.change`` leaves ``member``'s profile holding: what a driver of an
    implementation sets for it (``reference.Harness.set_profile``)."""
    return profile_tools(keep_tool, member.profile_edits + 1)


@lru_cache(maxsize=65536)
def profile_doc(m: int, member: Member) -> dict[str, Any]:
    tools = profile_tools(member.has_tool, member.profile_edits)
    return {"member_id": member_id(m), "version": member.profile_version, "tools": tools}


@lru_cache(maxsize=65536)
def task_doc(t: int, task: Task) -> dict[str, Any]:
    claimed = task.owner != NONE
    return {
        "task_id": task_id(t),
        "status": task.status,
        "owner_id": member_id(task.owner) if claimed else None,
        "owner_incarnation": task.owner_incarnation if claimed else None,
        "claim_token": ids.message_id(task_id(t), f"claim-{task.claims}") if claimed else None,
        "checkpoint": {"released": True} if task.checkpoint else None,
        "history": [],
        "version": 0,
    }


_EXIT_CODES = {"succeeded": 0, "failed": 1, "cancelled": -15}


@lru_cache(maxsize=65536)
def job_doc(m: int, job: Job) -> dict[str, Any]:
    return {
        "job_id": job_id(m),
        "status": job.status,
        "owner_id": member_id(m),
        "task_id": _nullable(job.task, task_id),
        "cancellable": job.cancellable,
        "command": "make deploy",
        "exit_code": _EXIT_CODES.get(job.status),
        "version": 0,
    }


@lru_cache(maxsize=65536)
def approval_doc(a: int, ap: Approval, ttl: int) -> dict[str, Any]:
    return {
        "protocol_id": approval_id(a, ap.requester),
        "kind": "operation_approval",
        "status": ap.status,
        "requester_id": member_id(ap.requester),
        "requester_incarnation": ap.incarnation,
        "responder_id": LEAD,
        "task_id": task_id(ap.task),
        "tool_name": TOOL,
        "tool_call_id": f"call-{a}",
        "arguments_digest": DIGEST_SAME,
        "profile_version": ap.profile_version,
        "risk_summary": ap.risk_summary,
        "review_summary": None,
        "created_at": max(ap.deadline - ttl, 0),
        "deadline": ap.deadline,
        "consumed_at": None if ap.consumed_at == NONE else ap.consumed_at,
        "reason": ap.reason or None,
        "events": [],
        "version": 0,
    }


@lru_cache(maxsize=65536)
def execution_doc(a: int, requester: int, ex: Execution) -> dict[str, Any]:
    return {
        "idempotency_key": approval_id(a, requester),
        "status": ex.status,
        "requester_id": member_id(ex.requester),
        "task_id": task_id(ex.task),
        "tool_name": TOOL,
        "arguments_digest": DIGEST_CHANGED if ex.changed_arguments else DIGEST_SAME,
        "profile_version": ex.profile_version,
        "attempts": ex.attempts,
        "result": None if ex.status == "started" else {"ok": ex.status == "succeeded"},
    }


def plan_body(p: int, plan: Plan, steps: int) -> dict[str, Any]:
    return {
        "goal": "migrate the orders table",
        "steps": [{"id": f"s{i}", "action": "migrate", "params": {"part": i}} for i in range(1, steps + 1)],
        "estimated_cost": 1.0,
        "rollback": "restore the backup",
        "risks": ["lock contention"],
        "ttl_seconds": TTL_SECONDS,
        "correlation_id": plan_id(p, plan.requester),
    }


@lru_cache(maxsize=65536)
def plan_doc(p: int, plan: Plan, steps: int, ttl: int) -> dict[str, Any]:
    events = [{"actor": plan.approved_by, "event": "approved", "summary": "", "at": 0}] if plan.approved_by else []
    return {
        "protocol_id": plan_id(p, plan.requester),
        "kind": "plan_approval",
        "status": plan.status,
        "requester_id": member_id(plan.requester),
        "requester_incarnation": plan.incarnation,
        "responder_id": LEAD,
        "task_id": task_id(plan.task),
        "plan": plan_body(p, plan, steps),
        "revision": 1,
        "supersedes": None,
        "decision_delivered": plan.delivered,
        "comment": None,
        "created_at": max(plan.deadline - ttl, 0),
        "deadline": plan.deadline,
        "reason": plan.reason or None,
        "events": events,
        "version": 0,
    }


@lru_cache(maxsize=65536)
def run_doc(p: int, requester: int, run: PlanRun, ttl: int) -> dict[str, Any]:
    return {
        "plan_id": plan_id(p, requester),
        "status": run.status,
        "executed_step_ids": list(run.steps),
        "started_at": max(run.deadline - ttl, 0),
        "deadline": run.deadline,
        "reason": None,
        "events": [],
        "version": 0,
    }


@lru_cache(maxsize=65536)
def shutdown_doc(slot: int, sd: Shutdown, ttl: int) -> dict[str, Any]:
    return {
        "protocol_id": shutdown_id(slot),
        "kind": "shutdown_request",
        "status": sd.status,
        "requester_id": LEAD,
        "target_id": member_id(sd.target),
        "target_incarnation": sd.target_incarnation,
        "responder_id": member_id(sd.target),
        "reason_text": "scale down",
        "created_at": max(sd.deadline - ttl, 0),
        "deadline": sd.deadline,
        "released_task_id": _nullable(sd.released, task_id),
        "waited_job_ids": [job_id(m) for m in sd.waited],
        "reason": sd.reason or None,
        "events": [],
        "version": 0,
    }


@lru_cache(maxsize=65536)
def _message_doc(
    key: tuple[str, int, int], info: tuple[tuple[str, Any], ...], copy: int, steps: int, source: Any
) -> dict[str, Any]:
    kind, ref, phase = key
    facts = dict(info)
    correlation, sender, target, body, phase_name, reply_to = _message_parts(source, kind, ref, phase, facts, steps)
    doc: dict[str, Any] = {
        "message_type": kind,
        "message_id": ids.message_id(correlation, phase_name + (f"#retry{copy}" if copy else "")),
        "correlation_id": correlation,
        "sender": sender,
        "target": target,
        "timestamp": 0,
        "ttl_seconds": TTL_SECONDS,
        "body": body,
    }
    if reply_to is not None:
        doc["reply_to"] = ids.message_id(correlation, reply_to)
    return doc


def _message_parts(source: Any, kind: str, ref: int, phase: int, facts: dict[str, Any], steps: int) -> tuple[Any, ...]:
    """(correlation id, sender, target, body, phase name, reply-to phase); ``source`` is the record
    the message belongs to (fields of it that a message uses never change after creation)."""
    if kind in ("approval_request", "approval_decision"):
        ap = source
        pid = approval_id(ref, ap.requester)
        if kind == "approval_request":
            body = {
                "protocol_id": pid,
                "requester_id": member_id(ap.requester),
                "requester_incarnation": ap.incarnation,
                "task_id": task_id(ap.task),
                "tool_name": TOOL,
                "arguments_digest": DIGEST_SAME,
                "profile_version": ap.profile_version,
                "risk_summary": ap.risk_summary,
                "deadline": ap.deadline,
            }
            return pid, member_id(ap.requester), LEAD, body, "request", None
        body = {"protocol_id": pid, "decision": facts["decision"], "review_summary": ""}
        return pid, LEAD, member_id(ap.requester), body, "decision", "request"
    if kind in ("plan_request", "plan_decision", "plan_completion", "plan_abandoned"):
        plan = source
        pid = plan_id(ref, plan.requester)
        requester = member_id(plan.requester)
        if kind == "plan_request":
            body = {
                "plan": plan_body(ref, plan, steps),
                "revision": 1,
                "supersedes": None,
                "requester_incarnation": plan.incarnation,
            }
            return pid, requester, LEAD, body, "request", None
        if kind == "plan_decision":
            body = {"decision": facts["decision"], "sequence": phase}
            return pid, LEAD, requester, body, f"decision-{phase}", "request"
        if kind == "plan_completion":
            body = {"plan_id": pid, "outcome": facts["outcome"], "summary": ""}
            return pid, requester, LEAD, body, "completion", None
        return pid, requester, LEAD, {"plan_id": pid, "reason": "expired"}, "abandoned", None
    if kind in ("shutdown_request", "shutdown_ack"):
        sd = source
        pid = shutdown_id(ref)
        if kind == "shutdown_request":
            body = {
                "protocol_id": pid,
                "target_incarnation": sd.target_incarnation,
                "reason_text": "scale down",
                "deadline": sd.deadline,
            }
            return pid, LEAD, member_id(sd.target), body, "request", None
        body = {
            "protocol_id": pid,
            "released_task_id": _nullable(facts["released"], task_id),
            "waited_job_ids": [job_id(m) for m in facts["waited"]],
        }
        return pid, member_id(sd.target), LEAD, body, "ack", "request"
    if kind == "member_lost":
        pid = ids.protocol_id(member_id(ref), f"incarnation-{phase}", "member_lost")
        body = {
            "member_id": member_id(ref),
            "incarnation": phase,
            "last_heartbeat_at": 0,
            "flagged_task_ids": [task_id(t) for t in facts["flagged"]],
        }
        return pid, LEAD, "team", body, "lost", None
    assert kind == "task_suspended", kind
    pid = ids.protocol_id(task_id(ref), f"claim-{phase}", "task_suspended")
    body = {"task_id": task_id(ref), "member_id": member_id(facts["member"]), "reason_text": "unit deadline"}
    return pid, member_id(facts["member"]), LEAD, body, "suspended", None


def _source(s: State, kind: str, ref: int) -> Any:
    """The protocol record a message of ``kind`` about slot ``ref`` belongs to (None for notices)."""
    if kind.startswith("approval_"):
        return s.approvals[ref]
    if kind.startswith("plan_"):
        return s.plans[ref]
    if kind.startswith("shutdown_"):
        return s.shutdowns[ref]
    return None


@lru_cache(maxsize=65536)
def _message_record(message: Message, source: Any, steps: int) -> dict[str, Any]:
    doc = _message_doc(message.key, message.info, message.copy, steps, source)
    return {"message": doc, "status": message.status, "recorded_result": None}


@lru_cache(maxsize=65536)
def _outbox_record(entry: Owed, source: Any, steps: int) -> dict[str, Any]:
    doc = _message_doc(entry.key, entry.info, 0, steps, source)
    return {"message_id": doc["message_id"], "status": entry.status, "message": doc}


SECTION_INPUTS: dict[str, tuple[str, ...]] = {
    "clock": ("clock",),
    "member": ("members",),
    "capability_profile": ("members",),
    "task": ("tasks",),
    "job": ("jobs",),
    "operation_approval": ("approvals",),
    "tool_execution": ("executions", "approvals"),
    "plan_approval": ("plans",),
    "plan_execution": ("runs", "plans"),
    "shutdown_request": ("shutdowns",),
    "message": ("bus", "approvals", "plans", "shutdowns"),
    "outbox_entry": ("outbox", "approvals", "plans", "shutdowns"),
    "audit_entry": ("plans",),  # the plan events the model keeps (AUD-5)
}
"""Each section of :func:`snapshot`, in its order, and the fields of the state it is built from
(with the configuration): states equal in those fields have equal sections. The explorer keys its
invariant memo on them, so a check runs on a snapshot only for inputs it has not seen
(``model_tests/test_state_memo.py`` checks the declaration against :func:`snapshot`)."""


_SECTIONS: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
"""(section, ids of its inputs) → (the inputs, the section's documents). States share unchanged
record tuples, so most sections of a snapshot are the list made for an earlier state; the entry
holds its inputs, so their ids cannot be reused while it is kept."""


GENESIS = ids.AUDIT_GENESIS


def audit_log(plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model's abstract team log (AUD-5): exactly the plan events its snapshot keeps (the
    approving actor), chained as the reference chains its entries, so ``decisions_audited`` holds
    on the model's snapshots too. Approvals and shutdowns keep no events here, so no entries."""
    log: list[dict[str, Any]] = []
    previous = GENESIS
    for doc in plans:
        for event in doc["events"]:
            entry = {
                "sequence": len(log),
                "previous_hash": previous,
                "actor": event["actor"],
                "event": f"plan.{event['event']}",
                "subject_id": doc["protocol_id"],
                "summary": event["summary"],
                "at": event["at"],
            }
            previous = entry["hash"] = ids.audit_entry_hash(entry)
            log.append(entry)
    return log


def _section(
    key: tuple[Any, ...], inputs: tuple[Any, ...], build: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The section named ``key[0]``; ``key`` holds the ids of ``inputs`` and the settings."""
    known = _SECTIONS.get(key)
    if known is None:
        if len(_SECTIONS) > 200_000:
            _SECTIONS.clear()
        known = _SECTIONS[key] = (inputs, build())
    return known[1]


def world_of(s: State) -> tuple[list[str], list[dict[str, Any]]]:
    """What the external system received, and the executions recorded (APR-8): the idempotency key
    of each call the protected tool got (the ghost :attr:`Execution.world_calls`, once per call),
    and the ``tool_execution`` section of the snapshot — the arguments of
    :func:`spec.invariants.world_agrees`."""
    approvals = s.approvals
    calls = [approval_id(a, approvals[a].requester) for a, x in enumerate(s.executions) for _ in range(x.world_calls)]
    return calls, _execution_docs(s)


def _execution_docs(s: State) -> list[dict[str, Any]]:
    """The ``tool_execution`` section: one document per execution record written."""
    return [execution_doc(a, s.approvals[a].requester, x) for a, x in enumerate(s.executions) if x.status]


def snapshot(state: State, config: Config) -> dict[str, Any]:
    """The canonical snapshot of a model state. Creation times are not kept by the model; the
    snapshot shows ``deadline - ttl_ticks``. Record documents and whole sections are cached and
    shared between snapshots: treat them as read-only (``copy.deepcopy`` before changing one)."""
    s, plan_steps, ttl = state, config.plan_steps, config.ttl_ticks
    members, approvals, plans, shutdowns = s.members, s.approvals, s.plans, s.shutdowns
    return {
        "clock": s.clock,
        "member": _section(
            ("member", id(members)), (members,), lambda: [member_doc(m, x) for m, x in enumerate(members)]
        ),
        "capability_profile": _section(
            ("capability_profile", id(members)), (members,), lambda: [profile_doc(m, x) for m, x in enumerate(members)]
        ),
        "task": _section(("task", id(s.tasks)), (s.tasks,), lambda: [task_doc(t, x) for t, x in enumerate(s.tasks)]),
        "job": _section(
            ("job", id(s.jobs)), (s.jobs,), lambda: [job_doc(m, x) for m, x in enumerate(s.jobs) if x.status]
        ),
        "operation_approval": _section(
            ("operation_approval", id(approvals), plan_steps, ttl),
            (approvals,),
            lambda: [approval_doc(a, x, ttl) for a, x in enumerate(approvals) if x.status],
        ),
        "tool_execution": _section(
            ("tool_execution", id(s.executions), id(approvals)),
            (s.executions, approvals),
            lambda: _execution_docs(s),
        ),
        "plan_approval": _section(
            ("plan_approval", id(plans), plan_steps, ttl),
            (plans,),
            lambda: [plan_doc(p, x, plan_steps, ttl) for p, x in enumerate(plans) if x.status],
        ),
        "plan_execution": _section(
            ("plan_execution", id(s.runs), id(plans), plan_steps, ttl),
            (s.runs, plans),
            lambda: [run_doc(p, plans[p].requester, x, ttl) for p, x in enumerate(s.runs) if x.status],
        ),
        "shutdown_request": _section(
            ("shutdown_request", id(shutdowns), plan_steps, ttl),
            (shutdowns,),
            lambda: [shutdown_doc(i, x, ttl) for i, x in enumerate(shutdowns) if x.status],
        ),
        "message": _section(
            ("message", id(s.bus), id(approvals), id(plans), id(shutdowns), plan_steps, ttl),
            (s.bus, approvals, plans, shutdowns),
            lambda: [_message_record(m, _source(s, m.key[0], m.key[1]), plan_steps) for m in s.bus],
        ),
        "outbox_entry": _section(
            ("outbox_entry", id(s.outbox), id(approvals), id(plans), id(shutdowns), plan_steps, ttl),
            (s.outbox, approvals, plans, shutdowns),
            lambda: [_outbox_record(o, _source(s, o.key[0], o.key[1]), plan_steps) for o in s.outbox],
        ),
        "audit_entry": _section(
            ("audit_entry", id(plans), plan_steps, ttl),
            (plans,),
            lambda: audit_log([plan_doc(p, x, plan_steps, ttl) for p, x in enumerate(plans) if x.status]),
        ),
    }
