"""Tasks: claim, checkpoint, finish, suspend, resume, inspect (MEM-1, TSK-1 … TSK-3, SHD-9).

Write steps, in order (the model's names, ``spec.model.OPERATIONS``):

- claim:   ``task.claim/task`` (one guarded compare-and-set, MEM-1) → ``task.claim/member``
- finish:  ``task.finish/task`` → ``task.finish/member``
- suspend: ``task.suspend/task`` → ``task.suspend/member`` → ``task.suspend/outbox`` (SHD-9)
- resume:  ``task.resume/task``; inspect: ``task.inspect/task``
- checkpoint (the model abstracts it): ``task.checkpoint/task``

MEM-1 is checked twice: on the records read under the assignment lock (a typed refusal that says
why), and again inside the claim's one write (:class:`reference._storage.Guard`): the member row
unchanged since it was read, and no active shutdown request for its incarnation — so a request
persisted a moment before (its member not yet updated, or by another process) shuts the claim out.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

import spec
from spec import open_states
from spec.ids import message_id
from spec.safety import BUSY_JOB

from ._errors import VersionConflict
from ._mutants import broken
from ._storage import Document, Guard, Stored, settle
from ._team_errors import (
    BadCheckpoint,
    ClaimRefused,
    DrainNotReady,
    MemberBusy,
    NotClaimHolder,
    StaleMember,
    TaskNotDue,
    TaskTaken,
)
from ._tools import redact_json

if TYPE_CHECKING:
    from ._harness import Harness

ACTIVE_SHUTDOWN = open_states("shutdown_request")  # MEM-1: a request in force refuses the claim


def _in_force() -> tuple[str, ...]:
    if broken("claim_under_timed_out_request"):
        return tuple(status for status in ACTIVE_SHUTDOWN if status != "timed_out")
    return ACTIVE_SHUTDOWN


TASK_STEPS = (
    "task.claim/task",
    "task.claim/member",
    "task.finish/task",
    "task.finish/member",
    "task.suspend/task",
    "task.suspend/member",
    "task.suspend/outbox",
    "task.resume/task",
    "task.inspect/task",
    "task.checkpoint/task",
)


def claims_of(task: Document) -> int:
    return sum(1 for event in task["history"] if event["event"] == "claimed")


class Tasks:
    def __init__(self, harness: Harness) -> None:
        self.h = harness

    # ---- MEM-1: claim ------------------------------------------------------------------------
    def claim(self, member_id: str, task_id: str, incarnation: int | None = None) -> str:
        """Claim a pending task for an eligible member; returns the claim token (TSK-1)."""
        with self.h.assignment_lock:
            for _ in range(8):
                member, task = self.h.member_row(member_id), self.h.task_row(task_id)
                self._check_claim(member.doc, task.doc, incarnation)
                claims = claims_of(task.doc) + 1
                token = message_id(task_id, f"claim-{claims}")  # stable, like every id (DESIGN rule 4)
                if broken("claim_token_per_member"):
                    token = message_id(task_id, f"claim-{member_id}")
                claimed = {
                    **task.doc,
                    "status": "claimed",
                    "owner_id": member_id,
                    "owner_incarnation": member.doc["incarnation"],
                    "claim_token": token,
                    "history": [*task.doc["history"], self.h.event(member_id, "claimed")],
                }
                try:
                    self.h.storage.update(
                        "task.claim/task", "task", task_id, claimed, task.version, self._guard(member)
                    )
                except VersionConflict:
                    continue  # something changed since the read: decide again on fresh records
                self.h.set_member_task("task.claim/member", member_id, task_id)
                return token
            raise ClaimRefused(member_id, "the records kept changing under the claim; try again")

    def _check_claim(self, member: Document, task: Document, incarnation: int | None) -> None:
        name = member["member_id"]
        if incarnation is not None and incarnation != member["incarnation"]:
            raise StaleMember(name, incarnation, member["incarnation"])
        if not broken("claim_while_draining"):
            if member["status"] != "running":
                raise ClaimRefused(name, f"it is {member['status']}, not running")
            if not member["accepting_new_tasks"]:
                raise ClaimRefused(name, "it is not accepting new tasks")
        if member["current_task_id"] is not None:
            raise ClaimRefused(name, f"it already holds task {member['current_task_id']}; finish or release it first")
        targeted = self._active_shutdowns(member)
        if targeted and not broken("claim_ignores_shutdown_request"):
            raise ClaimRefused(name, f"shutdown request {targeted[0]} targets it")
        mine = (task["status"], task["owner_id"], task["owner_incarnation"]) == ("claimed", name, member["incarnation"])
        if mine and not broken("own_claim_refused_as_taken"):  # STO-4: its own claim, its member write to come
            raise ClaimRefused(name, f"it already holds task {task['task_id']}; finish or release it first")
        if task["status"] != "pending":
            raise TaskTaken(task["task_id"], task["status"], task["owner_id"] if task["status"] != "pending" else None)
        spec.ensure_transition("task", task["status"], "claimed")

    def _active_shutdowns(self, member: Document) -> list[str]:
        return [
            row.key
            for row in self.h.storage.scan_status("shutdown_request", _in_force())  # not the history
            if row.doc["status"] in _in_force()
            and row.doc["target_id"] == member["member_id"]
            and (row.doc["target_incarnation"] == member["incarnation"] or broken("claim_fenced_by_old_request"))
        ]

    def _guard(self, member: Stored) -> Guard:
        unchanged = () if broken("claim_while_draining") else (("member", member.key, member.version),)
        fields = (("target_id", member.key), ("target_incarnation", member.doc["incarnation"]))
        none_match = () if broken("claim_ignores_shutdown_request") else (("shutdown_request", fields, _in_force()),)
        return Guard(unchanged=unchanged, none_match=none_match)

    # ---- TSK-1: the holder's operations ------------------------------------------------------
    def held(self, member: Document, task_id: str | None) -> Stored | None:
        """The task's row if ``member`` (this incarnation) holds its claim, else None."""
        stored = None if task_id is None else self.h.storage.read("task", task_id)
        return stored if stored is not None and self._is_holder(member, stored.doc) else None

    @staticmethod
    def _is_holder(member: Document, task: Document) -> bool:
        return bool(
            task["status"] == "claimed"
            and task["owner_id"] == member["member_id"]
            and task["owner_incarnation"] == member["incarnation"]
        )

    def holder(
        self, member_id: str, task_id: str, token: str, incarnation: int | None = None
    ) -> tuple[Document, Stored]:
        """The member and task if ``member_id`` holds the current claim ``token``; else a refusal."""
        member, task = self.h.member(member_id), self.h.task_row(task_id)
        if incarnation is not None and incarnation != member["incarnation"]:
            raise StaleMember(member_id, incarnation, member["incarnation"])
        if task.doc["claim_token"] != token and not broken("stale_claim_token_accepted"):
            raise NotClaimHolder(task_id, member_id, "the claim token is not the current one")
        if not self._is_holder(member, task.doc):
            raise NotClaimHolder(
                task_id, member_id, f"the task is {task.doc['status']}, held by {task.doc['owner_id'] or 'nobody'}"
            )
        return member, task

    def checkpoint(
        self, member_id: str, task_id: str, token: str, state: Any, incarnation: int | None = None
    ) -> Document:
        """TSK-2: save serialisable business state for the task, atomically, as its holder."""
        with self.h.assignment_lock:
            _, task = self.holder(member_id, task_id, token, incarnation)
            data = plain_json(task_id, state)
            previous = task.doc["checkpoint"] or {}
            checkpoint = {"state": data, "saved_at": self.h.clock.now(), "released": bool(previous.get("released"))}
            history = [*task.doc["history"], self.h.event(member_id, "checkpointed")]
            saved = {**task.doc, "checkpoint": checkpoint, "history": history}
            self.h.storage.update("task.checkpoint/task", "task", task_id, saved, task.version)
            return checkpoint

    def finish(self, member_id: str, task_id: str, outcome: str, token: str, incarnation: int | None = None) -> None:
        """The holder completes or fails its task (TSK-1); never a way out of a drain (SHD-3)."""
        if outcome not in ("completed", "failed"):
            raise TaskNotDue(task_id, "claimed", f"finish it as {outcome!r}: the outcome is completed or failed")
        with self.h.assignment_lock:
            for _ in range(8):
                member, task = self.holder(member_id, task_id, token, incarnation)
                draining_ok = broken("drain_completes_task") and member["status"] == "draining"
                if member["status"] != "running" and not draining_ok:
                    raise MemberBusy(
                        member_id, member["status"], f"finish task {task_id}", "a draining member releases it (SHD-3)"
                    )
                if member["current_task_id"] != task_id:
                    raise NotClaimHolder(task_id, member_id, "it is not the member's current task")
                busy = self.h.jobs.busy(member_id)
                if busy:
                    raise DrainNotReady(member_id, busy, f"finish task {task_id}")
                spec.ensure_transition("task", "claimed", outcome)
                history = [*task.doc["history"], self.h.event(member_id, outcome)]
                done = {**task.doc, "status": outcome, "history": history}
                # STO-4, JOB-1: no job of the member started since its busy jobs were read
                idle = Guard(none_match=(("job", (("owner_id", member_id),), tuple(sorted(BUSY_JOB))),))
                try:
                    guard = None if broken("job_start_unguarded") else idle
                    self.h.storage.update("task.finish/task", "task", task_id, done, task.version, guard)
                except VersionConflict:
                    if broken("version_conflict_escapes"):
                        raise
                    continue  # STO-4: lost to another writer, nothing written: decide again on fresh records
                self.h.set_member_task("task.finish/member", member_id, None)
                return
            raise NotClaimHolder(task_id, member_id, "the task kept changing under the finish; try again")

    # ---- SHD-9: the unit deadline; the Lead's resume and inspect ------------------------------
    def suspend(self, member_id: str, unit_seconds: float) -> str:
        """The held task's unit of work ran past ``unit_seconds``: suspend it, tell the Lead."""
        with self.h.assignment_lock:
            if broken("suspend_loses_raw"):
                return self._suspend(member_id, unit_seconds)
            # STO-4: lost to a release meanwhile, the suspension judges the task as the release left it
            return settle(functools.partial(self._suspend, member_id, unit_seconds))

    def _suspend(self, member_id: str, unit_seconds: float) -> str:
        """One attempt of :meth:`suspend`, from its reads; it can lose only at its first write."""
        member = self.h.member(member_id)
        task_id = member["current_task_id"]
        task = self.h.task_row(task_id) if task_id is not None else None
        if task is None or not self._is_holder(member, task.doc):
            if broken("suspend_refusal_names_stale_task"):
                raise TaskNotDue(str(task_id), "not held", f"suspend it for {member_id}")
            raise TaskNotDue.none_held(member_id, "suspend it (SHD-9)")
        claims = [e["at"] for e in task.doc["history"] if e["event"] == "claimed"]
        claimed_at = claims[0] if broken("unit_deadline_from_first_claim") else max(claims)
        if self.h.clock.now() < claimed_at + unit_seconds:
            raise TaskNotDue(task.key, "claimed", f"suspend it before {claimed_at + unit_seconds}")
        busy = self.h.jobs.busy(member_id)
        if busy:
            raise DrainNotReady(member_id, busy, f"suspend task {task.key}")
        history = [*task.doc["history"], self.h.event("monitor", "suspended")]
        suspended = {**task.doc, "status": "suspended", "history": history}
        self.h.storage.update("task.suspend/task", "task", task.key, suspended, task.version)
        self.h.set_member_task("task.suspend/member", member_id, None)
        notice = self.h.outbox.task_suspended(suspended, claims_of(suspended))
        self.h.outbox.owe("task.suspend/outbox", notice)
        return task.key

    def resume(self, task_id: str) -> None:
        self._lead_move(task_id, "suspended", "pending", "task.resume/task", keep_owner=True)

    def inspect(self, task_id: str, outcome: str) -> None:
        """SHD-7: a task whose member was lost is inspected before it runs again."""
        task = self.h.task_row(task_id).doc
        if outcome not in ("pending", "failed"):  # the refusal states the task's status as read (rule 8)
            raise TaskNotDue(task_id, task["status"], f"inspect it into {outcome!r}: use pending or failed")
        if task["status"] == "needs_inspection" and self.h.member_live(task["owner_id"], task["owner_incarnation"]):
            raise TaskNotDue(task_id, "needs_inspection", f"inspect it while {task['owner_id']} still runs")
        busy = ("running",) if broken("inspect_ignores_stopping_job") else ("running", "cancel_requested")
        running = [
            row.key
            for row in self.h.storage.scan_status("job", ("running", "cancel_requested"))  # not the history
            if row.doc["task_id"] == task_id and row.doc["status"] in busy
        ]
        if task["status"] == "needs_inspection" and running:  # SHD-7: a lapse does not stop its jobs
            raise TaskNotDue(task_id, "needs_inspection", f"inspect it while its job(s) {', '.join(running)} still run")
        self._lead_move(task_id, "needs_inspection", outcome, "task.inspect/task", keep_owner=False)

    def _lead_move(self, task_id: str, source: str, target: str, step: str, keep_owner: bool) -> None:
        """The Lead's one write of a task (resume, inspection), settled (STO-4): a second one at
        once re-reads the task and is refused as a serial order refuses it, never a raw conflict
        (``test_interleave_generated``: ``task.inspect||task.inspect``)."""
        settle(functools.partial(self._lead_move_once, task_id, source, target, step, keep_owner))

    def _lead_move_once(self, task_id: str, source: str, target: str, step: str, keep_owner: bool) -> None:
        with self.h.assignment_lock:
            task = self.h.task_row(task_id)
            if task.doc["status"] != source:
                raise TaskNotDue(task_id, task.doc["status"], f"move it {source} → {target}")
            spec.ensure_transition("task", source, target)
            moved = {
                **task.doc,
                "status": target,
                "history": [*task.doc["history"], self.h.event(self.h.lead_id, target)],
            }
            if not keep_owner:
                moved.update(owner_id=None, owner_incarnation=None, claim_token=None)
            self.h.storage.update(step, "task", task_id, moved, task.version)


def released_by(task: Document, member_id: str) -> bool:
    """SHD-3, TSK-3: ``member_id`` released the task since it last claimed it: its last ``claimed``
    or ``released`` event in the task's history is a ``released`` (the model's ``Member.released``,
    for a member that still names the task). Whatever moved the task since does not matter: another
    member may hold it again, and the release still happened."""
    if broken("cut_release_judged_by_last_move"):
        last = task["history"][-1] if task["history"] else {}
        return bool(last.get("event") == "released" and last.get("actor") == member_id)
    for event in reversed(task["history"]):
        if event.get("actor") == member_id and event.get("event") in ("claimed", "released"):
            return bool(event["event"] == "released")
    return False


def released_task(task: Document, checkpoint: Document, event: Document) -> Document:
    """TSK-3: a released task is pending again, holder and token cleared, keeping its checkpoint
    (marked released) and its history, with the release event appended."""
    return {
        **task,
        "status": "pending",
        "owner_id": None,
        "owner_incarnation": None,
        "claim_token": None,
        "checkpoint": {**checkpoint, "released": True},
        "history": [*task["history"], event],
    }


def plain_json(task_id: str, state: Any) -> Any:
    """TSK-2: the state must be a JSON object of plain data; it is stored as its JSON round trip,
    every string redacted (AUD-3, INV-10: a checkpoint is a store like any other — an outside
    review fed one a secret and it was kept)."""
    if not isinstance(state, dict):
        raise BadCheckpoint(task_id, f"the state is a {type(state).__name__}, not a JSON object")
    try:
        text = json.dumps(state, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise BadCheckpoint(task_id, f"not serialisable ({error})") from None
    loaded = json.loads(text)
    if broken("checkpoint_not_round_tripped"):
        return state  # kept as given: tuples, non-string keys and shared objects included
    if loaded != state:  # (a NaN or an infinity is refused by json.dumps above)
        raise BadCheckpoint(task_id, "it does not survive a JSON round trip (tuples, non-string keys?)")
    return redact_json(loaded)


__all__ = ["TASK_STEPS", "Tasks", "plain_json"]
