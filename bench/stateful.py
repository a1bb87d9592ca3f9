"""Stateful model tests: valid examples per second on each backend and the share of invalid ones.

Runs the approval comparison (50 steps per example at most) on memory and on SQLite in one run,
through pytest with Hypothesis statistics, and prints examples/s and invalid share for each.
Target (issue 5): ≥ 50 valid examples/s on memory at 50 steps; invalid share ≤ 20 %.
Run: ``python bench/stateful.py [--json] [EXAMPLES]``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "memory": "model_tests/test_stateful.py::TestApprovalProtocol",
    "sqlite": "model_tests/test_stateful.py::TestApprovalProtocolSqlite",
}


def measure(case: str, examples: int) -> dict[str, float]:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "bench", "TEAMPROTO_BENCH_EXAMPLES": str(examples)}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics", CASES[case]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.perf_counter() - started
    found = re.findall(r"(\d+) passing, (\d+) failing, and (\d+) invalid", result.stdout)
    passing, failing, invalid = (int(x) for x in found[-1]) if found else (0, 0, 0)
    total = passing + failing + invalid
    return {
        "valid_examples": passing + failing,
        "invalid_examples": invalid,
        "seconds": seconds,
        "valid_per_second": (passing + failing) / seconds,
        "invalid_share": invalid / total if total else 0.0,
        "exit_code": result.returncode,
    }


def main() -> None:
    examples = next((int(a) for a in sys.argv[1:] if a.isdigit()), 200)
    results = {case: measure(case, examples) for case in CASES}
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
        return
    for case, r in results.items():
        print(
            f"{case:<7} {r['valid_examples']:>5} valid, {r['invalid_examples']:>4} invalid in {r['seconds']:.1f} s: "
            f"{r['valid_per_second']:.1f} valid examples/s, invalid share {100 * r['invalid_share']:.1f} %"
        )
    print("targets: memory ≥ 50 valid examples/s at 50 steps; invalid share ≤ 20 %")


if __name__ == "__main__":
    main()
