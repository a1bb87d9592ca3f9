"""``teamproto demo``: the command line of :mod:`reference._demo` (a Lead and two members as real
OS processes over one SQLite file); the scenario and its verdict live there."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from reference._demo import DemoRefused, run_demo

from ._cli import make_folder


def _print(report: dict[str, Any], console: Console, kept: str | None) -> None:
    for event in report["events"]:
        subject = f" [dim]{event['subject']}[/dim]" if event["subject"] else ""
        console.print(f"{event['at']:8.3f}s  {event['actor']:<8} {event['event']}{subject}", highlight=False)
    for line in report["invariant_violations"] + report["scenario_failures"]:
        console.print(f"[red]FAILED[/red] {line}")
    held = len(report["invariants_checked"])
    verdict = "[green]every invariant held[/green]" if report["ok"] else "[red]the demo failed[/red]"
    console.print(f"{verdict} on the final snapshot ({held} checked, reconciliation included)")
    if kept:
        console.print(f"database kept in {kept}/team.db")


def command(args: argparse.Namespace, console: Console) -> int:
    workdir = _workdir(args.keep)  # a DemoRefused reaches the user as every refusal does (teamproto._cli.fail)
    try:
        report = run_demo(workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    report["database"] = str(workdir / "team.db") if args.keep else None
    if args.json:
        json.dump(report, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        _print(report, console, args.keep)
    return 0 if report["ok"] else 1


def _workdir(keep: str | None) -> Path:
    """The folder the demo runs in: ``--keep DIR`` (new or empty of team.db), else a temporary one."""
    if not keep:
        return Path(tempfile.mkdtemp(prefix="teamproto-demo-"))
    workdir = Path(keep)
    if (workdir / "team.db").exists():
        raise DemoRefused(f"{workdir}/team.db exists; pass an empty or new folder to --keep")
    make_folder("--keep", workdir)
    return workdir


def register(commands: Any) -> Callable[[argparse.Namespace, Console], int]:
    parser = commands.add_parser("demo", help="a Lead and two members as real OS processes over one SQLite file")
    parser.add_argument("--json", action="store_true", help="print the events and the verdict as JSON")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and leave team.db (and the logs) there")
    return command
