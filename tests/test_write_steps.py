"""A write only under a declared step name (DESIGN rule 3; REC-2, STO-1).

A crash "after step X" is placed by the step's name, in the model tests, the convergence tests and
the conformance vectors. A write under a name no list declares — a typo, a name left behind by a
rename, ``None`` — is a crash point no test reaches, while every crash test still passes: the
mutation score of the shutdown module found ten such names surviving. A harness's store refuses
them before it writes (``reference.UnknownWriteStep``), and so does ``Harness.step`` for a step
that may write nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import reference as r
from tests.conftest import Team

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.clause("REC-2", "STO-1")
@pytest.mark.parametrize("step", ["task.add/tsk", "TASK.ADD/TASK", "XXtask.add/taskXX", None, "", "task.add"])
def test_a_write_under_an_undeclared_step_is_refused_and_changes_nothing(team: Team, step: object) -> None:
    storage = team.storage
    before = (storage.writes, list(storage.steps_written), storage.scan("task"))
    task = {**team.harness.task_row("t0").doc, "task_id": "t9"}
    with pytest.raises(r.UnknownWriteStep) as refused:
        storage.insert(step, "task", "t9", task)  # type: ignore[arg-type]
    assert str(refused.value) == (
        f"write step {step!r} is not a declared write step; name it in its module's *_STEPS "
        "(reference/_steps.py) or fix the name: nothing was written"
    )
    row = team.harness.task_row("t0")
    with pytest.raises(r.UnknownWriteStep):
        storage.update(step, "task", "t0", {**row.doc, "status": "pending"}, row.version)  # type: ignore[arg-type]
    assert (storage.writes, list(storage.steps_written), storage.scan("task")) == before
    assert storage.read("task", "t9") is None


@pytest.mark.clause("REC-2")
def test_a_step_that_may_write_nothing_is_checked_before_it_runs(team: Team) -> None:
    ran = []
    with pytest.raises(r.UnknownWriteStep), team.harness.step("shutdown.finish/mesage"):
        ran.append(True)
    assert ran == []
    with team.harness.step("shutdown.finish/message"):  # declared: runs, writes nothing, fires no crash
        ran.append(True)
    assert ran == [True]


@pytest.mark.clause("REC-2")
def test_the_same_declared_step_is_written_and_crashed(team: Team) -> None:
    """The store's check does not get in the way of a declared step, nor of its crash."""
    row = team.harness.task_row("t1")
    team.storage.faults.crash_after.add("task.finish/task")
    with pytest.raises(r.Crash):
        team.storage.update("task.finish/task", "task", "t1", {**row.doc, "status": "completed"}, row.version)
    assert team.storage.steps_written[-1] == "task.finish/task"


def test_a_bare_store_accepts_any_step_and_a_harness_declares_its_own() -> None:
    """A store is generic (the storage contract tests write ``test/…``); a harness binds it to the
    reference's steps. Tests beside the reference write under ``test/…``, which the reference never
    uses."""
    task = Team(r.MemoryStorage()).harness.task_row("t0").doc
    store = r.MemoryStorage()
    assert store.steps is None
    store.insert("anything/at_all", "task", "t0", task)
    assert store.steps_written == ["anything/at_all"]
    harness = r.Harness(store, r.ManualClock(0.0), [])
    assert store.steps is r.WRITE_STEPS is harness.storage.steps
    literals = re.compile(r"""["']test/\w""")
    writers = [p.name for p in (ROOT / "reference").glob("*.py") if literals.search(p.read_text(encoding="utf-8"))]
    assert writers == [], f"the reference writes under the tests' own family: {writers}"
