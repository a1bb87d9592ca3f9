"""``teamproto mutants``: run the model tests once per reference mutant and tabulate who caught it.

Each mutant runs in its own subprocess with ``TEAMPROTO_MUTANT`` set, so nothing in the working
tree is edited. A mutant is *caught* when a test fails under it: first the tests declared to
catch it run alone (``reference._mutant_tests.CAUGHT_BY``, with ``-x``), and only if they all pass
the whole selection (the model tests, then the example tests). Afterwards every test that caught a
mutant runs once without any mutant; a mutant whose test fails there too is not counted as caught.
The table names the first invariant or check the failure message mentions, the number of passing
examples Hypothesis ran before the failure, and the length of the shrunk program it printed.
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

from reference._mutant_tests import CAUGHT_BY
from reference._mutants import MUTANTS
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


def _pytest(
    mutant: str | None, tests: list[str], root: Path, stop_at_first: bool = True, shrink: bool = True
) -> tuple[int | None, str]:
    """Run ``tests`` in a fresh process, with ``mutant`` switched on (or none): (exit code, output);
    the exit code is None when the run passed :data:`TIMEOUT_SECONDS`. Without ``shrink`` a failing
    Hypothesis example is reported as found (the root ``conftest.py`` drops the shrink phase)."""
    env = {key: value for key, value in os.environ.items() if key not in ("TEAMPROTO_MUTANT", "TEAMPROTO_NO_SHRINK")}
    env["HYPOTHESIS_PROFILE"] = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if mutant:
        env["TEAMPROTO_MUTANT"] = mutant
    if not shrink:
        env["TEAMPROTO_NO_SHRINK"] = "1"
    flags = ["-x"] if stop_at_first else []
    command = [sys.executable, "-m", "pytest", *flags, "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics"]
    try:
        result = subprocess.run(
            [*command, *tests], cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return result.returncode, result.stdout + result.stderr


def selections(name: str) -> list[tuple[str, list[str]]]:
    """What ``teamproto mutants`` runs for mutant ``name``, in order, until a test fails: first the
    tests :data:`reference._mutant_tests.CAUGHT_BY` declares for it (if any), then the whole
    selection (:data:`TESTS`, :data:`EXAMPLE_TESTS` and the declared tests' files)."""
    declared = list(CAUGHT_BY.get(name, ()))
    files = [test.split("::")[0] for test in declared]
    wide = [*TESTS, *EXAMPLE_TESTS, *(f for f in dict.fromkeys(files) if f not in EXAMPLE_TESTS)]
    return ([("declared", declared)] if declared else []) + [("all", wide)]


def run_mutant(name: str, root: Path, shrink: bool = True) -> dict[str, Any]:
    """Run the mutant's selections in order; it is caught when a test fails under it. Without
    ``shrink`` the failing program is not made minimal, and the row gives no program length."""
    started = time.perf_counter()
    ran: list[str] = []
    code: int | None = 0
    output = ""
    for label, tests in selections(name):
        ran.append(label)
        code, output = _pytest(name, tests, root, shrink=shrink)
        if code != 0:  # failed (caught) or timed out (neither caught nor cleared): stop here
            break
    row: dict[str, Any] = {"mutant": name, "breaks": MUTANTS[name], "selection": ", then ".join(ran)}
    seconds = round(time.perf_counter() - started, 1)
    if code is None:  # it survives, and the row says why
        by = f"timeout ({TIMEOUT_SECONDS} s)"
        return {**row, "caught": False, "by": by, "test": "", "examples_until_caught": None,
                "shrunk_program_steps": None, "seconds": seconds}  # fmt: skip
    caught = code == 1  # a test failed (other codes: an error in collection, a test not found, …)
    by = next((check for check in CHECK_NAMES if check in output), "test failure") if caught else ""
    if code not in (0, 1):
        by = f"pytest exited with {code}: no test failed"
    test = next(iter(_failed_tests(output)), "")
    passing = re.findall(r"(\d+) passing, (\d+) failing", output)
    program = re.findall(r"^E?\s*state\.\w+\(", output, re.M)
    return {
        **row,
        "caught": caught,
        "by": by,
        "test": test,
        # Hypothesis's statistics of the test that failed; the explorer's tests have none.
        "examples_until_caught": int(passing[0][0]) + 1 if caught and passing and "test_stateful" in test else None,
        "shrunk_program_steps": (len([p for p in program if "invariant" not in p and "teardown" not in p]) or None)
        if shrink
        else None,
        "seconds": seconds,
    }


def _failed_tests(output: str) -> list[str]:
    """The node ids pytest's summary names as failed or in error."""
    return re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.M)


def check_baseline(rows: list[dict[str, Any]], root: Path) -> list[str]:
    """A caught mutant counts only if the test that failed under it passes without any mutant:
    run every such test once, unmutated, and turn the rows of those that fail anyway (or do not
    finish) into survivors. Returns the tests that failed without a mutant."""
    tests = sorted({row["test"] for row in rows if row["caught"] and row["test"]})
    if not tests:
        return []
    code, output = _pytest(None, tests, root, stop_at_first=False)
    bad = [] if code == 0 else [t for t in tests if t in _failed_tests(output)] if code is not None else tests
    if code not in (0, None) and not bad:
        bad = tests  # it failed, but named no test: none of the verdicts can be trusted
    for row in rows:
        if row["caught"] and row["test"] in bad:
            row["caught"], row["by"] = False, f"{row['test']} fails without the mutant too"
    return bad


def command(args: argparse.Namespace, console: Console) -> int:
    root = Path(__file__).resolve().parents[1]
    names = args.only or list(MUTANTS)
    if args.jobs < 1:
        raise UsageError(f"--jobs takes a whole number of at least 1, not {args.jobs}")

    def run(name: str) -> dict[str, Any]:
        if not args.json:
            console.print(f"[dim]running model tests with reference mutant {name} …[/dim]", highlight=False)
        return run_mutant(name, root, shrink=not args.no_shrink)

    # Each mutant's tests run in a subprocess of their own: threads only wait for them. Results keep
    # the order of the names, whatever order the processes end in.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, names))
    if not args.json and not args.no_baseline and any(row["caught"] and row["test"] for row in rows):
        console.print("[dim]running the tests that caught a mutant without one …[/dim]", highlight=False)
    if not args.no_baseline:
        check_baseline(rows, root)
    survived = [row["mutant"] for row in rows if not row["caught"]]
    if args.json:
        json.dump({"mutants": rows, "survived": survived, "ok": not survived}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        table = Table(title="reference mutants")
        for column in ("mutant", "caught", "by", "examples", "program steps", "ran", "seconds"):
            table.add_column(column)
        for row in rows:
            table.add_row(
                row["mutant"],
                "[green]yes[/green]" if row["caught"] else "[red]NO[/red]",
                row["by"],
                str(row["examples_until_caught"] or ""),
                str(row["shrunk_program_steps"] or ""),
                row.get("selection", ""),
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
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="do not run the tests that caught a mutant again without one (only where they just passed "
        "in this tree, as in .ci/run after its pytest step)",
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="stop at a mutant's first failing example, without shrinking it to a minimal program "
        "(the verdicts are the same; the 'program steps' column stays empty; .ci/run uses it)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return command
