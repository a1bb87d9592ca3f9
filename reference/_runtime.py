"""Safe points and the step loop of a member (MEM-2, MEM-3, MEM-4, SHD-8, SHD-9).

A member works on its task in *steps*: one model call, then the tool calls the model asked for.
Nothing ever throws into a running step (MEM-2). Instead the runtime looks at the member's
persisted record, its process's shutdown event and the unit's hard deadline at the safe points
of every step, in this order:

1. before the model call;
2. after the model call;
3. before each tool call;
4. after each tool call, once its result is checkpointed (TSK-2).

A check that fails raises, at that safe point and nowhere else: :class:`DrainRequested` when
the member record says ``draining`` (MEM-3), :class:`MemberCannotContinue` for any other
status that is not ``running`` (or a record of a newer incarnation), :class:`ShutdownSignalled`
when SIGINT/SIGTERM set the process's shutdown event (SHD-8), :class:`UnitDeadlineExceeded`
when the unit ran past its hard deadline (SHD-9). The caller (the member loop) decides what
follows: drain, stop, or suspend the task.

The model is a pluggable callable (:data:`Model`): it gets the task's business state and
returns a :class:`Turn`. :class:`ScriptedModel` is the fake shipped for tests and the demo.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spec.errors import ProtocolError

from ._clock import Clock
from ._errors import UnknownTool
from ._mutants import broken
from ._storage import Storage

SAFE_POINTS = ("before_model", "after_model", "before_tool", "after_tool")
"""The safe points of one step, in the order they come (MEM-2)."""


class DrainRequested(ProtocolError):
    """MEM-3: the member is draining; leave the step and run the drain passes. Definite."""

    def __init__(self, member_id: str, shutdown_request_id: str | None, where: str) -> None:
        self.member_id, self.shutdown_request_id, self.where = member_id, shutdown_request_id, where
        super().__init__(
            f"{member_id} is draining (shutdown {shutdown_request_id}); stopped at safe point {where}: "
            "checkpoint and release the task (SHD-3)"
        )


class MemberCannotContinue(ProtocolError):
    """MEM-3: the member is neither running nor draining (or this process is a stale incarnation)."""

    def __init__(self, member_id: str, status: str, where: str) -> None:
        self.member_id, self.status, self.where = member_id, status, where
        super().__init__(f"{member_id} is {status}; stopped at safe point {where} and must not go on with its task")


class ShutdownSignalled(ProtocolError):
    """SHD-8: the process received SIGINT or SIGTERM; stop new work and save at this safe point."""

    def __init__(self, signal_name: str, where: str) -> None:
        self.signal_name, self.where = signal_name, where
        super().__init__(f"{signal_name} received; stopped at safe point {where} to shut down (SHD-8)")


class UnitDeadlineExceeded(ProtocolError):
    """SHD-9: the unit of work ran past its hard deadline; suspend the task."""

    def __init__(self, task_id: str, deadline: float, now: float, where: str) -> None:
        self.task_id, self.deadline, self.now, self.where = task_id, deadline, now, where
        super().__init__(
            f"task {task_id} passed its unit deadline {deadline:.3f} (now {now:.3f}) at safe point {where}: "
            "suspend it (SHD-9)"
        )


class ShutdownEvent:
    """What a signal handler may do: set a flag (SHD-8). The run loop reads it at safe points."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name = ""

    def set(self, signal_name: str) -> None:
        if not self._event.is_set():
            self.signal_name = signal_name
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_seconds: float) -> bool:
        return self._event.wait(timeout_seconds)


def ensure_member_can_continue(storage: Storage, member_id: str, incarnation: int, where: str = "") -> None:
    """MEM-3 at one safe point: read the member's record; go on only if it is ``running`` for
    this very incarnation."""
    stored = storage.read("member", member_id)
    if stored is None:
        raise MemberCannotContinue(member_id, "unknown (no member record)", where)
    member = stored.doc
    if member["incarnation"] != incarnation:
        raise MemberCannotContinue(member_id, f"incarnation {member['incarnation']}, not {incarnation} (XPR-1)", where)
    if member["status"] == "draining" and not broken("safe_point_ignores_draining"):
        raise DrainRequested(member_id, member["shutdown_request_id"], where)
    if member["status"] not in ("running", "draining"):
        raise MemberCannotContinue(member_id, member["status"], where)


@dataclass
class SafePoints:
    """Every check of one member process at one safe point, and a record of the points passed."""

    storage: Storage
    clock: Clock
    member_id: str
    incarnation: int
    shutdown: ShutdownEvent = field(default_factory=ShutdownEvent)
    task_id: str = ""
    unit_deadline: float | None = None
    passed: list[str] = field(default_factory=list)
    on_check: Callable[[str], None] | None = None
    """Called first at every safe point (the member process heartbeats there)."""

    def check(self, where: str) -> None:
        if self.on_check is not None:
            self.on_check(where)
        if self.shutdown.is_set():
            raise ShutdownSignalled(self.shutdown.signal_name, where)
        ensure_member_can_continue(self.storage, self.member_id, self.incarnation, where)
        now = self.clock.now()
        late = self.unit_deadline is not None and now > self.unit_deadline
        if late and not broken("unit_deadline_ignored"):
            assert self.unit_deadline is not None
            raise UnitDeadlineExceeded(self.task_id, self.unit_deadline, now, where)
        if not (self.passed and self.passed[-1] == where and where.startswith("waiting")):
            self.passed.append(where)  # a long wait is one entry, however often it checks


@dataclass(frozen=True)
class ToolCall:
    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    """What the model answers in one step: tool calls to make, and whether the task is done."""

    calls: tuple[ToolCall, ...] = ()
    done: bool = False


Model = Callable[[Mapping[str, Any]], Turn]
"""The LLM: business state of the task (JSON) in, one :class:`Turn` out."""


class ScriptedModel:
    """A fake LLM: answers the task's ``step``-th turn from a script (the last turn repeats)."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        assert turns, "a script needs at least one turn"
        self.turns = tuple(turns)
        self.calls = 0

    def __call__(self, state: Mapping[str, Any]) -> Turn:
        self.calls += 1
        step = int(state.get("step", 0))
        return self.turns[min(step, len(self.turns) - 1)]

    @classmethod
    def from_json(cls, script: Sequence[Mapping[str, Any]]) -> ScriptedModel:
        """``[{"calls": [{"tool": name, "arguments": {...}}], "done": bool}, ...]``."""
        return cls(
            [
                Turn(
                    tuple(ToolCall(call["tool"], dict(call.get("arguments", {}))) for call in turn.get("calls", ())),
                    bool(turn.get("done", False)),
                )
                for turn in script
            ]
        )


ToolFunction = Callable[[Mapping[str, Any]], Any]
"""A tool as the step runner sees it: JSON arguments in, a JSON result out. A long command is a
tool that starts a background job and waits for its exit at safe points (MEM-4)."""


Checkpointer = Callable[[dict[str, Any]], None]
"""Saves the task's business state as its checkpoint (TSK-2), as the claim's holder."""


FRESH_STATE: dict[str, Any] = {"step": 0, "calls_done": 0, "results": []}
"""The business state of a task nobody has worked on yet."""


@dataclass
class StepRunner:
    """Runs a task's steps with a check at every safe point (MEM-2, MEM-3) and a checkpoint
    after each tool call (TSK-2). The business state is plain JSON: ``step`` (turns finished),
    ``calls_done`` (tool calls made in the current turn) and ``results`` (every tool result so
    far); a released task resumes from it (TSK-3)."""

    model: Model
    tools: Mapping[str, ToolFunction]
    safe_points: SafePoints
    checkpoint: Checkpointer
    state: dict[str, Any] = field(default_factory=lambda: dict(FRESH_STATE))

    def step(self) -> bool:
        """One step; True once the model says the task is done (nothing more to run).

        Tool calls already made in this step (``calls_done``, from a checkpoint taken before a
        drain) are not made again when the step is resumed."""
        check = self.safe_points.check
        check("before_model")
        turn = self.model(dict(self.state))
        check("after_model")
        for call in turn.calls[self.state["calls_done"] :]:
            check("before_tool")
            if call.tool not in self.tools:
                raise UnknownTool(call.tool)  # definite: nothing ran; the model asked for a tool it lacks
            result = self.tools[call.tool](call.arguments)
            self.state = {
                **self.state,
                "calls_done": self.state["calls_done"] + 1,
                "results": [*self.state["results"], {"tool": call.tool, "result": result}],
            }
            self.checkpoint(self.state)
            check("after_tool")
        if turn.done:
            return True
        self.state = {**self.state, "step": self.state["step"] + 1, "calls_done": 0}
        self.checkpoint(self.state)
        return False

    def run(self, max_steps: int = 1000) -> None:
        """Steps until done; every step is bounded, and so is their number."""
        for _ in range(max_steps):
            if self.step():
                return
        raise RuntimeError(f"task {self.safe_points.task_id} not done after {max_steps} steps")


__all__ = [
    "FRESH_STATE",
    "SAFE_POINTS",
    "Checkpointer",
    "DrainRequested",
    "MemberCannotContinue",
    "Model",
    "SafePoints",
    "ScriptedModel",
    "ShutdownEvent",
    "ShutdownSignalled",
    "StepRunner",
    "ToolCall",
    "ToolFunction",
    "Turn",
    "UnitDeadlineExceeded",
    "ensure_member_can_continue",
]
