"""Explorer throughput: the reduced search against a naive one, side by side in one run.

For each configuration: distinct states, transitions, wall time and states/s with every
reduction on (partial-order reduction of outbox sends, dead-data reduction, symmetry where the
configuration allows it, crashed states kept transient) and with the naive search (none of the
first three), then the ratio of wall times. Peak memory of the whole run is printed last,
with whether the explorer ran compiled (`scripts/compile.py`; `TEAMPROTO_PURE=1` runs it interpreted).
Targets (issue 3): `standard` fully explored in ≤ 60 s, ≥ 50,000 states/s, ≤ 2 GiB.

Every run is bounded by ``--seconds`` (default 120). Where the reduced search completes and the
naive one does not (``wide`` without symmetry has millions of states), the wall-time ratio is a
lower bound (printed with ``≥``). A configuration the manifest marks ``pending`` (``standard``)
completes in neither; then the figures are the states reached, the depth completed and the rate,
and the ratio is of rates, not of wall times.
Run: ``python bench/explore.py [--json] [--seconds N] [CONFIG ...]`` (default: the default suite,
then ``standard``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import time
from typing import Any

from spec import _compiled
from spec.check import default_suite
from spec.explore import explore
from spec.model import Model, load_config


def run(name: str, naive: bool, budget: float) -> dict[str, Any]:
    config = load_config(name)
    if naive:
        config = dataclasses.replace(config, symmetry=False)
    started = time.perf_counter()

    def out_of_time() -> bool:
        return time.perf_counter() - started > budget

    report = explore(Model(config, reduce=not naive), out_of_time=out_of_time)
    seconds = time.perf_counter() - started
    return {
        "states": report.states,
        "transitions": report.transitions,
        "depth": report.depth,
        "complete": report.complete,
        "seconds": seconds,
        "states_per_second": report.states / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="explorer throughput, reduced against naive")
    parser.add_argument("configs", nargs="*", help="configurations (default: the default suite, then standard)")
    parser.add_argument("--seconds", type=float, default=120.0, help="bound of every run (default 120)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    budget = args.seconds
    results: dict[str, dict[str, Any]] = {}
    for name in args.configs or [*default_suite(), "standard"]:
        print(f"{name}: reduced search, then naive (at most {budget:.0f} s each) …", file=sys.stderr, flush=True)
        reduced, naive = run(name, False, budget), run(name, True, budget)
        results[name] = {"reduced": reduced, "naive": naive}
        if reduced["complete"]:
            results[name]["time_ratio_naive_over_reduced"] = naive["seconds"] / reduced["seconds"]
            results[name]["ratio_is_lower_bound"] = not naive["complete"]
        else:
            results[name]["rate_ratio_reduced_over_naive"] = reduced["states_per_second"] / naive["states_per_second"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(json.dumps({"configs": results, "peak_memory_mib": peak, "compiled": _compiled.ACTIVE}, indent=2))
        return
    print(
        f"{'config':<14} {'search':<8} {'states':>10} {'transitions':>12} {'depth':>5} {'seconds':>8} {'states/s':>9}"
    )
    for name, result in results.items():
        for kind in ("reduced", "naive"):
            r = result[kind]
            print(
                f"{name:<14} {kind:<8} {r['states']:>10,} {r['transitions']:>12,} {r['depth']:>5} "
                f"{r['seconds']:>8.1f} {r['states_per_second']:>9,.0f}" + ("" if r["complete"] else "  (bounded)")
            )
        if "time_ratio_naive_over_reduced" in result:
            bound = "≥ " if result["ratio_is_lower_bound"] else ""
            print(f"{name:<14} naive/reduced wall time: {bound}{result['time_ratio_naive_over_reduced']:.2f}x")
        else:
            print(
                f"{name:<14} not complete in {budget:.0f} s each; reduced/naive rate: "
                f"{result['rate_ratio_reduced_over_naive']:.2f}x"
            )
    print(f"peak memory: {peak:,.0f} MiB; explorer {'compiled' if _compiled.ACTIVE else 'interpreted'}")


if __name__ == "__main__":
    main()
