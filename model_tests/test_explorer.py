"""The explorer on the named configurations: pinned state counts, invariants, coverage, traces.

Clause: REC-1, REC-2, INV-1 … INV-12 (DESIGN "explorer"; TLA+-style manifest of state counts).
"""

from __future__ import annotations

from typing import Any

import pytest

import spec
from spec.explore import explore, format_trace, liveness_problems, trace_json
from spec.model import CRASH_POINTS, OPERATIONS, WRITE_STEPS, Model, load_config, manifest
from spec.model._ops import FAMILIES

FAST = ["tiny", "plan", "fencing"]


@pytest.fixture(scope="module")
def reports() -> dict[str, object]:
    return {name: explore(Model(load_config(name))) for name in FAST}


@pytest.mark.clause("REC-1", "REC-2", "INV-1", "INV-3", "INV-6", "INV-7", "INV-10", "INV-11", "INV-12")
@pytest.mark.parametrize("name", FAST)
def test_configuration_holds_and_matches_its_pinned_count(reports: dict[str, object], name: str) -> None:
    """Every invariant holds, nothing deadlocks, liveness holds, and the state count is the pinned one."""
    report = reports[name]
    assert report.complete
    assert not report.violations, [format_trace(v, load_config(name)) for v in report.violations.values()]
    assert report.deadlocks == 0
    assert report.liveness_checked == load_config(name).liveness
    assert report.states == manifest()[name]["states"], "update spec/model/configs/manifest.json in this commit"
    assert report.transitions == manifest()[name]["transitions"]


def test_every_configuration_has_a_pinned_count() -> None:
    """A configuration file without a manifest entry (or the reverse) is an error."""
    from spec.model import config_names

    assert sorted(config_names()) == sorted(manifest())
    for name, pinned in manifest().items():
        assert set(pinned) >= {"states", "transitions"}
        if pinned["states"] is None:
            assert pinned.get("pending"), f"{name}: an unpinned configuration must say why (pending)"


def test_write_steps_are_declared_and_named_by_operation() -> None:
    """Crash points are `<operation>/<write step>` and enumerable (DESIGN rule 3, STYLE rule 4)."""
    assert len(set(WRITE_STEPS)) == len(WRITE_STEPS)
    assert set(CRASH_POINTS) < set(WRITE_STEPS)
    for step in WRITE_STEPS:
        operation, _, name = step.partition("/")
        assert operation in OPERATIONS and name in OPERATIONS[operation]
    assert FAMILIES


@pytest.mark.clause("REC-2")
def test_every_step_the_model_takes_is_a_declared_write_step(reports: dict[str, object]) -> None:
    """A crash after an undeclared step name would escape crash-point coverage."""
    for report in reports.values():
        assert report.crashed_at <= set(CRASH_POINTS)


def _csr(successors: list[list[int]]) -> tuple[list[int], list[int]]:
    offsets, targets = [0], []
    for moves in successors:
        targets += moves
        offsets.append(len(targets))
    return offsets, targets


@pytest.mark.clause("INV-12")
def test_cycle_detection_finds_a_cycle_and_ignores_goal_states() -> None:
    """The liveness check can fail: a two-state loop of non-goal states is found, as a cycle in
    order from its least state; a loop through a goal state is not one, unless every cycle counts
    (a split configuration's part, spec/split.py); a step back to the same state is a cycle (under
    symmetry a loop of the concrete states can be one step from a class to itself)."""
    offsets, targets = _csr([[1], [2], [1, 3], []])
    assert liveness_problems(offsets, targets, [False, False, False, True]) == ([], [1, 2])
    assert liveness_problems(offsets, targets, [False, False, True, True]) == ([], None)
    assert liveness_problems(offsets, targets, [False, False, True, True], every_cycle=True) == ([], [1, 2])
    offsets, targets = _csr([[1], [1, 2], [], [0]])
    assert liveness_problems(offsets, targets, [False, False, True, False]) == ([], [1])
    assert liveness_problems(offsets, targets, [False, True, True, False]) == ([], None)
    offsets, targets = _csr([[3], [2], [4], [1], [1]])  # 1 -> 2 -> 4 -> 1, entered from 3
    assert liveness_problems(offsets, targets, [False] * 5) == ([0, 1, 2, 3, 4], [1, 2, 4])


class _Graph:
    """What ``spec.explore._liveness`` reads of a search: its states (here numbers), their goal
    flags (through the model), successors (a crash edge ``-t - 1``), and where it reports."""

    def __init__(self, successors: list[list[int]], goals: set[int], part: str = "") -> None:
        self.states = list(range(len(successors)))
        self.successors = successors
        config = type("C", (), {"part": part})()
        self.model = type("M", (), {"is_goal": staticmethod(lambda s: s in goals), "config": config})()
        self.report = type("R", (), {"liveness_checked": False})()
        self.found: dict[str, str] = {}

    def violate(self, clause: str, name: str, message: str, trace: object) -> None:
        self.found[name] = message

    def trace(self, number: int) -> list[int]:
        return [number]


@pytest.mark.clause("INV-12", "REC-2")
@pytest.mark.parametrize(
    ("successors", "goals", "found"),
    [
        ([[1], [2], [1, 3], []], {3}, {"no_cycle_avoids_finish"}),  # 1 ↔ 2 loops; each can still finish
        ([[1], [2], []], {2}, set()),  # a path to the goal, no loop
        ([[1], [0], []], {2}, {"every_request_can_finish", "no_cycle_avoids_finish"}),  # 0 ↔ 1, the goal unreachable
        ([[1], [2, -1], [3], []], {3}, set()),  # the only loop runs through a crash edge: not a livelock
        ([[1], [1, 2], []], {2}, {"no_cycle_avoids_finish"}),  # 1 steps back to itself
        ([[1], [2], [0, 3], []], {2, 3}, set()),  # 0 -> 1 -> 2 -> 0 passes a goal state
    ],
    ids=["livelock", "path", "stuck", "crash-loop", "self-loop", "through-goal"],
)
def test_the_liveness_check_reads_the_search_as_wired(
    successors: list[list[int]], goals: set[int], found: set[str]
) -> None:
    """``_liveness`` itself, not only ``_cycle_avoiding``: a loop of states that can each still
    finish is a livelock (an outside review gave the cycle search the can-finish flags instead
    of the goal flags, so it never fired, and no test failed: no model mutant livelocks)."""
    graph = _Graph(successors, goals)
    _pure_explore()._liveness(graph)
    assert set(graph.found) == found and graph.report.liveness_checked


@pytest.mark.clause("INV-12")
def test_a_part_of_a_split_configuration_has_no_cycle_at_all() -> None:
    """A part's loop through a goal state is reported (the parts cannot vouch for the whole), and
    says so; a part's loop that avoids the goal is the whole's livelock, reported as such."""
    graph = _Graph([[1], [2], [0, 3], []], {2, 3}, part="plans")
    _pure_explore()._liveness(graph)
    assert set(graph.found) == {"no_cycle_avoids_finish"}
    assert "explore the whole" in graph.found["no_cycle_avoids_finish"]
    graph = _Graph([[1], [2], [1, 3], []], {3}, part="plans")
    _pure_explore()._liveness(graph)
    assert "explore the whole" not in graph.found["no_cycle_avoids_finish"]


def _pure_explore() -> Any:
    """``spec/explore.py`` as source (the compiled module takes only its own search objects)."""
    import importlib.util
    from pathlib import Path

    path = Path(spec.__file__).parent / "explore.py"
    loaded = importlib.util.spec_from_file_location("spec._explore_source", path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    module.__package__ = "spec"
    loaded.loader.exec_module(module)
    return module


@pytest.mark.clause("INV-3")
def test_trace_json_snapshots_validate_against_the_schemas() -> None:
    """A counterexample's snapshots are the canonical snapshot form (replayable elsewhere)."""
    config = load_config("tiny")
    report = explore(Model(config, "consume_without_digest_check"), stop_on="INV-1")
    violation = report.violations["approval_consumed_at_most_once"]
    document = trace_json(violation, config)
    assert document["format"] == "teamproto-trace/1"
    assert document["steps"][0]["action"] is None
    for step in document["steps"]:
        spec.validate_snapshot(step["snapshot"])
    text = format_trace(violation, config)
    assert "approval.consume" in text and "changed_arguments=True" in text


@pytest.mark.clause("MSG-2", "PLN-2")
def test_every_snapshot_of_the_plan_configuration_validates() -> None:
    """The model exports exactly the documents the schemas describe (DESIGN rule 5)."""
    from collections import deque

    from spec.model import snapshot

    config = load_config("plan")
    model = Model(config)
    seen = {model.initial()}
    queue = deque(seen)
    while queue and len(seen) < 3000:
        for _, state in model.successors(queue.popleft()):
            if not isinstance(state, Exception) and state not in seen:
                seen.add(state)
                queue.append(state)
                spec.validate_snapshot(snapshot(state, config))


def test_check_command_finds_a_mutant_and_writes_its_trace(tmp_path: object) -> None:
    """`teamproto check --mutant` exits 0 when the mutant is caught and writes the JSON trace."""
    import json
    from pathlib import Path

    from teamproto._cli import main

    out = Path(str(tmp_path)) / "trace.json"
    assert (
        main(
            ["check", "--config", "tiny", "--mutant", "consume_without_digest_check", "--json", "--trace-out", str(out)]
        )
        == 0
    )
    trace = json.loads(out.read_text())
    assert trace["violation"]["clause"] == "INV-1"
    assert main(["check", "--config", "tiny", "--json"]) == 0
    assert main(["check", "--config", "no-such-config"]) == 2


def test_a_bounded_run_says_how_far_it_got(reports: dict[str, object]) -> None:
    """Counts by depth add up; a run cut by --max-states is incomplete and names the depth it
    finished expanding (issue 3: progress on runs that cannot finish, e.g. `standard`)."""
    full = reports["tiny"]
    assert sum(full.states_by_depth) == full.states and full.expanded_through == full.depth
    cut = explore(Model(load_config("tiny")), max_states=200)  # of its 333
    assert not cut.complete and not cut.ok
    assert 0 <= cut.expanded_through < cut.depth
    assert cut.states_by_depth[: cut.expanded_through + 1] == full.states_by_depth[: cut.expanded_through + 1]
