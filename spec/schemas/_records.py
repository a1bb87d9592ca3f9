"""JSON Schemas of every persisted record of docs/protocol.md §0, and of the snapshot (DESIGN rule 5).

Record kinds are also the snapshot's collections. ``version`` is the compare-and-set counter
(STO-4); ``events`` are the record's own audit events (AUD-1).
"""

from __future__ import annotations

from ._build import (
    AUDIT_EVENT,
    BOOL,
    COUNT,
    DIGEST,
    ID,
    NAME,
    POSITIVE,
    REASON,
    TEXT,
    TIME,
    Schema,
    array,
    nullable,
    obj,
    status_of,
)
from ._messages import PLAN

EVENTS = array(AUDIT_EVENT)

RECORDS: dict[str, Schema] = {
    "member": obj(
        {
            "member_id": NAME,
            "status": status_of("member"),
            "incarnation": POSITIVE,
            "accepting_new_tasks": BOOL,
            "shutdown_request_id": nullable(ID),
            "current_task_id": nullable(NAME),
            "last_heartbeat_at": nullable(TIME),
            "version": COUNT,
        }
    ),
    "capability_profile": obj({"member_id": NAME, "version": POSITIVE, "tools": array(NAME, unique=True)}),
    "task": obj(
        {
            "task_id": NAME,
            "status": status_of("task"),
            "owner_id": nullable(NAME),
            "owner_incarnation": nullable(POSITIVE),
            "claim_token": nullable(ID),
            "checkpoint": nullable({"type": "object"}),
            "history": EVENTS,
            "version": COUNT,
        }
    ),
    "job": obj(
        {
            "job_id": NAME,
            "status": status_of("job"),
            "owner_id": NAME,
            "task_id": nullable(NAME),
            "cancellable": BOOL,
            "command": TEXT,
            "exit_code": nullable({"type": "integer"}),
            "version": COUNT,
        }
    ),
    "operation_approval": obj(
        {
            "protocol_id": ID,
            "kind": {"const": "operation_approval"},
            "status": status_of("operation_approval"),
            "requester_id": NAME,
            "requester_incarnation": POSITIVE,
            "responder_id": NAME,
            "task_id": NAME,
            "tool_name": NAME,
            "tool_call_id": NAME,
            "arguments_digest": DIGEST,
            "profile_version": POSITIVE,
            "risk_summary": TEXT,
            "review_summary": nullable(TEXT),
            "created_at": TIME,
            "deadline": TIME,
            "consumed_at": nullable(TIME),
            "reason": REASON,
            "events": EVENTS,
            "version": COUNT,
        }
    ),
    "plan_approval": obj(
        {
            "protocol_id": ID,
            "kind": {"const": "plan_approval"},
            "status": status_of("plan_approval"),
            "requester_id": NAME,
            "requester_incarnation": POSITIVE,
            "responder_id": NAME,
            "task_id": NAME,
            "plan": PLAN,
            "revision": POSITIVE,
            "supersedes": nullable(ID),
            "decision_delivered": BOOL,
            "comment": nullable(TEXT),
            "created_at": TIME,
            "deadline": TIME,
            "reason": REASON,
            "events": EVENTS,
            "version": COUNT,
        }
    ),
    "plan_execution": obj(
        {
            "plan_id": ID,
            "status": status_of("plan_execution"),
            "executed_step_ids": array(NAME, unique=True),  # PLN-4, PLN-7: each step runs at most once
            "started_at": TIME,
            "deadline": TIME,
            "reason": REASON,
            "events": EVENTS,
            "version": COUNT,
        }
    ),
    "shutdown_request": obj(
        {
            "protocol_id": ID,
            "kind": {"const": "shutdown_request"},
            "status": status_of("shutdown_request"),
            "requester_id": NAME,
            "target_id": NAME,
            "target_incarnation": POSITIVE,
            "responder_id": NAME,
            "reason_text": TEXT,
            "created_at": TIME,
            "deadline": TIME,
            "released_task_id": nullable(NAME),
            "waited_job_ids": array(NAME, unique=True),
            "reason": REASON,
            "events": EVENTS,
            "version": COUNT,
        }
    ),
    "message": obj(
        {
            "message": {"type": "object"},
            "status": status_of("message"),
            "recorded_result": nullable({"type": "object"}),
        }
    ),
    "outbox_entry": obj({"message_id": ID, "status": status_of("outbox_entry"), "message": {"type": "object"}}),
    "tool_execution": obj(
        {
            "idempotency_key": ID,
            "status": status_of("tool_execution"),
            "requester_id": NAME,
            "task_id": NAME,
            "tool_name": NAME,
            "arguments_digest": DIGEST,
            "profile_version": POSITIVE,
            "attempts": COUNT,
            "result": nullable({"type": "object"}),
        }
    ),
    "audit_entry": obj(
        {
            "sequence": COUNT,
            "previous_hash": DIGEST,
            "hash": DIGEST,
            "actor": NAME,
            "event": NAME,
            "subject_id": NAME,
            "summary": TEXT,
            "at": TIME,
        }
    ),
}
"""Record kind → schema. Messages nested in ``message`` and ``outbox_entry`` are validated
against their own message schema by :func:`spec.validate_record`."""

RECORD_KEYS: dict[str, tuple[str, ...]] = {
    "member": ("member_id",),
    "capability_profile": ("member_id",),
    "task": ("task_id",),
    "job": ("job_id",),
    "operation_approval": ("protocol_id",),
    "plan_approval": ("protocol_id",),
    "plan_execution": ("plan_id",),
    "shutdown_request": ("protocol_id",),
    "message": ("message", "message_id"),
    "outbox_entry": ("message_id",),
    "tool_execution": ("idempotency_key",),
    "audit_entry": ("sequence",),
}
"""Record kind → path to its primary key, used to name a record in errors and to sort snapshots."""

RECORD_MACHINES: dict[str, str] = {
    kind: kind
    for kind in (
        "member",
        "task",
        "job",
        "operation_approval",
        "plan_approval",
        "plan_execution",
        "shutdown_request",
        "message",
        "outbox_entry",
        "tool_execution",
    )
}
"""Record kind → the machine its ``status`` belongs to."""


def snapshot_schema() -> Schema:
    """A snapshot: one array per record kind, plus the clock (DESIGN rule 5)."""
    collections: dict[str, Schema] = {kind: array({"type": "object"}) for kind in RECORDS}
    return obj({"clock": TIME, **collections})


__all__ = ["RECORDS", "RECORD_KEYS", "RECORD_MACHINES", "TEXT", "snapshot_schema"]
