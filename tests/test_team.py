"""Members, tasks, jobs and graceful shutdown on the reference, clause by clause (issue 13).

Every test runs on both backends (the ``storage`` fixture). The Lead is ``lead``; members m0, m1;
the protected tool is ``deploy``.
"""

from __future__ import annotations

import math
import signal
from typing import Any

import pytest

import reference as r
import spec
from reference import Harness, InProcessJobRunner, ManualClock, RecordingTool, Storage
from reference._lead import inspect_lost_member
from spec import invariants
from spec.ids import message_id


class Team:
    def __init__(self, storage: Storage, clock: ManualClock | None = None, runner: Any = None) -> None:
        self.storage, self.clock = storage, clock or ManualClock(0.0)
        self.world = RecordingTool()
        self.runner = runner or InProcessJobRunner()
        self.h = Harness(storage, self.clock, [self.world.tool()], jobs=self.runner)

    def setup(self, members: int = 2, tasks: int = 3) -> Team:
        for m in range(members):
            self.h.add_member(f"m{m}", ["deploy"])
        for t in range(tasks):
            self.h.add_task(f"t{t}")
        return self

    def restart(self) -> Team:
        team = Team(self.storage, self.clock, self.runner)
        team.h.reconcile()
        return team

    def request(self, member: str = "m0", key: str = "sd-1", ttl: float = 10) -> str:
        return self.h.shutdowns.request("lead", member, key, ttl_seconds=ttl)

    def drain(self, member: str = "m0", key: str = "sd-1", ttl: float = 10) -> str:
        pid = self.request(member, key, ttl)
        assert self.h.shutdowns.begin_drain(member, message_id(pid, "request"))["outcome"] == "draining"
        return pid

    def member(self, name: str) -> dict[str, Any]:
        return self.h.member(name)

    def task(self, name: str) -> dict[str, Any]:
        return self.h.task_row(name).doc

    def check(self) -> None:
        problems = invariants.check_state(self.h.snapshot())
        assert not problems, problems


@pytest.fixture
def team(storage: Storage) -> Team:
    return Team(storage).setup()


def unchanged(team: Team, call: Any, error: type[Exception]) -> Exception:
    """``call`` raises ``error`` (definite) and changes nothing."""
    before = team.h.snapshot()
    with pytest.raises(error) as caught:
        call()
    assert team.h.snapshot() == before, "a refusal changed the stores"
    assert getattr(caught.value, "definite", True)
    return caught.value


# ---- MEM-1: who may claim -------------------------------------------------------------------


@pytest.mark.clause("MEM-1", "SHD-2")
def test_a_draining_or_stopped_member_cannot_claim(team: Team) -> None:
    team.drain("m0")
    error = unchanged(team, lambda: team.h.claim("m0", "t1"), r.ClaimRefused)
    assert "draining" in str(error)
    team.h.shutdowns.finish("m0")
    assert team.member("m0")["status"] == "stopped"
    assert "stopped" in str(unchanged(team, lambda: team.h.claim("m0", "t1"), r.ClaimRefused))
    team.h.claim("m1", "t1")  # the other member still can


@pytest.mark.clause("MEM-1")
def test_a_persisted_request_shuts_claims_before_the_member_is_updated(team: Team) -> None:
    """The window between persisting the request and updating the member (a crash there too)."""
    team.storage.faults.crash_after.add("shutdown.request/record")
    with pytest.raises(r.Crash):
        team.request("m0")
    assert team.member("m0")["status"] == "running" and team.member("m0")["accepting_new_tasks"]
    error = unchanged(team, lambda: team.h.claim("m0", "t0"), r.ClaimRefused)
    assert "shutdown request" in str(error)
    team = team.restart()
    unchanged(team, lambda: team.h.claim("m0", "t0"), r.ClaimRefused)


class _RequestMeanwhile(r.FaultPlan):
    """Another process persists a shutdown request after the claim's checks, before its write."""

    def __init__(self, other: Harness) -> None:
        super().__init__()
        self.other = other

    def before(self, step: str) -> None:
        if step == "task.claim/task" and not self.other.storage.scan("shutdown_request"):
            self.other.shutdowns.request("lead", "m0", "sd-late", ttl_seconds=10)
        super().before(step)


@pytest.mark.clause("MEM-1", "STO-4")
def test_a_request_persisted_between_the_check_and_the_write_refuses_the_claim(storage: Storage) -> None:
    """The claim's own write re-checks MEM-1 (one guarded compare-and-set)."""
    team = Team(storage).setup()
    other = Harness(storage, team.clock, [team.world.tool()])
    storage.faults = _RequestMeanwhile(other)
    with pytest.raises(r.ClaimRefused, match="shutdown request"):
        team.h.claim("m0", "t0")
    assert team.task("t0")["status"] == "pending" and team.member("m0")["current_task_id"] is None


@pytest.mark.clause("MEM-1", "STO-4")
def test_the_claim_guard_compares_the_member_row(storage: Storage) -> None:
    """A member row changed since it was read fails the guarded write (definite)."""
    team = Team(storage).setup()
    member, task = team.h.member_row("m0"), team.h.task_row("t0")
    team.h.set_member("test/member", "m0", "running", accepting_new_tasks=False)
    guard = r.Guard(unchanged=(("member", "m0", member.version),))
    with pytest.raises(r.VersionConflict):
        storage.update("task.claim/task", "task", "t0", {**task.doc, "status": "claimed"}, task.version, guard)
    assert team.task("t0")["status"] == "pending"


@pytest.mark.clause("MEM-1", "TSK-1")
def test_claim_refusals_name_the_task_and_its_holder(team: Team) -> None:
    token = team.h.claim("m0", "t0")
    assert token == message_id("t0", "claim-1")
    error = unchanged(team, lambda: team.h.claim("m1", "t0"), r.TaskTaken)
    assert "t0" in str(error) and "m0" in str(error)
    assert "already holds task t0" in str(unchanged(team, lambda: team.h.claim("m0", "t1"), r.ClaimRefused))
    assert "add_task" in str(unchanged(team, lambda: team.h.claim("m0", "t9"), r.UnknownTask))
    assert "add_member" in str(unchanged(team, lambda: team.h.claim("m9", "t1"), r.UnknownMember))


# ---- TSK-1 … TSK-3 ----------------------------------------------------------------------------


@pytest.mark.clause("TSK-1", "XPR-1")
def test_only_the_current_claim_token_and_incarnation_act_on_a_task(team: Team) -> None:
    token = team.h.claim("m0", "t0")
    unchanged(team, lambda: team.h.finish_task("m0", "t0", "completed", "stale-token"), r.NotClaimHolder)
    unchanged(team, lambda: team.h.finish_task("m1", "t0", "completed", token), r.NotClaimHolder)
    unchanged(team, lambda: team.h.finish_task("m0", "t0", "completed", token, incarnation=7), r.StaleMember)
    unchanged(team, lambda: team.h.tasks.checkpoint("m0", "t0", "stale", {"step": 1}), r.NotClaimHolder)
    team.h.finish_task("m0", "t0", "completed", token)
    assert team.task("t0")["status"] == "completed" and team.member("m0")["current_task_id"] is None


@pytest.mark.clause("TSK-1", "SHD-9")
def test_a_second_claim_by_the_same_member_makes_its_first_token_stale(team: Team) -> None:
    """TSK-1's promise is about claims, not claimers: m0 claims t0, its unit passes, the task is
    suspended and resumed, and m0 (same incarnation) claims it again. The first claim's token no
    longer acts — finish and checkpoint refused, nothing changed — and the new one does; the two
    differ, and so does a third claim's from both."""
    first = team.h.claim("m0", "t0")
    team.clock.advance(5)
    team.h.tasks.suspend("m0", unit_seconds=5)
    team.h.tasks.resume("t0")
    second = team.h.claim("m0", "t0")
    assert second != first
    unchanged(team, lambda: team.h.finish_task("m0", "t0", "completed", first), r.NotClaimHolder)
    unchanged(team, lambda: team.h.tasks.checkpoint("m0", "t0", first, {"step": 1}), r.NotClaimHolder)
    team.h.tasks.checkpoint("m0", "t0", second, {"step": 2})
    team.clock.advance(5)
    team.h.tasks.suspend("m0", unit_seconds=5)
    team.h.tasks.resume("t0")
    third = team.h.claim("m0", "t0")
    assert third not in (first, second)
    unchanged(team, lambda: team.h.finish_task("m0", "t0", "completed", second), r.NotClaimHolder)
    team.h.finish_task("m0", "t0", "completed", third)
    assert team.task("t0")["status"] == "completed"


@pytest.mark.clause("TSK-2")
@pytest.mark.parametrize(
    "state",
    [{"sock": object()}, {"t": (1, 2)}, {"x": math.nan}, {1: "a"}, ["not", "an", "object"], {"s": {1, 2}}],
    ids=["handle", "tuple", "nan", "int-key", "list", "set"],
)
def test_a_checkpoint_holds_only_plain_json(team: Team, state: Any) -> None:
    token = team.h.claim("m0", "t0")
    unchanged(team, lambda: team.h.tasks.checkpoint("m0", "t0", token, state), r.BadCheckpoint)


@pytest.mark.clause("TSK-2")
def test_a_checkpoint_is_written_whole_or_not_at_all(team: Team) -> None:
    token = team.h.claim("m0", "t0")
    team.h.tasks.checkpoint("m0", "t0", token, {"step": 1, "files": ["a.py"]})
    team.storage.faults.crash_before.add("task.checkpoint/task")
    with pytest.raises(r.Crash):
        team.h.tasks.checkpoint("m0", "t0", token, {"step": 2})
    assert team.task("t0")["checkpoint"]["state"] == {"step": 1, "files": ["a.py"]}
    team.storage.faults.crash_after.add("task.checkpoint/task")
    with pytest.raises(r.Crash):
        team.h.tasks.checkpoint("m0", "t0", token, {"step": 2})
    assert team.restart().task("t0")["checkpoint"]["state"] == {"step": 2}


@pytest.mark.clause("TSK-3", "SHD-3")
def test_a_released_task_keeps_its_checkpoint_and_history_for_the_next_claimer(team: Team) -> None:
    token = team.h.claim("m0", "t0")
    team.h.tasks.checkpoint("m0", "t0", token, {"step": 3})
    team.drain("m0")
    assert team.h.shutdowns.drain_pass("m0") == {"ready": True, "released": "t0"}
    task = team.task("t0")
    assert task["status"] == "pending" and task["owner_id"] is None
    assert task["checkpoint"]["state"] == {"step": 3} and task["checkpoint"]["released"]
    team.h.claim("m1", "t0")
    seen = team.task("t0")
    assert seen["checkpoint"]["state"] == {"step": 3}
    assert [e["event"] for e in seen["history"]] == ["claimed", "checkpointed", "released", "claimed"]


# ---- JOB-1, JOB-2, SHD-3, SHD-4 ----------------------------------------------------------------


@pytest.mark.clause("JOB-1", "SHD-3", "MEM-4")
def test_a_cancel_request_is_not_a_stopped_job(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.h.jobs.start("m0", "job-1", "make deploy", cancellable=True)
    assert team.runner.started == ["job-1"]
    team.drain("m0")
    assert team.h.shutdowns.drain_pass("m0") == {"ready": False, "waiting": ["job-1"]}
    assert team.h.jobs.require("job-1").doc["status"] == "cancel_requested"
    assert team.runner.cancelled == ["job-1"]  # signalled once, after the state was persisted
    unchanged(team, lambda: team.h.shutdowns.release_task("m0"), r.DrainNotReady)
    team.runner.finish("job-1", r.CANCEL_EXIT)
    assert team.h.jobs.poll() == ["job-1"]
    assert team.h.jobs.require("job-1").doc["status"] == "cancelled"
    assert team.h.shutdowns.drain_pass("m0")["ready"]
    assert team.h.shutdowns.require(team.member("m0")["shutdown_request_id"]).doc["waited_job_ids"] == ["job-1"]


def lapsed_beside_a_job(team: Team, asked_to_cancel: bool) -> None:
    """m0 holds t0 and runs job-1 (asked to cancel by a drain, if ``asked_to_cancel``); its heartbeat lapses."""
    team.h.claim("m0", "t0")
    team.h.jobs.start("m0", "job-1", "make deploy", cancellable=True)
    if asked_to_cancel:
        team.drain("m0")
        team.h.shutdowns.drain_jobs("m0")
    team.h.members.lapse("m0")


@pytest.mark.clause("SHD-7", "JOB-1")
@pytest.mark.parametrize("asked_to_cancel", [False, True], ids=["running", "cancel_requested"])
def test_a_lost_members_jobs_are_recorded_killed_by_the_inspection(team: Team, asked_to_cancel: bool) -> None:
    """SHD-7: the Lead's inspection of a lost member kills its busy jobs and records each one's
    exit as the kill's, ``-SIGKILL`` (a signal, not a code the job chose): a job still running
    ``failed``, one already asked to cancel ``cancelled`` (JOB-1: its cancel request came first)."""
    lapsed_beside_a_job(team, asked_to_cancel)
    assert inspect_lost_member(team.h, "m0") == ["t0"]
    job = team.h.jobs.require("job-1").doc
    assert (job["status"], job["exit_code"]) == ("cancelled" if asked_to_cancel else "failed", -signal.SIGKILL)
    assert team.member("m0")["status"] == "stopped"


@pytest.mark.clause("SHD-9", "TSK-1")
def test_a_reclaimed_tasks_unit_deadline_runs_from_its_current_claim(team: Team) -> None:
    """SHD-9: a unit of work's deadline runs from the claim that holds the task now, not from the
    task's first claim: suspended, resumed and claimed again, it is not due before a whole unit."""
    team.h.claim("m0", "t0")
    team.clock.advance(5)
    assert team.h.tasks.suspend("m0", unit_seconds=5) == "t0"
    team.h.tasks.resume("t0")
    team.clock.advance(1)
    team.h.claim("m0", "t0")
    team.clock.advance(4)
    unchanged(team, lambda: team.h.tasks.suspend("m0", unit_seconds=5), r.TaskNotDue)
    team.clock.advance(1)
    assert team.h.tasks.suspend("m0", unit_seconds=5) == "t0"


@pytest.mark.clause("JOB-1")
def test_a_job_that_finished_first_keeps_its_own_outcome(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.h.jobs.start("m0", "job-1", "make deploy")
    team.drain("m0")
    team.h.shutdowns.drain_jobs("m0")
    assert team.h.jobs.exited("job-1", 0)["status"] == "succeeded"
    unchanged(team, lambda: team.h.jobs.exited("job-1", 1), r.JobRefused)


@pytest.mark.clause("JOB-2", "SHD-4", "SHD-3")
def test_a_non_cancellable_job_is_never_signalled_and_keeps_the_member_draining(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.h.jobs.start("m0", "job-1", "migrate", cancellable=False)
    team.drain("m0")
    for _ in range(3):
        assert team.h.shutdowns.drain_pass("m0") == {"ready": False, "waiting": ["job-1"]}
    assert team.runner.cancelled == [] and team.h.jobs.require("job-1").doc["status"] == "running"
    assert team.task("t0")["status"] == "claimed"  # never handed to another member meanwhile
    unchanged(team, lambda: team.h.claim("m1", "t0"), r.TaskTaken)
    team.runner.finish("job-1", 0)
    team.h.jobs.poll()
    assert team.h.shutdowns.drain_pass("m0") == {"ready": True, "released": "t0"}


@pytest.mark.clause("SHD-3", "TSK-1")
def test_a_draining_member_never_completes_its_task_to_get_out(team: Team) -> None:
    token = team.h.claim("m0", "t0")
    team.drain("m0")
    error = unchanged(team, lambda: team.h.finish_task("m0", "t0", "completed", token), r.MemberBusy)
    assert "releases it" in str(error)


# ---- SHD-1, SHD-2, SHD-5 ------------------------------------------------------------------------


@pytest.mark.clause("SHD-1")
def test_only_the_lead_requests_a_shutdown(team: Team) -> None:
    error = unchanged(team, lambda: team.h.shutdowns.request("m1", "m0", "sd-1"), r.NotLead)
    assert "lead" in str(error)
    pid = team.request("m0")
    unchanged(team, lambda: team.h.shutdowns.cancel("m1", pid), r.NotLead)


@pytest.mark.clause("SHD-1", "MSG-4")
def test_a_repeated_request_is_the_same_request_and_message(team: Team) -> None:
    pid = team.request("m0")
    snap = team.h.snapshot()
    assert team.request("m0") == pid and team.h.snapshot()["message"] == snap["message"]


@pytest.mark.clause("SHD-2", "MSG-5")
def test_begin_drain_checks_and_a_duplicate_delivery_returns_the_recorded_result(team: Team) -> None:
    pid = team.request("m0")
    mid = message_id(pid, "request")
    unchanged(team, lambda: team.h.shutdowns.begin_drain("m1", mid), r.ShutdownRefused)  # not its responder
    first = team.h.shutdowns.begin_drain("m0", mid)
    assert first["outcome"] == "draining"
    member = team.member("m0")
    assert (member["status"], member["accepting_new_tasks"], member["shutdown_request_id"]) == ("draining", False, pid)
    before = team.h.snapshot()
    assert team.h.shutdowns.begin_drain("m0", mid) == first
    assert team.h.snapshot() == before


@pytest.mark.clause("SHD-2")
def test_a_request_past_its_deadline_or_for_another_drain_is_refused(team: Team) -> None:
    late = team.request("m1", "sd-late", ttl=1)
    team.clock.advance(2)
    result = team.h.shutdowns.begin_drain("m1", message_id(late, "request"))
    assert result["outcome"] == "refused" and "deadline" in result["reason"]
    assert team.member("m1")["status"] == "running"
    team.drain("m0", "sd-a")
    second = team.h.shutdowns.request("lead", "m1", "sd-b")  # m1 still running: a fresh one
    team.h.shutdowns.begin_drain("m1", message_id(second, "request"))
    other = team.h.shutdowns.request("lead", "m1", "sd-c") if team.member("m1")["status"] == "running" else None
    assert other is None  # m1 drains now: a request to it is refused at creation


@pytest.mark.clause("SHD-5", "MSG-6", "REC-3")
def test_finish_owes_the_ack_and_finishing_twice_is_a_no_op(team: Team) -> None:
    pid = team.drain("m0")
    team.h.shutdowns.finish("m0")
    assert team.h.shutdowns.require(pid).doc["status"] == "completed"
    assert team.member("m0")["status"] == "stopped" and not team.member("m0")["accepting_new_tasks"]
    ack = message_id(pid, "ack")
    assert team.h.outbox.owed() == [ack]
    assert team.h.read("message", message_id(pid, "request")).doc["status"] == "acknowledged"
    before = team.h.snapshot()
    team.h.shutdowns.finish("m0")
    assert team.h.snapshot() == before
    assert team.h.outbox.send_owed() == [ack] and team.h.outbox.send_owed() == []
    assert team.h.read("message", ack).doc["message"]["reply_to"] == message_id(pid, "request")
    team.check()


@pytest.mark.clause("SHD-5", "REC-2", "REC-3")
@pytest.mark.parametrize("step", ["shutdown.finish/record", "shutdown.finish/member", "shutdown.finish/outbox"])
def test_a_crash_inside_finish_ends_with_the_ack_owed(team: Team, step: str) -> None:
    pid = team.drain("m0")
    team.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        team.h.shutdowns.finish("m0")
    team = team.restart()
    assert team.h.shutdowns.require(pid).doc["status"] == "completed"
    assert team.member("m0")["status"] == "stopped"
    assert message_id(pid, "ack") in team.h.outbox.owed()
    snap = team.h.snapshot()
    team.h.reconcile()
    assert team.h.snapshot() == snap  # REC-1
    team.check()


# ---- SHD-6, SHD-7, SHD-9, SHD-10 ---------------------------------------------------------------


@pytest.mark.clause("SHD-6", "XPR-5")
def test_the_monitor_expires_requests_and_times_out_drains_and_a_late_finish_keeps_both(team: Team) -> None:
    waiting = team.request("m1", "sd-w", ttl=1)
    draining = team.drain("m0", "sd-d", ttl=1)
    team.clock.advance(2)
    team.h.monitor_pass()
    assert team.h.shutdowns.require(waiting).doc["status"] == "expired"
    assert team.h.shutdowns.require(waiting).doc["reason"] == "expired"
    assert team.h.read("message", message_id(waiting, "request")).doc["status"] == "expired"
    assert team.h.shutdowns.require(draining).doc["status"] == "timed_out"
    assert team.member("m0")["status"] == "draining"  # timed_out is not an exit
    team.h.shutdowns.finish("m0")
    doc = team.h.shutdowns.require(draining).doc
    assert doc["status"] == "completed" and doc["reason"] == "timed_out"
    assert [e["event"] for e in doc["events"]] == ["requested", "draining", "timed_out", "completed"]
    team.check()


@pytest.mark.clause("SHD-7", "SHD-10")
def test_force_termination_flags_the_task_and_inspection_frees_it(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.h.jobs.start("m0", "job-1", "migrate", cancellable=False)
    pid = team.drain("m0", ttl=1)
    unchanged(team, lambda: team.h.shutdowns.force_terminate(pid), r.ShutdownRefused)  # not timed out yet
    team.clock.advance(2)
    team.h.monitor_pass()
    team.h.shutdowns.force_terminate(pid)
    assert team.runner.killed == ["job-1"] and team.h.jobs.require("job-1").doc["status"] == "cancelled"
    assert team.task("t0")["status"] == "needs_inspection" and team.member("m0")["status"] == "unhealthy"
    lost = team.h.outbox.owed()
    assert len(lost) == 1 and team.h.storage.read("outbox_entry", lost[0]).doc["message"]["body"][
        "flagged_task_ids"
    ] == ["t0"]
    team.h.members.inspect("m0")
    assert team.member("m0")["status"] == "stopped"
    assert team.h.shutdowns.require(pid).doc["status"] == "completed"
    team.h.tasks.inspect("t0", "pending")
    team.h.claim("m1", "t0")
    team.check()


@pytest.mark.clause("SHD-7", "JOB-1")
def test_force_termination_kills_a_job_already_asked_to_cancel(team: Team) -> None:
    """The last rung kills every job the member still has busy: the one the drain asked to cancel
    (``cancel_requested``, it ignored the signal) as well as the one that could not be asked. Left
    ``cancel_requested``, the job would keep the task's inspection waiting for ever."""
    team.h.claim("m0", "t0")
    team.h.jobs.start("m0", "job-c", "index", cancellable=True)
    team.h.jobs.start("m0", "job-n", "migrate", cancellable=False)
    pid = team.drain("m0", ttl=1)
    assert team.h.shutdowns.drain_jobs("m0") == ["job-c"]
    assert team.h.jobs.require("job-c").doc["status"] == "cancel_requested"
    team.clock.advance(2)
    team.h.monitor_pass()
    team.h.shutdowns.force_terminate(pid)
    assert sorted(team.runner.killed) == ["job-c", "job-n"]
    assert {job: team.h.jobs.require(job).doc["status"] for job in ("job-c", "job-n")} == dict.fromkeys(
        ("job-c", "job-n"), "cancelled"
    )
    team.h.members.inspect("m0")
    team.h.tasks.inspect("t0", "pending")  # nothing of the member runs: the task is free again
    assert team.task("t0")["status"] == "pending"
    team.check()


@pytest.mark.clause("SHD-10", "XPR-2")
def test_a_lapse_is_told_once_and_a_clean_exit_not_at_all(team: Team) -> None:
    team.h.claim("m0", "t0")
    team.h.members.heartbeat("m0", 1)
    team.h.members.heartbeat("m1", 1)
    team.clock.advance(30)
    team.h.members.heartbeat("m1", 1)
    assert team.h.members.lapsed(max_age=10) == ["m0"]
    team.h.members.lapse("m0")
    team = team.restart().restart()
    entries = [row.doc for row in team.storage.scan("outbox_entry")]
    assert [e["message"]["message_type"] for e in entries] == ["member_lost"]
    assert team.task("t0")["status"] == "needs_inspection"
    team.drain("m1")
    team.h.shutdowns.finish("m1")  # a clean exit
    team = team.restart()
    types = sorted(row.doc["message"]["message_type"] for row in team.storage.scan("outbox_entry"))
    assert types == ["member_lost", "shutdown_ack"]


@pytest.mark.clause("SHD-9")
def test_a_unit_past_its_deadline_is_suspended_and_the_lead_told(team: Team) -> None:
    team.h.claim("m0", "t0")
    unchanged(team, lambda: team.h.tasks.suspend("m0", unit_seconds=5), r.TaskNotDue)
    team.clock.advance(5)
    assert team.h.tasks.suspend("m0", unit_seconds=5) == "t0"
    assert team.task("t0")["status"] == "suspended" and team.member("m0")["current_task_id"] is None
    entry = team.storage.scan("outbox_entry")[0].doc["message"]
    assert entry["message_type"] == "task_suspended" and entry["body"]["member_id"] == "m0"
    team.h.tasks.resume("t0")
    team.h.claim("m1", "t0")


@pytest.mark.clause("SHD-9", "INV-7")
def test_each_suspension_of_a_task_owes_its_own_notice(team: Team) -> None:
    """A task suspended, resumed, claimed again and suspended again owes the second suspension's
    notice under its own stable id (it counts the claims): INV-7 holds after each suspension only
    when that suspension's notice is owed, not an earlier one's of the same task."""
    for holder in ("m0", "m1"):
        team.h.claim(holder, "t0")
        team.clock.advance(5)
        assert team.h.tasks.suspend(holder, unit_seconds=5) == "t0"
        assert invariants.owed_messages_present(team.h.snapshot()) == []
        team.h.tasks.resume("t0")


@pytest.mark.clause("SHD-9", "TSK-3")
@pytest.mark.parametrize("claims", [2, 3])
def test_the_unit_deadline_runs_from_the_latest_claim(team: Team, claims: int) -> None:
    """A task suspended and resumed is claimed again later: its new holder's unit runs from that
    claim, not from the first (a deadline read off the wrong event of the history): not due a
    second before ``claimed_at + unit``, due at it."""
    holders = ["m0", "m1", "m0"]
    for n in range(claims - 1):
        team.h.claim(holders[n], "t0")
        team.clock.advance(5)
        team.h.tasks.suspend(holders[n], unit_seconds=5)
        team.h.tasks.resume("t0")
        team.clock.advance(3)
    holder = holders[claims - 1]
    team.h.claim(holder, "t0")
    team.clock.advance(4)
    unchanged(team, lambda: team.h.tasks.suspend(holder, unit_seconds=5), r.TaskNotDue)
    team.clock.advance(1)
    assert team.h.tasks.suspend(holder, unit_seconds=5) == "t0"


# ---- XPR-1, XPR-2 -------------------------------------------------------------------------------


@pytest.mark.clause("XPR-1", "SHD-2", "INV-11")
def test_a_stale_shutdown_request_never_stops_the_restarted_member(team: Team) -> None:
    """The seed's scenario: the request was made for incarnation 1; m0 was lost, inspected and
    restarted as incarnation 2 before it was delivered. It changes nothing; m0 keeps working."""
    pid = team.request("m0")
    team.h.members.lapse("m0")
    team.h.members.inspect("m0")
    assert team.h.restart_member("m0") == 2
    team.h.claim("m0", "t0")  # the old request does not target incarnation 2 (MEM-1)
    before = team.h.snapshot()
    result = team.h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    assert result["outcome"] == "refused" and "stale" in result["reason"]
    after = team.h.snapshot()
    assert [k for k in after if k != "message" and after[k] != before[k]] == []
    assert team.member("m0")["status"] == "running" and team.member("m0")["current_task_id"] == "t0"
    assert not [v for v in invariants.check_step(before, after) if v[0].clause == "INV-11"]
    unchanged(team, lambda: team.h.members.heartbeat("m0", 1), r.StaleMember)


@pytest.mark.clause("XPR-2", "XPR-5")
def test_beginning_a_drain_cancels_the_members_own_requests(team: Team) -> None:
    team.h.claim("m0", "t0")
    ctx = r.CallContext("m0", 1, "call-1", "t0")
    pid = team.h.approvals.call(ctx, "deploy", {"path": "srv"})["protocol_id"]
    team.drain("m0")
    approval = team.h.read("operation_approval", pid).doc
    assert (approval["status"], approval["reason"]) == ("cancelled", "member_draining")


@pytest.mark.clause("MEM-1", "XPR-1")
def test_restart_needs_a_stopped_member(team: Team) -> None:
    unchanged(team, lambda: team.h.restart_member("m0"), r.MemberBusy)


@pytest.mark.clause("SHD-4", "SHD-7", "XPR-1")
@pytest.mark.parametrize("asked_to_cancel", [False, True], ids=["running", "cancel_requested"])
def test_a_stopped_member_restarts_or_retires_only_once_its_jobs_exited(team: Team, asked_to_cancel: bool) -> None:
    """A lost member, inspected, is stopped while its jobs may still run (a lapse stops nothing); a
    job asked to stop is still on its way out. Neither a restart nor a retirement comes before every
    job exited; then the restart is taken."""
    lapsed_beside_a_job(team, asked_to_cancel)
    team.h.members.inspect("m0")
    assert team.member("m0")["status"] == "stopped"
    assert team.h.jobs.require("job-1").doc["status"] == ("cancel_requested" if asked_to_cancel else "running")
    unchanged(team, lambda: team.h.restart_member("m0"), r.MemberBusy)
    unchanged(team, lambda: team.h.members.retire("m0"), r.MemberBusy)
    team.h.jobs.exited("job-1", 0)
    assert team.h.restart_member("m0") == 2


@pytest.mark.clause("SHD-1", "SHD-2")
def test_only_a_running_member_is_asked_to_shut_down(team: Team) -> None:
    """SHD-1: a shutdown request targets a running member; a lost (unhealthy) one is inspected
    instead, and a draining one already has its request."""
    team.h.members.lapse("m1")
    unchanged(team, lambda: team.h.shutdowns.request("lead", "m1", "sd-lost"), r.ShutdownRefused)
    team.drain("m0")
    unchanged(team, lambda: team.h.shutdowns.request("lead", "m0", "sd-again"), r.ShutdownRefused)


# ---- REC: reconciliation rows of PROTOCOL §5 ---------------------------------------------------


@pytest.mark.clause("REC-2", "REC-3", "SHD-2")
def test_a_drain_cut_after_its_record_finishes_the_members_half(team: Team) -> None:
    pid = team.request("m0")
    team.storage.faults.crash_after.add("shutdown.begin_drain/record")
    with pytest.raises(r.Crash):
        team.h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    team = team.restart()
    member = team.member("m0")
    assert (member["status"], member["accepting_new_tasks"], member["shutdown_request_id"]) == ("draining", False, pid)


@pytest.mark.clause("REC-2", "REC-3", "SHD-10")
def test_a_member_draining_without_its_request_is_unhealthy_and_the_lead_told(storage: Storage) -> None:
    team = Team(storage).setup()
    stored = team.h.member_row("m0")
    doc = {**stored.doc, "status": "draining", "accepting_new_tasks": False}
    storage.update("test/member", "member", "m0", doc, stored.version)
    team = team.restart()
    assert team.member("m0")["status"] == "unhealthy"
    assert [row.doc["message"]["message_type"] for row in storage.scan("outbox_entry")] == ["member_lost"]


# ---- item 10: every refusal is typed and says what to do --------------------------------------


@pytest.mark.clause("XPR-3")
def test_refusals_of_the_api_are_typed(team: Team) -> None:
    with pytest.raises(r.UnknownProfileTool, match="register the tool"):
        team.h.add_member("m7", ["deploy", "rm-rf"])
    assert team.h.read("member", "m7") is None
    team.h.claim("m0", "t0")
    ctx = r.CallContext("m0", 1, "call-1", "t0")
    error = unchanged(team, lambda: team.h.approvals.call(ctx, "deploy", ["srv"]), r.BadArguments)  # type: ignore[arg-type]
    assert "JSON object" in str(error)
    pid = team.h.approvals.call(ctx, "deploy", {"path": "srv"})["protocol_id"]
    with pytest.raises(r.ApprovalNotActive, match="wait for the approval_decision"):
        team.h.approvals.call(ctx, "deploy", {"path": "srv"}, approval_id=pid)
    assert isinstance(r.UnknownMember("x"), spec.ProtocolError)


@pytest.mark.clause("REC-1", "REC-2", "SHD-6", "SHD-10", "TSK-2")
@pytest.mark.parametrize(
    "step", ["member.heartbeat/member", "shutdown.expire/record", "shutdown.expire/message", "task.checkpoint/task"]
)
def test_the_references_own_write_steps_crash_cleanly(team: Team, step: str) -> None:
    """The write steps the model abstracts away (a heartbeat, the monitor's single writes, a
    checkpoint's data): a crash after each leaves a state that reconciles, twice, to the same."""
    token = team.h.claim("m0", "t0")
    pid = team.request("m1", ttl=1)
    team.clock.advance(2)
    team.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        if step == "member.heartbeat/member":
            team.h.members.heartbeat("m0", 1)
        elif step == "task.checkpoint/task":
            team.h.tasks.checkpoint("m0", "t0", token, {"step": 1})
        else:
            team.h.monitor_pass()
    team = team.restart()
    team.h.monitor_pass()  # the pass runs again whole after a crash inside it
    assert team.h.shutdowns.require(pid).doc["status"] == "expired"
    snap = team.h.snapshot()
    team.h.reconcile()
    assert team.h.snapshot() == snap
    team.check()


def test_every_write_step_of_the_team_api_is_named_in_team_steps() -> None:
    """Each module's step list is what its code writes: every write step of the reference's team
    operations is in ``reference.TEAM_STEPS`` or the model's list, and the model's are all there."""
    from spec.model import WRITE_STEPS

    team_ops = {step.rsplit("/", 1)[0] for step in r.TEAM_STEPS}
    model_steps = {step for step in WRITE_STEPS if step.rsplit("/", 1)[0] in team_ops}
    assert model_steps <= set(r.TEAM_STEPS), sorted(model_steps - set(r.TEAM_STEPS))
