"""Stateful model tests: valid examples per second, incremental checking beside full, one run.

Runs the approval comparison (``model_tests/test_stateful.py``, 50 steps per example at most) on
memory and on SQLite, each with the incremental snapshots and checks (``model_tests/incremental.py``)
and with the full ones (``TEAMPROTO_STATEFUL_FULL=1``: every snapshot built whole, every check run,
as before issue 18 item 9). Valid examples are counted as always, from Hypothesis' statistics
(passing + failing; invalid ones apart). In each round both modes run the same seed
(``TEAMPROTO_BENCH_SEED``, the round's number; each run with an empty example database), so they
run the very same programs, in alternating order, and each round other programs (the profiles
derandomize: ``--hypothesis-seed`` alone would change nothing); the rate is
valid examples per second of the test's call phase (``bench/stateful_timer.py``), in CPU seconds
(steady on a shared machine) and wall seconds. Prints each mode's median over the rounds with its
spread, and the median of the per-round ratios.
Target (issue 5, issue 18 item 9): ≥ 50 valid examples/s on memory at 50 steps; invalid share ≤ 20 %.
``--breakdown`` adds one timed run of the memory case that says where its CPU time goes
(``bench/stateful_breakdown.py``: Hypothesis' parts, the reference's, the model's, the checks').
``--operations`` adds one run of the memory case that counts, per example, each operation drawn
and each protocol operation's outcome (``bench/stateful_ops.py``): how the steps are spent.
Run: ``python bench/stateful.py [--json] [--breakdown] [--operations] [--rounds N] [EXAMPLES]``
(default 3 rounds of 200).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "memory": "model_tests/test_stateful.py::TestApprovalProtocol",
    "sqlite": "model_tests/test_stateful.py::TestApprovalProtocolSqlite",
}
MODES = {"full": "1", "incremental": ""}


def measure(
    case: str, mode: str, examples: int, seed: int, breakdown: bool = False, operations: bool = False
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        times, parts, counts = (Path(folder) / name for name in ("times.jsonl", "parts.jsonl", "ops.jsonl"))
        env = {
            **os.environ,
            "HYPOTHESIS_PROFILE": "bench",
            "TEAMPROTO_BENCH_EXAMPLES": str(examples),
            "TEAMPROTO_STATEFUL_FULL": MODES[mode],
            "TEAMPROTO_BENCH_TIMES": str(times),
            "TEAMPROTO_BENCH_SEED": str(seed),
            "TEAMPROTO_BENCH_BREAKDOWN": str(parts) if breakdown else "",
            "TEAMPROTO_BENCH_OPERATIONS": str(counts) if operations else "",
            "HYPOTHESIS_STORAGE_DIRECTORY": str(Path(folder) / "hypothesis"),  # no saved examples replayed
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")])),
        }
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "stateful_timer"]
        command += ["-p", "stateful_breakdown"] if breakdown else []
        command += ["-p", "stateful_ops"] if operations else []
        command += ["--hypothesis-show-statistics", CASES[case]]
        started = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
        process_seconds = time.perf_counter() - started
        timed, shares, tallies = (_lines(path) for path in (times, parts, counts))
    found = re.findall(r"(\d+) passing, (\d+) failing, and (\d+) invalid", result.stdout)
    passing, failing, invalid = (int(x) for x in found[-1]) if found else (0, 0, 0)
    total, valid = passing + failing + invalid, passing + failing
    cpu, wall = (timed[0]["cpu"], timed[0]["wall"]) if timed else (float("nan"), float("nan"))
    return (
        {
            "valid_examples": valid,
            "invalid_examples": invalid,
            "cpu_seconds": cpu,
            "wall_seconds": wall,
            "process_wall_seconds": process_seconds,
            "valid_per_cpu_second": valid / cpu,
            "valid_per_wall_second": valid / wall,
            "invalid_share": invalid / total if total else 0.0,
            "exit_code": result.returncode,
        }
        | ({"parts": shares[0]["parts"]} if shares else {})
        | ({"operations": tallies[0]} if tallies else {})
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file a plugin wrote (none if it wrote nothing)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def summary(runs: list[dict[str, float]], field: str) -> dict[str, float]:
    values = [run[field] for run in runs]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    arguments = sys.argv[1:]
    rounds = int(arguments[arguments.index("--rounds") + 1]) if "--rounds" in arguments else 3
    numbers = [int(a) for i, a in enumerate(arguments) if a.isdigit() and (i == 0 or arguments[i - 1] != "--rounds")]
    examples = numbers[0] if numbers else 200
    runs: dict[str, dict[str, list[dict[str, float]]]] = {case: {mode: [] for mode in MODES} for case in CASES}
    for number in range(rounds):
        for case in CASES:
            for mode in MODES if number % 2 == 0 else reversed(MODES):  # alternating order
                runs[case][mode].append(measure(case, mode, examples, seed=number))
    results: dict[str, Any] = {"rounds": rounds, "examples": examples, "cases": {}}
    for case, modes in runs.items():
        results["cases"][case] = {
            mode: {field: summary(r, field) for field in ("valid_per_cpu_second", "valid_per_wall_second")}
            | {"runs": r}
            for mode, r in modes.items()
        }
        ratios = [
            i["cpu_seconds"] and f["cpu_seconds"] / i["cpu_seconds"] for f, i in zip(*modes.values(), strict=True)
        ]
        results["cases"][case]["speedup_cpu"] = {
            "median": statistics.median(ratios),
            "min": min(ratios),
            "max": max(ratios),
        }
    if "--breakdown" in arguments:
        results["breakdown"] = measure("memory", "incremental", examples, seed=0, breakdown=True)
    if "--operations" in arguments:
        results["operations"] = measure("memory", "incremental", examples, seed=0, operations=True)
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
        return
    report(results)
    if "breakdown" in results:
        report_breakdown(results["breakdown"])
    if "operations" in results:
        report_operations(results["operations"])


def _spread(values: dict[str, float]) -> str:
    return f"{values['median']:6.1f} [{values['min']:.1f}–{values['max']:.1f}]"


def report(results: dict[str, Any]) -> None:
    print(f"{results['rounds']} rounds of {results['examples']} examples; median [min–max] over the rounds")
    for case, modes in results["cases"].items():
        for mode in MODES:
            m = modes[mode]
            cpu, wall, runs = m["valid_per_cpu_second"], m["valid_per_wall_second"], m["runs"]
            valid = "/".join(str(run["valid_examples"]) for run in runs)
            invalid = statistics.median(run["invalid_share"] for run in runs)
            print(
                f"{case:<7} {mode:<12} valid {valid}: {_spread(cpu)} valid/CPU-s, {_spread(wall)} valid/wall-s; "
                f"invalid share {100 * invalid:.1f} %"
            )
        s = modes["speedup_cpu"]
        print(f"{case:<7} incremental / full (CPU, same programs): {s['median']:.2f}× [{s['min']:.2f}–{s['max']:.2f}]")
    print("targets: memory ≥ 50 valid examples/s at 50 steps; invalid share ≤ 20 %")


def report_breakdown(run: dict[str, Any]) -> None:
    """Where the CPU time of one memory run goes (``bench/stateful_breakdown.py``), per 100 valid
    examples, and the rate if everything but Hypothesis' own parts cost nothing."""
    parts, valid = run.get("parts", {}), run["valid_examples"]
    if not parts or not valid:
        print("breakdown: no data (the run failed?)")
        return
    total = sum(parts.values())
    print(f"breakdown of one memory run (incremental, seed 0): {valid} valid examples, {total:.2f} CPU-s with timing")
    for part, seconds in sorted(parts.items(), key=lambda item: -item[1]):
        print(f"  {part:<30} {100 * seconds / valid:6.2f} CPU-s per 100 valid examples  {100 * seconds / total:5.1f} %")
    own = sum(seconds for part, seconds in parts.items() if part.startswith("hypothesis"))
    print(
        f"  Hypothesis' own parts: {100 * own / total:.0f} %; with everything else free the rate would be "
        f"{valid / own:.0f} valid examples/CPU-s"
    )


def report_operations(run: dict[str, Any]) -> None:
    """Per example of one memory run: each operation drawn (a rule's name, or the operation the
    one rule drew) and each protocol operation's outcome (``bench/stateful_ops.py``)."""
    tally = run.get("operations")
    if not tally or not tally["examples"]:
        print("operations: no data (the run failed?)")
        return
    examples, steps, outcomes = tally["examples"], tally["steps"], tally["outcomes"]
    print(
        f"operations of one memory run (incremental, seed 0), per example over {examples} examples "
        f"(invalid ones too): {sum(steps.values()) / examples:.1f} steps, "
        f"{sum(outcomes.values()) / examples:.1f} protocol operations run, refused or crashed in"
    )
    print("  steps:    " + ", ".join(f"{name} {count / examples:.2f}" for name, count in sorted(steps.items())))
    print("  outcomes: " + ", ".join(f"{name} {count / examples:.2f}" for name, count in sorted(outcomes.items())))


if __name__ == "__main__":
    main()
