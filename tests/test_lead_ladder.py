"""The Lead's ladder and inspection (SHD-7) in-process, with the OS replaced by a recorder: which
processes it would signal, what it finds alive. ``tests/test_member_processes.py`` runs them on
real processes; these are the refusals and races a real run rarely shows (outside review 42:
each of these plants passed every test).

Clause: SHD-7, XPR-3, SHD-6.
"""

from __future__ import annotations

from typing import Any

import pytest

from reference import (
    Harness,
    InProcessJobRunner,
    ManualClock,
    ProcessesSurvive,
    RecordingTool,
    ShutdownRefused,
    SQLiteStorage,
    _lead,
)
from spec.ids import message_id


class FakeOS:
    """The processes the Lead would find and the signals it would send, recorded, none real."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, alive: dict[str, list[int]]) -> None:
        self.signals: list[tuple[int, int]] = []
        self.alive = alive  # environment variable → the pids found under it
        monkeypatch.setattr(_lead, "member_processes", lambda team, member, incarnation: [4242])
        monkeypatch.setattr(_lead, "signal_group", lambda pid, signum: self.signals.append((pid, int(signum))))
        monkeypatch.setattr(_lead, "find_processes", lambda team, env, value: list(self.alive.get(env, [])))
        monkeypatch.setattr(_lead, "wait_until", lambda *args, **kwargs: False)
        monkeypatch.setattr(_lead.os, "kill", lambda pid, signum: self.signals.append((pid, int(signum))))


def draining(tmp_path: Any, clock: ManualClock | None = None, cancellable: bool = False) -> tuple[Harness, str]:
    """m0 holds t0 and runs job-1 (non-cancellable unless asked); the Lead asked it to stop; it drains."""
    tools = [RecordingTool().tool()]
    h = Harness(SQLiteStorage(tmp_path / "team.db"), clock or ManualClock(0.0), tools, jobs=InProcessJobRunner())
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    h.jobs.start("m0", "job-1", "sleep", cancellable=cancellable)
    pid = h.shutdowns.request("lead", "m0", "sd-1", ttl_seconds=10)
    h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    return h, pid


@pytest.mark.clause("SHD-7", "SHD-6")
@pytest.mark.parametrize("when", ["requested", "draining"])
def test_the_ladder_refuses_a_request_not_yet_timed_out_before_any_signal(
    when: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before its deadline a request is the member's to finish: the ladder refuses at once, sends
    no signal and writes nothing (a widened guard SIGTERMed and SIGKILLed a member still in time)."""
    h = Harness(SQLiteStorage(tmp_path / "team.db"), ManualClock(0.0), [RecordingTool().tool()])
    h.add_member("m0", ["deploy"])
    pid = h.shutdowns.request("lead", "m0", "sd-1", ttl_seconds=10)
    if when == "draining":
        h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    fake, before = FakeOS(monkeypatch, {}), h.snapshot()
    with pytest.raises(ShutdownRefused, match="the ladder starts at timed_out"):
        _lead.escalate(h, pid, grace_seconds=0)
    assert fake.signals == [] and h.snapshot() == before


@pytest.mark.clause("SHD-7", "SHD-6")
def test_a_drain_that_completes_as_the_kill_lands_is_reported_completed(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The member finishes its drain between the ladder's re-check and its SIGKILL: the ladder
    checks again and reports ``completed``, forcing nothing (without that check the force-terminate
    is refused and the ladder fails)."""
    clock = ManualClock(0.0)
    h, pid = draining(tmp_path, clock)
    clock.advance(20)
    h.monitor_pass()
    assert h.shutdowns.require(pid).doc["status"] == "timed_out"
    FakeOS(monkeypatch, {})

    def kill_as_the_member_finishes(pids: list[int], timeout_seconds: float = 5.0) -> None:
        h.jobs.exited("job-1", 0)
        h.shutdowns.drain_pass("m0")

    monkeypatch.setattr(_lead, "force_kill", kill_as_the_member_finishes)
    ladder = _lead.escalate(h, pid, grace_seconds=0)
    assert ladder.outcome == "completed" and ladder.rungs[-1].startswith("re-check after SIGKILL")
    assert h.shutdowns.require(pid).doc["status"] == "completed" and h.member("m0")["status"] == "stopped"
    assert [m for m in h.snapshot()["message"] if m["message"]["message_type"] == "member_lost"] == []


@pytest.mark.clause("SHD-7", "XPR-3")
@pytest.mark.parametrize("survivor", ["member", "job"])
def test_an_inspection_refuses_while_the_member_or_a_job_survives(
    survivor: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lost member with a busy job: if its own process, or its job's, outlives the kill, the
    inspection refuses and records nothing (the member's survivor was forgotten once the jobs'
    survivors were counted, and the member marked stopped beside a live process)."""
    h, _ = draining(tmp_path)
    h.members.lapse("m0")
    env = _lead.MEMBER_ENV if survivor == "member" else _lead.JOB_ENV
    FakeOS(monkeypatch, {env: [4242]})
    before = h.snapshot()
    with pytest.raises(ProcessesSurvive):
        _lead.inspect_lost_member(h, "m0")
    assert h.snapshot() == before
