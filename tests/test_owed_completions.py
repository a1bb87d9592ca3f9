"""A plan execution's completion is owed until the outbox holds it, and the storage says which
(PLN-10, REC-3): the execution's last write (``plan.complete/execution``, ``plan.rollback/execution``)
marks it owed, the outbox entry of its ``plan_completion`` clears the mark, in the same atomic write
as each. Reconciliation owes the marked completions, not every execution that ever finished
(``tests/test_history_cost.py`` measures that; mutant ``reconcile_reads_finished_runs``).

Here: a crash between the two writes, on both backends, for both ends of an execution; the mark
is gone once the entry is written; another instance's finished runs do not stay marked; and an
SQLite file written before the marks were kept gets them when first opened (nothing persisted is
lost). Mutant ``owed_mark_never_set``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import reference as r
from reference._storage import OWED
from spec.ids import message_id
from tests.test_plans import STEPS, Team, plan

pytestmark = pytest.mark.clause("PLN-10", "REC-3", "REC-1")


@pytest.fixture(params=["memory", "sqlite"])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Team:
    return Team(r.SQLiteStorage(tmp_path / "team.db") if request.param == "sqlite" else None)


def _run_all_steps(team: Team, pid: str) -> None:
    for step in STEPS:
        team.h.plans.step(team.ctx(), pid, {"id": step[0], "action": step[1], "params": step[2]})


def _finish(team: Team, pid: str, end: str) -> None:
    if end == "completed":
        _run_all_steps(team, pid)
        team.h.plans.complete(team.ctx(), pid)
    else:
        team.h.plans.fail(team.ctx(), pid)
        team.h.plans.rollback("lead", pid)


STEP = {"completed": "plan.complete/execution", "rolled_back": "plan.rollback/execution"}


@pytest.mark.parametrize("end", ["completed", "rolled_back"])
def test_a_completion_a_crash_cut_off_is_owed_by_the_restart_and_only_once(team: Team, end: str) -> None:
    pid = team.started()
    team.storage.faults.crash_after.add(STEP[end])
    with pytest.raises(r.Crash):
        _finish(team, pid, end)
    team.storage.faults.crash_after.clear()
    assert team.run(pid)["status"] == end
    assert team.owed("plan_completion") == []  # cut off: the outbox misses it
    assert team.storage.owed("plan_execution") == [pid]
    again = r.Harness(team.storage, team.clock, list(team.h.tools.values()))
    again.reconcile()
    owed = [e["message"] for e in again.snapshot()["outbox_entry"] if e["message"]["message_type"] == "plan_completion"]
    assert [(m["correlation_id"], m["body"]["outcome"]) for m in owed] == [(pid, end)]
    assert team.storage.owed("plan_execution") == []
    once = again.snapshot()
    again.reconcile()
    assert again.snapshot() == once  # REC-1


@pytest.mark.parametrize("end", ["completed", "rolled_back"])
def test_an_execution_that_finished_whole_leaves_no_mark(team: Team, end: str) -> None:
    pid = team.started()
    _finish(team, pid, end)
    assert [m["body"]["outcome"] for m in team.owed("plan_completion")] == [end]
    assert team.storage.owed("plan_execution") == []


def test_a_running_or_failed_execution_owes_nothing_yet(team: Team) -> None:
    """Only the ends that owe a completion mark it: a running execution, and a failed one whose
    rollback has not run, owe none (PLN-9: the rollback owes it)."""
    pid = team.started()
    assert team.storage.owed("plan_execution") == []
    team.h.plans.fail(team.ctx(), pid)
    assert team.storage.owed("plan_execution") == []


def test_an_sqlite_file_from_before_the_marks_gets_them_when_opened(tmp_path: Path) -> None:
    """A file whose completion a crash cut off before the storage kept these marks: opening it with
    them marks that execution owed (and not one whose completion the outbox holds), so the restart's
    reconciliation still owes it."""
    path = tmp_path / "team.db"
    team = Team(r.SQLiteStorage(path))
    whole = team.started()
    _finish(team, whole, "completed")
    cut = _second_started(team)
    team.h.plans.fail(team.ctx("m1"), cut)
    team.storage.faults.crash_after.add("plan.rollback/execution")
    with pytest.raises(r.Crash):
        team.h.plans.rollback("lead", cut)
    team.storage.faults.crash_after.clear()
    # the file as an older version left it: no owed_* triggers, no marks
    with sqlite3.connect(path) as db:
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'owed_%'"):
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DELETE FROM records WHERE tbl = ?", (OWED,))
        db.execute("PRAGMA user_version = 0")  # older versions never stamped a file
    reopened = r.SQLiteStorage(path)
    assert reopened.owed("plan_execution") == [cut]
    again = r.Harness(reopened, team.clock, list(team.h.tools.values()))
    again.reconcile()
    owed = [e["message"] for e in again.snapshot()["outbox_entry"] if e["message"]["message_type"] == "plan_completion"]
    assert sorted((m["correlation_id"], m["body"]["outcome"]) for m in owed) == sorted(
        [(whole, "completed"), (cut, "rolled_back")]
    )
    assert reopened.owed("plan_execution") == []


def _second_started(team: Team) -> str:
    """m1's own plan, approved, delivered and started (beside m0's)."""
    pid = team.h.plans.draft(team.ctx("m1"), "q", plan(*STEPS))
    team.h.plans.submit(team.ctx("m1"), pid)
    team.h.plans.decide("lead", pid, "approved")
    team.h.plans.deliver_decision("m1", message_id(pid, "decision-0"))
    team.h.plans.start(team.ctx("m1"), pid)
    return pid
