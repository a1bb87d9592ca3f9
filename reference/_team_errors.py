"""Typed refusals of the team API: members, tasks, jobs and shutdowns (DESIGN rule 8).

Every one is *definite* — the call changed nothing — and its message names the record and what
to do. :class:`TeamRefusal` is their common base, so a caller can catch them all at once.
"""

from __future__ import annotations

from spec.errors import ProtocolError


class TeamRefusal(ProtocolError):
    """Base of every refusal of a member, task, job or shutdown operation. Definite."""


class BadArguments(TeamRefusal, TypeError):
    """An argument of the wrong shape (e.g. tool arguments that are not a JSON object)."""

    def __init__(self, what: str, expected: str, got: object) -> None:
        super().__init__(f"{what} must be {expected}, not {type(got).__name__}; pass {expected}")


class UnknownMember(TeamRefusal, KeyError):
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        super().__init__(f"no member {member_id!r}; add it first with Harness.add_member")

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownTask(TeamRefusal, KeyError):
    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        super().__init__(f"no task {task_id!r}; add it first with Harness.add_task")

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownRecord(TeamRefusal, KeyError):
    def __init__(self, table: str, key: str, hint: str) -> None:
        self.table, self.key = table, key
        super().__init__(f"no {table} {key!r}; {hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def _names(names: list[str] | str) -> str:
    return names if isinstance(names, str) else ", ".join(names)


class UnknownProfileTool(TeamRefusal):
    def __init__(self, member_id: str, tools: list[str] | str, known: list[str] | str) -> None:
        super().__init__(
            f"member {member_id}: no registered tool is named {_names(tools)} (known: {_names(known) or 'none'});"
            " register the tool with the Harness first, or fix the name"
        )


class TaskTaken(TeamRefusal):
    """The task is not pending (e.g. another member holds its claim)."""

    def __init__(self, task_id: str, status: str, holder: str | None) -> None:
        self.task_id, self.status, self.holder = task_id, status, holder
        held = f" by {holder}" if holder else ""
        super().__init__(f"task {task_id} is {status}{held}, not pending; claim another task or wait for its release")


class ClaimRefused(TeamRefusal):
    """MEM-1: the member may not claim now (not running, not accepting, targeted by a shutdown,
    or already holding a task)."""

    def __init__(self, member_id: str, reason: str) -> None:
        self.member_id, self.reason = member_id, reason
        super().__init__(f"{member_id} may not claim a task: {reason} (MEM-1)")


class NotClaimHolder(TeamRefusal):
    """TSK-1: only the holder of the current claim token (and incarnation) may act on a task."""

    def __init__(self, task_id: str, member_id: str, detail: str) -> None:
        self.task_id, self.member_id = task_id, member_id
        super().__init__(
            f"{member_id} does not hold the current claim of task {task_id} ({detail}); "
            "re-read the task and claim it again if it is pending (TSK-1)"
        )


class StaleMember(TeamRefusal):
    """XPR-1: the call was made for an older incarnation of the member."""

    def __init__(self, member_id: str, made_for: int, current: int) -> None:
        super().__init__(
            f"{member_id}: call made for incarnation {made_for}, the member is now incarnation {current}; "
            "a stale process must stop (XPR-1)"
        )


class MemberBusy(TeamRefusal):
    """The member's status does not allow the operation (e.g. a draining member completing)."""

    def __init__(self, member_id: str, status: str, what: str, hint: str) -> None:
        self.member_id, self.status = member_id, status
        super().__init__(f"{member_id} is {status}: cannot {what}; {hint}")


class BadCheckpoint(TeamRefusal):
    """TSK-2: a checkpoint holds only JSON-serialisable business state."""

    def __init__(self, task_id: str, reason: str) -> None:
        super().__init__(f"checkpoint of task {task_id} refused: {reason}; pass plain JSON data (TSK-2)")


class TaskNotDue(TeamRefusal):
    def __init__(self, task_id: str, status: str, what: str) -> None:
        super().__init__(f"task {task_id} is {status}: cannot {what}")

    @classmethod
    def none_held(cls, member_id: str, what: str) -> TaskNotDue:
        """The member holds no task (it names none, or names one it no longer holds: released or
        suspended meanwhile, STO-4): one refusal for both, as a serial order gives it."""
        refusal = cls.__new__(cls)
        TeamRefusal.__init__(refusal, f"{member_id} holds no task: cannot {what}")
        return refusal


class NotLead(TeamRefusal):
    """SHD-1: only the Lead may request (or cancel) a shutdown."""

    def __init__(self, actor: str, lead: str, what: str) -> None:
        super().__init__(f"only the Lead ({lead}) may {what}, not {actor} (SHD-1); ask the Lead")


class ShutdownRefused(TeamRefusal):
    def __init__(self, what: str, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{what} refused: {reason}")


class DrainNotReady(TeamRefusal):
    """SHD-3: a drain pass cannot go on yet; it lists the jobs it waits for."""

    def __init__(self, member_id: str, waiting: list[str] | str, what: str) -> None:
        self.waiting = waiting
        super().__init__(
            f"{member_id} cannot {what} yet: jobs {_names(waiting)} still run (a cancel request is not a "
            "stopped job, SHD-3); run the drain pass again after they exit"
        )


class JobRefused(TeamRefusal):
    def __init__(self, job_id: str, reason: str) -> None:
        super().__init__(f"job {job_id}: {reason}")


class ProcessesSurvive(TeamRefusal):
    def __init__(self, member_id: str, pids: list[int]) -> None:
        self.pids = pids
        super().__init__(
            f"inspection of {member_id} refused: processes {', '.join(map(str, pids))} of it or its jobs outlived "
            "SIGKILL (SHD-7); stop them (e.g. a process in uninterruptible sleep), then inspect again"
        )


class MessageNotPending(TeamRefusal):
    def __init__(self, message_id: str, status: str) -> None:
        super().__init__(f"message {message_id} is {status}, not pending: nothing to handle (MSG-3)")


__all__ = [
    "BadArguments",
    "BadCheckpoint",
    "ClaimRefused",
    "DrainNotReady",
    "JobRefused",
    "MemberBusy",
    "MessageNotPending",
    "NotClaimHolder",
    "NotLead",
    "ProcessesSurvive",
    "ShutdownRefused",
    "StaleMember",
    "TaskNotDue",
    "TaskTaken",
    "TeamRefusal",
    "UnknownMember",
    "UnknownProfileTool",
    "UnknownRecord",
    "UnknownTask",
]
