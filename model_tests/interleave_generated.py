"""Pairs of operations to interleave, generated from the model (DESIGN rule 9; STO-4).

``model_tests/interleave_pairs.py`` lists the pairs someone thought of, each in a world written by
hand. A race between two operations nobody listed was seen by nothing but the Hypothesis programs'
small pool (an outside review's plants in two unlisted pairs were caught only by chance). Here the
pairs come from the model instead: a breadth-first search of a small configuration finds, for every
two operations of the model that are enabled in one reachable state and *conflict* — one writes a
record kind the other writes or reads (:func:`conflict`, from the write steps of
``spec.model.OPERATIONS``) — the first such state; the reference is replayed along the model's path
to it (``model_tests.replay.Replayer``) as the prepared world, and the two operations, as the model
would take them there, are run by two harness instances at every interleaving
(``model_tests/interleave.py``). A new operation of the model, or one that comes to write another
record, joins without anyone listing it.

The search is bounded (it stops once a long stretch of states adds no pair) and deterministic, so
the pairs and their worlds are the same on every run; ``test_interleave_generated.py`` requires the
pairs it knows the hand-written list to race to be among them.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections import deque
from typing import Any

import reference as r
from model_tests.interleave import Operation, Scenario
from model_tests.replay import Replayer
from spec.model import OPERATIONS, Action, Model, State, snapshot
from spec.model._state import NONE

RECORDS = frozenset(
    {
        "approval",
        "plan",
        "shutdown",
        "tool_execution",
        "plan_execution",
        "message",
        "member",
        "task",
        "outbox",
        "job",
        "profile",
    }
)
"""Every record kind an operation writes (what reconciliation may touch)."""
OWN = {
    ("approval", "record"): {"approval"},
    ("approval", "execution"): {"tool_execution"},
    ("approval", "call"): {"tool_execution"},
    ("approval", "outcome"): {"tool_execution"},
    ("plan", "record"): {"plan"},
    ("plan", "execution"): {"plan_execution"},
    ("shutdown", "record"): {"shutdown"},
    ("member", "record"): {"shutdown"},
}
"""A write step's record kind where the step's last part names its family's own record."""
SHARED = {
    "message": {"message"},
    "member": {"member"},
    "task": {"task"},
    "outbox": {"outbox"},
    "entry": {"outbox"},
    "job": {"job"},
    "jobs": {"job"},
    "profile": {"profile"},
    "requests": {"approval", "plan"},  # XPR-2: a drain or an inspection cancels both
    "cancel_requests": {"approval", "plan"},
    "shutdown": {"shutdown"},
    "records": {"approval", "plan", "shutdown", "plan_execution", "message"},  # the monitor's pass
    "reconcile": set(RECORDS),
    "clock": set(),
}
"""A write step's record kinds by its last part, whatever the operation's family."""
READS: dict[str, set[str]] = {
    # what an operation judges besides what it writes (a guard read): its member (running, its
    # incarnation, its task: MEM-1, XPR-1, XPR-2), its member's busy jobs (SHD-3, JOB-1), its
    # member's capability profile (XPR-4), the shutdown requests that target its member (MEM-1)
    **{op: {"member", "profile"} for op in ("approval.request", "approval.consume", "approval.retry")},
    **{f"plan.{op}": {"member"} for op in ("draft", "submit", "start", "step", "complete", "fail")},
    "task.claim": {"member", "shutdown"},
    "task.finish": {"member", "job"},
    "task.suspend": {"member"},
    "task.inspect": {"member", "job"},
    "job.start": {"member"},
    "member.restart": {"job"},
    "member.retire": {"job"},
    "shutdown.drain_jobs": {"member"},
    "shutdown.release_task": {"job"},
    "shutdown.finish": {"job"},
}
"""Record kinds each operation reads to judge, besides those it writes (read off the reference's
guards; outside review 58 found the first version, member reads only, missed eleven pairs)."""


def writes(operation: str) -> set[str]:
    """The record kinds ``operation``'s write steps write (``spec.model.OPERATIONS``)."""
    family = operation.split(".")[0]
    kinds: set[str] = set()
    for part in OPERATIONS[operation]:
        kinds |= OWN.get((family, part)) or SHARED[part]
    return kinds


def conflict(a: str, b: str) -> bool:
    """Whether one of the two operations writes a record kind the other writes or reads."""

    def reads(operation: str) -> set[str]:
        return writes(operation) | READS.get(operation, set())

    return bool(writes(a) & reads(b) or writes(b) & reads(a))


def config(apart: bool = False) -> Any:
    """One member, one of each record, two incarnations, jobs and lapses (tests/test_convergence.py's);
    ``apart``: the same with two members and two tasks, where two operations can act on records of
    different members (outside review 58's D9)."""
    from tests.test_convergence import search_config

    one = search_config()
    return dataclasses.replace(one, name="convergence-apart", members=2, tasks=2) if apart else one


def touched(state: State, action: Action) -> tuple[set[int], set[int]] | None:
    """The members and tasks ``action`` acts on in ``state`` (its own, its record's requester or
    target, the task they hold), or None when it names no member (the clock, the monitor, a send)."""
    args = dict(action.args)
    family = action.name.split(".")[0]
    members, tasks = set(), set()
    if "member" in args:
        members.add(args["member"])
    if "task" in args:
        tasks.add(args["task"])
        members.add(state.tasks[args["task"]].owner)
    if "slot" in args and family in ("approval", "plan", "shutdown"):
        record = {"approval": state.approvals, "plan": state.plans, "shutdown": state.shutdowns}[family][args["slot"]]
        members.add(record.target if family == "shutdown" else record.requester)
        tasks.add(getattr(record, "task", NONE))
    members.discard(NONE)
    tasks |= {state.members[m].task for m in members}
    tasks.discard(NONE)
    return (members, tasks) if members else None


def apart(state: State, a: Action, b: Action) -> bool:
    """Whether the two act on different members and different tasks."""
    first, second = touched(state, a), touched(state, b)
    return bool(first and second and not first[0] & second[0] and not first[1] & second[1])


UNRACED = frozenset({"tick", "approval.retry"})
"""Operations no pair is made of: the clock (each instance has its own), and a retried request
(the request itself, again: ``approval.request`` pairs cover it)."""

BUDGET = {False: 30_000, True: 60_000}
SLACK = 2_000
"""States the search reads at most (one member; two apart); it stops sooner once as many states
again as it took to find the last new pair (and 2,000 more) add none."""
APART = "@apart"
"""The suffix of a pair of operations on different members and tasks (the two-member search's)."""


@functools.cache
def found(two: bool = False) -> dict[str, tuple[list[tuple[Action, State]], Action, Action]]:
    """Pair name → (the model's path to the first state where both are enabled, the two actions).
    ``two``: the two-member search, which keeps only pairs acting on different members and tasks
    (their names end in :data:`APART`): the one-member search has every pair that shares them."""
    model = Model(config(two), reduce=True)
    start = model.initial()
    parent: dict[State, tuple[State, Action] | None] = {start: None}
    queue, pairs, explored, last = deque([start]), {}, 0, 0
    while queue and explored < BUDGET[two] and explored < 2 * last + SLACK:
        state, explored = queue.popleft(), explored + 1
        enabled = [(action, steps) for action, steps in model.operations(state) if action.name not in UNRACED]
        for (a, _), (b, _) in itertools.combinations_with_replacement(enabled, 2):
            first, second = sorted((a, b), key=lambda action: action.name)
            name = f"{first.name}||{second.name}" + (APART if two else "")
            if name not in pairs and conflict(first.name, second.name) and (not two or apart(state, a, b)):
                pairs[name] = (_path(parent, state), first, second)
                last = explored
        for action, steps in enabled:
            after = state
            for _, apply in steps:
                after = apply(after)
            if after not in parent:
                parent[after] = (state, action)
                queue.append(after)
    return pairs


def _path(parent: dict[State, tuple[State, Action] | None], state: State) -> list[tuple[Action, State]]:
    path: list[tuple[Action, State]] = []
    while (entry := parent[state]) is not None:
        path.append((entry[1], state))
        state = entry[0]
    return path[::-1]


class Driven(Replayer):
    """The replayer's mapping of model actions to reference calls, on a harness given to it (the
    set-up's, or a recording proxy of it), not one of its own."""

    def __init__(self, harness: Any, ttl: float, unit: float) -> None:  # no super(): no harness of its own
        self.harness, self.storage, self.clock = harness, harness.storage, harness.clock
        self.ttl, self.unit_seconds, self.plan_steps = ttl, unit, 1


HARNESS_READS = frozenset({"member", "read", "task_row", "require", "scan", "snapshot", "scan_status"})
"""The harness calls the replayer makes to work out a call's arguments: run for real while they are
worked out; any other call is the operation itself, recorded to be made by an instance."""

Call = tuple[tuple[str, ...], tuple[Any, ...], dict[str, Any]]


class _Recording:
    """A harness seen through: reads (:data:`HARNESS_READS`) are answered by the prepared world's harness;
    any other call is recorded, not made — so a caller's arguments are fixed before the race, as
    a real caller's are (its incarnation, its task, the ids it names), not read inside it."""

    def __init__(self, target: Any, path: tuple[str, ...], calls: list[Call]) -> None:
        self._target, self._path, self._calls = target, path, calls

    def __getattr__(self, name: str) -> Any:
        return _Recording(getattr(self._target, name), (*self._path, name), self._calls)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._path and self._path[-1] in HARNESS_READS:
            return self._target(*args, **kwargs)
        self._calls.append((self._path, args, kwargs))
        return None


def recorded_calls(prepared: r.Harness, action: Action, after: dict[str, Any], ttl: float, unit: float) -> list[Call]:
    """The reference calls the model's ``action`` is, with their arguments as the prepared world
    gives them (worked out once, before any instance runs)."""
    calls: list[Call] = []
    driven = Driven(_Recording(prepared, (), calls), ttl, unit)
    model_action = action.to_json()
    driven._operation(model_action["action"], model_action["args"], after)()
    assert calls, f"{action} made no call"
    return calls


def _instance_operation(name: str, calls: list[Call]) -> Operation:
    def run(h: r.Harness) -> Any:
        result = None
        for path, args, kwargs in calls:
            target: Any = h
            for part in path:
                target = getattr(target, part)
            result = target(*args, **kwargs)
        return result

    return Operation(name, run)


@functools.cache
def scenarios(two: bool = False) -> dict[str, Scenario]:
    """Pair name → the scenario: the replayed path as the prepared world, then the two operations
    (``two``: :func:`found`'s two-member pairs)."""
    model = Model(config(two), reduce=True)
    cfg = model.config
    ttl, unit = float(cfg.ttl_ticks), float(cfg.unit_ticks)
    made = {}
    for name, (path, a, b) in found(two).items():
        state = path[-1][1] if path else model.initial()
        first = snapshot(model.initial(), cfg)
        steps = [(action.to_json(), snapshot(after, cfg)) for action, after in path]

        def setup(h: r.Harness, first: dict[str, Any] = first, steps: list[Any] = steps) -> None:
            for member in first["member"]:
                h.add_member(member["member_id"], ["deploy"])
            for task in first["task"]:
                h.add_task(task["task_id"])
            driven = Driven(h, ttl, unit)
            for action, after in steps:
                driven.apply(action, after)

        after = [_after(model, state, action, cfg) for action in (a, b)]
        now = float(snapshot(state, cfg)["clock"])
        prepared = r.Harness(r.MemoryStorage(), r.ManualClock(0.0), [r.RecordingTool().tool()])
        setup(prepared)
        operations = tuple(
            _instance_operation(
                f"{action.name} {action.to_json()['args']}", recorded_calls(prepared, action, later, ttl, unit)
            )
            for action, later in zip((a, b), after, strict=True)
        )
        made[name] = Scenario(name, setup, ((operations[0],), (operations[1],)), clocks=(now, now))
    return made


def _after(model: Model, state: State, action: Action, cfg: Any) -> dict[str, Any]:
    """The model's snapshot after ``action`` from ``state`` (the replayer reads slots from it)."""
    for candidate, steps in model.operations(state):
        if candidate == action:
            after = state
            for _, apply in steps:
                after = apply(after)
            return snapshot(after, cfg)
    raise AssertionError(f"{action} is not enabled")


__all__ = ["conflict", "found", "scenarios", "writes"]
