"""An outside review of the plain-tuple engine (issue 18 item 3): the blind spots of
``model_tests/test_flat.py``, closed.

``test_flat.py`` proves :mod:`spec.model._flat` equal to the model transition by transition on
``pair`` and ``wide`` only, and the flat search equal to the model's search on the healthy model
only. So everything that happens only with crashes (restart, reconciliation, crash variants, jobs:
``pair_crashes``), every configuration :func:`spec.model._flat.supports` accepts beyond the pinned
ones, and every path of :mod:`spec._flat_explore` that only a violation takes (memoised checks
carried over a crash, REC-1, violation traces) went unchecked in the default run. Here, within
seconds:

- randomized walks through ``pair_crashes`` that favour crash variants: on every state reached
  (crashed ones too) the flat successors equal the model's *strictly* (``repr``: same actions,
  crash variants and their order, same field values of the same types), the same edges are
  logged, and the flat canonical key (with dead data erased) groups the states as the model's;
- the same on variants of the supported configurations that no pinned one covers (two approval
  and two shutdown slots, jobs without crashes, no symmetry);
- the flat search loop run on *broken* models (model mutants and a reconciliation that is not
  idempotent, fed through an encode/decode adapter) reports what the model's search reports:
  violations with their traces, edges, crash points, deadlocks, witnesses.

Of 16 realistic bugs planted one at a time in the flat engine (a scratch clone), 15 can change a
result (the 16th, a memo plan keyed without the parent's reconciled flag, cannot: the crash flag
is among the changed fields); the default run caught 4 of them before this file and all 15 with
it. Only this file catches: an off-by-one in APR-8's look-up, crash variants out of order or
one missing, a crash action memoised without its step, a reconciliation branch dropped, an edge
not logged, ``1`` written for ``True``, symmetry and dead-data keys that differ only where jobs
run, the second approval slot taken first, and REC-1 never checked.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

import spec._flat_explore as flat_explore
from spec import explore as explore_module
from spec._flat_explore import Canonical, erase, explore_flat
from spec._tables import IllegalTransition
from spec.explore import _search
from spec.model import BadEngine, Model, _model, load_config
from spec.model import _reconcile as reconcile_module
from spec.model._config import Config
from spec.model._dead import erase as model_erase
from spec.model._flat import decode, encode, supports
from spec.model._state import State, put, replace
from spec.model._symmetry import canonical_key

from .test_flat import _findings, differences, interpreted


def _walks(model: Model, walks: int, length: int, seed: int) -> list[State]:
    """The distinct states of ``walks`` seeded random walks of ``length`` moves; a crash variant
    is taken about one move in three where there is one, so the walks restart and reconcile."""
    rng = random.Random(seed)
    seen: dict[State, None] = {}
    for _ in range(walks):
        state = model.initial()
        for _ in range(length):
            following = [s for _, s in model.successors(state) if isinstance(s, State)]
            if not following:
                break
            crashed = [s for s in following if s.crashed]
            state = rng.choice(crashed if crashed and rng.random() < 0.35 else following)
            seen[state] = None
    return list(seen)


def _strict(pairs: Iterator[tuple[Any, Any]]) -> list[str]:
    return [repr((a, str(s) if isinstance(s, IllegalTransition) else s)) for a, s in pairs]


def strict_differences(model: Model, states: list[State]) -> list[str]:
    """Where the flat successors differ from the model's, compared by ``repr`` (so ``1`` is not
    ``True``), with the edges each logs and the goal test (``test_flat.differences``)."""
    return differences(model, states)


def grouping_differences(config: Config, states: list[State]) -> list[str]:
    """Whether the flat key (dead data erased, then symmetry) groups ``states`` as the model's does."""
    canonical = Canonical(config.members, config.tasks)
    theirs: dict[Any, set[int]] = {}
    mine: dict[Any, set[int]] = {}
    for number, state in enumerate(s for s in states if not s.crashed):
        model_key = model_erase(state)
        theirs.setdefault(canonical_key(model_key) if config.symmetry else model_key, set()).add(number)
        flat_key = erase(encode(state))
        mine.setdefault(canonical.key(flat_key) if config.symmetry else flat_key, set()).add(number)
    if sorted(map(sorted, theirs.values())) != sorted(map(sorted, mine.values())):
        return [f"{len(theirs)} classes for the model, {len(mine)} for the flat key"]
    return []


@cache
def _crash_walks() -> tuple[Model, list[State]]:
    model = Model(load_config("pair_crashes"))
    return model, _walks(model, walks=400, length=60, seed=18)


def _reach_the_crash_paths(states: list[State]) -> None:
    """The sample is what it claims: crashed states, restarts after each write of a consume, jobs
    that ended, drains that waited on a job, and an execution looked up after a crash (APR-8)."""
    assert len(states) > 4_000
    assert sum(s.crashed for s in states) > 300
    assert any(s.crashed and s.executions[0].status == "started" and s.executions[0].world_calls for s in states)
    assert any(s.crashed and s.executions[0].status == "" and s.approvals[0].status == "consumed" for s in states)
    assert any(sd.waited for s in states for sd in s.shutdowns)
    assert any(j.status in ("succeeded", "failed", "cancelled") for s in states for j in s.jobs)


@pytest.mark.clause("REC-1", "INV-3")
def test_flat_successors_equal_the_models_strictly_on_crash_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Crash paths transition by transition. The comparison can fail: ``repr`` tells a flag
    written as ``1`` from ``True`` (which ``==`` cannot), and a model changed where only a crash
    leads (APR-8's look-up repeating the call, as the mutant ``recovery_repeats_call`` does) while
    :mod:`spec.model._flat` is left alone differs here, though ``test_flat.py`` passes (``pair`` and
    ``wide`` never crash) and ``explore()`` would run the old protocol on ``pair_crashes``
    (45,242 states, no violation, where the model's search finds INV-1 broken in 50,856)."""
    model, states = _crash_walks()
    _reach_the_crash_paths(states)
    assert strict_differences(model, states) == []
    state = next(s for s in states if not s.crashed)
    one = replace(state, tasks=put(state.tasks, 0, replace(state.tasks[0], checkpoint=1)))
    true = replace(state, tasks=put(state.tasks, 0, replace(state.tasks[0], checkpoint=True)))
    assert one == true and _strict(iter([(None, one)])) != _strict(iter([(None, true)]))
    monkeypatch.setattr(model, "mutant", "recovery_repeats_call")
    assert any("successors differ" in d for d in strict_differences(model, states))


def test_the_flat_key_groups_crash_walk_states_as_the_models_key() -> None:
    model, states = _crash_walks()
    following = {s for state in states for _, s in model.successors(state) if isinstance(s, State)}
    assert grouping_differences(model.config, list(following | set(states))) == []


VARIANTS = {  # supported, so the explorer runs them flat, but no pinned configuration is one of them
    "pair, 2 approvals and 2 shutdowns": dict(approvals=2, shutdowns=2),
    "pair with jobs, no crashes": dict(jobs=True),
    "pair_crashes without symmetry": dict(crashes=True, jobs=True, symmetry=False),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_flat_equals_the_model_on_supported_variants(variant: str) -> None:
    config = dataclasses.replace(load_config("pair"), name=variant, **VARIANTS[variant])
    assert supports(config)
    model = Model(config)
    states = _walks(model, walks=40, length=40, seed=7)
    assert strict_differences(model, states) == []
    assert grouping_differences(config, states) == []


# ---- the flat search loop on broken models -------------------------------------------------------


def _adapter(model: Model) -> type:
    """A :class:`FlatModel` stand-in that runs ``model`` (a mutant too) through encode/decode: the
    flat search loop (checks, memo, REC-1, traces) then meets violations, which the healthy
    model never gives it."""

    class Adapter:
        def __init__(self, config: Config) -> None:
            self.config = config

        def initial(self) -> tuple[Any, ...]:
            return encode(model.initial())

        def successors(self, f: tuple[Any, ...]) -> Iterator[tuple[Any, Any]]:
            for action, state in model.successors(decode(f)):
                yield action, state if isinstance(state, IllegalTransition) else encode(state)

        def reconcile(self, f: tuple[Any, ...]) -> tuple[Any, ...]:
            return encode(reconcile_module.reconcile(model, decode(f)))

        def is_goal(self, f: tuple[Any, ...]) -> bool:
            return model.is_goal(decode(f))

    return Adapter


def _approving_reconcile(model: Model, s: State) -> State:
    """A reconciliation that is not idempotent (REC-1 broken): after the real pass it approves a
    requested approval without posting the decision, which the next pass then posts."""
    s = _REAL_RECONCILE(model, s)
    for a, approval in enumerate(s.approvals):
        if approval.status == "requested":
            s = replace(s, approvals=put(s.approvals, a, _model.move("operation_approval", approval, "approved")))
    return s


_REAL_RECONCILE = reconcile_module.reconcile

BROKEN = [  # (configuration, model mutant or a broken reconciliation, states explored)
    ("pair", "consume_by_other_member", None),
    ("pair_crashes", "recovery_repeats_call", 2_500),
    ("pair_crashes", "recovery_assumes_call_failed", 2_500),  # APR-8: only the world check sees it
    ("pair_crashes", "reconcile_skips_redelivery", 2_500),
    ("pair_crashes", "decision_before_record", 2_500),
    ("pair_crashes", "reconcile not idempotent", 1_500),
]


@pytest.mark.clause("REC-1", "INV-7")
@pytest.mark.parametrize(("name", "broken", "limit"), BROKEN)
@interpreted  # it patches the flat loop's model and the reconciliation: compiled code would call past them
def test_the_flat_loop_reports_what_the_models_loop_reports_on_broken_models(
    name: str, broken: str, limit: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if broken == "reconcile not idempotent":
        monkeypatch.setattr(reconcile_module, "reconcile", _approving_reconcile)
        monkeypatch.setattr(explore_module, "reconcile", _approving_reconcile)
        model = Model(load_config(name))
    else:
        model = Model(load_config(name), broken)
    theirs = _search(model, max_states=limit).report
    assert theirs.violations, "the broken model must break something here"
    monkeypatch.setattr(flat_explore, "FlatModel", _adapter(model))
    mine = explore_flat(model, max_states=limit)
    assert _findings(mine) == _findings(theirs)


@pytest.mark.parametrize("value", ["Model", "modle", "MODEL", "fast"])
def test_a_misspelt_engine_name_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Review finding: ``TEAMPROTO_ENGINE=Model`` (or ``modle``) ran the flat engine without a
    word; only the exact ``model`` selected the model's search. Now any value but ``flat`` and
    ``model`` is a typed error naming the accepted values, before any search starts."""
    monkeypatch.setenv("TEAMPROTO_ENGINE", value)
    with pytest.raises(BadEngine, match=r"TEAMPROTO_ENGINE.*flat, model"):
        explore_module.flat_engine(Model(load_config("pair")))


@pytest.mark.parametrize("value", ["", "flat", "model"])
def test_the_engine_names_are_accepted(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TEAMPROTO_ENGINE", value)
    assert explore_module.flat_engine(Model(load_config("pair"))) is (value != "model")


def test_teamproto_check_refuses_a_misspelt_engine_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """From the outside: one line on stderr, exit 2, JSON on stdout with ``--json``; no search ran."""
    from teamproto._cli import main

    monkeypatch.setenv("TEAMPROTO_ENGINE", "modle")
    assert main(["check", "--config", "tiny", "--json", "--jobs", "1"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["type"] == "BadEngine"
    assert err.count("\n") == 1 and "TEAMPROTO_ENGINE='modle'" in err
