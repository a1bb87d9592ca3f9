"""``teamproto check`` auditing its own search (INV-12): a drift of the counts explained. Pure: no I/O.

A configuration's search runs with every reduction on (outbox sends and idle monitor passes taken
alone, the records' partial-order reduction, dead data, symmetry) and on the plain-tuple engine
where it can (:mod:`spec._flat_explore`). When its counts drift from the manifest, two causes look
alike: the protocol changed (a change of behaviour to review and pin), or a reduction or an engine
lost states it must not lose (a bug of the checker, which would hide violations). The model tests
tell them apart (``test_partial_order``, ``test_dead_data``, ``test_symmetry``, ``test_flat``), but
a designer running ``teamproto check`` alone saw only the moved counts. :func:`audit` tells them
apart on the spot, with two searches beside the one that drifted:

- **the other engine** (where the plain-tuple engine ran): the model's own search with the same
  reductions. The two are the same search step for step, so they must find the same states per
  depth, transitions and findings — exactly; any difference is a bug of one engine.
- **no reduction at all**: the full model (:class:`spec.model.Model` with ``reduce=False``),
  without dead data and without symmetry, bounded by :data:`FULL_STATES` (a larger one is reported
  as not audited, never as sound). Every reduction claims to keep every violation, edge, crash
  point and deadlock (the module docstrings argue it), so both searches must report the same
  :meth:`spec.explore.Report.findings`, and the full one finds at least as many states. Beside it:
  a search with dead data and symmetry alone must reach exactly the classes of the full search's
  states (a key that merges states that differ loses classes), and the states of one class must
  have one future (:func:`_alike_futures`: the same operations enabled and the same classes one
  step on — under deadline regions a merge of states that differ can leave the classes reached
  alike); and on :data:`INDEPENDENCE_SAMPLE`
  states of the full space, wherever the reduced model takes some operations alone, each must stay
  enabled after every other enabled operation and commute with it — or the order it skips must end
  in a class the reduced search reaches anyway (a crash in a send, then the restart, does not
  commute with a lapse; this check found that, ``Model._lapse_beside_crash``) — and still enabled
  after any *two* other operations (:func:`_two_steps_ahead`: a shutdown request, then the drain
  that cancels the approval taken alone); a monitor pass taken alone must change nothing but
  ``monitor_done``. On the same sample, the crash points the search takes must be exactly those
  the operations' write steps give, derived apart from :meth:`spec.model.Model.outcomes`, which
  every search here shares (:func:`_crash_points`).

Neither search can tell a change of the protocol from the designer's intent (a protocol edit can
make a reduction unsound: it is then unsound for the model as it now stands); both tell a checker
that lost something from one that did not. What the audit cannot see (an outside review planted
13 checker bugs; the audit named 5 of the 8 ``check`` failed on, and names all 8 since: the idle
pass's literal check, and the two checks above; 4 moved no count, latent): a
reduction whose independence breaks only three or more steps ahead, or two steps ahead outside the
sample and its budget (:data:`TWO_STEP_PAIRS`); code every one of its searches shares (the tick
rule of deadline regions); a reduction that loses states whose verdicts, edges and crash points
other states repeat; and a checker bug that moves no count of the healthy model (the model tests'
mutants see those: ``test_partial_order``, ``test_dead_data``, ``test_time``,
``test_unread_deadlines``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ._records import Report
from ._tables import IllegalTransition
from .model import Model
from .model._config import Config
from .model._dead import erase
from .model._model import HARNESS_CRASH
from .model._state import State
from .model._state import replace as _replace
from .model._symmetry import canonical_key

FULL_STATES = 200_000
"""The most states the unreduced search of one configuration may find (about 40 s of CPU)."""
INDEPENDENCE_SAMPLE = 2_000
"""At most this many states of the full search are checked for the reductions' independence (C1)."""

ALIKE_SAMPLE = 2_000
"""At most this many classes holding several states of the full search are checked for one future."""

TWO_STEP_PAIRS = 100_000
"""At most this many pairs of operations are followed two steps ahead of the independence sample."""

ENGINES = ("by the plain-tuple engine only", "by the model's engine only")
REDUCTIONS = ("only with the reductions", "only without them")


@dataclass
class Audit:
    """What the two searches beside a drifted configuration's found."""

    config: str
    engines: str = "one engine"  # "agree", or "one engine" (the model's ran: nothing to compare)
    reductions: str = "not audited"  # "agree", or "not audited (…)" when the full search was too large
    full_states: int | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def sound(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "engines": self.engines,
            "reductions": self.reductions,
            "unreduced_states": self.full_states,
            "sound": self.sound,
            "problems": self.problems,
        }


def audit(config: Config, reduced: Report, full_states: int = FULL_STATES) -> Audit:
    """Audit ``reduced``, a complete search of ``config`` by :func:`spec.explore.explore`."""
    from .explore import explore_states, flat_engine

    result = Audit(config.name)
    model, model_found = explore_states(Model(config), dead_data=True)  # the model's engine, the same reductions
    if flat_engine(Model(config)):
        differ = _differences(reduced, model, ENGINES, exact=True)
        result.engines = "agree" if not differ else "differ"
        result.problems += [f"the two engines differ on {config.name}: {d}" for d in differ]
    unreduced = Model(dataclasses.replace(config, symmetry=False), reduce=False)
    full, full_found = explore_states(unreduced, dead_data=False, max_states=full_states)
    if not full.complete:
        result.reductions = f"not audited (the unreduced search outgrew {full_states:,} states)"
        return result
    result.full_states = full.states
    differ = _differences(reduced, full, REDUCTIONS, exact=False)
    if full.states < reduced.states:
        differ.append(f"the reduced search found more states ({reduced.states:,}) than the full one ({full.states:,})")
    # The quotients alone (dead data, symmetry): one state of each class the full search reaches.
    quotient, quotient_found = explore_states(Model(config, reduce=False), dead_data=True, max_states=full_states)
    classes, reached = _classes(full_found, config), _classes(quotient_found, config)
    if quotient.complete and classes != reached:
        differ.append(
            f"{len(classes - reached):,} of the {len(classes):,} classes of states the full search reaches are "
            f"never reached with dead data{' and symmetry' if config.symmetry else ''} "
            f"({len(reached - classes):,} the other way): a key merges states that differ"
        )
    differ += _independence(config, full_found, _classes(model_found, config))
    differ += _alike_futures(config, full_found)
    found = [s for s in full_found or () if not s.crashed]
    crash_points = _crash_points(unreduced, found[:: max(1, len(found) // INDEPENDENCE_SAMPLE)])
    result.problems += [f"the crash points on {config.name} are not the write steps': {p}" for p in crash_points]
    result.reductions = "agree" if not differ else "differ"
    result.problems += [f"the reductions are unsound on {config.name}: {d}" for d in differ]
    return result


def _moves(model: Model, s: State) -> dict[Any, State | None]:
    """Every transition out of ``s`` (a crash followed by its restart), None for a broken table."""
    out: dict[Any, State | None] = {}
    for action, after in model.successors(s):
        if isinstance(after, State) and after.crashed:
            after = next(iter(model.successors(after)))[1]
        out[action] = after if isinstance(after, State) else None
    return out


def _independence(
    config: Config, states: Iterable[State] | None, reached: set[Any], sample: int = INDEPENDENCE_SAMPLE
) -> list[str]:
    """The partial-order reductions' C1, on ``sample`` states of the full search spread evenly
    over it: wherever the reduced model takes some operations alone (its ample set), every other
    operation enabled there leaves each of them enabled and commutes with it — or, where the two
    orders end in different states, the order the reduction skips ends in a class of states the
    reduced search reaches all the same (``reached``), so nothing after it is lost. (A crash in a
    send taken alone, then the restart's reconciliation, does not commute with a lapse: the
    reconciliation clears the lapsed member's task. The reduced search reaches that state through
    the lapse's own crash point.)"""
    reduced, full = Model(config), Model(dataclasses.replace(config, symmetry=False), reduce=False)
    found = [s for s in states or () if not s.crashed]
    problems: list[str] = []
    budget = [TWO_STEP_PAIRS]
    for s in found[:: max(1, len(found) // sample)]:
        ample = {action for action, _ in reduced.successors(s)}
        moves = _moves(full, s)
        if ample == set(moves):
            continue
        (alone, *more) = sorted(ample, key=str)
        if not more and alone.name == "monitor.pass" and moves.get(alone) != _replace(s, monitor_done=True):
            # The idle pass is taken alone for changing nothing but monitor_done (Model.operations).
            problems.append(f"the reduction takes {alone} alone where it changes more than monitor_done")
            continue
        if not ample <= set(moves):
            problems.append(f"the reduced model takes {sorted(map(str, ample - set(moves)))} where the full one cannot")
            continue
        after_ample = {a: _moves(full, x) for a in ample if (x := moves[a]) is not None}
        for other, after in moves.items():
            if other in ample or after is None:
                continue
            later = _moves(full, after)
            for action, then in after_ample.items():
                if action not in later:
                    problems.append(f"{other} disables {action}, which the reduction takes alone")
                elif (x := later[action]) != then.get(other) and x is not None and _classes([x], config) - reached:
                    problems.append(
                        f"{other} and {action} do not commute, and the reduction, taking {action} alone, "
                        f"never reaches what {other} then {action} leaves"
                    )
        problems += _two_steps_ahead(full, ample, moves, budget)
        if len(problems) >= 3:
            break
    return problems[:3]


def _alike_futures(config: Config, states: Iterable[State] | None, sample: int = ALIKE_SAMPLE) -> list[str]:
    """The quotients' own condition (outside review 65's P11): states a key puts in one class must
    have one future — the same operations enabled (by name: symmetry renames their arguments) and
    the same classes one step on, checked on up to ``sample`` classes of the full search that hold
    several of its states. A key that merges states which differ in something a guard reads (an
    erase that drops a flagged task's owner, which the inspection reads) fails here, even where the
    classes the searches reach happen to agree."""
    full = Model(dataclasses.replace(config, symmetry=False), reduce=False)
    groups: dict[Any, list[State]] = {}
    for state in states or ():
        if not state.crashed:
            groups.setdefault(_key(state, config), []).append(state)
    shared = [members for members in groups.values() if len(members) > 1]
    for members in shared[:: max(1, len(shared) // sample)]:
        futures = []
        for state in members[:4]:
            moves = _moves(full, state)
            names = sorted(action.name for action in moves)
            after = frozenset(_key(x, config) if x is not None else None for x in moves.values())
            futures.append((names, after, state))
        (names, after, first), *others = futures
        for other_names, other_after, other in others:
            if other_names != names or other_after != after:
                what = "the operations enabled" if other_names != names else "the classes one step on"
                return [
                    f"two states of one class differ in {what} (a key merges states that differ): {first} and {other}"
                ]
    return []


def _key(state: State, config: Config) -> Any:
    alike = erase(state, config.regions)
    return canonical_key(alike) if config.symmetry else alike


def _two_steps_ahead(full: Model, ample: set[Any], moves: dict[Any, State | None], budget: list[int]) -> list[str]:
    """C1 one step further (outside review 53's P1): after any two operations the reduction does not
    take, each operation it takes alone is still enabled — an isolation that only the second
    breaks (a shutdown request, then the drain that cancels the approval) is unsound all the same.
    Enabledness only, on at most ``budget[0]`` pairs of operations in all (the cost is quadratic)."""
    alone = {dataclasses.replace(a, crash_after="") for a in ample}
    for other, after in moves.items():
        if other in ample or after is None or budget[0] <= 0:
            continue
        for second, then in _moves(full, after).items():
            if second in ample or then is None:
                continue
            budget[0] -= 1
            enabled = {action for action, _ in full.operations(then)}
            for action in sorted(alone - enabled, key=str):
                return [f"{other} then {second} disable {action}, which the reduction takes alone (two steps ahead)"]
    return []


def _crash_points(model: Model, states: list[State]) -> list[str]:
    """The crash points the searches take, derived apart from :meth:`Model.outcomes` (which every
    search of the audit shares; outside review 53's P12 enumerated them only after an operation's
    first step, and the audit vouched for it): each operation's write steps but its last, after
    each one that has written something so far, must be a crash of that operation, and nothing
    else is one."""
    if not model.config.crashes:
        return []
    for s in states:
        if s.crashed:
            continue
        expected = set()
        for action, steps in model.operations(s):
            state, points = s, set()
            try:
                for number, (name, apply) in enumerate(steps):
                    state = apply(state)
                    if state != s and number < len(steps) - 1:
                        points.add((action, name))
            except IllegalTransition:
                continue  # a step breaks its machine's table: a violation, and no crash point
            expected |= points
        taken = {(_replace_action(a), a.crash_after) for a, _ in model.successors(s) if a.crash_after}
        taken.discard((_replace_action(HARNESS_CRASH), HARNESS_CRASH.crash_after))
        if taken != expected:
            missing = sorted(f"{a} ⚡ after {step}" for a, step in expected - taken)
            extra = sorted(f"{a} ⚡ after {step}" for a, step in taken - expected)
            return [f"never crashed: {missing[:3]}; crashed where nothing was written: {extra[:3]}"]
    return []


def _replace_action(action: Any) -> Any:
    return dataclasses.replace(action, crash_after="")


def _classes(states: Iterable[State] | None, config: Config) -> set[Any]:
    """The key of each state's class, as the explorer keys it: dead data erased (and the clock in
    deadline regions, :func:`spec.model._dead.erase`), then the least image under symmetry."""
    return {_key(state, config) for state in states or ()}


def _differences(reduced: Report, other: Report, only: tuple[str, str], exact: bool) -> list[str]:
    """What ``other`` found that ``reduced`` did not, and the other way round (``only`` names the
    two sides); with ``exact`` (the same search on two engines) the states found at each depth and
    the transitions too."""
    out: list[str] = []
    if exact:
        for what in ("states_by_depth", "transitions"):
            mine, theirs = getattr(reduced, what), getattr(other, what)
            if mine != theirs:
                out.append(f"{what.replace('_', ' ')}: {_short(mine)} against {_short(theirs)}")
    pairs = (
        ("violated", set(reduced.violations), set(other.violations)),
        ("edge", {" ".join(e) for e in reduced.edges_taken}, {" ".join(e) for e in other.edges_taken}),
        ("crash point", set(reduced.crashed_at), set(other.crashed_at)),
    )
    for kind, mine, theirs in pairs:
        out.extend(f"{kind} {key} found {only[1]}" for key in sorted(theirs - mine))
        out.extend(f"{kind} {key} found {only[0]}" for key in sorted(mine - theirs))
    if (reduced.deadlocks > 0) != (other.deadlocks > 0):
        out.append(f"deadlocks: {reduced.deadlocks} against {other.deadlocks}")
    return out


def _short(value: Any) -> str:
    text = f"{value:,}" if isinstance(value, int) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe(result: Audit, drifted: bool = True) -> list[str]:
    """The audit as plain lines for a terminal, under its drift (``drifted``) or alone (``--audit``).
    An unsound reduction is unsound for the model as it now stands: a change of the protocol can
    make one so as well as a bug of the checker."""
    if not result.sound:
        return [f"  CHECKER UNSOUND for the model as it now stands — {p}" for p in result.problems]
    engines = {"agree": "the two engines agree", "one engine": "one engine ran"}[result.engines]
    if result.reductions == "agree":
        how = f"the search without reductions ({result.full_states:,} states) finds the same, no state lost"
        why = "; so the drift is the protocol's behaviour, not a reduction" if drifted else ""
        return [f"  audited: {engines}; {how}{why} (what the audit cannot see: spec/audit.py)"]
    return [f"  audited: {engines}; reductions {result.reductions}: the drift is not explained"]


__all__ = ["FULL_STATES", "Audit", "audit", "describe"]
