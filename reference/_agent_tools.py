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
    """Only records the caller takes part in (AUD-4)."""
    mine = []
    for row in h.storage.scan("operation_approval"):
        doc = row.doc
        if ctx.actor_id in (doc["requester_id"], doc["responder_id"]) and args.get("protocol_id") in (
            None,
            doc["protocol_id"],
        ):
            mine.append(
                {k: doc[k] for k in ("protocol_id", "kind", "status", "tool_name", "task_id", "deadline", "reason")}
            )
    return {"records": mine}


def _cancel(h: Harness, ctx: CallContext, args: dict[str, Any]) -> dict[str, Any]:
    doc = h.approvals.cancel(ctx, args["protocol_id"])
    return {"protocol_id": doc["protocol_id"], "status": doc["status"]}


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
            "team_protocol_status",
            "Show the protocol records you take part in.",
            _object({"protocol_id": _ID}, []),
            _status,
        ),
        AgentTool(
            "team_cancel_protocol",
            "Cancel your own request before it is used.",
            _object({"protocol_id": _ID}, ["protocol_id"]),
            _cancel,
        ),
    )
}
