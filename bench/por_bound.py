"""How much could partial-order reduction of interleaved steps shrink a configuration, at most?

Not a check and not sound: an upper bound, to decide whether stubborn sets are worth building
(issue 3). From each consistent state it takes a group of operations alone whenever every
operation of the group commutes, right there, with every other enabled operation (both orders
enabled, same state) — the commutation is tested only against the operations enabled now (no C1
over future states), no visibility condition for the invariants, no cycle proviso, and the crash
variants of the other operations are deferred like them. A sound reduction can only keep more
states. Groups: every operation of one member (``member``; approval and plan slots count for
their requester), or one operation alone (``single``). States are counted as the explorer keys
them (dead data erased, symmetry where the configuration has it); no invariant is checked.

Beside them it counts what the sound reduction of ``spec.model._por`` (isolated approvals and plans
taken alone, on by default in ``Model``) keeps: ``full`` and ``bound`` are counted without it.

Run: ``python bench/por_bound.py [--groups member|single] [--seconds N] [--ticks N] [--set F=V ...]
CONFIG ...``; prints the full count, the sound reduction's count, the bound, their ratios and
times, side by side in one run (``--ticks`` overrides the configuration's clock bound, e.g. 0 for
``standard``; ``--set`` counts a variant, as ``bench/count_states.py`` does). Under deadline
regions (``max_ticks`` null) states are keyed by their regions, as the explorer keys them.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from spec._tables import IllegalTransition
from spec.model import Model, load_config
from spec.model._dead import erase
from spec.model._model import Action, Operation
from spec.model._state import State, replace
from spec.model._symmetry import canonical_key


def _owner(s: State, action: Action) -> int | None:
    args = dict(action.args)
    if "member" in args:
        return int(args["member"])
    if "slot" in args and action.name.startswith("approval."):
        return s.approvals[args["slot"]].requester
    if "slot" in args and action.name.startswith("plan."):
        return s.plans[args["slot"]].requester
    return None


def _apply(s: State, operation: Operation) -> State:
    for _, step in operation[1]:
        s = step(s)
    return s


def _commutes(model: Model, s: State, a: Operation, b: Operation) -> bool:
    after_a, after_b = _apply(s, a), _apply(s, b)
    then_b = dict(model.operations(after_a)).get(b[0])
    then_a = dict(model.operations(after_b)).get(a[0])
    return (
        then_b is not None and then_a is not None and _apply(after_a, (b[0], then_b)) == _apply(after_b, (a[0], then_a))
    )


def _alone(model: Model, s: State, groups: str) -> set[Action] | None:
    """The actions of the first group that commutes with everything else enabled, or None."""
    operations = list(model.operations(s))
    if groups == "single":
        candidates = [[op] for op in operations]
    else:
        by_member: dict[int, list[Operation]] = {}
        for op in operations:
            m = _owner(s, op[0])
            if m is not None:
                by_member.setdefault(m, []).append(op)
        candidates = sorted(by_member.values(), key=len)
    for group in candidates:
        names = {op[0] for op in group}
        if len(names) == len(operations):
            continue
        try:
            if all(_commutes(model, s, a, b) for a in group for b in operations if b[0] not in names):
                return names
        except IllegalTransition:
            continue
    return None


def count(
    name: str,
    groups: str | None,
    budget: float,
    *,
    sound: bool = False,
    ticks: int | None = None,
    settings: list[str] | None = None,
) -> tuple[int, bool, float]:
    from count_states import variant  # bench/count_states.py, beside this script

    config = variant(name, settings or []) if settings else load_config(name)
    if ticks is not None:
        config = dataclasses.replace(config, max_ticks=ticks)
    model = Model(config, independence=sound)
    regions = config.regions
    key: Callable[[State], Hashable] = (
        (lambda x: canonical_key(erase(x, regions))) if model.config.symmetry else (lambda x: erase(x, regions))
    )
    start = model.initial()
    seen, queue = {key(start)}, deque([start])
    began = time.perf_counter()
    while queue:
        if time.perf_counter() - began > budget:
            return len(seen), False, time.perf_counter() - began
        s = queue.popleft()
        successors: list[tuple[Action, Any]] = list(model.successors(s))
        alone = _alone(model, s, groups) if groups and not s.crashed else None
        if alone is not None:
            successors = [(a, x) for a, x in successors if replace(a, crash_after="") in alone]
        for _, after in successors:
            if isinstance(after, State) and after.crashed:
                after = next(model.successors(after))[1]
            if isinstance(after, State) and key(after) not in seen:
                seen.add(key(after))
                queue.append(after)
    return len(seen), True, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--groups", choices=("member", "single"), default="member")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--ticks", type=int, default=None)
    parser.add_argument("--no-bound", action="store_true", help="count full and sound only")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="count a variant")
    options = parser.parse_args()
    ticks, settings = options.ticks, options.set
    print(f"{'config':14s} {'full':>10s} {'s':>6s} {'sound':>10s} {'s':>6s} {'ratio':>7s} {'bound':>10s} {'ratio':>7s}")
    for name in options.configs:
        full, full_done, full_time = count(name, None, options.seconds, ticks=ticks, settings=settings)
        sound, sound_done, sound_time = count(name, None, options.seconds, sound=True, ticks=ticks, settings=settings)
        bound, bound_done = (sound, sound_done)
        if not options.no_bound:
            bound, bound_done, _ = count(name, options.groups, options.seconds, ticks=ticks, settings=settings)
        note = "" if full_done and sound_done and bound_done else "  (bounded: not complete; counts within the time)"
        print(
            f"{name:14s} {full:10,d} {full_time:6.1f} {sound:10,d} {sound_time:6.1f} {full / sound:6.2f}x"
            + (f" {'-':>10s} {'-':>7s}" if options.no_bound else f" {bound:10,d} {full / bound:6.2f}x")
            + f"{note}  (groups: {options.groups})",
            flush=True,
        )


if __name__ == "__main__":
    main()
