"""Bounds that mean what they say: every dimension of a configuration must be able to change a verdict.

A configuration names its bounds (members, tasks, slots, ticks, incarnations, flags …). A bound
that no reachable state ever reaches costs states and buys nothing: with ``max_ticks=1`` and
``ttl_ticks=1`` no deadline can pass, yet the tick multiplies the state space by some 6×. So each
bound has a *witness*, a fact of one reachable state that shows the bound in use:

- ``tasks``, ``approvals``, ``plans``, ``shutdowns``: some state has that many of them in use (a
  task ever claimed, a slot's record created);
- ``max_ticks`` (above 0, or null: unbounded time in deadline regions): some deadline passes — a
  live record (approval requested or approved, plan pending or approved, run running, shutdown
  requested or draining) is past its deadline, or a claimed task's unit of work (SHD-9) is. A
  configuration that checks liveness also uses its ticks without that: the clock bound decides which
  requests count as settled by time (``Model.is_goal``), so the states before the last tick are
  checked for livelocks under the stricter goal (a configuration in deadline regions has no clock
  bound: its deadlines must pass);
- ``unit_ticks`` (when it can pass within ``max_ticks``): some claimed task's unit passes;
- ``plan_steps``: some plan execution approves that many steps;
- ``crashes``: some state is a crashed one; ``jobs``: some job starts; ``lapses``: some member's
  heartbeat lapses;
- ``max_incarnation``, ``profile_changes``, ``max_retractions``: some state reaches the bound.

``members``, ``ttl_ticks`` (read through the deadlines) and the search options (symmetry,
liveness, coverage) have no witness of their own. :func:`unreached_bounds` reads the facts from
the states a search explored; :func:`witness_search` searches breadth-first only until every
bound has its witness (then walks at random, seeded), which is cheap for a configuration whose bounds
are all in use. Pure: no clock, no I/O, seeded randomness.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._config import Config
from ._dead import erase
from ._state import State
from ._symmetry import canonical_key

CRASH_RATE = 0.1
"""How often a witness walk crashes a step when it can (as :data:`spec.simulate`'s walks do)."""

_LIVE_BY_DEADLINE = {
    "approvals": ("requested", "approved"),
    "plans": ("pending", "approved"),
    "runs": ("running",),
    "shutdowns": ("requested", "draining"),
}


def deadline_passed(config: Config, s: State) -> bool:
    """Some live record of ``s`` is past its deadline, or some claimed task's unit of work is."""
    for name, live in _LIVE_BY_DEADLINE.items():
        for record in getattr(s, name):
            if record.status in live and s.clock > record.deadline:
                return True
    return unit_passed(config, s)


def unit_passed(config: Config, s: State) -> bool:
    if not config.units:
        return False
    return any(
        t.status == "suspended" or (t.status == "claimed" and s.clock >= t.claimed_at + config.unit_ticks)
        for t in s.tasks
    )


@dataclass
class BoundUse:
    """The largest use of each bound seen so far, over the states observed."""

    config: Config
    most: dict[str, int] = field(default_factory=dict)

    def observe(self, s: State) -> None:
        c, most = self.config, self.most
        facts = {
            "tasks": sum(1 for t in s.tasks if t.claims > 0 or t.status != "pending"),
            "approvals": sum(1 for a in s.approvals if a.status),
            "plans": sum(1 for p in s.plans if p.status),
            "shutdowns": sum(1 for d in s.shutdowns if d.status),
            "max_ticks": (c.max_ticks or 1) if deadline_passed(c, s) else 0,
            "unit_ticks": 1 if unit_passed(c, s) else 0,
            "plan_steps": max((r.cursor for r in s.runs), default=0),
            "crashes": int(s.crashed),
            "jobs": int(any(j.status for j in s.jobs)),
            "lapses": int(any(m.status == "unhealthy" for m in s.members)),
            "max_incarnation": max((m.incarnation for m in s.members), default=0),
            "profile_changes": s.profile_changes,
            "max_retractions": max((p.retractions for p in s.plans), default=0),
        }
        for name, value in facts.items():
            if value > most.get(name, 0):
                most[name] = value

    def wanted(self) -> dict[str, int]:
        """Bound name → the use that witnesses it (bounds without a witness to find left out)."""
        c = self.config
        wanted = {
            "tasks": c.tasks,
            "approvals": c.approvals,
            "plans": c.plans,
            "shutdowns": c.shutdowns,
            "max_ticks": 1 if c.max_ticks is None else 0 if c.liveness else c.max_ticks,
            "unit_ticks": int(c.units),
            "plan_steps": c.plan_steps if c.plans else 0,
            "crashes": int(c.crashes),
            "jobs": int(c.jobs),
            "lapses": int(c.lapses),
            "max_incarnation": c.max_incarnation,
            "profile_changes": c.profile_changes,
            "max_retractions": c.max_retractions if c.plans else 0,
        }
        return {name: value for name, value in wanted.items() if value > 0}

    def done(self) -> bool:
        """Every bound has its witness."""
        return all(self.most.get(name, 0) >= value for name, value in self.wanted().items())

    def unreached(self) -> list[str]:
        """One line per bound no observed state reached: what it is set to and what never happened."""
        return [
            f"{name}={getattr(self.config, name)}: {_WHAT[name]} (at most {self.most.get(name, 0)} seen)"
            for name, value in self.wanted().items()
            if self.most.get(name, 0) < value
        ]


_WHAT = {
    "tasks": "no reachable state has every task claimed at least once",
    "approvals": "no reachable state uses every approval slot",
    "plans": "no reachable state uses every plan slot",
    "shutdowns": "no reachable state uses every shutdown slot",
    "max_ticks": "no deadline ever passes, so the clock changes no verdict (set max_ticks to 0, or ttl_ticks below it)",
    "unit_ticks": "no claimed task's unit of work (SHD-9) ever passes",
    "plan_steps": "no plan execution approves that many steps",
    "crashes": "no state crashes",
    "jobs": "no job ever starts",
    "lapses": "no member's heartbeat ever lapses",
    "max_incarnation": "no member reaches that incarnation",
    "profile_changes": "the capability profile never changes that often",
    "max_retractions": "no plan is retracted that often",
}


def unreached_bounds(config: Config, states: Iterable[State], crashed: bool = False) -> list[str]:
    """The bounds of ``config`` that none of ``states`` reaches (``crashed``: the search that found
    them crashed somewhere — an explorer keeps crashed states out of its stored states)."""
    use = BoundUse(config)
    if crashed:
        use.most["crashes"] = 1
    for s in states:
        use.observe(s)
        if use.done():  # every bound has its witness: the other states cannot change the verdict
            break
    return use.unreached()


def witness_search(model: object, max_states: int, walks: int = 2000, depth: int = 60) -> tuple[list[str], bool]:
    """Look for every bound's witness in the states of ``model`` (a :class:`spec.model.Model`):
    breadth-first from its initial state until every bound has one or ``max_states`` states were
    seen; then, for a configuration too large for that, ``walks`` seeded random walks of at most
    ``depth`` steps (deep witnesses, such as a plan's approved step, lie beyond any affordable
    breadth). Returns the bounds still unreached and whether the search was exhaustive (then
    they are unreachable; otherwise unreached by this search)."""
    from ._model import Model

    assert isinstance(model, Model)
    use = BoundUse(model.config)
    start = model.initial()

    def key(s: State) -> object:  # the explorer's reductions: dead data, then symmetry
        alike = erase(s, model.config.regions)
        return canonical_key(alike) if model.config.symmetry else alike

    seen = {key(start)}
    queue = deque([start])
    use.observe(start)
    while queue and not use.done() and len(seen) < max_states:
        for _, after in model.successors(queue.popleft()):
            if isinstance(after, State) and key(after) not in seen:
                seen.add(key(after))
                queue.append(after)
                use.observe(after)
    if not queue or use.done():
        return use.unreached(), not queue
    chooser = random.Random(0)
    for _ in range(walks):
        state = start
        for _ in range(depth):
            moves = [(bool(a.crash_after), after) for a, after in model.successors(state)]
            whole = [after for crash, after in moves if not crash and isinstance(after, State)]
            crashes = [after for crash, after in moves if crash and isinstance(after, State)]
            pick = crashes if crashes and (not whole or chooser.random() < CRASH_RATE) else whole
            if not pick or use.done():
                break
            state = chooser.choice(pick)
            use.observe(state)
    return use.unreached(), False


__all__ = ["BoundUse", "deadline_passed", "unreached_bounds", "witness_search"]
