"""The explorer's and the simulator's results and the simulator's plan: plain, interpreted records
(see ``spec/_compiled.py``: records that are pickled between processes or compared by value
stay out of the compiled modules). :mod:`spec.explore` and :mod:`spec.simulate` export them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._tables import machine_table
from .machines import MACHINES
from .model._action import Action
from .model._config import Config
from .model._ops import CRASH_POINTS
from .model._state import State

CRASH_RATE = 0.1
"""How often a simulated step is a crash when its operation has crash points (0.1: one step in ten)."""


@dataclass
class Violation:
    clause: str
    invariant: str
    message: str
    trace: list[tuple[Action | None, State]]
    shortest: bool = True  # found breadth-first; a simulation's walk is not
    walk_length: int = 0  # a simulation's: the length of the walk that found it, before shrinking
    offending: Action | None = None  # a simulation's: the action that broke a table, after the trace

    def to_json(self, config: Config) -> dict[str, Any]:
        from .explore import trace_json

        return trace_json(self, config)


@dataclass
class Report:
    config: str
    mutant: str | None
    states: int = 0
    transitions: int = 0
    depth: int = 0
    states_by_depth: list[int] = field(default_factory=list)  # distinct states first reached at each depth
    expanded_through: int = -1  # every state up to this depth was expanded (all of them if complete)
    complete: bool = True
    violations: dict[str, Violation] = field(default_factory=dict)
    edges_taken: set[tuple[str, str, str]] = field(default_factory=set)
    crashed_at: set[str] = field(default_factory=set)
    deadlocks: int = 0
    liveness_checked: bool = False
    require_coverage: bool = True
    simulation: bool = False  # random walks (spec.simulate), not an exhaustive search
    walks: int = 0
    seed: int | None = None
    crash_rate: float | None = None
    fingerprints: bool = False  # hash compaction: the visited set held 64-bit hashes of the keys
    unreached_bounds: list[str] = field(default_factory=list)  # spec.model._bounds: bounds no state reached

    @property
    def omission_bound(self) -> float:
        """With fingerprints, a bound on the chance that some state went unexplored because its
        key's 64-bit hash equals an earlier key's: n(n-1)/2 pairs, each colliding with chance
        2^-64 for a uniform hash. 0 without fingerprints: the visited set compares whole keys."""
        return min(1.0, self.states * (self.states - 1) / 2**65) if self.fingerprints else 0.0

    @property
    def missing_edges(self) -> list[tuple[str, str, str]]:
        return sorted(
            (name, e.source, e.target)
            for name in MACHINES
            for e in machine_table(name).edges
            if (name, e.source, e.target) not in self.edges_taken
        )

    @property
    def missing_crash_points(self) -> list[str]:
        return [point for point in CRASH_POINTS if point not in self.crashed_at]

    def findings(self) -> tuple[Any, ...]:
        """What the run found, comparable between two searches of one model: the checks violated,
        the edges taken, the crash points crashed, whether it deadlocked, whether liveness ran."""
        return (
            sorted(self.violations),
            sorted(self.edges_taken),
            sorted(self.crashed_at),
            self.deadlocks > 0,
            self.liveness_checked,
        )

    @property
    def ok(self) -> bool:
        coverage_ok = not self.require_coverage or not (self.missing_edges or self.missing_crash_points)
        return self.complete and not self.violations and coverage_ok


@dataclass(frozen=True)
class Plan:
    """What a simulation runs: ``walks`` walks of at most ``depth`` steps each."""

    walks: int = 3000
    depth: int = 100
    seed: int = 0
    crash_rate: float = CRASH_RATE
    shrink: bool = True  # shrink each counterexample found (see :func:`shrink`)
