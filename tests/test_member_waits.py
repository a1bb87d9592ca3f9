"""A member while it waits — for its job, for the Lead's approval, for its jobs to settle on the way
out — and the Lead's inspection and kill that wait for it (SHD-7, SHD-8, SHD-10, APR-5, MEM-3).

Outside review 46 planted each of these in ``reference/_member_process.py`` and
``reference/_lead.py``, and every test passed: a member that beat once and never again, a wait for
jobs or for an approval with no heartbeat or no safe point, a signal during the Lead's drain that
left the drain unfinished, a lost member's signal exit reported clean, an expired request that
stopped the member reading it, an expired approval waited for forever, an inspection cut short
that could never be finished, a SIGKILL never waited for.

Clause: SHD-7, SHD-8, SHD-10, APR-5, MEM-3.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
from typing import Any

import pytest

from reference import (
    Crash,
    Harness,
    InProcessJobRunner,
    ManualClock,
    MemberBusy,
    MemoryStorage,
    RecordingTool,
    Storage,
    _lead,
    _member_process,
)
from reference._member_process import EXIT_CLEAN, EXIT_NOT_RUNNING, MemberProcess
from reference._processes import JOB_ENV, TEAM_ENV
from reference._runtime import ScriptedModel, Turn
from tests.test_member_processes import TIMEOUT, Lead, _status, job_script
from tests.test_signal_exit import member, messages, reopen


def beats_advance(lead: Lead, member_id: str, times: int = 2) -> None:
    """The member's heartbeat moves on ``times`` times more from now (bounded, polled)."""
    for _ in range(times):
        seen = lead.h.member(member_id)["last_heartbeat_at"]
        lead.until(
            f"{member_id} to beat after {seen}", lambda seen=seen: lead.h.member(member_id)["last_heartbeat_at"] > seen
        )


@pytest.mark.clause("SHD-10", "MEM-4")
def test_a_member_waiting_for_its_job_keeps_beating(lead: Lead) -> None:
    """While the member waits for its job at safe points, its heartbeat keeps moving (SHD-10): a
    rate limit that forgot when it last beat beat once, then never again, and every busy member
    lapsed."""
    process = lead.member("m0", job_script("sleep 30"))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    beats_advance(lead, "m0")
    assert lead.h.member("m0")["status"] == "running"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=TIMEOUT) == EXIT_CLEAN, lead.logs()


@pytest.mark.clause("SHD-10", "SHD-8", "JOB-2")
def test_a_member_shutting_down_keeps_beating_while_its_job_settles(lead: Lead) -> None:
    """SIGTERM during a non-cancellable job: the member stops new work and waits for the job — and
    keeps beating while it waits, so the Lead never takes a clean shutdown for a lost member
    (SHD-10). Once the job ends, it exits clean."""
    process = lead.member("m0", job_script("sleep 30", cancellable=False), max_wait_seconds=2 * TIMEOUT)
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    process.send_signal(signal.SIGTERM)
    lead.until("m0 to stop new work", lambda: lead.h.member("m0")["status"] == "draining")
    beats_advance(lead, "m0")
    lead.runner.kill(lead.job("m0")["job_id"])  # the job ends (here: killed from outside)
    assert process.wait(timeout=TIMEOUT) == EXIT_CLEAN, lead.logs()
    assert lead.h.member("m0")["status"] == "stopped" and lead.messages("member_lost") == []


@pytest.mark.clause("SHD-8", "MEM-3", "XPR-2")
def test_a_member_waiting_for_an_approval_shuts_down_on_a_signal(lead: Lead) -> None:
    """SIGTERM while the member waits for the Lead's approval: the wait is a safe point (MEM-3),
    so the member stops, cancels its own request (member_draining, XPR-2), releases its task,
    sends its shutdown_notice and exits clean; nothing is deployed."""
    script = [{"calls": [{"tool": "deploy", "arguments": {"path": "srv/app"}}]}, {"done": True}]
    process = lead.member("m0", script)
    lead.until("the approval request", lambda: bool(lead.h.storage.scan("operation_approval")))
    beats_advance(lead, "m0", times=1)  # it beats while it waits, too
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=TIMEOUT) == EXIT_CLEAN, lead.logs()
    [approval] = lead.h.storage.scan("operation_approval")
    assert (approval.doc["status"], approval.doc["reason"]) == ("cancelled", "member_draining")
    assert lead.h.task_row("m0-task").doc["status"] == "pending" and lead.h.member("m0")["status"] == "stopped"
    assert len(lead.messages("shutdown_notice")) == 1
    assert not (lead.workdir / "world.jsonl").exists()


@pytest.mark.clause("SHD-8", "SHD-3", "SHD-5")
def test_a_signal_during_the_leads_drain_finishes_that_drain(storage: Storage, request: pytest.FixtureRequest) -> None:
    """The member already drains for the Lead's request when its signal is read (a team-wide stop:
    the Lead asks, the supervisor SIGTERMs): the signal exit finishes that drain — the task
    released, the request completed, the shutdown_ack and the shutdown_notice sent — and exits
    clean (without it the drain was left for the ladder to force-terminate)."""
    process, _ = member(storage)
    h = process.h
    sid = h.shutdowns.request(h.lead_id, "m0", "stop-1", ttl_seconds=10)
    [req] = messages(storage, "shutdown_request")
    h.shutdowns.begin_drain("m0", req["message_id"])
    assert process.exit_on_signal() == EXIT_CLEAN
    storage = reopen(storage)
    request.addfinalizer(storage.close)
    stored = storage.read("shutdown_request", sid)
    task = storage.read("task", "t0")
    assert stored is not None and stored.doc["status"] == "completed"
    assert task is not None and task.doc["status"] == "pending"
    assert len(messages(storage, "shutdown_ack")) == 1 and len(messages(storage, "shutdown_notice")) == 1


@pytest.mark.clause("SHD-8", "SHD-10")
def test_a_lost_members_signal_exit_is_not_reported_clean(storage: Storage) -> None:
    """The Lead lapsed the member (it hung); then its supervisor SIGTERMs it: the process saves and
    tells nothing (the Lead owns its task now) and exits ``EXIT_NOT_RUNNING``, never 0 — an exit
    code of 0 says the member shut down cleanly."""
    process, _ = member(storage)
    process.h.members.lapse("m0")
    before = len(messages(storage, "shutdown_notice"))
    assert process.exit_on_signal() == EXIT_NOT_RUNNING != EXIT_CLEAN
    assert len(messages(storage, "shutdown_notice")) == before == 0


@pytest.mark.clause("SHD-2", "SHD-6", "MSG-1")
def test_a_request_that_expired_unread_does_not_stop_the_member_that_reads_it() -> None:
    """A shutdown request expired before the member read it (it was in one long call, or it was
    restarted since): its pass skips the expired message and the member runs on (reading it as a
    delivery is refused, MessageNotPending, and stopped the process)."""
    clock = ManualClock(0.0)
    h = Harness(MemoryStorage(), clock, jobs=InProcessJobRunner())
    h.add_member("m0", [])
    sid = h.shutdowns.request(h.lead_id, "m0", "stop-1", ttl_seconds=5)
    clock.advance(10)
    h.monitor_pass()
    assert h.shutdowns.require(sid).doc["status"] == "expired"
    process = MemberProcess(h, "m0", 1, ScriptedModel([Turn(done=True)]))
    process.tick()
    assert h.member("m0")["status"] == "running" and process.log == []


class DecidedWhileWaiting:
    """Safe points for one wait: at the first check the approval's deadline passes and the monitor
    expires it; a second check means the member waits on for an approval already decided."""

    def __init__(self, h: Harness, clock: ManualClock) -> None:
        self.h, self.clock, self.checks = h, clock, 0

    def check(self, where: str) -> None:
        self.checks += 1
        assert self.checks == 1, f"still waiting at {where} for an approval that expired"
        self.clock.advance(10_000)
        self.h.monitor_pass()


@pytest.mark.clause("APR-5", "INV-12", "MEM-3")
def test_a_member_waiting_for_an_approval_that_expires_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Lead lets the approval expire: the member's wait ends at its next look, the call refused
    as expired (the model learns it), never waited for until the unit's deadline."""
    clock = ManualClock(0.0)
    world = RecordingTool()
    h = Harness(MemoryStorage(), clock, [world.tool()], jobs=InProcessJobRunner())
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    process = MemberProcess(h, "m0", 1, ScriptedModel([Turn(done=True)]), poll_seconds=0)
    points: Any = DecidedWhileWaiting(h, clock)
    naps: list[float] = []

    def nap(seconds: float) -> None:  # bounds the wait: a member that never looks again fails, not hangs
        naps.append(seconds)
        assert len(naps) < 100, "still waiting for an approval that expired"

    monkeypatch.setattr(_member_process.time, "sleep", nap)
    assert process.protected_call("t0", "t0-c1-s0-0-deploy", {"path": "a"}, points) == {"refused": "expired"}
    assert world.calls == []


@pytest.mark.clause("SHD-7", "JOB-1", "REC-2")
def test_an_inspection_cut_short_before_a_jobs_exit_is_finished_by_running_it_again(storage: Storage) -> None:
    """The Lead crashes inside the inspection of a lost member, before it records its killed job's
    exit: the member is still unhealthy, so the inspection runs again and finishes (recorded the
    other way round, the member was stopped beside a job recorded running: the inspection was
    refused, the restart too, for good)."""
    process, _ = member(storage)
    h = process.h
    h.members.lapse("m0")
    storage.faults.crash_before.add("job.exit/job")
    with pytest.raises(Crash):
        _lead.inspect_lost_member(h, "m0")
    storage.faults.crash_before.clear()
    assert h.member("m0")["status"] == "unhealthy"
    assert _lead.inspect_lost_member(h, "m0") == ["t0"]
    assert h.jobs.require("j1").doc["status"] == "failed" and h.member("m0")["status"] == "stopped"
    with pytest.raises(MemberBusy):
        _lead.inspect_lost_member(h, "m0")


@pytest.mark.clause("SHD-7")
def test_the_ladders_kill_returns_only_once_the_process_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL takes effect later (a process in uninterruptible I/O dies when its call returns):
    ``force_kill`` polls until no pid is alive before the ladder re-checks and force-terminates."""
    sent: list[tuple[int, int]] = []
    looks: list[int] = []

    def alive(pid: int) -> bool:
        looks.append(pid)
        return len(looks) < 3  # dies at the third look

    monkeypatch.setattr(_lead, "signal_group", lambda pid, signum: sent.append((pid, int(signum))) or True)
    monkeypatch.setattr(_lead, "alive", alive)
    monkeypatch.setattr(_lead, "POLL_SECONDS", 0.001)
    _lead.force_kill([4242], timeout_seconds=TIMEOUT)
    assert sent == [(4242, signal.SIGKILL)] and looks == [4242, 4242, 4242]


@pytest.mark.clause("SHD-7", "XPR-3")
def test_an_inspection_of_a_member_that_is_not_unhealthy_kills_nothing(lead: Lead) -> None:
    """The Lead's inspection of a member that runs (a mistaken id, a member that beat again) is
    refused before the first kill (XPR-3): the member's process and its job's live on, the job is
    still recorded running, the member still running. An inspection that killed first and checked
    after left a running member with no process and its job recorded killed."""
    process = lead.member("m0", job_script("sleep 30"))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    job = lead.job("m0")
    with pytest.raises(MemberBusy, match="only an unhealthy member is inspected"):
        _lead.inspect_lost_member(lead.h, "m0")
    assert process.poll() is None, lead.logs()
    assert lead.job_processes(job["job_id"]), "the job's process was killed"
    assert lead.job("m0")["status"] == "running" and lead.h.member("m0")["status"] == "running"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=TIMEOUT) == EXIT_CLEAN, lead.logs()


def _stuck_with_an_escaped_child(lead: Lead) -> tuple[Any, str, str]:
    """m0 drains for a request past its deadline, stuck on a non-cancellable job whose shell left a
    child outside its group (``setsid``): the member's process, the job and the request."""
    process = lead.member("m0", job_script("sh -c 'setsid sleep 30 & sleep 30'", cancellable=False))
    lead.until("m0's job to run", lambda: lead.job_running("m0"))
    job_id = lead.job("m0")["job_id"]
    lead.until("its escaped child", lambda: len(lead.job_processes(job_id)) >= 3)
    sid = lead.h.shutdowns.request(lead.h.lead_id, "m0", "stop-1", ttl_seconds=0.3)
    lead.until("the drain to begin", lambda: lead.h.member("m0")["status"] == "draining")
    lead.until("the deadline", lambda: lead.h.monitor_pass() is None and _status(lead, sid) == "timed_out")
    return process, job_id, sid


@pytest.mark.clause("SHD-7")
def test_the_ladders_last_rung_returns_once_its_jobs_processes_are_gone(
    lead: Lead, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SHD-7's last rung records the jobs killed; the ladder returns only when no process of theirs
    is found, the one that left its group too, which the runner's group signal missed."""
    process, job_id, sid = _stuck_with_an_escaped_child(lead)

    def the_jobs_group_only(job: str) -> None:  # as a runner that started the job itself kills it
        groups = collections.Counter(os.getpgid(pid) for pid in lead.job_processes(job))
        os.killpg(groups.most_common(1)[0][0], signal.SIGKILL)  # the shell's, not the escaped child's

    monkeypatch.setattr(lead.h.jobs.runner, "kill", the_jobs_group_only)
    ladder = _lead.escalate(lead.h, sid, grace_seconds=0.2)
    assert ladder.outcome == "force_terminated", ladder.rungs
    assert lead.job_processes(job_id) == [], ladder.rungs
    assert "still alive" not in ladder.rungs[-1]
    assert process.wait(timeout=TIMEOUT) == -signal.SIGKILL


@pytest.mark.clause("SHD-7", "XPR-3")
def test_an_inspection_kills_what_a_job_recorded_killed_left_behind(lead: Lead) -> None:
    """A process of a job already recorded ended — killed by the last rung, as here, where a runner
    that started the job itself signals only the job's group and misses what left it — still
    lives; the inspection of the lost member looks for every process of the member's jobs, not only
    of those still recorded busy, and kills it before the member is stopped."""
    process, job_id, sid = _stuck_with_an_escaped_child(lead)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=TIMEOUT)
    lead.h.shutdowns.force_terminate(sid)
    assert lead.job("m0")["status"] == "cancelled"
    lead.until("the job's processes to die", lambda: lead.job_processes(job_id) == [])
    env = {**os.environ, TEAM_ENV: lead.h.storage.team, JOB_ENV: job_id}
    left = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    try:
        lead.until("the left process", lambda: lead.job_processes(job_id) == [left.pid])
        assert _lead.inspect_lost_member(lead.h, "m0") == ["m0-task"]
        assert lead.job_processes(job_id) == []
        assert left.wait(timeout=TIMEOUT) == -signal.SIGKILL
        assert lead.h.member("m0")["status"] == "stopped"
    finally:
        left.kill()
        left.wait()
