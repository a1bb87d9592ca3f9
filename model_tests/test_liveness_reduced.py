"""The liveness check where the explorer reduces (issue 18 items 2, 3 and 5; INV-12, REC-2).

The check (``spec.explore.report_liveness``: from every state a goal state can be reached, and
no cycle avoids the goal; ``LastInstants``: a deadline is its record's last instant) now also runs
under symmetry, on the flat engine, on a search spread over processes, and on the parts of a
split configuration. Each is held here to the plain search:

- **symmetry**: with it and without it the same verdicts, on ``monitor_pair`` and ``pair_lapses``
  (healthy) and on a one-shutdown ``monitor_pair`` with every model mutant — two of them
  (``inspection_leaves_drain_open``, ``begin_drain_forgets_request``) caught by a liveness check
  there, so the comparison can fail;
- **the engines**: the graph the check reads — each state's moves in order, crash edges marked,
  and the goal flags — is the model's search's graph on the flat engine (state for state) and on
  a search spread over two processes (class for class, by the class key: numbers differ there),
  with crashes, under symmetry and with time; and every deadline-bearing state's record kinds live
  at their deadline (``at_last_instant``) agree on the two forms of the state (``differences``
  in ``test_flat``, the flat proof's per-state comparison);
- **the split** (``spec.split``): the parts report the liveness findings of the whole with
  ``crash_between``, healthy and with every model mutant, in ``test_split.py``, and here with
  deadline regions on the mutants whose bug only a liveness check of that whole finds.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from spec._flat_explore import search_flat
from spec._parallel import search_parallel
from spec.audit import _key
from spec.explore import _search, explore
from spec.model import MUTANTS, Model, load_config
from spec.model._config import Config
from spec.model._flat import FlatModel, decode
from spec.model._state import State
from spec.split import parts

LIVENESS = ("every_request_can_finish", "no_cycle_avoids_finish", "deadline_is_the_last_instant")


def _verdicts(config: Config, mutant: str | None = None) -> tuple[set[str], bool]:
    report = explore(Model(config, mutant))
    assert report.complete
    return set(report.violations), report.liveness_checked


@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("name", ["monitor_pair", "pair_lapses"])
def test_symmetry_keeps_the_liveness_verdicts(name: str) -> None:
    config = load_config(name)
    assert config.liveness and not config.symmetry and config.members == 2
    reduced, plain = explore(Model(dataclasses.replace(config, symmetry=True))), explore(Model(config))
    assert reduced.complete and plain.complete
    assert (set(reduced.violations), reduced.liveness_checked) == (set(plain.violations), plain.liveness_checked)
    assert plain.liveness_checked and reduced.states < plain.states  # it reduces


@pytest.mark.clause("INV-12", "SHD-6")
def test_symmetry_keeps_the_liveness_verdicts_with_every_mutant() -> None:
    config = dataclasses.replace(load_config("monitor_pair"), shutdowns=1)
    caught_by_liveness = []
    for mutant in MUTANTS:
        plain = _verdicts(config, mutant)
        assert _verdicts(dataclasses.replace(config, symmetry=True), mutant) == plain, mutant
        if plain[0] & set(LIVENESS):
            caught_by_liveness.append(mutant)
    assert {"inspection_leaves_drain_open", "begin_drain_forgets_request"} <= set(caught_by_liveness)


# ---- the graph each engine keeps ---------------------------------------------------------------

GRAPHS = {
    "approvals_two": load_config("approvals_two"),  # crashes: crash edges; deadline regions
    "monitor_pair-symmetry": dataclasses.replace(load_config("monitor_pair"), shutdowns=1, symmetry=True),
    "plan": load_config("plan"),  # a plan's run, crashes, regions
}


def _model_graph(config: Config) -> tuple[list[State], list[list[int]], list[bool]]:
    search = _search(Model(config))
    assert search.report.complete and search.report.liveness_checked
    return search.states, search.successors, [search.model.is_goal(s) for s in search.states]


@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("name", list(GRAPHS))
def test_the_flat_engine_keeps_the_models_graph(name: str) -> None:
    config = GRAPHS[name]
    states, successors, goal = _model_graph(config)
    search = search_flat(Model(config))
    assert search.report.liveness_checked
    assert list(search.model_states()) == states
    assert [list(search.targets[search.offsets[n] : search.offsets[n + 1]]) for n in range(len(states))] == successors
    assert [bool(g) for g in search.goal] == goal
    assert any(t < 0 for moves in successors for t in moves) == config.crashes  # crash edges, where there are crashes


@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("name", list(GRAPHS))
def test_a_spread_search_keeps_the_models_graph(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Class for class: each spread state's moves, as (class, crash edge) pairs, are those of the
    state of its class in the model's search, and so is its goal flag; every class is there once."""
    monkeypatch.setenv("TEAMPROTO_ENGINE", "flat")  # proven or not (test_flat_proof.py holds that)
    config = GRAPHS[name]
    states, successors, goal = _model_graph(config)
    keys = [_key(s, config) for s in states]
    want = {
        keys[n]: (sorted((keys[t if t >= 0 else -t - 1], t < 0) for t in successors[n]), goal[n])
        for n in range(len(states))
    }
    graphs: list[Any] = []
    report = search_parallel(Model(config), 2, graph_out=graphs)
    assert report.liveness_checked and report.states == len(states)
    ((offsets, targets, flags, joined),) = graphs
    flat = FlatModel(config)
    found: dict[int, Any] = {}

    def state(number: int) -> Any:  # each state rebuilt once, from its parent's
        if number not in found:
            action, parent = joined.step(number)
            if parent < 0:
                found[number] = flat.initial()
            else:
                before = state(parent)
                after = next(s for a, s in flat.successors(before) if a == action)
                if action.crash_after:
                    after = next(iter(flat.successors(after)))[1]
                found[number] = after
        return found[number]

    numbers = [n for n in range(len(offsets) - 1) if n // 2 < _count(joined, n % 2)]
    key = {n: _key(decode(state(n)), config) for n in numbers}
    got = {
        key[n]: (
            sorted((key[t if t >= 0 else -t - 1], t < 0) for t in targets[offsets[n] : offsets[n + 1]]),
            bool(flags[n]),
        )
        for n in numbers
    }
    assert len(numbers) == len(states)
    assert got == want


def _count(joined: Any, process: int) -> int:
    return len(joined.depths[process])


# ---- the split --------------------------------------------------------------------------------

SPLIT_LIVENESS = ["monitor_expires_early", "monitor_fails_run_at_deadline"]
"""The mutants a liveness check of ``approval_plan`` with deadline regions (and no crashes, to keep
it small) finds: ``monitor_fails_run_at_deadline`` is found by ``deadline_is_the_last_instant``
alone there."""


@pytest.mark.clause("XPR-2", "INV-12", "PLN-9")
@pytest.mark.parametrize("mutant", [None, *SPLIT_LIVENESS])
def test_the_parts_report_the_liveness_findings_of_the_whole(mutant: str | None) -> None:
    whole = dataclasses.replace(load_config("approval_plan"), split=True, max_ticks=None, crashes=False)
    assert whole.liveness
    full = explore(Model(dataclasses.replace(whole, split=False, crash_between=True), mutant))
    reports = [explore(Model(part, mutant)) for part in parts(whole)]
    assert all(r.liveness_checked for r in [full, *reports])
    split = set().union(*(set(r.violations) for r in reports))
    assert split == set(full.violations)
    assert bool(split & set(LIVENESS)) == (mutant is not None)
