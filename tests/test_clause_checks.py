"""Every clause of the protocol has a named check, or a stated reason why no snapshot can show it.

Clause: INV-1 … INV-12 and every safety clause (issue 19): ``spec.clause_checks`` is the table.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import spec
from spec.clause_checks import CLAUSE_CHECKS, EXPLORER_CHECKS, NOT_OF_STATES
from spec.invariants import INVARIANTS
from spec.model import MUTANTS

ROOT = Path(__file__).resolve().parent.parent
NAMES = {inv.name for inv in INVARIANTS} | EXPLORER_CHECKS


def test_every_clause_has_an_entry() -> None:
    missing = [clause for clause in spec.CLAUSES if clause not in CLAUSE_CHECKS and clause not in NOT_OF_STATES]
    assert not missing, f"clauses with no check and no reason: {missing}"
    assert not set(CLAUSE_CHECKS) & set(NOT_OF_STATES)
    assert set(CLAUSE_CHECKS) | set(NOT_OF_STATES) <= set(spec.CLAUSES)


@pytest.mark.parametrize("clause", sorted(CLAUSE_CHECKS))
def test_each_entry_names_real_checks(clause: str) -> None:
    entry = CLAUSE_CHECKS[clause]
    assert entry.predicates and set(entry.predicates) <= NAMES, set(entry.predicates) - NAMES
    if entry.guard or entry.mutant:
        module, _, attribute = entry.guard.partition(":")
        target: object = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
        mutant = MUTANTS[entry.mutant]
        # the mutant removes the guard, and one of the clause's own predicates must catch it
        caught = {inv.clause: inv.name for inv in INVARIANTS}.get(mutant.caught_by, mutant.caught_by)
        assert caught in entry.predicates


def test_every_predicate_checks_some_clause() -> None:
    used = {name for entry in CLAUSE_CHECKS.values() for name in entry.predicates}
    assert {inv.name for inv in INVARIANTS} | EXPLORER_CHECKS == used


@pytest.mark.parametrize("clause", sorted(NOT_OF_STATES))
def test_each_exemption_says_why_and_where(clause: str) -> None:
    reason, test = NOT_OF_STATES[clause]
    assert reason
    if test:
        assert f'"{clause}"' in (ROOT / test).read_text(encoding="utf-8"), f"{test} does not cite {clause}"


def test_each_safety_predicate_cites_a_clause_it_checks() -> None:
    for inv in INVARIANTS:
        assert inv.clause in spec.CLAUSES
        assert any(inv.name in CLAUSE_CHECKS[c].predicates for c in CLAUSE_CHECKS if c == inv.clause), inv.name


def _catchers(name: str) -> set[str]:
    """The predicates that catch model mutant ``name``: the one it names (or every predicate of
    the INV clause it names), and those that fire with it in the same step (``also``)."""
    mutant = MUTANTS[name]
    named = {inv.name for inv in INVARIANTS if mutant.caught_by in (inv.name, inv.clause)}
    return named | ({mutant.caught_by} & EXPLORER_CHECKS) | set(mutant.also)


BROKEN = sorted({m.breaks for m in MUTANTS.values()} & set(CLAUSE_CHECKS))


@pytest.mark.parametrize("clause", BROKEN)
def test_a_clause_is_checked_by_a_predicate_that_catches_its_mutants(clause: str) -> None:
    """The table names, for each clause a model mutant breaks, a predicate that catches one of
    those mutants: the attribution is shown, not only stated (an outside review attributed APR-7
    to INV-1's predicate instead of INV-9's, and every test of the table passed)."""
    catchers = set().union(*(_catchers(name) for name, m in MUTANTS.items() if m.breaks == clause))
    assert catchers & set(CLAUSE_CHECKS[clause].predicates), (clause, sorted(catchers))
