"""The Lead's ladder and inspection (``reference/_lead.py``) in the details mutmut found untested
when it first measured the module (mutation/NOTES.md, "Lead and member processes, first
measured"): the ladder's cancel rung, its record of what it did, the inspection's refusal words,
and the waits and errors of its kill. In-process, with the OS replaced by a recorder as in
``tests/test_lead_ladder.py``; no real process is signalled.

Clause: SHD-7, JOB-1, JOB-2, XPR-3.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest

from reference import (
    Harness,
    ManualClock,
    MemberBusy,
    ProcessesSurvive,
    RecordingTool,
    SQLiteStorage,
    _lead,
)
from tests.test_lead_ladder import draining


class RecordingOS:
    """What the Lead would find and signal, recorded (``signals``), none real; ``found`` maps an
    environment variable to the pids found under it (a callable for pids that die later)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, h: Harness, member_pids: list[int]) -> None:
        self.signals: list[tuple[int, int]] = []
        self.jobs_at_sigterm: dict[str, str] = {}
        self.found: dict[str, Any] = {}
        self.h = h
        monkeypatch.setattr(_lead, "member_processes", lambda team, member, incarnation: list(member_pids))
        monkeypatch.setattr(_lead, "signal_group", self.signal_group)
        monkeypatch.setattr(_lead, "find_processes", self.find)
        monkeypatch.setattr(_lead, "live_values", lambda team, env: [])
        monkeypatch.setattr(_lead.os, "kill", lambda pid, signum: self.signals.append((pid, int(signum))))

    def signal_group(self, pid: int, signum: int) -> bool:
        if signum == signal.SIGTERM:
            self.jobs_at_sigterm = {row.key: row.doc["status"] for row in self.h.storage.scan("job")}
        self.signals.append((pid, int(signum)))
        return True

    def find(self, team: str, env: str, value: str) -> list[int]:
        pids = self.found.get(env, [])
        return list(pids() if callable(pids) else pids)


def timed_out(tmp_path: Any, cancellable: bool = False) -> tuple[Harness, str]:
    """m0 holds t0 and runs job-1; it drains for the Lead's request, which ran past its deadline."""
    clock = ManualClock(0.0)
    h, pid = draining(tmp_path, clock, cancellable)
    clock.advance(20)
    h.monitor_pass()
    assert h.shutdowns.require(pid).doc["status"] == "timed_out"
    return h, pid


@pytest.mark.clause("SHD-7", "JOB-1", "JOB-2")
def test_the_ladder_asks_the_cancellable_jobs_to_stop_before_its_sigterm(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SHD-7's rung "cancel cancellable jobs" comes before the SIGTERM: the job is recorded
    ``cancel_requested`` (JOB-1) and named on the request by the time the member is signalled. The
    ladder once read the jobs of no member (``busy_rows(None)``), or asked only when the member
    drained for *another* request, and no test saw the rung skipped: the force-kill ended the job."""
    h, pid = timed_out(tmp_path, cancellable=True)
    fake = RecordingOS(monkeypatch, h, [4242])
    monkeypatch.setattr(_lead, "wait_until", lambda *args, **kwargs: False)
    ladder = _lead.escalate(h, pid, grace_seconds=0)
    assert fake.jobs_at_sigterm == {"job-1": "cancel_requested"}
    assert h.shutdowns.require(pid).doc["waited_job_ids"] == ["job-1"]
    assert ladder.rungs[2] == "cancel cancellable jobs: job-1; still waiting for: job-1"
    assert ladder.outcome == "force_terminated"


@pytest.mark.clause("SHD-7")
def test_the_ladders_record_of_a_drain_completed_after_its_sigterm(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ladder's rungs are the Lead's timeline of SHD-7, rung by rung: what it inspected (the
    task held, the jobs running, the last safe point), that nothing was sent to wake it, the jobs
    it asked to cancel, the SIGTERM, and the re-check that found the drain completed — then
    nothing is killed."""
    h, pid = timed_out(tmp_path)
    fake = RecordingOS(monkeypatch, h, [4242])

    def the_member_finishes_on_sigterm(done: Any, *args: Any, **kwargs: Any) -> bool:
        h.jobs.exited("job-1", 0)
        h.shutdowns.drain_pass("m0")
        return bool(done())

    monkeypatch.setattr(_lead, "wait_until", the_member_finishes_on_sigterm)
    ladder = _lead.escalate(h, pid, grace_seconds=0)
    assert ladder.rungs == [
        "inspect: m0 is draining, holds t0, jobs still running: job-1, last checkpoint at never",
        "wake: nothing to send; a member process reads its records at every safe point (deadline kept)",
        "cancel cancellable jobs: none; still waiting for: job-1",
        "SIGTERM to the member process 4242",
        "re-check: the drain completed after SIGTERM; nothing is killed",
    ]
    assert ladder.outcome == "completed" and fake.signals == [(4242, signal.SIGTERM)]


@pytest.mark.clause("SHD-7", "XPR-3")
def test_the_ladders_record_names_no_member_process_and_every_job_process_that_outlived_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process of the member is found (it died, or was started without its mark): the SIGTERM
    and SIGKILL rungs say so; two processes of its job outlive the last rung's kill: the last rung
    names both (the ladder returns, the record says killed, the Lead is told which pids live)."""
    h, pid = timed_out(tmp_path)
    fake = RecordingOS(monkeypatch, h, [])
    fake.found[_lead.JOB_ENV] = [777, 778]
    monkeypatch.setattr(_lead, "wait_until", lambda *args, **kwargs: False)
    ladder = _lead.escalate(h, pid, grace_seconds=0)
    assert ladder.rungs[0] == "inspect: m0 is draining, holds t0, jobs still running: job-1, last checkpoint at never"
    assert ladder.rungs[3:] == [
        "SIGTERM to the member process (none alive)",
        "re-check after 0 s: still timed_out",
        "SIGKILL to the member process (none alive)",
        "force-terminated: jobs killed, task needs_inspection, member_lost sent; still alive: 777, 778",
    ]
    assert ladder.outcome == "force_terminated"


@pytest.mark.clause("SHD-7", "XPR-3")
def test_an_inspection_of_a_running_member_is_refused_in_these_words(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal says whom, in what status, what was refused and why — before any signal."""
    h = Harness(SQLiteStorage(tmp_path / "team.db"), ManualClock(0.0), [RecordingTool().tool()])
    h.add_member("m0", ["deploy"])
    fake = RecordingOS(monkeypatch, h, [4242])
    with pytest.raises(MemberBusy) as refused:
        _lead.inspect_lost_member(h, "m0")
    assert str(refused.value) == "m0 is running: cannot inspect it; only an unhealthy member is inspected"
    assert fake.signals == []


@pytest.mark.clause("SHD-7", "XPR-3")
def test_a_process_the_lead_may_not_signal_refuses_the_inspection_naming_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process of the lost member's job that the Lead may not signal (``EPERM``: it runs as
    another user) is not an error of the Lead's own: it is a process that outlived the kill, and
    the inspection refuses naming it, recording nothing (fail closed). Without ``PermissionError``
    among the errors the kill passes over, the raw OS error escaped instead."""
    h, _ = timed_out(tmp_path)
    h.members.lapse("m0")
    fake = RecordingOS(monkeypatch, h, [])
    fake.found[_lead.JOB_ENV] = [4242]

    def not_permitted(pid: int, signum: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(_lead.os, "kill", not_permitted)
    monkeypatch.setattr(_lead, "wait_until", lambda *args, **kwargs: False)
    before = h.snapshot()
    with pytest.raises(ProcessesSurvive) as refused:
        _lead.inspect_lost_member(h, "m0")
    assert refused.value.pids == [4242]
    assert h.snapshot() == before


@pytest.mark.clause("SHD-7", "XPR-3")
def test_an_inspection_waits_for_a_killed_process_that_dies_late(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL takes effect later for a process in uninterruptible I/O (it dies when its call
    returns): the inspection polls until the member's process is gone — here 0.2 s after the kill,
    well inside the kill's bound — and then goes on; it is not refused as if the process had
    outlived the kill."""
    h, _ = timed_out(tmp_path)
    h.members.lapse("m0")
    fake = RecordingOS(monkeypatch, h, [])
    killed_at: list[float] = []

    def dies_late(pid: int, signum: int) -> None:
        killed_at.append(time.monotonic())

    monkeypatch.setattr(_lead.os, "kill", dies_late)
    fake.found[_lead.MEMBER_ENV] = lambda: [] if killed_at and time.monotonic() > killed_at[0] + 0.2 else [4242]
    assert _lead.inspect_lost_member(h, "m0") == ["t0"]
    assert h.member("m0")["status"] == "stopped"
