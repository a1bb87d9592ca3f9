"""Member lifecycle: heartbeat, lapse (last will), inspection, restart, retirement (SHD-7,
SHD-10, XPR-1).

Write steps, in order (the model's names, ``spec.model.OPERATIONS``):

- lapse:   ``member.lapse/member`` (→ unhealthy) → ``member.lapse/task`` (claims flagged
           ``needs_inspection``) → ``member.lapse/outbox`` (one ``member_lost``, stable id)
- inspect: ``member.inspect/task`` → ``member.inspect/requests`` (XPR-2 with reason ``crashed``)
           → ``member.inspect/record`` (a release cut short, or in flight, noted on the request,
           SHD-3) → ``member.inspect/member`` (→ stopped) → ``member.inspect/shutdown`` (a shutdown it
           drained for completes, its ``shutdown_ack`` owed; the completion logged under
           ``member.inspect/audit``)
- restart: ``member.restart/member`` (a new incarnation, XPR-1); retire: ``member.retire/member``
- heartbeat (the model abstracts it): ``member.heartbeat/member``

A clean exit (a finished drain, :mod:`reference._shutdown`) owes no ``member_lost``: only a
lapse or a forced termination does, once per incarnation (the id is the incarnation's).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import spec

from ._mutants import broken
from ._storage import Document, Stored, settle
from ._team_errors import MemberBusy

if TYPE_CHECKING:
    from ._harness import Harness

MEMBER_STEPS = (
    "member.lapse/member",
    "member.lapse/task",
    "member.lapse/outbox",
    "member.inspect/task",
    "member.inspect/requests",
    "member.inspect/record",
    "member.inspect/member",
    "member.inspect/shutdown",
    "member.inspect/audit",
    "member.restart/member",
    "member.retire/member",
    "member.heartbeat/member",
)


class Members:
    def __init__(self, harness: Harness) -> None:
        self.h = harness

    def heartbeat(self, member_id: str, incarnation: int) -> None:
        """The member says it is alive (SHD-10); a stale incarnation's beat is refused (XPR-1). Its
        one write lost to another (its own finish, a lapse) is judged again from a fresh read (STO-4)."""

        def beat() -> None:
            stored = self.h.member_row(member_id)
            self.h.fence(stored.doc, incarnation)
            doc = {**stored.doc, "last_heartbeat_at": self.h.clock.now()}
            self.h.storage.update("member.heartbeat/member", "member", member_id, doc, stored.version)

        settle(beat)

    def lapsed(self, max_age: float) -> list[str]:
        """Running or draining members whose last heartbeat (or, before the first, their
        registration) is older than ``max_age`` seconds (SHD-10)."""
        now = self.h.clock.now()
        return [
            row.key
            for row in self.h.storage.scan("member")
            if row.doc["status"] in ("running", "draining")
            and row.doc["last_heartbeat_at"] is not None
            and now - row.doc["last_heartbeat_at"] > max_age
        ]

    def lapse(self, member_id: str, max_age: float | None = None) -> None:
        """SHD-10, the last will: the team is told once, on the member's behalf; claims flagged.

        With ``max_age`` (the watcher's, :func:`reference._lead.watch_lapses`) the lapse is judged
        again on the read its write is compared against: a member that beat, or was restarted, since
        :meth:`lapsed` saw it is refused (``MemberBusy``), never declared lost while it lives (STO-4;
        an outside review found a beat between the two ignored). Without, the caller has decided."""
        now = self.h.clock.now()

        def judge_and_write() -> None:
            stored = self.h.member_row(member_id)
            doc = stored.doc
            if doc["status"] not in ("running", "draining"):
                raise MemberBusy(member_id, doc["status"], "lapse", "only a live member's heartbeat lapses")
            beat = doc["last_heartbeat_at"]
            fresh = max_age is not None and (beat is None or now - beat <= max_age)
            if fresh and not broken("lapse_ignores_fresh_beat"):
                raise MemberBusy(member_id, doc["status"], "lapse", f"it beat at {beat}, within {max_age} s")
            spec.ensure_transition("member", doc["status"], "unhealthy")
            lost = {**doc, "status": "unhealthy", "accepting_new_tasks": False}
            self.h.storage.update("member.lapse/member", "member", member_id, lost, stored.version)

        with self.h.assignment_lock:
            settle(judge_and_write)
            flagged = self.flag_tasks("member.lapse/task", member_id)
            self.owe_lost("member.lapse/outbox", self.h.member(member_id), flagged)
            if broken("lapse_twice"):  # mutant: a second notice under a fresh id
                again = self.h.outbox.member_lost(self.h.member(member_id), flagged)
                again = {**again, "message_id": spec.ids.message_id(again["correlation_id"], "lost-again")}
                self.h.outbox.owe("member.lapse/outbox", again)

    def owe_lost(self, step: str, member: Document, flagged: list[str]) -> None:
        self.h.outbox.owe(step, self.h.outbox.member_lost(member, flagged))

    def flag_tasks(self, step: str, member_id: str) -> list[str]:
        """Every task the member claims under its incarnation → ``needs_inspection`` (SHD-7)."""
        member = self.h.member(member_id)
        flagged = []
        with self.h.step(step):
            for row in self.h.storage.scan_status("task", ("claimed",)):  # the open ones, not the history
                if broken("flag_loses_raw"):
                    self._flag(step, member, row)
                else:  # STO-4: lost to a release meanwhile, the task is judged as the release left it
                    settle(functools.partial(self._flag, step, member, row.key))
        for row in self.h.storage.scan_status("task", ("needs_inspection",)):
            if row.doc["status"] == "needs_inspection" and row.doc["owner_id"] == member_id:
                flagged.append(row.key)
        return flagged

    def _flag(self, step: str, member: Document, row: Stored | str) -> None:
        """One task → ``needs_inspection`` if its member still claims it under its incarnation
        (``row``: the row as scanned, or its key, read afresh)."""
        if isinstance(row, str):
            read = self.h.storage.read("task", row)
            if read is None:
                return
            row = read
        task = row.doc
        mine = task["owner_id"] == member["member_id"] and task["owner_incarnation"] == member["incarnation"]
        if task["status"] == "claimed" and mine:
            history = [*task["history"], self.h.event(self.h.lead_id, "needs_inspection")]
            moved = {**task, "status": "needs_inspection", "history": history}
            self.h.storage.update(step, "task", row.key, moved, row.version)

    def inspect(self, member_id: str) -> None:
        """SHD-7: an unhealthy member, inspected, is stopped; what it drained for completes. Its
        member write is a compare-and-set on the row it judged, and the whole is settled (STO-4):
        an inspection that loses there to another (the Lead's, sent twice at once) runs again —
        its earlier writes find their work done — and is refused as the member now stopped, as a
        serial order refuses the second (``test_interleave_generated``)."""
        settle(functools.partial(self._inspect, member_id))

    def _inspect(self, member_id: str) -> None:
        with self.h.assignment_lock:
            judged = self.h.member_row(member_id)
            member = judged.doc
            if member["status"] != "unhealthy":
                raise MemberBusy(member_id, member["status"], "inspect it", "only an unhealthy member is inspected")
            self.flag_tasks("member.inspect/task", member_id)
            self.h.cancel_own_requests("member.inspect/requests", member_id, "crashed")
            with self.h.step("member.inspect/record"):
                if not broken("inspection_clears_release_unnoted"):  # a release cut short, or in flight (SHD-3)
                    self.h.shutdowns.note_cut_release("member.inspect/record", member)
            if broken("inspection_member_write_rereads"):
                self.h.set_member(
                    "member.inspect/member", member_id, "stopped", accepting_new_tasks=False, current_task_id=None
                )
            else:
                spec.ensure_transition("member", member["status"], "stopped")
                stopped = {**member, "status": "stopped", "accepting_new_tasks": False, "current_task_id": None}
                self.h.storage.update("member.inspect/member", "member", member_id, stopped, judged.version)
            with self.h.step("member.inspect/shutdown"):
                # Every drain of this incarnation, not only the one the member record names: a crash
                # between begin_drain's record and member writes leaves one it never noted (INV-12).
                for sd in self.h.storage.scan_status("shutdown_request", ("draining", "timed_out")):
                    mine = sd.doc["target_id"] == member_id and sd.doc["target_incarnation"] == member["incarnation"]
                    if broken("inspection_ends_noted_drain_only"):
                        mine = sd.key == member["shutdown_request_id"]
                    if mine and sd.doc["status"] in ("draining", "timed_out"):
                        self.h.shutdowns.complete("member.inspect/shutdown", sd.key, ("draining", "timed_out"))

    def restart(self, member_id: str) -> int:
        """A new incarnation of a stopped member (XPR-1); returns it. Its jobs must have settled.
        One compare-and-set against the row it judged, settled (STO-4): of two restarts at once
        one starts the new incarnation and the other is refused as the member now running — never
        both told they started it (``test_interleave_generated``: a re-read that kept the first
        judgement let both through)."""
        return settle(functools.partial(self._restart, member_id))

    def _restart(self, member_id: str) -> int:
        with self.h.assignment_lock:
            row = self.h.member_row(member_id)
            member = row.doc
            self._stopped_and_settled(member, "restart it")
            spec.ensure_transition("member", member["status"], "running")
            started = {
                **member,
                "status": "running",
                "incarnation": member["incarnation"] + 1,
                "accepting_new_tasks": True,
                "current_task_id": None,
                "shutdown_request_id": None,
                # the new incarnation's registration is its first beat, not the old one's last (SHD-10)
                "last_heartbeat_at": None if broken("first_beat_never_registered") else self.h.clock.now(),
            }
            self.h.storage.update("member.restart/member", "member", member_id, started, row.version)
            return int(member["incarnation"]) + 1

    def retire(self, member_id: str) -> None:
        """A stopped member, its jobs settled, retires for good; one settled compare-and-set
        against the row it judged, as :meth:`restart`."""
        settle(functools.partial(self._retire, member_id))

    def _retire(self, member_id: str) -> None:
        with self.h.assignment_lock:
            row = self.h.member_row(member_id)
            self._stopped_and_settled(row.doc, "retire it")
            spec.ensure_transition("member", row.doc["status"], "retired")
            retired = {**row.doc, "status": "retired"}
            self.h.storage.update("member.retire/member", "member", member_id, retired, row.version)

    def _stopped_and_settled(self, member: Document, what: str) -> None:
        if member["status"] != "stopped":
            raise MemberBusy(member["member_id"], member["status"], what, "stop it first (drain or inspection)")
        busy = self.h.jobs.busy(member["member_id"])
        if broken("restart_spares_stopping_jobs") and what == "restart it":
            busy = [j.key for j in self.h.jobs.busy_rows(member["member_id"]) if j.doc["status"] == "running"]
        if busy:
            raise MemberBusy(member["member_id"], "stopped", what, f"its jobs {', '.join(busy)} still run")


__all__ = ["MEMBER_STEPS", "Members"]
