"""The member process (``reference/_member_process.py``) in the details mutmut found untested when
it first measured the module (mutation/NOTES.md, "Lead and member processes, first measured"):
the protected ``deploy`` call as the member's model makes it, the world tool's own record, a task
released before its first checkpoint, and what the process says when it gives up or stops. In one
process, on the in-memory store; no member process is started.

Clause: APR-1, APR-3, APR-8, SHD-8, TSK-3, MEM-2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference import Harness, InProcessJobRunner, ManualClock, MemoryStorage, RecordingTool, StaleMember
from reference import _member_process as member_process
from reference._member_process import EXIT_CLEAN, EXIT_NOT_RUNNING, EXIT_STUCK, FileTool, MemberProcess
from reference._runtime import ScriptedModel, ShutdownEvent, ToolCall, Turn
from tests.test_signal_exit import member


class ApprovedWhileWaiting:
    """The safe points of a member waiting for an approval: at its first look the Lead approves."""

    def __init__(self, h: Harness) -> None:
        self.h, self.checks = h, 0

    def check(self, where: str) -> None:
        self.checks += 1
        assert self.checks == 1, f"still waiting at {where} for an approval the Lead gave"
        (pending,) = [row.key for row in self.h.storage.scan("operation_approval")]
        self.h.approvals.review("lead", pending, "approved", "ok")


def holding_t0(world: RecordingTool | None = None) -> tuple[Harness, MemberProcess]:
    h = Harness(MemoryStorage(), ManualClock(100.0), [(world or RecordingTool()).tool()], jobs=InProcessJobRunner())
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    process = MemberProcess(h, "m0", 1, ScriptedModel([Turn(done=True)]), poll_seconds=0, max_wait_seconds=0.05)
    return h, process


@pytest.mark.clause("APR-1", "APR-3", "APR-8")
def test_the_members_deploy_tool_asks_waits_and_runs_the_approved_call_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member's model asks for ``deploy`` by that name; the call asks the Lead, waits at safe
    points, and once approved consumes the approval — the tool runs once, under the approval's id
    as its idempotency key (APR-8). A member whose tools named it otherwise failed every deploy as
    an unknown tool, and one that consumed it under another tool name was refused; no test had a
    member's model deploy."""
    world = RecordingTool()
    h, process = holding_t0(world)
    monkeypatch.setattr(member_process.time, "sleep", lambda seconds: None)
    points: Any = ApprovedWhileWaiting(h)
    tools = process.tools("t0", points)
    assert sorted(tools) == ["deploy", "job", "note"]
    assert tools["deploy"]({"path": "a"}) == {"ok": True, "calls": 1}
    (approval,) = [row.doc for row in h.storage.scan("operation_approval")]
    assert approval["status"] == "consumed" and approval["tool_name"] == "deploy"
    assert [key for key, _ in world.calls] == [approval["protocol_id"]]


@pytest.mark.clause("APR-8")
def test_the_world_tool_finds_the_outcome_of_a_call_by_its_key(tmp_path: Path) -> None:
    """The member process's deploy tool records each call in its file under its idempotency key,
    and its lookup finds exactly those keys (APR-8: an outcome is looked up, never repeated) — also
    before the file exists, when it finds nothing."""
    world = FileTool(str(tmp_path / "world.jsonl"))
    assert world.lookup("k1") is None
    assert world.run("k1", {"path": "a"}) == {"ok": True}
    assert world.lookup("k1") == {"ok": True}
    assert world.lookup("k2") is None


@pytest.mark.clause("SHD-8", "TSK-3")
def test_a_task_released_on_a_signal_before_its_first_checkpoint_keeps_an_empty_one() -> None:
    """A member signalled before its task's first checkpoint releases the task with the checkpoint
    a first claimer starts from: no state, saved now, released (TSK-3)."""
    h, process = holding_t0()
    process.shutdown.set("SIGTERM")
    assert process.exit_on_signal() == EXIT_CLEAN
    task = h.task_row("t0").doc
    assert task["status"] == "pending"
    assert task["checkpoint"] == {"state": None, "saved_at": 100.0, "released": True}


@pytest.mark.clause("SHD-8", "JOB-1")
def test_a_member_that_gives_up_waiting_says_for_what() -> None:
    """The process exits ``EXIT_STUCK`` past ``max_wait_seconds``; its log is the one place that
    says what it waited for (the records say only that jobs still run)."""
    _, process = holding_t0()
    with pytest.raises(SystemExit) as stuck:
        process.wait_for(lambda: False, "jobs to settle (SIGTERM)")
    assert stuck.value.code == EXIT_STUCK
    assert process.log[-1] == "gave up waiting for jobs to settle (SIGTERM)"


@pytest.mark.clause("MEM-2", "JOB-1")
def test_a_failed_tasks_jobs_are_cancelled_saying_why() -> None:
    """A task failed by its model's unknown tool settles its jobs first; the member's log says the
    job was asked to stop because the task failed, and how it ended."""
    process, _ = member(MemoryStorage())
    process.shutdown = ShutdownEvent()  # the helper's is set (SIGTERM); no signal here
    process.models = {"*": ScriptedModel([Turn((ToolCall("nope", {}),))])}
    process.work("t0")
    assert "cancel requested for job j1 (the task failed)" in process.log
    assert "job j1 exited: cancelled (exit -15)" in process.log


@pytest.mark.clause("XPR-1")
def test_a_member_process_stopped_by_a_refusal_says_which(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal out of the loop (here a stale incarnation, XPR-1) ends the process with
    ``EXIT_NOT_RUNNING``; its log names the refusal and its words."""
    said: list[str] = []
    refusal = StaleMember("m0", 1, 2)

    class Refused:
        def run(self) -> int:
            raise refusal

        def say(self, line: str) -> None:
            said.append(line)

    monkeypatch.setattr(member_process, "install_signal_handlers", lambda event: None)
    monkeypatch.setattr(member_process, "_member", lambda args, event: Refused())
    argv = ["--db", "team.db", "--member", "m0", "--incarnation", "1", "--script", "s.json", "--workdir", "."]
    assert member_process.main(argv) == EXIT_NOT_RUNNING
    assert said == [f"stopping on StaleMember: {refusal}"]


class JobEndsWhileWaiting:
    """The safe points of a member waiting for its job: at its first look the job exits 0."""

    def __init__(self, h: Harness, runner: InProcessJobRunner) -> None:
        self.h, self.runner, self.checks = h, runner, 0

    def check(self, where: str) -> None:
        self.checks += 1
        assert self.checks == 1, f"still waiting at {where} for a job that exited"
        self.runner.finish("t0-c1-s0-0-job", 0)
        self.h.jobs.poll()


@pytest.mark.clause("MEM-4", "JOB-1")
def test_the_job_tool_starts_the_command_waits_and_hands_back_how_the_job_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MEM-4: the member's ``job`` tool starts the command as a background job, waits for it at
    safe points and hands the model (and so the task's checkpoint) the job's id, its end and its
    exit code, under those names; the job process tests never read what the tool handed back."""
    h, process = holding_t0()
    assert isinstance(h.jobs.runner, InProcessJobRunner)
    monkeypatch.setattr(member_process.time, "sleep", lambda seconds: None)
    points: Any = JobEndsWhileWaiting(h, h.jobs.runner)
    done = process.tools("t0", points)["job"]({"command": "make test", "cancellable": False})
    assert done == {"job_id": "t0-c1-s0-0-job", "status": "succeeded", "exit_code": 0}
    job = h.jobs.require("t0-c1-s0-0-job").doc
    assert job["command"] == "make test" and job["cancellable"] is False and job["owner_id"] == "m0"
