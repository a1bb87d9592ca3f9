"""A model action in a model state → the driver request that performs it on an implementation.

The suite chooses what a harness injects — member and task names, ``tool_call_id`` (APR-3) —
and never an identifier the implementation makes: an approval is named by the label
``<requester>/<tool_call_id>`` (``{"$approval": label}`` in a request), which the runner resolves
from the implementation's own snapshot."""

from __future__ import annotations

from typing import Any

from spec.model import Config
from spec.model._model import Action
from spec.model._ops import RISK_TEXT
from spec.model._snapshot import LEAD, TOOL, changed_profile_tools, job_id, member_id, plan_body, task_id
from spec.model._state import NONE, Plan, State
from spec.secret_corpus import carrier

SAME, CHANGED = {"target": "staging"}, {"target": "production"}

CLAUSES: dict[str, tuple[str, ...]] = {
    "task.claim": ("MEM-1",),
    "task.finish": ("TSK-1",),
    "profile.change": ("XPR-4", "APR-7"),
    "approval.request": ("APR-1", "MSG-4", "MSG-6"),
    "approval.retry": ("MSG-4", "INV-6"),
    "approval.review": ("APR-4",),
    "approval.cancel": ("APR-9",),
    "approval.consume": ("APR-5", "APR-6", "INV-1"),
    "monitor.pass": ("INV-12", "SHD-6"),
    "tick": (),
    "restart": ("REC-1", "REC-2", "APR-8"),
    "task.suspend": ("SHD-9",),
    "task.resume": ("SHD-9",),
    "task.inspect": ("SHD-7",),
    "job.start": ("MEM-4",),
    "job.exit": ("JOB-1",),
    "member.lapse": ("SHD-10",),
    "member.inspect": ("SHD-7",),
    "member.restart": ("XPR-1",),
    "member.retire": ("XPR-1",),
    "shutdown.request": ("SHD-1",),
    "shutdown.cancel": ("SHD-1",),
    "shutdown.begin_drain": ("SHD-2", "XPR-1", "XPR-2"),
    "shutdown.drain_jobs": ("SHD-3", "JOB-2"),
    "shutdown.release_task": ("SHD-3", "TSK-3"),
    "shutdown.finish": ("SHD-5",),
    "shutdown.force_terminate": ("SHD-7",),
    "outbox.send": ("REC-3",),
    "plan.draft": ("PLN-1",),
    "plan.submit": ("PLN-1", "PLN-5"),
    "plan.decide": ("PLN-2", "PLN-5"),
    "plan.retract": ("PLN-6",),
    "plan.deliver_decision": ("PLN-3", "MSG-5"),
    "plan.withdraw": ("PLN-11",),
    "plan.start": ("PLN-7", "XPR-1"),
    "plan.step": ("PLN-4",),
    "plan.complete": ("PLN-10",),
    "plan.fail": ("PLN-11",),
    "plan.rollback": ("PLN-9",),
}
_FAMILY_CLAUSES = {
    "task": ("TSK-1",),
    "job": ("MEM-4",),
    "member": ("XPR-1",),
    "shutdown": ("SHD-1",),
    "plan": ("PLN-1",),
}
_FAMILY_CLAUSES["outbox"] = ("REC-3",)


REVIEW_TEXT = "approved: " + carrier("github_token")
REASON_TEXT = "scale down; " + carrier("url_password")
"""What the Lead writes in a review's summary and a shutdown request's reason: free text carrying a
secret, as a real one may (AUD-3, INV-10: stored only redacted, like the risk summary; an outside
review stored the review summary unredacted, and no case sent one)."""


def clauses_of(operation: str) -> tuple[str, ...]:
    """The clauses an operation's steps check (a new operation: its family's first clause)."""
    return CLAUSES.get(operation) or _FAMILY_CLAUSES.get(operation.split(".")[0]) or ()


def restart_clauses(crashed: str) -> tuple[str, ...]:
    """What the restart after a crash in operation ``crashed`` is judged on: recovery (REC-1,
    REC-2), APR-8 where the crash cut an approval's operation short, and the crashed operation's
    own clauses — so a failed recovery of a drain is labelled with the drain's, not APR-8."""
    approval = ("APR-8",) if crashed.startswith("approval.") else ()
    return tuple(dict.fromkeys(("REC-1", "REC-2", *approval, *clauses_of(crashed))))


def label(requester: int, slot: int) -> str:
    return f"{member_id(requester)}/call-{slot}"


def _call(s: State, m: int, slot: int, task: int) -> dict[str, Any]:
    actor = {"member_id": member_id(m), "incarnation": s.members[m].incarnation}
    return {"actor": actor, "tool_call_id": f"call-{slot}", "task_id": task_id(task) if task != NONE else "none"}


def request_for(action: Action, s: State, config: Config) -> dict[str, Any] | None:
    """The request for ``action`` taken in state ``s``; None for ``restart`` (the runner restarts)."""
    name, args = action.name, dict(action.args)
    if name == "restart":
        return None
    if name == "tick":
        return {"type": "tick", "seconds": 1}
    if name == "monitor.pass":
        return {"type": "monitor.pass"}
    if name == "task.claim":
        return {"type": name, "member_id": member_id(args["member"]), "task_id": task_id(args["task"])}
    if name == "task.finish":
        m = args["member"]
        return {
            "type": name,
            "member_id": member_id(m),
            "task_id": task_id(s.members[m].task),
            "outcome": args["outcome"],
        }
    if name == "profile.change":
        tools = changed_profile_tools(s.members[args["member"]], args["keep_tool"])
        return {"type": name, "member_id": member_id(args["member"]), "tools": tools}
    if name.startswith("approval."):
        return _approval_request(name, args, s, config)
    if name.startswith("plan."):
        return _plan_request(name, args, s, config)
    team = _team_request(name, args, s, config)
    return team if team is not None else {"type": name, "args": {k: v for k, v in args.items()}}


def shutdown_label(s: State, slot: int) -> str:
    """The label :func:`conformance._abstract.shutdown_labels` gives shutdown ``slot``'s record."""
    sd = s.shutdowns[slot]
    k = sum(1 for o in s.shutdowns[:slot] if (o.target, o.target_incarnation) == (sd.target, sd.target_incarnation))
    return f"{member_id(sd.target)}#{sd.target_incarnation}/{k}"


def outbox_label(s: State, kind: str, ref: int, phase: int, info: dict[str, Any]) -> str:
    """The label of the owed message ``(kind, ref, phase)`` (``conformance._abstract.message_label``)."""
    if kind == "member_lost":
        return f"{member_id(ref)}#{phase}"
    if kind == "task_suspended":
        return f"{task_id(ref)}@{member_id(info['member'])}"
    if kind.startswith("shutdown_"):
        return shutdown_label(s, ref)
    if kind.startswith("plan_"):
        return plan_label(s, ref)
    return f"{kind}:{ref}"


def plan_label(s: State, slot: int) -> str:
    """The label :func:`conformance._abstract.plan_labels` gives plan ``slot``'s record."""
    plan = s.plans[slot]
    k = sum(1 for o in s.plans[:slot] if (o.requester, o.incarnation) == (plan.requester, plan.incarnation))
    return f"{member_id(plan.requester)}#{plan.incarnation}/plan/{k}"


def plan_document(slot: int, requester: int, steps: int, ttl: float) -> dict[str, Any]:
    """The plan the model's requester drafts in slot ``slot`` (its ``plan_body``) with the ttl of the
    run, without a ``correlation_id``: the implementation fills in its own plan id (PLN-1)."""
    body = plan_body(slot, Plan(requester=requester), steps)
    body["ttl_seconds"] = ttl
    del body["correlation_id"]
    return body


def _plan_request(name: str, args: dict[str, Any], s: State, config: Config) -> dict[str, Any]:
    """A plan operation: the requester's calls carry its ``actor`` (and the task it holds), the
    Lead's its own; the plan is ``{"$plan": label}``, resolved from the implementation's snapshot."""
    if name == "plan.draft":
        m = args["member"]
        slot = next(i for i, plan in enumerate(s.plans) if plan.status == "")
        body = _call(s, m, slot, s.members[m].task)
        del body["tool_call_id"]
        document = plan_document(slot, m, config.plan_steps, config.ttl_ticks)
        return {"type": name, **body, "plan_key": f"plan-{slot}", "plan": document}
    p = args["slot"]
    plan = s.plans[p]
    ref = {"$plan": plan_label(s, p)}
    lead = {"type": name, "actor": {"member_id": LEAD}, "plan_id": ref}
    if name == "plan.decide":
        return {**lead, "decision": args["decision"]}
    if name == "plan.retract":
        return {**lead, "to": args["to"]}
    if name == "plan.rollback":
        return lead
    if name == "plan.deliver_decision":
        return {"type": name, "member_id": member_id(plan.requester), "plan_id": ref, "sequence": plan.retractions}
    body = _call(s, plan.requester, p, s.members[plan.requester].task)
    del body["tool_call_id"]
    out = {"type": name, **body, "plan_id": ref}
    if name == "plan.step":
        steps = plan_body(p, plan, config.plan_steps)["steps"]
        return {**out, "step": steps[min(s.runs[p].cursor, len(steps) - 1)]}
    return out


def _team_request(name: str, args: dict[str, Any], s: State, config: Config) -> dict[str, Any] | None:
    """Members, tasks, jobs, shutdowns and the outbox: the names the harness chose, never an id the
    implementation made (a shutdown is ``{"$shutdown": label}``, an owed message ``{"$outbox": label}``)."""
    if "member" in args and name in _MEMBER_OPS:
        m = args["member"]
        out: dict[str, Any] = {"type": name, "member_id": member_id(m)}
        if name == "shutdown.request":
            # a free slot's label; with none (a request the model's bound leaves out, sent refused
            # for another reason), a label no request has
            slot = next((i for i, sd in enumerate(s.shutdowns) if sd.status == ""), len(s.shutdowns))
            lead = {"actor": {"member_id": LEAD}, "request_key": f"shutdown-{slot}"}
            return {**out, **lead, "reason_text": REASON_TEXT, "ttl_seconds": config.ttl_ticks}
        if name == "task.suspend":
            return {**out, "unit_seconds": config.unit_ticks}
        if name == "job.start":
            return {**out, "job_id": job_id(m), "command": "make deploy", "cancellable": args["cancellable"]}
        if name == "job.exit":
            return {"type": name, "job_id": job_id(m), "outcome": args["outcome"]}
        return out
    if name in ("task.resume", "task.inspect"):
        out = {"type": name, "task_id": task_id(args["task"])}
        return {**out, "outcome": args["outcome"]} if name == "task.inspect" else out
    if name in ("shutdown.cancel", "shutdown.begin_drain", "shutdown.force_terminate"):
        ref = {"$shutdown": shutdown_label(s, args["slot"])}
        if name == "shutdown.begin_drain":
            return {"type": name, "member_id": member_id(s.shutdowns[args["slot"]].target), "protocol_id": ref}
        return {"type": name, "actor": {"member_id": LEAD}, "protocol_id": ref}
    if name == "outbox.send":
        info = next(dict(o.info) for o in s.outbox if o.key == (args["type"], args["ref"], args["phase"]))
        label = outbox_label(s, args["type"], args["ref"], args["phase"], info)
        return {"type": name, "message_id": {"$outbox": f"{args['type']}:{label}"}}
    return None


_MEMBER_OPS = frozenset(
    {
        "member.lapse",
        "member.inspect",
        "member.restart",
        "member.retire",
        "task.suspend",
        "job.start",
        "job.exit",
        "shutdown.request",
        "shutdown.drain_jobs",
        "shutdown.release_task",
        "shutdown.finish",
    }
)


def _approval_request(name: str, args: dict[str, Any], s: State, config: Config) -> dict[str, Any]:
    if name == "approval.request":
        m = args["member"]
        slot = next(a for a, ap in enumerate(s.approvals) if ap.status == "")
        body = _call(s, m, slot, s.members[m].task)
    else:
        slot = args["slot"]
        ap = s.approvals[slot]
        body = _call(s, ap.requester, slot, ap.task)
        ref = {"$approval": label(ap.requester, slot)}
    if name in ("approval.request", "approval.retry"):
        extra = {"ttl_seconds": config.ttl_ticks, "risk_summary": RISK_TEXT}
        return {"type": name, **body, "tool": TOOL, "arguments": SAME, **extra}
    if name == "approval.review":
        decision = {"decision": args["decision"], "summary": REVIEW_TEXT}
        return {"type": name, "actor": {"member_id": LEAD}, "protocol_id": ref, **decision}
    if name == "approval.cancel":
        return {"type": name, **body, "protocol_id": ref}
    m = args["member"]
    call = _call(s, m, slot, s.members[m].task)
    arguments = CHANGED if args["changed_arguments"] else SAME
    return {"type": name, **call, "protocol_id": ref, "tool": TOOL, "arguments": arguments}


def init_request(config: Config) -> dict[str, Any]:
    """The ``init`` of a configuration's team (without ``data_dir`` and ``clock``)."""
    members = [{"member_id": member_id(m), "tools": [TOOL]} for m in range(config.members)]
    team = {"lead": LEAD, "members": members, "tasks": [task_id(t) for t in range(config.tasks)]}
    return {"type": "init", "team": team, "tools": [{"name": TOOL, "protected": True}], "config": {"name": config.name}}


__all__ = [
    "CHANGED",
    "CLAUSES",
    "SAME",
    "clauses_of",
    "init_request",
    "label",
    "outbox_label",
    "plan_document",
    "plan_label",
    "request_for",
    "restart_clauses",
    "shutdown_label",
]
