"""Memory of the explorer with and without fingerprints (hash compaction), side by side in one run.

Each search runs in a process of its own, bounded by ``--states``, so that each peak memory is
its own. Printed per mode: states, transitions, seconds, states/s and peak memory, and the memory
one more state costs: the difference of the peaks of a search to the bound and one to half of it,
per state (start-up and the bounded caches cancel out). Then the ratios. Whether the explorer ran
compiled is printed too.
Run: ``python bench/fingerprints.py [--states N] [--json] [CONFIG]`` (default ``standard``,
1,000,000 states).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any


def child(name: str, states: int, fingerprints: bool) -> None:
    from spec import _compiled
    from spec.explore import explore
    from spec.model import Model, load_config

    started = time.perf_counter()
    report = explore(Model(load_config(name)), max_states=states, fingerprints=fingerprints)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    json.dump(
        {
            "states": report.states,
            "transitions": report.transitions,
            "complete": report.complete,
            "violations": sorted(report.violations),
            "seconds": seconds,
            "states_per_second": report.states / seconds,
            "peak_bytes": peak,
            "compiled": _compiled.ACTIVE,
        },
        sys.stdout,
    )


def measure(name: str, states: int, fingerprints: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", name, "--states", str(states)]
    out = subprocess.run([*command, *(["--fingerprints"] if fingerprints else [])], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"the {'fingerprint' if fingerprints else 'full'} search failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="explorer memory with and without fingerprints")
    parser.add_argument("config", nargs="?", default="standard")
    parser.add_argument("--states", type=int, default=1_000_000, help="bound of both searches (default 1,000,000)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fingerprints", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.config, args.states, args.fingerprints)
        return
    full = measure(args.config, args.states, False)
    compact = measure(args.config, args.states, True)
    for run, fingerprints in ((full, False), (compact, True)):
        half = measure(args.config, args.states // 2, fingerprints)
        run["bytes_per_state"] = (run["peak_bytes"] - half["peak_bytes"]) / (run["states"] - half["states"])
    if (full["states"], full["transitions"], full["violations"]) != (
        compact["states"],
        compact["transitions"],
        compact["violations"],
    ):
        raise SystemExit(f"the two searches differ: {full} against {compact}")
    ratios = {
        "memory": full["peak_bytes"] / compact["peak_bytes"],
        "memory_per_state": full["bytes_per_state"] / compact["bytes_per_state"],
        "speed": compact["states_per_second"] / full["states_per_second"],
    }
    if args.json:
        document = {"config": args.config, "full": full, "fingerprints": compact, "ratios": ratios}
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print(f"{args.config}, first {args.states:,} states, compiled: {full['compiled']}")
    for label, run in (("full", full), ("fingerprints", compact)):
        print(
            f"  {label:<13} {run['states']:>11,} states {run['transitions']:>12,} transitions "
            f"{run['seconds']:8.1f} s {run['states_per_second']:8,.0f} states/s "
            f"peak {run['peak_bytes'] / 2**20:8,.0f} MiB, {run['bytes_per_state']:,.0f} bytes a state more"
        )
    print(
        f"  fingerprints: {ratios['memory']:.2f}x less peak memory, {ratios['memory_per_state']:.2f}x less a state, "
        f"at {ratios['speed']:.2f}x the speed"
    )


if __name__ == "__main__":
    main()
