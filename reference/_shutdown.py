"""Graceful shutdown (SHD-1 … SHD-7, XPR-1, XPR-2): request, drain, release, finish, the deadline
monitor, forced termination, and reconciliation of members, tasks and shutdowns (PROTOCOL §5).

Write steps, in order (the model's names, ``spec.model.OPERATIONS``):

- request:     ``shutdown.request/record`` → ``shutdown.request/message`` → ``shutdown.request/audit``
               (Lead only, SHD-1)
- cancel:      ``shutdown.cancel/record`` → ``shutdown.cancel/audit``
- begin drain: ``shutdown.begin_drain/record`` → ``shutdown.begin_drain/member`` →
               ``shutdown.begin_drain/cancel_requests`` (XPR-2) → ``shutdown.begin_drain/message``
               (the delivery's recorded result: MSG-5) → ``shutdown.begin_drain/audit``. A refused
               request (stale incarnation, past its deadline, member not running) writes only the
               message step.
- drain jobs:  ``shutdown.drain_jobs/record`` (the job ids waited for, AUD-2) →
               ``shutdown.drain_jobs/jobs`` (cancel_requested; then the runner signals the job)
- release:     ``shutdown.release_task/task`` (pending, keeping checkpoint and history) →
               ``shutdown.release_task/record`` → ``shutdown.release_task/member`` (last: while
               the member holds the task, no finish completes the request, SHD-5)
- finish:      ``shutdown.finish/record`` (completed) → ``shutdown.finish/member`` (stopped) →
               ``shutdown.finish/outbox`` (``shutdown_ack`` owed) → ``shutdown.finish/message`` →
               ``shutdown.finish/audit``
- force:       ``shutdown.force_terminate/jobs`` → ``/task`` (needs_inspection) → ``/member``
               (unhealthy) → ``/outbox`` (one ``member_lost``)
- monitor:     ``shutdown.expire/record`` (requested → expired, draining → timed_out, SHD-6) →
               ``shutdown.expire/message`` (an undelivered request past its deadline → expired);
               the whole pass is the model's one step ``monitor.pass/records``
               (:meth:`reference.Harness.monitor_pass`), idempotent, re-run after a crash
- reconcile:   ``shutdown.reconcile/*``, ``member.reconcile/*``, ``task.reconcile/outbox``

Every status change of a request is a decision, appended to the team log (AUD-5) as the
operation's last write, under its ``/audit`` step (``shutdown.expire/audit`` for the monitor,
``member.inspect/audit`` for an inspection, ``shutdown.reconcile/audit`` for reconciliation), as
the approvals do: a crash at any model step then leaves at most the log entry to append, which
reconciliation does (``reference._recovery``).
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import TYPE_CHECKING, Any

import spec
from spec import open_states
from spec.ids import message_id, protocol_id
from spec.redaction import redact
from spec.safety import BUSY_JOB, DRAIN_BEGUN

from . import _audit
from ._errors import AlreadyExists, ProtocolConflict, VersionConflict
from ._jobs import BUSY, EffectBeforeRecord
from ._mutants import broken
from ._storage import Document, Stored, active, settle
from ._tasks import plain_json, released_by, released_task
from ._team_errors import DrainNotReady, MemberBusy, MessageNotPending, NotLead, ShutdownRefused, UnknownRecord

if TYPE_CHECKING:
    from ._harness import Harness

KIND = "shutdown_request"
ACTIVE = open_states(KIND)
SHUTDOWN_STEPS = tuple(
    f"shutdown.{op}/{step}"
    for op, steps in (
        ("request", ("record", "message", "audit")),
        ("cancel", ("record", "audit")),
        ("begin_drain", ("record", "member", "cancel_requests", "message", "audit")),
        ("drain_jobs", ("record", "jobs")),
        ("release_task", ("task", "record", "member")),
        ("finish", ("record", "member", "outbox", "message", "audit")),
        ("force_terminate", ("jobs", "task", "member", "outbox")),
    )
    for step in steps
)


class ShutdownProtocol:
    def __init__(self, harness: Harness) -> None:
        self.h = harness

    # ---- SHD-1: the Lead's request -----------------------------------------------------------
    def request(
        self, actor_id: str, target_id: str, request_key: str, reason_text: str = "scale down", ttl_seconds: float = 60
    ) -> str:
        """Create (or find again) the request ``request_key`` and send it; returns its id."""
        if actor_id != self.h.lead_id and not broken("shutdown_by_anyone"):
            raise NotLead(actor_id, self.h.lead_id, f"request a shutdown of {target_id}")
        pid = protocol_id(actor_id, request_key, KIND)
        existing, created = self.h.storage.read(KIND, pid), False
        found = existing is not None
        if existing is None:
            target = self.h.member(target_id)
            late = broken("shutdown_refused_after_record")  # mutant: the status judged after the insert
            refused = ("stopped", "retired") if broken("shutdown_of_lost_member") else None
            if (target["status"] in refused if refused else target["status"] != "running") and not late:
                raise ShutdownRefused(f"shutdown of {target_id}", f"it is {target['status']}; only a running member")
            now = self.h.clock.now()
            doc = {
                "protocol_id": pid,
                "kind": KIND,
                "status": "requested",
                "requester_id": actor_id,
                "target_id": target_id,
                "target_incarnation": target["incarnation"],
                "responder_id": target_id,
                "reason_text": reason_text if broken("free_text_not_redacted") else redact(reason_text),  # AUD-3
                "created_at": now,
                "deadline": now + ttl_seconds,
                "released_task_id": None,
                "waited_job_ids": [],
                "reason": None,
                "events": [self.h.event(actor_id, "requested", reason_text)],
                "version": 0,
            }
            try:
                existing = self.h.storage.insert("shutdown.request/record", KIND, pid, doc)
                created = True
            except AlreadyExists:
                existing = self.require(pid)
            if late and target["status"] != "running":
                raise ShutdownRefused(f"shutdown of {target_id}", f"it is {target['status']}; only a running member")
        if not created:
            # STO-2: a key found again (before the insert, or lost to another writer's insert of the
            # same key) names the same request or is refused as a conflict, never told the other's id
            judged = found or not broken("shutdown_key_race_unjudged")  # mutant: only a key found first
            if existing.doc["target_id"] != target_id and judged:
                raise ShutdownRefused(
                    f"request {request_key}", f"it targets {existing.doc['target_id']}; use a new key"
                )
            _same_request(existing.doc, reason_text, ttl_seconds)
        if existing.doc["status"] == "requested":
            self.post_request(existing.doc)
        if created:
            self._audit("shutdown.request/audit", existing.doc)
        return pid

    @staticmethod
    def request_message_id(pid: str) -> str:
        """The stable id of shutdown request ``pid``'s message (what its target handles)."""
        return message_id(pid, "request")

    def post_request(self, doc: Document) -> None:
        body = {k: doc[k] for k in ("protocol_id", "target_incarnation", "reason_text", "deadline")}
        ttl = max(doc["deadline"] - doc["created_at"], 1e-6)
        message = self.h.envelope(KIND, doc["protocol_id"], "request", doc["requester_id"], doc["target_id"], body, ttl)
        self.h.post("shutdown.request/message", message)

    def cancel(self, actor_id: str, pid: str) -> None:
        if actor_id != self.h.lead_id:
            raise NotLead(actor_id, self.h.lead_id, f"cancel shutdown {pid}")
        settle(functools.partial(self._cancel, actor_id, pid))  # STO-4: a lost write judged again

    def _cancel(self, actor_id: str, pid: str) -> None:
        stored = self.require(pid)
        if stored.doc["status"] != "requested":
            raise ShutdownRefused(f"cancel of {pid}", f"it is {stored.doc['status']}; only a requested one")
        self._move(
            "shutdown.cancel/record", stored, "cancelled", actor_id, audit="shutdown.cancel/audit", reason="cancelled"
        )

    # ---- SHD-2: the target member handles the delivered request --------------------------------
    def begin_drain(self, member_id: str, message_id_: str) -> dict[str, Any]:
        """Handle the delivery of a ``shutdown_request``: every SHD-2 check, then the drain begins.

        Returns the delivery's recorded result (``{"outcome": "draining"}`` or ``{"outcome":
        "refused", "reason": …}``); a duplicate delivery returns the same result (MSG-5). A write lost
        to another process (the monitor expiring the message just read, another delivery) runs the
        delivery again from its read (STO-4): its writes before the last are idempotent (a drain begun
        resumes). The drain's log entry (AUD-5) is written by the delivery that began it, once its
        delivery is recorded — by itself or by another that resumed it meanwhile."""
        with self.h.assignment_lock:
            began: list[str] = []  # the request this delivery moved to draining, in any attempt
            recorded = settle(functools.partial(self._deliver, member_id, message_id_, began))
            if began:
                self._audit("shutdown.begin_drain/audit", self.require(began[0]).doc, "draining")
            return recorded

    def _deliver(self, member_id: str, message_id_: str, began: list[str]) -> dict[str, Any]:
        message = self.h.read("message", message_id_)
        if message is None:
            raise UnknownRecord("message", message_id_, "the Lead must send the request first")
        envelope = message.doc["message"]
        if envelope["message_type"] != KIND or envelope["target"] != member_id:
            raise ShutdownRefused(f"{member_id} handling {message_id_}", "it is not a shutdown request to it")
        if message.doc["recorded_result"] is not None:
            return dict(message.doc["recorded_result"])
        if message.doc["status"] != "pending":
            raise MessageNotPending(message_id_, message.doc["status"])
        # the member first: a drain writes the request before the member, so a member seen draining
        # comes with its request seen draining too (never a stale "requested" beside it, STO-4)
        if broken("delivery_reads_request_first"):
            sd, member = self.require(envelope["correlation_id"]), self.h.member(member_id)
        else:
            member = self.h.member(member_id)
            sd = self.require(envelope["correlation_id"])
        if sd.doc["status"] == "expired" and not broken("delivery_records_expired_request"):
            # SHD-6, MSG-1: the monitor expired the request unread and expires its message in the
            # same pass (a crash between: in the next); a reader between the two writes is refused
            # as one after them, and writes nothing
            raise MessageNotPending(message_id_, "expired")
        refusal = self._drain_refusal(sd.doc, member)
        if refusal is None:
            self._begin(sd, member)
            if sd.doc["status"] == "requested" and not broken("drain_logged_by_its_last_deliverer"):
                began[:] = [sd.key]
        result = {"outcome": "refused", "reason": refusal} if refusal else {"outcome": "draining"}
        recorded = self.h.record_delivery("shutdown.begin_drain/message", message_id_, result, read=message)
        if broken("drain_logged_by_its_last_deliverer") and refusal is None and sd.doc["status"] == "requested":
            began[:] = [sd.key]
        return recorded

    def _drain_refusal(self, sd: Document, member: Document) -> str | None:
        """SHD-2 and XPR-1; None when the drain may begin (or resume after a crash)."""
        if sd["target_incarnation"] != member["incarnation"] and not broken("stale_incarnation_accepted"):
            return f"stale: made for incarnation {sd['target_incarnation']}, member is {member['incarnation']}"
        if sd["status"] == "requested":
            if self.h.clock.now() > sd["deadline"]:
                return "past its deadline"
            if member["status"] != "running":
                return f"member is {member['status']}"
            return None
        drains_for = member["shutdown_request_id"]
        if sd["status"] == "draining" and (
            drains_for in (None, sd["protocol_id"]) or broken("drain_resumes_any_request")
        ):
            return None
        return f"request is {sd['status']}"

    def _begin(self, sd: Stored, member: Document) -> None:
        with self.h.step("shutdown.begin_drain/record"):
            if sd.doc["status"] == "requested":
                actor = self.h.lead_id if broken("drain_event_by_lead") else member["member_id"]
                self._move("shutdown.begin_drain/record", sd, "draining", actor)
        with self.h.step("shutdown.begin_drain/member"):
            if member["status"] == "running":
                self.h.set_member(
                    "shutdown.begin_drain/member",
                    member["member_id"],
                    "draining",
                    accepting_new_tasks=False,
                    shutdown_request_id=sd.key,
                )
        with self.h.step("shutdown.begin_drain/cancel_requests"):
            if not broken("drain_keeps_requests"):
                self.h.cancel_own_requests(
                    "shutdown.begin_drain/cancel_requests", member["member_id"], "member_draining"
                )

    # ---- SHD-3 … SHD-5: the drain ----------------------------------------------------------
    def draining_for(
        self, member_id: str, incarnation: int | None = None, member: Document | None = None, sd: Stored | None = None
    ) -> tuple[Document, Stored]:
        """The member and the shutdown it drains for (each as read here, or as the caller read it),
        if the drain may go on; else a refusal."""
        member = self.h.member(member_id) if member is None else member
        if incarnation is not None:
            self.h.fence(member, incarnation)
        sid = member["shutdown_request_id"]
        if member["status"] != "draining" or sid is None:
            raise _not_draining(member_id, member["status"])
        read_here = sd is None or sd.key != sid
        if sd is None or read_here:
            sd = self.require(sid)
        if sd.doc["status"] not in ("draining", "timed_out"):
            if read_here and not broken("drain_refusal_reads_member_once"):
                # STO-4: the request ended after the member was read (the Lead's inspection stopped the
                # member, then completed the request): the refusal is the one the member now gives
                now = self.h.member(member_id)
                if now["status"] != "draining":
                    raise _not_draining(member_id, now["status"])
            raise ShutdownRefused(f"drain of {member_id}", f"its request {sid} is {sd.doc['status']}")
        return member, sd

    def drain_jobs(self, member_id: str, incarnation: int | None = None) -> list[str]:
        """Ask every cancellable running job to stop (JOB-1, JOB-2); returns the jobs asked.
        With none to ask, a refusal (:meth:`drain_pass` reports the jobs it waits for). Each job is
        its own settled part, read afresh (STO-4): a write lost to another drain or to the job's
        exit is judged again as the winner left the job — never a raw conflict, never a job asked
        twice, and a drain that asked one job is never refused (outside review 58: the whole drain
        settled ran again after asking one of two jobs and refused as if it had asked none)."""
        with self.h.assignment_lock:
            _, sd = self.draining_for(member_id, incarnation)
            asked = []
            for job in self.h.jobs.busy_rows(member_id):
                if settle(functools.partial(self._cancel_job, job.key, sd.key)):
                    asked.append(job.key)
            if not asked:
                busy = self.h.jobs.busy(member_id)
                raise ShutdownRefused(f"job cancellation for {member_id}", f"no cancellable running job (busy: {busy})")
            return asked

    def _cancel_job(self, job_id: str, pid: str) -> bool:
        """Note the job on the request, then ask it to stop (SHD-3, AUD-2: a crash between the two
        leaves the request naming a job still running, which the next pass asks; never a job asked
        that no request names), then signal it (MEM-2: after its state is persisted). Whether this
        call asked it: a job another drain asked, or one no longer running, is not."""
        job = self.h.jobs.require(job_id)
        signal = job.doc["cancellable"] or broken("signal_non_cancellable")
        if job.doc["status"] != "running" or not signal:
            return False
        spec.ensure_transition("job", "running", "cancel_requested")
        asked = {**job.doc, "status": "cancel_requested"}
        if broken("drain_asks_before_noting"):
            self.h.storage.update("shutdown.drain_jobs/jobs", "job", job.key, asked, job.version)
        sd = self.require(pid)
        waited = [job.key] if broken("waited_keeps_last_job") else sorted({*sd.doc["waited_job_ids"], job.key})
        self.h.storage.update("shutdown.drain_jobs/record", KIND, pid, {**sd.doc, "waited_job_ids": waited}, sd.version)
        if not broken("drain_asks_before_noting"):
            try:
                self.h.storage.update("shutdown.drain_jobs/jobs", "job", job.key, asked, job.version)
            except VersionConflict:
                now = self.h.jobs.require(job.key).doc["status"]
                if now in BUSY_JOB:
                    raise  # asked by another drain meanwhile (or changed and still busy): judged again
                return True  # STO-4: it exited after this drain noted it: noted, nothing left to stop
        try:
            self.h.jobs.runner.signal_cancel(job.key)
        except EffectBeforeRecord:
            if self.h.jobs.require(job.key).doc["status"] in BUSY_JOB:
                raise
            # it exited after this drain's cancel_requested write (that write won): nothing to signal
        return True

    def release_task(self, member_id: str, state: Any = None, incarnation: int | None = None) -> str:
        """Checkpoint and release the held task once every job settled (SHD-3, TSK-3)."""
        with self.h.assignment_lock:
            member, sd = self.draining_for(member_id, incarnation)
            task_id = member["current_task_id"]
            if task_id is None:
                raise ShutdownRefused(f"release by {member_id}", "it holds no task")
            busy = self.h.jobs.busy(member_id)
            if busy and not broken("release_before_jobs_settle"):
                raise DrainNotReady(member_id, busy, f"release task {task_id}")
            if broken("release_task_loses_raw"):
                self._release(member_id, task_id, state)
            else:  # STO-4: lost to the Lead's flag meanwhile, the task is judged as the flag left it
                settle(functools.partial(self._release, member_id, task_id, state))
            self._released_or_refused(member, task_id)
            if broken("release_clears_member_first"):
                self.h.set_member_task("shutdown.release_task/member", member_id, None)
            settle(functools.partial(self.note_release, "shutdown.release_task/record", sd.key, str(task_id)))
            if not broken("release_clears_member_first"):
                self.h.set_member_task("shutdown.release_task/member", member_id, None)
            return str(task_id)

    def _released_or_refused(self, member: Document, task_id: str) -> None:
        """SHD-3, SHD-7, SHD-9: the note is written only for a task the member let go: after the
        release's task write, the member's last ``claimed`` or ``released`` event in the task's
        history must be its release (:func:`~reference._tasks.released_by`; written now, or by an
        earlier run of this release cut short). Otherwise another process moved the task after
        this one read the member draining, and the release stops, noting nothing, with the refusal
        a release after that process's steps gets (linearizability):

        - the Lead's last rung flagged it ``needs_inspection`` (the flag is the force-termination's
          point of no return, its member write may not have landed yet), or the Lead went on to
          inspect the member and put the task back or give it to another: refused as a drain of a
          member that no longer drains (``release||force_inspect``; mutants
          ``release_notes_flagged_task``, ``release_judged_by_its_hold``);
        - its unit deadline suspended it (SHD-9), perhaps resumed since: the member holds no task
          (``release||suspend``)."""
        task = self.h.task_row(task_id).doc
        if released_by(task, member["member_id"]) or broken("release_notes_flagged_task"):
            return
        held = (task["owner_id"], task["owner_incarnation"]) == (member["member_id"], member["incarnation"])
        if broken("release_judged_by_its_hold") and not held:
            return
        now = self.h.member(member["member_id"])
        flagged = held and task["status"] == "needs_inspection"
        if flagged or now["status"] != "draining":
            raise _not_draining(member["member_id"], "unhealthy" if now["status"] == "draining" else now["status"])
        raise ShutdownRefused(f"release by {member['member_id']}", "it holds no task")

    def note_cut_release(self, step: str, member: Document) -> None:
        """SHD-3, SHD-7, REC-2 (the model's ``_ops.note_release``): a release cut short after its task
        write, or in flight in another process, while its member still names the task it released
        (:func:`~reference._tasks.released_by`), is noted on the request the member drains for before
        the member's task is cleared (by reconciliation or by the Lead's inspection, ``step``), so no
        completion owes a ``shutdown_ack`` without the note (MSG-6)."""
        task_id, pid = member["current_task_id"], member["shutdown_request_id"]
        if task_id is None or pid is None:
            return
        task = self.h.storage.read("task", task_id)
        if task is None:
            return
        if broken("cut_release_judged_by_status"):
            if task.doc["status"] != "pending":
                return
        elif not released_by(task.doc, member["member_id"]):
            return
        if self.h.storage.read(KIND, pid) is not None:
            settle(functools.partial(self.note_release, step, pid, task_id))

    def note_release(self, step: str, pid: str, task_id: str) -> None:
        """The release's note of its task on the request (``step``: the release's last write but
        one, or reconciliation's or the Lead's inspection's ending a release cut short,
        :meth:`note_cut_release`), read afresh: run again when it lost a
        compare-and-set (STO-4: the monitor timed the drain out meanwhile, SHD-6), it notes the task
        on the request as the winner left it. A note already there is not written again. It needs no
        test of the request's status: the one step that ends a request while its member still names
        the task it released is the Lead's inspection, which notes the release first (SHD-7), so a
        release still in flight finds an ended request already noted, its ``shutdown_ack`` saying
        so (MSG-6; the model's ``_ops.note_release`` alike, where ``messages_agree_with_records``
        would show a note landing on a request that ended without it)."""
        sd = self.require(pid)
        if sd.doc["released_task_id"] == task_id:
            return
        self.h.storage.update(step, KIND, pid, {**sd.doc, "released_task_id": task_id}, sd.version)

    def _release(self, member_id: str, task_id: str, state: Any) -> None:
        """The task goes back to pending, keeping its last checkpoint and history (TSK-3)."""
        with self.h.step("shutdown.release_task/task"):
            task = self.h.task_row(task_id)
            if task.doc["status"] == "claimed" and task.doc["owner_id"] == member_id:
                now = self.h.clock.now()
                if state is None:  # the last checkpoint as it was (TSK-3); with none, an empty one from now
                    kept = task.doc["checkpoint"] or {"state": None, "saved_at": now}
                else:  # the state given is checkpointed now (TSK-2)
                    kept = {"state": plain_json(task_id, state), "saved_at": now}
                released = released_task(task.doc, kept, self.h.event(member_id, "released"))
                self.h.storage.update("shutdown.release_task/task", "task", task_id, released, task.version)

    def finish(self, member_id: str, incarnation: int | None = None) -> None:
        """SHD-5: completed, member stopped, ``shutdown_ack`` owed; finishing twice is a no-op."""
        with self.h.assignment_lock:
            settle(functools.partial(self._finish, member_id, incarnation))

    def _finish(self, member_id: str, incarnation: int | None) -> None:
        """One attempt; a first write lost (the monitor timed the drain out, another finish won)
        runs it again from its read (STO-4). A request already completed for the drain the member
        runs is a finish done, or under way in another process: a no-op, as a second finish is."""
        member = self.h.member(member_id)
        sid = member["shutdown_request_id"]
        read = self.require(sid) if sid else None
        in_flight = member["status"] == "draining" and not broken("finish_in_flight_refused")
        if (member["status"] == "stopped" or in_flight) and read and read.doc["status"] == "completed":
            return
        member, sd = self.draining_for(member_id, incarnation, member, read)
        busy = self.h.jobs.busy(member_id)
        if busy:
            raise DrainNotReady(member_id, busy, "finish the drain")
        if member["current_task_id"] is not None:
            raise ShutdownRefused(f"finish of {member_id}", f"it still holds {member['current_task_id']}")
        if broken("ack_before_record"):
            self.h.outbox.owe("shutdown.finish/outbox", self.h.outbox.shutdown_ack(sd.doc))
        stop = functools.partial(self.h.set_member, "shutdown.finish/member", member_id, "stopped")
        if broken("finish_stops_member_first"):  # the two writes swapped (reconciliation heals either)
            stop(accepting_new_tasks=False)
        self._move("shutdown.finish/record", sd, "completed", member_id)
        if not broken("finish_stops_member_first"):
            stop(accepting_new_tasks=False)
        self.h.outbox.owe("shutdown.finish/outbox", self.h.outbox.shutdown_ack(self.require(sd.key).doc))
        if broken("clean_exit_member_lost"):
            self.h.members.owe_lost("shutdown.finish/outbox", self.h.member(member_id), [])
        self._acknowledge(sd.key)
        self._audit("shutdown.finish/audit", self.require(sd.key).doc)

    def drain_pass(self, member_id: str, state: Any = None) -> dict[str, Any]:
        """One pass of SHD-3: cancel jobs; not ready while any runs; else release and finish."""
        with contextlib.suppress(ShutdownRefused):
            self.drain_jobs(member_id)
        waiting = self.h.jobs.busy(member_id)
        if waiting:
            return {"ready": False, "waiting": waiting}
        released = None
        if self.h.member(member_id)["current_task_id"] is not None:
            released = self.release_task(member_id, state)
        self.finish(member_id)
        return {"ready": True, "released": released}

    def _acknowledge(self, pid: str) -> None:
        mid = message_id(pid, "request")
        stored = self.h.storage.read("message", mid)
        with self.h.step("shutdown.finish/message"):
            if stored is not None and stored.doc["status"] == "delivered":
                doc = {**stored.doc, "status": "acknowledged"}
                self.h.storage.update("shutdown.finish/message", "message", mid, doc, stored.version)

    def complete(self, step: str, pid: str, sources: tuple[str, ...]) -> None:
        """The request completes (if in ``sources``) and its ``shutdown_ack`` is owed."""
        stored = self.require(pid)
        moved = stored.doc["status"] in sources
        if moved:
            stored = self._move(step, stored, "completed", self.h.lead_id)
        if stored.doc["status"] == "completed":
            self.h.outbox.owe(step, self.h.outbox.shutdown_ack(stored.doc))
        if moved:
            self._audit(f"{step.split('/')[0]}/audit", stored.doc)

    # ---- SHD-6, SHD-7: the deadline monitor and the last rung ------------------------------
    def expire_due(self) -> list[str]:
        """The deadline monitor's pass over shutdown requests (SHD-6), then over their undelivered
        request messages (MSG-1); returns the requests it moved."""
        now = self.h.clock.now()
        moved = [
            stored.key
            for stored in active(self.h.storage, KIND, ("requested", "draining"))
            if _past(stored.doc["deadline"], now) and settle(functools.partial(self._expire_one, stored.key, now))
        ]
        self.h.expire_request_messages(KIND, self._message_deadline, "shutdown.expire/message", now)
        return moved

    def _message_deadline(self, envelope: Document) -> float | None:
        """When a request message expires unread (MSG-1): at its request's deadline, unless a drain
        began under the request (SHD-2): its reader records that delivery last, so the message is left
        to it (or, after a crash, to the bus's next delivery), as the model's monitor leaves it."""
        sd = self.h.storage.read(KIND, envelope["correlation_id"])
        if sd is not None and sd.doc["status"] in DRAIN_BEGUN and not broken("monitor_expires_begun_drain"):
            return None
        return float(envelope["body"]["deadline"])

    def _expire_one(self, pid: str, now: float) -> bool:
        """One request's part of the pass, read afresh: run again when its write lost a
        compare-and-set to another process (STO-4: another monitor pass, a delivery, a drain's
        end), it judges the request as the winner left it. An undelivered request expires; a
        drain past its deadline times out (SHD-6, SHD-7)."""
        stored = self.require(pid)
        if not _past(stored.doc["deadline"], now):
            return False
        if stored.doc["status"] == "requested":
            target, reason = "expired", "expired"
        elif stored.doc["status"] == "draining":
            target, reason = ("completed" if broken("timed_out_as_completed") else "timed_out"), "timed_out"
        else:
            return False
        self._move("shutdown.expire/record", stored, target, "monitor", audit="shutdown.expire/audit", reason=reason)
        return True

    def force_terminate(self, pid: str) -> None:
        """SHD-7's last rung: the member's jobs are killed, its task flagged, the team told."""
        with self.h.assignment_lock:
            sd = self.require(pid)
            member_id = sd.doc["target_id"]
            member = self.h.member(member_id)
            if sd.doc["status"] != "timed_out" or member["status"] != "draining":
                raise ShutdownRefused(f"force termination for {pid}", "only a timed-out drain is force-terminated")
            if member["shutdown_request_id"] != pid and not broken("force_terminate_any_drain"):
                # SHD-7, XPR-1: a stale request's last rung never hits the drain the member runs now
                raise ShutdownRefused(
                    f"force termination for {pid}",
                    f"{member_id} drains for {member['shutdown_request_id']}, not this request",
                )
            killable = ("running",) if broken("force_terminate_spares_cancelling_jobs") else BUSY
            with self.h.step("shutdown.force_terminate/jobs"):
                for job in self.h.jobs.busy_rows(member_id):
                    if job.doc["status"] in killable:
                        self.h.jobs.runner.kill(job.key)
                        killed = {**job.doc, "status": "cancelled", "exit_code": -9}
                        self.h.storage.update("shutdown.force_terminate/jobs", "job", job.key, killed, job.version)
            flagged = self.h.members.flag_tasks("shutdown.force_terminate/task", member_id)
            self.h.set_member("shutdown.force_terminate/member", member_id, "unhealthy", accepting_new_tasks=False)
            self.h.members.owe_lost("shutdown.force_terminate/outbox", self.h.member(member_id), flagged)

    # ---- helpers -----------------------------------------------------------------------------
    def _move(
        self, step: str, stored: Stored, target: str, actor: str, audit: str | None = None, **changes: Any
    ) -> Stored:
        """The request moves to ``target`` with its event; with ``audit``, the decision is logged
        at once under that step (where it is the operation's last write)."""
        spec.ensure_transition(KIND, stored.doc["status"], target)
        events = [*stored.doc["events"], self.h.event(actor, target)]
        doc = {**stored.doc, **changes, "status": target, "events": events}
        moved = self.h.storage.update(step, KIND, stored.key, doc, stored.version)
        if audit is not None:
            self._audit(audit, doc)
        return moved

    def _audit(self, step: str, doc: Document, event: str | None = None) -> None:
        """The decision just written, in the team log too (AUD-5): the record's last event, or its
        last ``event`` (the monitor may have moved the record on since); a crash before this leaves
        it in the record only, and reconciliation appends it (``reference._recovery``)."""
        if not broken("shutdown_not_audited"):
            logged = [e for e in doc["events"] if event is None or e["event"] == event]
            _audit.log_event(self.h.storage, step, KIND, doc, logged[-1])

    def require(self, pid: str) -> Stored:
        stored = self.h.storage.read(KIND, pid)
        if stored is None:
            raise UnknownRecord(KIND, pid, "the Lead requests a shutdown with ShutdownProtocol.request")
        return stored


def _not_draining(member_id: str, status: str) -> MemberBusy:
    """The refusal of a drain step for a member that does not drain (SHD-2, SHD-3): one wording,
    whichever read found it so."""
    return MemberBusy(member_id, status, "drain", "a drain begins with a shutdown request")


def _same_request(stored: Document, reason_text: str, ttl_seconds: float) -> None:
    """STO-2: the same request key again is a retry only with the same reason and timeout; other
    business content under one id is a conflict, refused before anything is posted."""
    hint = "use a new request_key for a different request"
    offered = redact(reason_text)
    if stored["reason_text"] != offered and not broken("shutdown_retry_reason_unchecked"):
        raise ProtocolConflict(stored["protocol_id"], "reason_text", stored["reason_text"], offered, hint)
    stored_ttl = stored["deadline"] - stored["created_at"]
    # deadline - created_at on a real clock (~1.7e9 s) is exact only to a few ulps of the deadline
    if abs(stored_ttl - ttl_seconds) > 1e-9 + 4 * math.ulp(stored["deadline"]):
        raise ProtocolConflict(stored["protocol_id"], "ttl_seconds", stored_ttl, ttl_seconds, hint)


def _past(deadline: float, now: float) -> bool:
    """SHD-6: a request's deadline is its last instant; it has passed only after it."""
    return now >= deadline if broken("shutdown_expires_at_deadline") else now > deadline


__all__ = ["SHUTDOWN_STEPS", "ShutdownProtocol"]
