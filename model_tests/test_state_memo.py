"""The explorer's checks, memoised on the state's numbered record tuples, find exactly what the
snapshot predicates find on every snapshot (issue 18 item 3).

Clause: INV-1 … INV-12 (and the issue-19 safety checks): the snapshot predicates are the contract;
the memo only decides when a predicate need not run again. A search checked through the memo and a
search that runs every predicate on every snapshot must report the same states, transitions,
violations (name, clause, message and trace), edges, crash points and deadlocks — on whole state
spaces of the healthy model and for every model mutant on its own configuration.
"""

from __future__ import annotations

from typing import Any

import pytest

from model_tests.test_symmetry import _sample
from spec import explore as explore_module
from spec.explore import _search
from spec.model import MUTANTS, Model, load_config
from spec.model._snapshot import SECTION_INPUTS, snapshot
from spec.model._state import State


def _findings(model: Model, plain: bool, **bounds: Any) -> dict[str, Any]:
    report = _search(model, plain=plain, **bounds).report
    return {
        "states": report.states,
        "transitions": report.transitions,
        "complete": report.complete,
        "violations": {
            name: (v.clause, v.message, [(str(a), s) for a, s in v.trace]) for name, v in report.violations.items()
        },
        "edges": report.edges_taken,
        "crashed_at": report.crashed_at,
        "deadlocks": report.deadlocks,
    }


@pytest.mark.clause("INV-1", "INV-3", "INV-7", "INV-10", "INV-11", "INV-12")
@pytest.mark.parametrize("name", ["tiny", "pair", "monitor"])
def test_the_memo_finds_what_every_snapshot_finds_on_whole_state_spaces(name: str) -> None:
    model = Model(load_config(name))
    memoised = _findings(model, plain=False)
    assert memoised["complete"] and memoised["states"] > 250  # whole spaces (monitor: 282 states in deadline regions)
    assert memoised == _findings(model, plain=True)


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_memo_finds_what_every_snapshot_finds_for_every_mutant(mutant: str) -> None:
    """Each mutant on its own configuration, until its invariant is broken (or 2,500 states)."""
    model = Model(load_config(MUTANTS[mutant].config), mutant)
    bounds = {"stop_on": MUTANTS[mutant].caught_by, "max_states": 2500}
    assert _findings(model, plain=False, **bounds) == _findings(model, plain=True, **bounds)


def test_a_section_left_out_of_the_memo_key_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: with the approvals' tuple left out of the keys of the sections built
    from it, INV-1 and INV-9 are judged on stale results."""
    monkeypatch.setitem(explore_module.SECTION_POSITIONS, "operation_approval", ())
    monkeypatch.setitem(explore_module.SECTION_POSITIONS, "tool_execution", (5,))
    model = Model(load_config("tiny"), "consume_after_deadline")
    bounds = {"max_states": 3000}
    assert _findings(model, plain=False, **bounds) != _findings(model, plain=True, **bounds)


@pytest.mark.parametrize("name", ["standard", "plan_lost", "shutdown"])
def test_each_section_is_a_function_of_its_declared_inputs(name: str) -> None:
    """``SECTION_INPUTS`` names every field of the state a snapshot section is built from, in the
    snapshot's order: states equal in those fields have equal sections."""
    config = load_config(name)
    states = _sample(name, 1500)
    assert list(snapshot(states[0], config)) == list(SECTION_INPUTS)
    seen: dict[tuple[str, tuple[Any, ...]], Any] = {}
    compared = 0
    for state in states:
        snap = snapshot(state, config)
        for section, inputs in SECTION_INPUTS.items():
            key = (section, tuple(getattr(state, field) for field in inputs))
            if key in seen:
                assert seen[key] == snap[section], f"{section} differs for equal {inputs}"
                compared += 1
            else:
                seen[key] = snap[section]
    assert compared > 1000


def test_the_state_numbers_tell_states_apart() -> None:
    """Two states have equal numbers exactly when they are equal (the visited set's key)."""
    codec = explore_module._Codec()
    states = _sample("standard", 2000)
    by_numbers: dict[tuple[int, ...], State] = {}
    for state in states:
        known = by_numbers.setdefault(codec.signature(state), state)
        assert known == state
    assert len(by_numbers) == len(set(states))


@pytest.mark.parametrize(
    ("name", "limit"), [("pair", 1100), ("wide", 1500), ("pair_crashes", 2500), ("standard", 2500)]
)
def test_the_numbered_canonical_key_partitions_as_canonical_key(name: str, limit: int) -> None:
    """The explorer's symmetry key in numbers (``_Canonical``) puts two states together exactly
    when :func:`spec.model._symmetry.canonical_key` does (whole spaces of pair; the first states of
    the others, crashed states included)."""
    from spec.model._dead import erase
    from spec.model._symmetry import canonical_key

    config = load_config(name)
    states = [erase(s, config.regions) for s in _sample(name, limit)]
    codec = explore_module._Codec()
    canonical = explore_module._Canonical(codec, len(states[0].members), len(states[0].tasks))
    numbered: dict[tuple[int, ...], Any] = {}
    classes: dict[Any, tuple[int, ...]] = {}
    for state in states:
        key, reference = canonical.key(codec.signature(state)), canonical_key(state)
        assert numbered.setdefault(key, reference) == reference
        assert classes.setdefault(reference, key) == key
    assert len(classes) < len(set(states))  # symmetric states were merged


def test_a_numbered_key_missing_a_permutation_is_caught() -> None:
    """The comparison can fail: without the member swap, mirror states are no longer one class."""
    from spec.model._symmetry import canonical_key

    states = _sample("pair", 1100)
    codec = explore_module._Codec()
    canonical = explore_module._Canonical(codec, 2, 2)
    canonical.perms = [(pm, pt) for pm, pt in canonical.perms if pm == (0, 1)]
    keys = {canonical.key(codec.signature(s)) for s in states}
    assert len(keys) > len({canonical_key(s) for s in states})
