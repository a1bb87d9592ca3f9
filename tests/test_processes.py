"""Background jobs as real OS subprocesses (MEM-4, JOB-1): process groups, signals, exits.

Every wait here is bounded and polls; the fixture kills whatever a failing test left running.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference._jobs import outcome_of as exit_outcome
from reference._processes import (
    JOB_ENV,
    TEAM_ENV,
    ProcessGone,
    SubprocessJobRunner,
    alive,
    find_processes,
    spawn,
    wait_until,
)

TRAPS_SIGTERM = [
    sys.executable,
    "-c",
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.3), sys.exit(0)))\n"
    "print('ready', flush=True)\n"
    "time.sleep(30)\n",
]
"""A command that takes a while to stop after SIGTERM, and then exits 0 (it finished its work)."""


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[SubprocessJobRunner]:
    jobs = SubprocessJobRunner(team=str(tmp_path / "team.db"))
    yield jobs
    jobs.close()


@pytest.mark.clause("MEM-4")
def test_a_job_runs_in_its_own_process_group(runner: SubprocessJobRunner) -> None:
    """A job is a separate OS process leading its own group, so a signal to the member never
    reaches it and a signal to the job reaches all it forked. Clause: MEM-4"""
    runner.start("j1", "sleep 30")
    pid = runner.pid("j1")
    assert pid != os.getpid() and alive(pid)
    assert os.getpgid(pid) == pid != os.getpgid(0)
    assert runner.poll("j1") is None and runner.running() == ["j1"]


@pytest.mark.clause("JOB-1")
def test_a_cancelled_job_is_still_running_until_it_exits(runner: SubprocessJobRunner) -> None:
    """A cancel (SIGTERM to the group) does not stop the job by itself: it runs until its own
    exit, and only that exit decides the outcome. Clause: JOB-1"""
    runner.start("j1", "sleep 30")
    runner.signal_cancel("j1")
    code = runner.wait("j1", timeout_seconds=5)
    assert code == -signal.SIGTERM
    assert exit_outcome("cancel_requested", code) == "cancelled"
    assert runner.signal("j1", signal.SIGTERM) is False  # exited: nothing is signalled again


@pytest.mark.clause("JOB-1")
def test_a_job_that_traps_the_cancel_and_finishes_succeeds(runner: SubprocessJobRunner, tmp_path: object) -> None:
    """A job that handles SIGTERM keeps running a while, then exits 0: succeeded, not cancelled. Clause: JOB-1"""
    runner.log_dir = str(tmp_path)
    log = f"{tmp_path}/j1.log"
    runner.start("j1", TRAPS_SIGTERM)
    assert wait_until(lambda: os.path.exists(log) and "ready" in Path(log).read_text(), 10)
    runner.signal_cancel("j1")
    assert runner.poll("j1") is None  # the cancel was asked; the job has not exited
    code = runner.wait("j1", timeout_seconds=5)
    assert code == 0 and exit_outcome("cancel_requested", code) == "succeeded"


@pytest.mark.clause("JOB-1")
@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        ("running", 0, "succeeded"),
        ("running", 1, "failed"),
        ("running", -9, "failed"),
        ("cancel_requested", 0, "succeeded"),
        ("cancel_requested", 2, "failed"),
        ("cancel_requested", -15, "cancelled"),
    ],
)
def test_the_exit_decides_the_outcome(status: str, code: int, outcome: str) -> None:
    """The outcome the harness records for an exit code (``reference._jobs.outcome_of``): killed
    by a signal without a cancel request is a failure, never a cancel. Clause: JOB-1"""
    assert exit_outcome(status, code) == outcome


@pytest.mark.clause("MEM-4")
def test_close_kills_every_job_and_unknown_jobs_are_refused(runner: SubprocessJobRunner) -> None:
    runner.start("j1", "sleep 30")
    pid = runner.pid("j1")
    runner.close()
    assert not alive(pid)
    # reaped too, not left a zombie (``alive`` counts a zombie as dead): nothing left to wait for
    # (an outside review's plant closed without waiting, and this test passed)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert runner.poll("j1") == -signal.SIGKILL
    with pytest.raises(ProcessGone, match="job nope"):
        runner.pid("nope")
    assert runner.poll("nope") is None  # not started here: its exit is not known here


@pytest.mark.clause("SHD-3", "SHD-7", "JOB-1", "MEM-4")
@pytest.mark.parametrize("how", ["signal_cancel", "kill", "close"])
def test_every_signal_from_the_runner_that_started_a_job_reaches_all_it_forked(
    runner: SubprocessJobRunner, how: str
) -> None:
    """A drain's cancel (SIGTERM), the last rung's kill (SIGKILL) and the runner's close reach the
    job's whole process group, not only its first process: nothing the job forked is left (an
    outside review signalled the job's own process alone here and no test failed — the one forking
    job was killed through a second runner)."""
    team = runner.team
    assert team is not None
    runner.start("j5", ["sh", "-c", "sleep 30 & sleep 30"])
    assert wait_until(lambda: len(find_processes(team, JOB_ENV, "j5")) >= 3, 5), find_processes(team, JOB_ENV, "j5")
    if how == "close":
        runner.close()
    else:
        getattr(runner, how)("j5")
    assert wait_until(lambda: find_processes(team, JOB_ENV, "j5") == [], 5), find_processes(team, JOB_ENV, "j5")


@pytest.mark.clause("SHD-7", "MEM-4")
def test_another_process_can_kill_a_job_it_did_not_start(runner: SubprocessJobRunner) -> None:
    """The Lead's runner finds a member's job by its team and job id alone and kills its whole
    group — and not another team's job of the same id on the same machine. Clause: SHD-7"""
    team, other_team = runner.team, f"{runner.team}-other"
    assert team is not None
    other = SubprocessJobRunner(team=other_team)
    try:
        for jobs in (runner, other):
            jobs.start("j9", ["sh", "-c", "sleep 30 & sleep 30"])
        for name in (team, other_team):
            pids = wait_until(lambda name=name: len(find_processes(name, JOB_ENV, "j9")) >= 2, 5)
            assert pids, find_processes(name, JOB_ENV, "j9")
        lead = SubprocessJobRunner(team=team)
        assert lead.poll("j9") is None
        lead.kill("j9")
        assert runner.wait("j9", 5) == -signal.SIGKILL
        assert wait_until(lambda: find_processes(team, JOB_ENV, "j9") == [], 5)  # the forked child too
        assert lead.signal("j9", signal.SIGTERM) is False
        assert other.poll("j9") is None and len(find_processes(other_team, JOB_ENV, "j9")) >= 2  # TEAM_ENV
    finally:
        other.close()
    with pytest.raises(ValueError, match="jobs of one team"):
        SubprocessJobRunner().kill("j9")


@pytest.mark.clause("SHD-7", "SHD-8", "MEM-3")
def test_every_process_mutant_names_tests_that_exist() -> None:
    """``teamproto mutants`` runs the tests CAUGHT_BY names for each process mutant: each mutant
    has some, each is a test function of that file, and each mutant is a reference mutant."""
    from reference._mutants import MUTANTS
    from reference._process_mutants import CAUGHT_BY, PROCESS_MUTANTS

    assert set(CAUGHT_BY) == set(PROCESS_MUTANTS) and set(PROCESS_MUTANTS) <= set(MUTANTS)
    root = Path(__file__).resolve().parents[1]
    for mutant, tests in CAUGHT_BY.items():
        assert tests, mutant
        for test in tests:
            path, name = test.split("::")
            assert f"def {name}(" in (root / path).read_text(encoding="utf-8"), (mutant, test)


@pytest.mark.clause("SHD-7", "MEM-4")
def test_a_harness_binds_its_job_runner_to_its_stores_team(tmp_path: Path) -> None:
    """A runner given to a harness starts and finds the jobs of that harness's team; one bound to
    another team is refused, so one team's ladder cannot signal another's jobs. Clause: SHD-7"""
    from reference import Harness, ManualClock, SQLiteStorage

    storage = SQLiteStorage(tmp_path / "team.db")
    try:
        runner = SubprocessJobRunner()
        Harness(storage, ManualClock(), jobs=runner)
        assert runner.team == storage.team == os.path.realpath(tmp_path / "team.db")
        Harness(storage, ManualClock(), jobs=runner)  # the same team again: fine
        with pytest.raises(ValueError, match=r"runs team .*other\.db's jobs"):
            Harness(storage, ManualClock(), jobs=SubprocessJobRunner(team=str(tmp_path / "other.db")))
    finally:
        storage.close()


@pytest.mark.clause("SHD-7", "MEM-4")
def test_a_stores_team_is_one_name_however_its_path_is_spelt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A team is named by its store's real path: through a symlinked folder, a relative path or
    the real one, one file gives one team (else a member started through one spelling would be
    invisible to a Lead that opened the store through another). Clause: SHD-7"""
    from reference import SQLiteStorage
    from reference._storage import team_of

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    spellings = [tmp_path / "real" / "team.db", tmp_path / "link" / "team.db", "link/team.db", "real/../link/team.db"]
    stores = [SQLiteStorage(path) for path in spellings]
    try:
        names = {store.team for store in stores} | {team_of(path) for path in spellings}
        assert names == {os.path.realpath(tmp_path / "real" / "team.db")}
    finally:
        for store in stores:
            store.close()


@pytest.mark.clause("MEM-4", "JOB-2")
def test_a_job_carries_its_runners_team_not_the_one_it_was_started_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job started from a process that carries a team (a member process: every process it
    starts inherits its environment) is named by its runner's team. Clause: MEM-4"""
    monkeypatch.setenv(TEAM_ENV, "another team")
    jobs = SubprocessJobRunner(team=str(tmp_path / "team.db"))
    try:
        jobs.start("j1", "sleep 30")
        assert find_processes(str(tmp_path / "team.db"), JOB_ENV, "j1") == [jobs.pid("j1")]
        assert find_processes("another team", JOB_ENV, "j1") == []
    finally:
        jobs.close()


@pytest.mark.clause("SHD-7")
def test_an_exited_child_nobody_reaped_is_not_alive() -> None:
    """A zombie has exited: ``alive`` says so before anyone reaps it, or the ladder and every
    bounded wait on a child the Lead started would run to their timeouts (outside review 41
    dropped the zombie check; only the tests' durations grew)."""
    child = spawn(["sleep", "30"])
    try:
        assert alive(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        assert wait_until(lambda: _state(child.pid) == "Z", 5), "the child never became a zombie"
        assert not alive(child.pid)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert not alive(child.pid)  # reaped


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]
