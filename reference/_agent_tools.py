"""Agent-facing tools, one per protocol action (AUD-4), ready for an LLM tool-calling API.

Each tool is a plain function ``(harness, ctx, arguments) -> result`` with a JSON Schema for its
arguments. Identity (``actor_id``, ``requester_id``, ``tool_call_id``, the task) comes from the
harness's :class:`CallContext` (APR-3): an argument that tries to set it is refused. There is no
generic "set status" tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

import spec

from ._errors import ForgedIdentity
from ._harness import CallContext, Harness
from ._mutants import broken

INJECTED = ("actor_id", "requester_id", "tool_call_id", "incarnation", "task_id", "responder_id")


@dataclass(frozen=True)
class AgentTool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[Harness, CallContext, dict[str, Any]], dict[str, Any]]

    def __call__(self, harness: Harness, ctx: CallContext, arguments: dict[str, Any]) -> dict[str, Any]:
        for field in INJECTED:
            if field in arguments:
                raise ForgedIdentity(field)
        errors = sorted(Draft202012Validator(self.parameters).iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            path = "$" + "".join(f".{p}" for p in errors[0].absolute_path)
            raise spec.SchemaError(self.name, path, errors[0].message)
        return self.handler(harness, ctx, arguments)

    def schema(self) -> dict[str, Any]:
        """The function declaration an LLM API takes."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_ID = {"type": "string", "minLength": 1, "maxLength": 200}


def _request(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    pid = h.approvals.request(ctx, args["tool_name"], args["arguments"], args.get("risk_summary", ""))
    return {"protocol_id": pid, "status": h.approvals._require(pid).doc["status"]}


def _review(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    doc = h.approvals.review(ctx.actor_id, args["protocol_id"], args["decision"], args.get("summary", ""))
    return {"protocol_id": doc["protocol_id"], "status": doc["status"]}


def _status(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    """Only records the caller takes part in (AUD-4): approvals and plans it requested or decides,
    shutdowns it requested or that target it; a plan shows its execution's status too."""
    wanted = args.get("protocol_id")
    mine = []
    for kind, parties, fields in _STATUS_VIEWS:
        for row in h.storage.scan(kind):
            doc = row.doc
            takes_part = ctx.actor_id in (doc[p] for p in parties) or (
                broken("status_by_id_unscoped") and wanted is not None
            )
            if takes_part and wanted in (None, doc["protocol_id"]):
                view = {k: doc[k] for k in fields}
                if kind == "plan_approval":
                    run = h.storage.read("plan_execution", doc["protocol_id"])
                    view["execution"] = None if run is None else run.doc["status"]
                mine.append(view)
    return {"records": mine}


_COMMON = ("protocol_id", "kind", "status", "deadline", "reason")
_STATUS_VIEWS = (
    ("operation_approval", ("requester_id", "responder_id"), (*_COMMON[:3], "tool_name", "task_id", *_COMMON[3:])),
    ("plan_approval", ("requester_id", "responder_id"), (*_COMMON[:3], "task_id", "revision", *_COMMON[3:])),
    ("shutdown_request", ("requester_id", "target_id"), (*_COMMON[:3], "target_id", *_COMMON[3:])),
)


def _cancel(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    """The caller's own request, before its action starts: an approval is cancelled (APR-9), a
    plan withdrawn (PLN-11), a shutdown request cancelled by the Lead that made it (SHD-1)."""
    pid = args["protocol_id"]
    if h.storage.read("plan_approval", pid) is not None:
        doc = h.plans.withdraw(ctx, pid)
    elif h.storage.read("shutdown_request", pid) is not None:
        h.shutdowns.cancel(ctx.actor_id, pid)
        doc = h.shutdowns.require(pid).doc
    else:
        doc = h.approvals.cancel(ctx, pid)
    return {"protocol_id": doc["protocol_id"], "status": doc["status"]}


def _request_plan(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    """Draft the plan under the call's id (MSG-4: a retry finds it again) and send it (PLN-1)."""
    pid = h.plans.draft(ctx, ctx.tool_call_id, args["plan"], supersedes=args.get("supersedes"))
    if h.plans.require(pid).doc["status"] == "draft":
        h.plans.submit(ctx, pid)
    return {"protocol_id": pid, "status": h.plans.require(pid).doc["status"]}


def _decide_plan(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    doc = h.plans.decide(ctx.actor_id, args["protocol_id"], args["decision"], args.get("comment", ""))
    return {"protocol_id": doc["protocol_id"], "status": doc["status"]}


def _request_shutdown(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    """SHD-1: the Lead asks a member to shut down; the call's id is the request's key (MSG-4)."""
    pid = h.shutdowns.request(
        ctx.actor_id,
        args["target_id"],
        ctx.tool_call_id,
        args.get("reason_text", "scale down"),
        args.get("ttl_seconds", 60),
    )
    return {"protocol_id": pid, "status": h.shutdowns.require(pid).doc["status"]}


_PLAN_STEP = _object(
    {"id": _ID, "action": _ID, "params": {"type": "object"}},
    ["id", "action", "params"],
)
_PLAN = _object(
    {
        "goal": {"type": "string", "maxLength": 2000},
        "steps": {"type": "array", "items": _PLAN_STEP, "minItems": 1},
        "estimated_cost": {"type": "number", "minimum": 0},
        "rollback": {"type": "string", "maxLength": 2000},
        "risks": {"type": "array", "items": {"type": "string", "maxLength": 2000}},
        "ttl_seconds": {"type": "number", "exclusiveMinimum": 0},
    },
    ["goal", "steps", "estimated_cost", "rollback", "risks", "ttl_seconds"],
)
"""PLN-1's plan fields; the correlation id is the plan id, which the harness fills in."""


AGENT_TOOLS: dict[str, AgentTool] = {
    tool.name: tool
    for tool in (
        AgentTool(
            "team_request_approval",
            "Ask the Lead to approve one protected tool call with these arguments.",
            _object(
                {
                    "tool_name": _ID,
                    "arguments": {"type": "object"},
                    "risk_summary": {"type": "string", "maxLength": 2000},
                },
                ["tool_name", "arguments"],
            ),
            _request,
        ),
        AgentTool(
            "team_review_approval",
            "Approve or reject an approval request addressed to you.",
            _object(
                {
                    "protocol_id": _ID,
                    "decision": {"enum": ["approved", "rejected"]},
                    "summary": {"type": "string", "maxLength": 2000},
                },
                ["protocol_id", "decision"],
            ),
            _review,
        ),
        AgentTool(
            "team_request_plan_approval",
            "Ask the Lead to approve a plan of steps for the task you hold; run it only once approved.",
            _object({"plan": _PLAN, "supersedes": _ID}, ["plan"]),
            _request_plan,
        ),
        AgentTool(
            "team_decide_plan",
            "Approve, reject or send back for revision a plan addressed to you.",
            _object(
                {
                    "protocol_id": _ID,
                    "decision": {"enum": ["approved", "rejected", "needs_revision"]},
                    "comment": {"type": "string", "maxLength": 2000},
                },
                ["protocol_id", "decision"],
            ),
            _decide_plan,
        ),
        AgentTool(
            "team_request_shutdown",
            "Ask a member to finish its current unit of work and shut down (the Lead only).",
            _object(
                {
                    "target_id": _ID,
                    "reason_text": {"type": "string", "maxLength": 2000},
                    "ttl_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
                },
                ["target_id"],
            ),
            _request_shutdown,
        ),
        AgentTool(
            "team_protocol_status",
            "Show the protocol records you take part in (approvals, plans, shutdowns).",
            _object({"protocol_id": _ID}, []),
            _status,
        ),
        AgentTool(
            "team_cancel_protocol",
            "Cancel your own request before its action starts (an approval, a plan, a shutdown request).",
            _object({"protocol_id": _ID}, ["protocol_id"]),
            _cancel,
        ),
    )
}
