"""The stateful tests' incremental snapshots and checks equal the full ones (issue 18 item 9).

Clause: INV-1 … INV-12, REC-2 (the stateful tests check every invariant after every rule on the
reference's snapshot; ``model_tests/incremental.py`` builds that snapshot and runs those checks
incrementally, and these tests show that it checks the very same states with the same results).

- After every rule of many random programs (healthy reference, crashes included), the incremental
  snapshot equals ``Harness.snapshot()``, the incremental checks report what the plain checks report
  on the full snapshots, and the refinement verdict is the same.
- On random walks of model mutants (snapshots sharing sections as the incremental ones do, with
  violations, time passing), the incremental checks report what the plain checks report.
- Each named mutant of the incremental path (``incremental.MUTANTS``) is caught by one of the two.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from model_tests.incremental import MUTANTS, Checks, FullChecks, Operations, Refinement
from model_tests.test_stateful import CONFIG, PLAN_CONFIG, TEAM_CONFIG, ApprovalComparison
from spec.model import Model, _ops, load_config
from spec.model._snapshot import snapshot
from spec.model._state import State


def _named(problems: list[Any]) -> list[tuple[str, str]]:
    return [(inv.name, message) for inv, message in problems]


class Differential(ApprovalComparison):
    """The approval comparison, checking after every rule that the incremental path and the full
    one agree on the snapshot, on every check's result and on refinement; then as usual."""

    def __init__(self) -> None:
        super().__init__()
        self.full_before = self.harness.snapshot()
        self.full_checks = FullChecks()
        self.full_refinement = Refinement(self.config, full=True)

    @invariant()
    def refines_the_model_and_every_invariant_holds(self) -> None:
        full, after = self.harness.snapshot(), self.incremental()
        stale = [section for section in full if full[section] != after[section]]
        assert not stale, f"the incremental snapshot differs from the full one in {stale}"
        expected = _named(self.full_checks.state(full) + self.full_checks.step(self.full_before, full))
        found = _named(self.checks.state(after) + self.checks.step(self.before, after))
        assert found == expected, f"incremental checks {found} != full checks {expected}"
        assert self.refinement.holds(after, self.state) == self.full_refinement.holds(full, self.state)
        self.full_before = full
        super().refines_the_model_and_every_invariant_holds()


def _run(machine: type[Differential], examples: int) -> None:
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=40,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        ),
    )


class DifferentialSqlite(Differential):
    backend = "sqlite"


@pytest.mark.clause("INV-1", "INV-3", "INV-10", "REC-2")
def test_incremental_snapshots_and_checks_equal_the_full_ones() -> None:
    _run(Differential, 30)


@pytest.mark.clause("STO-1", "REC-2")
def test_incremental_snapshots_equal_the_full_ones_on_sqlite() -> None:
    """SQLite's rows are read table by table (``Storage._scan``), in its key order."""
    _run(DifferentialSqlite, 6)


def _walks(config: str, mutant: str | None, walks: int, length: int) -> list[list[dict[str, Any]]]:
    """Random walks of the model (crash variants included): each a list of its snapshots."""
    model, rng, out = Model(load_config(config), mutant), random.Random(f"{config}/{mutant}"), []
    for _ in range(walks):
        state, snaps = model.initial(), []
        for _ in range(length):
            snaps.append(snapshot(state, model.config))
            following = [s for _, s in model.successors(state) if isinstance(s, State)]
            if not following:
                break
            state = rng.choice(following)
        out.append(snaps)
    return out


WALKS = [
    ("tiny", None),
    ("tiny", "monitor_expires_early"),
    ("tiny", "review_after_deadline"),
    ("tiny", "secret_not_redacted"),
    ("tiny", "consume_without_digest_check"),
    ("shutdown", "finish_keeps_task"),
    ("monitor", "monitor_skips_shutdown"),
]


@pytest.mark.clause("INV-1", "INV-10", "INV-12", "APR-4")
@pytest.mark.parametrize(("config", "model_mutant"), WALKS)
def test_incremental_checks_equal_the_plain_ones_on_model_walks(config: str, model_mutant: str | None) -> None:
    found = _compare_on_walks(config, model_mutant, None)
    assert model_mutant is None or found, "the walks should meet violations, or this test shows nothing"


def _compare_on_walks(config: str, model_mutant: str | None, mutant: str | None) -> int:
    found = 0
    for snaps in _walks(config, model_mutant, walks=60, length=60):
        checks = Checks(mutant)
        for before, after in itertools.pairwise(snaps):
            plain = _named(FullChecks().state(after) + FullChecks().step(before, after))
            assert _named(checks.state(after) + checks.step(before, after)) == plain
            found += len(plain)
    return found


def test_the_walks_share_sections_between_snapshots() -> None:
    """The incremental checks reuse results only for the very same sections: the walks above must
    have them, as the incremental snapshots do, or they would test the plain path alone."""
    snaps = _walks("tiny", None, walks=1, length=20)[0]
    shared = sum(before[s] is after[s] for before, after in itertools.pairwise(snaps) for s in after)
    assert shared > len(snaps)


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_each_mutant_of_the_incremental_path_is_caught(mutant: str) -> None:
    if mutant.startswith("checks_"):
        with pytest.raises(AssertionError):
            for config, model_mutant in reversed(WALKS):
                _compare_on_walks(config, model_mutant, mutant)
        return

    class Mutated(Differential):
        incremental_mutant = mutant

    with pytest.raises(AssertionError, match="incremental snapshot differs"):
        _run(Mutated, 40)


@pytest.mark.parametrize("config", [CONFIG, TEAM_CONFIG, PLAN_CONFIG], ids=["approval", "team", "plan"])
def test_the_operations_shortcut_finds_what_the_model_finds(config: Any) -> None:
    """``incremental.Operations`` relies on the full model's operations being its families' in
    order, each name coming from one family: on random walks of the stateful tests' models, every
    operation the model offers is the first one the shortcut offers under its name."""
    model, rng = Model(config, reduce=False), random.Random(config.name)
    names: dict[str, set[str]] = {}
    for _ in range(8):
        state, shortcut = model.initial(), Operations(model)
        for _ in range(40):
            offered = [(action.name, action.args) for action, _ in model.operations(state)]
            families = [(f.__name__, a.name, a.args) for f in _ops.FAMILIES for a, _ in f(model, state)]
            assert offered == [(name, args) for _, name, args in families]
            for family, name, _ in families:
                names.setdefault(name, set()).add(family)
            for name, args in offered:
                found = next(a for a, _ in shortcut.candidates(state, name) if (a.name, a.args) == (name, args))
                assert (found.name, found.args) == (name, args)
            following = [s for _, s in model.successors(state) if isinstance(s, State) and not s.crashed]
            if not following:
                break
            state = rng.choice(following)
    assert all(len(families) == 1 for families in names.values()), names
    assert len(names) > 5
