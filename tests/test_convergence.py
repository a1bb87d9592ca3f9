"""Recovery converges from every crash prefix of every operation (REC-1, REC-2, issue 14 item 5).

For every write step the reference registers (every ``*_STEPS`` tuple ``reference`` exports) that
the model names too (``spec.model.WRITE_STEPS``): reach the step's operation by the shortest path
the model knows (one breadth-first search of the model, shared by every step), replay that path
on the reference (``model_tests.replay.Replayer``), crash right after the step, restart a new
harness over the same storage and reconcile. Then every ``spec.invariants`` state predicate holds,
the reference refines the model's own restart, and reconciling again changes nothing — on the
memory and the SQLite backend.

Generic: an operation joins when the reference registers its steps and the replayer drives it
(plans: ``PLAN_STEPS`` and the replayer's plan operations); nothing here names an operation.
A reference step the model does not name fails :func:`test_every_reference_step_is_the_models`
unless it is one of the reference's own, listed with the reason in :data:`REFERENCE_ONLY`.

Clause: STO-1, REC-1, REC-2, REC-3, INV-7.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import reference as r
from model_tests.replay import Replayer, project
from spec import invariants
from spec.model import OPERATIONS, WRITE_STEPS, Action, Model, State, parse_config, snapshot
from spec.model._reconcile import reconcile as model_reconcile

REFERENCE_ONLY = {
    "member.exit": "SHD-8: a member's own exit on a signal (the model has no signals; tests/test_signal_exit.py)",
    "member.heartbeat": "SHD-10: the heartbeat (the model abstracts time since the last beat)",
    "task.checkpoint": "TSK-2: checkpoint data (the model abstracts task data)",
}
"""Operations only the reference has, and why the model leaves them out. Every step ending in
``/audit`` is the reference's too: the team log (AUD-5), which the model abstracts away."""


def registered_steps() -> tuple[str, ...]:
    """Every write step the reference registers for its operations: the union of the ``*_STEPS``
    it exports, in their order (``WRITE_STEPS``, the set a store accepts, adds the steps written
    inside one model step: the monitor's and reconciliation's per record, and set-up)."""
    names = [name for name in r.__all__ if name.endswith("_STEPS") and name != "WRITE_STEPS"]
    return tuple(dict.fromkeys(step for name in names for step in getattr(r, name)))


def reference_only(step: str) -> bool:
    return step.endswith("/audit") or step.rsplit("/", 1)[0] in REFERENCE_ONLY


STEPS = tuple(step for step in WRITE_STEPS if step in registered_steps())
"""The model's write steps the reference implements, in the model's order."""


def search_config() -> Any:
    """Small, with every feature the registered steps need (plans only once the reference has them)."""
    plans = any(step.startswith("plan.") for step in STEPS)
    return parse_config(
        "convergence",
        {
            "description": "the shortest way to every operation (tests/test_convergence.py)",
            "members": 1,
            "tasks": 1,
            "approvals": 1,
            "plans": int(plans),
            "shutdowns": 1,
            "max_ticks": 3,
            "ttl_ticks": 1,
            "unit_ticks": 2,
            "plan_steps": 1,
            "crashes": False,
            "jobs": True,
            "lapses": True,
            "max_incarnation": 2,
            "profile_changes": 1,
            "max_retractions": 1,
            "symmetry": False,
            "liveness": False,
            "require_coverage": False,
        },
    )


Path_ = list[tuple[Action, State]]


@functools.cache
def shortest_paths() -> dict[str, tuple[Path_, Action]]:
    """For each step, a shortest path of the model to a state where an operation writing that
    step is enabled, and that operation (one breadth-first search for them all). An operation
    whose step changes something is preferred: a crash after a step that wrote nothing is the
    crash before it."""
    model = Model(search_config(), reduce=True)
    start = model.initial()
    parent: dict[State, tuple[State, Action] | None] = {start: None}
    queue = deque([start])
    found: dict[str, tuple[State, Action]] = {}  # the first operation whose step changes the state
    fallback: dict[str, tuple[State, Action]] = {}  # … or only writes it (no change to make)
    explored, budget = 0, None  # once every step has a way there, a bounded look for better ones
    while queue and len(found) < len(STEPS) and (budget is None or explored < budget):
        state, explored = queue.popleft(), explored + 1
        if budget is None and len(fallback) == len(STEPS):
            budget = 2 * explored
        for action, steps in model.operations(state):
            after = state
            for name, apply in steps:
                before, after = after, apply(after)
                if name in STEPS:
                    fallback.setdefault(name, (state, action))
                    if after != before:
                        found.setdefault(name, (state, action))
            if after not in parent:
                parent[after] = (state, action)
                queue.append(after)
    chosen = {**fallback, **found}
    return {step: (_path(parent, state), action) for step, (state, action) in chosen.items()}


def _path(parent: dict[State, tuple[State, Action] | None], state: State) -> Path_:
    path: Path_ = []
    while (link := parent[state]) is not None:
        path.append((link[1], state))
        state = link[0]
    return path[::-1]


def trace(model: Model, path: Path_) -> dict[str, Any]:
    config = model.config
    states = [model.initial(), *(state for _, state in path)]
    actions: list[Action | None] = [None, *(action for action, _ in path)]
    return {
        "steps": [
            {"action": None if a is None else a.to_json(), "snapshot": snapshot(s, config)}
            for a, s in zip(actions, states, strict=True)
        ]
    }


def model_crash(model: Model, state: State, action: Action, step: str) -> State:
    """The model's state after ``action`` crashed right after ``step``, then its restart."""
    for candidate, steps in model.operations(state):
        if candidate == action:
            for name, apply in steps:
                state = apply(state)
                if name == step:
                    return model_reconcile(model, replace(state, crashed=False))
    raise AssertionError(f"{action} is not enabled where the search found it")


def make_storage(backend: str, folder: Path) -> r.Storage:
    return r.MemoryStorage() if backend == "memory" else r.SQLiteStorage(folder / "team.db")


@pytest.mark.clause("REC-2", "STO-1")
def test_every_reference_step_is_the_models() -> None:
    """A reference operation the model has writes only steps the model names (its team-log
    appends aside); an operation the model lacks is listed, with the reason, in REFERENCE_ONLY."""
    unnamed = [s for s in registered_steps() if s not in WRITE_STEPS and not reference_only(s)]
    assert not unnamed, f"write steps the model does not name: {unnamed}"
    own = {s.rsplit("/", 1)[0] for s in registered_steps() if s.rsplit("/", 1)[0] in REFERENCE_ONLY}
    assert not own & set(OPERATIONS), "an operation listed as the reference's own is the model's"
    assert len(STEPS) >= 40, "the reference registers fewer steps than it did (approvals and team)"
    assert set(registered_steps()) <= r.WRITE_STEPS, "a registered step a harness's store would refuse"


@pytest.mark.clause("REC-2")
def test_every_step_has_a_way_there() -> None:
    missing = [step for step in STEPS if step not in shortest_paths()]
    assert not missing, f"the model reaches no operation writing {missing}"


def model_step_before(step: str) -> str:
    """The last step the model names that the reference writes before ``step`` in its operation."""
    registered = registered_steps()
    op = step.rsplit("/", 1)[0]
    earlier = [s for s in registered[: registered.index(step)] if s.startswith(op + "/") and s in WRITE_STEPS]
    return earlier[-1]


LOG_STEPS = tuple(s for s in registered_steps() if s.endswith("/audit") and s.rsplit("/", 1)[0] in OPERATIONS)
"""The team-log appends of the model's operations (AUD-5): the model, which has no log, sees a
crash after one as a crash after the model step written before it."""


@pytest.mark.clause("REC-1", "REC-2", "REC-3", "INV-7", "STO-1")
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_after_each_step_converges(step: str, backend: str, tmp_path: Path) -> None:
    """Crash after ``step``, restart, reconcile: every invariant holds, the reference refines the
    model's restart, and a second reconcile changes nothing (REC-1)."""
    converges(step, step, backend, tmp_path)


@pytest.mark.clause("REC-2", "AUD-5")
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("step", LOG_STEPS)
def test_a_crash_after_each_log_append_converges(step: str, backend: str, tmp_path: Path) -> None:
    converges(step, model_step_before(step), backend, tmp_path)


def crashed_at(step: str, model_step: str, backend: str, tmp_path: Path) -> tuple[Replayer, r.Storage, dict[str, Any]]:
    """The reference replayed along the shortest path and crashed right after ``step``: the replayer,
    its storage (open: the caller closes it) and the snapshot of the model's restart from there."""
    path, action = shortest_paths()[model_step]
    model = Model(search_config(), reduce=True)
    storage = make_storage(backend, tmp_path)
    config = model.config
    replayer = Replayer(trace(model, path), config.ttl_ticks, storage, unit_seconds=config.unit_ticks)
    for number, entry in enumerate(replayer.trace["steps"][1:], start=1):
        replayer.apply(entry["action"], entry["snapshot"])
        assert project(replayer.harness.snapshot()) == project(entry["snapshot"]), f"prefix step {number}"
    state = path[-1][1] if path else model.initial()
    restarted = snapshot(model_crash(model, state, action, model_step), config)
    replayer.apply(replace(action, crash_after=step).to_json(), restarted)
    assert storage.faults.fired == [("after", step)], f"{action} never wrote {step}"
    return replayer, storage, restarted


def converges(step: str, model_step: str, backend: str, tmp_path: Path) -> None:
    replayer, storage, restarted = crashed_at(step, model_step, backend, tmp_path)
    try:
        crashed_snapshot = replayer.harness.snapshot()
        replayer.apply(Action("restart").to_json(), restarted)
        first = replayer.harness.snapshot()
        checks = invariants.check_state(first) + invariants.check_step(crashed_snapshot, first)
        problems = [f"{inv.clause} {inv.name}: {text}" for inv, text in checks]
        assert problems == [], problems
        assert project(first) == project(restarted), "the reference's restart is not the model's"
        assert r.verify_audit_log(storage).ok
        replayer.harness = replayer._harness()
        replayer.harness.reconcile()
        assert invariants.reconcile_is_idempotent(first, replayer.harness.snapshot()) == []
    finally:
        storage.close()


@pytest.mark.clause("REC-1", "REC-2", "STO-1")
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_inside_reconciliation_converges(step: str, tmp_path: Path) -> None:
    """The model's ``restart/reconcile`` is one step; the reference's reconciliation writes under
    its own named steps, and a crash may cut it too. After the crash after ``step``, reconcile and
    crash right after each step that reconciliation writes (in turn, from a fresh replay), restart
    and reconcile again: the outcome is the uninterrupted restart's — the model's — with every
    invariant holding and the team log intact (memory backend; the SQLite one writes the same steps)."""
    replayer, storage, restarted = crashed_at(step, step, "memory", tmp_path)
    try:
        before = len(storage.steps_written)
        replayer.apply(Action("restart").to_json(), restarted)
        written = list(dict.fromkeys(storage.steps_written[before:]))
    finally:
        storage.close()
    for inner in written:
        replayer, storage, restarted = crashed_at(step, step, "memory", tmp_path)
        try:
            storage.faults.crash_after.add(inner)
            with pytest.raises(r.Crash):
                replayer.apply(Action("restart").to_json(), restarted)
            storage.faults.crash_after.clear()
            replayer.apply(Action("restart").to_json(), restarted)
            after = replayer.harness.snapshot()
            problems = [f"{inv.clause} {inv.name}: {text}" for inv, text in invariants.check_state(after)]
            assert problems == [], f"crash after {inner}: {problems}"
            assert project(after) == project(restarted), f"crash after {inner}: not the model's restart"
            assert r.verify_audit_log(storage).ok, f"crash after {inner}: the team log is broken"
        finally:
            storage.close()


LEFT_TO_THE_LIVE_WRITER_BUT = {
    "member.inspect/requests": "the member record (the inspection's own write after the requests it cancelled)",
    "shutdown.release_task/record": "the member's task, cleared (the release's own write after the request's note)",
}
"""Cut operations a second instance's reconciliation still finishes a part of though their writer
lives: the part on a record the operation does not mark (REC-4 speaks of the marked protocol
record; whether a live writer's unmarked half is left too is open, in the issue's note)."""


@pytest.mark.clause("REC-4")
def test_another_instances_reconciliation_leaves_a_live_writers_cut_operation(tmp_path: Path) -> None:
    """Instance A (alive: this process) is cut after a write step with a protocol record marked as
    its own; instance B opens the same file and reconciles: it changes nothing at all — no row of
    the recovery table is applied to A's work, no message owed or delivered for it, nothing logged
    (outside review 42 dropped the live-writer guard from the reconciliation of active and of
    completed shutdown requests; B then drained, stopped and acknowledged for A). Every write step
    is cut in turn; those that leave no record marked by A are taken over, as REC-4 says."""
    judged, took_over = [], {}
    for number, step in enumerate(STEPS):
        folder = tmp_path / str(number)
        folder.mkdir()
        replayer, storage, _ = crashed_at(step, step, "sqlite", folder)
        other = r.SQLiteStorage(folder / "team.db")
        try:
            marked = sorted(key for key, writer in storage.marks().items() if writer == storage.instance_id)
            if not marked or step in LEFT_TO_THE_LIVE_WRITER_BUT:
                continue
            b = r.Harness(other, replayer.clock, [replayer.world.tool(normalize=lambda arguments: arguments)])
            before = b.snapshot()
            b.reconcile()
            after = b.snapshot()
            judged.append(step)
            if changed := sorted(k for k in after if after[k] != before[k]):
                took_over[step] = f"{marked}: {changed}"
        finally:
            other.close()
            storage.close()
    assert took_over == {}
    assert len(judged) >= 30 and {"shutdown.finish/record", "shutdown.begin_drain/record"} <= set(judged), judged
