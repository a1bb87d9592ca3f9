"""What each task refusal and checkpoint says, and when an inspection must wait, word for word
(DESIGN rule 8; TSK-1, TSK-2, TSK-3, SHD-7, SHD-9).

Found by the mutation score of ``reference/_tasks.py`` (every 6th of its 809 mutants): an
inspection could stop waiting for the lost member's jobs — ``cancel_requested`` ones, or all of
them — or for a member that still runs; a checkpoint after a release could lose the mark of the
release; a checkpoint with a float could be refused; and a refusal could lose its task, its member
or its reason — with every test passing.
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


@pytest.mark.clause("SHD-7", "SHD-10", "JOB-1")
@pytest.mark.parametrize("asked_to_cancel", [False, True])
def test_an_inspection_waits_for_every_job_of_the_task_that_has_not_exited(team: Team, asked_to_cancel: bool) -> None:
    """A lapse does not stop the lost member's jobs: a running job, or one asked to cancel that has
    not exited, keeps its task flagged; the inspection names it, and goes on once it exited."""
    h = team.h
    h.claim("m0", "t0")
    h.jobs.start("m0", "job-1", "index", cancellable=True)
    if asked_to_cancel:
        team.drain("m0")
        assert h.shutdowns.drain_jobs("m0") == ["job-1"]
    h.members.lapse("m0")
    status = h.jobs.require("job-1").doc["status"]
    assert (team.task("t0")["status"], status) == (
        "needs_inspection",
        "cancel_requested" if asked_to_cancel else "running",
    )
    for outcome in ("pending", "failed"):
        assert says(team, lambda o=outcome: h.tasks.inspect("t0", o), r.TaskNotDue) == (
            "task t0 is needs_inspection: cannot inspect it while its job(s) job-1 still run"
        )
    team.runner.finish("job-1", -15 if asked_to_cancel else 0)
    h.jobs.poll()
    h.tasks.inspect("t0", "pending")
    assert (team.task("t0")["status"], team.task("t0")["owner_id"]) == ("pending", None)


@pytest.mark.clause("SHD-7")
def test_an_inspection_waits_for_a_member_that_still_runs(team: Team) -> None:
    """The last rung crashed after flagging the task, before the member was marked unhealthy: the
    member still drains, so its task is not inspected yet."""
    h = team.h
    h.claim("m0", "t0")
    pid = team.drain("m0", ttl=1)
    team.clock.advance(2)
    h.monitor_pass()
    team.storage.faults.crash_after.add("shutdown.force_terminate/task")
    with pytest.raises(r.Crash):
        h.shutdowns.force_terminate(pid)
    assert (team.task("t0")["status"], team.member("m0")["status"]) == ("needs_inspection", "draining")
    assert says(team, lambda: h.tasks.inspect("t0", "pending"), r.TaskNotDue) == (
        "task t0 is needs_inspection: cannot inspect it while m0 still runs"
    )


@pytest.mark.clause("TSK-1", "SHD-7", "SHD-9")
def test_every_task_refusal_names_the_task_its_status_and_what_to_do(storage: Storage) -> None:
    team = Team(storage).setup(members=3)
    h = team.h
    token = h.claim("m0", "t0")
    assert says(team, lambda: h.tasks.finish("m0", "t0", "done", token), r.TaskNotDue) == (
        "task t0 is claimed: cannot finish it as 'done': the outcome is completed or failed"
    )
    assert says(team, lambda: h.tasks.finish("m0", "t1", "completed", token), r.NotClaimHolder) == (
        "m0 does not hold the current claim of task t1 (the claim token is not the current one); "
        "re-read the task and claim it again if it is pending (TSK-1)"
    )
    other = h.claim("m1", "t1")
    assert says(team, lambda: h.tasks.finish("m0", "t1", "completed", other), r.NotClaimHolder) == (
        "m0 does not hold the current claim of task t1 (the task is claimed, held by m1); "
        "re-read the task and claim it again if it is pending (TSK-1)"
    )
    team.storage.faults.crash_after.add("task.claim/task")  # a claim cut between its two writes
    with pytest.raises(r.Crash):
        h.claim("m2", "t2")
    cut = team.task("t2")["claim_token"]
    assert (team.task("t2")["owner_id"], team.member("m2")["current_task_id"]) == ("m2", None)
    assert says(team, lambda: h.tasks.finish("m2", "t2", "completed", cut), r.NotClaimHolder) == (
        "m2 does not hold the current claim of task t2 (it is not the member's current task); "
        "re-read the task and claim it again if it is pending (TSK-1)"
    )
    assert says(team, lambda: h.tasks.inspect("t0", "completed"), r.TaskNotDue) == (
        "task t0 is claimed: cannot inspect it into 'completed': use pending or failed"
    )
    assert says(team, lambda: h.tasks.suspend("m2", unit_seconds=5), r.TaskNotDue) == (
        "m2 holds no task: cannot suspend it (SHD-9)"
    )
    assert says(team, lambda: h.tasks.suspend("m0", unit_seconds=5), r.TaskNotDue) == (
        "task t0 is claimed: cannot suspend it before 5.0"
    )
    h.jobs.start("m0", "job-1", "index")
    team.clock.advance(5)
    assert says(team, lambda: h.tasks.suspend("m0", unit_seconds=5), r.DrainNotReady) == (
        "m0 cannot suspend task t0 yet: jobs job-1 still run (a cancel request is not a stopped job, SHD-3); "
        "run the drain pass again after they exit"
    )
    team.drain("m0")
    assert says(team, lambda: h.tasks.finish("m0", "t0", "completed", token), r.MemberBusy) == (
        "m0 is draining: cannot finish task t0; a draining member releases it (SHD-3)"
    )


@pytest.mark.clause("TSK-2", "TSK-3")
def test_a_checkpoint_keeps_plain_json_and_the_mark_of_an_earlier_release(team: Team) -> None:
    h = team.h
    token = h.claim("m0", "t0")
    state = {"ratio": 0.5, "rows": [1.25, -3.0e-7, 2], "name": "ü", "nested": {"ok": True, "none": None}}
    assert h.tasks.checkpoint("m0", "t0", token, state) == {"state": state, "saved_at": 0.0, "released": False}
    team.drain("m0")
    h.shutdowns.release_task("m0")
    token = h.claim("m1", "t0")
    team.clock.advance(1)
    assert h.tasks.checkpoint("m1", "t0", token, {"step": 2}) == {
        "state": {"step": 2},
        "saved_at": 1.0,
        "released": True,  # TSK-3: the next claimer's checkpoints still say the task was released once
    }
    assert team.task("t0")["checkpoint"] == {"state": {"step": 2}, "saved_at": 1.0, "released": True}
    refusal = says(team, lambda: h.tasks.checkpoint("m1", "t0", token, {"x": float("nan")}), r.BadCheckpoint)
    assert refusal.startswith("checkpoint of task t0 refused: not serialisable (")
    assert refusal.endswith("); pass plain JSON data (TSK-2)")
    assert says(team, lambda: h.tasks.checkpoint("m1", "t0", token, {"at": (1, 2)}), r.BadCheckpoint) == (
        "checkpoint of task t0 refused: it does not survive a JSON round trip (tuples, non-string keys?); "
        "pass plain JSON data (TSK-2)"
    )


@pytest.mark.clause("MEM-4", "JOB-1")
def test_a_job_record_and_every_job_refusal_word_for_word(team: Team) -> None:
    h = team.h
    assert says(team, lambda: h.jobs.start("m0", "job-1", "index"), r.JobRefused) == (
        "job job-1: m0 holds no task; claim one first"
    )
    h.claim("m0", "t0")
    assert h.jobs.start("m0", "job-1", "index", cancellable=False) == {
        "job_id": "job-1",
        "status": "running",
        "owner_id": "m0",
        "task_id": "t0",
        "cancellable": False,
        "command": "index",
        "exit_code": None,
        "version": 0,
    }
    assert h.jobs.require("job-1").doc["version"] == 0
    assert says(team, lambda: h.jobs.start("m0", "job-1", "index"), r.JobRefused) == (
        "job job-1: a job with this id exists; use a new job id"
    )
    h.jobs.exited("job-1", 0)
    assert says(team, lambda: h.jobs.exited("job-1", 1), r.JobRefused) == "job job-1: it already ended as succeeded"
    h.claim("m1", "t1")
    team.drain("m1", "sd-1")
    assert h.member("m1")["current_task_id"] == "t1"  # the drain has begun; its pass has not released t1
    assert says(team, lambda: h.jobs.start("m1", "job-2", "index"), r.JobRefused) == (
        "job job-2: m1 is draining; only a running member starts jobs"
    )
    # MEM-3, XPR-2: a draining member starts nothing, whether it still holds its task or not
    assert [j["job_id"] for j in h.snapshot()["job"]] == ["job-1"]


class _AlwaysLost(r.FaultPlan):
    """Another writer wins every compare-and-set of ``step`` (STO-4); ``tries`` counts them."""

    def __init__(self, step: str) -> None:
        super().__init__()
        self.step, self.tries = step, 0

    def before(self, step: str) -> None:
        if step == self.step:
            self.tries += 1
            raise r.VersionConflict("task", "t0", 1, 2)
        super().before(step)


@pytest.mark.clause("XPR-1", "STO-4", "SHD-9", "AUD-1")
def test_a_stale_checkpoint_a_finish_that_keeps_losing_and_the_suspension_event(team: Team) -> None:
    h = team.h
    token = h.claim("m0", "t0")
    assert says(team, lambda: h.tasks.checkpoint("m0", "t0", token, {"step": 1}, incarnation=2), r.StaleMember) == (
        "m0: call made for incarnation 2, the member is now incarnation 1; a stale process must stop (XPR-1)"
    )
    faults, team.storage.faults = team.storage.faults, _AlwaysLost("task.finish/task")
    assert says(team, lambda: h.tasks.finish("m0", "t0", "completed", token), r.NotClaimHolder) == (
        "m0 does not hold the current claim of task t0 (the task kept changing under the finish; try again); "
        "re-read the task and claim it again if it is pending (TSK-1)"
    )
    assert team.storage.faults.tries == 8  # the reference's bound of tries on fresh records (STO-4)
    lost = team.storage.faults = _AlwaysLost("task.claim/task")
    assert says(team, lambda: h.claim("m1", "t1"), r.ClaimRefused) == (
        "m1 may not claim a task: the records kept changing under the claim; try again (MEM-1)"
    )
    assert lost.tries == 8
    team.storage.faults = faults
    assert says(team, lambda: h.claim("m1", "t1", incarnation=2), r.StaleMember) == (
        "m1: call made for incarnation 2, the member is now incarnation 1; a stale process must stop (XPR-1)"
    )
    assert (
        says(team, lambda: h.tasks.resume("t0"), r.TaskNotDue)
        == "task t0 is claimed: cannot move it suspended → pending"
    )
    assert says(team, lambda: h.claim("m0", "t1"), r.ClaimRefused) == (
        "m0 may not claim a task: it already holds task t0; finish or release it first (MEM-1)"
    )
    row = h.member_row("m1")
    h.storage.update("test/accepting", "member", "m1", {**row.doc, "accepting_new_tasks": False}, row.version)
    assert says(team, lambda: h.claim("m1", "t1"), r.ClaimRefused) == (
        "m1 may not claim a task: it is not accepting new tasks (MEM-1)"
    )
    team.clock.advance(5)
    h.tasks.suspend("m0", unit_seconds=5)
    assert team.task("t0")["history"][-1] == {"actor": "monitor", "event": "suspended", "summary": "", "at": 5.0}


class _BeatFirst(r.FaultPlan):
    """The member's heartbeat (another writer, STO-4) lands on its row once, between the read of
    ``step``'s write and its compare-and-set, so that write loses once for real; ``tries`` counts."""

    def __init__(self, team: Team, step: str) -> None:
        super().__init__()
        self.team, self.step, self.tries = team, step, 0

    def before(self, step: str) -> None:
        if step == self.step:
            self.tries += 1
            if self.tries == 1:
                self.team.h.members.heartbeat("m0", 1)
        super().before(step)


@pytest.mark.clause("STO-4", "TSK-1", "MEM-1", "SHD-10")
@pytest.mark.parametrize("step", ["task.claim/member", "task.finish/member"])
def test_a_member_write_that_loses_to_a_heartbeat_is_judged_again_on_a_fresh_read(team: Team, step: str) -> None:
    """A claim's or a finish's write of the member row (its current task) loses its compare-and-set
    once to the member's own heartbeat: it reads the row again and wins on the second try, keeping
    the beat (STO-4), not retry the stale version until it gives up (outside review 44 P6: the row
    read once, before the retry loop; before, only a 15-minute interleaving test saw it)."""
    h = team.h
    token = h.claim("m0", "t0") if step == "task.finish/member" else None
    team.clock.advance(3)
    lost = team.storage.faults = _BeatFirst(team, step)
    if token is None:
        h.claim("m0", "t0")
    else:
        h.finish_task("m0", "t0", "completed", token)
    assert lost.tries == 2
    member = team.member("m0")
    assert (member["current_task_id"], member["last_heartbeat_at"]) == ("t0" if token is None else None, 3.0)
    assert team.task("t0")["status"] == ("claimed" if token is None else "completed")


class _Recording(r.InProcessJobRunner):
    def __init__(self) -> None:
        super().__init__()
        self.commands: list[tuple[str, str]] = []

    def start(self, job_id: str, command: str) -> None:
        super().start(job_id, command)
        self.commands.append((job_id, command))


@pytest.mark.clause("MEM-2", "JOB-1", "MEM-4")
def test_the_in_process_runner_refuses_an_effect_before_its_record_in_words(storage: Storage) -> None:
    team = Team(storage, runner=_Recording()).setup()
    h, runner = team.h, team.runner
    with pytest.raises(r.EffectBeforeRecord) as early:
        runner.start("job-x", "index")
    assert str(early.value) == (
        "the start of job job-x before its record says running (it says nothing): persist the record first "
        "(MEM-2, JOB-1)"
    )
    h.claim("m0", "t0")
    h.jobs.start("m0", "job-1", "index --all")
    assert runner.commands == [("job-1", "index --all")]  # the command the record holds is the one started
    with pytest.raises(r.EffectBeforeRecord) as signalled:
        runner.signal_cancel("job-1")
    assert str(signalled.value) == (
        "the cancel signal of job job-1 before its record says cancel_requested (it says running): persist the "
        "record first (MEM-2, JOB-1)"
    )
    runner.kill("job-1")
    assert runner.poll("job-1") == -9
    assert says(team, lambda: h.jobs.require("job-9"), r.UnknownRecord) == (
        "no job 'job-9'; start it first with Jobs.start"
    )
    with pytest.raises(ValueError) as other:
        r.Harness(storage, team.clock, [], jobs=r.SubprocessJobRunner(team="another-team"))
    assert str(other.value) == f"this job runner runs team another-team's jobs, not {storage.team}'s"


@pytest.mark.clause("TSK-1", "TSK-3", "SHD-7")
@pytest.mark.parametrize("outcome", ["pending", "failed"])
def test_an_inspected_task_keeps_no_claim_token(storage: Storage, outcome: str) -> None:
    """TSK-1, SHD-7: the Lead's inspection that puts a lost member's task back (or fails it) clears
    its holder, incarnation and claim token (outside review 51, P8: a forgotten ``claim_token`` was
    caught only by one convergence test)."""
    team = Team(storage).setup()
    h = team.h
    token = h.claim("m0", "t0")
    assert team.task("t0")["claim_token"] == token
    h.members.lapse("m0")
    assert team.task("t0")["status"] == "needs_inspection"
    h.tasks.inspect("t0", outcome)
    task = team.task("t0")
    assert (task["status"], task["owner_id"], task["owner_incarnation"], task["claim_token"]) == (
        outcome,
        None,
        None,
        None,
    )


@pytest.mark.clause("JOB-1", "SHD-3")
@pytest.mark.parametrize(("code", "outcome"), [(0, "succeeded"), (1, "failed"), (2, "failed"), (-15, "cancelled")])
def test_a_job_asked_to_cancel_is_cancelled_only_by_a_signal_exit(storage: Storage, code: int, outcome: str) -> None:
    """JOB-1: a job asked to cancel is settled by its exit: cancelled by a signal's, failed by a
    failure code of its own, succeeded by 0 — through the drain and the poll, not only in
    ``outcome_of`` (outside review 51, P10)."""
    team = Team(storage).setup()
    h = team.h
    h.claim("m0", "t0")
    h.jobs.start("m0", "job-1", "index", cancellable=True)
    team.drain("m0")
    assert h.shutdowns.drain_jobs("m0") == ["job-1"]
    team.runner.finish("job-1", code)  # it finished (or failed) on its own before the signal landed, or was stopped
    assert h.jobs.poll() == ["job-1"]
    job = h.jobs.require("job-1").doc
    assert (job["status"], job["exit_code"]) == (outcome, code)


@pytest.mark.clause("AUD-3", "TSK-2", "TSK-3", "INV-10")
def test_a_checkpoint_or_a_released_state_keeps_no_secret(team: Team) -> None:
    """INV-10: a checkpoint is a store like any other. Every corpus secret, in a value, a key and a
    nested list of the state, saved by ``checkpoint`` or by a release that checkpoints the state it is
    given, is stored redacted (an outside review fed one a secret and it was kept as given)."""
    from spec import invariants
    from spec.secret_corpus import SECRETS, carrier

    every = " | ".join(carrier(name) for name in sorted(SECRETS))
    state = {"note": every, every: 1, "nested": {"list": [every, 2]}}
    h = team.h
    token = h.claim("m0", "t0")
    h.tasks.checkpoint("m0", "t0", token, state)
    assert invariants.no_secret_stored(h.snapshot()) == []
    assert team.task("t0")["checkpoint"]["state"]["nested"]["list"][1] == 2  # the rest is kept
    team.drain("m0")
    h.shutdowns.release_task("m0", state=state)
    assert invariants.no_secret_stored(h.snapshot()) == []
