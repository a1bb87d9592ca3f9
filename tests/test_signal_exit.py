"""A member's own shutdown on a signal (SHD-8), in one process: its write steps, a crash after
each of them, and reconciliation from what the crash left (REC-2), on both backends."""

from __future__ import annotations

from typing import Any

import pytest

import spec.invariants
from reference import (
    CallContext,
    Crash,
    Harness,
    InProcessJobRunner,
    ManualClock,
    RecordingTool,
    SQLiteStorage,
    Storage,
)
from reference._member_process import EXIT_CLEAN, MemberProcess
from reference._runtime import ScriptedModel, ShutdownEvent, ToolCall, Turn
from reference._steps import EXIT_STEPS


class ExitsOnSignal(InProcessJobRunner):
    """A job that exits as soon as it is asked to stop (SIGTERM → exit -15)."""

    def signal_cancel(self, job_id: str) -> None:
        super().signal_cancel(job_id)
        self.finish(job_id, -15)


def member(storage: Storage, cancellable: bool = True) -> tuple[MemberProcess, ExitsOnSignal]:
    runner = ExitsOnSignal()
    clock = ManualClock(100.0)
    harness = Harness(storage, clock, jobs=runner)
    if storage.read("member", "m0") is None:
        harness.add_member("m0", [])
        harness.add_task("t0")
        token = harness.claim("m0", "t0")
        harness.tasks.checkpoint("m0", "t0", token, {"step": 1, "calls_done": 0, "results": []})
        harness.jobs.start("m0", "j1", "sleep 30", cancellable=cancellable)
    process = MemberProcess(harness, "m0", 1, ScriptedModel([Turn(done=True)]), max_wait_seconds=0.3)
    process.shutdown.set("SIGTERM")
    return process, runner


def reopen(storage: Storage) -> Storage:
    """The exit closed the store (its last step); read what it left through a new connection."""
    return SQLiteStorage(storage.path) if isinstance(storage, SQLiteStorage) else storage


def messages(storage: Storage, message_type: str) -> list[dict[str, Any]]:
    rows = storage.scan("message")
    return [row.doc["message"] for row in rows if row.doc["message"]["message_type"] == message_type]


@pytest.mark.clause("SHD-8", "JOB-1", "TSK-3")
def test_the_signal_exit_writes_its_steps_in_order(storage: Storage, request: pytest.FixtureRequest) -> None:
    """Stop new work, cancel and wait for the job, release with the checkpoint, stop, notify. Clause: SHD-8"""
    process, runner = member(storage)
    before = len(storage.steps_written)
    assert process.exit_on_signal() == EXIT_CLEAN
    steps = [step for step in storage.steps_written[before:] if not step.startswith("member.heartbeat")]
    storage = reopen(storage)
    request.addfinalizer(storage.close)
    assert steps == [
        "member.exit/member",
        "member.exit/jobs",
        "job.exit/job",
        "member.exit/task",
        "member.exit/stopped",
        "member.exit/outbox",
        "outbox.send/message",
        "outbox.send/entry",
    ]
    assert runner.cancelled == ["j1"]
    task = storage.read("task", "t0")
    assert task is not None and task.doc["status"] == "pending" and task.doc["checkpoint"]["state"]["step"] == 1
    [notice] = messages(storage, "shutdown_notice")
    assert notice["body"] == {"reason_text": "SIGTERM", "summary": "released t0"}
    assert messages(storage, "member_lost") == []


@pytest.mark.clause("SHD-8", "XPR-2")
def test_the_signal_exit_cancels_its_own_approval_requests(storage: Storage) -> None:
    """A member that shuts down on a signal while its approval request waits cancels it, with
    reason member_draining, as a drain would; another member's request stays. Clause: XPR-2"""
    process, _ = member(storage)
    world = RecordingTool()
    harness = process.h
    harness.tools["deploy"] = world.tool()
    harness.set_profile("m0", ["deploy"])
    harness.add_member("m1", ["deploy"])
    harness.add_task("t1")
    harness.claim("m1", "t1")
    mine = harness.approvals.request(CallContext("m0", 1, "call-1", "t0"), "deploy", {"path": "a"})
    theirs = harness.approvals.request(CallContext("m1", 1, "call-1", "t1"), "deploy", {"path": "a"})
    assert process.exit_on_signal() == EXIT_CLEAN
    storage = reopen(storage)
    try:
        statuses = {pid: storage.read("operation_approval", pid) for pid in (mine, theirs)}
        assert {pid: (s.doc["status"], s.doc["reason"]) for pid, s in statuses.items() if s} == {
            mine: ("cancelled", "member_draining"),
            theirs: ("requested", None),
        }
    finally:
        if isinstance(storage, SQLiteStorage):
            storage.close()
    assert world.calls == []


@pytest.mark.clause("SHD-8", "JOB-2", "SHD-4")
def test_a_non_cancellable_job_is_waited_for_never_signalled(storage: Storage) -> None:
    """The signal exit never signals a non-cancellable job; it waits for it (bounded). Clause: JOB-2"""
    process, runner = member(storage, cancellable=False)
    with pytest.raises(SystemExit):  # the job never exits here: the member gives up waiting
        process.exit_on_signal()
    assert runner.cancelled == []
    job = storage.read("job", "j1")
    assert job is not None and job.doc["status"] == "running"
    task = storage.read("task", "t0")
    assert task is not None and task.doc["status"] == "claimed"  # never released with a job running


@pytest.mark.clause("SHD-8", "REC-2", "INV-4")
@pytest.mark.parametrize("step", EXIT_STEPS)
def test_a_crash_after_each_exit_step_reconciles_to_a_state_where_every_invariant_holds(
    storage: Storage, step: str
) -> None:
    """Crash right after each write step of the signal exit, restart, reconcile: every state
    invariant holds, and reconciling again changes nothing (REC-1). Clause: REC-2"""
    process, _ = member(storage)
    storage.faults.crash_after.add(step)
    with pytest.raises(Crash):
        process.exit_on_signal()
    restarted = Harness(storage, ManualClock(101.0))
    restarted.reconcile()
    first = restarted.snapshot()
    assert spec.invariants.check_state(first) == []
    restarted.reconcile()
    assert restarted.snapshot() == first


@pytest.mark.clause("MEM-2", "TSK-1")
def test_a_model_asking_for_a_missing_tool_fails_its_task_after_its_jobs_settle(storage: Storage) -> None:
    """The step stops with UnknownTool before running anything; the member settles its jobs and
    fails the task as its claim holder (the model's mistake is not retried forever). Clause: MEM-2"""
    process, runner = member(storage)
    process.shutdown = ShutdownEvent()
    process.models = {"*": ScriptedModel([Turn((ToolCall("nope", {}),))])}
    process.work("t0")
    task = storage.read("task", "t0")
    assert task is not None and task.doc["status"] == "failed"
    assert runner.cancelled == ["j1"]
    assert process.h.member("m0")["current_task_id"] is None
