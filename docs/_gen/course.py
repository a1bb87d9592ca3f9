"""Small helpers the course's examples call; each is a thin layer over the real spec and model.

Every example of ``docs/course/*.md`` runs in the test run (``tests/test_docs.py``), so an
example whose output no longer matches the code fails the tests instead of rotting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spec.explore import explore
from spec.model import MUTANTS, Model, load_config

from .traces import Snapshot, action_text, shortest_path


def counterexample(mutant: str) -> None:
    """Print the explorer's shortest trace against model mutant ``mutant``: the broken invariant,
    then one numbered action per line (⚡ marks a crash)."""
    info = MUTANTS[mutant]
    report = explore(Model(load_config(info.config), mutant), stop_on=info.caught_by)
    first = next(iter(report.violations.values()))
    violation = next((v for v in report.violations.values() if v.clause == info.caught_by), first)
    print(f"{mutant} breaks {info.breaks}; {violation.clause} {violation.invariant}: {violation.message}")
    for number, (action, _) in enumerate(violation.trace):
        print(f"{number:>2}. {action_text(None if action is None else action.to_json())}")


def shortest(config: str, goal: Callable[[Snapshot], bool]) -> None:
    """Print the shortest crash-free run of ``config`` to a state meeting ``goal``."""
    for number, (action, _) in enumerate(shortest_path(config, goal)):
        print(f"{number:>2}. {action_text(None if action is None else action.to_json())}")


def statuses(snap: Snapshot, kind: str) -> list[Any]:
    """The status of every record of one kind in a snapshot."""
    return [record["status"] for record in snap[kind]]
