"""An unbiased mutation score of the reference (DESIGN rule 7): mutmut 3 over the approval,
storage, tools and audit modules, one module at a time, with the fast test selection of
``[tool.mutmut]`` in pyproject.toml and ``HYPOTHESIS_PROFILE=mutation``.

    .venv/bin/python scripts/mutation.py [approval storage tools audit] [--max-children 2] [--report-only]

Prints, per module, the mutants killed, the survivors and the score, then every survivor with its
diff; writes the survivors to ``mutation/survivors.json``. A survivor is either killed by a new
test or listed in ``mutation/equivalent.json`` with the reason it cannot change what any caller
sees; ``tests/test_mutation_record.py`` keeps the two files in step with each other and with the
source. Mutants that only rename the switch of a named reference mutant (``broken("name")``) are
not counted: they test ``reference._mutants``, not the protocol. Needs ``pip install mutmut`` (3.x);
CPU-heavy: it runs niced, with at most ``--max-children`` workers. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("approval", "storage", "tools", "audit")
RECORD = ROOT / "mutation"
SWITCH = re.compile(r"""broken\((["'])[^"']*\1\)""")


def mutmut() -> str:
    found = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or shutil.which("mutmut")
    if found is None:
        raise SystemExit("mutmut is not installed: .venv/bin/pip install 'mutmut>=3.3'")
    return found


def run(module: str, max_children: int, sample: int, survivors: bool) -> None:
    """All the module's mutants, every ``sample``-th of them in name order (a uniform sample), or
    again those that survived the last run (after new tests)."""
    names = [f"reference._{module}.*"]
    if survivors:
        names = [name for name, status in results(module).items() if status in ("survived", "no tests")]
        if not names:
            return
    elif sample > 1:
        mutmut_run([f"reference._{module}.no_such_mutant"], max_children)  # (re)generates the mutants
        names = sorted(results(module))[::sample]
    mutmut_run(names, max_children)


def mutmut_run(names: list[str], max_children: int) -> None:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "TEAMPROTO_MUTANT": ""}
    command = ["nice", "-n", "15", mutmut(), "run", "--max-children", str(max_children), *names]
    print(f"$ {' '.join(command[:8])} … ({len(names)} names)", file=sys.stderr, flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=False, stdout=sys.stderr)


def results(module: str) -> dict[str, str]:
    """Mutant name → status, from mutmut's own record of the run."""
    from mutmut.stats import status_by_exit_code

    meta = ROOT / "mutants" / "reference" / f"_{module}.py.meta"
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return {name: status_by_exit_code[code] for name, code in codes.items()}


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


def summarise(module: str, statuses: dict[str, str]) -> dict[str, Any]:
    survivors, switches, killed = [], 0, 0
    equivalent = (
        json.loads((RECORD / "equivalent.json").read_text(encoding="utf-8"))
        if (RECORD / "equivalent.json").exists()
        else {}
    )
    for name, status in sorted(statuses.items()):
        if status == "not checked":
            continue
        if status in ("killed", "timeout", "caught by type check", "segfault"):
            killed += 1
            continue
        change = diff(name)
        if only_renames_a_switch(change):
            switches += 1
            continue
        survivors.append(
            {"mutant": name, "status": status, "diff": change, "equivalent": equivalent.get(name, {}).get("reason")}
        )
    counted = killed + len(survivors)
    explained = sum(1 for s in survivors if s["equivalent"])
    return {
        "module": f"reference/_{module}.py",
        "mutants": len(statuses),
        "checked": sum(1 for status in statuses.values() if status != "not checked"),
        "switch_renames_not_counted": switches,
        "killed": killed,
        "survived": len(survivors),
        "equivalent": explained,
        "score": round(100 * killed / counted, 1) if counted else None,
        "score_without_equivalent": round(100 * killed / (counted - explained), 1) if counted > explained else None,
        "survivors": survivors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--report-only", action="store_true", help="read the last run, run nothing")
    parser.add_argument("--sample", type=int, default=1, help="run every N-th mutant only (name order)")
    parser.add_argument("--survivors", action="store_true", help="run again only the last run's survivors")
    args = parser.parse_args()
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {', '.join(MODULES)}")
    reports = []
    for module in args.modules or MODULES:
        if not args.report_only:
            run(module, args.max_children, args.sample, args.survivors)
        reports.append(summarise(module, results(module)))
    for report in reports:
        print(
            f"{report['module']}: {report['checked']} of {report['mutants']} mutants checked, "
            f"{report['killed']} killed, {report['survived']} survived ({report['equivalent']} equivalent), "
            f"{report['switch_renames_not_counted']} switch renames not counted: score {report['score']} %, "
            f"{report['score_without_equivalent']} % without the equivalent ones"
        )
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
