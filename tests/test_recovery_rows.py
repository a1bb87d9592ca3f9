"""The rows of PROTOCOL §5 the shortest crash paths of tests/test_convergence.py do not reach,
each from the very prefix a crash leaves, and the team log of shutdown decisions (AUD-5).

Clause: REC-1, REC-2, REC-3, XPR-2, SHD-8, SHD-10, AUD-5.
"""

from __future__ import annotations

import contextlib

import pytest

import reference as r
from reference._member_process import MemberProcess
from reference._recovery import RECOVERY_STEPS
from reference._runtime import ScriptedModel, Turn
from spec import invariants
from spec.ids import message_id, protocol_id
from tests.conftest import Team

ARGS = {"path": "srv/app"}


def reconciled(team: Team) -> Team:
    """Restart, reconcile; every invariant holds and a second reconcile changes nothing (REC-1)."""
    team = team.restart()
    first = team.harness.snapshot()
    assert invariants.check_state(first) == []
    team.harness.reconcile()
    assert team.harness.snapshot() == first, "reconcile is not idempotent"
    return team


def crash_drain_after(team: Team, step: str) -> str:
    """m0 has an approval requested; the Lead asks it to stop; its drain dies after ``step``."""
    h = team.harness
    h.approvals.request(team.ctx(), "deploy", ARGS)
    pid = h.shutdowns.request("lead", "m0", "stop-m0")
    h.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    return pid


def own_requests(team: Team) -> list[tuple[str, str | None]]:
    rows = team.harness.storage.scan("operation_approval")
    return [(row.doc["status"], row.doc["reason"]) for row in rows if row.doc["requester_id"] == "m0"]


@pytest.mark.clause("REC-2", "XPR-2")
@pytest.mark.parametrize("step", ["shutdown.begin_drain/record", "shutdown.begin_drain/member"])
def test_a_drain_cut_short_is_finished_and_its_requests_cancelled(team: Team, step: str) -> None:
    """§5 "shutdown draining while the member is still running: finish the member's half" and
    "shutdown draining: resume the drain, first applying XPR-2 again"."""
    pid = crash_drain_after(team, step)
    assert own_requests(team) == [("requested", None)]
    team = reconciled(team)
    member = team.harness.member("m0")
    assert (member["status"], member["accepting_new_tasks"], member["shutdown_request_id"]) == ("draining", False, pid)
    assert own_requests(team) == [("cancelled", "member_draining")]


@pytest.mark.clause("REC-2", "SHD-10")
def test_a_member_draining_without_its_request_is_reported_unhealthy(team: Team) -> None:
    """§5 "member draining without its shutdown request: mark it unhealthy and tell the Lead"."""
    team.harness.set_member("member.exit/member", "m0", "draining", accepting_new_tasks=False)
    team = reconciled(team)
    assert team.harness.member("m0")["status"] == "unhealthy"
    lost = team.harness.outbox.member_lost(team.harness.member("m0"), [])["message_id"]
    assert team.harness.outbox.owed() == [lost]


def signal_exit(team: Team, crash_after: str | None) -> None:
    """m0 stops on SIGTERM (SHD-8), dying right after ``crash_after`` if given."""
    process = MemberProcess(team.harness, "m0", 1, ScriptedModel([Turn(done=True)]), max_wait_seconds=0.1)
    process.shutdown.set("SIGTERM")
    if crash_after is None:
        process.exit_on_signal()
        return
    team.storage.faults.crash_after.add(crash_after)
    with pytest.raises(r.Crash):
        process.exit_on_signal()


def notices(team: Team) -> list[dict[str, object]]:
    entries = team.harness.storage.scan("outbox_entry")
    return [row.doc["message"] for row in entries if row.doc["message"]["message_type"] == "shutdown_notice"]


NOTICE = message_id(protocol_id("m0", "incarnation-1", "shutdown_notice"), "notice")


@pytest.mark.clause("SHD-8", "REC-3", "REC-2")
def test_the_notice_of_a_signal_exit_cut_before_it_was_owed_is_owed_on_restart(team: Team) -> None:
    """A crash between ``member.exit/stopped`` and ``member.exit/outbox``: no record owed the
    ``shutdown_notice``; reconciliation owes it under its stable id, once."""
    signal_exit(team, "member.exit/stopped")
    assert notices(team) == []
    team = reconciled(team)
    [notice] = notices(team)
    assert (notice["message_id"], notice["sender"], notice["target"]) == (NOTICE, "m0", "team")


@pytest.mark.clause("SHD-8", "REC-1")
def test_a_notice_owed_before_the_crash_is_kept_as_it_was(team: Team) -> None:
    signal_exit(team, "member.exit/outbox")
    [before] = notices(team)
    team = reconciled(team)
    assert notices(team) == [before]


@pytest.mark.clause("SHD-10", "REC-2")
def test_a_lost_and_inspected_member_owes_no_shutdown_notice(team: Team) -> None:
    """Stopped without a shutdown request, but lost first: the team was told by member_lost."""
    team.harness.members.lapse("m0")
    team.harness.members.inspect("m0")
    team = reconciled(team)
    assert notices(team) == []


def audited_events(team: Team, pid: str) -> list[str]:
    return [row.doc["event"] for row in team.harness.storage.scan("audit_entry") if row.doc["subject_id"] == pid]


@pytest.mark.clause("AUD-5", "AUD-1", "SHD-5", "SHD-6")
def test_every_shutdown_decision_is_in_the_team_log(team: Team) -> None:
    """Request, drain, finish; cancel; expiry of a requested and time-out of a draining request:
    each is in the log as it is decided, before any reconciliation."""
    h = team.harness
    done = h.shutdowns.request("lead", "m0", "stop-m0")
    h.shutdowns.begin_drain("m0", message_id(done, "request"))
    h.shutdowns.drain_pass("m0")
    cancelled = h.shutdowns.request("lead", "m1", "stop-m1")
    h.shutdowns.cancel("lead", cancelled)
    expired = h.shutdowns.request("lead", "m1", "stop-m1-again", ttl_seconds=5)
    h.add_member("m2", ["deploy"])
    late = h.shutdowns.request("lead", "m2", "stop-m2", ttl_seconds=5)
    h.shutdowns.begin_drain("m2", message_id(late, "request"))
    team.clock.advance(6)
    h.monitor_pass()
    assert invariants.decisions_audited(h.snapshot()) == []
    assert audited_events(team, done) == ["shutdown.requested", "shutdown.draining", "shutdown.completed"]
    assert audited_events(team, cancelled) == ["shutdown.requested", "shutdown.cancelled"]
    assert audited_events(team, expired) == ["shutdown.requested", "shutdown.expired"]
    assert audited_events(team, late) == ["shutdown.requested", "shutdown.draining", "shutdown.timed_out"]
    assert r.verify_audit_log(team.storage).ok


@pytest.mark.clause("AUD-5", "REC-2")
def test_reconciliation_logs_a_final_shutdown_decision_a_crash_left_out(team: Team) -> None:
    pid = team.harness.shutdowns.request("lead", "m0", "stop-m0")
    team.storage.faults.crash_before.add("shutdown.cancel/audit")
    with pytest.raises(r.Crash):
        team.harness.shutdowns.cancel("lead", pid)
    assert invariants.decisions_audited(team.harness.snapshot())
    team = reconciled(team)
    assert audited_events(team, pid) == ["shutdown.requested", "shutdown.cancelled"]


@pytest.mark.clause("REC-2", "INV-4", "SHD-3")
def test_a_claim_cut_short_is_repaired_for_a_member_that_began_to_drain_since(storage: r.Storage) -> None:
    """A claim dies after its task write (the task claimed, the member not yet holding it); another
    process then asks the member to stop and its drain begins; reconciliation must give the
    draining member its task back, so that the drain releases it — else the member stops with the
    task claimed by nobody alive (INV-4). Found by an outside review: the repair for ``running``
    members alone passed every test, the interleaving explorer having no crashes."""
    team = Team(storage, setup=False)
    h = team.harness
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.storage.faults.crash_after.add("task.claim/task")
    with pytest.raises(r.Crash):
        h.claim("m0", "t0")
    other = Team(storage, team.clock, team.world, setup=False).harness
    h.storage.faults.crash_after.clear()
    pid = other.shutdowns.request("lead", "m0", "stop-m0")
    other.shutdowns.begin_drain("m0", message_id(pid, "request"))
    team = reconciled(team)
    assert {k: team.harness.member("m0")[k] for k in ("status", "current_task_id")} == {
        "status": "draining",
        "current_task_id": "t0",
    }
    team.harness.shutdowns.release_task("m0")
    team.harness.shutdowns.finish("m0")
    assert team.harness.read("task", "t0").doc["status"] == "pending"  # type: ignore[union-attr]


def _drain_timed_out(team: Team, *, release_cut: bool) -> tuple[r.Harness, str]:
    """m0 drains, holding t0; with ``release_cut`` its release dies after the task's write (t0 back
    in ``pending``, m0 still naming it). Then the Lead's own process (no reconciliation) times the
    drain out and force-terminates m0 (SHD-7): a task still claimed is flagged, a released one is
    not. Returns the Lead's harness and the request."""
    h = team.harness
    pid = h.shutdowns.request("lead", "m0", "stop-m0", ttl_seconds=10)
    h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    if release_cut:
        h.storage.faults.crash_after.add("shutdown.release_task/task")
        with pytest.raises(r.Crash):
            h.shutdowns.release_task("m0")
        h.storage.faults.crash_after.clear()
    lead = Team(team.storage, team.clock, team.world, setup=False).harness
    team.clock.advance(11)
    lead.monitor_pass()
    lead.shutdowns.force_terminate(pid)
    assert (lead.member("m0")["status"], lead.member("m0")["current_task_id"]) == ("unhealthy", "t0")
    return lead, pid


def _ended_with(lead: r.Harness, pid: str) -> tuple[str, str | None, list[str | None]]:
    """The request's status and released task, and what its ``shutdown_ack`` says (MSG-6)."""
    acks = [row.doc["message"]["body"] for row in lead.storage.scan("outbox_entry")]
    said = [a["released_task_id"] for a in acks if a.get("protocol_id") == pid and "released_task_id" in a]
    request = lead.shutdowns.require(pid).doc
    assert invariants.check_state(lead.snapshot()) == []
    return request["status"], request["released_task_id"], said


@pytest.mark.clause("SHD-3", "SHD-7", "REC-2", "MSG-6")
@pytest.mark.parametrize("reconcile_first", [False, True], ids=["inspected", "reconciled-then-inspected"])
def test_a_release_cut_short_is_noted_by_whoever_clears_the_unhealthy_members_task(
    team: Team, reconcile_first: bool
) -> None:
    """A release cut short after its task write, then the Lead's last rung before the member's
    process came back: the member is ``unhealthy`` and still names the task it released. Whichever
    clears that name first (the Lead's inspection, or the member's reconciliation) notes the
    release on the request before, so the request completes with t0 released and its ack says so,
    as a release run whole gives. (Before, both cleared it unnoted: an unhealthy member was not
    looked at, and the inspection looked at nothing.)"""
    lead, pid = _drain_timed_out(team, release_cut=True)
    if reconcile_first:
        team = reconciled(team)
        assert team.harness.member("m0")["current_task_id"] is None
        assert team.harness.shutdowns.require(pid).doc["released_task_id"] == "t0"
    lead.members.inspect("m0")
    assert _ended_with(lead, pid) == ("completed", "t0", ["t0"])
    assert lead.task_row("t0").doc["status"] == "pending"


@pytest.mark.clause("SHD-3", "SHD-7", "REC-2", "MSG-6")
@pytest.mark.parametrize("reconcile_first", [False, True], ids=["inspected", "reconciled-then-inspected"])
def test_a_task_the_lead_put_back_is_not_noted_as_released(team: Team, reconcile_first: bool) -> None:
    """Must differ from the test above: the same unhealthy member naming the same task back in
    ``pending``, but the task got there by the Lead's last rung (flagged) and its inspection
    (re-pended), not by a release. Nothing was released: the request completes with none, and its
    ack says none. A note judged by the task's status alone wrote t0 here (mutant
    ``cut_release_judged_by_status``)."""
    lead, pid = _drain_timed_out(team, release_cut=False)
    assert lead.task_row("t0").doc["status"] == "needs_inspection"
    lead.tasks.inspect("t0", "pending")
    if reconcile_first:
        team = reconciled(team)
        assert team.harness.shutdowns.require(pid).doc["released_task_id"] is None
    lead.members.inspect("m0")
    assert _ended_with(lead, pid) == ("completed", None, [None])


@pytest.mark.clause("REC-2", "SHD-3", "SHD-5", "MSG-6")
@pytest.mark.parametrize("step", ["shutdown.release_task/task", "shutdown.release_task/record"])
def test_a_release_cut_short_is_noted_on_the_request_before_the_member_lets_go(team: Team, step: str) -> None:
    """The release writes the task, the request, then the member (SHD-3). Cut short before the
    member's write, the member names a task back in ``pending``: reconciliation notes the task on
    the request before it clears the member's, so the finish that follows completes the request
    with the task released and its ``shutdown_ack`` says so. (Clearing the member alone, a finish
    then said nothing was released; beside a release in flight the two disagreed:
    ``release||reconcile_finish``.) A running member's task is never noted."""
    h = team.harness
    pid = h.shutdowns.request("lead", "m0", "stop-m0")
    h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    h.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        h.shutdowns.release_task("m0")
    h.storage.faults.crash_after.clear()
    assert team.harness.member("m0")["current_task_id"] == "t0"
    team = reconciled(team)
    h = team.harness
    assert team.harness.member("m0")["current_task_id"] is None
    assert h.shutdowns.require(pid).doc["released_task_id"] == "t0"
    assert team.harness.member("m1")["current_task_id"] == "t1"  # running, holding its claim: untouched
    h.shutdowns.finish("m0")
    messages = [row.doc["message"] for row in h.storage.scan("outbox_entry")]
    acks = [m["body"] for m in messages if m["message_type"] == "shutdown_ack"]
    assert [(a["protocol_id"], a["released_task_id"]) for a in acks] == [(pid, "t0")]
    assert invariants.check_state(h.snapshot()) == []


@pytest.mark.clause("REC-1", "REC-2", "SHD-3", "MSG-6")
@pytest.mark.parametrize("cut", RECOVERY_STEPS)
def test_a_reconciliation_cut_short_still_gets_a_release_cut_short_onto_its_request(team: Team, cut: str) -> None:
    """A release dies after its task write; the reconciliation that follows dies after its own write
    step ``cut``; the next one finishes the job. Whatever the cut, the request ends naming t0 and the
    finish's ``shutdown_ack`` says so: reconciliation notes the release before it clears the member's
    task, so no cut between its writes loses the note (an outside review's plant, clearing the
    member first, passed every other test)."""
    h = team.harness
    pid = h.shutdowns.request("lead", "m0", "stop-m0")
    h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    h.storage.faults.crash_after.add("shutdown.release_task/task")
    with pytest.raises(r.Crash):
        h.shutdowns.release_task("m0")
    h.storage.faults.crash_after.clear()
    h.storage.faults.crash_after.add(cut)
    with contextlib.suppress(r.Crash):  # a cut at a step this reconciliation does not take: none
        h.reconcile()
    h.storage.faults.crash_after.clear()
    team = reconciled(team)
    h = team.harness
    assert (h.member("m0")["current_task_id"], h.shutdowns.require(pid).doc["released_task_id"]) == (None, "t0")
    h.shutdowns.finish("m0")
    acks = [row.doc["message"]["body"] for row in h.storage.scan("outbox_entry")]
    assert [(a["protocol_id"], a["released_task_id"]) for a in acks if "released_task_id" in a] == [(pid, "t0")]


def test_released_by_reads_the_members_last_claim_or_release() -> None:
    """TSK-3's history, read as ``released_by`` reads it: this member's last ``claimed`` or
    ``released`` event is a release, whatever others did to the task since; not another member's
    release, not a claim followed only by the Lead's moves, not a release followed by a claim of
    its own (a later incarnation's), not a task it never touched."""
    from reference._tasks import released_by

    def task(status: str, *events: tuple[str, str]) -> dict[str, object]:
        return {"status": status, "history": [{"actor": a, "event": e} for a, e in events]}

    assert released_by(task("pending", ("m0", "claimed"), ("m0", "released")), "m0")
    assert released_by(task("claimed", ("m0", "claimed"), ("m0", "released"), ("m1", "claimed")), "m0")
    lead_flags_m1 = ("m1", "claimed"), ("lead", "needs_inspection")
    assert released_by(task("needs_inspection", ("m0", "claimed"), ("m0", "released"), *lead_flags_m1), "m0")
    m1_too = ("m1", "claimed"), ("m1", "released")
    assert released_by(task("pending", ("m0", "claimed"), ("m0", "released"), *m1_too), "m0")
    assert not released_by(task("pending", ("m0", "claimed"), ("m0", "released")), "m1")
    assert not released_by(task("pending", ("m1", "claimed"), ("m1", "released")), "m0")
    assert not released_by(task("pending", ("m0", "claimed"), ("lead", "needs_inspection"), ("lead", "pending")), "m0")
    assert not released_by(task("claimed", ("m0", "claimed"), ("m0", "released"), ("m0", "claimed")), "m0")
    assert not released_by(task("completed", ("m0", "claimed"), ("m0", "completed")), "m0")
    assert not released_by(task("pending"), "m0")


@pytest.mark.clause("SHD-3", "SHD-7", "TSK-3")
def test_another_members_release_of_the_task_is_not_this_drains(team: Team) -> None:
    """Must differ from a release cut short: m0 is force-terminated with t0 flagged; the Lead puts
    t0 back, m2 claims it and releases it in its own drain. m0 still names t0, whose last move is a
    release, but m2's: m0's request says nothing was released (an outside review's plant that read
    "released by anyone" passed every other test)."""
    lead, pid = _drain_timed_out(team, release_cut=False)
    lead.tasks.inspect("t0", "pending")
    lead.add_member("m2", ["deploy"])
    lead.claim("m2", "t0")
    pid2 = lead.shutdowns.request("lead", "m2", "stop-m2", ttl_seconds=100)
    lead.shutdowns.begin_drain("m2", message_id(pid2, "request"))
    lead.shutdowns.release_task("m2")
    assert lead.member("m0")["current_task_id"] == "t0"
    lead.members.inspect("m0")
    assert _ended_with(lead, pid) == ("completed", None, [None])


@pytest.mark.clause("REC-2", "SHD-10")
def test_a_lapse_cut_short_owes_a_notice_naming_only_its_own_members_tasks(team: Team) -> None:
    """§5 "member unhealthy: owe member_lost": m1 lapsed whole (its t1 flagged), then m0's lapse
    died after flagging t0; the notice reconciliation owes for m0 names t0 alone, as the whole
    lapse's would (an outside review listed every member's flagged tasks in it)."""
    h = team.harness
    h.members.lapse("m1")
    h.storage.faults.crash_after.add("member.lapse/task")
    with pytest.raises(r.Crash):
        h.members.lapse("m0")
    team = reconciled(team)
    bodies = {
        m["message"]["body"]["member_id"]: m["message"]["body"]["flagged_task_ids"]
        for m in team.harness.snapshot()["outbox_entry"]
        if m["message"]["message_type"] == "member_lost"
    }
    assert bodies == {"m0": ["t0"], "m1": ["t1"]}, bodies


@pytest.mark.clause("REC-2", "XPR-1")
def test_a_claim_of_an_older_incarnation_is_never_given_to_the_member_now() -> None:
    """Recovery's claim repair reads a claim as the member's only under its current incarnation:
    a task still claimed by incarnation 1 is neither given to incarnation 2 nor kept as its task
    (an outside review matched the owner's id alone)."""
    from reference._recovery import _claim_repair

    old = {"task_id": "t0", "owner_id": "m0", "owner_incarnation": 1, "status": "claimed"}
    now = {"member_id": "m0", "incarnation": 2, "status": "running", "current_task_id": None}
    assert _claim_repair(now, [old]) is None
    assert _claim_repair({**now, "current_task_id": "t0"}, [old]) == (None,)
    assert _claim_repair(now, [{**old, "owner_incarnation": 2}]) == ("t0",)
