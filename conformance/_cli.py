"""``teamproto conformance``: run the suite against a driver, validate a log, or rebuild the vectors."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from teamproto._cli import UsageError, error_line, make_folder


def register(commands: Any) -> Any:
    p = commands.add_parser(
        "conformance", help="check an implementation (any language) clause by clause through its driver"
    )
    p.add_argument("--driver", metavar="CMD", help="the command that starts the implementation's driver")
    p.add_argument("--data-dir", type=Path, help="where each case's data directory goes (default: a temporary folder)")
    p.add_argument("--report", type=Path, metavar="DIR", help="write report.md, junit.xml and report.json here")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--clauses", default="", help="only cases checking these clauses or families, e.g. APR,SHD-3")
    p.add_argument("--seed", type=int, default=0, help="seed of the random programs (default 0)")
    p.add_argument("--programs", type=int, default=12, help="how many random programs (default 12)")
    p.add_argument("--depth", type=int, default=25, help="steps of each random program (default 25)")
    p.add_argument("--log", type=Path, metavar="FILE", help="validate a JSON-lines event log against the model instead")
    p.add_argument("--export-log", type=Path, metavar="DB", help="print a reference SQLite store's audit log as events")
    p.add_argument("--write-vectors", action="store_true", help="rebuild conformance/vectors and conformance/schemas")
    p.add_argument("--check-vectors", action="store_true", help="exit 1 naming each stale vector or schema file")
    return handle


def _refuse_bad_options(args: argparse.Namespace) -> None:
    """Refuse what would run a suite that means nothing, or lose its results, before it runs."""
    from spec import CLAUSES

    if args.programs < 0:
        raise UsageError(f"--programs must be 0 or more, not {args.programs}")
    if args.depth < 1:
        raise UsageError(f"--depth must be at least 1, not {args.depth}")
    families = sorted({clause.split("-")[0] for clause in CLAUSES})
    for wanted in (c.strip() for c in args.clauses.split(",") if c.strip()):
        if wanted not in CLAUSES and wanted not in families:
            raise UsageError(
                f"--clauses: no clause or family {wanted!r}; families: {', '.join(families)} "
                "(or a clause id such as APR-5, listed in docs/protocol.md)"
            )
    for flag, folder in (("--report", args.report), ("--data-dir", args.data_dir)):
        if folder is not None:
            make_folder(flag, folder)  # now, not after the whole suite ran


def handle(args: argparse.Namespace, console: Console) -> int:
    if args.write_vectors or args.check_vectors:
        return _vectors(args, console)
    if args.export_log is not None:
        from ._log import export_reference_log

        store = args.export_log / "team.db" if args.export_log.is_dir() else args.export_log
        if not store.is_file():
            raise UsageError(
                f"--export-log {args.export_log}: no reference store at {store}; give a data directory or its team.db"
            )
        _refuse_other_files(args.export_log, store)
        for event in export_reference_log(args.export_log):
            sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
        return 0
    if args.log is not None:
        return _log(args, console)
    if not args.driver:
        raise UsageError("give --driver CMD (or --log FILE, --export-log DB, --write-vectors, --check-vectors)")
    _refuse_bad_options(args)
    return _suite(args, console)


def _vectors(args: argparse.Namespace, console: Console) -> int:
    from ._vectors import stale, write_all

    if args.check_vectors:
        found = stale(rebuild=["tiny"])
        if args.json:
            json.dump({"stale": [str(p) for p in found], "ok": not found}, sys.stdout)
            sys.stdout.write("\n")
        for path in found:
            console.print(
                f"[red]stale[/red] {path} — run `teamproto conformance --write-vectors` and commit the result"
            )
        if not found:
            console.print("conformance vectors and schemas are up to date")
        return 1 if found else 0
    changed = write_all()
    if args.json:
        changes = {str(p): what for p, what in changed.items()}
        json.dump({"written": list(changes), "changes": changes, "ok": True}, sys.stdout)
        sys.stdout.write("\n")
    for path, what in changed.items():
        console.print(f"wrote {path}: {what}")
    console.print(f"{len(changed)} file(s) changed")
    return 0


def _refuse_other_files(given: Path, store: Path) -> None:
    """A file that is not a reference store (empty, another SQLite database, not SQLite at all) is
    refused before the store is opened for the export, which would make it one: looked at read-only."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True)) as db:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'").fetchone()
    except sqlite3.Error as error:
        raise UsageError(f"--export-log {given}: cannot read {store} as a reference store ({error})") from None
    if found is None:
        raise UsageError(
            f"--export-log {given}: {store} holds no reference store (no records table); "
            "give the data directory of a reference run or its team.db"
        )


def _suite(args: argparse.Namespace, console: Console) -> int:
    from ._report import print_table, write_reports
    from ._run import Options, run_suite

    families = tuple(c.strip() for c in args.clauses.split(",") if c.strip())
    options = Options(args.driver, args.data_dir, families, args.seed, args.programs, args.depth)
    progress_console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=progress_console,
        transient=True,
        disable=not progress_console.is_terminal,  # piped: no bar, and no blank line left behind
    ) as bar:
        task = bar.add_task("conformance", total=None)

        def tick(done: int, total: int, case: Any) -> None:
            bar.update(task, completed=done, total=total, description=f"{case.id} {case.verdict}")

        cases, result = run_suite(options, tick)
    if args.report is not None:
        write_reports(args.report, cases, result)
    if args.json:
        json.dump({**result, "results": [c.to_json() for c in cases]}, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print_table(console, cases, result)
    if result["undecided"] is not None:  # the driver could not be judged: one line on stderr as well
        error_line(UsageError(f"--driver {args.driver}: could not decide: {result['undecided']}"))
    return int(result["exit"])


def _log(args: argparse.Namespace, console: Console) -> int:
    from ._log import validate_file

    verdict = validate_file(args.log)
    if args.json:
        json.dump(verdict, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    if verdict.get("undecided"):  # the log could not be read or understood: one line on stderr
        error_line(UsageError(f"--log {args.log}: {verdict['message']}"))
        return 2
    if args.json:
        return 0 if verdict["ok"] else 1
    if verdict["ok"]:
        console.print(f"{args.log}: a behaviour of the model ({verdict['events']} events)", soft_wrap=True)
        return 0
    console.print(f"[red]{args.log}: not a behaviour of the model[/red] — {verdict['message']}", soft_wrap=True)
    console.print(json.dumps(verdict["event"], sort_keys=True), markup=False, highlight=False)
    console.print("model states possible just before it:", highlight=False)
    for state in verdict["possible"]:
        console.print("  " + json.dumps(state, sort_keys=True), markup=False, highlight=False)
    return 1


__all__ = ["register"]
