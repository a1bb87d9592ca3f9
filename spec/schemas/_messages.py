"""JSON Schemas of every message type (MSG-1, MSG-2, MSG-7, PLN-1, PLN-2).

A message has one of two layouts. The project's own (``body``) carries every field of MSG-1 and
PLN-1. The handshake source article's (``ARTICLE_TYPES``: its ``plan_request`` and
``plan_decision``) writes the body's fields at the top level and may leave out the fields listed
in ``DEFAULTS``; the receiver fills them (:func:`spec.schemas.with_defaults`) and keeps the message
in the project's layout. Identifiers are opaque (``ID``) in both."""

from __future__ import annotations

from .._tables import machine_table
from ._build import (
    COUNT,
    DIGEST,
    ID,
    NAME,
    POSITIVE,
    REASON_CODES,
    TEXT,
    TIME,
    Schema,
    array,
    nullable,
    obj,
)

STEP_ID: Schema = {"type": ["string", "integer"], "minLength": 1, "maxLength": 200, "minimum": 0}
"""A plan step's id: a name (``s1``) or a number (the handshake article numbers its steps 1, 2, …)."""
COST: Schema = {"type": ["number", "string"], "minimum": 0, "minLength": 1, "maxLength": 200}
"""``estimated_cost``: a number, or a quantity with its unit as the article writes it (``"2.5 quota"``)."""

PLAN_STEP: Schema = obj({"id": STEP_ID, "action": NAME, "params": {"type": "object"}})
_PLAN_FIELDS: dict[str, Schema] = {
    "goal": TEXT,
    "steps": {**array(PLAN_STEP), "minItems": 1},
    "estimated_cost": COST,
    "rollback": TEXT,
    "risks": array(TEXT),
}
_PLAN_DEFAULTED: dict[str, Schema] = {"ttl_seconds": {"type": "number", "exclusiveMinimum": 0}, "correlation_id": ID}

PLAN: Schema = obj({**_PLAN_FIELDS, **_PLAN_DEFAULTED})
"""PLN-1: every plan field is required (the project's layout and the plan record)."""
ARTICLE_PLAN: Schema = obj(_PLAN_FIELDS, _PLAN_DEFAULTED)
"""The plan of the article's layout: ``ttl_seconds`` and ``correlation_id`` default (``DEFAULTS``)."""

_EXECUTION_OUTCOMES = sorted(machine_table("plan_execution").finals | {"failed"})

BODIES: dict[str, Schema] = {
    "approval_request": obj(
        {
            "protocol_id": ID,
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
        {"protocol_id": ID, "decision": {"enum": ["approved", "rejected"]}, "review_summary": TEXT}
    ),
    "plan_request": obj(
        {
            "plan": PLAN,
            "revision": POSITIVE,
            "supersedes": nullable(ID),
            "requester_incarnation": POSITIVE,
        }
    ),
    "plan_decision": obj(
        # sequence: which decision of this plan version (0, then +1 after each retraction, PLN-6)
        {"decision": {"enum": ["approved", "rejected", "needs_revision"]}, "sequence": COUNT},
        {"comment": TEXT},
    ),
    "plan_completion": obj({"plan_id": ID, "outcome": {"enum": _EXECUTION_OUTCOMES}, "summary": TEXT}),
    "plan_abandoned": obj({"plan_id": ID, "reason": {"enum": list(REASON_CODES)}}),
    "shutdown_request": obj({"protocol_id": ID, "target_incarnation": POSITIVE, "reason_text": TEXT, "deadline": TIME}),
    "shutdown_ack": obj(
        {
            "protocol_id": ID,
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
        "message_id": ID,
        "correlation_id": ID,
        "sender": NAME,
        "target": NAME,
        "timestamp": TIME,
        "ttl_seconds": {"type": "number", "exclusiveMinimum": 0},
    }
    optional: dict[str, Schema] = {}
    if message_type in REPLY_TYPES:
        envelope["reply_to"] = ID
    else:
        optional["reply_to"] = ID
    envelope["body"] = BODIES[message_type]
    return obj(envelope, optional)


MESSAGE_TYPES: tuple[str, ...] = tuple(BODIES)

RECEIPT = "the receiver's clock when it receives the message"
DEFAULTS: dict[str, dict[str, str]] = {
    "plan_request": {
        "timestamp": RECEIPT,
        "body.revision": "1: a first version (PLN-6's revisions carry theirs)",
        "body.supersedes": "null: it revises nothing",
        "body.requester_incarnation": "the sender's incarnation on record when the message is received",
        "body.plan.ttl_seconds": "the message's ttl_seconds",
        "body.plan.correlation_id": "the message's correlation_id (the plan id)",
    },
    "plan_decision": {
        "sender": "the target of the request it answers",
        "target": "the sender of the request it answers",
        "timestamp": RECEIPT,
        "ttl_seconds": "the ttl_seconds of the request it answers",
        "reply_to": "the message_id of the request it answers: the plan_request with its correlation_id",
        "body.sequence": "0: the first decision on this plan version (PLN-6)",
    },
}
"""MSG-1, PLN-1: the fields a message in the article's layout may leave out, and each one's default.
Every other field has no default: without it the message is refused (MSG-2)."""
ARTICLE_TYPES: tuple[str, ...] = tuple(DEFAULTS)
REQUEST_OF: dict[str, str] = {
    "approval_decision": "approval_request",
    "plan_decision": "plan_request",
    "shutdown_ack": "shutdown_request",
}
"""A reply type → the type of the request it answers (by ``correlation_id``)."""


def article_schema(message_type: str) -> Schema:
    """The article's layout of ``message_type``: the body's fields at the top level, the fields of
    ``DEFAULTS`` optional."""
    nested = message_schema(message_type)
    body = BODIES[message_type]
    defaulted = {path.split(".")[-1] for path in DEFAULTS[message_type] if path.count(".") <= 1}
    fields = {k: v for k, v in nested["properties"].items() if k != "body"}
    fields.update(body["properties"])
    if "plan" in fields:
        fields["plan"] = ARTICLE_PLAN
    required = {k: v for k, v in fields.items() if k not in defaulted and k in {*nested["required"], *body["required"]}}
    return obj(required, {k: v for k, v in fields.items() if k not in required})


__all__ = [
    "ARTICLE_PLAN",
    "ARTICLE_TYPES",
    "BODIES",
    "COUNT",
    "DEFAULTS",
    "MESSAGE_TYPES",
    "PLAN",
    "REPLY_TYPES",
    "REQUEST_OF",
    "article_schema",
    "message_schema",
]
