"""What a drift of a configuration's pinned counts means in behaviour (issue 19). Pure: no I/O.

A changed state count says that *something* changed. To say what, the manifest pins, per
configuration, its reachable *behaviour* besides its counts: every operation taken, every crash
point crashed and every machine edge taken (keys ``op NAME``, ``crash STEP``,
``edge MACHINE SOURCE -> TARGET``), and how many deadlocks it has. :func:`explain` compares a
search with that pin: what became reachable (each with the shortest witness the breadth-first
search found), what is no longer reachable, and the deadlocks added or removed. A drift is a change
of the protocol's behaviour to review, never a pass. :func:`outgrown` tells a search that grew far
past its pin (a bug that makes it infinite) from one that merely drifted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .model._model import DEADLINE_EDGES, REQUEST_EXPIRY, deadline_edge

GROWTH = 2
"""A configuration's search stops at this many times its pinned state count: past it, the growth is
reported as a finding (with the actions to the last state found) instead of running on."""


BOUNDARY_KEYS = frozenset(
    f"edge {m} {s} -> {t}" for m, s, t in (*(deadline_edge(*e) for e in DEADLINE_EDGES), REQUEST_EXPIRY)
)
"""The witness keys of deadline edges taken on their boundary, and of the monitor's expiry of an
unread request message (no machine edge of its own): not pinned as behaviour. Their own verdict
(``deadline_boundaries_reached``: every such edge a run takes, it takes on its boundary too)
already ties each boundary to its edge, which is pinned; the unread expiry is the message edge
``pending -> expired``, pinned."""


def behaviour(report: Any) -> list[str]:
    """The sorted behaviour keys a finished search showed (``report.witnesses`` holds one per key)."""
    return sorted(key for key in report.witnesses if key not in BOUNDARY_KEYS)


def pin(report: Any) -> dict[str, Any]:
    """The manifest entry of a complete search: its counts and its behaviour."""
    return {
        "states": report.states,
        "transitions": report.transitions,
        "deadlocks": report.deadlocks,
        "reachable": behaviour(report),
    }


def state_bound(pinned: Mapping[str, Any]) -> int | None:
    """The most states a search of a pinned configuration may find before it is stopped as outgrown."""
    states = pinned.get("states")
    return None if states is None else GROWTH * int(states)


@dataclass
class Drift:
    config: str
    states: tuple[int, int]  # (pinned, found)
    transitions: tuple[int, int]
    deadlocks: tuple[int, int]
    gained: dict[str, list[str]] = field(default_factory=dict)  # key -> shortest witness (actions)
    lost: list[str] = field(default_factory=list)
    unpinned: bool = False  # the manifest pins no behaviour for it yet: only counts can be compared

    @property
    def drifted(self) -> bool:
        return (
            self.states[0] != self.states[1]
            or self.transitions[0] != self.transitions[1]
            or self.deadlocks[0] != self.deadlocks[1]
            or bool(self.gained or self.lost)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "states": {"pinned": self.states[0], "found": self.states[1]},
            "transitions": {"pinned": self.transitions[0], "found": self.transitions[1]},
            "deadlocks": {"pinned": self.deadlocks[0], "found": self.deadlocks[1]},
            "newly_reachable": [{"behaviour": key, "witness": trace} for key, trace in self.gained.items()],
            "no_longer_reachable": self.lost,
            "behaviour_pinned": not self.unpinned,
            "verdict": "a change of behaviour to review, not a pass",
        }


def explain(config: str, pinned: Mapping[str, Any], report: Any) -> Drift:
    """Compare a complete search of ``config`` with its manifest entry ``pinned``."""
    reachable = pinned.get("reachable")
    found = set(behaviour(report))
    drift = Drift(
        config,
        (pinned["states"], report.states),
        (pinned["transitions"], report.transitions),
        (int(pinned.get("deadlocks", 0)), report.deadlocks),
        unpinned=reachable is None,
    )
    if reachable is not None:
        drift.gained = {key: report.witnesses[key] for key in sorted(found - set(reachable))}
        drift.lost = sorted(set(reachable) - found)
    return drift


def describe(drift: Drift) -> list[str]:
    """The drift as plain lines for a terminal."""
    lines = [
        f"{drift.config} drifted from the manifest — a change of behaviour to review, not a pass: "
        f"states {drift.states[0]:,} -> {drift.states[1]:,}, transitions {drift.transitions[0]:,} -> "
        f"{drift.transitions[1]:,}, deadlocks {drift.deadlocks[0]} -> {drift.deadlocks[1]}"
    ]
    if drift.unpinned:
        lines.append("  the manifest pins no behaviour for it: run scripts/pin_manifest.py to pin it")
    for key, witness in drift.gained.items():
        lines.append(f"  newly reachable: {key}")
        lines.append(f"    shortest witness: {' ; '.join(witness) or '(the initial state)'}")
    lines.extend(f"  no longer reachable: {key}" for key in drift.lost)
    if not drift.gained and not drift.lost and not drift.unpinned:
        lines.append("  the same operations, crash points and edges are reachable: only how they interleave changed")
    return lines


def outgrown(config: str, pinned: Mapping[str, Any], report: Any) -> str | None:
    """A finding when a search stopped at :func:`state_bound`, with the actions to its last state."""
    bound = state_bound(pinned)
    if bound is None or report.complete or report.states < bound:
        return None
    text = (
        f"{config} outgrew its pinned {pinned['states']:,} states {GROWTH}-fold and was stopped (a bug that "
        f"makes its search infinite?); the last state found, at depth {report.depth}: "
        f"{' ; '.join(report.frontier)}"
    )
    gained = sorted(set(behaviour(report)) - set(pinned.get("reachable", behaviour(report))))
    for key in gained:
        text += f"\n  newly reachable: {key}\n    shortest witness: {' ; '.join(report.witnesses[key])}"
    return text


__all__ = ["GROWTH", "Drift", "behaviour", "describe", "explain", "outgrown", "pin", "state_bound"]
