"""``teamproto mutants``: run the model tests once per reference mutant and tabulate who caught it.

Each mutant runs in its own subprocess with ``TEAMPROTO_MUTANT`` set, so nothing in the working
tree is edited. A mutant is *caught* when the model tests fail; the table names the first
invariant or check the failure message mentions, the number of passing examples Hypothesis ran
before the failure, and the length of the shrunk program it printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from reference._mutants import MUTANTS
from reference._process_mutants import CAUGHT_BY
from spec.invariants import INVARIANTS

from ._cli import UsageError

TESTS = [
    "model_tests/test_stateful.py::TestApprovalProtocol",
    "model_tests/test_stateful.py::TestApprovalProtocolSqlite",
    "model_tests/test_stateful.py::TestTeamProtocol",
    "model_tests/test_interleave.py",
]
"""The refinement tests themselves (not the coverage test: a mutant must be caught by a check),
then the interleaving explorer's (two instances over one store, DESIGN rule 9)."""
TIMEOUT_SECONDS = 900
"""A mutant's model tests that run longer than this are stopped; the mutant counts as not caught."""
EXAMPLE_TESTS = [
    "tests/test_races.py",
    "tests/test_incarnations.py",
    "tests/test_tool_outputs.py",
    "tests/test_audit_log.py",
    "tests/test_binding.py",
    "tests/test_deadlines.py",
    "tests/test_recovery_records.py",
    "tests/test_refusal_details.py",
]
"""Example tests of what the model does not hold (two instances at once, incarnations after a
restart, tool outputs and keys); run after the refinement tests, a few seconds in all."""
CHECK_NAMES = [inv.name for inv in INVARIANTS] + [
    "refinement",
    "MSG-5",
    "MSG-3",
    "model did not agree",
    "linearizability",
]
"""What a failure message may name, most specific first; "model did not agree" is refinement of
enabledness (the reference ran or refused an operation that the model did not)."""


def run_mutant(name: str, root: Path) -> dict[str, Any]:
    env = {**os.environ, "TEAMPROTO_MUTANT": name, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    started = time.perf_counter()
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-x",
                "-q",
                "-p",
                "no:cacheprovider",
                "--hypothesis-show-statistics",
                *CAUGHT_BY.get(name, [*TESTS, *EXAMPLE_TESTS]),
            ],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:  # neither caught nor cleared: it survives, and the row says why
        return {
            "mutant": name,
            "breaks": MUTANTS[name],
            "caught": False,
            "by": f"timeout ({TIMEOUT_SECONDS} s)",
            "test": "",
            "examples_until_caught": None,
            "shrunk_program_steps": None,
            "seconds": round(time.perf_counter() - started, 1),
        }
    output = result.stdout + result.stderr
    caught = result.returncode != 0
    by = next((check for check in CHECK_NAMES if check in output), "test failure" if caught else "")
    test = next(iter(re.findall(r"FAILED (\S+)", output)), "")
    passing = re.findall(r"(\d+) passing, (\d+) failing", output)
    program = re.findall(r"^E?\s*state\.\w+\(", output, re.M)
    return {
        "mutant": name,
        "breaks": MUTANTS[name],
        "caught": caught,
        "by": by,
        "test": test,
        # Hypothesis's statistics of the test that failed; the explorer's tests have none.
        "examples_until_caught": int(passing[0][0]) + 1 if caught and passing and "test_stateful" in test else None,
        "shrunk_program_steps": len([p for p in program if "invariant" not in p and "teardown" not in p]) or None,
        "seconds": round(time.perf_counter() - started, 1),
    }


def command(args: argparse.Namespace, console: Console) -> int:
    root = Path(__file__).resolve().parents[1]
    names = args.only or list(MUTANTS)
    if args.jobs < 1:
        raise UsageError(f"--jobs takes a whole number of at least 1, not {args.jobs}")

    def run(name: str) -> dict[str, Any]:
        if not args.json:
            console.print(f"[dim]running model tests with reference mutant {name} …[/dim]", highlight=False)
        return run_mutant(name, root)

    # Each mutant's tests run in a subprocess of their own: threads only wait for them. Results keep
    # the order of the names, whatever order the processes end in.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, names))
    survived = [row["mutant"] for row in rows if not row["caught"]]
    if args.json:
        json.dump({"mutants": rows, "survived": survived, "ok": not survived}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        table = Table(title="reference mutants")
        for column in ("mutant", "caught", "by", "examples", "program steps", "seconds"):
            table.add_column(column)
        for row in rows:
            table.add_row(
                row["mutant"],
                "[green]yes[/green]" if row["caught"] else "[red]NO[/red]",
                row["by"],
                str(row["examples_until_caught"] or ""),
                str(row["shrunk_program_steps"] or ""),
                str(row["seconds"]),
            )
        console.print(table)
        console.print(
            "[green]every reference mutant was caught[/green]"
            if not survived
            else f"[red]reference mutant(s) NOT caught[/red]: {', '.join(survived)}",
            highlight=False,
        )
    return 1 if survived else 0


def _epilog() -> str:
    from spec.model import MUTANTS as MODEL_MUTANTS

    shared = sorted(set(MUTANTS) & set(MODEL_MUTANTS))
    return "\n".join(
        [
            "reference mutants (--only; default: all):",
            *(f"  {name:<28} {breaks}" for name, breaks in MUTANTS.items()),
            "",
            "These break the reference (reference/_mutants.py); `teamproto check --mutant` takes the model's "
            "mutants (spec/model/_mutants.py).",
            f"A name in both sets ({', '.join(shared)}) removes the same clause's check in each.",
        ]
    )


def register(commands: Any) -> Any:
    parser = commands.add_parser(
        "mutants",
        help="run the model tests against each reference mutant",
        description="Run the Hypothesis model tests once per reference mutant, each in its own process "
        "(TEAMPROTO_MUTANT=NAME), and tabulate which check caught it. Exit 1 when a mutant survives.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", nargs="+", choices=list(MUTANTS), metavar="NAME", help="just these mutants")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="mutants tested at once, each in its own process (default: one per processor)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return command
