"""The outbox as a store (MSG-6, REC-3): notices and replies that must survive a crash.

A state change that owes a message (``shutdown_ack``, ``member_lost``, ``task_suspended``) writes
an ``outbox_entry`` (``owed``) under the message's stable id as its next write step; sending puts
that very message on the bus (``outbox.send/message``) and then marks the entry ``sent``
(``outbox.send/entry``). Owing twice, or sending twice, changes nothing (MSG-4): the message id
is the key. Reconciliation owes again whatever the persisted records owe (the model's
``reconcile``); the runtime sends what is owed (:meth:`Outbox.send_owed`).

Message ids follow the model's snapshot (``spec.model._snapshot``): ``shutdown_ack`` of shutdown
``P`` is ``message_id(P, "ack")``; ``member_lost`` of member ``m`` incarnation ``i`` is
``message_id(protocol_id(m, "incarnation-i", "member_lost"), "lost")``; ``task_suspended`` of task
``t`` after claim ``n`` is ``message_id(protocol_id(t, "claim-n", "task_suspended"), "suspended")``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import spec
from spec.ids import protocol_id

from ._errors import AlreadyExists, StorageError
from ._mutants import broken
from ._storage import Document, active, settle
from ._team_errors import UnknownRecord

if TYPE_CHECKING:
    from ._harness import Harness

TABLE = "outbox_entry"
NOTICE_TTL = 60.0


class Outbox:
    def __init__(self, harness: Harness) -> None:
        self.h = harness

    def owe(self, step: str, message: Document) -> None:
        """Write the entry (``owed``) unless one with this message id exists (MSG-4)."""
        spec.validate_message(message)
        entry = {"message_id": message["message_id"], "status": "owed", "message": message}
        ignored = (AlreadyExists, StorageError) if broken("owe_swallows_store_errors") else (AlreadyExists,)
        with self.h.step(step), contextlib.suppress(*ignored):
            self.h.storage.insert(step, TABLE, message["message_id"], entry)

    def send(self, message_id: str) -> None:
        """Put the owed message on the bus under its stable id, then mark the entry sent. Settled
        (STO-4): two senders at once both post the one message (its id is stable), and the one
        whose mark loses finds the entry sent, as a serial order's second send does."""
        settle(lambda: self._send(message_id))

    def _send(self, message_id: str) -> None:
        stored = self.h.storage.read(TABLE, message_id)
        if stored is None:
            raise UnknownRecord(TABLE, message_id, "nothing is owed under this id")
        if stored.doc["status"] == "sent":
            return
        first = broken("entry_sent_before_message")  # the mutant: marked sent, then posted
        message = stored.doc["message"]
        if broken("send_restamps_message"):
            message = {**message, "timestamp": self.h.clock.now()}
        if not first:
            with self.h.step("outbox.send/message"):
                self.h.post("outbox.send/message", message)
        spec.ensure_transition(TABLE, "owed", "sent")
        self.h.storage.update("outbox.send/entry", TABLE, message_id, {**stored.doc, "status": "sent"}, stored.version)
        if first:
            with self.h.step("outbox.send/message"):
                self.h.post("outbox.send/message", message)

    def owed(self) -> list[str]:
        return [row.key for row in active(self.h.storage, TABLE, ("owed",)) if row.doc["status"] == "owed"]

    def send_owed(self) -> list[str]:
        """Send every owed entry (REC-3: at least once, with its stable id)."""
        sent = self.owed()
        for message_id in sent:
            self.send(message_id)
        return sent

    # ---- the messages the team owes --------------------------------------------------------
    def shutdown_ack(self, shutdown: Document) -> Document:
        body = {
            "protocol_id": shutdown["protocol_id"],
            "released_task_id": shutdown["released_task_id"],
            "waited_job_ids": shutdown["waited_job_ids"],
        }
        return self.h.envelope(
            "shutdown_ack",
            shutdown["protocol_id"],
            "ack",
            shutdown["target_id"],
            shutdown["target_id"] if broken("ack_misaddressed") else shutdown["requester_id"],
            body,
            NOTICE_TTL,
            reply_to="request",
        )

    def member_lost(self, member: Document, flagged: list[str]) -> Document:
        pid = protocol_id(member["member_id"], f"incarnation-{member['incarnation']}", "member_lost")
        body = {
            "member_id": member["member_id"],
            "incarnation": member["incarnation"],
            "last_heartbeat_at": 0 if broken("lost_notice_heartbeat_zero") else member["last_heartbeat_at"] or 0,
            "flagged_task_ids": sorted(flagged),
        }
        return self.h.envelope("member_lost", pid, "lost", self.h.lead_id, "team", body, NOTICE_TTL)

    def task_suspended(self, task: Document, claims: int) -> Document:
        if broken("suspension_notice_per_task"):
            claims = 1
        pid = protocol_id(task["task_id"], f"claim-{claims}", "task_suspended")
        body = {"task_id": task["task_id"], "member_id": task["owner_id"], "reason_text": "unit deadline"}
        parties = (task["owner_id"], self.h.lead_id)
        if broken("suspension_notice_misaddressed"):
            parties = parties[::-1]
        return self.h.envelope("task_suspended", pid, "suspended", *parties, body, NOTICE_TTL)


__all__ = ["Outbox"]
