"""JSON Schemas of every message type (MSG-1, MSG-2, MSG-7, PLN-1, PLN-2)."""

from __future__ import annotations

from .._tables import machine_table
from ._build import (
    COUNT,
    DIGEST,
    NAME,
    POSITIVE,
    REASON_CODES,
    TEXT,
    TIME,
    UUID,
    Schema,
    array,
    nullable,
    obj,
)

PLAN_STEP: Schema = obj({"id": NAME, "action": NAME, "params": {"type": "object"}})

PLAN: Schema = obj(
    {
        "goal": TEXT,
        "steps": {**array(PLAN_STEP), "minItems": 1},
        "estimated_cost": {"type": "number", "minimum": 0},
        "rollback": TEXT,
        "risks": array(TEXT),
        "ttl_seconds": {"type": "number", "exclusiveMinimum": 0},
        "correlation_id": UUID,
    }
)
"""PLN-1: every plan field is required."""

_EXECUTION_OUTCOMES = sorted(machine_table("plan_execution").finals | {"failed"})

BODIES: dict[str, Schema] = {
    "approval_request": obj(
        {
            "protocol_id": UUID,
            "requester_id": NAME,
            "requester_incarnation": POSITIVE,
            "task_id": NAME,
            "tool_name": NAME,
            "arguments_digest": DIGEST,
            "profile_version": POSITIVE,
            "risk_summary": TEXT,
            "deadline": TIME,
        }
    ),
    "approval_decision": obj(
        {"protocol_id": UUID, "decision": {"enum": ["approved", "rejected"]}, "review_summary": TEXT}
    ),
    "plan_request": obj(
        {
            "plan": PLAN,
            "revision": POSITIVE,
            "supersedes": nullable(UUID),
            "requester_incarnation": POSITIVE,
        }
    ),
    "plan_decision": obj(
        # sequence: which decision of this plan version (0, then +1 after each retraction, PLN-6)
        {"decision": {"enum": ["approved", "rejected", "needs_revision"]}, "sequence": COUNT},
        {"comment": TEXT},
    ),
    "plan_completion": obj({"plan_id": UUID, "outcome": {"enum": _EXECUTION_OUTCOMES}, "summary": TEXT}),
    "plan_abandoned": obj({"plan_id": UUID, "reason": {"enum": list(REASON_CODES)}}),
    "shutdown_request": obj(
        {"protocol_id": UUID, "target_incarnation": POSITIVE, "reason_text": TEXT, "deadline": TIME}
    ),
    "shutdown_ack": obj(
        {
            "protocol_id": UUID,
            "released_task_id": nullable(NAME),
            "waited_job_ids": array(NAME, unique=True),
        }
    ),
    "shutdown_notice": obj({"reason_text": TEXT, "summary": TEXT}),
    "member_lost": obj(
        {
            "member_id": NAME,
            "incarnation": POSITIVE,
            "last_heartbeat_at": TIME,
            "flagged_task_ids": array(NAME, unique=True),
        }
    ),
    "task_suspended": obj({"task_id": NAME, "member_id": NAME, "reason_text": TEXT}),
}
"""Message type → schema of its ``body``."""

REPLY_TYPES: frozenset[str] = frozenset({"approval_decision", "plan_decision", "shutdown_ack"})
"""Replies must carry ``reply_to``: the message id of the request they answer (MSG-1)."""


def message_schema(message_type: str) -> Schema:
    """The whole-message schema of ``message_type``: envelope (MSG-1) plus its body."""
    envelope: dict[str, Schema] = {
        "message_type": {"const": message_type},
        "message_id": UUID,
        "correlation_id": UUID,
        "sender": NAME,
        "target": NAME,
        "timestamp": TIME,
        "ttl_seconds": {"type": "number", "exclusiveMinimum": 0},
    }
    optional: dict[str, Schema] = {}
    if message_type in REPLY_TYPES:
        envelope["reply_to"] = UUID
    else:
        optional["reply_to"] = UUID
    envelope["body"] = BODIES[message_type]
    return obj(envelope, optional)


MESSAGE_TYPES: tuple[str, ...] = tuple(BODIES)

__all__ = ["BODIES", "COUNT", "MESSAGE_TYPES", "PLAN", "REPLY_TYPES", "message_schema"]
