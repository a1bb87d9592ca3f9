"""Random-walk simulation: the same checks as the explorer, along long random paths.

For a configuration too large to explore exhaustively (``standard``), breadth-first search only
reaches the first few levels. A simulation walks from the initial state by random choices to a
depth bound, a deadlock or a state with no move, and checks on every step exactly what the
explorer checks on every transition: each INV-* on the state after it (and on the crashed state
before a restart), the step invariants, REC-1 (reconciliation run twice changes nothing) and that
no state without a move leaves a request unfinished. It proves nothing about the states it does
not visit, and its counterexamples are the walk that found them, not the shortest.

Each walk draws its choices from ``random.Random(f"{seed}/{walk}")``, so one walk of a run can be
repeated alone. A step picks an operation uniformly among the enabled ones, then, with
probability ``crash_rate``, a crash after one of its write steps instead of the whole operation
(uniform over the crash points of the operation): a uniform choice among all successors would
crash most steps, since most operations have several crash points.

A counterexample is then shrunk (:func:`shrink`): actions are dropped, and crashed operations run
whole, while the violation stays, so what is printed is a short walk in which every step matters.

Pure: no clock and no I/O, like the explorer.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Iterator
from typing import Any

from ._records import CRASH_RATE, Plan
from ._tables import IllegalTransition
from .explore import Report, Violation, _check_state, _Search, _take
from .model import _model
from .model._dead import erase
from .model._model import Action, Model, crashed
from .model._state import State, replace
from .model._symmetry import canonical_key

DEFAULT_PLAN = Plan()
"""The simulation's defaults (an instance: a compiled dataclass keeps no class defaults; the CLI reads them here)."""


class _Walk(_Search):
    """The explorer's search state, holding one walk: its traces are the walk so far."""

    def __init__(self, model: Model, stop_on: str | None) -> None:
        super().__init__(model, stop_on, None, None)
        self.walk: list[tuple[Action | None, State]] = []
        self.ends: list[int] = []  # ends[i]: length of the walk when its i-th state was reached

    def start(self, state: State) -> None:
        self.walk, self.states, self.ends = [(None, state)], [state], [1]

    def extend(self, action: Action, state: State, crashed: State | None) -> None:
        if crashed is not None:
            self.walk.append((action, crashed))
            action = Action("restart")
        self.walk.append((action, state))
        self.states.append(state)
        self.ends.append(len(self.walk))

    def trace(self, number: int, *last: tuple[Action, State]) -> list[tuple[Action | None, State]]:
        """The walk up to its ``number``-th state, then the ``last`` steps."""
        return [*self.walk[: self.ends[number]], *last]

    def violate(
        self,
        clause: str,
        name: str,
        message: str,
        trace: list[tuple[Action | None, State]],
        offending: Action | None = None,
    ) -> None:
        """As the explorer's; ``offending`` is the action refused after the trace (INV-3)."""
        if name not in self.report.violations:
            self.report.violations[name] = Violation(
                clause, name, message, trace, shortest=False, walk_length=len(trace), offending=offending
            )


def simulate(
    model: Model,
    plan: Plan = DEFAULT_PLAN,
    *,
    stop_on: str | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    out_of_time: Callable[[], bool] | None = None,
) -> Report:
    """Run ``plan.walks`` random walks of ``model``; see the module docstring.

    The report counts distinct states by 64-bit fingerprints of the explorer's keys (dead data
    erased, canonical under symmetry),
    transitions as the steps taken, ``walks`` as the walks run, and ``depth`` as the longest walk.
    The run ends after ``plan.walks`` walks, when ``out_of_time`` (polled before each walk) is
    true, or when the ``stop_on`` clause is violated; ``progress(states, walks done, longest walk)``
    is called after each walk.
    """
    walk = _Walk(model, stop_on)
    report = walk.report
    report.simulation = True
    report.seed = plan.seed
    report.crash_rate = plan.crash_rate
    seen: set[int] = set()
    longest = 0
    _model.EDGE_LOG.append(set())
    collecting = gc.isenabled()
    gc.disable()
    try:
        for number in range(plan.walks):
            if walk.stopped():
                break  # the violation asked for was found
            if out_of_time is not None and out_of_time():
                break  # a time budget ends a simulation as its walk count does
            choose = _random_chooser(random.Random(f"{plan.seed}/{number}"), plan.crash_rate)
            steps = _one_walk(walk, choose, plan.depth, seen)
            report.walks += 1
            longest = max(longest, steps)
            if progress is not None:
                progress(len(seen), report.walks, longest)
    finally:
        edges = _model.EDGE_LOG.pop()
        if collecting:
            gc.enable()
    report.edges_taken |= edges
    report.states = len(seen)
    report.depth = longest
    if plan.shrink:
        for name, violation in report.violations.items():
            report.violations[name] = shrink(model, violation)
    return report


def walks(model: Model, plan: Plan) -> Iterator[list[tuple[Action | None, State]]]:
    """The walks of ``plan`` one by one, each as a trace (the checks run as in :func:`simulate`;
    the walks are the same): e.g. to replay them against an implementation."""
    walk = _Walk(model, None)
    seen: set[int] = set()
    for number in range(plan.walks):
        _one_walk(walk, _random_chooser(random.Random(f"{plan.seed}/{number}"), plan.crash_rate), plan.depth, seen)
        yield walk.walk


def _fingerprint(model: Model, state: State) -> int:
    """As the explorer keys its visited set: one per dead-data class (when the model reduces),
    under symmetry one per orbit. States of one class have the same verdicts, so each class is
    checked once."""
    alike = erase(state, model.config.regions) if model.reduce else state
    return hash(canonical_key(alike)) if model.config.symmetry else hash(alike)


Move = tuple[Action, Any]  # (action, next state or the IllegalTransition it raised)
Crash = tuple[str, State]  # a crash point: the write step, and the state it left (not yet marked crashed)
Choice = tuple[Action, Move | None, list[Crash]]  # an operation, its whole run, its crash points
Chooser = Callable[[list[Choice]], Move | None]  # the next move, or None to end the walk here


def _random_chooser(rng: random.Random, crash_rate: float) -> Chooser:
    def choose(choices: list[Choice]) -> Move:
        action, whole, crashes = choices[rng.randrange(len(choices))]
        if whole is None or (crashes and rng.random() < crash_rate):
            return crashed(action, *crashes[rng.randrange(len(crashes))])
        return whole

    return choose


def _one_walk(walk: _Walk, choose: Chooser, depth_limit: int, seen: set[int]) -> int:
    """One walk; returns its number of steps (a crash and its restart count as one)."""
    model, report = walk.model, walk.report
    state = model.initial()
    walk.start(state)
    walk.forget_if_large()
    before = walk.view(state)
    if _first_visit(model, state, seen):
        _check_state(walk, 0, state, before)
    for depth in range(depth_limit):
        if walk.stopped():
            return depth
        choices = _choices(model, state)
        if not choices:
            if not model.is_goal(state):
                report.deadlocks += 1
                walk.violate(
                    "INV-12",
                    "no_deadlock",
                    "no action is enabled and some request is not final",
                    walk.trace(depth),
                )
            return depth
        move = choose(choices)
        if move is None:
            return depth
        action, after_state = move
        if isinstance(after_state, IllegalTransition):
            walk.violate("INV-3", "transitions_follow_tables", str(after_state), walk.trace(depth), action)
            return depth
        taken, after, crashed = _take(walk, depth, action, after_state, before)
        if taken is None or after is None:
            return depth
        after_state = taken
        walk.extend(action, after_state, crashed)
        if _first_visit(model, after_state, seen):
            _check_state(walk, depth + 1, after_state, after)
        state, before = after_state, after
    return depth_limit


class _NotEnabled(Exception):
    """A scripted action is not among the moves of the state it is tried in."""


def replay(model: Model, script: list[Action], check: str, *, lenient: bool = False) -> Violation | None:
    """Walk ``script`` from the initial state with every check (a restart follows each crash by
    itself); the first violation of the check named ``check`` it shows, or ``None`` — also when
    a scripted action is not enabled where it comes, unless ``lenient``: then it is skipped."""
    walk = _Walk(model, None)
    steps = iter(script)

    def choose(choices: list[Choice]) -> Move | None:
        for wanted in steps:
            for action, whole, crashes in choices:
                moves = [crashed(action, *crash) for crash in crashes]
                for move in moves if whole is None else [whole, *moves]:
                    if move[0] == wanted:
                        return move
            if not lenient:
                raise _NotEnabled(str(wanted))
        return None

    try:
        _one_walk(walk, choose, len(script) + 1, set())
    except _NotEnabled:
        return None
    return walk.report.violations.get(check)


def script_of(violation: Violation) -> list[Action]:
    """The actions of a counterexample without the restarts that follow its crashes, and with the
    action that broke a table (which has no state after it to show in the trace)."""
    actions = [action for action, _ in violation.trace[1:] if action is not None and action.name != "restart"]
    return actions if violation.offending is None else [*actions, violation.offending]


SHRINK_REPLAYS = 2000
"""At most this many replays to shrink one counterexample."""


def shrink(model: Model, violation: Violation) -> Violation:
    """A shorter walk showing the same violation: drop one action, or run a crashed operation
    whole, while the trace gets shorter, until no single change keeps the violation (or
    ``SHRINK_REPLAYS`` replays were made). The candidates are replayed leniently: what a dropped
    action had enabled (an outbox send after the notice it owed, say) is dropped with it. The
    result is 1-minimal, not necessarily shortest."""
    best, script, replays = violation, script_of(violation), 0
    changed = True
    while changed and replays < SHRINK_REPLAYS:
        changed, index = False, 0
        while index < len(script) and replays < SHRINK_REPLAYS:
            action = script[index]
            candidates = [[*script[:index], *script[index + 1 :]]]
            if action.crash_after:
                candidates.insert(0, [*script[:index], replace(action, crash_after=""), *script[index + 1 :]])
            for candidate in candidates:
                replays += 1
                found = replay(model, candidate, violation.invariant, lenient=True)
                if found is not None and len(found.trace) < len(best.trace):
                    best, script, changed = found, script_of(found), True
                    break
            else:
                index += 1
    return replace(best, walk_length=violation.walk_length or len(violation.trace))


def _first_visit(model: Model, state: State, seen: set[int]) -> bool:
    fingerprint = _fingerprint(model, state)
    if fingerprint in seen:
        return False
    seen.add(fingerprint)
    return True


def _choices(model: Model, state: State) -> list[Choice]:
    """The enabled operations (:meth:`Model.outcomes`), each with its whole run (``None`` for
    one that changes nothing when it completes but crashes in between) and its crash points,
    which become moves only when picked: most steps crash nowhere."""
    choices: dict[Action, Choice] = {}
    for action, after, crashes in model.outcomes(state):
        _, whole, points = choices.get(action, (action, None, []))
        if after is not None:
            whole = (action, after)
        choices[action] = (action, whole, points + crashes if points else crashes)
    return list(choices.values())


__all__ = ["CRASH_RATE", "Plan", "replay", "script_of", "shrink", "simulate", "walks"]
