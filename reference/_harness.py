"""The in-process harness: stores, bus, outbox and the protocols over one :class:`Storage`.

It keeps no state that matters outside its storage (DESIGN rule 2): the wake-up queue only
lowers latency (MSG-6), so a restart is a new ``Harness`` over the same storage followed by
:meth:`Harness.reconcile`.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

import spec
from spec.ids import message_id
from spec.schemas import RECORD_SCHEMAS

from . import _audit
from ._clock import Clock
from ._errors import AlreadyExists, StaleIncarnation, UnknownTool
from ._mutants import broken
from ._storage import Document, Storage, Stored
from ._tools import Tool


@dataclass(frozen=True)
class CallContext:
    """Who is calling, injected by the harness, never taken from model-written arguments (APR-3)."""

    actor_id: str
    incarnation: int
    tool_call_id: str
    task_id: str | None = None


class Harness:
    def __init__(self, storage: Storage, clock: Clock, tools: list[Tool] | None = None, lead_id: str = "lead"):
        from ._approval import ApprovalProtocol

        self.storage = storage
        self.clock = clock
        self.lead_id = lead_id
        self.tools = {tool.name: tool for tool in tools or []}
        self.wake: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.assignment_lock = threading.Lock()
        self.approvals = ApprovalProtocol(self)

    # ---- records -----------------------------------------------------------------------------
    def read(self, table: str, key: str) -> Stored | None:
        return self.storage.read(table, key)

    def tool(self, name: str) -> Tool:
        try:
            return self.tools[name]
        except KeyError:
            raise UnknownTool(name) from None

    def event(self, actor: str, event: str, summary: str = "") -> dict[str, Any]:
        return {"actor": actor, "event": event, "summary": spec.redaction.redact(summary), "at": self.clock.now()}

    def audit(self, step: str, actor: str, event: str, subject_id: str, summary: str = "") -> None:
        _audit.append(self.storage, step, actor, event, subject_id, summary, self.clock.now())

    # ---- team set-up (members, profiles, tasks) ----------------------------------------------
    def add_member(self, member_id: str, tools: list[str], incarnation: int = 1) -> None:
        member = {
            "member_id": member_id,
            "status": "running",
            "incarnation": incarnation,
            "accepting_new_tasks": True,
            "shutdown_request_id": None,
            "current_task_id": None,
            "last_heartbeat_at": None,
            "version": 0,
        }
        self.storage.insert("member.add/member", "member", member_id, member)
        profile = {"member_id": member_id, "version": 1, "tools": sorted(tools)}
        self.storage.insert("member.add/profile", "capability_profile", member_id, profile)

    def restart_member(self, member_id: str) -> int:
        """A new incarnation of a member (XPR-1); returns it."""
        stored = self._require("member", member_id)
        member = {
            **stored.doc,
            "incarnation": stored.doc["incarnation"] + 1,
            "status": "running",
            "accepting_new_tasks": True,
            "current_task_id": None,
            "shutdown_request_id": None,
        }
        self.storage.update("member.restart/member", "member", member_id, member, stored.version)
        return int(member["incarnation"])

    def set_profile(self, member_id: str, tools: list[str]) -> int:
        """Change a capability profile; its version grows (XPR-4). Returns the new version."""
        stored = self._require("capability_profile", member_id)
        profile = {"member_id": member_id, "version": stored.doc["version"] + 1, "tools": sorted(tools)}
        self.storage.update("profile.change/profile", "capability_profile", member_id, profile, stored.version)
        return int(profile["version"])

    def add_task(self, task_id: str) -> None:
        task: Document = {
            "task_id": task_id,
            "status": "pending",
            "owner_id": None,
            "owner_incarnation": None,
            "claim_token": None,
            "checkpoint": None,
            "history": [],
            "version": 0,
        }
        self.storage.insert("task.add/task", "task", task_id, task)

    def claim(self, member_id: str, task_id: str) -> str:
        """Claim a pending task for a running, accepting member (MEM-1); returns the claim token."""
        with self.assignment_lock:
            member = self._require("member", member_id)
            task = self._require("task", task_id)
            spec.ensure_transition("task", task.doc["status"], "claimed")
            claims = sum(1 for event in task.doc["history"] if event["event"] == "claimed")
            token = message_id(task_id, f"claim-{claims + 1}")  # stable, like every id (DESIGN rule 4)
            claimed = {
                **task.doc,
                "status": "claimed",
                "owner_id": member_id,
                "owner_incarnation": member.doc["incarnation"],
                "claim_token": token,
                "history": [*task.doc["history"], self.event(member_id, "claimed")],
            }
            self.storage.update("task.claim/task", "task", task_id, claimed, task.version)
            current = self._require("member", member_id)
            self.storage.update(
                "task.claim/member", "member", member_id, {**current.doc, "current_task_id": task_id}, current.version
            )
            return token

    def finish_task(self, member_id: str, task_id: str, outcome: str) -> None:
        """The claim holder completes or fails its task (TSK-1); the member then holds nothing."""
        with self.assignment_lock:
            task = self._require("task", task_id)
            if task.doc["owner_id"] != member_id or task.doc["status"] != "claimed":
                raise KeyError(f"{member_id} does not hold {task_id}")
            spec.ensure_transition("task", task.doc["status"], outcome)
            history = [*task.doc["history"], self.event(member_id, outcome)]
            self.storage.update(
                "task.finish/task", "task", task_id, {**task.doc, "status": outcome, "history": history}, task.version
            )
            member = self._require("member", member_id)
            self.storage.update(
                "task.finish/member", "member", member_id, {**member.doc, "current_task_id": None}, member.version
            )

    def _require(self, table: str, key: str) -> Stored:
        stored = self.storage.read(table, key)
        if stored is None:
            raise KeyError(f"no {table} {key!r}")
        return stored

    def check_incarnation(self, ctx: CallContext) -> Document:
        member = self._require("member", ctx.actor_id).doc
        if member["incarnation"] != ctx.incarnation:
            raise StaleIncarnation(f"call {ctx.tool_call_id}", ctx.incarnation, member["incarnation"])
        return member

    # ---- bus and outbox (MSG-4, MSG-5, REC-3) ------------------------------------------------
    def post(self, step: str, message: Document) -> None:
        """Put a message on the bus under its stable id; already there → nothing (MSG-4)."""
        spec.validate_message(message)
        record = {"message": message, "status": "pending", "recorded_result": None}
        try:
            self.storage.insert(step, "message", message["message_id"], record)
        except AlreadyExists:
            return
        self.wake.put(message["message_id"])  # MSG-6 (3): only lowers latency

    def envelope(
        self,
        message_type: str,
        protocol_id: str,
        phase: str,
        sender: str,
        target: str,
        body: Document,
        ttl_seconds: float,
        reply_to: str | None = None,
    ) -> Document:
        message = {
            "message_type": message_type,
            "message_id": message_id(protocol_id, phase),
            "correlation_id": protocol_id,
            "sender": sender,
            "target": target,
            "timestamp": self.clock.now(),
            "ttl_seconds": ttl_seconds,
            "body": body,
        }
        if reply_to is not None:
            message["reply_to"] = message_id(protocol_id, reply_to)
        return message

    def deliver(self, message_id_: str, correlation_id: str) -> Document:
        """The receiver reads a message (MSG-5): the first time records a result, a duplicate
        returns the recorded result. Reading never completes a request (MSG-3)."""
        stored = self._require("message", message_id_)
        if stored.doc["message"]["correlation_id"] != correlation_id:
            raise KeyError(f"message {message_id_} does not belong to {correlation_id}")
        if stored.doc["recorded_result"] is not None and not broken("dedup_disabled"):
            return dict(stored.doc["recorded_result"])
        result = {"delivered_at": self.clock.now()}
        status = "delivered" if stored.doc["status"] == "pending" else stored.doc["status"]
        self.storage.update(
            "message.deliver/message",
            "message",
            message_id_,
            {**stored.doc, "status": status, "recorded_result": result},
            stored.version,
        )
        return result

    def acknowledge(self, message_id_: str) -> None:
        stored = self._require("message", message_id_)
        spec.ensure_transition("message", stored.doc["status"], "acknowledged")
        self.storage.update(
            "message.acknowledge/message",
            "message",
            message_id_,
            {**stored.doc, "status": "acknowledged"},
            stored.version,
        )

    # ---- snapshot (DESIGN rule 5) ------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = {"clock": self.clock.now()}
        for kind in RECORD_SCHEMAS:
            snap[kind] = [row.doc for row in self.storage.scan(kind)]
        return snap

    def reconcile(self) -> None:
        """Act on persisted state alone (PROTOCOL §5); idempotent (REC-1)."""
        self.approvals.reconcile()
        self._reconcile_claims()

    def _reconcile_claims(self) -> None:
        """REC-2 for the two writes of a claim (and of a finish): a member's ``current_task_id``
        names the task it holds under its incarnation, or nothing. A crash between the writes
        leaves the task claimed and the member empty-handed (or the reverse); the task record is
        the truth (the model's reconcile does the same).

        The members are read *before* the tasks, and each repair is a compare-and-set on the
        member as read: a claim or finish of another process that lands between the two reads
        then shows in the tasks, never as a stale task beside a fresh member (which would undo
        that process's member write; found by ``model_tests/test_interleave.py``, STO-4)."""
        members = self.storage.scan("member")
        claimed = [task.doc for task in self.storage.scan("task") if task.doc["status"] == "claimed"]
        for stored in members:
            member = stored.doc
            holds = [
                task["task_id"]
                for task in claimed
                if task["owner_id"] == member["member_id"] and task["owner_incarnation"] == member["incarnation"]
            ]
            current = member["current_task_id"]
            if current is not None and current not in holds:
                repaired: str | None = None
            elif current is None and holds and member["status"] in ("running", "draining"):
                repaired = holds[0]
            else:
                continue
            self.storage.update(
                "member.reconcile/member",
                "member",
                member["member_id"],
                {**member, "current_task_id": repaired},
                stored.version,
            )
