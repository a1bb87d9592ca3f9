"""Explorer traces replay against the reference: the same actions give the same snapshots.

Clause: REC-2, APR-8, MSG-6 (the model and the reference agree, crashes and restarts included).
"""

from __future__ import annotations

import random

import pytest

from model_tests.replay import replay
from spec.explore import Violation, _bfs, _Search, trace_json
from spec.model import OPERATIONS, Model, load_config


def tiny_traces(count: int) -> list[dict[str, object]]:
    """Shortest traces to ``count`` states of the tiny configuration, chosen with a fixed seed."""
    config = load_config("tiny")
    search = _Search(Model(config), None, None, None)
    _bfs(search)
    chosen = random.Random(7).sample(range(1, len(search.states)), count)
    return [trace_json(Violation("-", "-", "-", search.trace(number)), config) for number in chosen]


@pytest.mark.clause("REC-2", "APR-8", "MSG-6")
def test_explorer_traces_replay_on_the_reference() -> None:
    traces = tiny_traces(150)
    assert any(step["action"] and step["action"]["crash_after"] for trace in traces for step in trace["steps"])
    for trace in traces:
        replay(trace, ttl_seconds=load_config("tiny").ttl_ticks)


@pytest.mark.clause("REC-2", "APR-8", "MSG-6")
def test_random_walks_replay_on_the_reference() -> None:
    """Walks are longer than shortest traces and crash anywhere along them (here one step in
    four): the reference agrees with the model on every step of 150 walks of `tiny`."""
    from spec.simulate import Plan, walks

    config = load_config("tiny")
    traces = [
        trace_json(Violation("-", "-", "-", list(walk)), config)
        for walk in walks(Model(config), Plan(walks=150, seed=3, crash_rate=0.25))
    ]
    assert max(len(trace["steps"]) for trace in traces) > 12
    assert (
        sum(1 for trace in traces for step in trace["steps"] if step["action"] and step["action"]["crash_after"]) > 50
    )
    for trace in traces:
        replay(trace, ttl_seconds=config.ttl_ticks)


def test_replay_reports_the_first_step_that_differs() -> None:
    trace = tiny_traces(1)[0]
    for step in trace["steps"]:
        if step["action"] and step["action"]["action"] == "task.claim":
            step["snapshot"]["task"][0]["status"] = "pending"
            break
    with pytest.raises(AssertionError, match="step 1"):
        replay(trace, ttl_seconds=1)


TEAM_CONFIGS = ("shutdown", "fencing", "monitor", "pair", "approval_drain")


@pytest.mark.clause(
    "MEM-1", "SHD-1", "SHD-2", "SHD-3", "SHD-5", "SHD-6", "SHD-7", "SHD-10", "XPR-1", "XPR-2", "REC-2", "REC-3"
)
@pytest.mark.parametrize("name", TEAM_CONFIGS)
def test_team_walks_replay_on_the_reference(name: str) -> None:
    """Random walks of the configurations with shutdowns, jobs, lapses and restarts replay on the
    reference: the same actions (crashes and restarts included) give the same snapshots."""
    from spec.simulate import Plan, walks

    config = load_config(name)
    traces = [
        trace_json(Violation("-", "-", "-", list(walk)), config)
        for walk in walks(Model(config), Plan(walks=60, seed=11, crash_rate=0.2 if config.crashes else 0.0))
    ]
    actions = {step["action"]["action"] for trace in traces for step in trace["steps"] if step["action"]}
    assert {"shutdown.request", "shutdown.begin_drain"} <= actions
    for trace in traces:
        replay(trace, ttl_seconds=config.ttl_ticks, unit_seconds=config.unit_ticks)


PLAN_CONFIGS = {"plan": 300, "pair_plan": 60, "approval_plan": 60, "plan_drain": 60, "plan_lost": 60}
"""Each pinned configuration with plans → its number of walks (``plan`` has the executions' steps)."""
PLAN_OPERATIONS = {name for name in OPERATIONS if name.startswith("plan.")}
"""Every plan operation of the model (``spec.model.OPERATIONS``): the replays must drive each."""


@pytest.mark.clause(
    "PLN-1", "PLN-2", "PLN-3", "PLN-5", "PLN-6", "PLN-7", "PLN-9", "PLN-10", "PLN-11", "XPR-1", "XPR-2", "REC-2"
)
@pytest.mark.parametrize("name", PLAN_CONFIGS)
def test_plan_walks_replay_on_the_reference(name: str) -> None:
    """Random walks of the pinned configurations with plans replay on the reference: drafts,
    submissions, decisions, retractions, deliveries, withdrawals, starts, steps, completions,
    failures and rollbacks, crashes and restarts included, give the model's snapshots."""
    from spec.simulate import Plan, walks

    config = load_config(name)
    traces = [
        trace_json(Violation("-", "-", "-", list(walk)), config)
        for walk in walks(
            Model(config), Plan(walks=PLAN_CONFIGS[name], seed=11, crash_rate=0.2 if config.crashes else 0.0)
        )
    ]
    for trace in traces:
        replay(trace, ttl_seconds=config.ttl_ticks, unit_seconds=config.unit_ticks, plan_steps=config.plan_steps)
    PLAYED.update(step["action"]["action"] for trace in traces for step in trace["steps"] if step["action"])


PLAYED: set[str] = set()


@pytest.mark.clause("PLN-7", "PLN-9")
def test_every_plan_operation_was_replayed() -> None:
    """Runs after the walks above: together they drove every plan operation of the model."""
    if not PLAYED:
        pytest.skip("run together with test_plan_walks_replay_on_the_reference")
    assert PLAN_OPERATIONS <= PLAYED, f"never replayed: {sorted(PLAN_OPERATIONS - PLAYED)}"
