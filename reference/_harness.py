"""The in-process harness: stores, bus, outbox and the protocols over one :class:`Storage`.

It keeps no state that matters outside its storage (DESIGN rule 2): the wake-up queue only
lowers latency (MSG-6), so a restart is a new ``Harness`` over the same storage followed by
:meth:`Harness.reconcile`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import spec
from spec.ids import message_id
from spec.schemas import RECORD_SCHEMAS
from spec.schemas._messages import REQUEST_OF

from . import _audit
from ._clock import Clock
from ._errors import AlreadyExists, CorruptRecord, StaleIncarnation, StorageUnavailable, UnknownTool, VersionConflict
from ._instances import Owners
from ._jobs import InProcessJobRunner, JobRunner, Jobs
from ._members import Members
from ._mutants import broken
from ._outbox import Outbox
from ._recovery import reconcile_team
from ._shutdown import ShutdownProtocol
from ._steps import WRITE_STEPS
from ._storage import Document, Storage, Stored, active, settle
from ._tasks import Tasks
from ._team_errors import (
    MessageNotPending,
    StaleMember,
    UnknownMember,
    UnknownProfileTool,
    UnknownRecord,
    UnknownTask,
)
from ._tools import Tool

PASSES = "~monitor_pass"
"""A storage-internal table (no record kind, in no snapshot): one row per harness instance,
``{"begun": true}`` while its deadline monitor's pass is under way, ``{"begun": false}`` after it
(REC-5, :meth:`Harness.monitor_pass`)."""


@dataclass(frozen=True)
class CallContext:
    """Who is calling, injected by the harness, never taken from model-written arguments (APR-3)."""

    actor_id: str
    incarnation: int
    tool_call_id: str
    task_id: str | None = None


class Harness:
    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        tools: list[Tool] | None = None,
        lead_id: str = "lead",
        jobs: JobRunner | None = None,
    ):
        from ._approval import ApprovalProtocol
        from ._plans import PlanProtocol

        self.storage = storage
        storage.steps = WRITE_STEPS  # DESIGN rule 3: a write only under a declared step name
        self.clock = clock
        self.lead_id = lead_id
        self.tools = {tool.name: tool for tool in tools or []}
        self.wake: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.assignment_lock = threading.Lock()
        self.approvals = ApprovalProtocol(self)
        self.plans = PlanProtocol(self)
        self.tasks = Tasks(self)
        self.jobs = Jobs(self, jobs or InProcessJobRunner())
        self.members = Members(self)
        self.shutdowns = ShutdownProtocol(self)
        self.outbox = Outbox(self)

    # ---- records -----------------------------------------------------------------------------
    def read(self, table: str, key: str) -> Stored | None:
        return self.storage.read(table, key)

    def tool(self, name: str) -> Tool:
        try:
            return self.tools[name]
        except KeyError:
            raise UnknownTool(name) from None

    def event(self, actor: str, event: str, summary: str = "", at: float | None = None) -> dict[str, Any]:
        """A record's event (AUD-1). ``at`` is the time its guard read, where one did: an event is
        stamped with the instant that was checked, never a later reading of the clock."""
        when = self.clock.now() if at is None else at
        return {"actor": actor, "event": event, "summary": spec.redaction.redact(summary), "at": when}

    def audit(self, step: str, actor: str, event: str, subject_id: str, summary: str = "") -> None:
        _audit.append(self.storage, step, actor, event, subject_id, summary, self.clock.now())

    # ---- team set-up (members, profiles, tasks) ----------------------------------------------
    def add_member(self, member_id: str, tools: list[str], incarnation: int = 1) -> None:
        unknown = [tool for tool in tools if tool not in self.tools]
        if unknown:
            raise UnknownProfileTool(member_id, unknown, sorted(self.tools))
        member = {
            "member_id": member_id,
            "status": "running",
            "incarnation": incarnation,
            "accepting_new_tasks": True,
            "shutdown_request_id": None,
            "current_task_id": None,
            # SHD-10: registering is the first beat, so a member that dies before it ever beats lapses too
            "last_heartbeat_at": None if broken("first_beat_never_registered") else self.clock.now(),
            "version": 0,
        }
        self.storage.insert("member.add/member", "member", member_id, member)
        profile = {"member_id": member_id, "version": 1, "tools": sorted(tools)}
        self.storage.insert("member.add/profile", "capability_profile", member_id, profile)

    def restart_member(self, member_id: str) -> int:
        """A new incarnation of a stopped member (XPR-1); returns it."""
        return self.members.restart(member_id)

    def set_profile(self, member_id: str, tools: list[str]) -> int:
        """Change a capability profile; its version grows (XPR-4). Returns the new version. Settled
        (STO-4): two changes at once both land, one version after the other, as in a serial order."""
        return settle(lambda: self._set_profile(member_id, tools))

    def _set_profile(self, member_id: str, tools: list[str]) -> int:
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

    def claim(self, member_id: str, task_id: str, incarnation: int | None = None) -> str:
        """Claim a pending task for an eligible member (MEM-1); returns the claim token (TSK-1)."""
        return self.tasks.claim(member_id, task_id, incarnation)

    def finish_task(
        self, member_id: str, task_id: str, outcome: str, token: str, incarnation: int | None = None
    ) -> None:
        """The holder of claim ``token`` completes or fails its task (TSK-1)."""
        self.tasks.finish(member_id, task_id, outcome, token, incarnation)

    def monitor_pass(self) -> None:
        """The deadline monitor's pass: approvals, plans, shutdowns and their undelivered requests. It is
        the model's one step ``monitor.pass/records`` and many writes here, so it is rolled forward
        (REC-5): this instance's row of :data:`PASSES` says the pass is under way from before its
        first write to after its last, and a restart that finds it so finishes the pass before
        anything else (:meth:`reconcile`). A crash between two of its writes then leaves what a
        crash after them all leaves (``model_tests/test_monitor_pass_crashes.py``); the pass is
        idempotent at one clock, so finishing it twice changes nothing."""
        with self.step("monitor.pass/records"):
            self._pass_under_way(True)
            self.approvals.expire_due()
            self.plans.expire_due()
            self.shutdowns.expire_due()
            self._pass_under_way(False)

    def _pass_under_way(self, begun: bool) -> None:
        """Write this instance's row of :data:`PASSES` (storage-internal, no write step: it is no
        protocol record, and a crash before or after it is one before or inside the pass)."""
        storage = self.storage
        key, text = storage.open_instance(), json.dumps({"begun": begun})
        row = storage._read(PASSES, key)
        if row is None:
            storage._insert(PASSES, key, text)
        elif row[1] != text:
            storage._update(PASSES, key, text, row[0])

    def _cut_passes(self, owners: Owners) -> list[tuple[str, int]]:
        """The rows of :data:`PASSES` whose pass a crash cut short and that this restart finishes:
        begun, and this instance's or one's that can no longer finish it (REC-4). A row that is not
        one is refused before anything is written (STO-3)."""
        cut = []
        for key, version, text in self.storage._scan(PASSES):
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as error:
                raise CorruptRecord(PASSES, key, f"not JSON ({error})") from None
            if not isinstance(doc, dict) or set(doc) != {"begun"} or not isinstance(doc["begun"], bool):
                raise CorruptRecord(PASSES, key, 'expected exactly {"begun": true or false}')
            if doc["begun"] and owners.can_take_over(key, f"{PASSES}/{key}"):
                cut.append((key, version))
        return cut

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """A write step that may write no record (nothing to flag, already owed): the fault hook
        still fires after it, so a crash "after step X" means the same here as in the model; and
        before it, so a fault "before step X" fires whether or not it writes."""
        self.storage.check_step(name)
        self.storage.faults.before(name)
        written = len(self.storage.steps_written)
        yield
        if name not in self.storage.steps_written[written:]:
            self.storage.faults.after(name)

    # ---- member and task records (typed refusals, never a bare KeyError) ---------------------
    def _require(self, table: str, key: str) -> Stored:
        stored = self.storage.read(table, key)
        if stored is None:
            if table == "member":
                raise UnknownMember(key)
            if table == "task":
                raise UnknownTask(key)
            raise UnknownRecord(table, key, "check the id")
        return stored

    def member_row(self, member_id: str) -> Stored:
        return self._require("member", member_id)

    def member(self, member_id: str) -> Document:
        return self._require("member", member_id).doc

    def task_row(self, task_id: str) -> Stored:
        return self._require("task", task_id)

    def member_live(self, member_id: str | None, incarnation: int | None) -> bool:
        if member_id is None:
            return False
        member = self.member(member_id)
        return bool(member["incarnation"] == incarnation and member["status"] in ("running", "draining"))

    def fence(self, member: Document, incarnation: int) -> None:
        """XPR-1: a call made for an older incarnation is refused."""
        if incarnation != member["incarnation"]:
            raise StaleMember(member["member_id"], incarnation, member["incarnation"])

    def set_member(self, step: str, member_id: str, status: str, **fields: Any) -> None:
        """Move a member through its machine (re-read on a lost compare-and-set)."""
        for _ in range(8):
            stored = self.member_row(member_id)
            if stored.doc["status"] != status:
                spec.ensure_transition("member", stored.doc["status"], status)
            try:
                self.storage.update(
                    step, "member", member_id, {**stored.doc, **fields, "status": status}, stored.version
                )
                return
            except VersionConflict:
                continue
        raise StorageUnavailable(f"member/{member_id} kept changing; {step} not written")

    def set_member_task(self, step: str, member_id: str, task_id: str | None) -> None:
        for _ in range(8):
            stored = self.member_row(member_id)
            try:
                doc = {**stored.doc, "current_task_id": task_id}
                self.storage.update(step, "member", member_id, doc, stored.version)
                return
            except VersionConflict:
                continue
        raise StorageUnavailable(f"member/{member_id} kept changing; {step} not written")

    def cancel_own_requests(self, step: str, member_id: str, reason: str) -> list[str]:
        """XPR-2: the member's own ``requested`` approvals (this incarnation) are cancelled, its own
        draft and pending plans withdrawn (the model's ``cancel_own_requests``)."""
        member = self.member(member_id)
        cancelled: list[str] = []
        with self.step(step):
            self._cancel_requests(step, member, reason, cancelled)
        return cancelled

    def _cancel_requests(self, step: str, member: Document, reason: str, cancelled: list[str]) -> None:
        for row in self.storage.scan_status("operation_approval", ("requested",)):  # the open ones, not the history
            if settle(functools.partial(self._cancel_request, step, member, reason, row.key)):
                cancelled.append(row.key)
                if broken("drain_cancels_one_approval"):
                    break
        cancelled += self.plans.withdraw_own(step, member, reason)

    def _cancel_request(self, step: str, member: Document, reason: str, key: str) -> bool:
        """One approval's cancellation, read afresh (STO-4: run again when its write lost to a
        review or an expiry, it leaves what the winner decided); whether it cancelled."""
        row = self.storage.read("operation_approval", key)
        if row is None:
            return False
        ap, member_id = row.doc, member["member_id"]
        mine = ap["requester_id"] == member_id and ap["requester_incarnation"] == member["incarnation"]
        if ap["status"] != "requested" or not mine:
            return False
        spec.ensure_transition("operation_approval", "requested", "cancelled")
        events = [*ap["events"], self.event(member_id, "cancelled", reason)]
        doc = {**ap, "status": "cancelled", "reason": reason, "events": events}
        self.storage.update(step, "operation_approval", row.key, doc, row.version)
        self.approvals._audit_last(doc, step)  # AUD-5: the decision in the team log too
        return True

    def check_incarnation(self, ctx: CallContext) -> Stored:
        """The caller's member row, read once, where the call is of its current incarnation (XPR-1)."""
        row = self._require("member", ctx.actor_id)
        if row.doc["incarnation"] != ctx.incarnation:
            raise StaleIncarnation(f"call {ctx.tool_call_id}", ctx.incarnation, row.doc["incarnation"])
        return row

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

    def receive(self, doc: object) -> Document:
        """A message another implementation sends to this team (MSG-2): validated and, in the
        source article's layout, completed with its defaults (:func:`spec.with_defaults`, MSG-1,
        PLN-1: the receipt time, the request a reply answers, the sender's incarnation), then put
        on the bus under its own message id like any message. Returns the message as stored;
        a message missing a field that has no default is refused (:class:`spec.SchemaError`)."""
        fields = doc if isinstance(doc, dict) else {}
        kind, sender = fields.get("message_type"), fields.get("sender")
        answered = REQUEST_OF.get(kind) if isinstance(kind, str) else None
        request = None
        if answered is not None:
            request = next(
                (
                    row.doc["message"]
                    for row in self.storage.scan("message")
                    if row.doc["message"]["message_type"] == answered
                    and row.doc["message"]["correlation_id"] == fields.get("correlation_id")
                ),
                None,
            )
        incarnation = 1
        if kind == "plan_request" and isinstance(sender, str):
            incarnation = self.member(sender)["incarnation"]  # a plan comes from a member of this team
        message = dict(spec.with_defaults(doc, now=self.clock.now(), request=request, incarnation=incarnation))
        if broken("receive_keeps_article_layout"):
            message = dict(spec.validate_message(doc))
        body = message.get("body")
        if kind == "plan_request" and isinstance(body, dict) and isinstance(body.get("plan"), dict):
            from ._plans import redact_text  # AUD-3, INV-10: a plan received keeps no secret, as a drafted one

            message["body"] = {**body, "plan": redact_text(body["plan"])}
        self.post("message.receive/message", message)
        return message

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
        returns the recorded result. Reading never completes a request (MSG-3). A message that
        was never handled and is no longer pending (expired unread, MSG-1) is refused with
        :class:`MessageNotPending`, as the protocols' own deliveries refuse it: nothing is
        written (a late reader must not bring it back). Its write lost to another process's (a
        second delivery, the monitor's expiry) is judged again from a fresh read (STO-4): the
        duplicate's recorded result, or the refusal."""
        if broken("delivery_not_settled"):
            return self._deliver_once(message_id_, correlation_id)
        return settle(lambda: self._deliver_once(message_id_, correlation_id))

    def _deliver_once(self, message_id_: str, correlation_id: str) -> Document:
        stored = self._require("message", message_id_)
        if broken("redelivery_before_correlation") and stored.doc["recorded_result"] is not None:
            return dict(stored.doc["recorded_result"])
        if stored.doc["message"]["correlation_id"] != correlation_id:
            actual = stored.doc["message"]["correlation_id"]
            raise UnknownRecord("message", f"{message_id_} of {correlation_id}", f"it belongs to {actual}")
        if stored.doc["recorded_result"] is not None and not broken("dedup_disabled"):
            return dict(stored.doc["recorded_result"])
        if stored.doc["status"] != "pending":
            raise MessageNotPending(message_id_, stored.doc["status"])
        result = {"delivered_at": self.clock.now()}
        self.storage.update(
            "message.deliver/message",
            "message",
            message_id_,
            {**stored.doc, "status": "delivered", "recorded_result": result},
            stored.version,
        )
        return result

    def record_delivery(
        self, step: str, message_id_: str, result: dict[str, Any], read: Stored | None = None
    ) -> dict[str, Any]:
        """A protocol's receiver handled a message: it becomes ``delivered`` with ``result`` (and the
        time) recorded under ``step``, so that a duplicate gets the same result back (MSG-5). With
        ``read`` (the message as the receiver judged it), the write is a compare-and-set on that
        version: where another process delivered it meanwhile, a settled receiver runs again and
        returns that delivery's result (STO-4)."""
        stored = self.storage.read("message", message_id_) if read is None else read
        assert stored is not None
        spec.ensure_transition("message", stored.doc["status"], "delivered")
        recorded = {**result, "delivered_at": self.clock.now()}
        doc = {**stored.doc, "status": "delivered", "recorded_result": recorded}
        self.storage.update(step, "message", message_id_, doc, stored.version)
        return recorded

    def expire_request_messages(
        self, message_type: str, deadline_of: Callable[[Document], float | None], step: str, now: float
    ) -> None:
        """The deadline monitor's pass over one protocol's request messages (MSG-1): a pending
        ``message_type`` whose deadline (``deadline_of`` its envelope: the record's, or None when
        there is none) has passed expires unread under ``step``, whatever became of its record, as
        the model's monitor does. Each message is its own settled part of the pass (STO-4)."""
        for message in active(self.storage, "message", ("pending",)):
            if message.doc["message"]["message_type"] == message_type:
                settle(functools.partial(self._expire_request_message, message.key, deadline_of, step, now))

    def _expire_request_message(
        self, key: str, deadline_of: Callable[[Document], float | None], step: str, now: float
    ) -> None:
        """One request message's part of the pass, read afresh: run again when its write lost a
        compare-and-set to another process (another monitor pass, or its reader, won), it judges
        the message as the winner left it."""
        message = self.storage.read("message", key)
        if message is None or message.doc["status"] != "pending":
            return
        deadline = deadline_of(message.doc["message"])
        if deadline is not None and deadline < now:
            spec.ensure_transition("message", "pending", "expired")
            self.storage.update(step, "message", key, {**message.doc, "status": "expired"}, message.version)

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
        envelope = stored.doc["message"]
        if broken("acknowledge_approves") and envelope["message_type"] == "approval_request":
            self.approvals.review(self.lead_id, envelope["correlation_id"], "approved")  # read taken as consent

    # ---- snapshot (DESIGN rule 5) ------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = {"clock": self.clock.now()}
        for kind in RECORD_SCHEMAS:
            snap[kind] = [row.doc for row in self.storage.scan(kind)]
        return snap

    def reconcile(self) -> None:
        """Act on persisted state alone (docs/protocol.md §5); idempotent (REC-1). In the model's order
        (``spec/model/_reconcile.py``): the approvals' rows first, then the team's. So a ``requested``
        approval past its deadline expires before a drain cut off by the crash is re-applied; the other
        way round, XPR-2 cancelled it instead — not what the model does (a vector found it:
        ``approval_drain``, a crash after ``shutdown.begin_drain/record`` one tick past the deadline).
        The cancellations XPR-2 re-applies are logged as they are written (AUD-5). Work another live
        instance has in flight is left to it (REC-4); a bad mark or instance row is refused before
        anything is written.

        First of all, a deadline monitor's pass that a crash cut short is finished (REC-5): the
        model's step ``monitor.pass/records`` ran whole, then the crash came; the rows it leaves
        for reconciliation (an expiry's audit entry, a ``plan_abandoned`` owed) are then repaired
        as after any crash."""
        owners = Owners(self.storage)
        cut = self._cut_passes(owners)
        if cut and not broken("restart_skips_monitor_pass"):
            early = broken("cut_pass_marked_done_first")
            if early:
                self._mark_cut_passes_done(cut)
            self.monitor_pass()  # marks this instance's row done
            if not early:
                self._mark_cut_passes_done(cut)  # only now: a crash before leaves them to the next
        self.approvals.reconcile(owners)
        reconcile_team(self, owners)

    def _mark_cut_passes_done(self, cut: list[tuple[str, int]]) -> None:
        """Mark the other instances' cut passes done (this instance's own row its pass marked)."""
        for key, version in cut:
            if key != self.storage.instance_id:
                self.storage._update(PASSES, key, json.dumps({"begun": False}), version)

    def close(self) -> None:
        """This harness instance is done: what it left in flight may be taken over (REC-4)."""
        self.storage.close_instance()
