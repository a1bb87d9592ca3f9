"""Explorer throughput: the reduced search against a naive one, side by side in one run.

For each configuration: distinct states, transitions, wall time and states/s with every
reduction on (partial-order reduction of outbox sends, symmetry where the configuration allows
it, crashed states kept transient) and with the naive search (no partial-order reduction, no
symmetry), then the ratio of wall times. Peak memory of the whole run is printed last.
Targets (issue 3): `standard` fully explored in ≤ 60 s, ≥ 50,000 states/s, ≤ 2 GiB.
Run: ``python bench/explore.py [--json] [CONFIG ...]`` (default: the whole manifest).
"""

from __future__ import annotations

import dataclasses
import json
import resource
import sys
import time

from spec.explore import explore
from spec.model import Model, load_config, manifest


def run(name: str, naive: bool) -> dict[str, float]:
    config = load_config(name)
    if naive:
        config = dataclasses.replace(config, symmetry=False)
    started = time.perf_counter()
    report = explore(Model(config, reduce=not naive))
    seconds = time.perf_counter() - started
    return {
        "states": report.states,
        "transitions": report.transitions,
        "seconds": seconds,
        "states_per_second": report.states / seconds,
    }


def main() -> None:
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(manifest())
    results = {}
    for name in names:
        reduced, naive = run(name, False), run(name, True)
        results[name] = {
            "reduced": reduced,
            "naive": naive,
            "time_ratio_naive_over_reduced": naive["seconds"] / reduced["seconds"],
        }
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if "--json" in sys.argv:
        print(json.dumps({"configs": results, "peak_memory_mib": peak}, indent=2))
        return
    print(f"{'config':<10} {'search':<8} {'states':>9} {'transitions':>12} {'seconds':>8} {'states/s':>9}")
    for name, result in results.items():
        for kind in ("reduced", "naive"):
            r = result[kind]
            print(
                f"{name:<10} {kind:<8} {r['states']:>9,} {r['transitions']:>12,} {r['seconds']:>8.1f} "
                f"{r['states_per_second']:>9,.0f}"
            )
        print(f"{name:<10} naive/reduced wall time: {result['time_ratio_naive_over_reduced']:.2f}x")
    print(f"peak memory: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
