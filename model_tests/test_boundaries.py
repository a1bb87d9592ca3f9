"""Every deadline guard is seen open on its boundary (``deadline_boundaries_reached``).

The safety checks bound each deadline guard from one side: nothing is decided after its deadline
(APR-4), nothing expires before it (APR-5, SHD-6). A guard one tick too strict on the other side
— a drain refused at the very deadline, a review refused at its last instant — breaks none of
them: it only removes states, which an outside review saw move the pinned counts and nothing
else. These tests pin the check that closes that side: the explorer notes each deadline edge
taken exactly on its boundary, and a run that takes such an edge only off its boundary fails.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from spec import MACHINES, edges
from spec.clauses import CLAUSES
from spec.explore import BOUNDARY_CHECK, explore, unreached_boundaries
from spec.model import MUTANTS, Model, load_config
from spec.model._model import DEADLINE_EDGES, EDGE_LOG, REQUEST_EXPIRY, deadline_edge

BOUNDARY_MUTANTS = sorted(name for name, m in MUTANTS.items() if m.caught_by == BOUNDARY_CHECK)


def test_each_deadline_edge_is_a_machine_edge_with_its_clause_and_boundary() -> None:
    machine_edges = {(name, e.source, e.target) for name in MACHINES for e in edges(name)}
    assert set(DEADLINE_EDGES) - {REQUEST_EXPIRY} <= machine_edges
    assert REQUEST_EXPIRY not in machine_edges  # the monitor's expiry of a request message (MSG-1)
    for (machine, source, target), (offset, clause) in DEADLINE_EDGES.items():
        assert clause in CLAUSES
        assert offset in (0, -1), "decided at the deadline (0) or expired just past it (-1)"
        assert deadline_edge(machine, source, target) not in machine_edges
    # every expiry and timeout the monitor makes is one of them (SHD-6, APR-5, PLN-5)
    expiries = {e for e in machine_edges if e[2] in ("expired", "timed_out") and e[0] != "message"}
    assert expiries | {REQUEST_EXPIRY} == {e for e, (offset, _) in DEADLINE_EDGES.items() if offset == -1}


@pytest.mark.clause("APR-4", "APR-5", "PLN-5", "SHD-2", "SHD-6", "SHD-9")
def test_the_healthy_model_takes_every_deadline_edge_on_its_boundary() -> None:
    """Three small configurations with time in deadline regions and ``shutdown`` (the unit
    deadline, SHD-9) take each of the sixteen edges at its boundary, and hold the check."""
    taken: set[tuple[str, str, str]] = set()
    for name in ("tiny", "plan", "monitor", "shutdown"):
        report = explore(Model(load_config(name)))
        assert BOUNDARY_CHECK not in report.violations, report.violations
        taken |= report.edges_taken
    assert {deadline_edge(*e) for e in DEADLINE_EDGES} <= taken


@pytest.mark.clause("SHD-2")
def test_a_frozen_clock_has_no_boundary_to_reach() -> None:
    """``max_ticks`` 0: no deadline can come, so an edge taken before it is no finding; the same
    edges under a clock that moves are."""
    base = {("shutdown_request", "requested", "draining")}
    assert unreached_boundaries(base, load_config("pair")) == []
    assert unreached_boundaries(base, load_config("monitor")) == sorted(base)
    assert unreached_boundaries(base | {deadline_edge(*next(iter(base)))}, load_config("monitor")) == []


@pytest.mark.clause("APR-4", "PLN-5", "SHD-2", "MSG-1")
@pytest.mark.parametrize("name", BOUNDARY_MUTANTS)
def test_a_guard_one_tick_off_is_caught_with_the_edge_it_took_off_its_boundary(name: str) -> None:
    """The counterexample ends with the deadline edge's first move, off its boundary (before the
    deadline for a decision, more than a tick past it for an expiry), and names the clause; nothing
    else trips but what the mutant declares (a late expiry leaves a message unread a pass after
    its deadline, INV-12)."""
    mutant = MUTANTS[name]
    report = explore(Model(load_config(mutant.config), name))
    assert set(report.violations) == {BOUNDARY_CHECK, *mutant.also}
    violation = report.violations[BOUNDARY_CHECK]
    assert violation.clause == mutant.breaks
    edge = next(e for e in DEADLINE_EDGES if violation.message.startswith("{} {} -> {} ".format(*e)))
    offset, clause = DEADLINE_EDGES[edge]
    assert clause == mutant.breaks
    before, last = violation.trace[-2][1], violation.trace[-1][1]
    if offset == 0:
        assert f"refuses the last instant {clause} allows" in violation.message
        field = {"operation_approval": "approvals", "plan_approval": "plans"}.get(edge[0], "shutdowns")
        record = next(r for r in getattr(last, field) if r.status == edge[2])
        assert record.deadline > last.clock  # taken while the deadline was still ahead
    else:
        assert "acts late" in violation.message
        expired = [m.key for m in last.bus if m.status == "expired"]
        assert expired and all(m.status == "pending" for m in before.bus if m.key in expired)
        assert last.approvals[0].deadline < last.clock - 1  # two ticks and more past it


def test_the_boundary_mutants_are_one_per_guard_kind() -> None:
    """A decision's, a drain's and a start's guard refusing the deadline itself; the monitor's
    expiry of an unread request message a tick late."""
    assert {MUTANTS[n].breaks for n in BOUNDARY_MUTANTS} == {"APR-4", "PLN-5", "SHD-2", "MSG-1"}


def test_the_verdict_needs_no_witness_of_the_edge() -> None:
    """A caller's own search that noted no first moves still gets the verdict (its trace then
    starts and ends at the initial state); a second call adds nothing."""
    from spec.explore import Report, check_boundaries

    model = Model(load_config("monitor"))
    report = Report("monitor", None, edges_taken={("shutdown_request", "requested", "draining")})
    check_boundaries(model, report, {}, lambda n: [(None, model.initial())])
    violation = report.violations[BOUNDARY_CHECK]
    assert violation.clause == "SHD-2" and [s for _, s in violation.trace] == [model.initial()]
    check_boundaries(model, report, {}, lambda n: [])
    assert list(report.violations) == [BOUNDARY_CHECK]


def _moves_the_clock_gates(model: Model, state: Any) -> Iterator[tuple[Any, Any]]:
    """(action, the state it is enabled in) for each move whose guard the clock alone decides here:
    enabled at this clock and not one tick earlier or later, or the other way round."""
    state = dataclasses.replace(state, monitor_done=True)  # a due pass is taken alone: not a record's guard
    mine = {action: state for action, _ in model.operations(state)}
    for change in (-1, 1):
        if state.clock + change < 0:
            continue
        shifted = dataclasses.replace(state, clock=state.clock + change)
        theirs = {action: shifted for action, _ in model.operations(shifted)}
        for action in mine.keys() ^ theirs.keys():
            yield action, mine.get(action) or theirs[action]


@pytest.mark.clause("SHD-9", "APR-4", "PLN-5", "SHD-2", "SHD-6")
def test_every_move_the_clock_gates_takes_a_deadline_edge() -> None:
    """The list of deadline edges is complete: every move of the model that one tick of the clock
    opens or closes (all else equal) takes one of them — so its boundary is checked. Outside review
    59 moved the unit deadline's suspension (SHD-9) a tick late: only a coverage bound of one
    configuration saw it, since the list lacked the edge. The clock's own tick and the monitor's
    pass are the clock's moves, not guards of a record (the pass's expiries are the list's -1 edges)."""
    missing: dict[str, str] = {}
    deadline = {(machine, source, target) for machine, source, target in DEADLINE_EDGES}
    for name in ("tiny", "plan", "monitor", "shutdown"):
        model = Model(load_config(name))
        start = model.initial()
        queue, seen = deque([start]), {start}
        while queue:
            state = queue.popleft()
            for action, enabled in _moves_the_clock_gates(model, state):
                if action.name in ("tick", "monitor.pass") or action.name in missing:
                    continue
                taken = _edges_of(model, enabled, action)
                if not taken & deadline:
                    missing[action.name] = f"{name}: {action} takes {sorted(taken)} at clock {enabled.clock}"
            for _, after in model.successors(state):
                if not isinstance(after, Exception) and after not in seen:
                    seen.add(after)
                    queue.append(after)
    assert not missing, "moves the clock gates that take no deadline edge:\n" + "\n".join(missing.values())


def _edges_of(model: Model, state: Any, action: Any) -> set[tuple[str, str, str]]:
    steps = next(steps for candidate, steps in model.operations(state) if candidate == action)
    EDGE_LOG.append(set())
    try:
        for _, apply in steps:
            state = apply(state)
        return {edge for edge in EDGE_LOG[-1] if len(edge) == 3}
    finally:
        EDGE_LOG.pop()
