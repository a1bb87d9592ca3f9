"""One valid example of every message type and record kind.

Used by the schema tests (each field removed or mistyped must be rejected), by the generated
reference pages, and as a starting point for conformance drivers. Ids are fixed name-based UUIDs.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

_NS = uuid.UUID("6f1c2a52-1d8e-4b8e-9a57-3e0b1f7c0d11")


def _id(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


_DIGEST = "0" * 63 + "a"
_EVENT = {"actor": "lead", "event": "requested", "summary": "deploy to staging", "at": 1.0}
_PLAN = {
    "goal": "migrate the orders table",
    "steps": [{"id": "s1", "action": "backup", "params": {"table": "orders"}}],
    "estimated_cost": 2.5,
    "rollback": "restore the backup",
    "risks": ["lock contention"],
    "ttl_seconds": 60,
    "correlation_id": _id("plan"),
}

_BODIES: dict[str, dict[str, Any]] = {
    "approval_request": {
        "protocol_id": _id("approval"),
        "requester_id": "backend",
        "requester_incarnation": 1,
        "task_id": "t1",
        "tool_name": "shell",
        "arguments_digest": _DIGEST,
        "profile_version": 1,
        "risk_summary": "runs a migration",
        "deadline": 30.0,
    },
    "approval_decision": {"protocol_id": _id("approval"), "decision": "approved", "review_summary": "ok"},
    "plan_request": {"plan": _PLAN, "revision": 1, "supersedes": None, "requester_incarnation": 1},
    "plan_decision": {"decision": "approved", "sequence": 0, "comment": "go ahead"},
    "plan_completion": {"plan_id": _id("plan"), "outcome": "completed", "summary": "done"},
    "plan_abandoned": {"plan_id": _id("plan"), "reason": "expired"},
    "shutdown_request": {
        "protocol_id": _id("shutdown"),
        "target_incarnation": 1,
        "reason_text": "scale down",
        "deadline": 30.0,
    },
    "shutdown_ack": {"protocol_id": _id("shutdown"), "released_task_id": "t1", "waited_job_ids": ["j1"]},
    "shutdown_notice": {"reason_text": "SIGTERM", "summary": "checkpointed t1"},
    "member_lost": {
        "member_id": "qa",
        "incarnation": 2,
        "last_heartbeat_at": 4.0,
        "flagged_task_ids": ["t2"],
    },
    "task_suspended": {"task_id": "t1", "member_id": "backend", "reason_text": "unit deadline"},
}


def example_message(message_type: str) -> dict[str, Any]:
    """A valid message of ``message_type`` (a fresh copy)."""
    doc: dict[str, Any] = {
        "message_type": message_type,
        "message_id": _id(f"{message_type}/message"),
        "correlation_id": _id("correlation"),
        "sender": "lead",
        "target": "backend",
        "timestamp": 1.0,
        "ttl_seconds": 60,
        "body": copy.deepcopy(_BODIES[message_type]),
    }
    if message_type in ("approval_decision", "plan_decision", "shutdown_ack"):
        doc["reply_to"] = _id("request/message")
    return doc


_RECORDS: dict[str, dict[str, Any]] = {
    "member": {
        "member_id": "backend",
        "status": "running",
        "incarnation": 1,
        "accepting_new_tasks": True,
        "shutdown_request_id": None,
        "current_task_id": "t1",
        "last_heartbeat_at": 1.0,
        "version": 3,
    },
    "capability_profile": {"member_id": "backend", "version": 1, "tools": ["shell", "write_file"]},
    "task": {
        "task_id": "t1",
        "status": "claimed",
        "owner_id": "backend",
        "owner_incarnation": 1,
        "claim_token": _id("claim"),
        "checkpoint": {"step": 2},
        "history": [_EVENT],
        "version": 2,
    },
    "job": {
        "job_id": "j1",
        "status": "running",
        "owner_id": "backend",
        "task_id": "t1",
        "cancellable": True,
        "command": "pytest -q",
        "exit_code": None,
        "version": 0,
    },
    "operation_approval": {
        "protocol_id": _id("approval"),
        "kind": "operation_approval",
        "status": "requested",
        "requester_id": "backend",
        "requester_incarnation": 1,
        "responder_id": "lead",
        "task_id": "t1",
        "tool_name": "shell",
        "tool_call_id": "call-1",
        "arguments_digest": _DIGEST,
        "profile_version": 1,
        "risk_summary": "runs a migration",
        "review_summary": None,
        "created_at": 0.0,
        "deadline": 30.0,
        "consumed_at": None,
        "reason": None,
        "events": [_EVENT],
        "version": 0,
    },
    "plan_approval": {
        "protocol_id": _id("plan"),
        "kind": "plan_approval",
        "status": "pending",
        "requester_id": "backend",
        "requester_incarnation": 1,
        "responder_id": "lead",
        "task_id": "t1",
        "plan": _PLAN,
        "revision": 1,
        "supersedes": None,
        "decision_delivered": False,
        "comment": None,
        "created_at": 0.0,
        "deadline": 60.0,
        "reason": None,
        "events": [_EVENT],
        "version": 1,
    },
    "plan_execution": {
        "plan_id": _id("plan"),
        "status": "running",
        "executed_step_ids": ["s1"],
        "started_at": 2.0,
        "deadline": 62.0,
        "reason": None,
        "events": [_EVENT],
        "version": 0,
    },
    "shutdown_request": {
        "protocol_id": _id("shutdown"),
        "kind": "shutdown_request",
        "status": "draining",
        "requester_id": "lead",
        "target_id": "backend",
        "target_incarnation": 1,
        "responder_id": "backend",
        "reason_text": "scale down",
        "created_at": 0.0,
        "deadline": 30.0,
        "released_task_id": None,
        "waited_job_ids": ["j1"],
        "reason": None,
        "events": [_EVENT],
        "version": 1,
    },
    "tool_execution": {
        "idempotency_key": _id("approval"),
        "status": "succeeded",
        "requester_id": "backend",
        "task_id": "t1",
        "tool_name": "shell",
        "arguments_digest": _DIGEST,
        "profile_version": 1,
        "attempts": 1,
        "result": {"exit_code": 0},
    },
    "audit_entry": {
        "sequence": 0,
        "previous_hash": "0" * 64,
        "hash": "1" * 64,
        "actor": "lead",
        "event": "approval.requested",
        "subject_id": _id("approval"),
        "summary": "shell for t1",
        "at": 0.0,
    },
}


def example_record(kind: str) -> dict[str, Any]:
    """A valid record of ``kind`` (a fresh copy)."""
    if kind == "message":
        return {"message": example_message("approval_request"), "status": "pending", "recorded_result": None}
    if kind == "outbox_entry":
        message = example_message("shutdown_ack")
        return {"message_id": message["message_id"], "status": "owed", "message": message}
    return copy.deepcopy(_RECORDS[kind])
