"""Operation approval: one approval, one call (APR-1 … APR-9, XPR-2 … XPR-5, MSG-6, AUD-1).

Write steps, in order (the same names as the model's, plus the team audit log):

- request: ``approval.request/record`` → ``approval.request/message`` → ``approval.request/audit``
- review:  ``approval.review/record`` → ``approval.review/message`` → ``approval.review/audit``
- call:    ``approval.consume/record`` → ``approval.consume/execution`` → ``approval.consume/call``
           (the external call) → ``approval.consume/outcome`` → ``approval.consume/audit``
- cancel:  ``approval.cancel/record`` → ``approval.cancel/audit``
- monitor: ``approval.expire/record`` → ``approval.expire/audit``, then ``approval.expire/message``
  for every request message past its approval's deadline; reconcile: ``approval.reconcile/*``
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import spec
from spec.ids import protocol_id
from spec.redaction import redact

from . import _audit
from ._errors import (
    AlreadyExists,
    ApprovalExpired,
    ApprovalNotActive,
    ApprovalOtherAgent,
    ApprovalOtherTask,
    ApprovalRefused,
    ArgumentsChanged,
    CancelRefused,
    FailClosed,
    MemberNotRunning,
    NotResponder,
    NotTaskOwner,
    ProfileChanged,
    ProtocolConflict,
    ReviewConflict,
    StaleIncarnation,
    StorageError,
    StorageUnavailable,
    ToolMismatch,
    ToolNotInProfile,
    UnknownApproval,
    VersionConflict,
)
from ._instances import Owners
from ._mutants import broken
from ._storage import CONFLICT_RETRIES, Document, Guard, Stored, active, settle
from ._tools import Arguments, Tool, redact_json

if TYPE_CHECKING:
    from ._harness import CallContext, Harness

KIND = "operation_approval"
"""How often an operation that lost a compare-and-set is run again from its read (STO-4)."""
BINDING = (
    "requester_id",
    "requester_incarnation",
    "responder_id",
    "task_id",
    "tool_name",
    "tool_call_id",
    "arguments_digest",
    "profile_version",
)
"""What a request is bound to; a retry with the same id must match all of it (STO-2)."""

APPROVAL_STEPS = (
    "approval.request/record",
    "approval.request/message",
    "approval.request/audit",
    "approval.review/record",
    "approval.review/message",
    "approval.review/audit",
    "approval.consume/record",
    "approval.consume/execution",
    "approval.consume/call",
    "approval.consume/outcome",
    "approval.consume/audit",
    "approval.cancel/record",
    "approval.cancel/audit",
)
"""The write steps of the approval operations, in order (introspectable, DESIGN rule 3)."""


class ApprovalProtocol:
    def __init__(self, harness: Harness) -> None:
        self.h = harness

    # ---- APR-1: request ----------------------------------------------------------------------
    def request(
        self, ctx: CallContext, tool_name: str, arguments: Arguments, risk_summary: str = "", ttl_seconds: float = 300.0
    ) -> str:
        """Create (or find again) the approval for this call; the call itself executes nothing.

        The record's insert is guarded by the requester's row as this request read it (XPR-2): a
        drain that begins between the read and the write, and so cancels nothing of this request,
        makes the insert lose; the request then reads again and is refused (STO-4)."""
        tool = self.h.tool(tool_name)
        return settle(lambda: self._request_once(ctx, tool, tool_name, arguments, risk_summary, ttl_seconds))

    def _request_once(
        self, ctx: CallContext, tool: Tool, tool_name: str, arguments: Arguments, risk_summary: str, ttl_seconds: float
    ) -> str:
        row = self._running_row(ctx)
        member = row.doc
        profile = self._profile(ctx.actor_id)
        if tool_name not in profile["tools"]:
            raise ToolNotInProfile(ctx.actor_id, tool_name, profile["version"])
        task_id = self._owned_task(ctx)
        now = self.h.clock.now()
        pid = protocol_id(ctx.actor_id, ctx.tool_call_id, KIND)
        requester = ctx.actor_id
        if broken("requester_from_arguments") and isinstance(arguments.get("requester_id"), str):
            requester = arguments["requester_id"]  # the identity read from what the model wrote
        doc = {
            "protocol_id": pid,
            "kind": KIND,
            "status": "requested",
            "requester_id": requester,
            "requester_incarnation": member["incarnation"],
            "responder_id": self.h.lead_id,
            "task_id": task_id,
            "tool_name": tool_name,
            "tool_call_id": ctx.tool_call_id,
            "arguments_digest": tool.digest(arguments),
            "profile_version": profile["version"],
            "risk_summary": risk_summary if broken("secret_not_redacted") else redact(risk_summary),
            "review_summary": None,
            "created_at": now,
            "deadline": now + ttl_seconds,
            "consumed_at": None,
            "reason": None,
            "events": [self.h.event(ctx.actor_id, "requested", risk_summary)],
            "version": 0,
        }
        if broken("message_before_record"):
            self._post_request(doc)
        guard = None if broken("request_unguarded") else Guard(unchanged=(("member", row.key, row.version),))
        stored, created = self._put_if_absent(doc, guard)
        self._post_request(stored.doc)
        if created:
            self._audit_last(stored.doc, "approval.request/audit")
        return pid

    def _put_if_absent(self, doc: Document, guard: Guard | None) -> tuple[Stored, bool]:
        """STO-2: an identical request returns the stored record; a different one is a conflict."""
        try:
            return self.h.storage.insert("approval.request/record", KIND, doc["protocol_id"], doc, guard), True
        except AlreadyExists:
            stored = self._require(doc["protocol_id"])
        for field in () if broken("retry_binding_unchecked") else BINDING:
            if stored.doc[field] != doc[field]:
                raise ProtocolConflict(doc["protocol_id"], field, stored.doc[field], doc[field]) from None
        old_ttl = stored.doc["deadline"] - stored.doc["created_at"]
        new_ttl = doc["deadline"] - doc["created_at"]
        if abs(old_ttl - new_ttl) > 1e-9 and not broken("retry_ttl_unchecked"):
            raise ProtocolConflict(doc["protocol_id"], "ttl_seconds", old_ttl, new_ttl) from None
        return stored, False

    def _post_request(self, doc: Document) -> None:
        body = {
            k: doc[k]
            for k in (
                "protocol_id",
                "requester_id",
                "requester_incarnation",
                "task_id",
                "tool_name",
                "arguments_digest",
                "profile_version",
                "risk_summary",
                "deadline",
            )
        }
        ttl = max(doc["deadline"] - doc["created_at"], 1e-6)
        phase = f"request-{uuid.uuid4()}" if broken("unstable_message_id") else "request"
        message = self.h.envelope(
            "approval_request", doc["protocol_id"], phase, doc["requester_id"], doc["responder_id"], body, ttl
        )
        self.h.post("approval.request/message", message)

    # ---- APR-4: review -----------------------------------------------------------------------
    def review(self, actor_id: str, pid: str, decision: str, summary: str = "") -> Document:
        if decision not in ("approved", "rejected"):
            raise spec.SchemaError("team_review_approval", "$.decision", f"{decision!r} is not approved or rejected")
        return settle(lambda: self._review_once(actor_id, pid, decision, summary))

    def _review_once(self, actor_id: str, pid: str, decision: str, summary: str) -> Document:
        stored = self._require(pid)
        doc = stored.doc
        repeat = doc["status"] == decision
        responder = actor_id == doc["responder_id"] or (repeat and broken("repeat_review_skips_responder"))
        if not responder and not (broken("anyone_may_reject") and decision == "rejected"):
            raise NotResponder(pid, doc["responder_id"], actor_id)
        if repeat:  # the same outcome twice is idempotent
            self._post_decision(doc)
            return doc
        if doc["status"] != "requested":
            raise ReviewConflict(pid, doc["status"], decision)
        now = self.h.clock.now()
        late = now > doc["deadline"] and not broken("late_review_accepted")
        if late or (broken("review_closed_at_deadline") and now == doc["deadline"]):
            raise ApprovalExpired(pid, doc["deadline"], now)
        spec.ensure_transition(KIND, doc["status"], decision)
        reviewed = {
            **doc,
            "status": decision,
            "review_summary": redact(summary),
            "reason": "rejected" if decision == "rejected" else None,
            "events": [*doc["events"], self.h.event(_reviewer(doc, actor_id), decision, summary, at=now)],
        }
        if broken("review_event_saved_apart"):  # the status first, its event by a second write
            first = {**reviewed, "events": doc["events"]}
            self.h.storage.update("approval.review/record", KIND, pid, first, stored.version)
            stored = self._require(pid)
        self.h.storage.update("approval.review/record", KIND, pid, reviewed, stored.version)
        self._post_decision(reviewed)
        self._audit_last(reviewed, "approval.review/audit")
        return reviewed

    def _post_decision(self, doc: Document) -> None:
        decision = "rejected" if doc["status"] == "rejected" else "approved"
        body = {"protocol_id": doc["protocol_id"], "decision": decision, "review_summary": doc["review_summary"] or ""}
        message = self.h.envelope(
            "approval_decision",
            doc["protocol_id"],
            "decision",
            doc["responder_id"],
            doc["requester_id"],
            body,
            max(doc["deadline"] - self.h.clock.now(), 1e-6),
            reply_to="request",
        )
        self.h.post("approval.review/message", message)

    # ---- APR-5 … APR-8: consume and call -----------------------------------------------------
    def call(
        self,
        ctx: CallContext,
        tool_name: str,
        arguments: Arguments,
        approval_id: str | None = None,
        risk_summary: str = "",
    ) -> dict[str, Any]:
        """Run a tool. A protected tool without an approval id executes nothing: it requests one."""
        tool = self.h.tool(tool_name)
        if not tool.protected:
            return {"status": "done", "result": tool.run(ctx.tool_call_id, arguments)}
        if approval_id is None:
            pid = self.request(ctx, tool_name, arguments, risk_summary)
            return {"status": "approval_required", "protocol_id": pid}
        key = self.consume(ctx, approval_id, tool, arguments)
        return {"status": "done", "idempotency_key": key, "result": self._execute(key, tool, arguments)}

    def consume(self, ctx: CallContext, pid: str, tool: Tool, arguments: Arguments) -> str:
        """APR-5: re-check everything under the assignment lock, then approved → consumed. The lock
        is one process's; against another process the compare-and-set decides, and the loser is
        refused by the checks as the winner left the record (STO-4)."""
        with self.h.assignment_lock:
            return settle(lambda: self._consume_once(ctx, pid, tool, arguments))

    def _consume_once(self, ctx: CallContext, pid: str, tool: Tool, arguments: Arguments) -> str:
        try:
            stored = self._checked(ctx, pid, tool, arguments)
        except (ApprovalRefused, spec.SchemaError):
            raise
        except (StorageError, KeyError, spec.ProtocolError) as error:
            raise FailClosed("the consumption check", error) from error
        doc = stored.doc
        if broken("consume_twice") and doc["status"] == "consumed":
            return pid
        spec.ensure_transition(KIND, doc["status"], "consumed")
        if broken("consume_rereads_before_cas"):  # mutant: the CAS compares a fresh version
            stored = self._require(pid)
        consumed = {
            **doc,
            "status": "consumed",
            "consumed_at": self.h.clock.now(),
            "events": [*doc["events"], self.h.event(ctx.actor_id, "consumed")],
        }
        self.h.storage.update("approval.consume/record", KIND, pid, consumed, stored.version)
        return pid

    def _checked(self, ctx: CallContext, pid: str, tool: Tool, arguments: Arguments) -> Stored:
        stored = self._require(pid)
        doc = stored.doc
        member = self._running_member(ctx)
        task_id = self._owned_task(ctx)
        profile = self._profile(ctx.actor_id)
        if tool.name not in profile["tools"] and not broken("profile_version_ignored"):
            raise ToolNotInProfile(ctx.actor_id, tool.name, profile["version"])
        if doc["status"] != "approved" and not (broken("consume_twice") and doc["status"] == "consumed"):
            raise ApprovalNotActive(pid, doc["status"])
        if doc["requester_id"] != ctx.actor_id and not broken("skip_ownership_check"):
            raise ApprovalOtherAgent(pid, doc["requester_id"], ctx.actor_id)
        if doc["requester_incarnation"] != member["incarnation"] and not broken("approval_incarnation_ignored"):
            raise StaleIncarnation(f"approval {pid}", doc["requester_incarnation"], member["incarnation"])
        if doc["task_id"] != task_id and not broken("skip_ownership_check"):
            raise ApprovalOtherTask(pid, doc["task_id"], task_id)
        if doc["tool_name"] != tool.name:
            raise ToolMismatch(pid, doc["tool_name"], tool.name)
        digest = tool.digest(arguments)
        if digest != doc["arguments_digest"] and not broken("skip_digest_check"):
            raise ArgumentsChanged(pid, doc["arguments_digest"], digest)
        now = self.h.clock.now()
        late = now >= doc["deadline"] if broken("consume_closed_at_deadline") else now > doc["deadline"]
        if late and not broken("skip_deadline_on_consume"):
            raise ApprovalExpired(pid, doc["deadline"], now)
        if profile["version"] != doc["profile_version"] and not broken("profile_version_ignored"):
            raise ProfileChanged(pid, doc["profile_version"], profile["version"])
        return stored

    def _execute(self, key: str, tool: Tool, arguments: Arguments) -> dict[str, Any]:
        approval = self._require(key).doc
        execution = {
            "idempotency_key": key,
            "status": "started",
            "requester_id": approval["requester_id"],
            "task_id": approval["task_id"],
            "tool_name": tool.name,
            "arguments_digest": approval["arguments_digest"],
            "profile_version": approval["profile_version"],
            "attempts": 1,
            "result": None,
        }
        existing = self.h.storage.read("tool_execution", key) if broken("consume_twice") else None
        if existing is not None:  # mutant: the second use calls the tool again under the same key
            again = {**existing.doc, "attempts": existing.doc["attempts"] + 1}
            self.h.storage.update("approval.consume/execution", "tool_execution", key, again, existing.version)
            return tool.run(key, arguments)
        stored = self._write_ahead(key, execution)
        faults = self.h.storage.faults
        faults.before("approval.consume/call")
        try:
            call_key = approval["tool_call_id"] if broken("idempotency_key_is_tool_call_id") else key
            result, status = tool.run(call_key, arguments), "succeeded"
        except Exception as error:  # the tool failed: the approval stays consumed (APR-6)
            result, status = {"ok": False, "error": redact(str(error))}, "failed"
        faults.after("approval.consume/call")
        kept = result if broken("result_not_redacted") else redact_json(result)  # AUD-3, INV-10
        self.h.storage.update(
            "approval.consume/outcome",
            "tool_execution",
            key,
            {**execution, "status": status, "result": kept},
            stored.version,
        )
        self._audit_last(self._require(key).doc, "approval.consume/audit")
        return result

    def _write_ahead(self, key: str, execution: Document) -> Stored:
        """The execution record, written before the call: its key is the second guard of single
        consumption (APR-6). If it exists, another writer consumed this approval: refuse, typed."""
        try:
            return self.h.storage.insert("approval.consume/execution", "tool_execution", key, execution)
        except AlreadyExists:
            if not broken("execution_overwritten"):
                raise ApprovalNotActive(key, "consumed") from None
            existing = self.h.storage.read("tool_execution", key)  # mutant: an upsert
            assert existing is not None
            return self.h.storage.update(
                "approval.consume/execution", "tool_execution", key, execution, existing.version
            )

    # ---- APR-9: cancel; monitor --------------------------------------------------------------
    def cancel(self, ctx: CallContext, pid: str) -> Document:
        return settle(lambda: self._cancel_once(ctx, pid))

    def _cancel_once(self, ctx: CallContext, pid: str) -> Document:
        stored = self._require(pid)
        doc = stored.doc
        if not broken("cancel_ignores_incarnation"):
            self._running_member(ctx)  # XPR-1: a caller of an older incarnation changes nothing
        if doc["requester_id"] != ctx.actor_id:
            raise ApprovalOtherAgent(pid, doc["requester_id"], ctx.actor_id)
        now = self.h.clock.now()
        if broken("late_cancel_refused") and doc["status"] == "approved" and now > doc["deadline"]:
            raise ApprovalExpired(pid, doc["deadline"], now)
        final = doc["status"] not in ("requested", "approved")
        if final and broken("final_cancel_not_active"):
            raise ApprovalNotActive(pid, doc["status"])
        if doc["status"] == "consumed" and not broken("cancel_after_consume"):
            raise CancelRefused(pid, "it was consumed; cancel the job or tool call instead (APR-9)")
        if doc["status"] not in ("requested", "approved", "consumed"):
            raise CancelRefused(pid, f"it is already {doc['status']}")
        if not broken("cancel_after_consume"):
            spec.ensure_transition(KIND, doc["status"], "cancelled")
        cancelled = {
            **doc,
            "status": "cancelled",
            "reason": "cancelled",
            "events": [*doc["events"], self.h.event(ctx.actor_id, "cancelled")],
        }
        self.h.storage.update("approval.cancel/record", KIND, pid, cancelled, stored.version)
        self._audit_last(cancelled, "approval.cancel/audit")
        return cancelled

    def expire_due(self) -> list[str]:
        """The deadline monitor's pass over approvals (INV-12), then over their requests' messages:
        an ``approval_request`` still pending once its approval's deadline passed expires unread
        (MSG-1), whatever became of the approval, as the model's monitor does."""
        expired = []
        now = self.h.clock.now()
        for stored in active(self.h.storage, KIND, ("requested", "approved")):
            if self._due(stored.doc, now) and settle(self._expiry(stored.key, now)):
                expired.append(stored.key)
        self.h.expire_request_messages("approval_request", self._request_deadline, "approval.expire/message", now)
        return expired

    def _request_deadline(self, envelope: Document) -> float | None:
        """The deadline of the approval an ``approval_request`` asks for (None: there is none)."""
        approval = self.h.storage.read(KIND, envelope["correlation_id"])
        if approval is None or broken("approval_request_never_expires"):
            return None
        return float(approval.doc["deadline"])

    def _expiry(self, pid: str, now: float) -> Callable[[], bool]:
        return lambda: self._expire_if_due(pid, now)

    @staticmethod
    def _due(doc: Document, now: float) -> bool:
        due = now >= doc["deadline"] if broken("monitor_expires_at_deadline") else now > doc["deadline"]
        return doc["status"] in ("requested", "approved") and due

    def _expire_if_due(self, pid: str, now: float) -> bool:
        """Read again and expire if still due: a concurrent consume or cancel may have won."""
        stored = self._require(pid)
        if not self._due(stored.doc, now):
            return False
        self._expire(stored, "approval.expire/audit")
        return True

    def _expire(self, stored: Stored, audit_step: str | None) -> Document:
        """Requested or approved → expired. The monitor logs the decision at once (AUD-5);
        reconciliation (``audit_step`` None) appends it with whatever else the log misses."""
        doc = stored.doc
        gone = {
            **doc,
            "status": "expired",
            "reason": "expired",
            "events": [*doc["events"], self.h.event("monitor", "expired")],
        }
        self.h.storage.update("approval.expire/record", KIND, doc["protocol_id"], gone, stored.version)
        if audit_step is not None and not broken("expiry_not_audited"):
            self._audit_last(gone, audit_step)
        return gone

    # ---- REC: reconciliation -----------------------------------------------------------------
    def reconcile(self, owners: Owners | None = None) -> None:
        """docs/protocol.md §5 rows for approvals; idempotent (REC-1). Expiring an *approved* one past its
        deadline is the monitor's job (:meth:`expire_due`), not reconciliation's.

        REC-4: an approval whose operation another live harness instance has in flight (its
        unlogged mark names that instance: a consumption before its execution record, its call or
        its outcome; a request or review before its message) is left to it, read again after the
        record, whole: no message, no lookup, no log entry (``reference._instances.Owners``).

        Reads the active approvals (``requested``, ``approved``) and those written since the team
        log's last entry about them (:meth:`reference.Storage.unlogged`): every approval operation
        ends with its log entry, so a final approval whose decision message, call outcome or log
        entry a crash cut off is among those — never the whole history (``bench/reconcile.py``)."""
        storage = self.h.storage
        owners = owners or Owners(storage)
        unlogged = set(storage.unlogged(KIND))
        rows = {stored.key: stored for stored in storage.scan_status(KIND, ("requested", "approved"))}
        for key in sorted(unlogged - rows.keys()):
            stored = storage.read(KIND, key)
            if stored is not None:
                rows[key] = stored
        for key in sorted(rows):
            stored = rows[key]
            doc = stored.doc
            if owners.elsewhere(KIND, key):
                continue  # REC-4: its writer is live and will finish it
            due = ("requested", "approved") if broken("restart_expires_approved") else ("requested",)
            if doc["status"] in due and self.h.clock.now() > doc["deadline"]:
                doc = self._expire(stored, None)  # "requested: re-deliver; check the deadline"
                unlogged.add(key)
            if broken("reconcile_skips_redelivery"):
                pass
            elif doc["status"] == "requested":
                self._post_request(doc)
            elif doc["status"] in (
                ("approved",) if broken("reconcile_tells_approvals_only") else ("approved", "rejected")
            ):
                self._post_decision(doc)
            elif doc["status"] == "consumed":
                self._take_over_call(doc)
            if key in unlogged and not broken("reconcile_skips_audit"):
                _audit.append_events(
                    self.h.storage, "approval.reconcile/audit", doc["protocol_id"], "approval", doc["events"]
                )

    def _take_over_call(self, approval: Document) -> None:
        """REC-4 with STO-4: two survivors may take over one dead instance's call at once. The one
        whose write loses (the execution record exists by now, or changed) decides again from what
        the winner wrote — which leaves nothing to do — instead of failing on a raw conflict."""
        for _ in range(CONFLICT_RETRIES):
            try:
                self._look_up_outcome(approval)
                return
            except (AlreadyExists, VersionConflict):
                if broken("version_conflict_escapes"):
                    raise
        raise StorageUnavailable(f"tool_execution/{approval['protocol_id']} kept changing; not reconciled")

    def _look_up_outcome(self, approval: Document) -> None:
        """APR-8: never re-approve, never repeat the call blindly: ask the tool by key."""
        key = approval["protocol_id"]
        stored = self.h.storage.read("tool_execution", key)
        tool = self.h.tools.get(approval["tool_name"])
        outcome = tool.lookup(key) if tool is not None and tool.lookup is not None else None
        base = {
            "idempotency_key": key,
            "requester_id": approval["requester_id"],
            "task_id": approval["task_id"],
            "tool_name": approval["tool_name"],
            "arguments_digest": approval["arguments_digest"],
            "profile_version": approval["profile_version"],
        }
        if stored is None:  # consumed, but the write-ahead record is missing: the call never ran
            doc = {
                **base,
                "status": "failed",
                "attempts": 0,
                "result": {"ok": False, "error": "crashed before the call"},
            }
            self.h.storage.insert("approval.reconcile/execution", "tool_execution", key, doc)
        elif stored.doc["status"] == "started" and broken("recovery_repeats_call"):
            result = tool.run(key, {}) if tool is not None else {"ok": False}
            repeated = {**stored.doc, "status": "succeeded", "attempts": stored.doc["attempts"] + 1, "result": result}
            self.h.storage.update("approval.reconcile/outcome", "tool_execution", key, repeated, stored.version)
        elif stored.doc["status"] == "started":
            failed = outcome is None or (not outcome.get("ok") and not broken("recovered_failure_succeeds"))
            status = "failed" if failed else "succeeded"
            result = outcome or {"ok": False, "error": "the call never happened (crashed before it)"}
            result = result if broken("result_not_redacted") else redact_json(result)
            self.h.storage.update(
                "approval.reconcile/outcome",
                "tool_execution",
                key,
                {**stored.doc, "status": status, "result": result},
                stored.version,
            )

    def _audit_last(self, doc: Document, step: str) -> None:
        """AUD-5: bring the team log up to the record as this operation wrote it — its newest event
        and any earlier one the log still misses, in the record's order (another process may have
        decided on it meanwhile, or a crash cut an earlier operation before its entry).
        Reconciliation does the same for every record."""
        if broken("audit_out_of_record_order"):  # mutant: append just this operation's own event
            event = doc["events"][-1]
            _audit.append(
                self.h.storage,
                step,
                event["actor"],
                f"approval.{event['event']}",
                doc["protocol_id"],
                event["summary"],
                event["at"],
            )
            return
        _audit.append_events(self.h.storage, step, doc["protocol_id"], "approval", doc["events"])

    # ---- helpers -----------------------------------------------------------------------------
    def _require(self, pid: str) -> Stored:
        stored = self.h.storage.read(KIND, pid)
        if stored is None:
            raise UnknownApproval(pid)
        return stored

    def _running_member(self, ctx: CallContext) -> Document:
        return self._running_row(ctx).doc

    def _running_row(self, ctx: CallContext) -> Stored:
        row = self.h.check_incarnation(ctx)
        if row.doc["status"] != "running":
            raise MemberNotRunning(ctx.actor_id, row.doc["status"])
        return row

    def _profile(self, member_id: str) -> Document:
        stored = self.h.storage.read("capability_profile", member_id)
        return stored.doc if stored is not None else {"version": 0, "tools": []}

    def _owned_task(self, ctx: CallContext) -> str:
        if ctx.task_id is None:
            raise NotTaskOwner(ctx.actor_id, "<none>")
        task = self.h.storage.read("task", ctx.task_id)
        holder = None if task is None else (task.doc["status"], task.doc["owner_id"], task.doc["owner_incarnation"])
        if holder != ("claimed", ctx.actor_id, ctx.incarnation):
            if not broken("task_refusal_reads_member_once"):
                self._running_row(ctx)  # STO-4: lapsed since it was read, the refusal is the one the member now gives
            raise NotTaskOwner(ctx.actor_id, ctx.task_id)
        return ctx.task_id


def _reviewer(doc: Document, actor_id: str) -> str:
    """The actor a review's event names (AUD-2): who reviewed, never whom it was about."""
    return str(doc["requester_id"]) if broken("review_event_names_requester") else actor_id
