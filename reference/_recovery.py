"""Reconciliation of members, tasks, shutdowns and the outbox (PROTOCOL §5, REC-1 … REC-3).

Row by row, as the model's ``restart`` does (``spec/model/_reconcile.py``), after the approval
rows (:meth:`reference.ApprovalProtocol.reconcile`):

- shutdown ``requested``: re-deliver the request (same message id);
- shutdown ``draining``/``timed_out``, member (same incarnation) still ``running``: finish the
  member's half (``draining``, not accepting) and cancel its own open requests (XPR-2);
- … member ``draining`` for it: re-apply XPR-2 (the crash may have cut the drain's writes);
- … member ``stopped``: the request completes, its ``shutdown_ack`` owed;
- shutdown ``completed``: a member still ``draining`` for it stops; the ack is owed;
- member ``draining`` without its request: ``unhealthy``; every ``unhealthy`` member owes one
  ``member_lost`` (its incarnation's id);
- a member's ``current_task_id`` names the task it holds under its incarnation, or nothing;
- a ``suspended`` task owes its ``task_suspended`` notice.

Every repair is idempotent (REC-1). Owed entries are sent by :meth:`reference.Outbox.send_owed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import StorageUnavailable, VersionConflict
from ._mutants import broken
from ._plans import reconcile_plans
from ._storage import Document
from ._tasks import claims_of

if TYPE_CHECKING:
    from ._harness import Harness

VALID_DRAIN = ("requested", "draining", "timed_out", "completed")


def reconcile_team(h: Harness) -> None:
    reconcile_plans(h)  # plans before shutdowns, as the model's reconcile (a drain withdraws them after)
    _shutdowns(h)
    _members(h)
    _claims(h)
    _suspended(h)


def _shutdowns(h: Harness) -> None:
    for sd in h.storage.scan("shutdown_request"):
        doc, pid = sd.doc, sd.key
        member = h.member(doc["target_id"])
        current = member["incarnation"] == doc["target_incarnation"]
        status = doc["status"]
        if status == "requested" and not broken("reconcile_skips_redelivery"):
            h.shutdowns.post_request(doc)
        elif status in ("draining", "timed_out") and current and member["status"] == "running":
            h.set_member(
                "shutdown.reconcile/member",
                member["member_id"],
                "draining",
                accepting_new_tasks=False,
                shutdown_request_id=pid,
            )
            h.cancel_own_requests("shutdown.reconcile/requests", member["member_id"], "member_draining")
        elif status in ("draining", "timed_out") and current and member["status"] == "draining":
            if member["shutdown_request_id"] == pid:
                h.cancel_own_requests("shutdown.reconcile/requests", member["member_id"], "member_draining")
        elif status in ("draining", "timed_out") and current and member["status"] == "stopped":
            _complete(h, pid, ("draining", "timed_out"))
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
    shutdowns = {row.key: row.doc["status"] for row in h.storage.scan("shutdown_request")}
    for row in h.storage.scan("member"):
        member = row.doc
        drains_for = member["shutdown_request_id"]
        valid = drains_for is not None and shutdowns.get(drains_for) in VALID_DRAIN
        if member["status"] == "draining" and not valid:
            h.set_member("member.reconcile/member", row.key, "unhealthy", accepting_new_tasks=False)
        member = h.member(row.key)
        if member["status"] == "unhealthy" and not broken("reconcile_skips_outbox"):
            flagged = [
                t.key
                for t in h.storage.scan("task")
                if t.doc["status"] == "needs_inspection" and t.doc["owner_id"] == row.key
            ]
            h.members.owe_lost("member.reconcile/outbox", member, flagged)


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
                doc = {**stored.doc, "current_task_id": repaired[0]}
                h.storage.update("member.reconcile/member", "member", stored.key, doc, stored.version)
                break
            except VersionConflict:
                stored, claimed = h.member_row(stored.key), _claimed(h)
        else:
            raise StorageUnavailable(f"member/{stored.key} kept changing; member.reconcile/member not written")


def _claimed(h: Harness) -> list[Document]:
    return [task.doc for task in h.storage.scan("task") if task.doc["status"] == "claimed"]


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
    if current is None and holds and member["status"] in ("running", "draining"):
        return (holds[0],)
    return None


def _suspended(h: Harness) -> None:
    if broken("reconcile_skips_outbox"):
        return
    for row in h.storage.scan("task"):
        if row.doc["status"] == "suspended":
            h.outbox.owe("task.reconcile/outbox", h.outbox.task_suspended(row.doc, claims_of(row.doc)))


__all__ = ["reconcile_team"]
