"""The model's immutable state: small frozen records, indices instead of names.

Members and tasks are referred to by index (``-1`` = none) so that symmetry reduction can permute
them. An empty ``status`` means "this slot's record does not exist yet". Records are shared
between states when unchanged, which keeps memory low and lets the explorer find what an action
changed by identity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

NONE = -1


@dataclass(frozen=True, slots=True, order=True)
class Member:
    status: str = "running"
    incarnation: int = 1
    accepting: bool = True
    shutdown: int = NONE  # shutdown slot this member drains for (shutdown_request_id)
    task: int = NONE  # current task (current_task_id)
    profile_version: int = 1
    has_tool: bool = True  # the protected tool is in the member's capability profile
    released: bool = False
    """Its drain's release wrote the task it names back to ``pending`` (SHD-3, TSK-3), and it has
    named no other task since: the reference's task history holding this member's ``released``
    event after its last ``claimed`` one. Every write of ``task`` resets it. Not in the snapshot
    (the model keeps no history); an inspection or a reconciliation reads it to end a release cut
    short (SHD-3, SHD-7), whatever moved the task since (another member may hold it by then)."""
    profile_edits: int = 0
    """How many times its capability profile was changed: what the profile says, of which
    ``profile_version`` is the number (XPR-4), kept apart from it so that a change that forgets to
    raise the version shows as a profile whose tools changed under the same version (the snapshot
    names each change's other tool ``notes-N``)."""


@dataclass(frozen=True, slots=True, order=True)
class Task:
    status: str = "pending"
    owner: int = NONE
    owner_incarnation: int = 0
    claims: int = 0  # how many claims so far: the claim token is derived from it
    checkpoint: bool = False
    claimed_at: int = 0  # kept only when a unit deadline (SHD-9) can pass within the clock bound


@dataclass(frozen=True, slots=True, order=True)
class Job:
    """One background job slot per member (MEM-4); ``status == ""`` until started."""

    status: str = ""
    task: int = NONE
    cancellable: bool = True


@dataclass(frozen=True, slots=True, order=True)
class Approval:
    status: str = ""
    requester: int = NONE
    incarnation: int = 0
    task: int = NONE
    profile_version: int = 0
    deadline: int = 0
    consumed_at: int = NONE
    reason: str = ""
    risk_summary: str = ""


@dataclass(frozen=True, slots=True, order=True)
class Execution:
    """Tool execution keyed by the approval's id (idempotency key), plus the world's view."""

    status: str = ""
    requester: int = NONE
    task: int = NONE
    changed_arguments: bool = False
    profile_version: int = 0
    attempts: int = 0  # write-ahead count of calls issued under the key
    world_calls: int = 0  # calls the external world actually received (ghost, not a store)


@dataclass(frozen=True, slots=True, order=True)
class Plan:
    status: str = ""
    requester: int = NONE
    incarnation: int = 0
    task: int = NONE
    deadline: int = 0
    delivered: bool = False  # plan_decision delivered to the requester (PLN-6)
    retractions: int = 0
    approved_by: str = ""  # actor of the last approval: "lead", or a mutant's "monitor"
    reason: str = ""


@dataclass(frozen=True, slots=True, order=True)
class PlanRun:
    """The plan's execution record (PlanExecution), keyed by the plan id."""

    status: str = ""
    steps: tuple[str, ...] = ()
    deadline: int = 0
    starts: int = 0  # times an execution was started under this plan id
    cursor: int = 0  # index of the next approved step


@dataclass(frozen=True, slots=True, order=True)
class Shutdown:
    status: str = ""
    target: int = NONE
    target_incarnation: int = 0
    deadline: int = 0
    released: int = NONE
    waited: tuple[int, ...] = ()  # members whose jobs the drain waited for (job slot = member)
    reason: str = ""


MessageKey = tuple[str, int, int]
"""(message_type, ref, phase): ref is a slot (or member/task index), phase tells repeats apart."""


@dataclass(frozen=True, slots=True, order=True)
class Message:
    key: MessageKey
    status: str = "pending"
    copy: int = 0  # > 0 only for a mutant that gives a retry a fresh message id
    info: tuple[tuple[str, object], ...] = ()  # body facts fixed when the message was written


@dataclass(frozen=True, slots=True, order=True)
class Owed:
    key: MessageKey
    status: str = "owed"
    info: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True, slots=True, order=True)
class State:
    clock: int
    members: tuple[Member, ...]
    tasks: tuple[Task, ...]
    jobs: tuple[Job, ...]
    approvals: tuple[Approval, ...]
    executions: tuple[Execution, ...]
    plans: tuple[Plan, ...]
    runs: tuple[PlanRun, ...]
    shutdowns: tuple[Shutdown, ...]
    bus: tuple[Message, ...]
    outbox: tuple[Owed, ...]
    monitor_done: bool = True
    crashed: bool = False
    profile_changes: int = 0


R = TypeVar("R")
T = TypeVar("T")

_UNSET = object()


def _replacer(cls: type) -> Callable[..., Any]:
    """``dataclasses.replace`` for one frozen, slotted record class, generated from its fields.

    It builds the copy slot by slot, without the generic per-call field checks of
    ``dataclasses.replace`` (about three times faster; the model replaces a record in every write
    step). An unknown field name is a ``TypeError``, as there.
    """
    names = [f.name for f in dataclasses.fields(cls)]
    assert all(f.init for f in dataclasses.fields(cls)) and set(names) == set(getattr(cls, "__slots__", ())), cls
    lines = [f"def replace(_record, /, *, {', '.join(f'{n}=_UNSET' for n in names)}):", "    new = _new(_cls)"]
    lines += [f"    _set(new, {n!r}, _record.{n} if {n} is _UNSET else {n})" for n in names]
    lines.append("    return new")
    namespace: dict[str, Any] = {"_UNSET": _UNSET, "_new": object.__new__, "_cls": cls, "_set": object.__setattr__}
    exec("\n".join(lines), namespace)
    return namespace["replace"]  # type: ignore[no-any-return]


_RECORDS = (Member, Task, Job, Approval, Execution, Plan, PlanRun, Shutdown, Message, Owed, State)
_REPLACERS: dict[type, Callable[..., Any]] = {cls: _replacer(cls) for cls in _RECORDS}


def replace(record: T, /, **changes: Any) -> T:
    """A copy of ``record`` with ``changes``: fast for the model's records, else ``dataclasses.replace``."""
    fast = _REPLACERS.get(type(record))
    if fast is None:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    return fast(record, **changes)  # type: ignore[no-any-return]


def put(items: tuple[R, ...], index: int, item: R) -> tuple[R, ...]:
    """A copy of ``items`` with ``items[index]`` replaced."""
    return (*items[:index], item, *items[index + 1 :])


__all__ = [
    "NONE",
    "Approval",
    "Execution",
    "Job",
    "Member",
    "Message",
    "MessageKey",
    "Owed",
    "Plan",
    "PlanRun",
    "Shutdown",
    "State",
    "Task",
    "put",
    "replace",
]
