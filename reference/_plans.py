"""Plan approval and plan execution (PLN-1 … PLN-11, XPR-1, XPR-2, MSG-2 … MSG-6, REC rows).

One ``plan_approval`` record per plan version, keyed by ``protocol_id(requester, plan_key,
"plan_approval")`` — also the plan's ``correlation_id``; a revision is a new record in the same
lineage (``revision = n + 1``, ``supersedes``). Running an approved plan is the separate
``plan_execution`` record (keyed by the plan id: it *is* PLN-7's executed marker). The write steps
are the model's (``spec.model.OPERATIONS``), in its order:

- draft:    ``plan.draft/record``
- submit:   ``plan.submit/message`` (plan_request, stable id) → ``plan.submit/record`` (pending;
            the ttl runs from here, PLN-5)
- decide:   ``plan.decide/record`` → ``plan.decide/message`` (plan_decision, sequence = retractions)
- retract:  ``plan.retract/record`` → ``plan.retract/message`` (the undelivered decision expires; a
            retraction into ``rejected`` is a new decision, PLN-6)
- deliver:  ``plan.deliver_decision/record`` (an approval is marked delivered) →
            ``plan.deliver_decision/message`` (the recorded result, MSG-5)
- withdraw: ``plan.withdraw/record``
- start:    ``plan.start/execution`` (the executed marker, before any step) → ``plan.start/record``
            (consumed) → ``plan.start/message`` (the decision acknowledged)
- step:     ``plan.step/execution`` (the approved step's id, after PLN-4's check; then its tool runs)
- complete: ``plan.complete/execution`` → ``plan.complete/outbox`` (plan_completion owed, PLN-10)
- fail:     ``plan.fail/execution``; rollback: ``plan.rollback/execution`` → ``plan.rollback/outbox``
- monitor (part of ``monitor.pass/records``): pending/approved past the ttl → ``expired``
  (``plan_abandoned`` owed); a running execution past its deadline → ``failed``; an undelivered
  ``plan_request`` past the plan's deadline → ``expired``.
- reconcile (:func:`reconcile_plans`): the model's ``_plans`` rows of PROTOCOL §5.

Every event of a plan approval record is a decision in the team log (AUD-1, AUD-5), appended as
its operation's last write under ``plan.<op>/audit`` (draft, submit, decide, retract,
deliver_decision, withdraw, start; ``plan.expire/audit`` after the monitor's ``plan_abandoned`` is
owed; a drain's withdrawal under the drain's step; ``plan.reconcile/audit``), so a crash at any
model step leaves at most the entry to append, which reconciliation does. A plan's execution
(``plan_execution``) is not logged: it carries out the decision logged as ``consumed``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import spec
from spec.ids import arguments_digest, message_id, protocol_id
from spec.redaction import redact

from . import _audit
from ._errors import AlreadyExists, ProtocolConflict, StaleIncarnation, UnknownTool, VersionConflict
from ._instances import Owners
from ._mutants import broken
from ._plan_errors import (
    BadDecisionMessage,
    DecisionNotDelivered,
    ExecutionNotRunning,
    NotPlanRequester,
    PlanAlreadyStarted,
    PlanDeviation,
    PlanExpired,
    PlanMemberNotRunning,
    PlanNoTask,
    PlanStatusConflict,
    StalePlan,
    UnknownPlan,
)
from ._storage import Document, Guard, Stored, active, settle
from ._team_errors import MessageNotPending, UnknownRecord

if TYPE_CHECKING:
    from ._harness import CallContext, Harness

KIND = "plan_approval"
RUN = "plan_execution"
_RUN_STATUSES = tuple(sorted(spec.transition_table(RUN)))
"""Every status of an executed marker: a guard that no marker of a plan exists matches them all."""
NOTICE_TTL = 60.0
PLAN_STEPS: tuple[str, ...] = tuple(
    f"plan.{op}/{step}"
    for op, steps in (
        ("draft", ("record", "audit")),
        ("submit", ("message", "record", "audit")),
        ("decide", ("record", "message", "audit")),
        ("retract", ("record", "message", "audit")),
        ("deliver_decision", ("record", "message", "audit")),
        ("withdraw", ("record", "audit")),
        ("start", ("execution", "record", "message", "audit")),
        ("step", ("execution",)),
        ("complete", ("execution", "outbox")),
        ("fail", ("execution",)),
        ("rollback", ("execution", "outbox")),
    )
    for step in steps
)
"""The write steps of the plan operations, in order: the model's (DESIGN rule 3), and each
operation on a plan record ends with its ``/audit`` step, the team log's entry (AUD-5), which the
model abstracts away."""
DECISIONS = ("approved", "rejected", "needs_revision")
BINDING = ("requester_id", "requester_incarnation", "task_id", "plan", "revision", "supersedes")
"""What a draft is bound to; the same plan key again must match all of it (STO-2)."""


def plan_key_id(requester: str, plan_key: str) -> str:
    """The plan id (= its correlation id) of ``requester``'s plan ``plan_key`` (MSG-4)."""
    return protocol_id(requester, plan_key, KIND)


def retractions(doc: Document) -> int:
    """How often the approver took the approval back (PLN-6): the next decision's sequence."""
    return sum(1 for event in doc["events"] if event["event"] == "retracted")


def redact_text(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan with its free text redacted before it is stored or sent (AUD-3, INV-10): goal,
    rollback and risks. The steps are kept as written: execution is bound to their parameters
    (PLN-4), which the reviewer reads."""
    if broken("free_text_not_redacted"):
        return dict(plan)
    out = dict(plan)
    for field in ("goal", "rollback"):
        if isinstance(out.get(field), str):
            out[field] = redact(out[field])
    if isinstance(out.get("risks"), list):
        out["risks"] = [redact(risk) if isinstance(risk, str) else risk for risk in out["risks"]]
    return out


class PlanProtocol:
    def __init__(self, harness: Harness) -> None:
        self.h = harness

    # ---- PLN-1: draft and submit -------------------------------------------------------------
    def draft(
        self,
        ctx: CallContext,
        plan_key: str,
        plan: dict[str, Any],
        supersedes: str | None = None,
    ) -> str:
        """Write the plan (``draft``) for the task the caller holds; returns the plan id. The plan's
        ``correlation_id`` is the plan id, filled in here (a different one is refused). With
        ``supersedes``, a revision of a plan the approver sent back (``needs_revision``).

        The draft's insert is guarded by the requester's row as this call read it (XPR-2): a drain
        that begins between the two withdraws nothing of this plan, so the insert loses and the
        call reads again and is refused (STO-4)."""
        return settle(lambda: self._draft_once(ctx, plan_key, plan, supersedes))

    def _draft_once(self, ctx: CallContext, plan_key: str, plan: dict[str, Any], supersedes: str | None) -> str:
        row = self._running(ctx, "draft a plan")
        member = row.doc
        task_id = self._owned_task(ctx)
        pid = plan_key_id(ctx.actor_id, plan_key)
        if not isinstance(plan, dict):
            raise spec.SchemaError("plan", "$", f"a plan is a JSON object, not {type(plan).__name__}")
        if plan.get("correlation_id", pid) != pid:
            given = plan["correlation_id"]
            raise spec.SchemaError(
                "plan", "$.correlation_id", f"must be the plan id {pid} (or left out), not {given!r}"
            )
        body = {**redact_text(plan), "correlation_id": pid}
        revision = 1 if supersedes is None else self._revision_of(ctx, supersedes) + 1
        now = self.h.clock.now()
        ttl = body.get("ttl_seconds")
        doc = {
            "protocol_id": pid,
            "kind": KIND,
            "status": "draft",
            "requester_id": ctx.actor_id,
            "requester_incarnation": member["incarnation"],
            "responder_id": self.h.lead_id,
            "task_id": task_id,
            "plan": body,
            "revision": revision,
            "supersedes": supersedes,
            "decision_delivered": False,
            "comment": None,
            "created_at": now,
            # until it is submitted, the deadline the plan would have if sent now (PLN-5 runs from
            # the submission: submit sets it again)
            "deadline": now + ttl if isinstance(ttl, int | float) and not isinstance(ttl, bool) else now,
            "reason": None,
            "events": [self.h.event(ctx.actor_id, "drafted", str(body.get("goal", "")))],
            "version": 0,
        }
        spec.validate_record(KIND, doc)  # PLN-1: every plan field, before anything is written
        try:
            guard = None if broken("draft_unguarded") else Guard(unchanged=(("member", row.key, row.version),))
            self.h.storage.insert("plan.draft/record", KIND, pid, doc, guard)
            self._audit("plan.draft/audit", doc)
        except AlreadyExists:
            stored = self.require(pid)
            for field in [f for f in BINDING if f != "plan"] if broken("plan_body_unbound") else BINDING:
                if stored.doc[field] != doc[field]:
                    hint = "use a new plan_key for a different plan"
                    raise ProtocolConflict(pid, field, stored.doc[field], doc[field], hint) from None
            if broken("rejected_plan_redrafted") and stored.doc["status"] in ("rejected", "expired"):
                self.h.storage.update("plan.draft/record", KIND, pid, {**doc, "version": 0}, stored.version)
        return pid

    def _revision_of(self, ctx: CallContext, previous: str) -> int:
        doc = self.require(previous).doc
        if doc["requester_id"] != ctx.actor_id:
            raise NotPlanRequester(previous, doc["requester_id"], ctx.actor_id)
        if doc["status"] != "needs_revision":
            raise PlanStatusConflict(
                previous,
                doc["status"],
                "revise",
                "only a plan sent back as needs_revision is revised; draft a new plan",
            )
        return int(doc["revision"])

    def submit(self, ctx: CallContext, pid: str) -> Document:
        """Send the draft to the approver (``plan_request`` first, then ``pending``). A drain of
        another process that withdraws the draft meanwhile (XPR-2) gets the typed refusal (STO-4)."""
        return settle(lambda: self._submit_once(ctx, pid))

    def _submit_once(self, ctx: CallContext, pid: str) -> Document:
        stored = self._own(ctx, pid, "submit")
        if stored.doc["status"] != "draft":
            raise PlanStatusConflict(pid, stored.doc["status"], "submit", "only a draft is submitted")
        self.post_request(stored.doc)
        stored = self.require(pid)
        if stored.doc["status"] != "draft":  # withdrawn since the first read (another process's drain)
            raise PlanStatusConflict(pid, stored.doc["status"], "submit", "only a draft is submitted")
        now = self.h.clock.now()
        return self._move(
            "plan.submit/record",
            stored,
            "pending",
            ctx.actor_id,
            audit="plan.submit/audit",
            deadline=now + self._ttl(stored.doc),
        )

    @staticmethod
    def _ttl(doc: Document) -> float:
        return float(doc["plan"]["ttl_seconds"])

    def post_request(self, doc: Document) -> None:
        body = {
            "plan": doc["plan"],
            "revision": doc["revision"],
            "supersedes": doc["supersedes"],
            "requester_incarnation": doc["requester_incarnation"],
        }
        message = self.h.envelope(
            "plan_request",
            doc["protocol_id"],
            "request",
            doc["requester_id"],
            doc["responder_id"],
            body,
            self._ttl(doc),
        )
        self.h.post("plan.submit/message", message)

    # ---- PLN-2, PLN-6: the approver ----------------------------------------------------------
    def decide(self, actor_id: str, pid: str, decision: str, comment: str = "") -> Document:
        """The responder decides a pending plan within its ttl (PLN-2, PLN-5)."""
        return settle(lambda: self._decide_once(actor_id, pid, decision, comment))

    def _decide_once(self, actor_id: str, pid: str, decision: str, comment: str) -> Document:
        if decision not in DECISIONS:
            raise spec.SchemaError("team_decide_plan", "$.decision", f"{decision!r} is not one of {list(DECISIONS)}")
        stored = self.require(pid)
        doc = stored.doc
        self._responder(actor_id, doc)
        if doc["status"] != "pending":
            raise PlanStatusConflict(pid, doc["status"], f"decide ({decision})", "only a pending plan is decided")
        now = self.h.clock.now()
        if now > doc["deadline"]:
            raise PlanExpired(pid, doc["deadline"], now, "decide")
        reason = "rejected" if decision == "rejected" else None
        if broken("decision_comment_in_reason") and comment:
            reason = comment  # the approver's free text outside ``comment``
        note = (comment if broken("decision_comment_not_redacted") else redact(comment)) if comment else None
        decided = self._move(
            "plan.decide/record", stored, decision, actor_id, summary=comment, reason=reason, comment=note
        )
        self.post_decision(decided, "plan.decide/message")
        self._audit("plan.decide/audit", decided)
        return decided

    def post_decision(self, doc: Document, step: str) -> None:
        sequence = retractions(doc)
        decision = doc["status"] if doc["status"] in ("rejected", "needs_revision") else "approved"
        body: dict[str, Any] = {"decision": decision, "sequence": sequence}
        if doc["comment"]:
            body["comment"] = doc["comment"]  # PLN-2: free text in comment and nowhere else
        message = self.h.envelope(
            "plan_decision",
            doc["protocol_id"],
            f"decision-{sequence}",
            doc["responder_id"],
            doc["requester_id"],
            body,
            max(doc["deadline"] - self.h.clock.now(), 1e-6),
            reply_to="request",
        )
        self.h.post(step, message)

    def retract(self, actor_id: str, pid: str, to: str) -> Document:
        """PLN-6: take back an approval whose decision was not delivered: to ``pending`` (review
        again) or ``rejected`` (a new decision, sent under the next sequence)."""
        if to not in ("pending", "rejected"):
            raise spec.SchemaError("plan retraction", "$.to", f"{to!r} is not pending or rejected")
        return settle(lambda: self._retract_once(actor_id, pid, to))

    def _retract_once(self, actor_id: str, pid: str, to: str) -> Document:
        stored = self.require(pid)
        doc = stored.doc
        self._responder(actor_id, doc)
        if doc["status"] != "approved":
            raise PlanStatusConflict(pid, doc["status"], "retract", "only an approved plan is retracted")
        if doc["decision_delivered"] and not broken("retraction_after_delivery"):
            raise PlanStatusConflict(
                pid, "approved and delivered", "retract", "after delivery only withdrawal or expiry ends it (PLN-6)"
            )
        spec.ensure_transition(KIND, "approved", to)
        events = [*doc["events"], self.h.event(actor_id, "retracted", to)]
        retracted = {**doc, "status": to, "reason": "rejected" if to == "rejected" else None, "events": events}
        self.h.storage.update("plan.retract/record", KIND, pid, retracted, stored.version)
        with self.h.step("plan.retract/message"):
            self._expire_retracted(retracted, "plan.retract/message")
            if to == "rejected":
                self.post_decision(retracted, "plan.retract/message")
        self._audit("plan.retract/audit", retracted)
        return retracted

    def _expire_retracted(self, doc: Document, step: str) -> None:
        """The decision taken back is withdrawn from the bus if it is still undelivered (PLN-6)."""
        count = retractions(doc)
        if not count:
            return
        mid = message_id(doc["protocol_id"], f"decision-{count - 1}")
        for _ in range(8):  # the requester's process may expire it first (deliver_decision, PLN-6)
            row = self.h.storage.read("message", mid)
            if row is None or row.doc["status"] != "pending":
                return
            spec.ensure_transition("message", "pending", "expired")
            try:
                self.h.storage.update(step, "message", mid, {**row.doc, "status": "expired"}, row.version)
                return
            except VersionConflict:
                continue

    # ---- PLN-3: the requester receives the decision -----------------------------------------
    def deliver_decision(self, member_id: str, message_id_: str) -> dict[str, Any]:
        """The requester handles a delivered ``plan_decision``: validated (MSG-2), matched by its
        correlation id to a plan this member waits for (PLN-3). An approval is marked delivered —
        from then on it cannot be retracted (PLN-6). A decision that matches nothing, or comes
        too late (the plan is no longer awaiting it), is recorded and ignored; a duplicate gets
        the first result (MSG-5); a retracted (expired) one is refused and changes nothing."""
        return settle(lambda: self._deliver_once(member_id, message_id_))

    def _deliver_once(self, member_id: str, message_id_: str) -> dict[str, Any]:
        row = self.h.read("message", message_id_)
        if row is None:
            raise UnknownRecord("message", message_id_, "the approver must decide first")
        envelope = row.doc["message"]
        try:
            spec.validate_message(envelope)  # MSG-2 on receipt too
        except spec.SchemaError as error:
            raise BadDecisionMessage(message_id_, str(error)) from None
        if envelope["message_type"] != "plan_decision" or envelope["target"] != member_id:
            raise BadDecisionMessage(message_id_, f"it is a {envelope['message_type']} to {envelope['target']}")
        if row.doc["recorded_result"] is not None:
            self._log_delivery(member_id, envelope["correlation_id"])
            return dict(row.doc["recorded_result"])  # MSG-5
        if row.doc["status"] != "pending":
            raise MessageNotPending(message_id_, row.doc["status"])
        plan = self.h.storage.read(KIND, envelope["correlation_id"])
        if (
            plan is not None
            and envelope["body"]["sequence"] < retractions(plan.doc)
            and not broken("decision_sequence_unchecked")
        ):
            # PLN-6: a retraction replaced this decision, and its own step that expires it runs in
            # another process that has not reached it: finish that step for it, as a serial order
            # (the retraction, then this delivery) would have, and refuse the delivery
            spec.ensure_transition("message", "pending", "expired")
            self.h.storage.update(
                "plan.retract/message", "message", message_id_, {**row.doc, "status": "expired"}, row.version
            )
            raise MessageNotPending(message_id_, "expired")
        verdict = self._match(member_id, plan, envelope)
        delivered: Document | None = None
        with self.h.step("plan.deliver_decision/record"):
            if (
                plan is not None
                and verdict == "matched"
                and plan.doc["status"] == "approved"
                and not plan.doc["decision_delivered"]  # MSG-5: another process's delivery of it won
            ):
                delivered = {
                    **plan.doc,
                    "decision_delivered": True,
                    "events": [*plan.doc["events"], self.h.event(member_id, "decision_delivered")],
                }
                self.h.storage.update("plan.deliver_decision/record", KIND, plan.key, delivered, plan.version)
            elif plan is not None and broken("late_decision_acted_on") and plan.doc["status"] != "approved":
                late = {**plan.doc, "decision_delivered": True}  # mutant: the late decision is taken
                self.h.storage.update("plan.deliver_decision/record", KIND, plan.key, late, plan.version)
        result = {"outcome": "matched" if verdict == "matched" else "ignored", "decision": envelope["body"]["decision"]}
        if verdict != "matched":
            result["reason"] = verdict
        recorded = self.h.record_delivery("plan.deliver_decision/message", message_id_, result, row)
        if delivered is not None:
            self._audit("plan.deliver_decision/audit", delivered)
        return recorded

    def _log_delivery(self, member_id: str, pid: str) -> None:
        """A duplicate delivery (MSG-5) whose first run marked the plan delivered, then lost the
        message's compare-and-set to another process's delivery (STO-4), has not logged that mark:
        the log is brought up to it (AUD-5; none twice, so a true duplicate writes nothing)."""
        plan = self.h.storage.read(KIND, pid)
        if plan is None or plan.doc["requester_id"] != member_id or broken("plan_not_audited"):
            return
        marks = [e for e in plan.doc["events"] if e["event"] == "decision_delivered"]
        if marks:
            _audit.log_event(self.h.storage, "plan.deliver_decision/audit", KIND, plan.doc, marks[-1])

    @staticmethod
    def _match(member_id: str, plan: Stored | None, envelope: Document) -> str:
        """``matched``, or why the decision is ignored (PLN-3)."""
        if plan is None or plan.doc["requester_id"] != member_id:
            return "unmatched: no plan of this member has this correlation id"
        if plan.doc["status"] not in ("approved", "rejected", "needs_revision"):
            return f"late: the plan is {plan.doc['status']}"
        if envelope["body"]["sequence"] != retractions(plan.doc) and not broken("decision_sequence_unchecked"):
            return "late: a later decision replaced it"
        return "matched"

    # ---- PLN-11: withdrawal ------------------------------------------------------------------
    def withdraw(self, ctx: CallContext, pid: str) -> Document:
        """PLN-11: the requester withdraws its own plan until execution starts."""
        return settle(lambda: self._withdraw_once(ctx, pid))

    def _withdraw_once(self, ctx: CallContext, pid: str) -> Document:
        stored = self._own(ctx, pid, "withdraw")
        status = stored.doc["status"]
        if status == "consumed" or self._started(stored):
            # as it stands once its start's process has written the consumption (a serial order)
            raise PlanStatusConflict(pid, "consumed", "withdraw", "its execution started: stop it instead (PLN-11)")
        if status not in ("draft", "pending", "approved"):
            raise PlanStatusConflict(pid, status, "withdraw", "it is already final")
        return self._move(
            "plan.withdraw/record",
            stored,
            "withdrawn",
            ctx.actor_id,
            audit="plan.withdraw/audit",
            guard=self._unstarted(pid),
            reason="cancelled",
        )

    def _started(self, plan: Stored) -> bool:
        """PLN-7: an approved plan beside its executed marker is a start that committed, its
        consumption still to be written by its process (or reconciliation): neither expired nor
        withdrawn."""
        started = plan.doc["status"] == "approved" and self.h.storage.read(RUN, plan.key) is not None
        return started and not broken("expiry_ignores_marker")

    @staticmethod
    def _unstarted(pid: str) -> Guard:
        """A guard that no executed marker of ``pid`` exists: a plan's expiry and its withdrawal
        hold only while it has not started, atomically with their write (PLN-5, PLN-7, PLN-11)."""
        if broken("expiry_ignores_marker"):
            return Guard()
        return Guard(none_match=((RUN, (("plan_id", pid),), _RUN_STATUSES),))

    def withdraw_own(self, step: str, member: Document, reason: str) -> list[str]:
        """XPR-2: a draining (or lost and inspected) member's own draft and pending plans of this
        incarnation are withdrawn — drafts too: nobody else could ever end them (INV-12)."""
        withdrawn: list[str] = []
        if broken("drain_keeps_plans"):
            return withdrawn
        for row in self.h.storage.scan_status(KIND, ("draft", "pending")):
            if settle(functools.partial(self._withdraw_one, step, member, reason, row.key)):
                withdrawn.append(row.key)
        return withdrawn

    def _withdraw_one(self, step: str, member: Document, reason: str, key: str) -> bool:
        """One plan's withdrawal, read afresh (STO-4: run again when its write lost to the Lead's
        decision or the monitor, it leaves what the winner decided); whether it withdrew."""
        row = self.h.storage.read(KIND, key)
        if row is None:
            return False
        doc = row.doc
        mine = doc["requester_id"] == member["member_id"] and doc["requester_incarnation"] == member["incarnation"]
        if doc["status"] not in ("draft", "pending") or not mine:
            return False
        self._move(step, row, "withdrawn", member["member_id"], audit=step, reason=reason)
        return True

    # ---- PLN-3, PLN-7: start -----------------------------------------------------------------
    def start(self, ctx: CallContext, pid: str) -> Document:
        """Write the executed marker (the ``plan_execution`` record), then mark the plan consumed.

        The marker's insert is guarded by the plan's version as this start judged it: where
        another process wrote the marker first (:class:`AlreadyExists`), or moved the plan since
        (the monitor expired it, its requester withdrew it: :class:`VersionConflict`), nothing of
        this start was written, and it decides again, which refuses it as a serial order would
        (STO-4, PLN-5, PLN-7)."""
        try:
            return settle(lambda: self._start_once(ctx, pid))
        except AlreadyExists:
            if broken("version_conflict_escapes"):
                raise
            return self._start_once(ctx, pid)

    def _start_once(self, ctx: CallContext, pid: str) -> Document:
        stored = self._own(ctx, pid, "start")
        doc = stored.doc
        marker = self.h.storage.read(RUN, pid)
        twice = broken("plan_executed_twice") and doc["status"] == "consumed" and marker is not None
        if not twice:
            self._startable(stored, marker)
        now = self.h.clock.now()
        run = {
            "plan_id": pid,
            "status": "running",
            "executed_step_ids": [],
            "started_at": now,
            "deadline": now + self._ttl(doc),
            "reason": None,
            "events": [self.h.event(ctx.actor_id, "started")],
            "version": 0,
        }
        if twice and marker is not None:  # mutant: a second start runs the steps again
            self.h.storage.update(
                "plan.start/execution", RUN, pid, {**marker.doc, "executed_step_ids": []}, marker.version
            )
        elif not broken("marker_after_first_step"):
            guard = None if broken("marker_ignores_plan_version") else Guard(unchanged=((KIND, pid, stored.version),))
            self.h.storage.insert("plan.start/execution", RUN, pid, run, guard)
        consumed: Document | None = None
        with self.h.step("plan.start/record"):
            stored = self.require(pid)
            if stored.doc["status"] == "approved":
                consumed = self._move("plan.start/record", stored, "consumed", ctx.actor_id)
        self._acknowledge(pid)
        if consumed is not None:
            self._audit("plan.start/audit", consumed)
        return self.require(pid).doc

    def _startable(self, stored: Stored, marker: Stored | None) -> None:
        doc, pid = stored.doc, stored.key
        if marker is not None:
            raise PlanAlreadyStarted(pid, marker.doc["status"])
        if doc["status"] != "approved":
            raise PlanStatusConflict(pid, doc["status"], "start", "only an approved plan starts")
        if not doc["decision_delivered"]:
            raise DecisionNotDelivered(pid)
        now = self.h.clock.now()
        if now > doc["deadline"]:
            raise PlanExpired(pid, doc["deadline"], now, "start")
        member = self.h.member(doc["requester_id"])
        if doc["requester_incarnation"] != member["incarnation"] and not broken("plan_incarnation_ignored"):
            made_for, current = doc["requester_incarnation"], member["incarnation"]
            if broken("stale_plan_misstated"):
                made_for, current = current, made_for
            raise StalePlan(pid, made_for, current)

    def _acknowledge(self, pid: str) -> None:
        with self.h.step("plan.start/message"):
            doc = self.require(pid).doc
            phase = 0 if broken("start_acknowledges_first_decision") else retractions(doc)
            mid = message_id(pid, f"decision-{phase}")
            row = self.h.storage.read("message", mid)
            if row is not None and row.doc["status"] == "delivered":
                self.h.storage.update(
                    "plan.start/message", "message", mid, {**row.doc, "status": "acknowledged"}, row.version
                )

    # ---- PLN-4: the steps --------------------------------------------------------------------
    def step(self, ctx: CallContext, pid: str, step: dict[str, Any]) -> dict[str, Any]:
        """Check ``step`` (``id``, ``action``, ``params``) against the next approved step *before*
        it runs; record it; run its tool if the harness has one. Any deviation fails the execution,
        rolls it back and raises :class:`PlanDeviation` (PLN-4). A first write lost to another
        process (the monitor failing the run, its requester stopping it) runs it again from its
        read (STO-4): the loser gets the typed refusal a serial order gives."""
        return settle(functools.partial(self._step, ctx, pid, step))

    def _step(self, ctx: CallContext, pid: str, step: dict[str, Any]) -> dict[str, Any]:
        stored, run = self._running_execution(ctx, pid, "run a step of")
        approved = stored.doc["plan"]["steps"]
        done = run.doc["executed_step_ids"]
        deviation = self._deviation(approved, done, step)
        if deviation is not None and not broken("step_deviation_allowed"):
            self._abort(ctx.actor_id, pid, len(done), *deviation)
        expected = approved[len(done)] if len(done) < len(approved) else step
        ran = {
            **run.doc,
            "executed_step_ids": [*done, expected["id"]],
            "events": [*run.doc["events"], self.h.event(ctx.actor_id, "step", expected["id"])],
        }
        self.h.storage.update("plan.step/execution", RUN, pid, ran, run.version)
        tool = self.h.tools.get(expected["action"])
        if tool is None:
            return {"step": expected["id"], "ran": "recorded"}
        return {"step": expected["id"], "result": tool.run(f"{pid}/{expected['id']}", step["params"])}

    def _deviation(self, approved: list[Document], done: list[str], step: dict[str, Any]) -> tuple[str, str] | None:
        """(kind, difference) of ``step`` against the next approved step, or None (PLN-4)."""
        if not isinstance(step, dict) or not {"id", "action", "params"} <= set(step):
            return "unknown_step", f"{step!r} is not a step with id, action and params"
        ids = [s["id"] for s in approved]
        cursor = len(done)
        if cursor >= len(approved):
            return "extra_step", f"{step['id']} after the last approved step {ids[-1]}"
        expected = approved[cursor]
        if step["id"] not in ids:
            return "unknown_step", f"{step['id']} is not an approved step id (approved: {', '.join(ids)})"
        index = ids.index(step["id"])
        if index < cursor:
            return "repeated", f"{step['id']} already ran; next is {expected['id']}"
        if index > cursor:
            return "reordered", f"{step['id']} comes after {expected['id']}, which has not run"
        if step["action"] != expected["action"]:
            return "changed_tool", f"{step['id']} approved as {expected['action']}, called as {step['action']}"
        if self._digest(expected["action"], step["params"]) != self._digest(expected["action"], expected["params"]):
            return "changed_parameters", f"{step['id']}: parameters {step['params']!r} differ from the approved ones"
        return None

    def _digest(self, action: str, params: Any) -> str:
        """APR-2's digest, with the tool's own normalisation when the harness has the tool."""
        try:
            return self.h.tool(action).digest(params)
        except UnknownTool:
            if not isinstance(params, dict):
                return f"not an object: {params!r}"
            return arguments_digest(action, params)

    def _abort(self, actor: str, pid: str, index: int, kind: str, difference: str) -> None:
        """PLN-4: the execution fails (recorded, with the difference), its rollback runs."""
        run = self._run(pid)
        failed = self._move_run("plan.fail/execution", run, "failed", actor, None, f"{kind}: {difference}")
        if not broken("deviation_skips_rollback"):
            self._roll_back(failed, actor)
        raise PlanDeviation(pid, index, kind, difference)

    def complete(self, ctx: CallContext, pid: str) -> Document:
        """Every approved step ran: completed, ``plan_completion`` owed (PLN-10). Completing with
        approved steps left is a deviation (``skipped``). Settled as :meth:`step` is (STO-4)."""
        return settle(functools.partial(self._complete, ctx, pid))

    def _complete(self, ctx: CallContext, pid: str) -> Document:
        stored, run = self._running_execution(ctx, pid, "complete")
        approved = [s["id"] for s in stored.doc["plan"]["steps"]]
        done = run.doc["executed_step_ids"]
        if len(done) < len(approved) and not broken("complete_with_steps_left"):
            self._abort(ctx.actor_id, pid, len(done), "skipped", f"{', '.join(approved[len(done) :])} never ran")
        completed = self._move_run("plan.complete/execution", run, "completed", ctx.actor_id, None)
        self.h.outbox.owe("plan.complete/outbox", self.completion(stored.doc, "completed"))
        return completed.doc

    def fail(self, ctx: CallContext, pid: str, summary: str = "stopped by its requester") -> Document:
        """PLN-11: after the start the requester can only stop the execution; it fails (settled,
        STO-4: its one write lost to a step, the completion or the monitor runs it again)."""

        def stop() -> Document:
            _, run = self._running_execution(ctx, pid, "stop")
            return self._move_run("plan.fail/execution", run, "failed", ctx.actor_id, "cancelled", summary).doc

        return settle(stop)

    def rollback(self, actor: str, pid: str) -> Document:
        """The plan's rollback ran after a failure (PLN-9): rolled_back, ``plan_completion`` owed.
        Settled (STO-4): a second report at once loses at its first write and is refused as after."""
        return settle(lambda: self._rollback(actor, pid))

    def _rollback(self, actor: str, pid: str) -> Document:
        run = self._run(pid)
        if run.doc["status"] != "failed":
            raise ExecutionNotRunning(pid, run.doc["status"], "roll back (only a failed execution)")
        return self._roll_back(run, actor)

    def _roll_back(self, run: Stored, actor: str) -> Document:
        rolled = self._move_run("plan.rollback/execution", run, "rolled_back", actor, run.doc["reason"])
        plan = self.require(run.key).doc
        self.h.outbox.owe("plan.rollback/outbox", self.completion(plan, "rolled_back"))
        return rolled.doc

    def completion(self, plan: Document, outcome: str) -> Document:
        body = {"plan_id": plan["protocol_id"], "outcome": outcome, "summary": ""}
        return self.h.envelope(
            "plan_completion",
            plan["protocol_id"],
            "completion",
            plan["requester_id"],
            plan["responder_id"],
            body,
            NOTICE_TTL,
        )

    def abandoned(self, plan: Document) -> Document:
        body = {"plan_id": plan["protocol_id"], "reason": "expired"}
        return self.h.envelope(
            "plan_abandoned",
            plan["protocol_id"],
            "abandoned",
            plan["requester_id"],
            plan["responder_id"],
            body,
            NOTICE_TTL,
        )

    # ---- PLN-5, PLN-9: the deadline monitor --------------------------------------------------
    def expire_due(self) -> None:
        """Part of the monitor's pass: a timeout never approves (PLN-5); a run out of time fails."""
        now = self.h.clock.now()
        due = {row.key: row for row in active(self.h.storage, KIND, ("pending", "approved"))}
        runs = {run.key for run in active(self.h.storage, RUN, ("running",))}
        for key in sorted(due.keys() | runs):  # one plan at a time, in key order, as before
            settle(functools.partial(self._expire_one, key, now))
        self.h.expire_request_messages("plan_request", self._request_deadline, "plan.expire/message", now)

    def _request_deadline(self, envelope: Document) -> float | None:
        """The deadline of the plan a ``plan_request`` submits (None: there is none)."""
        plan = self.h.storage.read(KIND, envelope["correlation_id"])
        return None if plan is None else float(plan.doc["deadline"])

    def _expire_one(self, key: str, now: float) -> None:
        """One plan's part of the monitor's pass, read afresh: run again when a write lost a
        compare-and-set to another process (STO-4: a decision or a start won), it judges the plan
        as the winner left it."""
        row = self.require(key)
        if row.doc["status"] in ("pending", "approved") and now > row.doc["deadline"] and not self._started(row):
            if row.doc["status"] == "pending" and broken("ttl_approves_plan"):
                self._move("plan.expire/record", row, "approved", "monitor", audit="plan.expire/audit")
                return
            # PLN-7: an executed marker is the start's commit; its process (or reconciliation)
            # marks the plan consumed. The expiry holds only while no marker exists, atomically.
            gone = self._move(
                "plan.expire/record", row, "expired", "monitor", guard=self._unstarted(key), reason="expired"
            )
            if broken("expiry_logged_before_notice"):
                self._audit("plan.expire/audit", gone)
            self.h.outbox.owe("plan.expire/outbox", self.abandoned(gone))
            if not broken("expiry_logged_before_notice"):
                self._audit("plan.expire/audit", gone)  # last, so a crash before it leaves it unlogged
        run = self.h.storage.read(RUN, row.key)
        if run is not None and run.doc["status"] == "running":
            deadline = row.doc["deadline"] if broken("run_timed_by_plan_deadline") else run.doc["deadline"]
            if _past(deadline, now):  # PLN-9: the run's own deadline, start + ttl
                self._move_run("plan.expire/execution", run, "failed", "monitor", "timed_out")

    # ---- helpers -----------------------------------------------------------------------------
    def require(self, pid: str) -> Stored:
        stored = self.h.storage.read(KIND, pid)
        if stored is None:
            raise UnknownPlan(pid)
        return stored

    def _run(self, pid: str) -> Stored:
        run = self.h.storage.read(RUN, pid)
        if run is None:
            raise ExecutionNotRunning(pid, None, "use the execution of")
        return run

    def _running(self, ctx: CallContext, what: str) -> Stored:
        row = self.h.member_row(ctx.actor_id)
        member = row.doc
        if member["incarnation"] != ctx.incarnation:
            raise StaleIncarnation(f"call {ctx.tool_call_id}", ctx.incarnation, member["incarnation"])
        if member["status"] != "running":
            raise PlanMemberNotRunning(ctx.actor_id, member["status"], what)
        return row

    def _own(self, ctx: CallContext, pid: str, what: str) -> Stored:
        """The caller's own plan, the caller running and of its current incarnation."""
        stored = self.require(pid)
        self._running(ctx, f"{what} a plan")
        if stored.doc["requester_id"] != ctx.actor_id:
            raise NotPlanRequester(pid, stored.doc["requester_id"], ctx.actor_id)
        return stored

    def _responder(self, actor_id: str, doc: Document) -> None:
        from ._errors import NotResponder

        if actor_id != doc["responder_id"]:
            raise NotResponder(doc["protocol_id"], doc["responder_id"], actor_id)

    def _owned_task(self, ctx: CallContext) -> str:
        task = self.h.storage.read("task", ctx.task_id) if ctx.task_id else None
        holder = None if task is None else (task.doc["status"], task.doc["owner_id"], task.doc["owner_incarnation"])
        if ctx.task_id is None or holder != ("claimed", ctx.actor_id, ctx.incarnation):
            if ctx.task_id is not None and not broken("task_refusal_reads_member_once"):
                self._running(ctx, "draft a plan")  # STO-4: lapsed since read, the refusal the member now gives
            raise PlanNoTask(ctx.actor_id, ctx.task_id)
        return ctx.task_id

    def _running_execution(self, ctx: CallContext, pid: str, what: str) -> tuple[Stored, Stored]:
        stored = self._own(ctx, pid, what)
        run = self.h.storage.read(RUN, pid)
        if run is None and broken("marker_after_first_step") and stored.doc["status"] == "consumed":
            now = self.h.clock.now()  # mutant: the marker is only written with the first step
            doc = {
                "plan_id": pid,
                "status": "running",
                "executed_step_ids": [],
                "started_at": now,
                "deadline": now + self._ttl(stored.doc),
                "reason": None,
                "events": [],
                "version": 0,
            }
            self.h.storage.insert("plan.step/execution", RUN, pid, {**doc})
            run = self._run(pid)
        if run is None or run.doc["status"] != "running":
            raise ExecutionNotRunning(pid, None if run is None else run.doc["status"], what)
        return stored, run

    def _move(
        self,
        step: str,
        stored: Stored,
        target: str,
        actor: str,
        summary: str = "",
        audit: str | None = None,
        guard: Guard | None = None,
        **changes: Any,
    ) -> Document:
        """The plan moves to ``target`` with its event (with ``guard``, only while it holds); with
        ``audit``, the decision is logged at once under that step (where it is the operation's
        last write)."""
        spec.ensure_transition(KIND, stored.doc["status"], target)
        events = [*stored.doc["events"], self.h.event(actor, target, summary)]
        doc = {**stored.doc, **changes, "status": target, "events": events}
        self.h.storage.update(step, KIND, stored.key, doc, stored.version, guard)
        if audit is not None:
            self._audit(audit, doc)
        return doc

    def _audit(self, step: str, doc: Document) -> None:
        """AUD-5: the plan's last event, appended to the team log (AUD-1: the record keeps it too)."""
        if not broken("plan_not_audited"):
            _audit.log_event(self.h.storage, step, KIND, doc, doc["events"][-1])

    def _move_run(
        self, step: str, run: Stored, target: str, actor: str, reason: str | None, summary: str = ""
    ) -> Stored:
        spec.ensure_transition(RUN, run.doc["status"], target)
        events = [*run.doc["events"], self.h.event(actor, target, summary)]
        doc = {**run.doc, "status": target, "reason": reason, "events": events}
        return self.h.storage.update(step, RUN, run.key, doc, run.version)


ACTIVE = ("draft", "pending", "approved")
"""The plan statuses that may still change; reconciliation reads these and the unlogged ones."""


def _past(deadline: float, now: float) -> bool:
    """PLN-9: a run's deadline is its last instant; it has passed only after it."""
    return now >= deadline if broken("plan_run_timed_out_at_deadline") else now > deadline


def reconcile_plans(h: Harness, owners: Owners | None = None) -> None:
    """PROTOCOL §5 for plans and plan executions, as the model's ``_plans`` does (REC-1: idempotent).

    - a draft whose ``plan_request`` is on the bus: the submit is finished (``pending``, ttl from now);
    - ``pending``: the request is delivered again; ``approved``/``rejected``/``needs_revision``: the
      current decision is delivered again (same ids, MSG-4); a retracted decision still undelivered
      expires (PLN-6);
    - ``approved`` with an executed marker: ``consumed`` — never a second execution (PLN-7);
    - ``expired`` owes ``plan_abandoned``; a ``completed`` or ``rolled_back`` execution owes
      ``plan_completion`` while the storage marks it owed (:meth:`reference.Storage.owed`: its
      terminal write sets the mark, the outbox entry's clears it). A running execution is resumed
      from its record (its next step is the first approved step not in ``executed_step_ids``);
      the monitor fails it when out of time;
    - the team log (AUD-5): every event of a plan the log misses is appended, last.

    The plans read are the active ones (:data:`ACTIVE`) and those written since the log's last
    entry about them (:meth:`reference.Storage.unlogged`): every operation on a plan ends with its
    log entry, so a final plan a crash cut short (a decision not yet posted, an expiry whose
    ``plan_abandoned`` is not yet owed) is among those — not the whole history of plans.
    """
    owners = owners or Owners(h.storage)
    history = broken("reconcile_plans_reads_history")
    rows = {row.key: row for row in (h.storage.scan(KIND) if history else h.storage.scan_status(KIND, ACTIVE))}
    for pid in h.storage.unlogged(KIND):
        row = rows.get(pid) or h.storage.read(KIND, pid)
        if row is not None:
            rows[pid] = row
    for pid in sorted(rows):
        if not owners.elsewhere(KIND, pid):  # REC-4: a live other instance's plan operation is its own
            _plan_row(h, rows[pid])
    if not broken("reconcile_skips_outbox"):
        if broken("reconcile_reads_finished_runs"):
            owing = [run.key for run in h.storage.scan_status(RUN, ("completed", "rolled_back"))]
        else:
            owing = h.storage.owed(RUN)  # REC-3: the completions still owed, not every finished run
        for pid in owing:
            run = h.storage.read(RUN, pid)
            if run is not None and run.doc["status"] in ("completed", "rolled_back"):
                plan = h.plans.require(pid).doc
                h.outbox.owe("plan.reconcile/outbox", h.plans.completion(plan, run.doc["status"]))
    if not broken("reconcile_skips_audit"):
        pids = [pid for pid in h.storage.unlogged(KIND) if not owners.elsewhere(KIND, pid)]
        logged = [h.storage.read(KIND, pid) for pid in pids]
        _audit.catch_up(h.storage, "plan.reconcile/audit", KIND, [row.doc for row in logged if row])


def _plan_row(h: Harness, row: Stored) -> None:
    plans, doc, pid = h.plans, row.doc, row.key
    actor = h.lead_id if broken("rolled_forward_by_lead") else doc["requester_id"]  # AUD-1: the step's own
    if doc["status"] == "draft" and h.storage.read("message", message_id(pid, "request")) is not None:
        due = doc["deadline"] if broken("cut_submit_keeps_draft_deadline") else h.clock.now() + plans._ttl(doc)
        doc = plans._move("plan.reconcile/record", row, "pending", actor, deadline=due)
    elif doc["status"] == "pending" and not broken("reconcile_skips_redelivery"):
        plans.post_request(doc)
    elif doc["status"] in DECISIONS and not broken("reconcile_skips_redelivery"):
        plans.post_decision(doc, "plan.reconcile/message")
    plans._expire_retracted(doc, "plan.reconcile/message")
    if doc["status"] == "approved" and h.storage.read(RUN, pid) is not None:
        doc = plans._move("plan.reconcile/record", plans.require(pid), "consumed", actor)
    if doc["status"] == "expired" and not broken("reconcile_skips_outbox"):
        h.outbox.owe("plan.reconcile/outbox", plans.abandoned(doc))


__all__ = ["PLAN_STEPS", "PlanProtocol", "plan_key_id", "reconcile_plans", "retractions"]
