"""A store that fails at a write step, and a process that lives on (XPR-3, STO-1, STO-4, REC-1, REC-3).

The crash tests (``test_stateful.py``) kill the reference at every write step. A crash is a
``BaseException``: no protocol code can catch it, so they never see what the code does with a
*failure* it can catch. Here the same scripted program per write step runs with the store failing
there instead (:class:`reference.StorageUnavailable` from the fault plan's ``fail_before`` /
``fail_after``): before the step (nothing of it written) or after its write (written, the writer
not told: an indefinite write failure, as a commit whose answer is lost). Whatever the step, the
operation

- raises a typed error whose cause is the failure (XPR-3): never success (a finish whose
  ``shutdown_ack`` could not be owed, the failure swallowed, reported success with nothing owed —
  an outside review's plant that every crash test passed), never a definite refusal (a refusal
  says nothing happened, and the write may have: a retry loop that took the failure for a lost
  compare-and-set judged its own write as another writer's);
- writes nothing after the failure (the store's every write is watched);
- and the same harness, still running, reconciles to the model's state after a crash at that
  point and a restart (REC-1, REC-3): the model's operation cut off after the last step the
  reference got past, with every invariant holding.

Every write step of the approval, team and plan operations, both ways, on the memory backend
(the failure is raised by the fault plan above the backends; the crash tests run both). Mutant:
``store_failure_retried`` (and ``owe_swallows_store_errors``).
"""

from __future__ import annotations

from typing import Any

import pytest

import reference as r
from model_tests.test_stateful import (
    REFUSALS,
    TEAM_CRASH_STEPS,
    ApprovalComparison,
    PlanComparison,
    TeamComparison,
    _scripted_plan_step,
    _scripted_team_step,
    crash_at,
)
from spec.errors import ProtocolError
from spec.model._model import Action
from spec.model._reconcile import reconcile
from spec.model._state import replace

FAILED: set[tuple[str, str]] = set()
"""(mode, step) of every failure that fired, over the session."""


class _Failing:
    """A comparison machine whose scripted crash becomes a store failure, the process living on."""

    mode = "after"
    scripted = True
    storage: Any
    harness: Any
    state: Any
    steps: list[Any]
    model: Any

    def _both(self, action: Action, call: Any, crash_after: str | None = None) -> None:
        if crash_after is None:
            super()._both(action, call, None)  # type: ignore[misc]
            return
        faults, mode, step = self.storage.faults, self.mode, crash_after
        (faults.fail_before if mode == "before" else faults.fail_after).add(step)
        fired, faults.passed = len(faults.fired), None
        late: list[str] = []
        observer = self.storage.on_write

        def watch(written: str) -> None:  # a write after the failure fired
            if len(faults.fired) > fired:
                late.append(written)
            if observer is not None:
                observer(written)

        self.storage.on_write = watch
        raised: BaseException | None = None
        try:
            call()
        except Exception as error:  # judged below: what it is, and its cause
            raised = error
        finally:
            faults.fail_before.clear()
            faults.fail_after.clear()
            self.storage.on_write = observer
        assert (f"fail {mode}", step) in faults.fired, f"{action}: the program never reached {step}"
        FAILED.add((mode, step))
        where = f"{action.name}: the store failed {mode} {step}"
        assert raised is not None, f"{where}, and the operation reported success (XPR-3)"
        assert not isinstance(raised, REFUSALS), f"{where}, and it was reported as a definite refusal: {raised!r}"
        assert isinstance(raised, ProtocolError), f"{where}, and an untyped error escaped: {raised!r}"
        assert _caused_by(raised, r.StorageUnavailable), f"{where}, and the error lost its cause: {raised!r}"
        assert not late, f"{where}, and the operation wrote on after the failure: {late}"
        self._cut(action, step if mode == "after" else faults.passed)
        self.harness.reconcile()  # the same harness: the process lived on
        self.refines_the_model_and_every_invariant_holds()  # type: ignore[attr-defined]

    def _cut(self, action: Action, cut: str | None) -> None:
        """The model: ``action`` cut off after step ``cut`` (not begun when None), then reconciled."""
        if cut is not None:
            assert self._model_take(action, crash_after=cut), f"{action}: the model did not run it"  # type: ignore[attr-defined]
            return
        self.steps.append((replace(action, crash_after="(before its first write)"), replace(self.state, crashed=True)))
        self.state = reconcile(self.model, self.state)
        self.steps.append((Action("restart"), self.state))


def _caused_by(error: BaseException | None, kind: type[BaseException]) -> bool:
    while error is not None:
        if isinstance(error, kind):
            return True
        error = error.__cause__ or error.__context__
    return False


class FailingApprovals(_Failing, ApprovalComparison):
    pass


class FailingTeam(_Failing, TeamComparison):
    pass


class FailingPlans(_Failing, PlanComparison):
    pass


MODES = ("before", "after")


def _run(machine: Any, mode: str, program: Any) -> None:
    machine.mode = mode
    try:
        program(machine)
    finally:
        machine.teardown()


@pytest.mark.clause("XPR-3", "REC-1", "REC-2")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step", r.APPROVAL_STEPS)
def test_an_approval_step_that_fails_is_reported_and_reconciled(step: str, mode: str) -> None:
    _run(FailingApprovals(), mode, lambda m: crash_at(m, step, caller=0))


@pytest.mark.clause("XPR-3", "REC-1", "REC-3", "SHD-5", "TSK-1")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step", TEAM_CRASH_STEPS)
def test_a_team_step_that_fails_is_reported_and_reconciled(step: str, mode: str) -> None:
    _run(FailingTeam(), mode, lambda m: _scripted_team_step(m, step))


@pytest.mark.clause("XPR-3", "REC-1", "REC-3", "PLN-7")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step", r.PLAN_STEPS)
def test_a_plan_step_that_fails_is_reported_and_reconciled(step: str, mode: str) -> None:
    _run(FailingPlans(), mode, lambda m: _scripted_plan_step(m, step))
