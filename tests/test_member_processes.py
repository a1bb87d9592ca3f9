"""Members and jobs as real OS processes over one SQLite file (SHD-7, SHD-8, SHD-10, JOB-1, JOB-2).

The test is the Lead: it starts member processes (``reference._member_process``), sends them
signals and reads the shared store. Every wait is bounded and polls; the fixture kills every
process a test started (members and their jobs), also when the test fails.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reference import Harness, ProcessesSurvive, SQLiteStorage, SystemClock, _lead
from reference._lead import escalate, inspect_lost_member, member_processes, watch_lapses
from reference._member_process import EXIT_CLEAN, EXIT_STUCK, FileTool, start_member
from reference._processes import JOB_ENV, SubprocessJobRunner, alive, find_processes, wait_until

TIMEOUT = 15.0

TRAPS_SIGTERM = (
    f'{sys.executable} -c "import signal, sys, time; '
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.3), sys.exit(0))); print('ready', flush=True); "
    'time.sleep(30)"'
)
"""A job that stops 0.3 s after SIGTERM and exits 0: it finished its work after all."""


def job_script(command: str, cancellable: bool = True) -> list[dict[str, Any]]:
    return [
        {"calls": [{"tool": "note", "arguments": {"plan": "work"}}]},
        {"calls": [{"tool": "job", "arguments": {"command": command, "cancellable": cancellable}}]},
        {"done": True},
    ]


class Lead:
    """The test's view of the team: a harness over the shared file, and the processes it started."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.db = str(workdir / "team.db")
        self.runner = SubprocessJobRunner()
        world = FileTool(str(workdir / "world.jsonl"))
        self.h = Harness(SQLiteStorage(self.db), SystemClock(), [world.tool()], jobs=self.runner)
        self.processes: list[subprocess.Popen[bytes]] = []

    def member(self, member_id: str, script: list[dict[str, Any]], **options: Any) -> subprocess.Popen[bytes]:
        self.h.add_member(member_id, ["deploy"])
        self.h.add_task(f"{member_id}-task")
        process = start_member(self.db, member_id, 1, script, str(self.workdir), heartbeat_seconds=0.05, **options)
        self.processes.append(process)
        return process

    def until(self, what: str, condition: Callable[[], bool]) -> None:
        assert wait_until(condition, TIMEOUT), f"timed out waiting for {what}; logs: {self.logs()}"

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.workdir.glob("m*.log")))

    def job(self, member_id: str) -> dict[str, Any]:
        jobs = [row for row in self.h.storage.scan("job") if row.doc["owner_id"] == member_id]
        assert len(jobs) == 1, jobs
        return jobs[0].doc

    def job_processes(self, job_id: str) -> list[int]:
        return find_processes(self.h.storage.team, JOB_ENV, job_id)

    def job_running(self, member_id: str) -> bool:
        """Recorded ``running`` and its process started: the record is written before the process
        starts (JOB-1), so a member killed in between leaves a running job with no process."""
        jobs = self.h.jobs.busy_rows(member_id)
        return any(job.doc["status"] == "running" and self.job_processes(job.key) for job in jobs)

    def messages(self, message_type: str) -> list[dict[str, Any]]:
        rows = self.h.storage.scan("message")
        return [row.doc["message"] for row in rows if row.doc["message"]["message_type"] == message_type]

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
        for job in self.h.storage.scan("job"):
            for pid in self.job_processes(job.key):
                self.runner.kill(job.key)
                wait_until(lambda pid=pid: not alive(pid), 5)
        self.h.storage.close()


@pytest.mark.clause("SHD-8", "SHD-10", "JOB-1", "MEM-2")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_makes_the_member_shut_itself_down_in_order(lead: Lead, signum: int) -> None:
    """SIGTERM/SIGINT mid-task: no new work, its job cancelled and exited, the task checkpointed
    and released, the member stopped, a shutdown_notice sent, the process exits 0 — and no
    member_lost, since this was a clean exit. Clause: SHD-8"""
    process = lead.member("m0", job_script("sleep 30"))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    process.send_signal(signum)
    assert process.wait(timeout=TIMEOUT) == EXIT_CLEAN, lead.logs()
    name = signal.Signals(signum).name
    job = lead.job("m0")
    assert (job["status"], job["exit_code"]) == ("cancelled", -signal.SIGTERM)
    task = lead.h.task_row("m0-task").doc
    assert task["status"] == "pending" and task["owner_id"] is None
    assert task["checkpoint"]["released"] is True
    assert task["checkpoint"]["state"]["step"] == 1  # the note was made and checkpointed
    assert [e["event"] for e in task["history"]][-1] == "released"
    member = lead.h.member("m0")
    assert (member["status"], member["accepting_new_tasks"], member["current_task_id"]) == ("stopped", False, None)
    [notice] = lead.messages("shutdown_notice")
    assert notice["body"]["reason_text"] == name and "released m0-task" in notice["body"]["summary"]
    lines = [line.split("] ", 1)[1] for line in lead.logs().splitlines() if line.startswith("[m0#1 ")]
    order = [
        "left m0-task at safe point waiting_for_job: ShutdownSignalled",  # MEM-2: not inside a call
        f"{name}: shutting down",
        "cancel requested",
        "job m0-task-c1-s1-0-job exited: cancelled",
        "released",
        "shutdown_notice sent",
    ]
    positions = [next(i for i, line in enumerate(lines) if line.startswith(prefix)) for prefix in order]
    assert positions == sorted(positions), lines
    time.sleep(0.3)  # longer than the lapse window below: a lapse would now be due
    assert watch_lapses(lead.h, 0.2) == [] and lead.messages("member_lost") == []  # SHD-10: no last will


@pytest.mark.clause("SHD-10", "SHD-7")
def test_a_killed_member_lapses_once_and_its_task_is_flagged(lead: Lead) -> None:
    """SIGKILL: the heartbeat lapses, exactly one member_lost (however often the Lead looks), the
    claim is flagged; inspection kills the orphaned job before the task may run again. Clause: SHD-10"""
    process = lead.member("m0", job_script("sleep 30"))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    assert lead.h.member("m0")["last_heartbeat_at"] is not None
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=TIMEOUT)
    assert watch_lapses(lead.h, 10.0) == []  # a fresh heartbeat has not lapsed yet
    lead.until("the lapse", lambda: watch_lapses(lead.h, 0.3) == ["m0"])
    for _ in range(3):
        assert watch_lapses(lead.h, 0.3) == []
    [lost] = lead.messages("member_lost")
    assert lost["body"]["member_id"] == "m0" and lost["body"]["flagged_task_ids"] == ["m0-task"]
    assert lead.h.task_row("m0-task").doc["status"] == "needs_inspection"
    job_id = lead.job("m0")["job_id"]
    assert lead.job_processes(job_id), "the job outlives its member until inspection"
    assert inspect_lost_member(lead.h, "m0") == ["m0-task"]
    assert lead.job_processes(job_id) == []
    assert lead.job("m0")["status"] == "failed" and lead.h.member("m0")["status"] == "stopped"
    lead.h.tasks.inspect("m0-task", "pending")
    assert len(lead.messages("member_lost")) == 1


@pytest.mark.clause("SHD-7", "SHD-10")
def test_inspecting_a_lost_member_never_touches_another_teams_processes(tmp_path: Path) -> None:
    """Two teams on one machine, each with a member ``m0`` in its first incarnation running a job
    of the same id: one team's member is lost and inspected; the other team's member and job run
    on (the processes are found by their team as well as their ids; the other team's folder is
    reached through a symlink, and its processes are still its own). Clause: SHD-7"""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b-link").symlink_to(tmp_path / "b")
    lost, other = Lead(tmp_path / "a"), Lead(tmp_path / "b-link")
    try:
        processes = [team.member("m0", job_script("sleep 30")) for team in (lost, other)]
        for team in (lost, other):
            team.until("m0's job to run", lambda team=team: team.job_running("m0"))
        job_id = lost.job("m0")["job_id"]
        assert other.job("m0")["job_id"] == job_id  # the same ids: only the team tells them apart
        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait(timeout=TIMEOUT)
        lost.until("the lapse", lambda: watch_lapses(lost.h, 0.3) == ["m0"])
        assert inspect_lost_member(lost.h, "m0") == ["m0-task"] and lost.job_processes(job_id) == []
        assert processes[1].poll() is None and member_processes(other.h.storage.team, "m0", 1) == [processes[1].pid]
        assert other.job_processes(job_id) and other.job_running("m0")
    finally:
        lost.close()
        other.close()


@pytest.mark.clause("SHD-7", "SHD-10", "XPR-3")
def test_an_inspection_kills_a_job_process_that_left_its_group_or_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job's process that left its group (``setsid``) is out of a group signal's reach: the
    inspection of its lost member kills it by itself before it records the job's exit (an outside
    review found the exits recorded whatever outlived the kill). A process that outlives SIGKILL
    too refuses the inspection, typed, and nothing is recorded (fail closed, XPR-3)."""
    lead = Lead(tmp_path)
    try:
        process = lead.member("m0", job_script("sh -c 'setsid sleep 30 & sleep 30'"))
        lead.until("m0's job to run", lambda: lead.job_running("m0"))
        job_id = lead.job("m0")["job_id"]
        lead.until("its escaped child", lambda: len(lead.job_processes(job_id)) >= 3)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=TIMEOUT)
        lead.until("the lapse", lambda: watch_lapses(lead.h, 0.3) == ["m0"])
        before = lead.h.snapshot()
        monkeypatch.setattr(_lead, "find_processes", lambda team, env, value: [4_194_304])  # one that never dies
        monkeypatch.setattr(_lead, "wait_until", lambda *args, **kwargs: False)
        with pytest.raises(ProcessesSurvive, match="4194304"):
            inspect_lost_member(lead.h, "m0")
        assert {**lead.h.snapshot(), "clock": 0} == {**before, "clock": 0}  # the store unchanged
        monkeypatch.undo()
        assert inspect_lost_member(lead.h, "m0") == ["m0-task"]
        assert lead.job_processes(job_id) == []  # the escaped child too
        assert lead.job("m0")["status"] == "failed"
    finally:
        lead.close()


@pytest.mark.clause("SHD-7", "JOB-2", "SHD-4", "SHD-6")
def test_the_ladder_kills_only_after_sigterm_and_a_recheck(lead: Lead) -> None:
    """A drain stuck on a non-cancellable job: the job is never signalled by the drain (it would
    die of SIGTERM); past the deadline the ladder inspects, cancels nothing, sends SIGTERM,
    waits and re-checks, and only then kills: task needs_inspection, one member_lost. Clause: SHD-7"""
    process = lead.member("m0", job_script("sleep 30", cancellable=False))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    sid = lead.h.shutdowns.request(lead.h.lead_id, "m0", "stop-1", ttl_seconds=0.5)
    lead.until("the drain to begin", lambda: lead.h.member("m0")["status"] == "draining")
    job_id = lead.job("m0")["job_id"]
    lead.until("the deadline", lambda: lead.h.monitor_pass() is None and _status(lead, sid) == "timed_out")
    assert lead.job("m0")["status"] == "running" and lead.job_processes(job_id)  # JOB-2: never signalled
    ladder = escalate(lead.h, sid, grace_seconds=0.5)
    assert ladder.outcome == "force_terminated", ladder.rungs
    rungs = [rung.split(" ")[0] for rung in ladder.rungs]
    assert rungs == ["inspect:", "wake:", "cancel", "SIGTERM", "re-check", "SIGKILL", "force-terminated:"]
    assert "cancel cancellable jobs: none; still waiting for: " + job_id in ladder.rungs[2]
    assert process.wait(timeout=TIMEOUT) == -signal.SIGKILL
    assert member_processes(lead.h.storage.team, "m0", 1) == [] and lead.job_processes(job_id) == []
    assert lead.job("m0")["status"] == "cancelled"
    assert lead.h.task_row("m0-task").doc["status"] == "needs_inspection"
    assert lead.h.member("m0")["status"] == "unhealthy"
    assert len(lead.messages("member_lost")) == 1


@pytest.mark.clause("SHD-7", "SHD-6", "SHD-8")
def test_the_ladder_stops_at_the_recheck_when_the_drain_completes(lead: Lead) -> None:
    """The same ladder, but the non-cancellable job ends while the Lead waits after SIGTERM: the
    drain completes (timed_out, then completed: both facts kept) and nothing is killed. Clause: SHD-7"""
    process = lead.member("m0", job_script("sleep 1.5", cancellable=False))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    sid = lead.h.shutdowns.request(lead.h.lead_id, "m0", "stop-1", ttl_seconds=0.2)
    lead.until("the deadline", lambda: lead.h.monitor_pass() is None and _status(lead, sid) == "timed_out")
    ladder = escalate(lead.h, sid, grace_seconds=TIMEOUT)
    assert ladder.outcome == "completed", ladder.rungs
    assert "SIGKILL" not in " ".join(ladder.rungs)
    assert process.wait(timeout=TIMEOUT) == EXIT_CLEAN, lead.logs()
    events = [e["event"] for e in lead.h.shutdowns.require(sid).doc["events"]]
    assert events.index("timed_out") < events.index("completed")
    assert lead.job("m0")["status"] == "succeeded"
    assert lead.h.task_row("m0-task").doc["status"] == "pending"
    assert lead.messages("member_lost") == [] and len(lead.messages("shutdown_ack")) == 1
    assert len(lead.messages("shutdown_notice")) == 1  # SIGTERM arrived during the drain


@pytest.mark.clause("SHD-8", "SHD-4", "JOB-2")
def test_a_signalled_member_waits_for_its_jobs_no_longer_than_it_was_told(lead: Lead) -> None:
    """``--max-wait-seconds``: SIGTERM during a non-cancellable job the member may not signal; it
    waits that long for the job to settle, then exits ``EXIT_STUCK`` with the job still running
    and its task still held (outside review 41 parsed the flag and ignored it: the member waited
    the job out and exited clean)."""
    process = lead.member("m0", job_script("sleep 20", cancellable=False), max_wait_seconds=0.5)
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=TIMEOUT) == EXIT_STUCK, lead.logs()
    assert time.monotonic() - started < 10  # well before the job's own end
    assert lead.job("m0")["status"] == "running" and lead.job_processes(lead.job("m0")["job_id"])
    assert lead.h.task_row("m0-task").doc["owner_id"] == "m0"


def _status(lead: Lead, sid: str) -> str:
    return str(lead.h.shutdowns.require(sid).doc["status"])


@pytest.mark.clause("JOB-1", "MEM-4", "SHD-3")
@pytest.mark.parametrize(
    ("command", "outcome", "code"), [("sleep 30", "cancelled", -15), (TRAPS_SIGTERM, "succeeded", 0)]
)
def test_a_cancel_request_stays_until_the_process_exits(lead: Lead, command: str, outcome: str, code: int) -> None:
    """A drain's cancel request is persisted as cancel_requested before SIGTERM; the record stays
    so while the process runs; its own exit decides cancelled or succeeded. Clause: JOB-1"""
    h = lead.h
    lead.runner.log_dir = str(lead.workdir)
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    h.jobs.start("m0", "j1", command, cancellable=True)
    log = lead.workdir / "j1.log"
    lead.until("the job to be ready", lambda: code != 0 or (log.exists() and "ready" in log.read_text()))
    sid = h.shutdowns.request(h.lead_id, "m0", "stop-1")
    h.shutdowns.begin_drain("m0", lead.messages("shutdown_request")[0]["message_id"])
    assert h.shutdowns.drain_jobs("m0") == ["j1"]
    assert h.jobs.require("j1").doc["status"] == "cancel_requested"
    if code == 0:
        assert h.jobs.poll() == [] and h.jobs.require("j1").doc["status"] == "cancel_requested"
    lead.until("the job's exit", lambda: h.jobs.poll() == ["j1"])
    assert (h.jobs.require("j1").doc["status"], h.jobs.require("j1").doc["exit_code"]) == (outcome, code)
    assert h.shutdowns.drain_pass("m0") == {"ready": True, "released": "t0"}
    assert _status(lead, sid) == "completed"


@pytest.mark.clause("SHD-9", "MEM-2", "JOB-1")
def test_a_unit_past_its_hard_deadline_is_suspended_and_the_lead_told(lead: Lead) -> None:
    """The unit's job outlives the unit's deadline: at the next safe point the member cancels the
    job, waits for its exit, suspends the task and sends task_suspended; the member goes on
    running (it may claim other work). Clause: SHD-9"""
    process = lead.member("m0", job_script("sleep 30"), unit_seconds=1.0)
    lead.until("the task to be suspended", lambda: lead.h.task_row("m0-task").doc["status"] == "suspended")
    lead.until("task_suspended", lambda: bool(lead.messages("task_suspended")))
    [notice] = lead.messages("task_suspended")
    assert notice["body"]["task_id"] == "m0-task" and notice["target"] == lead.h.lead_id
    assert lead.job("m0")["status"] == "cancelled"
    member = lead.h.member("m0")
    assert (member["status"], member["current_task_id"]) == ("running", None)
    assert process.poll() is None  # still alive, heartbeating


@pytest.mark.clause("SHD-10", "SHD-7", "XPR-2")
def test_a_lost_member_waiting_for_approval_has_its_request_cancelled_as_crashed(lead: Lead) -> None:
    """Killed while it waits for the Lead's approval: after the lapse, inspection stops the
    member and cancels its open request with reason crashed; nothing was ever deployed. Clause: SHD-10"""
    script = [{"calls": [{"tool": "deploy", "arguments": {"path": "srv/app"}}]}, {"done": True}]
    process = lead.member("m0", script)
    lead.until("the approval request", lambda: bool(lead.h.storage.scan("operation_approval")))
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=TIMEOUT)
    lead.until("the lapse", lambda: watch_lapses(lead.h, 0.3) == ["m0"])
    [approval] = lead.h.storage.scan("operation_approval")
    assert approval.doc["status"] == "requested"  # a lapse alone decides nothing about it
    assert inspect_lost_member(lead.h, "m0") == ["m0-task"]
    [approval] = lead.h.storage.scan("operation_approval")
    assert (approval.doc["status"], approval.doc["reason"]) == ("cancelled", "crashed")
    assert not (lead.workdir / "world.jsonl").exists()
