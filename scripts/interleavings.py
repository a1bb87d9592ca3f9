"""Print, per pair of racing operations and backend, how many interleavings the explorer covers.

    .venv/bin/python scripts/interleavings.py

Columns: every schedule from start to end (root-to-end paths of the explored DAG), the distinct
states expanded, the distinct final outcomes, the runs (replays) it took, the seconds, and whether
every outcome is some serial order's and every invariant holds — known defects told apart.
"""

from __future__ import annotations

import time

from model_tests import interleave
from model_tests.interleave_pairs import PAIRS


def verdict(
    scenario: interleave.Scenario, store: str, found: interleave.Exploration, serials: list[interleave.Outcome]
) -> str:
    try:
        interleave.require_serialisable(scenario, store, found.outcomes, serials, results=True)
    except interleave.RawConflict:
        return "known defect 1: a loser gets a raw VersionConflict"
    except interleave.ReconcileRace:
        return "known defect 2: reconciliation races a live operation"
    except AssertionError:
        return "NOT SERIALISABLE"
    return "serialisable"


def invariants(scenario: interleave.Scenario, found: interleave.Exploration) -> str:
    return "BROKEN" if any(outcome.problems for outcome in found.outcomes) else "hold"


def main() -> None:
    header = f"{'pair':23} {'backend':8} {'schedules':>10} {'states':>7} {'ends':>5} {'runs':>5} {'seconds':>8}"
    header += "  outcomes; invariants"
    print(header)
    for name, scenario in PAIRS.items():
        for backend in ("memory", "sqlite"):
            store = interleave.backend(backend)
            started = time.perf_counter()
            found = interleave.explore(scenario, store)
            serials = [interleave.serial(scenario, store, order) for order in interleave.serial_orders(scenario)]
            seconds = time.perf_counter() - started
            print(
                f"{name:23} {backend:8} {found.interleavings:>10,} {found.nodes:>7} {len(found.ends):>5} "
                f"{found.runs:>5} {seconds:>8.2f}  {verdict(scenario, backend, found, serials)}; "
                f"{invariants(scenario, found)}"
            )
            store.close()


if __name__ == "__main__":
    main()
