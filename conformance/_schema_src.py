"""The driver protocol's JSON Schemas, written out as ``conformance/schemas/*.schema.json`` by
``teamproto conformance --write-vectors`` (and checked for staleness with ``--check-vectors``).

Every identifier is an opaque string (``ID``): the suite never computes one, so ``protocol-`` plus
16 hex digits, UUIDs or any other shape is accepted."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
ID: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
MAX_LINE_BYTES = 1 << 20
"""A request line longer than this is refused with ``payload_too_large`` (its msg_id still read)."""
MAX_ARGUMENTS_BYTES = 1 << 16
"""Tool arguments whose canonical JSON is longer than this are refused with ``payload_too_large``."""


def _obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": sorted(required),
        "additionalProperties": False,
    }


def _request(kind: str, required: dict[str, Schema] | None = None, optional: dict[str, Schema] | None = None) -> Schema:
    base: dict[str, Schema] = {"type": {"const": kind}, "msg_id": {"type": "integer", "minimum": 0}}
    return _obj({**base, **(required or {})}, optional)


ACTOR: Schema = _obj({"member_id": ID}, {"incarnation": {"type": "integer", "minimum": 1}})
ARGUMENTS: Schema = {"type": "object"}
CALL: dict[str, Schema] = {"actor": ACTOR, "tool_call_id": ID, "task_id": ID}
TEAM: Schema = _obj(
    {
        "lead": ID,
        "members": {"type": "array", "items": _obj({"member_id": ID, "tools": {"type": "array", "items": ID}})},
        "tasks": {"type": "array", "items": ID},
    }
)
REQUEST_ARGS = {**CALL, "tool": ID, "arguments": ARGUMENTS, "risk_summary": {"type": "string"}}

MEMBER: dict[str, Schema] = {"member_id": ID}
LEAD_ACTOR: dict[str, Schema] = {"actor": ACTOR}
TEAM_REQUESTS: dict[str, dict[str, Schema]] = {
    "member.retire": MEMBER,
    "task.suspend": {**MEMBER, "unit_seconds": {"type": "number", "minimum": 0}},
    "task.resume": {"task_id": ID},
    "task.inspect": {"task_id": ID, "outcome": {"enum": ["pending", "failed"]}},
    "job.start": {**MEMBER, "job_id": ID, "command": {"type": "string"}, "cancellable": {"type": "boolean"}},
    "job.exit": {"job_id": ID, "outcome": {"enum": ["succeeded", "failed", "cancelled"]}},
    "shutdown.request": {
        **LEAD_ACTOR,
        **MEMBER,
        "request_key": ID,
        "reason_text": {"type": "string"},
        "ttl_seconds": {"type": "number", "minimum": 0},
    },
    "shutdown.cancel": {**LEAD_ACTOR, "protocol_id": ID},
    "shutdown.begin_drain": {**MEMBER, "protocol_id": ID},
    "shutdown.drain_jobs": MEMBER,
    "shutdown.release_task": MEMBER,
    "shutdown.finish": MEMBER,
    "shutdown.force_terminate": {**LEAD_ACTOR, "protocol_id": ID},
    "outbox.send": {"message_id": ID},
}
"""The team operations of the model (issue 13): members, tasks, jobs, shutdowns, the outbox. A
shutdown request names its target (``member_id``) and a ``request_key`` the Lead chose (a retry
with the same key is the same request, MSG-4); ``shutdown.begin_drain`` is the target handling
the delivered request ``protocol_id``; ``job.exit`` reports how the job's process ended."""

PLAN_ID: dict[str, Schema] = {"plan_id": ID}
PLAN_CALL: dict[str, Schema] = {"actor": ACTOR, **PLAN_ID}
STEP: Schema = {
    "type": "object",
    "properties": {"id": ID, "action": ID, "params": {}},
    "required": ["id", "action", "params"],
}
PLAN_REQUESTS: dict[str, dict[str, Schema]] = {
    "plan.draft": {"actor": ACTOR, "task_id": ID, "plan_key": ID, "plan": {"type": "object"}},
    "plan.submit": PLAN_CALL,
    "plan.decide": {**PLAN_CALL, "decision": {"enum": ["approved", "rejected", "needs_revision"]}},
    "plan.retract": {**PLAN_CALL, "to": {"enum": ["pending", "rejected"]}},
    "plan.deliver_decision": {**MEMBER, **PLAN_ID, "sequence": {"type": "integer", "minimum": 0}},
    "plan.withdraw": PLAN_CALL,
    "plan.start": PLAN_CALL,
    "plan.step": {**PLAN_CALL, "step": STEP},
    "plan.complete": PLAN_CALL,
    "plan.fail": PLAN_CALL,
    "plan.rollback": PLAN_CALL,
}
"""The plan operations (PLN-1 … PLN-11). ``plan.draft`` writes the caller's plan document for the
task it holds under a ``plan_key`` the requester chose (a retry with the same key is the same plan,
MSG-4); the implementation fills in the plan's ``correlation_id``. The requester's calls carry its
``actor`` (and may name ``task_id``), the Lead's (``decide``, ``retract``, ``rollback``) the Lead;
``plan.deliver_decision`` is the requester handling the plan's delivered decision number
``sequence`` (0, then one more after each retraction, PLN-6)."""

REQUESTS: dict[str, Schema] = {
    "init": _request(
        "init",
        {
            "data_dir": {"type": "string", "minLength": 1},
            "team": TEAM,
            "tools": {"type": "array", "items": _obj({"name": ID, "protected": {"type": "boolean"}})},
            "config": {"type": "object"},
            "clock": {"type": "number", "minimum": 0},
        },
    ),
    "capabilities": _request("capabilities"),
    "snapshot": _request("snapshot"),
    "restart": _request("restart"),
    "tick": _request("tick", {"seconds": {"type": "number", "exclusiveMinimum": 0}}),
    "arm_crash": _request("arm_crash", {"step": ID}),
    "monitor.pass": _request("monitor.pass"),
    "task.claim": _request("task.claim", {"member_id": ID, "task_id": ID}),
    "task.finish": _request(
        "task.finish",
        {"member_id": ID, "task_id": ID, "outcome": {"enum": ["completed", "failed"]}},
        {"claim_token": ID},  # TSK-1: the claim the caller holds (absent: the driver's own)
    ),
    "profile.change": _request("profile.change", {"member_id": ID, "tools": {"type": "array", "items": ID}}),
    "member.lapse": _request("member.lapse", {"member_id": ID}),
    "member.inspect": _request("member.inspect", {"member_id": ID}),
    "member.restart": _request("member.restart", {"member_id": ID}),
    "approval.request": _request("approval.request", {**REQUEST_ARGS, "ttl_seconds": {"type": "number"}}),
    "approval.retry": _request("approval.retry", {**REQUEST_ARGS, "ttl_seconds": {"type": "number"}}),
    "approval.review": _request(
        "approval.review",
        {"actor": ACTOR, "protocol_id": ID, "decision": {"enum": ["approved", "rejected"]}},
        {"summary": {"type": "string"}},
    ),
    "approval.cancel": _request("approval.cancel", {**CALL, "protocol_id": ID}),
    "approval.consume": _request("approval.consume", {**CALL, "protocol_id": ID, "tool": ID, "arguments": ARGUMENTS}),
    "message.deliver": _request("message.deliver", {"message_id": ID, "correlation_id": ID}),
    "protocol.status": _request("protocol.status", {"actor": ACTOR}, {"protocol_id": ID}),
    **{name: _request(name, fields) for name, fields in TEAM_REQUESTS.items()},
    **{
        name: _request(name, fields, None if name == "plan.draft" else {"task_id": ID})
        for name, fields in PLAN_REQUESTS.items()
    },
}
"""Request type → schema. Operations of the model not listed here (added as the reference grows)
take the generic form ``{"type": <operation>, "msg_id": n, "args": {...}}``. ``protocol.status``
is no operation of the model but the agent-facing read ``team_protocol_status`` (AUD-4): the
records ``actor`` takes part in (only the one ``protocol_id`` names, if given), as
``{"records": [...]}``; a driver lists it in its capabilities' ``reads``."""

GENERIC: Schema = _obj(
    {"type": {"type": "string", "pattern": r"^[a-z_]+\.[a-z_]+$"}, "msg_id": {"type": "integer", "minimum": 0}},
    {"args": {"type": "object"}},
)

ERROR_CODES: tuple[str, ...] = (
    "schema_invalid",
    "payload_too_large",
    "unimplemented",
    "unknown_id",
    "forged_identity",
    "stale_incarnation",
    "member_not_running",
    "not_task_owner",
    "tool_not_in_profile",
    "approval_not_active",
    "approval_other_agent",
    "approval_other_task",
    "tool_mismatch",
    "arguments_changed",
    "approval_expired",
    "profile_changed",
    "not_responder",
    "review_conflict",
    "cancel_refused",
    "protocol_conflict",
    "fail_closed",
    "unknown_tool",
    "illegal_transition",
    "claim_refused",
    "task_taken",
    "not_claim_holder",
    "member_busy",
    "task_not_due",
    "not_lead",
    "shutdown_refused",
    "drain_not_ready",
    "job_refused",
    "message_not_pending",
    "plan_no_task",
    "plan_status_conflict",
    "not_plan_requester",
    "plan_expired",
    "stale_plan",
    "decision_not_delivered",
    "bad_decision_message",
    "plan_already_started",
    "execution_not_running",
    "plan_deviation",
    "refused",
)
"""Typed errors (DESIGN rule 8). ``refused`` is any other definite refusal."""

REPLY: Schema = {
    "oneOf": [
        _obj({"in_reply_to": {"type": "integer"}, "type": {"const": "ok"}}, {"result": {"type": "object"}}),
        _obj(
            {
                "in_reply_to": {"type": ["integer", "null"]},
                "type": {"const": "error"},
                "error": _obj(
                    {
                        "code": {"enum": list(ERROR_CODES)},
                        "definite": {"type": "boolean"},
                        "message": {"type": "string"},
                    }
                ),
            }
        ),
    ]
}


def request_schema() -> Schema:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "teamproto conformance driver: one request line",
        "anyOf": [*REQUESTS.values(), GENERIC],
    }


def reply_schema() -> Schema:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "teamproto conformance driver: one reply line",
        **REPLY,
    }


__all__ = ["ERROR_CODES", "MAX_ARGUMENTS_BYTES", "MAX_LINE_BYTES", "REQUESTS", "reply_schema", "request_schema"]
