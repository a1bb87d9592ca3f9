"""Random-walk simulation (``teamproto check --simulate``): the explorer's checks along deep walks.

Clause: INV-1 … INV-12, REC-1 (the same checks as the explorer, on configurations too large for
it: `standard`).
"""

from __future__ import annotations

import json

import pytest

from spec._tables import IllegalTransition
from spec.explore import Violation
from spec.model import MUTANTS, Model, load_config
from spec.model._model import Action
from spec.simulate import Plan, replay, script_of, simulate

NARROW = {
    "execute_plan_twice": "a second start between the first start and the run's first step, before the deadline",
    "resumed_drain_keeps_requests": "a crash right after begin_drain's member step, then the whole drain",
    "inspect_treats_draining_as_lost": "a crash right after force_terminate's task step, past the deadline",
    "suspended_task_stuck": "caught by the liveness check, which needs the whole graph: walks have none",
    "monitor_fails_run_at_deadline": "caught by the last-instant check, which needs the whole graph too",
    **{
        name: "caught by the boundary check, which needs a complete search: a walk cannot tell a boundary never "
        "reached from one it missed"
        for name in (
            "review_refused_at_deadline",
            "begin_drain_refused_at_deadline",
            "start_refused_at_deadline",
            "request_message_expires_late",
        )
    },
    "monitor_spares_unstarted_runs": "a run started, then left without its step through two ticks and their "
    "passes, while each walk step may take the run's step instead",
    "reconcile_ignores_incarnation": "a drain finished, a restart, a second request drained, a crash, a restart",
    "release_while_cancel_requested": "a job asked to cancel, then the release before it exits, before any crash",
    "draining_member_runs_steps": "a drain that begins after the plan started and before its step, within the ttl",
    "consume_execution_first": "a crash exactly between the consume's first two writes, then the same approved call "
    "again before the deadline",
    "draining_member_completes_run": "a drain that begins after the plan's last step and before its completion, "
    "within the ttl",
    "consume_ignores_incarnation": "an approval approved, its member drained, stopped and restarted, and the same "
    "task claimed again, all before the approval's deadline (11 steps)",
    "consume_ignores_profile_version": "the one profile change of tiny, its tool kept, between the approval and the "
    "consume, before the deadline",
    "recovery_forgets_unrun_call": "a crash exactly after the consume's first write (its approval consumed, no "
    "execution written yet), then the restart's reconciliation",
    "monitor_one_approval_a_pass": "two approvals requested and left alone past their deadlines, then a pass "
    "before any other step ends either (a walk's next step usually reviews, consumes or cancels one)",
}
"""Mutants that random walks of their configuration do not find within 3,000 walks (seed 0, default
crash rate): each needs a narrow interleaving. The exhaustive search finds them."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.clause(MUTANTS[name].breaks))
        for name in sorted(MUTANTS)
        if name not in NARROW
    ],
)
def test_simulation_catches_the_mutants_with_their_invariant(name: str) -> None:
    """Walks of each mutant's configuration trip the invariant named for it, and the trace is a
    real walk: each step is one of the model's moves from the state before it."""
    mutant = MUTANTS[name]
    model = Model(load_config(mutant.config), name)
    report = simulate(model, Plan(walks=3000), stop_on=mutant.caught_by)
    assert report.simulation and report.walks < 3000
    violation = next((v for v in report.violations.values() if mutant.caught_by in (v.clause, v.invariant)), None)
    assert violation is not None, f"{name} survived {report.walks} walks"
    assert not violation.shortest
    _assert_is_a_walk(model, violation.trace)
    _assert_is_one_minimal(model, violation)


def test_the_narrow_mutants_are_mutants() -> None:
    assert set(NARROW) < set(MUTANTS)


def _assert_is_a_walk(model: Model, trace: list[tuple[Action | None, object]]) -> None:
    first_action, state = trace[0]
    assert first_action is None and state == model.initial()
    for action, after in trace[1:]:
        assert action is not None
        moves = {(a, s) for a, s in model.successors(state) if not isinstance(s, IllegalTransition)}
        assert (action, after) in moves, action
        state = after


def test_a_simulation_is_repeatable_and_its_seed_matters() -> None:
    """The same seed walks the same walks; another seed walks others."""
    model = Model(load_config("tiny"))
    first, again = (simulate(model, Plan(walks=60, seed=7)) for _ in range(2))
    other = simulate(model, Plan(walks=60, seed=8))
    assert (first.states, first.transitions, first.edges_taken) == (again.states, again.transitions, again.edges_taken)
    assert (first.states, first.transitions) != (other.states, other.transitions)
    assert first.walks == 60 and first.seed == 7 and not first.violations


def test_simulation_walks_deep_into_standard() -> None:
    """`standard` cannot be explored to completion; walks reach its deepest states and hold there."""
    report = simulate(Model(load_config("standard")), Plan(walks=150))
    assert not report.violations, list(report.violations)
    assert report.walks == 150 and report.depth >= 25
    assert report.crashed_at and report.transitions >= 150 * 10


@pytest.mark.clause("XPR-2", "INV-12")
def test_walks_that_crash_often_find_the_deadlock_of_a_drain_resumed_without_cancelling() -> None:
    """A walk that ends where no move is left and a request is not final is a deadlock (INV-12).
    At one crash in two steps, walks find the one `resumed_drain_keeps_requests` leaves."""
    model = Model(load_config("plan_drain"), "resumed_drain_keeps_requests")
    report = simulate(model, Plan(walks=1000, crash_rate=0.5), stop_on="INV-12")
    assert "no_deadlock" in report.violations and report.deadlocks == 1
    _assert_is_a_walk(model, report.violations["no_deadlock"].trace)


def test_a_counterexample_is_shrunk_to_a_walk_where_every_step_matters() -> None:
    """The shrunk trace replays to the same violation, is shorter than the walk that found it,
    and no single dropped action (or crash run whole) gives a shorter one (1-minimal)."""
    model = Model(load_config("plan_drain"), "resumed_drain_keeps_requests")
    raw = simulate(model, Plan(walks=1000, crash_rate=0.5, shrink=False), stop_on="INV-12")
    walk = raw.violations["no_deadlock"]
    assert walk.walk_length == len(walk.trace)
    shrunk = simulate(model, Plan(walks=1000, crash_rate=0.5), stop_on="INV-12").violations["no_deadlock"]
    assert shrunk.walk_length == walk.walk_length > len(shrunk.trace)
    _assert_is_a_walk(model, shrunk.trace)
    _assert_is_one_minimal(model, shrunk)


def _assert_is_one_minimal(model: Model, shrunk: Violation) -> None:
    script = script_of(shrunk)
    again = replay(model, script, shrunk.invariant)
    assert again is not None and again.trace == shrunk.trace
    for index, action in enumerate(script):
        variants = [[*script[:index], *script[index + 1 :]]]
        if action.crash_after:
            variants.append([*script[:index], Action(action.name, action.args), *script[index + 1 :]])
        for variant in variants:
            found = replay(model, variant, shrunk.invariant)
            assert found is None or len(found.trace) >= len(shrunk.trace), (index, action)


def test_a_crash_is_taken_with_its_rate() -> None:
    """With crash rate 0 no walk crashes; with 1 every operation that can crash does."""
    model = Model(load_config("tiny"))
    assert not simulate(model, Plan(walks=40, crash_rate=0.0)).crashed_at
    assert simulate(model, Plan(walks=40, crash_rate=1.0)).crashed_at


def test_walks_crash_at_every_crash_point_the_search_crashes_at() -> None:
    """A crash is drawn among all of an operation's crash points, the last write's included: walks
    that crash at one operation in two reach every crash point the exhaustive search reaches on
    ``tiny`` (an outside review drew one short, so no walk crashed after an operation's last
    crash point)."""
    from spec.explore import explore

    model = Model(load_config("tiny"))
    full = explore(model).crashed_at
    assert len(full) >= 7 and simulate(model, Plan(walks=1000, crash_rate=0.5, seed=3)).crashed_at == full


def test_check_simulate_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from teamproto._cli import main

    assert main(["check", "--config", "tiny", "--simulate", "--walks", "30", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    run = document["runs"][0]
    assert run["mode"] == "simulation" and run["walks"] == 30 and run["seed"] == 0 and document["ok"]
    assert main(["check", "--config", "tiny", "--simulate", "--walks", "0"]) == 2
    assert main(["check", "--config", "tiny", "--simulate", "--crash-rate", "1.5"]) == 2
    assert main(["check", "--config", "tiny", "--simulate", "--max-states", "10"]) == 2
    assert main(["check", "--config", "tiny", "--simulate", "--mutant", "secret_not_redacted", "--json"]) == 0
