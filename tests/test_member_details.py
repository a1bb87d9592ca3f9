"""What each refusal of the member lifecycle says, the event a lapse leaves on a task, and when a
heartbeat has lapsed (SHD-7, SHD-10, XPR-1; DESIGN rule 8).

Found by the mutation score of ``reference/_members.py`` (every 3rd of its 357 mutants): a refusal
to inspect, lapse, restart or retire a member could lose what was refused or why, a flagged task's
history could lose who flagged it and why, and a heartbeat exactly ``max_age`` old could count as
lapsed — with every test passing.
"""

from __future__ import annotations

import pytest

import reference as r
from reference import Storage
from tests.test_shutdown_details import says
from tests.test_team import Team


@pytest.fixture
def team(storage: Storage) -> Team:
    return Team(storage).setup()


@pytest.mark.clause("SHD-7", "SHD-10", "XPR-1")
def test_every_refusal_of_the_member_lifecycle_says_what_and_why(team: Team) -> None:
    h = team.h
    assert says(team, lambda: h.members.inspect("m0"), r.MemberBusy) == (
        "m0 is running: cannot inspect it; only an unhealthy member is inspected"
    )
    assert says(team, lambda: h.members.restart("m0"), r.MemberBusy) == (
        "m0 is running: cannot restart it; stop it first (drain or inspection)"
    )
    assert says(team, lambda: h.members.retire("m0"), r.MemberBusy) == (
        "m0 is running: cannot retire it; stop it first (drain or inspection)"
    )
    h.members.lapse("m1")
    assert says(team, lambda: h.members.lapse("m1"), r.MemberBusy) == (
        "m1 is unhealthy: cannot lapse; only a live member's heartbeat lapses"
    )
    h.claim("m0", "t0")
    h.jobs.start("m0", "j1", "sleep 30", cancellable=False)
    h.members.lapse("m0")
    h.members.inspect("m0")
    assert says(team, lambda: h.members.restart("m0"), r.MemberBusy) == (
        "m0 is stopped: cannot restart it; its jobs j1 still run"
    )
    assert says(team, lambda: h.members.retire("m0"), r.MemberBusy) == (
        "m0 is stopped: cannot retire it; its jobs j1 still run"
    )


@pytest.mark.clause("SHD-7", "SHD-10", "AUD-1")
def test_a_task_flagged_by_a_lapse_says_the_lead_flagged_it_for_inspection(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.h.members.lapse("m0")
    task = team.h.read("task", "t0")
    assert task is not None and task.doc["status"] == "needs_inspection"
    assert {k: task.doc["history"][-1][k] for k in ("actor", "event")} == {"actor": "lead", "event": "needs_inspection"}


@pytest.mark.clause("SHD-10")
def test_a_heartbeat_exactly_max_age_old_has_not_lapsed(team: Team) -> None:
    team.h.members.heartbeat("m0", 1)
    team.h.members.heartbeat("m1", 1)
    team.clock.advance(10.0)
    assert team.h.members.lapsed(10.0) == []
    team.clock.advance(0.5)
    assert team.h.members.lapsed(10.0) == ["m0", "m1"]


@pytest.mark.clause("SHD-10", "XPR-1")
def test_a_restarted_member_is_not_lost_for_its_old_incarnations_heartbeat(team: Team) -> None:
    """A new incarnation registers its own heartbeat: the old one's last beat, long past, does not
    make it lapse at once; once it beats it lapses as any member does (an outside review's plant
    that kept the old beat on restart was caught only by the process demo)."""
    h = team.h
    h.members.heartbeat("m0", 1)
    h.members.lapse("m0")
    h.members.inspect("m0")
    team.clock.advance(100)
    incarnation = h.members.restart("m0")
    assert team.member("m0")["last_heartbeat_at"] == team.clock.now()  # its registration, not the old beat
    assert "m0" not in h.members.lapsed(5)
    h.members.heartbeat("m0", incarnation)
    assert "m0" not in h.members.lapsed(5)
    team.clock.advance(6)
    assert "m0" in h.members.lapsed(5)


@pytest.mark.clause("XPR-1", "SHD-5", "SHD-2", "MEM-1")
def test_a_member_restarted_after_its_drain_is_a_fresh_running_record(team: Team) -> None:
    """m0 drained, stopped by its finish (the request named on its record), then restarted: the new
    incarnation's record is running, accepting, holds no task, names no shutdown request (it drains
    for nothing, XPR-1) and has beaten at its registration — field by field, on the path where every
    one of them was set (an outside review's plant kept the old request's id across the restart;
    only the slow stateful test saw it)."""
    h = team.h
    pid = team.drain("m0")
    assert team.member("m0")["shutdown_request_id"] == pid
    h.shutdowns.finish("m0")
    assert team.member("m0")["status"] == "stopped"
    team.clock.advance(3)
    incarnation = h.members.restart("m0")
    fresh = team.member("m0")
    assert incarnation == 2
    assert {k: fresh[k] for k in ("status", "incarnation", "accepting_new_tasks", "current_task_id")} == {
        "status": "running",
        "incarnation": 2,
        "accepting_new_tasks": True,
        "current_task_id": None,
    }
    assert fresh["shutdown_request_id"] is None and fresh["last_heartbeat_at"] == team.clock.now()
    team.check()


@pytest.mark.clause("SHD-10")
def test_a_member_that_never_beats_lapses_from_its_registration(team: Team) -> None:
    """Registering is the first beat (SHD-10): a member process that dies before it ever beats —
    a fresh member, or a restarted one — is found lost once that age passes, its claim flagged (an
    outside review found both never reported, their claims held forever)."""
    h = team.h
    assert "m0" not in h.members.lapsed(5)
    team.clock.advance(6)
    assert "m0" in h.members.lapsed(5)
    h.members.lapse("m0")
    h.members.inspect("m0")
    incarnation = h.members.restart("m0")
    assert "m0" not in h.members.lapsed(5)
    team.clock.advance(6)
    assert "m0" in h.members.lapsed(5)
    assert incarnation == 2


@pytest.mark.clause("SHD-10", "STO-4")
def test_a_member_that_beats_between_the_watchers_read_and_its_lapse_is_not_declared_lost(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher reads who lapsed, then lapses each: a beat in between (the member's own thread)
    keeps the member alive, and no ``member_lost`` is owed; one that did not beat lapses as before
    (an outside review found the beat ignored and a live member declared lost)."""
    from reference._lead import watch_lapses

    h = team.h
    h.members.heartbeat("m0", 1)
    h.members.heartbeat("m1", 1)
    team.clock.advance(30)
    read = h.members.lapsed

    def read_then_m0_beats(max_age: float) -> list[str]:
        seen = read(max_age)
        h.members.heartbeat("m0", 1)
        return seen

    monkeypatch.setattr(h.members, "lapsed", read_then_m0_beats)
    assert watch_lapses(h, 10) == ["m1"]
    assert (team.member("m0")["status"], team.member("m1")["status"]) == ("running", "unhealthy")
    lost = [row.doc["message"] for row in h.storage.scan("outbox_entry")]
    assert [m["body"]["member_id"] for m in lost if m["message_type"] == "member_lost"] == ["m1"]
    assert says(team, lambda: h.members.lapse("m0", 10), r.MemberBusy) == (
        "m0 is running: cannot lapse; it beat at 30.0, within 10 s"
    )


@pytest.mark.clause("SHD-10", "SHD-7", "STO-4")
def test_a_beat_between_the_lapses_own_read_and_its_write_keeps_the_member_and_its_claim(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The beat lands after the lapse read the member and before its compare-and-set: the write
    loses, the lapse reads again and refuses, and nothing of the lapse is left — the member runs
    with its new beat, its claimed task is not flagged, no ``member_lost`` is owed (a second
    outside review judged the retry on the first read, and flagged the task before the member)."""
    h = team.h
    h.claim("m0", "t0")
    h.members.heartbeat("m0", 1)
    team.clock.advance(30)
    read, beaten = h.member_row, []

    def read_then_beat(member_id: str) -> r.Stored:
        row = read(member_id)
        if member_id == "m0" and not beaten:
            beaten.append(True)
            h.members.heartbeat("m0", 1)  # the member's own thread, between the read and the write
        return row

    monkeypatch.setattr(h, "member_row", read_then_beat)
    with pytest.raises(r.MemberBusy, match=r"it beat at 30\.0, within 10 s"):
        h.members.lapse("m0", 10)
    assert beaten and (team.member("m0")["status"], team.member("m0")["last_heartbeat_at"]) == ("running", 30.0)
    assert (team.task("t0")["status"], team.task("t0")["owner_id"]) == ("claimed", "m0")
    assert [
        row.doc for row in h.storage.scan("outbox_entry") if row.doc["message"]["message_type"] == "member_lost"
    ] == []


@pytest.mark.clause("SHD-10", "STO-4")
def test_the_lapse_judged_again_at_its_write_agrees_with_lapsed_on_the_boundary(team: Team) -> None:
    """``lapse(member, max_age)`` judges the beat again on the row it writes against (STO-4): a beat
    exactly ``max_age`` old has not lapsed there either — refused, the member left running — and
    the least instant later it has (found by flipping every time comparison of the reference,
    ``tests/test_time_comparisons.py``: this one changed no test)."""
    h = team.h
    h.members.heartbeat("m0", 1)
    team.clock.advance(10.0)
    assert says(team, lambda: h.members.lapse("m0", 10.0), r.MemberBusy) == (
        f"m0 is running: cannot lapse; it beat at {team.clock.now() - 10.0}, within 10.0 s"
    )
    assert team.member("m0")["status"] == "running"
    team.clock.advance(1e-6)
    h.members.lapse("m0", 10.0)
    assert team.member("m0")["status"] == "unhealthy"
