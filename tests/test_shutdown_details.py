"""What each shutdown refusal and record says, word for word (DESIGN rule 8; SHD-1 … SHD-7,
TSK-3, AUD-1).

Found by the mutation score of ``reference/_shutdown.py`` (every 8th of its 1,217 mutants, 78.9 %
killed): a refusal could lose what it refused, why, or what to do; a finish with a job still
running could be refused for the task it holds instead of the job it waits for; the request's
event could lose its reason and an inspection's completion its actor; and a drain's release could
drop the state it was asked to checkpoint — with every test passing. The refusals are what an
agent (or the Lead) reads to decide what to do next; the events are the record's own history.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

import reference as r
import spec
from model_tests.interleave_pairs import SHUTDOWN, draining_with_task
from reference import Storage
from spec import invariants
from spec.ids import message_id
from tests.test_team import Team, unchanged


@pytest.fixture
def team(storage: Storage) -> Team:
    return Team(storage).setup()


def says(team: Team, call: Callable[[], Any], error: type[Exception]) -> str:
    """``call`` raises ``error``, changes nothing (``unchanged``), and this is what it says."""
    return str(unchanged(team, call, error))


@pytest.mark.clause("SHD-1", "SHD-2")
def test_every_refusal_of_a_request_and_its_delivery_says_what_why_and_what_to_do(team: Team) -> None:
    h = team.h
    pid = team.request("m0")
    mid = message_id(pid, "request")
    assert says(team, lambda: h.shutdowns.request("m1", "m0", "sd-x"), r.NotLead) == (
        "only the Lead (lead) may request a shutdown of m0, not m1 (SHD-1); ask the Lead"
    )
    assert says(team, lambda: h.shutdowns.request("lead", "m1", "sd-1"), r.ShutdownRefused) == (
        "request sd-1 refused: it targets m0; use a new key"
    )
    assert says(team, lambda: h.shutdowns.cancel("m1", pid), r.NotLead) == (
        f"only the Lead (lead) may cancel shutdown {pid}, not m1 (SHD-1); ask the Lead"
    )
    assert says(team, lambda: h.shutdowns.require("sd-nope"), r.UnknownRecord) == (
        "no shutdown_request 'sd-nope'; the Lead requests a shutdown with ShutdownProtocol.request"
    )
    assert says(team, lambda: h.shutdowns.begin_drain("m0", "msg-nope"), r.UnknownRecord) == (
        "no message 'msg-nope'; the Lead must send the request first"
    )
    assert says(team, lambda: h.shutdowns.begin_drain("m1", mid), r.ShutdownRefused) == (
        f"m1 handling {mid} refused: it is not a shutdown request to it"
    )
    assert says(team, lambda: h.shutdowns.drain_jobs("m1"), r.MemberBusy) == (
        "m1 is running: cannot drain; a drain begins with a shutdown request"
    )
    team.h.shutdowns.begin_drain("m0", mid)
    assert says(team, lambda: h.shutdowns.cancel("lead", pid), r.ShutdownRefused) == (
        f"cancel of {pid} refused: it is draining; only a requested one"
    )
    h.shutdowns.finish("m0")
    assert says(team, lambda: h.shutdowns.request("lead", "m0", "sd-2"), r.ShutdownRefused) == (
        "shutdown of m0 refused: it is stopped; only a running member"
    )


@pytest.mark.clause("SHD-3", "SHD-5", "JOB-2")
def test_every_refusal_of_a_drain_step_names_what_it_waits_for(team: Team) -> None:
    h = team.h
    h.claim("m0", "t0")
    h.jobs.start("m0", "j1", "sleep 30", cancellable=False)
    team.drain("m0")
    assert says(team, lambda: h.shutdowns.drain_jobs("m0"), r.ShutdownRefused) == (
        "job cancellation for m0 refused: no cancellable running job (busy: ['j1'])"
    )
    waiting = (
        "m0 cannot {} yet: jobs j1 still run (a cancel request is not a stopped job, SHD-3); run the drain "
        "pass again after they exit"
    )
    # SHD-5: the job it waits for, not the task it still holds, is what a finish names first
    assert says(team, lambda: h.shutdowns.finish("m0"), r.DrainNotReady) == waiting.format("finish the drain")
    assert says(team, lambda: h.shutdowns.release_task("m0"), r.DrainNotReady) == waiting.format("release task t0")
    team.runner.finish("j1", 0)
    h.jobs.poll()
    assert says(team, lambda: h.shutdowns.finish("m0"), r.ShutdownRefused) == (
        "finish of m0 refused: it still holds t0"
    )
    h.shutdowns.release_task("m0")
    assert says(team, lambda: h.shutdowns.release_task("m0"), r.ShutdownRefused) == (
        "release by m0 refused: it holds no task"
    )


@pytest.mark.clause("SHD-3", "SHD-5")
def test_a_drain_whose_request_completed_under_it_is_refused_by_the_request(team: Team) -> None:
    """A crash between the finish's record and its member write: the member still drains for a
    request that is complete; a drain step names the request and its status."""
    pid = team.drain("m0")
    team.storage.faults.crash_after.add("shutdown.finish/record")
    with pytest.raises(r.Crash):
        team.h.shutdowns.finish("m0")
    assert team.member("m0")["status"] == "draining"
    assert says(team, lambda: team.h.shutdowns.drain_jobs("m0"), r.ShutdownRefused) == (
        f"drain of m0 refused: its request {pid} is completed"
    )
    before = team.h.snapshot()
    assert team.h.shutdowns.finish("m0") is None  # a second finish beside the first in flight: a no-op
    assert team.h.snapshot() == before  # (STO-4: the serial second finish; mutation testing: in_flight)


@pytest.mark.clause("AUD-1", "SHD-1", "SHD-6", "SHD-7")
def test_each_event_says_who_decided_and_why(team: Team) -> None:
    h = team.h
    pid = h.shutdowns.request("lead", "m0", "sd-1", "scale down for maintenance", ttl_seconds=5)
    assert h.shutdowns.require(pid).doc["events"] == [
        {"actor": "lead", "event": "requested", "summary": "scale down for maintenance", "at": 0.0}
    ]
    h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    h.claim("m1", "t1")
    h.jobs.start("m1", "j1", "sleep 30", cancellable=False)
    other = team.drain("m1", "sd-2", ttl=1)
    team.clock.advance(2)
    assert h.monitor_pass() is None
    timed_out = h.shutdowns.require(other).doc
    assert (timed_out["status"], timed_out["reason"]) == ("timed_out", "timed_out")
    assert timed_out["events"][-1] == {"actor": "monitor", "event": "timed_out", "summary": "", "at": 2.0}
    h.shutdowns.force_terminate(other)
    h.members.inspect("m1")  # SHD-7: what the inspected member drained for completes, decided by the Lead
    completed = h.shutdowns.require(other).doc
    assert completed["status"] == "completed"
    assert completed["events"][-1] == {"actor": "lead", "event": "completed", "summary": "", "at": 2.0}


@pytest.mark.clause("TSK-3", "SHD-3", "TSK-2")
def test_a_release_checkpoints_the_state_it_is_given_and_keeps_the_last_one_otherwise(storage: Storage) -> None:
    team = Team(storage).setup(members=3)
    h = team.h
    tokens = {m: h.claim(m, t) for m, t in (("m0", "t0"), ("m1", "t1"), ("m2", "t2"))}
    team.clock.advance(1)
    h.tasks.checkpoint("m0", "t0", tokens["m0"], {"step": 1})
    h.tasks.checkpoint("m1", "t1", tokens["m1"], {"step": 1})
    team.clock.advance(1)
    for member, key in (("m0", "sd-0"), ("m1", "sd-1"), ("m2", "sd-2")):
        team.drain(member, key)
    h.shutdowns.release_task("m0", {"step": 2})  # the state given: checkpointed now
    h.shutdowns.release_task("m1")  # none given: the last checkpoint, as it was (TSK-3)
    h.shutdowns.release_task("m2")  # none given and none before: an empty one, from now
    assert [team.task(t)["checkpoint"] for t in ("t0", "t1", "t2")] == [
        {"state": {"step": 2}, "saved_at": 2.0, "released": True},
        {"state": {"step": 1}, "saved_at": 1.0, "released": True},
        {"state": None, "saved_at": 2.0, "released": True},
    ]
    assert [team.task(t)["history"][-1]["event"] for t in ("t0", "t1", "t2")] == ["released"] * 3


@pytest.mark.clause("TSK-2", "SHD-3")
def test_a_release_refuses_a_state_that_is_not_plain_json_and_names_the_task(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.drain("m0")
    assert says(team, lambda: team.h.shutdowns.release_task("m0", {"at": (1, 2)}), r.BadCheckpoint) == (
        "checkpoint of task t0 refused: it does not survive a JSON round trip (tuples, non-string keys?); "
        "pass plain JSON data (TSK-2)"
    )


@pytest.mark.clause("SHD-2", "MSG-5", "REC-2")
@pytest.mark.parametrize("step", ["shutdown.begin_drain/record", "shutdown.begin_drain/member"])
def test_a_delivery_handled_again_after_a_crash_resumes_the_drain(team: Team, step: str) -> None:
    """The member crashed while beginning its drain, before the delivery's result was recorded: the
    message is still pending, and handling it again resumes the drain instead of refusing it for the
    request it already moved to ``draining``."""
    pid = team.request("m0")
    mid = message_id(pid, "request")
    team.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        team.h.shutdowns.begin_drain("m0", mid)
    assert team.h.shutdowns.require(pid).doc["status"] == "draining"
    result = team.h.shutdowns.begin_drain("m0", mid)
    assert result == {"outcome": "draining", "delivered_at": 0.0}
    member = team.member("m0")
    assert (member["status"], member["shutdown_request_id"], member["accepting_new_tasks"]) == ("draining", pid, False)
    assert team.h.shutdowns.begin_drain("m0", mid) == result  # MSG-5: the same result again
    team.h.shutdowns.finish("m0")
    team.check()


@pytest.mark.clause("SHD-6")
@pytest.mark.parametrize("short", ["m0", "m1"])
def test_the_monitor_expires_every_request_past_its_deadline_whichever_it_reads_first(team: Team, short: str) -> None:
    """Two requests, one past its deadline and one not: the monitor's pass moves the one, whichever
    of the two it reads first, and leaves the other."""
    ttl = {"m0": 100.0, "m1": 100.0, short: 1.0}
    pids = {m: team.request(m, f"sd-{m}", ttl=ttl[m]) for m in ("m0", "m1")}
    team.clock.advance(2)
    assert team.h.monitor_pass() is None
    statuses = {m: team.h.shutdowns.require(pid).doc["status"] for m, pid in pids.items()}
    assert statuses == {m: "expired" if m == short else "requested" for m in ("m0", "m1")}


@pytest.mark.clause("MSG-3", "SHD-6", "XPR-1")
def test_a_stale_or_expired_drain_step_is_refused_in_words(team: Team) -> None:
    h = team.h
    pid = team.request("m0", ttl=1)
    mid = message_id(pid, "request")
    team.clock.advance(2)
    h.monitor_pass()
    assert says(team, lambda: h.shutdowns.begin_drain("m0", mid), r.MessageNotPending) == (
        f"message {mid} is expired, not pending: nothing to handle (MSG-3)"
    )
    team.drain("m1", "sd-2")
    assert says(team, lambda: h.shutdowns.drain_jobs("m1", incarnation=2), r.StaleMember) == (
        "m1: call made for incarnation 2, the member is now incarnation 1; a stale process must stop (XPR-1)"
    )


@pytest.mark.clause("XPR-1", "INV-11", "SHD-3", "SHD-5", "SHD-10")
@pytest.mark.parametrize("step", ["heartbeat", "drain_jobs", "release_task", "finish"])
def test_a_step_for_an_incarnation_the_member_never_had_is_refused_and_changes_nothing(team: Team, step: str) -> None:
    """XPR-1 fences on the incarnation being the member's own, not merely not older: a heartbeat or
    a drain step made for incarnation 2 of a member that is still incarnation 1 (a caller's wrong
    number, or a future one) is refused as stale and writes nothing (INV-11). The drain has work
    left for each step to do — a cancellable job running, the task held — so a step let through
    would change the stores (outside review 44 P1: ``<`` for ``!=`` in the fence)."""
    h = team.h
    h.claim("m0", "t0")
    h.jobs.start("m0", "job-1", "index", cancellable=True)
    team.drain("m0")
    team.clock.advance(1)  # a beat let through would write a new last_heartbeat_at
    calls = {
        "heartbeat": lambda: h.members.heartbeat("m0", 2),
        "drain_jobs": lambda: h.shutdowns.drain_jobs("m0", incarnation=2),
        "release_task": lambda: h.shutdowns.release_task("m0", {"step": 1}, incarnation=2),
        "finish": lambda: h.shutdowns.finish("m0", incarnation=2),
    }
    if step in ("release_task", "finish"):  # the job has exited: only the fence stands in the way
        team.runner.finish("job-1", 0)
        h.jobs.poll()
        if step == "finish":
            h.shutdowns.release_task("m0", {"step": 1})
    assert says(team, calls[step], r.StaleMember) == (
        "m0: call made for incarnation 2, the member is now incarnation 1; a stale process must stop (XPR-1)"
    )


@pytest.mark.clause("SHD-2", "REC-4")
def test_a_request_whose_drain_was_cut_short_is_refused_while_its_member_drains_for_another(team: Team) -> None:
    """Two requests to m0. One instance begins the drain for B and dies right after B's record
    (B draining, m0 still running); before its process restarts, another instance begins the drain
    for A (m0 drains for A). B's request delivered again must be refused — the member drains for
    another request (SHD-2) — changing nothing but the delivery's recorded result, not resume B's
    drain on a member draining for A (a guard that no single-instance run and no model
    configuration reaches: the model reconciles at once after each crash)."""
    h = team.h
    a, b = team.request("m0"), h.shutdowns.request("lead", "m0", "sd-b")
    team.storage.faults.crash_after.add("shutdown.begin_drain/record")
    with pytest.raises(r.Crash):
        h.shutdowns.begin_drain("m0", message_id(b, "request"))
    assert h.shutdowns.require(b).doc["status"] == "draining" and team.member("m0")["status"] == "running"
    assert h.shutdowns.begin_drain("m0", message_id(a, "request"))["outcome"] == "draining"
    assert team.member("m0")["shutdown_request_id"] == a
    before = h.snapshot()
    result = h.shutdowns.begin_drain("m0", message_id(b, "request"))
    assert result["outcome"] == "refused" and result["reason"] == "request is draining", result
    after = h.snapshot()
    assert [k for k in after if after[k] != before[k]] == ["message"]


def _cut_short_drain(team: Team, lapse: bool = True) -> str:
    """m0's process dies right after its drain's first write (the request ``draining``, m0 still
    ``running``, its record naming no request), and the Lead's instance, which does not restart,
    sees its heartbeat lapse (with ``lapse``)."""
    h = team.h
    pid = team.request("m0")
    team.storage.faults.crash_after.add("shutdown.begin_drain/record")
    with pytest.raises(r.Crash):
        h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    team.storage.faults.crash_after.clear()
    assert h.shutdowns.require(pid).doc["status"] == "draining" and team.member("m0")["shutdown_request_id"] is None
    if lapse:
        h.members.lapse("m0")
    return pid


def _inspection_cut_short(team: Team) -> str:
    """:func:`_cut_short_drain`, then the inspection cut off before its last write (m0 stopped, the
    request still open)."""
    pid = _cut_short_drain(team)
    team.storage.faults.crash_before.add("member.inspect/shutdown")
    with pytest.raises(r.Crash):
        team.h.members.inspect("m0")
    team.storage.faults.crash_before.clear()
    return pid


@pytest.mark.clause("SHD-7", "XPR-1")
def test_a_stale_requests_ladder_signals_only_the_incarnation_it_was_made_for(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old request left open (its inspection cut off), m0 restarted, the old request timed out:
    the Lead's ladder for it looks for the processes of the incarnation it was made for (1), never
    the restarted member's (2) — its SIGTERM and SIGKILL come before ``force_terminate`` refuses
    the stale request, so a lookup by the current incarnation kills the live member (an outside
    review's plant; the ladder's tests never restarted the member)."""
    from reference import _lead

    asked: list[tuple[str, int]] = []
    monkeypatch.setattr(
        _lead, "member_processes", lambda team_, member, incarnation: asked.append((member, incarnation)) or []
    )
    h = team.h
    old = _inspection_cut_short(team)
    h.members.restart("m0")
    team.clock.advance(20)
    h.monitor_pass()
    assert h.shutdowns.require(old).doc["status"] == "timed_out" and team.member("m0")["incarnation"] == 2
    with contextlib.suppress(spec.ProtocolError):
        _lead.escalate(h, old, grace_seconds=0)
    assert asked and set(asked) == {("m0", 1)}, asked


@pytest.mark.clause("SHD-7", "SHD-10", "INV-12", "INV-4")
def test_an_inspection_ends_a_drain_its_member_never_noted(team: Team) -> None:
    """After a drain cut short at its first write, the lost member's inspection completes that
    request too (its ``shutdown_ack`` owed), though the member's record names none: nothing else
    would ever end it once the member runs again (it stayed ``draining``, then ``timed_out``,
    forever; an outside review found it). The restarted member is untouched by it, and a
    restart's reconciliation changes nothing of this."""
    h = team.h
    pid = _cut_short_drain(team)
    h.members.inspect("m0")
    assert h.shutdowns.require(pid).doc["status"] == "completed"
    messages = [row.doc["message"] for row in h.storage.scan("outbox_entry")]
    acks = [m["body"]["protocol_id"] for m in messages if m["message_type"] == "shutdown_ack"]
    assert acks == [pid]
    incarnation = h.members.restart("m0")
    h.reconcile()
    member = team.member("m0")
    assert (member["status"], member["incarnation"], member["accepting_new_tasks"]) == ("running", incarnation, True)
    team.check()


@pytest.mark.clause("XPR-1", "INV-11", "INV-12", "REC-2")
def test_a_drain_of_a_restarted_members_old_incarnation_is_completed_never_resumed(team: Team) -> None:
    """The same drain, and the inspection cut off before its last write (m0 stopped, the request
    still ``draining``); another instance restarts m0 before the dead one comes back. The
    restart's reconciliation completes the old incarnation's request — it stopped — and never
    resumes it on the new incarnation (XPR-1: an outside review's plant that dropped the
    incarnation check drained the new m0, and every test passed)."""
    h = team.h
    pid = _inspection_cut_short(team)
    assert h.shutdowns.require(pid).doc["status"] == "draining" and team.member("m0")["status"] == "stopped"
    incarnation = h.members.restart("m0")
    h.reconcile()
    member = team.member("m0")
    assert (member["status"], member["incarnation"], member["accepting_new_tasks"]) == ("running", incarnation, True)
    assert member["shutdown_request_id"] is None
    assert h.shutdowns.require(pid).doc["status"] == "completed"
    h.reconcile()
    assert h.shutdowns.require(pid).doc["status"] == "completed" and team.member("m0") == member
    team.check()


@pytest.mark.clause("SHD-7", "XPR-1", "INV-11")
def test_a_stale_requests_last_rung_never_hits_the_drain_the_member_runs_now(team: Team) -> None:
    """The drain cut short at its first write, the inspection cut off before its last (so the old
    request stays open), m0 restarted by another instance and the old request timed out by the
    monitor before any reconciliation; then a new request drains the new m0. Force-terminating the
    old request is refused and changes nothing: the member drains for the new one (an outside
    review: it made the new incarnation unhealthy and killed its jobs). The new request's own
    last rung still works once it times out."""
    h = team.h
    old = _inspection_cut_short(team)
    h.members.restart("m0")
    team.clock.advance(20)
    h.monitor_pass()
    assert h.shutdowns.require(old).doc["status"] == "timed_out"
    new = team.drain("m0", "sd-2")
    team.clock.advance(20)
    h.monitor_pass()
    assert h.shutdowns.require(new).doc["status"] == "timed_out"
    assert says(team, lambda: h.shutdowns.force_terminate(old), r.ShutdownRefused) == (
        f"force termination for {old} refused: m0 drains for {new}, not this request"
    )
    h.shutdowns.force_terminate(new)
    assert team.member("m0")["status"] == "unhealthy"


@pytest.mark.clause("SHD-7", "INV-4")
def test_an_inspection_leaves_another_members_drain(team: Team) -> None:
    """m1 drains for its own request while m0, after a drain cut short, is lost and inspected:
    m0's request completes, m1's stays draining and m1 is untouched (both at incarnation 1, so
    only the target tells them apart: a second review's plant that dropped it passed)."""
    h = team.h
    other = team.drain("m1", "sd-m1")
    mine = _cut_short_drain(team)
    before = team.member("m1")
    h.members.inspect("m0")
    assert h.shutdowns.require(mine).doc["status"] == "completed"
    assert h.shutdowns.require(other).doc["status"] == "draining" and team.member("m1") == before
    team.check()


@pytest.mark.clause("MEM-1", "INV-2", "SHD-6")
def test_a_member_still_running_under_a_timed_out_request_claims_nothing(team: Team) -> None:
    """A drain cut short at its first write leaves m0 running under a draining request; the
    monitor times it out before any reconciliation. A timed-out request is still active: m0's
    claim is refused and changes nothing (a second review's plant that left ``timed_out`` out of
    the claim's check passed every test)."""
    h = team.h
    pid = _cut_short_drain(team, lapse=False)
    team.clock.advance(20)
    h.monitor_pass()
    assert h.shutdowns.require(pid).doc["status"] == "timed_out" and team.member("m0")["status"] == "running"
    assert says(team, lambda: h.claim("m0", "t0"), r.ClaimRefused) == (
        f"m0 may not claim a task: shutdown request {pid} targets it (MEM-1)"
    )


def _release_beside_the_lead(storage: r.Storage, *, ends_it: bool, moved_on: bool = False) -> dict[str, Any]:
    """m0's release in one process; once its task is written back to ``pending``, the Lead's process
    times the drain out (past its deadline, 60) and, with ``ends_it``, force-terminates m0 and
    inspects it (with ``moved_on``, m1 first claims the task m0 released). Every state invariant
    holds after; returns the request."""
    clock = r.ManualClock(0.0)
    member = r.Harness(storage, clock, [r.RecordingTool().tool()])
    draining_with_task(member)
    lead = r.Harness(storage, clock, [r.RecordingTool().tool()])
    if moved_on:
        lead.add_member("m1", ["deploy"])

    def lead_steps_in(step: str) -> None:
        if step == "shutdown.release_task/task":
            storage.on_write = None
            if moved_on:
                lead.claim("m1", "t0")
            clock.advance(61.0)
            lead.monitor_pass()
            if ends_it:
                lead.shutdowns.force_terminate(SHUTDOWN)
                lead.members.inspect("m0")

    storage.on_write = lead_steps_in
    member.shutdowns.release_task("m0")
    assert invariants.check_state(member.snapshot()) == []
    acks = [row.doc["message"]["body"] for row in storage.scan("outbox_entry")]
    request = member.shutdowns.require(SHUTDOWN).doc
    if ends_it:  # the ack owed says what the request says (MSG-6)
        assert [a["released_task_id"] for a in acks if "released_task_id" in a] == [request["released_task_id"]]
    return request


@pytest.mark.clause("SHD-3", "SHD-7", "MSG-6", "STO-4")
def test_a_release_in_flight_is_noted_by_the_inspection_that_ends_its_request(storage: r.Storage) -> None:
    """A member's release in one process has written its task back to ``pending`` when the Lead's
    process times the drain out, force-terminates the member and inspects it. The member still
    names the task it released, so the inspection notes it on the request before it clears the
    member's task, then completes the request: the ``shutdown_ack`` says t0 was released, as a
    release run whole before the Lead's steps says (``release||force_inspect``: the inspection
    used to complete the request with nothing released, which no serial order gives)."""
    request = _release_beside_the_lead(storage, ends_it=True)
    assert (request["status"], request["released_task_id"]) == ("completed", "t0")


@pytest.mark.clause("SHD-3", "SHD-7", "MSG-6", "STO-4")
def test_a_release_in_flight_is_noted_though_another_member_claimed_its_task(storage: r.Storage) -> None:
    """As above, but m1 claims the task m0 released before the Lead's steps (three processes): the
    task's last move is no longer m0's release, yet m0 did release it, so the inspection still notes
    it and completes the request saying t0 was released, as every serial order of the three says.
    The release's own note then finds the note there and writes nothing (MSG-6: the request and
    its ack agree). It used to complete the request with nothing released: the inspection read
    only the task's last move."""
    request = _release_beside_the_lead(storage, ends_it=True, moved_on=True)
    assert (request["status"], request["released_task_id"]) == ("completed", "t0")


@pytest.mark.clause("SHD-3", "SHD-6")
def test_a_release_in_flight_notes_its_task_on_a_drain_timed_out_meanwhile(storage: r.Storage) -> None:
    """A drain still running under the request (``timed_out`` alone) takes the note."""
    request = _release_beside_the_lead(storage, ends_it=False)
    assert (request["status"], request["released_task_id"]) == ("timed_out", "t0")


def _release_beside(team: Team, other_step: Callable[[r.Harness], object]) -> BaseException:
    """m0 drains holding t0; between its release's read of m0 and its task write, another process
    runs ``other_step``. Returns the release's refusal (the test's interposition is the release's
    wait for its jobs, its last read before the task write)."""
    h = team.h
    h.claim("m0", "t0")
    pid = team.drain("m0", ttl=100)
    other = Team(team.storage, team.clock, team.runner).h
    real_busy, ran = h.jobs.busy, []

    def busy(member_id: str) -> list[str]:
        if not ran:
            ran.append(other_step(other))
        return real_busy(member_id)

    h.jobs.busy = busy  # type: ignore[method-assign]
    before = len([row for row in team.storage.scan("shutdown_request") if row.doc["released_task_id"]])
    with pytest.raises(r.TeamRefusal) as refused:
        h.shutdowns.release_task("m0")
    assert ran and before == 0
    assert h.shutdowns.require(pid).doc["released_task_id"] is None  # nothing noted
    assert invariants.check_state(h.snapshot()) == []
    return refused.value


@pytest.mark.clause("SHD-3", "SHD-7", "STO-4")
def test_a_release_that_finds_its_task_flagged_refuses_as_after_the_termination(team: Team) -> None:
    """The Lead times the drain out and force-terminates m0 while m0's release is between its read
    and its task write: the task is flagged, so the release writes nothing, notes nothing, and gets
    the refusal a release after the termination gets (m0 is unhealthy)."""

    def terminate(lead: r.Harness) -> None:
        team.clock.advance(101)
        lead.monitor_pass()
        lead.shutdowns.force_terminate(lead.member("m0")["shutdown_request_id"])

    refusal = _release_beside(team, terminate)
    assert (type(refusal), str(refusal)) == (
        r.MemberBusy,
        "m0 is unhealthy: cannot drain; a drain begins with a shutdown request",
    )
    assert team.task("t0")["status"] == "needs_inspection"


@pytest.mark.clause("SHD-3", "SHD-7", "MSG-6", "STO-4")
@pytest.mark.parametrize("then", ["put_back", "claimed_by_m1"])
def test_a_release_whose_task_the_lead_put_back_meanwhile_refuses_and_notes_nothing(team: Team, then: str) -> None:
    """As above, and the Lead goes on: it inspects m0 (the request completes, its ack saying nothing
    released) and puts t0 back to ``pending`` (``put_back``), and m1 may claim it. The task is no
    longer m0's, yet m0 never let it go: the release writes and notes nothing and gets the refusal a
    release after the inspection gets (m0 is stopped). Found by an outside review: the release judged
    only whether m0 still held the task, then noted t0 on the completed request (MSG-6 broken)."""

    def terminate_inspect_put_back(lead: r.Harness) -> None:
        team.clock.advance(101)
        lead.monitor_pass()
        lead.shutdowns.force_terminate(lead.member("m0")["shutdown_request_id"])
        lead.members.inspect("m0")
        lead.tasks.inspect("t0", "pending")
        if then == "claimed_by_m1":
            lead.claim("m1", "t0")

    refusal = _release_beside(team, terminate_inspect_put_back)
    assert (type(refusal), str(refusal)) == (
        r.MemberBusy,
        "m0 is stopped: cannot drain; a drain begins with a shutdown request",
    )
    assert team.task("t0")["status"] == ("pending" if then == "put_back" else "claimed")


@pytest.mark.clause("SHD-3", "SHD-9", "STO-4")
def test_a_release_that_finds_its_task_suspended_refuses_as_after_the_suspension(team: Team) -> None:
    """Must differ from the flagged case: the task's unit deadline passed and another process
    suspended it (SHD-9) in the same window. m0 still drains; the release gets the refusal a release
    after the suspension gets (it holds no task), not one that calls m0 unhealthy."""

    def suspend(other: r.Harness) -> None:
        team.clock.advance(50)
        other.tasks.suspend("m0", 10)

    refusal = _release_beside(team, suspend)
    assert (type(refusal), str(refusal)) == (r.ShutdownRefused, "release by m0 refused: it holds no task")
    assert (team.member("m0")["status"], team.task("t0")["status"]) == ("draining", "suspended")


@pytest.mark.clause("SHD-3", "SHD-7")
def test_a_release_after_the_lead_flagged_the_task_names_the_member_unhealthy() -> None:
    """The Lead's force-termination cut after it flagged the task (``needs_inspection``), its
    member still draining: the member's release is refused as a drain of an unhealthy member,
    changing nothing — not as a release of no task (mutation testing of the shutdown: the flagged
    branch survived every test outside the interleavings)."""
    h = r.Harness(r.MemoryStorage(), r.ManualClock(0.0), [r.RecordingTool("deploy").tool()])
    draining_with_task(h)
    sid = h.storage.scan("shutdown_request")[0].key
    h.clock.advance(1000)
    h.monitor_pass()
    h.storage.faults.crash_after.add("shutdown.force_terminate/task")
    with pytest.raises(r.Crash):
        h.shutdowns.force_terminate(sid)
    h.storage.faults.crash_after.clear()
    assert (h.member("m0")["status"], h.task_row("t0").doc["status"]) == ("draining", "needs_inspection")
    before = h.snapshot()
    with pytest.raises(r.MemberBusy, match="m0 is unhealthy: cannot drain"):
        h.shutdowns.release_task("m0")
    assert h.snapshot() == before


@pytest.mark.clause("STO-2", "MSG-4", "SHD-1")
def test_a_shutdown_request_key_again_is_a_retry_only_with_the_same_reason_and_timeout(team: Team) -> None:
    """STO-2: the same request key again returns the same id and changes nothing; with another
    reason or another timeout it is refused as a conflict, before anything is written or posted
    (an outside review found both accepted, the old id returned as if it were the new request)."""
    h = team.h
    pid = h.shutdowns.request("lead", "m0", "k1", "scale down", ttl_seconds=30)
    team.clock.advance(7.3)  # a retry later: the same timeout is still the same request
    assert h.shutdowns.request("lead", "m0", "k1", "scale down", ttl_seconds=30) == pid
    assert says(
        team, lambda: h.shutdowns.request("lead", "m0", "k1", "rebalance", ttl_seconds=30), r.ProtocolConflict
    ) == (
        f"{pid}: a request with this id exists with reason_text='scale down', not 'rebalance'; "
        "use a new request_key for a different request"
    )
    assert says(
        team, lambda: h.shutdowns.request("lead", "m0", "k1", "scale down", ttl_seconds=31), r.ProtocolConflict
    ) == (
        f"{pid}: a request with this id exists with ttl_seconds=30.0, not 31; "
        "use a new request_key for a different request"
    )


@pytest.mark.clause("STO-2", "SHD-1")
def test_a_shutdown_retry_on_a_real_clock_is_not_a_conflict(storage: Storage) -> None:
    """The timeout is compared as the stored deadline less the creation time: on a wall clock
    (~1.7e9 s) that difference is exact only to a few ulps, which is no other timeout."""
    team = Team(storage, clock=r.ManualClock(1_765_000_000.123)).setup()
    pid = team.h.shutdowns.request("lead", "m0", "k1", "scale down", ttl_seconds=0.3)
    team.clock.advance(0.01)
    assert team.h.shutdowns.request("lead", "m0", "k1", "scale down", ttl_seconds=0.3) == pid
