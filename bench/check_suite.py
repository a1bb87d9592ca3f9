"""The default ``teamproto check`` run by run: CPU seconds, states and states per CPU-second of each
configuration, and the wall time the suite needs on N workers (issue 18 item 6: ≤ 60 s on 2).

CPU time (``time.process_time``) rather than wall time, so that the figures hold on a machine
shared with other work; the wall time on N workers is the longest-first schedule of those CPU
seconds (what ``teamproto check`` does), a lower bound of the real run. Each run is the checker's
own (:func:`spec.check.run_config`), one after another in this process.

Run: ``python bench/check_suite.py [--workers N] [--json] [CONFIG[:MAX_TICKS] ...]`` (default: the
default suite, then the simulated configurations; ``pair:1`` runs ``pair`` with one tick).
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spec import _compiled
from spec.check import default_suite, pending_configs, run_config
from spec.model import load_config
from spec.simulate import Plan


def measure(name: str, simulate: bool) -> dict[str, Any]:
    base, _, ticks = name.partition(":")
    config = load_config(base)
    if ticks:
        config = dataclasses.replace(config, max_ticks=int(ticks))
    started = time.process_time()
    report, _ = run_config(config, None, plan=Plan() if simulate else None)
    cpu = time.process_time() - started
    return {
        "config": name,
        "mode": "simulation" if simulate else "exhaustive",
        "states": report.states,
        "transitions": report.transitions,
        "cpu_seconds": round(cpu, 2),
        "states_per_cpu_second": round(report.states / max(cpu, 1e-9)),
        "checks_held": report.complete and not report.violations,
    }


def schedule(seconds: list[float], workers: int) -> float:
    """The wall time of running jobs of these lengths longest first on ``workers`` processes."""
    ends = [0.0] * workers
    for length in sorted(seconds, reverse=True):
        heapq.heapreplace(ends, ends[0] + length)
    return max(ends)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    jobs = [(n, False) for n in args.configs] or [(n, False) for n in default_suite()]
    jobs += [] if args.configs else [(n, True) for n in pending_configs()]
    rows = []
    for name, simulate in jobs:
        rows.append(measure(name, simulate))
        if not args.json:
            r = rows[-1]
            print(
                f"{r['config']:<16} {r['mode']:<10} {r['states']:>9,} states {r['transitions']:>10,} transitions "
                f"{r['cpu_seconds']:>7.1f} CPU s {r['states_per_cpu_second']:>7,} states/CPU s",
                flush=True,
            )
    total = sum(r["cpu_seconds"] for r in rows)
    wall = schedule([r["cpu_seconds"] for r in rows], args.workers)
    summary = {
        "runs": rows,
        "cpu_seconds": round(total, 1),
        "workers": args.workers,
        "wall_lower_bound": round(wall, 1),
    }
    summary["compiled"] = _compiled.ACTIVE
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        kind = "compiled" if _compiled.ACTIVE else "interpreted"
        print(f"total {total:.1f} CPU s ({kind}); on {args.workers} workers at least {wall:.1f} s (target ≤ 60 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
