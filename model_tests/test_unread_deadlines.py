"""Deadlines nobody reads are erased from the region key (``spec.model._time.UNREAD``).

Clause: INV-12 (the explorer's soundness), SHD-6, PLN-9 (a failed plan execution is rolled back,
whatever the clock), SHD-7 (a timed-out drain is forced, whatever the clock). A ``failed`` plan
execution's and a ``timed_out`` shutdown's deadline is read by no guard, write step,
reconciliation or check (unless the shutdown's request message is still pending): states that
differ only there are one class of the explorer's key. Two proofs:

- state by state, on whole state spaces searched without the erasure: moving such a deadline
  anywhere leaves the enabled operations (crash variants included), the keys of their successors,
  and the verdict of every state and step check as they were — a bisimulation;
- on every configuration in deadline regions that reaches such a record, healthy and with every
  model mutant of it: the search reports the same violations, edges, crash points and deadlocks
  with and without the erasure (and has fewer states).

A status whose deadline *is* read (a running plan execution: the monitor fails it past it) put in
``UNREAD`` is caught state by state.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from spec import invariants
from spec.explore import _search, explore
from spec.model import MUTANTS, Model, _time, load_config
from spec.model._config import Config
from spec.model._dead import erase
from spec.model._snapshot import snapshot
from spec.model._state import State, replace
from spec.model._symmetry import canonical_key

REACHING = (
    "plan",
    "plan_lost",
    "plan_fencing",
    "fencing",
    "monitor",
    "approval_drain",
    "approval_fencing",
    "pair_lapses",
)
"""The configurations in deadline regions whose searches reach a failed run or a timed-out shutdown."""

SLOW = {"plan_lost", "fencing"}
"""Compared healthy only (their mutants on plan and monitor-sized configurations): keeps the run short."""

QUICK = {"plan", "fencing", "monitor"}
"""Compared in the default run, healthy; the rest (all of ``REACHING`` healthy, and every model
mutant of the configurations not in ``SLOW``) with ``TEAMPROTO_UNREAD_FULL=1`` (about 3 minutes)."""

FULL = os.environ.get("TEAMPROTO_UNREAD_FULL") == "1"

NOTHING = {kind: frozenset[str]() for kind in _time.UNREAD}


def _key(model: Model, s: State) -> Any:
    alike = erase(s, regions=True)
    return canonical_key(alike) if model.config.symmetry else alike


def _moves(model: Model, s: State) -> dict[Any, Any]:
    """Action → the key of its successor (a crash through its restart), or the error's text."""
    out: dict[Any, Any] = {}
    for action, after in model.successors(s):
        if isinstance(after, State) and after.crashed:
            after = next(iter(model.successors(after)))[1]
        out[action] = _key(model, after) if isinstance(after, State) else str(after)
    return out


def _checks(config: Config, before: State, moves: list[tuple[Any, State]]) -> list[Any]:
    """Every state check's and step check's verdict on ``before`` and on each transition out of it."""
    snap = snapshot(before, config)
    verdicts: list[Any] = [[(i.name, m) for i, m in invariants.check_state(snap, reconciled=not before.crashed)]]
    for action, after in moves:
        if isinstance(after, State):
            problems = invariants.check_step(snap, snapshot(after, config))
            verdicts.append((action, [(i.name, m) for i, m in problems]))
    return verdicts


def _unread_records(s: State) -> list[tuple[str, int]]:
    """(kind, slot) of every record whose deadline the region key erases as unread."""
    pending = _time._pending_requests(s.bus)
    out = []
    for kind, statuses in _time.UNREAD.items():
        for i, record in enumerate(getattr(s, kind)):
            if record.status in statuses and not _time._kept(kind, record.status, i, pending):
                out.append((kind, i))
    return out


def _moved(s: State, kind: str, slot: int, delta: int) -> State:
    records = list(getattr(s, kind))
    records[slot] = replace(records[slot], deadline=records[slot].deadline + delta)
    return replace(s, **{kind: tuple(records)})


def bisimulation_problems(name: str, mutant: str | None = None) -> tuple[int, list[str]]:
    """Search without the erasure; wherever a deadline is erased as unread, move it (-3, +3) and
    compare the enabled moves, their successors' keys and every check's verdict."""
    config = load_config(name)
    model = Model(config, mutant)
    saved = dict(_time.UNREAD)
    _time.UNREAD.update(NOTHING)
    try:
        states = _search(model).states
    finally:
        _time.UNREAD.update(saved)
    problems, compared = [], 0
    for s in states:
        for kind, slot in _unread_records(s):
            moves = _moves(model, s)
            verdicts = _checks(config, s, list(model.successors(s)))
            for delta in (-3, 3):
                other = _moved(s, kind, slot, delta)
                compared += 1
                if _moves(model, other) != moves:
                    problems.append(f"{kind} {slot} moved by {delta}: other moves or successors from {s}")
                elif _checks(config, other, list(model.successors(other))) != verdicts:
                    problems.append(f"{kind} {slot} moved by {delta}: other verdicts in {s}")
    return compared, problems


@pytest.mark.clause("INV-12", "PLN-9", "SHD-7")
@pytest.mark.parametrize(
    "name",
    ["plan", pytest.param("approval_drain", marks=pytest.mark.skipif(not FULL, reason="TEAMPROTO_UNREAD_FULL=1"))],
)
def test_an_unread_deadline_changes_no_move_and_no_verdict(name: str) -> None:
    compared, problems = bisimulation_problems(name)
    assert compared, "the configuration should reach a record whose deadline is unread"
    assert problems == []


def _cases() -> list[Any]:
    slow = [pytest.mark.skipif(not FULL, reason="TEAMPROTO_UNREAD_FULL=1 compares it")]
    cases: list[Any] = [
        pytest.param(name, None, id=f"{name}-healthy", marks=[] if name in QUICK else slow) for name in REACHING
    ]
    for mutant, spec in MUTANTS.items():
        if spec.config in REACHING and spec.config not in SLOW:
            cases.append(pytest.param(spec.config, mutant, id=f"{spec.config}-{mutant}", marks=slow))
    return cases


@pytest.mark.clause("INV-12", "PLN-9", "SHD-7")
@pytest.mark.parametrize(("name", "mutant"), _cases())
def test_the_erasure_finds_what_the_search_without_it_finds(
    name: str, mutant: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same violations (with their traces' ends), edges, crash points and deadlocks, each search to its end."""
    model = Model(load_config(name), mutant)
    erased = explore(model)
    monkeypatch.setattr(_time, "UNREAD", NOTHING)
    kept = explore(Model(load_config(name), mutant))
    assert erased.complete and kept.complete
    assert erased.findings() == kept.findings()
    assert erased.states <= kept.states
    if mutant is None:
        assert erased.states < kept.states, "the erasure should reduce"


def test_a_read_deadline_erased_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a running plan execution's deadline is read by the monitor
    (PLN-9: it fails the run once the deadline passed); erasing it is caught state by state."""
    monkeypatch.setattr(_time, "UNREAD", {**_time.UNREAD, "runs": frozenset({"failed", "running"})})
    compared, problems = bisimulation_problems("plan")
    assert compared and problems
