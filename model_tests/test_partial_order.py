"""Partial-order reduction (``Model.operations``): it loses no violation, edge, crash point or deadlock.

Clause: INV-12 (the explorer's soundness), INV-7 (outbox sends), SHD-6 (the deadline monitor).
From a state that owes an outbox send, the model takes the first send alone; from a state whose
monitor pass would find nothing past its deadline, it takes that pass alone. Both are
independent of every other operation and invisible to every check, so the reduced search must
report what the full one reports — for the healthy model and for every model mutant (each
run to the end, so that every check it trips is compared, not only the first).
"""

from __future__ import annotations

import dataclasses

import pytest

from spec.explore import explore
from spec.model import MUTANTS, Model, load_config
from spec.model._ops import monitor_is_idle

SMALL = {"shutdown": 1, "pair": 1, "plan_drain": 1, "plan": 2}  # clock bounds that keep the full search quick
CASES = [(name, None) for name in ("tiny", "plan", "monitor", "fencing", "shutdown", "approval_plan")]
CASES += [
    (mutant.config, name)
    for name, mutant in MUTANTS.items()
    if mutant.caught_by.startswith("INV-") or name in ("monitor_expires_early", "decision_before_record")
]
"""The issue-19 mutants of the named predicates are compared on tiny only: each full, unreduced
search of their configurations takes half a minute or more (restart_keeps_incarnation's is infinite),
and the reductions treat every invariant alike."""


@pytest.mark.clause("INV-12", "INV-7", "SHD-6")
@pytest.mark.parametrize(("name", "mutant"), CASES, ids=[f"{n}-{m or 'healthy'}" for n, m in CASES])
def test_the_reduced_search_reports_what_the_full_one_does(name: str, mutant: str | None) -> None:
    config = load_config(name)
    if name in SMALL and config.max_ticks is not None:  # (unbounded time is small: deadline regions)
        config = dataclasses.replace(config, max_ticks=min(SMALL[name], config.max_ticks))
    # Dead-data reduction is on in both (test_dead_data.py checks it alone): this compares the
    # partial-order reduction only.
    reduced = explore(Model(config, mutant), dead_data=True)
    full = explore(Model(config, mutant, reduce=False), dead_data=True)
    assert reduced.complete and full.complete
    assert reduced.findings() == full.findings()
    if name != "approval_plan":  # no clock (issue 18 item 4) and no outbox: nothing to reduce there
        # Under deadline regions a tick is taken only when it changes a region (few idle monitor
        # passes remain): on tiny the reduction saves transitions (1,369 of 1,671), not states.
        reduced_size, full_size = (reduced.states, reduced.transitions), (full.states, full.transitions)
        assert reduced_size < full_size, "the reduction should reduce"
    if mutant is not None:
        assert MUTANTS[mutant].found_in(reduced.violations)


def test_an_idle_monitor_is_one_that_finds_nothing_due() -> None:
    """Right after a tick the monitor is idle unless something is past its deadline."""
    model = Model(load_config("tiny"))
    state = model.initial()
    ticked = dataclasses.replace(state, clock=1, monitor_done=False)
    assert monitor_is_idle(model, ticked)
    for action, after in model.successors(state):
        if action.name == "task.claim" and not action.crash_after:
            claimed = after
    for action, after in model.successors(claimed):
        if action.name == "approval.request" and not action.crash_after:
            requested = after
    due = dataclasses.replace(requested, clock=requested.approvals[0].deadline + 1, monitor_done=False)
    assert not monitor_is_idle(model, due)
    assert [a.name for a, _ in model.successors(due) if not a.crash_after] != ["monitor.pass"]
    assert [a.name for a, _ in model.successors(ticked)] == ["monitor.pass"]
