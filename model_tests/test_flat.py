"""The plain-tuple form of the model and its explorer against the model itself (issue 18 item 3).

One source (DESIGN rule 1): :mod:`spec.model._flat` restates the model's operations, so it is
proven equal to them here on whole state spaces, not on samples:

- ``encode`` and ``decode`` are exact inverses on every state reached;
- from every state the model's search expands (and every crashed state it restarts), the flat
  successors decode to exactly ``Model.successors``: the same actions in the same order (crash
  variants with their ``crash_after``), the same states, the same ``IllegalTransition`` cases, the
  same machine edges logged, and the same ``is_goal``;
- the flat canonical key groups the states exactly as :func:`spec.model._symmetry.canonical_key`
  with :func:`spec.model._dead.erase` does;
- the flat search reports what the model's search reports: states, transitions, depths,
  violations with their traces, edges, crash points, deadlocks and witnesses.

``pair`` and ``wide`` run here; ``python -m model_tests.test_flat pair_crashes`` runs the same
per-transition proof on ``pair_crashes`` (70,806 states expanded, about 40 s), and ``bench/explore.py
--engine-configs pinned mutants`` compares whole searches with the engine of git revision 59053e7.

Time (the tick, the monitor pass, deadline regions): the same per-transition proof, with the
region key (``_flat.relative`` against ``_time.relative``) and ``tick_matters`` of every state, on
the whole state spaces of the pinned regions configurations with liveness off (``plan``,
``monitor``, ``tiny`` without its profile change) and of ``pair`` with a bounded clock where
deadlines pass; on seeded crash walks through ``standard`` itself; the region key's partition; the
whole reports; and the first 4,000 states of ``standard``'s search both ways. By hand: ``python -m
model_tests.test_flat time:approval_drain`` (15,106 states expanded) and ``standard:40000``.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from spec._flat_explore import Canonical, erase, explore_flat, search_flat
from spec._flat_explore import at_last_instant as flat_at_last_instant
from spec._records import Report
from spec._tables import IllegalTransition
from spec.explore import _search, at_last_instant, explore, flat_engine
from spec.model import MUTANTS, Model, _flat, _model, load_config, manifest
from spec.model._dead import erase as model_erase
from spec.model._flat import FlatModel, decode, encode, supports, unsupported
from spec.model._state import State, replace
from spec.model._symmetry import canonical_key


def interpreted(test: Callable[..., None]) -> Callable[..., None]:
    """A test that patches the flat engine's functions (to show a comparison can fail): compiled
    code calls them directly, past any patch, so where the compiled build runs (CI) the test runs
    in an interpreted process (``TEAMPROTO_PURE=1``), and must pass there."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        from spec import _flat_explore

        if Path(_flat_explore.__file__ or "").suffix != ".so":
            return test(*args, **kwargs)
        # The test's own node id, parameters included ("path::name[param] (call)").
        node = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0] or f"{__file__}::{test.__name__}"
        rerun = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
            env={**os.environ, "TEAMPROTO_PURE": "1"},
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert rerun.returncode == 0 and "1 passed" in rerun.stdout, rerun.stdout[-2000:]

    return run


IN_SCOPE = [name for name in manifest() if manifest()[name]["states"] is not None and supports(load_config(name))]
QUICK = ["pair", "wide"]


@cache
def _expanded(name: str) -> tuple[Model, list[State]]:
    """Every state the model's search expands: those it stores, and every crashed state it restarts."""
    return _expanded_by(Model(load_config(name)))


def _expanded_by(model: Model) -> tuple[Model, list[State]]:
    states = list(_search(model).states)
    crashed = [s for state in states for _, s in model.successors(state) if isinstance(s, State) and s.crashed]
    return model, states + crashed


def _plain(pairs: Any) -> list[str]:
    """Each (action, next state) by ``repr``: a flag written ``1`` where the model writes ``True``
    compares equal but is not the model (found by the outside review, ``test_flat_review.py``)."""
    return [repr((a, ("illegal", str(s)) if isinstance(s, IllegalTransition) else s)) for a, s in pairs]


def differences(model: Model, states: list[State], flat: FlatModel | None = None) -> list[str]:
    """Where the flat model and the model differ, state by state (empty: nowhere): the successors
    in order, compared by ``repr``, the edges each logs, ``decode(encode(s))`` and the goal test."""
    flat = flat or FlatModel(model.config)
    found: list[str] = []
    for state in states:
        f = encode(state)
        if decode(f) != state:
            found.append(f"decode(encode(s)) != s for {state}")
        _model.EDGE_LOG.append(set())
        try:
            want = _plain(model.successors(state))
            want_edges = _model.EDGE_LOG[-1]
            _model.EDGE_LOG[-1] = set()
            got = _plain((a, s if isinstance(s, IllegalTransition) else decode(s)) for a, s in flat.successors(f))
            got_edges = _model.EDGE_LOG[-1]
        finally:
            _model.EDGE_LOG.pop()
        if want != got:
            found.append(f"successors differ from {state}: {want} != {got}")
        if want_edges != got_edges:
            found.append(f"edges differ from {state}: {sorted(want_edges ^ got_edges)}")
        if not state.crashed and model.is_goal(state) != flat.is_goal(f):
            found.append(f"is_goal differs at {state}")
        if at_last_instant(state) != flat_at_last_instant(f):
            found.append(f"at_last_instant differs at {state}")
    return found


def _findings(report: Report) -> tuple[Any, ...]:
    violations = {n: (v.clause, v.message, [(str(a), s) for a, s in v.trace]) for n, v in report.violations.items()}
    return (
        report.states,
        report.transitions,
        report.depth,
        report.states_by_depth,
        report.complete,
        report.expanded_through,
        report.deadlocks,
        sorted(report.crashed_at),
        sorted(report.edges_taken),
        violations,
        report.witnesses,
        report.frontier,
    )


def test_scope_is_the_feature_set_of_pair_crashes_pair_plan_and_standard() -> None:
    assert {"pair", "pair_crashes", "wide", "pair_plan"} <= set(IN_SCOPE)
    assert supports(load_config("standard"))  # deadline regions, the tick and the monitor
    assert unsupported(load_config("plan"), None) == []  # the liveness check too (test_liveness_reduced.py)
    assert unsupported(load_config("shutdown"), None) == [
        "heartbeat lapses",
        "unit deadlines (task.suspend, a clock reaching unit_ticks)",
    ]
    assert unsupported(load_config("pair"), "consume_unapproved") == ["model mutant consume_unapproved"]


@pytest.mark.clause("INV-3")
@pytest.mark.parametrize("name", QUICK)
def test_flat_successors_equal_the_models_on_the_whole_state_space(name: str) -> None:
    model, states = _expanded(name)
    assert differences(model, states) == []


PLAN_VARIANTS = {  # pair_plan, small enough here, with a retraction allowed (pair_plan allows none)
    "one member": {"max_retractions": 1, "tasks": 1, "members": 1},
    "with an approval": {"max_retractions": 1, "tasks": 1, "shutdowns": 0, "approvals": 1},
}


@cache
def _plan_variant(variant: str) -> tuple[Model, list[State]]:
    import dataclasses

    model = Model(dataclasses.replace(load_config("pair_plan"), **PLAN_VARIANTS[variant]))
    states = list(_search(model).states)
    crashed = [s for state in states for _, s in model.successors(state) if isinstance(s, State) and s.crashed]
    return model, states + crashed


@pytest.mark.clause("PLN-6")
@pytest.mark.parametrize("variant", PLAN_VARIANTS)
def test_flat_plans_equal_the_models_on_the_whole_state_space(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans (stage b): every operation of ``plan_ops`` (retractions included), their crash
    points and their reconciliation, per transition; and the whole flat search's report. ``python
    -m model_tests.test_flat pair_plan`` proves the same on all 51,048 states ``pair_plan`` expands."""
    model, states = _plan_variant(variant)
    assert differences(model, states) == []
    names = {action.name for state in states for action, _ in model.successors(state)}
    assert {"plan.retract", "plan.start", "plan.rollback", "restart"} <= names
    mine = explore(model)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    assert _findings(mine) == _findings(explore(model))


@interpreted
def test_a_flat_model_without_plan_decisions_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FlatModel, "plan_decisions", lambda self, f, p, out: None)
    model, states = _plan_variant("one member")
    assert any("successors differ" in d for d in differences(model, states))


@interpreted
def test_a_flat_model_that_drops_an_operation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a flat model without ``approval.cancel`` differs somewhere on ``pair``."""
    original = FlatModel.approval_ops

    def without_cancel(self: FlatModel, f: Any, out: list[Any]) -> None:
        mine: list[Any] = []
        original(self, f, mine)
        out.extend(op for op in mine if op[0].name != "approval.cancel")

    monkeypatch.setattr(FlatModel, "approval_ops", without_cancel)
    model, states = _expanded("pair")
    assert any("successors differ" in d for d in differences(model, states))


@interpreted
def test_a_flat_step_that_logs_no_edge_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_flat, "_check", lambda machine, source, target: None)
    model, states = _expanded("pair")
    assert any("edges differ" in d for d in differences(model, states))


@pytest.mark.parametrize("name", QUICK)
def test_the_flat_canonical_key_groups_states_as_canonical_key(name: str) -> None:
    model, expanded = _expanded(name)
    states = list({s for state in expanded for _, s in model.successors(state) if isinstance(s, State)} | set(expanded))
    config = model.config
    canonical = Canonical(config.members, config.tasks)
    theirs: dict[Any, set[int]] = {}
    mine: dict[Any, set[int]] = {}
    for number, state in enumerate(s for s in states if not s.crashed):
        theirs.setdefault(canonical_key(model_erase(state)), set()).add(number)
        mine.setdefault(canonical.key(erase(encode(state))), set()).add(number)
    assert sorted(map(sorted, theirs.values())) == sorted(map(sorted, mine.values()))
    assert len(theirs) < len(states)  # symmetry and dead data do group these states


def test_a_canonical_key_missing_a_permutation_is_caught() -> None:
    model, expanded = _expanded("pair")
    states = {s for state in expanded for _, s in model.successors(state) if isinstance(s, State)}
    full = Canonical(2, 2)
    short = Canonical(2, 2)
    short.perms = short.perms[:-1]
    live = [encode(s) for s in states if not s.crashed]
    assert len({full.key(erase(f)) for f in live}) < len({short.key(erase(f)) for f in live})


@pytest.mark.parametrize("name", QUICK)
def test_the_flat_search_reports_what_the_models_search_reports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(load_config(name))
    assert flat_engine(model)
    mine = explore(model)  # the flat engine: supported and nothing asks for more
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    assert not flat_engine(model)
    theirs = explore(model)
    assert _findings(mine) == _findings(theirs)
    assert mine.states == manifest()[name]["states"]


def test_a_bounded_flat_search_stops_as_the_models_does(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(load_config("wide"))
    mine = explore_flat(model, max_states=700)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    theirs = explore(model, max_states=700)
    assert not mine.complete
    assert _findings(mine) == _findings(theirs)


def test_mutants_and_unsupported_configurations_stay_on_the_model() -> None:
    assert not flat_engine(Model(load_config("pair"), next(iter(MUTANTS))))
    assert not flat_engine(Model(load_config("shutdown")))
    assert not flat_engine(Model(load_config("pair"), reduce=False))
    with pytest.raises(ValueError, match="heartbeat lapses"):
        FlatModel(load_config("shutdown"))


# ---- time: the tick, the monitor pass, deadline regions ----------------------------------------

TIME_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # pinned configurations with time, with what the flat engine lacks (liveness, profile changes) off
    "plan": ("plan", {"liveness": False}),  # regions, crashes, a retraction: PLN-5's expiry, runs failed
    "monitor": ("monitor", {"liveness": False}),  # regions, a shutdown, jobs: SHD-6's expiry and timeout
    "tiny": ("tiny", {"liveness": False, "profile_changes": 0}),  # regions, an approval, crashes
    # a bounded clock where deadlines pass: the tick below the bound, the bound's goal, POR after the monitor
    "pair_ticks": ("pair", {"max_ticks": 1, "ttl_ticks": 0, "tasks": 1}),
    # a bounded clock of 2 ticks with a shutdown, jobs and crashes: SHD-6's expiry and timeout, force_terminate
    "shutdown_clock": ("shutdown", {"lapses": False, "liveness": False, "unit_ticks": 9}),
    "approval_drain": ("approval_drain", {"liveness": False}),  # by hand (8,489 states, ~15 s)
    # by hand: both protocols of one requester under a 2-tick clock, the records' POR at the bound (~85 s)
    "approval_plan_clock": ("approval_plan", {"liveness": False, "max_ticks": 2}),
}
QUICK_TIME = ["plan", "monitor", "tiny", "pair_ticks", "shutdown_clock"]


def time_config(name: str) -> Any:
    import dataclasses

    base, changes = TIME_VARIANTS[name]
    return dataclasses.replace(load_config(base), **changes)


@cache
def _time_expanded(name: str) -> tuple[Model, list[State]]:
    return _expanded_by(Model(time_config(name)))


def time_differences(model: Model, states: list[State]) -> list[str]:
    """``differences``, and under deadline regions the region key and ``tick_matters`` of every
    state: ``decode`` of the flat key is the model's key (``_time.relative``), compared by ``repr``."""
    from spec.model import _time

    found = differences(model, states)
    flat = FlatModel(model.config)
    if not model.config.regions:
        return found
    for state in states:
        f = encode(state)
        # the key is a pure function of the state: compared also with the clock moved on (offsets
        # below FLOOR, which no healthy run reaches: the monitor ends a live request at offset -1)
        for later in range(4):
            moved = replace(state, clock=state.clock + later)
            if repr(decode(_flat.relative(encode(moved)))) != repr(_time.relative(moved)):
                found.append(f"region keys differ at {moved}")
        if state.monitor_done and not state.crashed and flat.tick_matters(f) != _time.tick_matters(model, state):
            found.append(f"tick_matters differs at {state}")
    return found


@pytest.mark.clause("SHD-6", "PLN-5", "APR-4")
@pytest.mark.parametrize("name", QUICK_TIME)
def test_flat_time_equals_the_models_on_the_whole_state_space(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tick, the monitor pass and (under deadline regions) the region key, per transition on
    the whole state space, and the whole flat search's report against the model's search."""
    model, states = _time_expanded(name)
    assert time_differences(model, states) == []
    names = {action.name for state in states for action, _ in model.successors(state)}
    assert {"tick", "monitor.pass"} <= names
    top = max(s.clock for s in states)
    assert top >= 2 if model.config.regions else top == model.config.max_ticks  # time runs; a bound is reached
    assert flat_engine(model)
    mine = explore(model)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    theirs = explore(model)
    assert _findings(mine) == _findings(theirs)
    base = TIME_VARIANTS[name][0]
    if (
        model.config.regions
        and manifest()[base]["states"] is not None
        and model.config.profile_changes == load_config(base).profile_changes
    ):
        assert mine.states == manifest()[base]["states"]  # liveness off changes no state


@cache
def _standard_walks() -> tuple[Model, list[State]]:
    from .test_flat_review import _walks

    model = Model(load_config("standard"))
    return model, _walks(model, walks=250, length=300, seed=18)


@pytest.mark.clause("SHD-6", "PLN-5", "REC-1")
def test_flat_successors_equal_the_models_on_walks_through_standard() -> None:
    """``standard`` itself (regions, both protocols, crashes, jobs, symmetry): seeded walks of 300
    moves that favour crash variants, compared per transition with the region key."""
    model, states = _standard_walks()
    assert len(states) > 3_000 and sum(s.crashed for s in states) > 500
    assert max(s.clock for s in states) >= 3
    assert any(sd.status == "timed_out" for s in states for sd in s.shutdowns)
    assert any(ap.status == "expired" for s in states for ap in s.approvals)
    assert any(p.status == "expired" for s in states for p in s.plans)
    assert time_differences(model, states) == []


@pytest.mark.clause("SHD-6", "PLN-5")
def test_a_bounded_flat_search_of_standard_reports_what_the_models_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    """``standard``'s first states (its region key, symmetry, memoised checks, crashes): the same
    states per depth, transitions, findings, witnesses and frontier as the model's search.
    ``python -m model_tests.test_flat standard:40000`` compares the first 40,000 (about a minute)."""
    model = Model(load_config("standard"))
    assert flat_engine(model)
    mine = explore(model, max_states=STANDARD_STATES)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    theirs = explore(model, max_states=STANDARD_STATES)
    assert not mine.complete and mine.states >= STANDARD_STATES and mine.depth >= 6
    assert _findings(mine) == _findings(theirs)


STANDARD_STATES = 4_000


def _with_tiny_caches(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Report, Report, int]:
    """The flat search with every cache bounded to 2 entries and trimmed every 3 states expanded
    (``FlatSearch.trim``), the model's search, and how many tables the trims emptied."""
    import spec._flat_explore as flat_explore

    monkeypatch.setattr(flat_explore, "MEMO_LIMIT", 2)
    monkeypatch.setattr(flat_explore, "TRIM_EVERY", 3)
    emptied = [0]
    trim = flat_explore.Checks.trim

    def counting(checks: flat_explore.Checks, limit: int) -> None:
        emptied[0] += sum(len(table) > limit for table in checks.tables())
        trim(checks, limit)

    monkeypatch.setattr(flat_explore.Checks, "trim", counting)
    model = Model(time_config(name) if name in TIME_VARIANTS else load_config(name))
    bound = STANDARD_STATES if name == "standard" else None
    assert flat_engine(model)
    mine = explore(model, max_states=bound)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    return mine, explore(model, max_states=bound), emptied[0]


@interpreted
@pytest.mark.clause("SHD-6", "PLN-5", "INV-3")
@pytest.mark.parametrize("name", ["pair", "monitor", "standard"])
def test_a_flat_search_with_tiny_caches_reports_what_the_models_reports(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flat search's memory: stored states kept as signatures of interned fields and rebuilt
    to be expanded or traced, check results kept only until a state is expanded, the classes
    keyed by packed signatures, every cache bounded by emptying it. With the caches emptied every
    few states, the same report as the model's search (traces rebuilt, crash prefixes too)."""
    mine, theirs, emptied = _with_tiny_caches(name, monkeypatch)
    assert emptied > 100
    assert _findings(mine) == _findings(theirs)
    if name == "monitor":  # every stored state rebuilt exactly (types too: 0 and False number alike)
        model = Model(time_config(name))
        rebuilt = list(map(repr, search_flat(model).model_states()))
        assert rebuilt == list(map(repr, _search(model).states))


@interpreted
def test_a_trim_that_empties_the_visited_set_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the index of the classes is no cache; a trim that empties it revisits states."""
    import spec._flat_explore as flat_explore

    trim = flat_explore.FlatSearch.trim

    def forgetful(search: flat_explore.FlatSearch) -> None:
        trim(search)
        search.index.clear()
        search.stored.clear()

    monkeypatch.setattr(flat_explore.FlatSearch, "trim", forgetful)
    mine, theirs, _ = _with_tiny_caches("monitor", monkeypatch)
    assert _findings(mine) != _findings(theirs)


@pytest.mark.parametrize("name", ["standard", "plan"])
def test_the_flat_region_key_groups_states_as_the_models(name: str) -> None:
    """Deadline regions, dead data, then symmetry: the flat key partitions states as the model's
    search keys them (``erase(s, regions)`` then ``canonical_key``), and regions do group states."""
    if name == "standard":
        model, states = _standard_walks()  # walks are not deduplicated by key: they do revisit classes
    else:  # the search stores one state per class: take their successors too
        model, expanded = _time_expanded(name)
        states = list({s for state in expanded for _, s in model.successors(state) if isinstance(s, State)})
    config = model.config
    canonical = Canonical(config.members, config.tasks)
    theirs: dict[Any, set[int]] = {}
    mine: dict[Any, set[int]] = {}
    live = [s for s in states if not s.crashed]
    for number, state in enumerate(live):
        model_key = model_erase(state, True)
        flat_key = erase(encode(state), True)
        theirs.setdefault(canonical_key(model_key) if config.symmetry else model_key, set()).add(number)
        mine.setdefault(canonical.key(flat_key) if config.symmetry else flat_key, set()).add(number)
    assert sorted(map(sorted, theirs.values())) == sorted(map(sorted, mine.values()))
    unkeyed = {canonical.key(erase(encode(s))) if config.symmetry else erase(encode(s)) for s in live}
    assert len(theirs) < len(unkeyed)


@pytest.mark.parametrize(("name", "limit"), [("monitor", 300), ("standard", 500)])
def test_the_flat_checks_find_what_the_predicates_find_with_time(name: str, limit: int) -> None:
    """The memoised checks on states with a clock and deadlines (their memo keys hold the clock
    where a check reads it) against the snapshot predicates."""
    model = Model(time_config(name) if name in TIME_VARIANTS else load_config(name))
    assert check_differences(model, limit) == []


@interpreted
def test_a_monitor_that_expires_at_the_deadline_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a monitor pass that expires a requested approval at its deadline
    (``>=`` for ``>``, APR-4) differs somewhere on ``tiny``."""
    original = _flat.monitor_pass

    def early(f: Any) -> Any:
        for a, ap in enumerate(f[_flat.APPROVALS]):
            if ap[_flat.A_STATUS] == "requested" and f[_flat.CLOCK] == ap[_flat.A_DEADLINE]:
                f = _flat._approval(f, a, "expired", {_flat.A_REASON: "expired"})
        return original(f)

    monkeypatch.setattr(_flat, "monitor_pass", early)
    model, states = _time_expanded("tiny")
    assert any("successors differ" in d for d in time_differences(model, states))


@interpreted
def test_a_region_key_without_the_floor_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: offsets not cut at FLOOR give keys the model does not give."""
    monkeypatch.setattr(_flat, "_offset", lambda deadline, clock: deadline - clock + 3)
    model, states = _time_expanded("monitor")
    assert any("region keys differ" in d for d in time_differences(model, states))


@interpreted
def test_a_region_key_that_forgets_pending_requests_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a final record's deadline erased although its request message is
    still pending (the monitor expires that message by it, MSG-5) merges states the model keeps
    apart: the region key differs, and the flat search finds fewer states."""
    original = _flat._kept
    monkeypatch.setattr(_flat, "_kept", lambda kind, status, slot, pending: original(kind, status, slot, set()))
    model, states = _time_expanded("tiny")
    assert any("region keys differ" in d for d in time_differences(model, states))
    assert explore_flat(model).states < len([s for s in states if not s.crashed])


if __name__ == "__main__":  # the whole-space proof on larger configurations: python -m model_tests.test_flat NAME
    for config_name in sys.argv[1:] or IN_SCOPE:
        if config_name.startswith("standard:"):  # the first N states of standard's search, both engines
            limit = int(config_name.partition(":")[2])
            standard = Model(load_config("standard"))
            flat_report = explore_flat(standard, max_states=limit)
            os.environ["TEAMPROTO_ENGINE"] = "model"
            same = _findings(flat_report) == _findings(explore(standard, max_states=limit))
            del os.environ["TEAMPROTO_ENGINE"]
            print(f"standard: first {flat_report.states:,} states, reports {'equal' if same else 'DIFFER'}")
            if not same:
                raise SystemExit(1)
            continue
        timed = config_name.startswith("time:")  # a variant of TIME_VARIANTS, e.g. time:approval_drain
        checked_model, checked = _time_expanded(config_name[5:]) if timed else _expanded(config_name)
        problems = time_differences(checked_model, checked)
        print(f"{config_name}: {len(checked):,} states expanded, {len(problems)} difference(s)")
        for problem in problems[:5]:
            print("  ", problem)
        if problems:
            raise SystemExit(1)


def check_differences(model: Model, limit: int) -> list[str]:
    """Where the flat engine's memoised checks (:class:`spec._flat_explore.Checks`, with a state's
    results carried over from its parent) differ from the snapshot predicates run plainly, on every
    state and transition of the first ``limit`` states of the model's search."""
    from spec import invariants
    from spec._flat_explore import Checks, _View
    from spec.explore import world_problems
    from spec.model._snapshot import snapshot

    checks = Checks(model.config)
    found: list[str] = []

    def named(problems: Any) -> list[tuple[str, str]]:
        return sorted((inv.name, message) for inv, message in problems)

    def plain(state: State, reconciled: bool = True) -> list[tuple[str, str]]:
        """The snapshot predicates, and the world's check on the state (spec.invariants.WORLD)."""
        problems = invariants.check_state(snapshot(state, model.config), reconciled=reconciled)
        return named([*problems, *((invariants.WORLD, message) for message in world_problems(state))])

    for state in _search(model, max_states=limit).states:
        before = _View(encode(state), checks)
        got = named(checks.check_state(before, True))
        if got != plain(state):
            found.append(f"state checks differ at {state}")
        for action, after in model.successors(state):
            if not isinstance(after, State):
                continue
            view = _View(encode(after), checks)
            want = named(invariants.check_step(snapshot(state, model.config), snapshot(after, model.config)))
            if named(checks.check_step(before, view)) != want:
                found.append(f"step checks differ for {action} from {state}")
            reconciled = not after.crashed
            if named(checks.check_state(view, reconciled, before)) != plain(after, reconciled):
                found.append(f"state checks differ after {action} from {state}")
    return found


CHECKED_MUTANTS = [name for name, m in MUTANTS.items() if m.config in ("tiny", "pair", "fencing")]


@pytest.mark.parametrize("mutant", CHECKED_MUTANTS)
def test_the_flat_checks_find_what_the_predicates_find(mutant: str) -> None:
    """The memoised checks against the snapshot predicates (the contract) on states that break
    them: the first states of each model mutant's search (its violations among them)."""
    model = Model(load_config(MUTANTS[mutant].config), mutant)
    assert check_differences(model, 150) == []


@interpreted
def test_checks_that_keep_a_parents_result_too_long_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: units reused although their fields changed miss violations."""
    from spec._flat_explore import Checks

    original = Checks._state_units

    def stale(self: Checks) -> None:
        original(self)
        self.units = [(inv, kind, get, frozenset(), table, name) for inv, kind, get, _, table, name in self.units]

    monkeypatch.setattr(Checks, "_state_units", stale)
    model = Model(load_config("tiny"), "consume_without_digest_check")
    assert any("state checks differ" in d for d in check_differences(model, 150))


def _stale_incarnation_verdicts(model: Model, states: list[State]) -> tuple[int, int, list[str]]:
    """INV-11 on every transition from ``states``: (steps its guard suspects, steps it finds
    something in, the steps where it finds something its guard does not suspect)."""
    from spec import invariants
    from spec.model._snapshot import snapshot

    snaps: dict[State, Any] = {}

    def snap(state: State) -> Any:
        found = snaps.get(state)
        if found is None:
            found = snaps[state] = snapshot(state, model.config)
        return found

    suspected = found = 0
    missed: list[str] = []
    for state in states:
        for action, after in model.successors(state):
            if not isinstance(after, State):
                continue
            before_snap, after_snap = snap(state), snap(after)
            guard = invariants.stale_incarnation_suspected(before_snap, after_snap)
            problems = invariants.stale_incarnation_changes_nothing(before_snap, after_snap)
            suspected += guard
            found += bool(problems)
            if problems and not guard:
                missed.append(f"{action} from {state}: {problems}")
    return suspected, found, missed


@pytest.mark.clause("INV-11")
@pytest.mark.parametrize("name", [*QUICK, "fencing", "approval_fencing"])
def test_stale_incarnation_guard_suspects_every_step_the_whole_check_faults(name: str) -> None:
    """INV-11 memoised on its guard (members, messages, approvals) is the whole-snapshot check:
    on every transition of the whole state space, the check finds nothing where the guard is
    false, so the flat engine, which runs the check only where its memoised guard holds, gives
    the same verdict."""
    model, states = _expanded(name)
    suspected, found, missed = _stale_incarnation_verdicts(model, states)
    assert missed == []
    assert found == 0
    if name == "fencing":
        assert suspected > 0  # stale messages are delivered (and change nothing)


@pytest.mark.clause("INV-11")
def test_stale_incarnation_guard_suspects_the_mutants_steps() -> None:
    """On the first states of the INV-11 mutant's search the check faults steps, each suspected;
    and the flat checks (guard memoised) report them as the predicate does."""
    model = Model(load_config(MUTANTS["stale_incarnation_accepted"].config), "stale_incarnation_accepted")
    states = list(_search(model, max_states=400).states)
    suspected, found, missed = _stale_incarnation_verdicts(model, states)
    assert suspected >= found > 0 and missed == []
    assert check_differences(model, 400) == []


@interpreted
def test_a_guard_that_suspects_nothing_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: INV-11 behind a guard that never holds misses the mutant's steps."""
    import dataclasses

    from spec import invariants

    blind = tuple(
        dataclasses.replace(inv, suspect=lambda before, after: False)
        if inv.name == "stale_incarnation_changes_nothing"
        else inv
        for inv in invariants.STEP_INVARIANTS
    )
    monkeypatch.setattr(invariants, "STEP_INVARIANTS", blind)
    model = Model(load_config(MUTANTS["stale_incarnation_accepted"].config), "stale_incarnation_accepted")
    assert any("step checks differ" in d for d in check_differences(model, 400))


def _check_json(capsys: pytest.CaptureFixture[str], config: str) -> dict[str, Any]:
    import json

    from teamproto._cli import main

    status = main(["check", "--config", config, "--json", "--jobs", "1"])
    out, _ = capsys.readouterr()
    document = json.loads(out)
    assert status == 0 and document["ok"]
    for timed in ("seconds", "peak_memory_mib"):
        document.pop(timed)
    for run in document["runs"]:
        run.pop("seconds"), run.pop("states_per_second")
    return document


@pytest.mark.clause("INV-3")
@pytest.mark.parametrize("name", QUICK)
def test_teamproto_check_reports_on_plain_tuples_what_it_reports_on_the_model(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``teamproto check --config NAME --json`` on the flat engine (the default where it supports
    the configuration) prints every field but the timings as with ``TEAMPROTO_ENGINE=model``:
    states, transitions, depths, states by depth, deadlocks, checks, violations, edges, crash
    points, unreached bounds, drift and the verdict."""
    from spec import _flat_explore

    ran: list[str] = []

    def counted(model: Model, **how: Any) -> Any:  # looked up when called, compiled or not
        ran.append(model.config.name)
        return search_flat(model, **how)

    with monkeypatch.context() as patched:
        patched.setattr(_flat_explore, "search_flat", counted)
        mine = _check_json(capsys, name)
    assert ran == [name], "teamproto check did not run the flat engine where it supports the run"
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    theirs = _check_json(capsys, name)
    assert mine == theirs
    assert mine["runs"][0]["states"] == manifest()[name]["states"]


def test_teamproto_check_on_plain_tuples_reports_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flat engine calls ``progress`` as the model's search does: ``teamproto check`` prints its lines."""
    from spec import check

    lines: list[str] = []
    monkeypatch.setattr(check, "PROGRESS_SECONDS", 0.0)
    report, _ = check.run_config(load_config("pair"), None, say=lines.append)
    assert report.complete and report.unreached_bounds == []
    assert lines and all("pair:" in line and "states/s" in line for line in lines)


@pytest.mark.clause("SHD-3", "SHD-7", "MSG-6")
def test_the_lead_ladder_after_a_release_cut_short_ends_the_request_naming_the_task() -> None:
    """From before the Lead's last rung: m0 still drains, naming t0, which its own release put back
    (cut short after the task write), its drain timed out. The force-termination, then the
    inspection, in the model and in the flat engine alike: the request completes naming t0. An
    outside review's plant (the force-termination clearing the member's task, in both engines)
    showed only as drift: the inspection then had nothing to note."""
    from dataclasses import replace

    model, state = _unhealthy_naming(True, False)
    draining = replace(state.members[0], status="draining")
    state = replace(state, members=(draining, *state.members[1:]))
    assert differences(model, [state]) == []
    forced = [s for a, s in model.successors(state) if a.name == "shutdown.force_terminate" and not a.crash_after]
    assert len(forced) == 1 and forced[0].members[0].status == "unhealthy"
    assert differences(model, forced) == []
    sent = forced[0]
    while not any(a.name == "member.inspect" for a, _ in model.successors(sent)):  # member_lost sent first
        sent = next(s for a, s in model.successors(sent) if a.name == "outbox.send" and not a.crash_after)
    inspected = [s for a, s in model.successors(sent) if a.name == "member.inspect" and not a.crash_after]
    assert [(s.shutdowns[0].status, s.shutdowns[0].released) for s in inspected] == [("completed", 0)]


_NAMING = {  # case: (m0's Member.released, t0 claimed by m1 meanwhile), whether m0 released t0
    "its-own-release": ((True, False), True),
    "its-own-release-then-claimed-by-another": ((True, True), True),
    "put-back-by-another": ((False, False), False),
    "held-by-another": ((False, True), False),
}


def _unhealthy_naming(released: bool, claimed_since: bool) -> tuple[Model, State]:
    """A state no search of the model reaches (its one harness reconciles at once after a crash;
    the reference reaches it with two or three processes, ``release||force_inspect``): m0
    force-terminated while still naming t0, which its own release put back to ``pending``
    (``released``) or someone else did, and which m1 may have claimed since (``claimed_since``);
    m0's drain of slot 0 timed out."""
    from dataclasses import replace

    from spec.model._state import NONE

    model = Model(load_config("pair_crashes"))
    s = model.initial()
    member = replace(s.members[0], status="unhealthy", accepting=False, shutdown=0, task=0, released=released)
    task = replace(s.tasks[0], owner_incarnation=1, claims=1, checkpoint=True)
    members = (member, *s.members[1:])
    if claimed_since:
        task = replace(task, status="claimed", owner=1, owner_incarnation=1, claims=2)
        members = (member, replace(s.members[1], task=0))
    sd = replace(s.shutdowns[0], status="timed_out", target=0, target_incarnation=1, reason="timed_out")
    assert NONE not in (member.shutdown, member.task)
    return model, replace(s, members=members, tasks=(task, *s.tasks[1:]), shutdowns=(sd,))


@pytest.mark.clause("SHD-3", "SHD-7", "REC-2")
@pytest.mark.parametrize("case", list(_NAMING))
def test_the_inspection_and_reconciliation_note_only_the_members_own_release(case: str) -> None:
    """``member.inspect/record`` and reconciliation's note, on a hand-built state, in the model and
    in the flat engine alike: the request takes t0 as released exactly when m0's own release put
    it back (``Member.released``), whatever moved t0 since (the three-process case: m1 claimed it
    before the Lead's inspection); the inspection then completes the request so."""
    (released, claimed_since), noted = _NAMING[case]
    model, state = _unhealthy_naming(released, claimed_since)
    assert differences(model, [state]) == []
    inspected = [s for a, s in model.successors(state) if a.name == "member.inspect" and not a.crash_after]
    assert len(inspected) == 1
    after = inspected[0]
    assert (after.shutdowns[0].status, after.shutdowns[0].released) == ("completed", 0 if noted else -1)
    assert not after.members[0].released  # the inspection's member write forgets it
    from spec.model._reconcile import reconcile

    reconciled = reconcile(model, state)
    assert (reconciled.shutdowns[0].released, reconciled.members[0].task) == (0 if noted else -1, -1)
