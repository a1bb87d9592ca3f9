"""Background jobs (MEM-4, JOB-1, JOB-2): the job *records* and their operations.

The record is the truth; the process behind it is reached through a :class:`JobRunner`, the one
interface a runtime implements to back jobs with real work:

- ``start(job_id, command)`` — begin running ``command`` (called after the record is persisted);
- ``signal_cancel(job_id)`` — ask the job to stop (a handleable signal, e.g. SIGTERM). Called
  only after ``cancel_requested`` is persisted (JOB-1), never for a non-cancellable job (JOB-2);
- ``kill(job_id)`` — the last rung of SHD-7's ladder (e.g. SIGKILL);
- ``poll(job_id)`` — the exit code once the job has exited, else ``None``.

:class:`InProcessJobRunner` is the trivial implementation for tests: nothing runs; a test decides
when a job exits (:meth:`InProcessJobRunner.finish`) and reads which jobs were signalled.
A real-subprocess runner implements the same four methods.

Write steps (the model's names): ``job.start/job`` (running); ``job.exit/job`` (the job's own
exit: ``succeeded``, ``failed``, or ``cancelled`` after a cancel request). A cancel request is
written by a drain pass (``shutdown.drain_jobs/jobs``, :mod:`reference._shutdown`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Protocol

import spec
from spec.redaction import redact
from spec.safety import BUSY_JOB

from ._errors import AlreadyExists
from ._mutants import broken
from ._storage import Document, Guard, Storage, Stored, settle
from ._team_errors import JobRefused, UnknownRecord

if TYPE_CHECKING:
    from ._harness import Harness

TABLE = "job"
BUSY = tuple(sorted(BUSY_JOB))  # one definition (spec.safety), as a tuple for the stores
CANCEL_EXIT = -15
"""The exit code of a job that stopped because it was asked to (SIGTERM)."""


class JobRunner(Protocol):
    """What backs a job record with work: a thread, a subprocess, a remote executor."""

    def start(self, job_id: str, command: str) -> None: ...

    def signal_cancel(self, job_id: str) -> None: ...

    def kill(self, job_id: str) -> None: ...

    def poll(self, job_id: str) -> int | None: ...


class EffectBeforeRecord(AssertionError):
    """An effect outside the stores came before the record that owes it (MEM-2, JOB-1): a crash
    between the two would leave a job started or signalled that no record says was."""

    def __init__(self, effect: str, job_id: str, wanted: str, found: str | None) -> None:
        self.effect, self.job_id, self.wanted, self.found = effect, job_id, wanted, found
        super().__init__(
            f"{effect} of job {job_id} before its record says {wanted} (it says {found or 'nothing'}): "
            "persist the record first (MEM-2, JOB-1)"
        )


class InProcessJobRunner:
    """A runner where nothing runs: tests say when a job exits and see what was signalled.

    Bound to its harness's store (``storage``), it also holds the harness to MEM-2 and JOB-1 on
    every call, wherever it runs (unit, model and crash tests, the conformance driver): a job is
    started only once its record says ``running``, and asked to cancel only once it says
    ``cancel_requested`` — else :class:`EffectBeforeRecord`."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.killed: list[str] = []
        self.exits: dict[str, int] = {}
        self.storage: Storage | None = None

    def _after_record(self, effect: str, job_id: str, wanted: str) -> None:
        if self.storage is None:
            return
        row = self.storage.read(TABLE, job_id)
        found = None if row is None else str(row.doc["status"])
        if found != wanted:
            raise EffectBeforeRecord(effect, job_id, wanted, found)

    def start(self, job_id: str, command: str) -> None:
        self._after_record("the start", job_id, "running")
        self.started.append(job_id)

    def signal_cancel(self, job_id: str) -> None:
        self._after_record("the cancel signal", job_id, "cancel_requested")
        self.cancelled.append(job_id)

    def kill(self, job_id: str) -> None:
        self.killed.append(job_id)
        self.exits.setdefault(job_id, -9)

    def poll(self, job_id: str) -> int | None:
        return self.exits.get(job_id)

    def finish(self, job_id: str, exit_code: int) -> None:
        self.exits[job_id] = exit_code


def outcome_of(status: str, exit_code: int) -> str:
    """JOB-1: only the job's own exit settles it; ``cancelled`` only after a cancel request."""
    if exit_code == 0:
        return "succeeded"
    if status == "cancel_requested" and exit_code < 0:
        return "cancelled"
    return "failed"


class Jobs:
    def __init__(self, harness: Harness, runner: JobRunner) -> None:
        from ._processes import SubprocessJobRunner

        self.h = harness
        self.runner = runner
        if isinstance(runner, InProcessJobRunner):
            runner.storage = harness.storage
        if isinstance(runner, SubprocessJobRunner):  # its processes carry the store's team (TEAM_ENV)
            if runner.team not in (None, harness.storage.team):
                raise ValueError(f"this job runner runs team {runner.team}'s jobs, not {harness.storage.team}'s")
            runner.team = harness.storage.team

    def start(self, member_id: str, job_id: str, command: str, cancellable: bool = True) -> Document:
        """A running member starts a background job for the task it holds (MEM-4). The job's
        insert is guarded by the member's and the task's rows as judged (STO-4): a lapse or the
        task's finish between the two loses it, and it is judged again — refused as after them,
        never a job running for a lapsed member or a finished task (``test_interleave_generated``:
        ``job.start||task.finish`` both succeeded)."""
        doc = settle(functools.partial(self._start, member_id, job_id, command, cancellable))
        self.runner.start(job_id, command)
        return doc

    def _start(self, member_id: str, job_id: str, command: str, cancellable: bool) -> Document:
        with self.h.assignment_lock:
            row = self.h.member_row(member_id)
            member = row.doc
            if member["status"] != "running":
                raise JobRefused(job_id, f"{member_id} is {member['status']}; only a running member starts jobs")
            task_id = member["current_task_id"]
            task = self.h.tasks.held(member, task_id)
            if task is None:
                now = self.h.member(member_id)  # STO-4: lapsed since read, the refusal the member now gives
                if now["status"] != "running" and not broken("job_refusal_reads_member_once"):
                    raise JobRefused(job_id, f"{member_id} is {now['status']}; only a running member starts jobs")
                raise JobRefused(job_id, f"{member_id} holds no task; claim one first")
            doc = {
                "job_id": job_id,
                "status": "running",
                "owner_id": member_id,
                "task_id": task_id,
                "cancellable": cancellable,
                "command": command if broken("job_command_stored_raw") else redact(command),  # INV-10: run as given
                "exit_code": None,
                "version": 0,
            }
            judged = Guard(unchanged=(("member", member_id, row.version), ("task", task.key, task.version)))
            try:
                self.h.storage.insert(
                    "job.start/job", TABLE, job_id, doc, None if broken("job_start_unguarded") else judged
                )
            except AlreadyExists:
                raise JobRefused(job_id, "a job with this id exists; use a new job id") from None
            return doc

    def exited(self, job_id: str, exit_code: int) -> Document:
        """Record the job's own exit (JOB-1). Its one write settled (STO-4): an exit reported twice
        at once (the runner's poll and the member's report) gives the loser the refusal a serial
        order gives, never a raw conflict (``test_interleave_generated``: ``job.exit||job.exit``)."""
        return settle(lambda: self._exited(job_id, exit_code))

    def _exited(self, job_id: str, exit_code: int) -> Document:
        stored = self.require(job_id)
        status = stored.doc["status"]
        if status not in BUSY:
            raise JobRefused(job_id, f"it already ended as {status}")
        target = outcome_of(status, exit_code)
        spec.ensure_transition(TABLE, status, target)
        done = {**stored.doc, "status": target, "exit_code": exit_code}
        self.h.storage.update("job.exit/job", TABLE, job_id, done, stored.version)
        return done

    def poll(self) -> list[str]:
        """Record the exit of every busy job whose process has exited; returns their ids."""
        ended = []
        for row in self.h.storage.scan_status(TABLE, BUSY):  # the busy ones, not the history
            code = self.runner.poll(row.key) if row.doc["status"] in BUSY else None
            if code is not None:
                self.exited(row.key, code)
                ended.append(row.key)
        return ended

    def busy(self, member_id: str) -> list[str]:
        """The ids of the member's jobs still running or asked to cancel."""
        return [row.key for row in self.busy_rows(member_id)]

    def busy_rows(self, member_id: str) -> list[Stored]:
        """The member's jobs still running or asked to cancel, read by status: every caller acts on
        those alone, and the ended ones are history (tests/test_history_cost.py)."""
        history = broken("busy_jobs_read_history")
        rows = self.h.storage.scan(TABLE) if history else self.h.storage.scan_status(TABLE, BUSY)
        return [row for row in rows if row.doc["owner_id"] == member_id and row.doc["status"] in BUSY]

    def require(self, job_id: str) -> Stored:
        stored = self.h.storage.read(TABLE, job_id)
        if stored is None:
            raise UnknownRecord(TABLE, job_id, "start it first with Jobs.start")
        return stored


__all__ = ["CANCEL_EXIT", "EffectBeforeRecord", "InProcessJobRunner", "JobRunner", "Jobs", "outcome_of"]
