"""Every model mutant is caught, by the invariant named for it (DESIGN rule 7).

A check no mutant can trip is not counted: this is where each INV-* shows it can fail.
"""

from __future__ import annotations

import pytest

from spec.explore import explore
from spec.model import MUTANTS, Model, load_config


@pytest.mark.clause(
    "INV-1", "INV-2", "INV-3", "INV-4", "INV-5", "INV-6", "INV-7", "INV-8", "INV-9", "INV-10", "INV-11", "INV-12"
)
@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.clause(MUTANTS[name].breaks)) for name in sorted(MUTANTS)]
)
def test_mutant_is_caught_by_its_invariant(name: str) -> None:
    """The model's check of the mutant's clause is real: removing it trips the named invariant."""
    mutant = MUTANTS[name]
    report = explore(Model(load_config(mutant.config), name), stop_on=mutant.caught_by)
    caught = {v.clause for v in report.violations.values()}
    assert mutant.caught_by in caught, f"{name} survived (violations: {sorted(caught)})"
    violation = next(v for v in report.violations.values() if v.clause == mutant.caught_by)
    assert len(violation.trace) >= 2


def test_every_invariant_has_a_mutant() -> None:
    """INV-1 … INV-12 each have at least one mutant that must trip them."""
    assert {m.caught_by for m in MUTANTS.values()} == {f"INV-{n}" for n in range(1, 13)}


def test_mutants_are_named_checks_of_real_clauses() -> None:
    import spec

    for mutant in MUTANTS.values():
        assert mutant.breaks in spec.CLAUSES and mutant.caught_by in spec.CLAUSES
        assert mutant.description
