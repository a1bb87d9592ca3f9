"""An unbiased mutation score of the reference (DESIGN rule 7): mutmut 3 over the approval,
storage, tools, audit, shutdown, tasks, jobs, plans, outbox, members, recovery, harness, lead and
member_process modules, one module at a time, with the fast test selection of ``[tool.mutmut]`` in
pyproject.toml and ``HYPOTHESIS_PROFILE=mutation``.

    .venv/bin/python scripts/mutation.py [approval storage tools audit shutdown tasks jobs plans outbox
        members recovery harness lead member_process]
        [--max-children 1] [--sample N] [--resume] [--survivors] [--recheck-kills N] [--report-only]
        [--new-tests FILE ...]

Prints, per module, the mutants killed, the survivors and the score, then every survivor with its
diff; writes the survivors to ``mutation/survivors.json``. A survivor is either killed by a new
test or listed in ``mutation/equivalent.json`` with the reason it cannot change what any caller
sees; ``tests/test_mutation_record.py`` keeps the two files in step with each other and with the
source. Mutants that only rename the switch of a named reference mutant (``broken("name")``), or
only switch it off for good (``(broken("name")) and False``), are not counted: they test
``reference._mutants``, not the protocol; the report gives their number. Needs ``pip install mutmut`` (3.x);
``--sample N`` also restricts the report to the sample; ``--resume`` runs only the sample's
mutants that have no verdict yet (a run cut short). ``--new-tests FILE`` runs each survivor of the
last run against the new tests in FILE (written to kill survivors) in a fresh ``pytest`` process,
without a mutmut run: a failing test kills it, else it stays a survivor. CPU-heavy: it runs niced,
with at most ``--max-children`` workers. Not run in CI.

Honest verdicts. mutmut counts as killed, besides a failing test (exit 1), a pytest internal error
(3), a child killed by a signal and a run past its time limit — and on a loaded machine the wall
limit (half the CPU limit) passes while the tests still run. Every such verdict is checked again
here: the mutant's tests run in a fresh ``pytest`` process (``MUTANT_UNDER_TEST``, no CPU limit, a
generous wall limit), and only a failing test kills it; a run that still does not end counts as
*unresolved*, never as killed. ``--recheck-kills N`` re-runs every N-th exit-1 kill the same way
and reports how many agree. (A kill mutmut reported for ``normalize_paths`` that the tests did not
confirm came from a test whose parametrised objects kept state from the stats pass in mutmut's
``fork`` workers; pyproject now sets ``process_isolation = "forkserver"``.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODULES = (
    "approval",
    "storage",
    "tools",
    "audit",
    "shutdown",
    "tasks",
    "jobs",
    "plans",
    "outbox",
    "members",
    "recovery",
    "harness",
    "lead",
    "member_process",
    "instances",
)
RECORD = ROOT / "mutation"
SWITCH = re.compile(r"""broken\((["'])[^"']*\1\)""")


def mutmut() -> str:
    found = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or shutil.which("mutmut")
    if found is None:
        raise SystemExit("mutmut is not installed: .venv/bin/pip install 'mutmut>=3.3'")
    return found


def run(module: str, max_children: int, sample: int, survivors: bool, resume: bool = False) -> None:
    """All the module's mutants, every ``sample``-th of them in name order (a uniform sample), or
    again those that survived the last run (after new tests). ``resume``: only the sample's mutants
    that have no verdict yet (a run cut short, under the same tests)."""
    names = [f"reference._{module}.*"]
    if survivors:
        names = [name for name, status in results(module).items() if status in ("survived", "no tests")]
        if not names:
            return
    elif sample > 1:
        mutmut_run([f"reference._{module}.no_such_mutant"], max_children)  # (re)generates the mutants
        names = sorted(results(module))[::sample]
        if resume:
            names = [name for name in names if results(module)[name] == "not checked"]
            if not names:
                return
    mutmut_run(names, max_children)
    ran, everything = set(names), names[0].endswith("*")  # their old rechecks are void
    kept = {
        name: verdict
        for name, verdict in load_rechecks().items()
        if name not in ran and not (everything and name.startswith(f"reference._{module}."))
    }
    RECHECKS.write_text(json.dumps(kept, indent=1, sort_keys=True), encoding="utf-8")


def mutmut_run(names: list[str], max_children: int) -> None:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "TEAMPROTO_MUTANT": ""}
    command = ["nice", "-n", "15", mutmut(), "run", "--max-children", str(max_children), *names]
    print(f"$ {' '.join(command[:8])} … ({len(names)} names)", file=sys.stderr, flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=False, stdout=sys.stderr)


def exit_codes(module: str) -> dict[str, int | None]:
    """Mutant name → mutmut's raw exit code of its test run (None: not checked)."""
    meta = ROOT / "mutants" / "reference" / f"_{module}.py.meta"
    if not meta.exists():
        return {}
    return dict(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])


def results(module: str) -> dict[str, str]:
    """Mutant name → status: mutmut's verdict, or this script's recheck of it where there is one."""
    from mutmut.stats import status_by_exit_code

    rechecked = load_rechecks()
    return {name: rechecked.get(name, status_by_exit_code[code]) for name, code in exit_codes(module).items()}


RECHECKS = ROOT / "mutants" / "rechecked.json"
KILL_CODES = {1}
"""The one exit code that is a kill on its own: a test failed. Others that mutmut counts as kills
(3, timeouts, signals) are rechecked."""


def load_rechecks() -> dict[str, str]:
    return dict(json.loads(RECHECKS.read_text(encoding="utf-8"))) if RECHECKS.exists() else {}


def tests_of(name: str) -> list[str]:
    stats = json.loads((ROOT / "mutants" / "mutmut-stats.json").read_text(encoding="utf-8"))
    return sorted(stats["tests_by_mangled_function_name"].get(name.partition("__mutmut_")[0], []))


def recheck_one(name: str, tests: list[str] | None = None) -> str:
    """Run the mutant's tests (or ``tests``) in a fresh pytest process: killed, survived, unresolved
    or no tests."""
    tests = tests_of(name) if tests is None else tests
    if not tests:
        return "no tests"
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "TEAMPROTO_MUTANT": "", "MUTANT_UNDER_TEST": name}
    command = ["nice", "-n", "15", sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", *PYTEST_ARGS]
    try:
        done = subprocess.run([*command, *tests], cwd=ROOT / "mutants", env=env, capture_output=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return "unresolved"
    return {0: "survived", 1: "killed"}.get(done.returncode, "unresolved")


PYTEST_ARGS = [
    "--rootdir=.",
    "-p",
    "no:cacheprovider",
    "--deselect",
    "model_tests/test_stateful.py::test_teamproto_mutants_reports_a_caught_mutant",
    "--deselect",
    "model_tests/test_stateful.py::test_every_approval_write_step_was_crashed",
]
"""As ``[tool.mutmut]`` ``pytest_add_cli_args`` in pyproject.toml."""


def recheck(module: str, every_kth_kill: int) -> tuple[int, int]:
    """Recheck every verdict that is not a plain test failure or pass, and every ``every_kth_kill``-th
    plain kill; returns (plain kills rechecked, of them confirmed)."""
    codes = exit_codes(module)
    doubtful = [name for name, code in sorted(codes.items()) if code not in (*KILL_CODES, 0, None, 33, 5)]
    kills = [name for name, code in sorted(codes.items()) if code in KILL_CODES]
    sampled = kills[::every_kth_kill] if every_kth_kill else []
    rechecked, confirmed = load_rechecks(), 0
    for name in doubtful + sampled:
        started = time.monotonic()
        verdict = recheck_one(name)
        print(f"recheck {name}: mutmut {codes[name]} → {verdict} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        if name in sampled:
            confirmed += verdict == "killed"
        rechecked[name] = verdict
        RECHECKS.write_text(json.dumps(rechecked, indent=1, sort_keys=True), encoding="utf-8")
    return len(sampled), confirmed


def against_new_tests(module: str, files: list[str], sample: int = 1) -> None:
    """The last run's survivors against tests written for them, each in a fresh pytest (as
    :func:`recheck_one`): only a failing test (exit 1) kills; a pass leaves the survivor as it was.
    The files are copied into ``mutants/`` first (mutmut refreshes its copy only when it runs)."""
    for file in files:
        shutil.copy2(ROOT / file, ROOT / "mutants" / file)
    # Honest verdicts only: the new tests must pass on mutmut's copy of the source with no mutant
    # active, or every mutant would look killed (a test that needs source newer than the copy).
    if recheck_one("", files) != "survived":
        raise SystemExit(
            f"the new tests {files} fail in mutants/ with no mutant active: the copy of the source is older "
            "than the tests; run the module again (--survivors) instead"
        )
    rechecked = load_rechecks()
    statuses = results(module)
    for name in sorted(statuses)[::sample]:
        if statuses[name] not in ("survived", "no tests"):
            continue
        verdict = recheck_one(name, files)
        print(f"new tests on {name}: {verdict}", file=sys.stderr)
        if verdict in ("killed", "unresolved"):
            rechecked[name] = verdict
    RECHECKS.write_text(json.dumps(rechecked, indent=1, sort_keys=True), encoding="utf-8")


def diff(name: str) -> str:
    shown = subprocess.run([mutmut(), "show", name], cwd=ROOT, capture_output=True, text=True, check=False)
    return "\n".join(
        line for line in shown.stdout.splitlines()[1:] if line.startswith(("+", "-")) and line[1:2] != line[0]
    )


def only_renames_a_switch(change: str) -> bool:
    """The mutant changed nothing but the name inside ``broken("…")``."""
    removed = [line[1:] for line in change.splitlines() if line.startswith("-")]
    added = [line[1:] for line in change.splitlines() if line.startswith("+")]
    strip = lambda lines: [SWITCH.sub("broken()", line) for line in lines]  # noqa: E731
    return bool(removed) and strip(removed) == strip(added)


DISABLED = re.compile(r"""\((broken\((["'])[^"']*\2\))\) and False""")


def only_disables_a_switch(change: str) -> bool:
    """The mutant turned ``broken("…")`` into ``(broken("…")) and False`` and changed nothing else:
    it switches a named reference mutant off for good, and every test run has it off anyway."""
    removed = [line[1:] for line in change.splitlines() if line.startswith("-")]
    added = [DISABLED.sub(r"\1", line[1:]) for line in change.splitlines() if line.startswith("+")]
    return bool(removed) and removed == added and any(DISABLED.search(line) for line in change.splitlines())


def summarise(module: str, statuses: dict[str, str], sample: int = 1) -> dict[str, Any]:
    """The module's score; with ``sample`` > 1, over every ``sample``-th mutant only (the sample)."""
    statuses = {name: statuses[name] for name in sorted(statuses)[::sample]}
    survivors: list[dict[str, Any]] = []
    unresolved: list[str] = []
    switches, killed = 0, 0
    equivalent = (
        json.loads((RECORD / "equivalent.json").read_text(encoding="utf-8"))
        if (RECORD / "equivalent.json").exists()
        else {}
    )
    for name, status in sorted(statuses.items()):
        if status == "not checked":
            continue
        if status in ("killed", "caught by type check"):
            killed += 1
            continue
        if status in ("timeout", "segfault", "suspicious", "unresolved"):
            unresolved.append(name)
            continue
        change = diff(name)
        if only_renames_a_switch(change) or only_disables_a_switch(change):
            switches += 1
            continue
        survivors.append(
            {"mutant": name, "status": status, "diff": change, "equivalent": equivalent.get(name, {}).get("reason")}
        )
    counted = killed + len(survivors) + len(unresolved)
    explained = sum(1 for s in survivors if s["equivalent"])
    return {
        "module": f"reference/_{module}.py",
        "mutants": len(statuses),
        "checked": sum(1 for status in statuses.values() if status != "not checked"),
        "switch_renames_not_counted": switches,
        "killed": killed,
        "survived": len(survivors),
        "unresolved": unresolved,
        "equivalent": explained,
        "score": round(100 * killed / counted, 1) if counted else None,
        "score_without_equivalent": round(100 * killed / (counted - explained), 1) if counted > explained else None,
        "survivors": survivors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--report-only", action="store_true", help="read the last run, run nothing")
    parser.add_argument("--sample", type=int, default=1, help="run every N-th mutant only (name order)")
    parser.add_argument("--survivors", action="store_true", help="run again only the last run's survivors")
    parser.add_argument(
        "--recheck-kills", type=int, default=0, metavar="N", help="also recheck every N-th plain kill in a fresh pytest"
    )
    parser.add_argument(
        "--new-tests", nargs="+", default=[], metavar="FILE", help="run the last run's survivors against these tests"
    )
    parser.add_argument("--resume", action="store_true", help="with --sample: run only mutants without a verdict")
    args = parser.parse_args()
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {', '.join(MODULES)}")
    reports = []
    samples = {}
    for module in args.modules or MODULES:
        if args.new_tests:
            against_new_tests(module, args.new_tests, args.sample)
        elif not args.report_only:
            run(module, args.max_children, args.sample, args.survivors, args.resume)
            samples[module] = recheck(module, args.recheck_kills)
        reports.append(summarise(module, results(module), args.sample))
    for report in reports:
        print(
            f"{report['module']}: {report['checked']} of {report['mutants']} mutants checked, "
            f"{report['killed']} killed, {report['survived']} survived ({report['equivalent']} equivalent), "
            f"{len(report['unresolved'])} unresolved (timeouts after a recheck, not counted as killed), "
            f"{report['switch_renames_not_counted']} switch renames or disablings not counted: "
            f"score {report['score']} %, "
            f"{report['score_without_equivalent']} % without the equivalent ones"
        )
        for name in report["unresolved"]:
            print(f"  unresolved: {name}")
    for module, (sampled, confirmed) in samples.items():
        if sampled:
            print(f"reference/_{module}.py: {confirmed} of {sampled} rechecked kills confirmed in a fresh pytest")
    for report in reports:
        for survivor in report["survivors"]:
            print(f"\n{survivor['mutant']} ({survivor['status']}; equivalent: {survivor['equivalent'] or 'NO'})")
            print(survivor["diff"])
    RECORD.mkdir(exist_ok=True)
    record = {r["module"]: {s["mutant"]: s["diff"] for s in r["survivors"]} for r in reports}
    path = RECORD / "survivors.json"
    known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(json.dumps({**known, **record}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if all(s["equivalent"] for r in reports for s in r["survivors"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
