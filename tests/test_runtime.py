"""Safe points and the step loop (MEM-2, MEM-3, SHD-8, SHD-9), in one process over each backend."""

from __future__ import annotations

from typing import Any

import pytest

from reference import Harness, ManualClock, Storage, UnknownTool
from reference._runtime import (
    DrainRequested,
    MemberCannotContinue,
    SafePoints,
    ScriptedModel,
    ShutdownEvent,
    ShutdownSignalled,
    StepRunner,
    ToolCall,
    Turn,
    UnitDeadlineExceeded,
    ensure_member_can_continue,
)


def _set_member(storage: Storage, member_id: str, **changes: Any) -> None:
    stored = storage.read("member", member_id)
    assert stored is not None
    storage.update("test/member", "member", member_id, {**stored.doc, **changes}, stored.version)


class Run:
    """One member m0 and a step runner whose tools record what ran."""

    def __init__(self, storage: Storage, turns: list[Turn]) -> None:
        self.clock = ManualClock(100.0)
        self.harness = Harness(storage, self.clock)
        self.harness.add_member("m0", [])
        self.storage = storage
        self.ran: list[str] = []
        self.checkpoints: list[dict[str, Any]] = []
        self.points = SafePoints(storage, self.clock, "m0", 1, task_id="t0", unit_deadline=110.0)
        self.runner = StepRunner(
            ScriptedModel(turns),
            {"edit": self._tool("edit"), "test": self._tool("test")},
            self.points,
            self.checkpoints.append,
        )
        self.hooks: dict[str, Any] = {}

    def _tool(self, name: str) -> Any:
        def run(arguments: Any) -> dict[str, Any]:
            self.ran.append(name)
            hook = self.hooks.get(name)
            if hook:
                hook()
            return {"tool": name, **arguments}

        return run


TWO_TOOLS = [Turn((ToolCall("edit", {"file": "a"}), ToolCall("test", {}))), Turn(done=True)]


@pytest.mark.clause("MEM-2")
def test_every_step_checks_before_and_after_the_model_and_around_each_tool(storage: Storage) -> None:
    """The step passes its safe points in order, and checkpoints after each tool. Clause: MEM-2"""
    run = Run(storage, TWO_TOOLS)
    assert run.runner.step() is False
    assert run.points.passed == [
        "before_model",
        "after_model",
        "before_tool",
        "after_tool",
        "before_tool",
        "after_tool",
    ]
    assert run.ran == ["edit", "test"]
    assert [c["calls_done"] for c in run.checkpoints] == [1, 2, 0]  # one per tool, then the step
    assert run.checkpoints[-1]["step"] == 1
    assert run.runner.step() is True


@pytest.mark.clause("MEM-3", "MEM-2")
def test_draining_raises_drain_requested_at_the_next_safe_point_not_inside_a_tool(storage: Storage) -> None:
    """A drain that begins during a tool lets the tool finish; the next safe point raises
    DrainRequested, the finished tool is checkpointed and the next one does not run. Clause: MEM-3"""
    run = Run(storage, TWO_TOOLS)
    run.hooks["edit"] = lambda: _set_member(storage, "m0", status="draining", accepting_new_tasks=False)
    with pytest.raises(DrainRequested) as caught:
        run.runner.step()
    assert caught.value.where == "after_tool"
    assert run.ran == ["edit"]
    assert run.checkpoints[-1]["calls_done"] == 1


@pytest.mark.clause("MEM-3")
@pytest.mark.parametrize("status", ["unhealthy", "stopped"])
def test_other_statuses_stop_the_step_with_an_error(storage: Storage, status: str) -> None:
    """Not running and not draining: MemberCannotContinue before the model is even called. Clause: MEM-3"""
    run = Run(storage, TWO_TOOLS)
    _set_member(storage, "m0", status="draining")
    _set_member(storage, "m0", status=status)
    with pytest.raises(MemberCannotContinue) as caught:
        run.runner.step()
    assert caught.value.status == status and caught.value.where == "before_model"
    assert run.ran == [] and run.checkpoints == []


@pytest.mark.clause("MEM-3", "XPR-1")
def test_a_process_of_an_older_incarnation_cannot_continue(storage: Storage) -> None:
    """A restarted member (new incarnation) stops the old process at its next safe point. Clause: MEM-3"""
    run = Run(storage, TWO_TOOLS)
    _set_member(storage, "m0", incarnation=2)
    with pytest.raises(MemberCannotContinue, match="incarnation 2, not 1"):
        ensure_member_can_continue(storage, "m0", 1, "before_model")
    ensure_member_can_continue(storage, "m0", 2, "before_model")
    with pytest.raises(MemberCannotContinue):
        run.runner.step()


@pytest.mark.clause("MEM-3")
def test_an_unknown_member_cannot_continue(storage: Storage) -> None:
    with pytest.raises(MemberCannotContinue, match="no member record"):
        ensure_member_can_continue(storage, "ghost", 1, "before_model")


@pytest.mark.clause("SHD-8", "MEM-2")
def test_a_signal_is_read_at_the_next_safe_point(storage: Storage) -> None:
    """The shutdown event a signal handler sets stops the step at the following safe point. Clause: SHD-8"""
    run = Run(storage, TWO_TOOLS)
    event = ShutdownEvent()
    run.points.shutdown = event
    run.hooks["edit"] = lambda: event.set("SIGTERM")
    with pytest.raises(ShutdownSignalled) as caught:
        run.runner.step()
    assert (caught.value.signal_name, caught.value.where) == ("SIGTERM", "after_tool")
    assert run.ran == ["edit"]


@pytest.mark.clause("SHD-9")
def test_the_unit_deadline_stops_the_step(storage: Storage) -> None:
    """Past the hard deadline of its unit the step stops at the next safe point. Clause: SHD-9"""
    run = Run(storage, TWO_TOOLS)
    run.hooks["edit"] = lambda: run.clock.advance(10.5)
    with pytest.raises(UnitDeadlineExceeded) as caught:
        run.runner.step()
    assert caught.value.task_id == "t0" and caught.value.where == "after_tool"


@pytest.mark.clause("SHD-9")
def test_at_the_deadline_itself_the_step_goes_on(storage: Storage) -> None:
    """The deadline is inclusive: only a later time stops the unit. Clause: SHD-9"""
    run = Run(storage, TWO_TOOLS)
    run.hooks["edit"] = lambda: run.clock.advance(10.0)
    assert run.runner.step() is False
    assert run.ran == ["edit", "test"]


@pytest.mark.clause("MEM-2", "TSK-3")
def test_a_resumed_step_does_not_repeat_the_tool_calls_it_checkpointed(storage: Storage) -> None:
    """Resuming from the checkpoint taken at a drain skips the calls already made. Clause: MEM-2"""
    run = Run(storage, TWO_TOOLS)
    run.hooks["edit"] = lambda: _set_member(storage, "m0", status="draining")
    with pytest.raises(DrainRequested):
        run.runner.step()
    saved = run.checkpoints[-1]
    _set_member(storage, "m0", status="stopped")
    _set_member(storage, "m0", status="running", incarnation=2)
    run.ran.clear()
    run.hooks.clear()
    points = SafePoints(storage, run.clock, "m0", 2)
    resumed = StepRunner(run.runner.model, run.runner.tools, points, run.checkpoints.append, dict(saved))
    resumed.run()
    assert run.ran == ["test"]
    assert [r["tool"] for r in resumed.state["results"]] == ["edit", "test"]


@pytest.mark.clause("MEM-2")
def test_a_tool_the_member_lacks_is_a_typed_error_and_runs_nothing(storage: Storage) -> None:
    """The model asks for a tool the member does not have: UnknownTool, definite. Clause: MEM-2"""
    run = Run(storage, [Turn((ToolCall("edit", {}), ToolCall("rm -rf", {})))])
    with pytest.raises(UnknownTool, match="rm -rf") as caught:
        run.runner.step()
    assert caught.value.definite and run.ran == ["edit"]
