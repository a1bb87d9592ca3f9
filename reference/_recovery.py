"""Reconciliation of plans, shutdowns, members, tasks, the outbox and the team log (PROTOCOL §5,
REC-1 … REC-3).

Row by row, as the model's ``restart`` does (``spec/model/_reconcile.py``); the approval rows are
:meth:`reference.ApprovalProtocol.reconcile`, run before these (the model's order):

- plans (``plan_approval``, ``plan_execution``): ``reference._plans.reconcile_plans``, first;
- shutdown ``requested``: re-deliver the request (same message id);
- shutdown ``draining``/``timed_out``, member (same incarnation) still ``running``: finish the
  member's half (``draining``, not accepting) and cancel its own open requests (XPR-2);
- … member ``draining`` for it: re-apply XPR-2 (the crash may have cut the drain's writes);
- … member ``stopped``: the request completes, its ``shutdown_ack`` owed;
- shutdown ``completed`` (found through the member that drained for it): a member still
  ``draining`` for it stops; the ack is owed;
- member ``draining`` without its request: ``unhealthy``; every ``unhealthy`` member owes one
  ``member_lost`` (its incarnation's id);
- member ``stopped`` by its own signal exit (no shutdown request, never lost) whose
  ``shutdown_notice`` was never owed: owe it (SHD-8; the crash fell between ``member.exit/stopped``
  and ``member.exit/outbox``);
- a member's ``current_task_id`` names the task it holds under its incarnation, or nothing;
- a ``suspended`` task owes its ``task_suspended`` notice;
- the team log (AUD-5): every event of a shutdown request the log misses is appended.

Cost follows active work, not history (``bench/reconcile.py``): every row reads the records in
its active statuses (:meth:`reference.Storage.scan_status`) and the members; a final record is
reached only through a member that points at it, or because it was written since the team log's
last entry about it (:meth:`reference.Storage.unlogged`: every operation on a protocol record ends
with its log entry, so those are the records a crash cut short).

Every repair is idempotent (REC-1). Owed entries are sent by :meth:`reference.Outbox.send_owed`.

Only work whose writer can no longer finish it is taken over (REC-4): a shutdown request or plan
whose operation a live other harness instance has in flight (its unlogged mark names that
instance, ``reference._instances``) is left to it — its row and its log entries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spec.ids import protocol_id

from . import _audit
from ._errors import StorageUnavailable, VersionConflict
from ._instances import Owners
from ._mutants import broken
from ._plans import reconcile_plans
from ._storage import Document, Stored
from ._tasks import ACTIVE_SHUTDOWN, claims_of

if TYPE_CHECKING:
    from ._harness import Harness

DRAIN_OPEN = tuple(status for status in ACTIVE_SHUTDOWN if status != "requested")  # begun, not ended
VALID_DRAIN = (*ACTIVE_SHUTDOWN, "completed")  # a drain in force, or done and its member not yet stopped
HELD_TASK = ("claimed", "suspended", "needs_inspection")
RECOVERY_STEPS = (
    "shutdown.reconcile/member",
    "shutdown.reconcile/requests",
    "shutdown.reconcile/record",
    "shutdown.reconcile/audit",
    "member.reconcile/member",
    "member.reconcile/outbox",
    "task.reconcile/outbox",
)
"""The write steps of the team's reconciliation (the model's one ``restart/reconcile``, split by
store); the approval rows write ``approval.reconcile/*``."""


def reconcile_team(h: Harness, owners: Owners | None = None) -> None:
    owners = owners or Owners(h.storage)
    reconcile_plans(h, owners)  # plans before shutdowns, as the model's reconcile (a drain withdraws them after)
    _shutdowns(h, owners)
    _members(h)
    _claims(h)
    _suspended(h)
    _audit_shutdowns(h, owners)
    if broken("reconcile_reowes_sent_outbox"):
        for row in h.storage.scan_status("outbox_entry", ("sent",)):
            h.storage.update(
                "member.reconcile/outbox", "outbox_entry", row.key, {**row.doc, "status": "owed"}, row.version
            )


def _shutdowns(h: Harness, owners: Owners) -> None:
    for sd in h.storage.scan_status("shutdown_request", ACTIVE_SHUTDOWN):
        if not owners.elsewhere("shutdown_request", sd.key):  # REC-4
            _shutdown_row(h, sd)
    for member in h.storage.scan("member"):  # a completed request, through its member
        pid = member.doc["shutdown_request_id"]
        request = h.storage.read("shutdown_request", pid) if pid is not None else None
        if request is not None and request.doc["status"] == "completed" and not owners.elsewhere(*_of(request)):
            _shutdown_row(h, request)


def _begun() -> tuple[str, ...]:
    """A drain begun and not ended, as reconciliation's stopped-member row reads it."""
    return ("draining",) if broken("stopped_member_drain_left_timed_out") else DRAIN_OPEN


def _of(request: Stored) -> tuple[str, str]:
    return "shutdown_request", request.key


def _shutdown_row(h: Harness, sd: Stored) -> None:
    doc, pid = sd.doc, sd.key
    member = h.member(doc["target_id"])
    current = member["incarnation"] == doc["target_incarnation"]
    status = doc["status"]
    if status == "requested" and not broken("reconcile_skips_redelivery"):
        h.shutdowns.post_request(doc)
    elif status in DRAIN_OPEN and current and member["status"] == "running":
        if not broken("reconcile_keeps_half_drain"):
            h.set_member(
                "shutdown.reconcile/member",
                member["member_id"],
                "draining",
                accepting_new_tasks=False,
                shutdown_request_id=pid,
            )
            h.cancel_own_requests("shutdown.reconcile/requests", member["member_id"], "member_draining")
    elif status in DRAIN_OPEN and current and member["status"] == "draining":
        if member["shutdown_request_id"] == pid and not broken("resumed_drain_keeps_requests"):
            h.cancel_own_requests("shutdown.reconcile/requests", member["member_id"], "member_draining")
    elif status in _begun() and current and member["status"] == "stopped":
        _complete(h, pid, DRAIN_OPEN)
    elif status in DRAIN_OPEN and member["incarnation"] > doc["target_incarnation"]:
        if broken("reconcile_leaves_old_drain"):
            return
        # Its incarnation has stopped (a restart needs a stopped member): the drain is over. It never
        # drains the new incarnation (XPR-1) and must not stay open forever (INV-12).
        _complete(h, pid, DRAIN_OPEN)
    elif status == "completed":
        if current and member["status"] == "draining":
            h.set_member(
                "shutdown.reconcile/member",
                member["member_id"],
                "stopped",
                accepting_new_tasks=False,
                current_task_id=None,
            )
        _complete(h, pid, ())


def _complete(h: Harness, pid: str, sources: tuple[str, ...]) -> None:
    if broken("reconcile_skips_outbox"):
        stored = h.shutdowns.require(pid)
        if stored.doc["status"] in sources:
            h.shutdowns._move("shutdown.reconcile/record", stored, "completed", "lead")
        return
    h.shutdowns.complete("shutdown.reconcile/record", pid, sources)


def _members(h: Harness) -> None:
    for row in h.storage.scan("member"):
        member = row.doc
        drains_for = member["shutdown_request_id"]
        request = h.storage.read("shutdown_request", drains_for) if drains_for is not None else None
        stands = VALID_DRAIN[:-1] if broken("completed_drain_reported_lost") else VALID_DRAIN
        valid = request is not None and request.doc["status"] in stands
        if member["status"] == "draining" and not valid and not broken("unhealthy_member_not_reported"):
            h.set_member("member.reconcile/member", row.key, "unhealthy", accepting_new_tasks=False)
        member = h.member(row.key)
        if member["status"] == "unhealthy" and not broken("reconcile_skips_outbox"):
            flagged = [
                t.key for t in h.storage.scan_status("task", ("needs_inspection",)) if t.doc["owner_id"] == row.key
            ]
            h.members.owe_lost("member.reconcile/outbox", member, flagged)
        elif member["status"] == "stopped" and member["shutdown_request_id"] is None:
            _owe_lost_notice(h, member)


def _owe_lost_notice(h: Harness, member: Document) -> None:
    """SHD-8 after a crash between ``member.exit/stopped`` and ``member.exit/outbox``: a member
    stopped without a shutdown request and never lost (no ``member_lost`` of its incarnation)
    stopped on its own signal, and its ``shutdown_notice`` is owed. What the notice said is gone
    with the process; the reconciled notice says so. Owed under the notice's stable id, so a
    notice that was owed (and perhaps sent) stays as it was."""
    lost = h.outbox.member_lost(member, [])["message_id"]
    if h.storage.read("outbox_entry", lost) is not None or broken("signal_notice_not_recovered"):
        return
    pid = protocol_id(member["member_id"], f"incarnation-{member['incarnation']}", "shutdown_notice")
    body = {"reason_text": "signal", "summary": "stopped on a signal; notice recovered by reconciliation"}
    notice = h.envelope("shutdown_notice", pid, "notice", member["member_id"], "team", body, 60.0)
    if h.storage.read("outbox_entry", notice["message_id"]) is None:
        h.outbox.owe("member.reconcile/outbox", notice)


def _claims(h: Harness) -> None:
    """REC-2 for the two writes of a claim (or a finish, a release): ``current_task_id`` names the
    task the member holds under its incarnation, or nothing; the task record is the truth.

    Another process may claim, finish or release meanwhile (STO-4): the members are read *before*
    the tasks, and a repair is a compare-and-set on the member as read, decided again from fresh
    reads if it loses. Read the other way round, or written over a re-read member, a task read
    before that process's task write sat beside its member write and undid it (found by
    ``model_tests/test_interleave.py``: claim||reconcile, finish||reconcile, release||reconcile)."""
    if broken("claim_repair_reads_tasks_first"):
        claimed = _claimed(h)
        for stored in h.storage.scan("member"):
            repaired = _claim_repair(stored.doc, claimed)
            if repaired is not None:
                h.set_member_task("member.reconcile/member", stored.key, repaired[0])
        return
    members = h.storage.scan("member")
    claimed = _claimed(h)
    for stored in members:
        for _ in range(8):
            repaired = _claim_repair(stored.doc, claimed)
            if repaired is None:
                break
            try:
                if repaired[0] is None:
                    _note_release(h, stored.doc)
                doc = {**stored.doc, "current_task_id": repaired[0]}
                h.storage.update("member.reconcile/member", "member", stored.key, doc, stored.version)
                break
            except VersionConflict:
                stored, claimed = h.member_row(stored.key), _claimed(h)
        else:
            raise StorageUnavailable(f"member/{stored.key} kept changing; member.reconcile/member not written")


def _note_release(h: Harness, member: Document) -> None:
    """SHD-3, REC-2 (the model's ``_reconcile._tasks`` with ``_ops.note_release``): a member that
    still names a task its own release put back in ``pending`` was cut short after the task's write,
    or its release is in flight in another process; the task is noted on the request before the
    member's task is cleared, so no finish completes the request without the note. A release in
    flight writes the same note (``release||reconcile_finish``)."""
    if not broken("reconcile_clears_release_unnoted"):
        h.shutdowns.note_cut_release("shutdown.reconcile/record", member)


def _claimed(h: Harness) -> list[Document]:
    return [task.doc for task in h.storage.scan_status("task", ("claimed",))]


def _claim_repair(member: Document, claimed: list[Document]) -> tuple[str | None] | None:
    """The member's repaired ``current_task_id`` (in a 1-tuple), or None when it is right."""
    holds = [
        task["task_id"]
        for task in claimed
        if task["owner_id"] == member["member_id"] and task["owner_incarnation"] == member["incarnation"]
    ]
    current = member["current_task_id"]
    if current is not None and current not in holds:
        return (None,)
    repaired = ("running",) if broken("claim_repair_only_running") else ("running", "draining")
    if current is None and holds and member["status"] in repaired:
        return (holds[0],)
    return None


def _suspended(h: Harness) -> None:
    if broken("reconcile_skips_outbox"):
        return
    for row in h.storage.scan_status("task", ("suspended",)):
        h.outbox.owe("task.reconcile/outbox", h.outbox.task_suspended(row.doc, claims_of(row.doc)))


def _audit_shutdowns(h: Harness, owners: Owners) -> None:
    """AUD-5 after a crash between a request's write and its log entry: append what the log
    misses, for the requests written since their last entry (``Storage.unlogged``) — a final
    request can miss its entry too (cancel, expiry), and is found there, not in the history.
    Not those a live other instance is writing (REC-4): their operation appends them."""
    if broken("reconcile_skips_audit"):
        return
    pids = [pid for pid in h.storage.unlogged("shutdown_request") if not owners.elsewhere("shutdown_request", pid)]
    rows = [h.storage.read("shutdown_request", pid) for pid in pids]
    _audit.catch_up(h.storage, "shutdown.reconcile/audit", "shutdown_request", [r.doc for r in rows if r])


__all__ = ["RECOVERY_STEPS", "reconcile_team"]
