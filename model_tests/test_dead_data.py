"""Dead-data reduction (``spec.model._dead``): it loses no state class and no verdict.

Clause: INV-12 (the explorer's soundness), INV-2, INV-4, INV-5 (the invariants that read jobs and
tasks). The reduced search expands one state per class of ``erase``; that is sound when states of
one class are bisimilar and every check gives them the same verdict. Both are checked here on
whole state spaces, healthy and broken: the full search reaches no class the reduced one misses,
every state it reaches has the verdicts of its class's representative, and both searches report
the same violations, edges, crash points and deadlocks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from spec import invariants
from spec.explore import _search
from spec.model import Model, load_config, snapshot
from spec.model._dead import erase
from spec.model._state import State
from spec.model._symmetry import canonical_key

CASES = [  # (configuration, mutant, bounds: (clock, unit deadline), to keep the run quick)
    # A bounded clock throughout: this compares the dead-data reduction alone (the deadline regions
    # of a configuration with unbounded time are compared with a clock in test_time.py).
    ("tiny", None, (3, 9)),
    ("plan", None, (3, 9)),
    ("plan_lost", None, (1, 9)),
    ("pair", None, None),  # with symmetry
    ("shutdown", None, (1, 1)),  # jobs, escalation, and suspensions (a unit deadline within the bound)
    ("tiny", "consume_after_deadline", (3, 9)),
    ("tiny", "cancel_after_consume", (3, 9)),
    ("plan", "execute_plan_twice", (1, 9)),
    ("shutdown", "release_before_jobs_settle", (1, 9)),  # INV-5 reads jobs
    ("shutdown", "finish_keeps_task", (1, 9)),  # INV-4 reads tasks
    ("plan_lost", "inspection_keeps_requests", (1, 9)),  # liveness
]


def _verdicts(state: State, model: Model, memo: invariants.Memo) -> frozenset[str]:
    snap = snapshot(state, model.config)
    return frozenset(inv.name for inv, _ in memo.check_state(snap, reconciled=not state.crashed))


@pytest.mark.clause("INV-12", "INV-2", "INV-4", "INV-5")
@pytest.mark.parametrize(
    ("name", "mutant", "bounds"), CASES, ids=[f"{n}-{m or 'healthy'}{'-small' if b else ''}" for n, m, b in CASES]
)
def test_the_reduced_search_loses_no_class_and_no_verdict(
    name: str, mutant: str | None, bounds: tuple[int, int] | None
) -> None:
    config = load_config(name)
    if bounds is not None:
        config = dataclasses.replace(config, max_ticks=bounds[0], unit_ticks=bounds[1])
    model = Model(config, mutant)
    full = _search(model, dead_data=False)
    reduced = _search(model, dead_data=True)
    assert full.report.complete and reduced.report.complete

    def cls(state: State) -> Any:
        return canonical_key(erase(state)) if config.symmetry else erase(state)

    representative = {cls(s): s for s in reduced.states}
    assert {cls(s) for s in full.states} == set(representative), "a class of the full search is missing"
    assert len(reduced.states) == len(representative), "the reduced search expands one state per class"
    memo = invariants.Memo()
    for state in full.states:
        assert _verdicts(state, model, memo) == _verdicts(representative[cls(state)], model, memo), state
    assert reduced.report.findings() == full.report.findings()
    assert len(reduced.states) < len(full.states), "the reduction should reduce these"


def test_erase_keeps_what_is_read() -> None:
    """Only final jobs and tasks are erased; a live one, and every protocol record, is kept."""
    model = Model(load_config("shutdown"))
    search = _search(model, max_states=3000, dead_data=False)
    erased = 0
    for s in search.states:
        e = erase(s)
        assert (e.members, e.approvals, e.plans, e.runs, e.shutdowns, e.bus, e.outbox, e.clock) == (
            s.members,
            s.approvals,
            s.plans,
            s.runs,
            s.shutdowns,
            s.bus,
            s.outbox,
            s.clock,
        )
        for before, after in [*zip(s.jobs, e.jobs, strict=True), *zip(s.tasks, e.tasks, strict=True)]:
            if before != after:
                erased += 1
                assert before.status in ("succeeded", "failed", "cancelled", "completed")
    assert erased, "the sample should hold final jobs or tasks"
