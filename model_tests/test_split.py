"""The premises of :mod:`spec.split`, transition by transition, and its verdict against the whole.

For every state of a configuration with both an approval and a plan (the whole, with
``crash_between``, every reduction off) and every move from it, projected on each part
(:func:`spec.split.project`): the move is a move of the part, or leaves the part as it was
(premises 1-3); every move of the part from the projection is the projection of a move of the
whole (the converse); the state's problems are its projections' problems together, and a move's
problems its projected moves' (premise 4), its illegal moves (INV-3) the parts', and after a restart
reconciling once more (INV-7) does to each part what it does to the whole. Then the
verdict: the parts report the violations the whole reports, healthy and with every model mutant
(on ``approval_plan``; the premises are checked on the healthy model).

The breadth-first prefix of a larger whole is shallow: what only a deep state shows (a run overdue
while an approval is approved: found by the outside review, a monitor that spared such a run broke
premise 1 only at depth 11 of ``approval_plan`` with a 2-tick clock, past a 1,500-state prefix) is
not in it, and random walks or a random beam of 100 states a depth did not reach it either
(measured). So a whole whose search is cheap but whose checks are dear is searched to the end and
checked on one state of each *shape* (:func:`_shape`: the records' statuses, passed deadlines and
requesters): 1,439 of ``approval_plan+clock``'s 201,553 states, the planted monitor caught; 656
of ``approval_plan+2members``' 270,574, where an invariant relating one member's consumed plan to
another's consumed approval (outside review b24, its reads declared) breaks premise 4 — missed by
the first 2,500 states.

By hand, on more states: ``python -m model_tests.test_split NAME [LIMIT]`` checks the premises on
the first LIMIT states (default: all) of ``WHOLES[NAME]``; ``shapes`` for LIMIT, on one of each shape.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from spec import invariants
from spec._tables import IllegalTransition
from spec.explore import explore
from spec.model import MUTANTS, Model, load_config
from spec.model._config import BadConfig, Config, parse_config
from spec.model._model import HARNESS_CRASH
from spec.model._ops import monitor_is_idle
from spec.model._reconcile import reconcile
from spec.model._snapshot import snapshot
from spec.model._state import State
from spec.model._time import relative
from spec.split import PARTS, key, parts, project


def _whole(name: str, **changes: Any) -> Config:
    return dataclasses.replace(load_config(name), liveness=False, split=True, **changes)


def _part(whole: Config, part: str) -> Config:
    return parts(whole)[PARTS.index(part)]


def _states(model: Model, limit: int | None) -> Iterator[State]:
    """The whole's states breadth-first (under deadline regions one per region key), crashed ones too."""
    regions = model.config.regions
    start = model.initial()
    seen = {relative(start) if regions else start}
    queue = deque([start])
    taken = 0
    while queue and (limit is None or taken < limit):
        state = queue.popleft()
        taken += 1
        yield state
        for _, after in model.successors(state):
            if isinstance(after, State):
                k = relative(after) if regions else after
                if k not in seen:
                    seen.add(k)
                    queue.append(after)


def _shape(s: State) -> tuple[Any, ...]:
    """What a state is, coarsely: each member's, approval's, execution's, plan's, run's and
    shutdown's status, whether its deadline has passed and whose it is; the monitor's and the
    crash's flags."""
    return (
        tuple(
            tuple(
                (r.status, getattr(r, "deadline", s.clock) < s.clock, getattr(r, "requester", -1))
                for r in getattr(s, name)
            )
            for name in ("members", "approvals", "executions", "plans", "runs", "shutdowns")
        ),
        s.monitor_done,
        s.crashed,
    )


def _one_per_shape(model: Model) -> Iterator[State]:
    """Every state of the whole searched (cheap), but only the first of each :func:`_shape` given
    to the premises (dear): the deep combinations a prefix never reaches — an approval approved
    while a run is overdue, a restart after a deadline — each once."""
    shapes: set[tuple[Any, ...]] = set()
    for state in _states(model, None):
        shape = _shape(state)
        if shape not in shapes:
            shapes.add(shape)
            yield state


def _problems(found: list[tuple[invariants.Invariant, str]]) -> set[tuple[str, str]]:
    return {(inv.name, message) for inv, message in found}


class _Part:
    def __init__(self, whole: Config, part: str, mutant: str | None) -> None:
        self.part, self.config = part, _part(whole, part)
        self.model = Model(self.config, mutant, reduce=False)

    def key(self, s: State) -> State:
        return key(s, self.config.regions, not s.crashed and monitor_is_idle(self.model, s))

    def snap(self, s: State) -> dict[str, Any]:
        return snapshot(s, self.config)


def _premises(whole: Config, mutant: str | None = None, limit: int | None = None, shapes: bool = False) -> int:
    """Check premises 1-4 on every state of ``whole`` (or its first ``limit``; with ``shapes``, on
    one state of each shape, :func:`_one_per_shape`); returns how many states were checked."""
    model = Model(dataclasses.replace(whole, split=False, crash_between=True), mutant, reduce=False)
    views = [_Part(whole, part, mutant) for part in PARTS]
    count = 0
    for s in _one_per_shape(model) if shapes else _states(model, limit):
        count += 1
        moves = list(model.successors(s))
        snap = snapshot(s, model.config)
        mine = _problems(invariants.check_state(snap, reconciled=not s.crashed))
        theirs: set[tuple[str, str]] = set()
        for view in views:
            x = project(s, view.part)
            theirs |= _problems(invariants.check_state(view.snap(x), reconciled=not s.crashed))
            _moves_match(s, x, moves, view)
        assert mine == theirs, (s, mine ^ theirs)
        illegal = {a for a, after in moves if isinstance(after, IllegalTransition)}
        owned = {
            a for v in views for a, y in v.model.successors(project(s, v.part)) if isinstance(y, IllegalTransition)
        }
        assert illegal == owned, (s, illegal ^ owned)  # INV-3's findings: the whole's are the parts'
        for action, after in moves:
            if isinstance(after, State):
                _step_problems_match(s, after, snap, model.config, views, action)
                if action.name == "restart":
                    _reconciled_alike(model, after, views)
    return count


def _moves_match(s: State, x: State, moves: list[Any], view: _Part) -> None:
    own = [(a, y) for a, y in view.model.successors(x)]
    reachable = {view.key(y) for _, y in own if isinstance(y, State)} | {view.key(x)}
    projected = {view.key(project(after, view.part)) for _, after in moves if isinstance(after, State)}
    for action, after in moves:
        if isinstance(after, State):
            assert view.key(project(after, view.part)) in reachable, (view.part, s, action)
    for action, y in own:  # the converse: a move of the part is a move of the whole
        if isinstance(y, State):
            assert view.key(y) in projected, (view.part, s, action)


def _step_problems_match(
    s: State, after: State, snap: dict[str, Any], config: Config, views: list[_Part], action: Any
) -> None:
    mine = _problems(invariants.check_step(snap, snapshot(after, config)))
    theirs: set[tuple[str, str]] = set()
    for view in views:
        x, y = project(s, view.part), project(after, view.part)
        theirs |= _problems(invariants.check_step(view.snap(x), view.snap(y)))
    assert mine == theirs, (action, mine ^ theirs)


def _reconciled_alike(model: Model, after: State, views: list[_Part]) -> None:
    """INV-7 (REC-1) part by part: reconciling the restarted whole again projects on each part as
    reconciling the part's restarted state again, and the whole's idempotence problems are the parts'."""
    again = reconcile(model, after)
    mine = set(invariants.reconcile_is_idempotent(snapshot(after, model.config), snapshot(again, model.config)))
    theirs: set[str] = set()
    for view in views:
        x = project(after, view.part)
        x_again = reconcile(view.model, x)
        assert project(again, view.part) == x_again, (view.part, after)
        theirs |= set(invariants.reconcile_is_idempotent(view.snap(x), view.snap(x_again)))
    assert bool(mine) == bool(theirs), (after, mine, theirs)  # the whole's message lists both parts' kinds


WHOLES: dict[str, tuple[str, dict[str, Any], int | str | None]] = {  # base, changes, states checked
    "approval_plan": ("approval_plan", {}, None),  # one member, crashes, the clock stopped
    "approval_plan+shutdown": ("approval_plan", {"shutdowns": 1}, 1500),  # XPR-2: a drain cancels both
    "approval_plan+regions": ("approval_plan", {"max_ticks": None}, 1500),  # deadline regions, the monitor
    "approval_plan+clock": ("approval_plan", {"max_ticks": 2}, "shapes"),  # a bounded clock whose deadlines pass
    "approval_plan+2members": (
        "approval_plan",
        {"members": 2, "tasks": 2},
        "shapes",
    ),  # one's plan, the other's approval
    "standard": ("standard", {}, 700),  # two members, jobs, a shutdown, regions: the split's own case
}


@pytest.mark.clause("XPR-2", "REC-2", "INV-12")
@pytest.mark.parametrize("name", list(WHOLES))
def test_every_move_of_the_whole_is_a_move_of_each_part_and_back(name: str) -> None:
    base, changes, limit = WHOLES[name]
    if limit == "shapes":
        assert _premises(_whole(base, **changes), shapes=True) > 500  # hundreds of shapes: searched to the end
    else:
        assert isinstance(limit, int | None)
        assert _premises(_whole(base, **changes), limit=limit) > min(limit or 500, 500)


MUTANT_WHOLES = ["approval_plan", "approval_plan+shutdown", "approval_plan+2members"]


def _violations(config: Config, mutant: str | None) -> set[str]:
    return set(explore(Model(config, mutant)).violations)


@pytest.mark.clause("XPR-2")
@pytest.mark.parametrize("mutant", [None, *MUTANTS])
def test_the_parts_report_what_the_whole_reports(mutant: str | None) -> None:
    """On ``approval_plan`` with every model mutant (healthy: also with a shutdown, and with two
    members) the parts together find the violations the whole with ``crash_between`` finds, no more
    and no fewer (a part's deadlock too: none here), the liveness check's included (with deadline
    regions, where some mutants are found by it alone: ``test_liveness_reduced.py``). The premises
    are checked on the healthy model."""
    for name in MUTANT_WHOLES[: 1 if mutant else 3]:
        base, changes, _ = WHOLES[name]
        whole = dataclasses.replace(_whole(base, **changes), liveness=True)
        full = _violations(dataclasses.replace(whole, split=False, crash_between=True), mutant)
        split = set().union(*(_violations(part, mutant) for part in parts(whole)))
        assert split == full, (name, mutant)


def test_split_configurations_are_refused_where_the_split_does_not_hold() -> None:
    document = {f.name: getattr(load_config("approval_plan"), f.name) for f in dataclasses.fields(Config)}
    del document["name"]
    with pytest.raises(BadConfig, match="set by a split configuration"):
        parse_config("x", {**document, "split": True, "part": "plans"})
    with pytest.raises(BadConfig, match="needs approvals and plans"):
        parse_config("x", {**document, "split": True, "liveness": False, "plans": 0})
    with pytest.raises(BadConfig, match="true or false"):
        parse_config("x", {**document, "crash_between": 1, "liveness": False})
    assert parse_config("x", {**document, "split": True, "liveness": False}).split
    assert parse_config("x", {**document, "split": True}).liveness  # the parts check it (spec/split.py)


def test_parts_are_named_and_shaped() -> None:
    whole = _whole("approval_plan")
    approvals, plans = parts(whole)
    assert (approvals.name, approvals.plans, approvals.approvals) == ("approval_plan/approvals", 0, 1)
    assert (plans.name, plans.plans, plans.approvals) == ("approval_plan/plans", 1, 0)
    assert approvals.crash_between and plans.crash_between and not approvals.split
    assert load_config("standard/plans") == parts(load_config("standard"))[1]


def test_a_harness_crash_is_a_crash_and_no_move_against_deadlock() -> None:
    """``crash_between``: a crash from any live state, restarted at once; it keeps no deadlock hidden."""
    config = dataclasses.replace(load_config("approval_plan"), liveness=False, crash_between=True)
    model = Model(config)
    moves = list(model.successors(model.initial()))
    assert (HARNESS_CRASH, dataclasses.replace(model.initial(), crashed=True)) in moves
    crashed = dataclasses.replace(model.initial(), crashed=True)
    assert all(a.name == "restart" for a, _ in model.successors(crashed))
    report = explore(model)
    assert "between operations" in report.crashed_at


CRASH_BETWEEN = {  # flat-engine configurations with crash_between: the parts' premises' shapes
    "approval_plan": {},
    "plan": {},  # time in deadline regions
}


@pytest.mark.clause("REC-2", "INV-3")
@pytest.mark.parametrize("name", list(CRASH_BETWEEN))
def test_the_flat_engine_crashes_between_operations_as_the_model(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain-tuple engine takes the harness crash where the model does (state by state), and
    its search reports what the model's reports."""
    from model_tests.test_flat import _expanded_by, _findings, differences
    from spec.explore import flat_engine

    base = "plan" if name == "plan" else "approval_plan"
    config = dataclasses.replace(load_config(base), liveness=False, crash_between=True, **CRASH_BETWEEN[name])
    model = Model(config)
    assert flat_engine(model)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    model_, states = _expanded_by(model)
    theirs = explore(model)
    assert not differences(model_, states[:3000])
    monkeypatch.delenv("TEAMPROTO_ENGINE")
    mine = explore(model)
    assert _findings(mine) == _findings(theirs)
    assert "between operations" in mine.crashed_at


@pytest.mark.clause("INV-12")
def test_a_deadlock_is_found_with_crashes_between_operations() -> None:
    """The harness crash is enabled in every live state; it must not hide a deadlock
    (``resumed_drain_keeps_requests`` deadlocks ``plan_drain``)."""
    config = dataclasses.replace(load_config("plan_drain"), liveness=False)
    without = explore(Model(config, "resumed_drain_keeps_requests"))
    with_ = explore(Model(dataclasses.replace(config, crash_between=True), "resumed_drain_keeps_requests"))
    assert without.deadlocks > 0 and with_.deadlocks == without.deadlocks
    assert "no_deadlock" in with_.violations


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from teamproto._cli import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--config", "standard/nothing"],
        ["check", "--config", "tiny/plans"],  # tiny is not split
        ["check", "--config", "standard", "--checkpoint", "x.ckpt"],  # two searches, one file
    ],
)
def test_bad_part_names_and_a_checkpoint_of_two_parts_are_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any, argv: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    status, out, err = _cli(capsys, *argv)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "standard/plans" in err or "known:" in err
    assert list(tmp_path.iterdir()) == []


def test_a_split_configuration_runs_as_its_two_parts(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _cli(capsys, "check", "--config", "standard", "--max-states", "300", "--json", "--jobs", "1")
    runs = json.loads(out)["runs"]
    assert [r["config"] for r in runs] == ["standard/approvals", "standard/plans"]
    assert all(r["states"] >= 300 and not r["complete"] for r in runs) and status == 1  # bounded: incomplete
    status, out, _ = _cli(capsys, "check", "--config", "standard/plans", "--max-states", "300", "--json")
    assert [r["config"] for r in json.loads(out)["runs"]] == ["standard/plans"]


if __name__ == "__main__":  # the premises by hand: python -m model_tests.test_split NAME [LIMIT]
    import sys

    base, changes, _ = WHOLES[sys.argv[1]]
    by_shape = sys.argv[2:3] == ["shapes"]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 and not by_shape else None
    count = _premises(_whole(base, **changes), limit=limit, shapes=by_shape)
    print(f"{sys.argv[1]}: the premises hold on {count:,} states")


@pytest.mark.clause("INV-12")
def test_a_deadlock_is_found_on_plain_tuples_with_crashes_between_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flat engine, which runs the healthy parts, counts no harness crash against a deadlock:
    with plans that can neither be submitted nor withdrawn, ``approval_plan`` deadlocks alike with
    and without ``crash_between`` (found by the outside review: every deadlock was hidden)."""
    from model_tests.test_flat import interpreted

    interpreted(_flat_deadlocks)(monkeypatch)


def _flat_deadlocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from spec.explore import flat_engine
    from spec.model._flat import FlatModel

    original = FlatModel.plan_ops

    def stuck(self: FlatModel, f: Any, out: list[Any]) -> None:
        mine: list[Any] = []
        original(self, f, mine)
        out.extend(op for op in mine if op[0].name not in ("plan.submit", "plan.withdraw"))

    monkeypatch.setattr(FlatModel, "plan_ops", stuck)
    found = []
    for between in (False, True):
        model = Model(dataclasses.replace(load_config("approval_plan"), liveness=False, crash_between=between))
        assert flat_engine(model)
        found.append(explore(model).deadlocks)
    assert found[0] > 0 and found[1] == found[0], found


def test_every_live_state_of_a_part_can_crash_between_operations() -> None:
    part = parts(_whole("approval_plan"))[1]
    model = Model(part, reduce=False)
    for s in _states(model, 400):
        moves = [a for a, _ in model.successors(s)]
        assert (HARNESS_CRASH in moves) is (not s.crashed), s
