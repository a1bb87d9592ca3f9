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
from spec.model._snapshot import LEAD, TOOL, member_id, task_id
from spec.model._state import NONE, State

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
    "monitor.pass": ("INV-12",),
    "tick": (),
    "restart": ("REC-1", "REC-2", "APR-8"),
}
_FAMILY_CLAUSES = {
    "task": ("TSK-1",),
    "job": ("MEM-4",),
    "member": ("XPR-1",),
    "shutdown": ("SHD-1",),
    "plan": ("PLN-1",),
}
_FAMILY_CLAUSES["outbox"] = ("REC-3",)


def clauses_of(operation: str) -> tuple[str, ...]:
    """The clauses an operation's steps check (a new operation: its family's first clause)."""
    return CLAUSES.get(operation) or _FAMILY_CLAUSES.get(operation.split(".")[0]) or ()


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
        return {"type": name, "member_id": member_id(args["member"]), "tools": [TOOL] if args["keep_tool"] else []}
    if name in ("member.lapse", "member.inspect", "member.restart") and set(args) == {"member"}:
        return {"type": name, "member_id": member_id(args["member"])}
    if name.startswith("approval."):
        return _approval_request(name, args, s, config)
    return {"type": name, "args": {k: v for k, v in args.items()}}


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
        return {"type": name, "actor": {"member_id": LEAD}, "protocol_id": ref, "decision": args["decision"]}
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


__all__ = ["CHANGED", "CLAUSES", "SAME", "clauses_of", "init_request", "label", "request_for"]
