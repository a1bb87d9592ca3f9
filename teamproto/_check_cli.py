"""``teamproto check`` on the command line: parse, validate, print — a thin layer over :mod:`spec.check`.

Everything the user names is checked before the search starts (a search can take minutes): the
bounds, the mutant, the configurations, the ``--trace-out`` path and the ``--checkpoint`` file. A
bad value is a :class:`teamproto._cli.UsageError` (one line on stderr, exit 2). A counterexample
is printed with its run's report (and is in the JSON document) before ``--trace-out`` is written,
so a file that cannot be written after all never loses it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import spec
from spec import _compiled, drift
from spec.audit import Audit
from spec.audit import describe as describe_audit
from spec.check import (
    CHECKPOINT_SECONDS,
    Bounds,
    Job,
    Run,
    Summary,
    all_edges,
    check_names,
    default_suite,
    default_workers,
    load_checkpoint,
    mutant_caught,
    pending_configs,
    report_json,
    run_audits,
    run_jobs,
    summarize,
)
from spec.explore import Report, format_trace, trace_json
from spec.model import CRASH_POINTS, MUTANTS, _proof, load_config, manifest
from spec.model._config import Config, config_names, pins
from spec.simulate import DEFAULT_PLAN, Plan
from spec.split import PARTS, parts

from ._cli import UsageError, emit_json, error_line


def _plan(args: argparse.Namespace) -> Plan:
    for flag, value in (("--walks", args.walks), ("--walk-depth", args.walk_depth)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, not {value}")
    if args.simulate and args.max_states is not None:
        raise UsageError("--max-states bounds an exhaustive search; bound a simulation with --walks or --max-seconds")
    if not 0.0 <= args.crash_rate <= 1.0:
        raise UsageError(f"--crash-rate must be between 0 and 1, not {args.crash_rate}")
    return Plan(walks=args.walks, depth=args.walk_depth, seed=args.seed, crash_rate=args.crash_rate)


def _check_values(args: argparse.Namespace) -> None:
    """Refuse bad numbers and names before anything runs."""
    if args.mutant and args.mutant not in MUTANTS:
        from reference._mutants import MUTANTS as REFERENCE_MUTANTS

        hint = (
            f"; {args.mutant!r} is a reference mutant: run `teamproto mutants --only {args.mutant}`"
            if args.mutant in REFERENCE_MUTANTS
            else ""
        )
        raise UsageError(f"unknown model mutant {args.mutant!r}{hint}; model mutants: {', '.join(MUTANTS)}")
    if args.max_states is not None and args.max_states < 1:
        raise UsageError(f"--max-states must be at least 1, not {args.max_states}")
    if args.max_seconds is not None and not args.max_seconds > 0:
        raise UsageError(f"--max-seconds must be positive, not {args.max_seconds}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    if not args.checkpoint_seconds > 0:
        raise UsageError(f"--checkpoint-seconds must be positive, not {args.checkpoint_seconds}")
    if args.audit and args.no_audit:
        raise UsageError("--audit and --no-audit ask for opposite things; give one")
    if args.audit and (args.mutant or args.simulate):
        what = "--mutant" if args.mutant else "--simulate"
        raise UsageError(f"--audit audits exhaustive searches of the healthy model; not with {what}")
    for name in args.config or ():
        load_config(name)  # an unknown name raises UnknownConfig, naming the known ones
    if args.trace_out is not None:
        _check_writable("--trace-out", Path(args.trace_out))


def _check_writable(flag: str, path: Path) -> None:
    folder = path.absolute().parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: no such folder {folder}; create it or name another path")
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; name a file")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise UsageError(f"{flag} {path}: not writable; name a path you may write")


def _jobs(args: argparse.Namespace, plan: Plan) -> list[Job]:
    """The runs asked for: the named configurations, a mutant's own configuration, or the suite."""
    names = args.config or ([MUTANTS[args.mutant].config] if args.mutant else [])
    if args.simulate:
        return [(load_config(name), plan) for name in (names or config_names())]
    if names:  # a split configuration is explored as its two parts (spec/split.py)
        return [(config, None) for name in names for config in _explored_as(load_config(name))]
    jobs: list[Job] = [(load_config(name), None) for name in default_suite()]
    return jobs + [(load_config(name), plan) for name in pending_configs()]


def _without_liveness(jobs: list[Job], console: Console) -> list[Job]:
    """With --fingerprints or --checkpoint: the runs without the liveness check, which needs every
    state and edge (fingerprints keep neither), each said in a line (on stderr with --json)."""
    off = [config.name for config, _ in jobs if config.liveness]
    if off:
        console.print(
            f"[yellow]the liveness check is off[/yellow] in {', '.join(off)}: it needs every state and edge, "
            "which --fingerprints and --checkpoint do not keep; run without them to check it",
            highlight=False,
        )
    return [(dataclasses.replace(config, liveness=False), how) for config, how in jobs]


def _explored_as(config: Config) -> list[Config]:
    return parts(config) if config.split else [config]


def _spread(jobs: list[Job], bounds: Bounds, processes: int) -> int:
    """Over how many processes each run's search is spread (:mod:`spec._parallel`): every one
    when the runs are the exhaustive searches of a split configuration's parts (they then run one
    after another), else 1. Measured on this 2-core machine (2026-12-05, compiled): the parts of
    ``standard`` side by side, one process each, wait on ``standard/plans`` alone on one process
    (about 1,200 s); one after another, each spread over two, ``standard/plans`` takes 368 s."""
    parted = all(how is None and config.name.partition("/")[2] in PARTS for config, how in jobs)
    return processes if parted and bounds.checkpoint is None and processes >= 2 else 1


def _bounds(args: argparse.Namespace, jobs: list[Job]) -> Bounds:
    if args.fingerprints or args.checkpoint:
        refused = [config.name for config, how in jobs if how is not None]
        if refused:
            raise UsageError(
                f"--fingerprints and --checkpoint apply to exhaustive searches; not to: {', '.join(refused)}"
            )
    if args.checkpoint and not os.environ.get("PYTHONHASHSEED", "").isdigit():
        raise UsageError(
            "--checkpoint needs the same string hashes in every run of the search (its fingerprints hash "
            "strings): start it with a fixed seed, e.g. PYTHONHASHSEED=0 teamproto check --checkpoint …"
        )
    if args.checkpoint and len(jobs) != 1:
        raise UsageError(
            "--checkpoint saves one search: name one configuration with --config "
            "(a split one's parts one at a time, e.g. --config standard/plans)"
        )
    bounds = Bounds(
        args.max_states,
        args.max_seconds,
        args.fingerprints,
        None if args.checkpoint is None else Path(args.checkpoint),
        args.checkpoint_seconds,
    )
    if bounds.checkpoint is not None:
        _check_writable("--checkpoint", bounds.checkpoint)
        load_checkpoint(bounds.checkpoint, jobs[0][0], args.mutant, search=False)  # BadCheckpoint: refused now
    return bounds


def _print_report(console: Console, report: Report, seconds: float, config: Config) -> None:
    name = f"[bold]{config.name}[/bold]{' model mutant ' + report.mutant if report.mutant else ''}"
    if report.simulation:
        console.print(
            f"{name} [yellow]simulated[/yellow] (random walks, seed {report.seed}, crash rate {report.crash_rate}; "
            "not exhaustive): "
            f"{report.walks:,} walks, {report.transitions:,} steps, {report.states:,} distinct states, "
            f"longest walk {report.depth}, {seconds:.1f} s, {report.transitions / max(seconds, 1e-9):,.0f} steps/s",
            highlight=False,
        )
    else:
        pinned = pins(config.name).get("states")
        drifted = "" if report.mutant or pinned in (None, report.states) else f" [red](manifest pins {pinned:,})[/red]"
        console.print(
            f"{name}: {report.states:,} states{drifted}, {report.transitions:,} transitions, depth {report.depth}, "
            f"{seconds:.1f} s, {report.states / max(seconds, 1e-9):,.0f} states/s"
            + (
                ""
                if report.complete
                else f" [red]INCOMPLETE[/red] (a bound was reached; every state up to depth "
                f"{report.expanded_through} was expanded; new states by depth: "
                f"{', '.join(f'{n:,}' for n in report.states_by_depth)})"
            )
            + (
                f"; fingerprints (hash compaction): a state missed with probability ≤ {report.omission_bound:.1e}"
                if report.fingerprints
                else ""
            ),
            highlight=False,
        )
    for bound in report.unreached_bounds:
        console.print(f"  [yellow]{config.name}: a bound no state reaches[/yellow]: {bound}", highlight=False)
    for violation in report.violations.values():
        console.print(format_trace(violation, config), highlight=False, markup=False)


def _summary_table(reports: list[Run]) -> Table:
    """One row per check, whatever the number of configurations: held, or where it was violated."""
    table = Table(title=f"checks over {len(reports)} run(s)")
    table.add_column("clause")
    table.add_column("check", no_wrap=True)
    table.add_column("result")
    for clause, name in check_names():
        liveness = name.startswith(("every_request", "no_cycle", "deadline_is_the_last"))  # run with liveness
        violated = [_label(r, c) for r, _, c in reports if name in r.violations]
        checked = [r for r, _, _ in reports if r.liveness_checked or not liveness]
        if violated:
            cell = f"[red]violated[/red] in {', '.join(violated)}"
        elif not checked:
            cell = "[dim]n/a[/dim] (needs an exhaustive run of a configuration with liveness on)"
        elif len(checked) < len(reports):
            cell = f"[green]held[/green] in the {len(checked)} run(s) that check it"
        else:
            cell = "[green]held[/green]"
        table.add_row(clause, name, cell)
    return table


def _label(report: Report, config: Config) -> str:
    return f"{config.name} (simulated)" if report.simulation else config.name


def _write_trace(path: str | None, runs: list[Run]) -> str | None:
    """Write the first counterexample to ``path``; the error message when it cannot be written."""
    first = next(((v, c) for r, _, c in runs for v in r.violations.values()), None)
    if path is None or first is None:
        return None
    try:
        Path(path).write_text(json.dumps(trace_json(*first), indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        return f"--trace-out {path}: {error.strerror or error}; the counterexample is in the report above"
    return None


def _verdict(args: argparse.Namespace, runs: list[Run], summary: Summary) -> tuple[int, str]:
    """The exit status and the last line: a mutant is caught (0) or not (1); a healthy run holds."""
    if args.mutant:
        caught = mutant_caught(runs)
        if caught:
            return 0, f"[green]model mutant {args.mutant} caught[/green] by {', '.join(caught)}"
        return 1, f"[red]model mutant {args.mutant} NOT caught[/red]: every check held"
    return (0, "[green]all checks hold[/green]") if summary.ok else (1, "[red]check failed[/red]")


def _print_summary(console: Console, runs: list[Run], summary: Summary, footer: str) -> None:
    console.print(_summary_table(runs))
    total = len(all_edges())
    console.print(
        f"edge coverage: {total - len(summary.missing_edges)}/{total}; crash points: "
        f"{len(CRASH_POINTS) - len(summary.missing_crash_points)}/{len(CRASH_POINTS)}; " + footer,
        highlight=False,
    )
    if summary.coverage_required and not any(r.mutant for r, _, _ in runs):
        for edge in summary.missing_edges:
            console.print(f"[red]edge never taken[/red]: {edge[0]} {edge[1]} -> {edge[2]}", highlight=False)
        for point in summary.missing_crash_points:
            console.print(f"[red]never crashed after[/red] {point}", highlight=False)
    audits = {a.config: a for a in summary.audits}
    lines = [line for d in summary.drifts for line in drift.describe(d) + _audit_lines(audits.pop(d.config, None))]
    lines += [line for a in audits.values() for line in [f"{a.config} audited", *describe_audit(a, drifted=False)]]
    for line in lines + summary.outgrown:
        red = not line.startswith(" ") or "UNSOUND" in line
        console.print(line, style="red" if red else None, highlight=False, markup=False)
    if summary.drifts:
        console.print("review it; if it is meant, pin it: scripts/pin_manifest.py in the same commit")


def _audit_lines(found: Audit | None) -> list[str]:
    return describe_audit(found) if found is not None else []


def command(args: argparse.Namespace, console: Console) -> int:
    _check_values(args)
    plan = _plan(args)
    jobs = _jobs(args, plan)
    bounds = _bounds(args, jobs)
    if args.fingerprints or args.checkpoint:
        jobs = _without_liveness(jobs, console)
    for config, how in jobs:
        pending = pins(config.name).get("pending")
        if pending and how is None:  # on stderr with --json
            console.print(
                f"[yellow]{config.name} has never been explored to completion[/yellow] ({pending}); "
                "bound the run with --max-seconds or --max-states, or --simulate it",
                highlight=False,
            )
    processes = args.jobs or default_workers()
    bounds = dataclasses.replace(bounds, processes=_spread(jobs, bounds, processes))
    workers = 1 if bounds.processes > 1 else min(processes, len(jobs))  # a spread run has them all

    def say(line: str) -> None:
        console.print(line, highlight=False)

    def done(index: int, report: Report, seconds: float) -> None:
        if not args.json:
            _print_report(console, report, seconds, jobs[index][0])

    # With --json the console writes to stderr: progress stays beside the JSON, not in it.
    started = time.perf_counter()
    results, peak = run_jobs(jobs, args.mutant, bounds, workers, say, done)
    wall = time.perf_counter() - started
    runs = [(report, seconds, config) for (report, seconds), (config, _) in zip(results, jobs, strict=True)]
    coverage_required = (args.config is None and not args.mutant and not args.simulate) or any(
        c.require_coverage for c, _ in jobs
    )
    summary = summarize(runs, coverage_required, args.mutant)
    if not args.no_audit and not args.mutant:
        drifted = {d.config for d in summary.drifts}
        audits = run_audits(runs, drifted, args.audit, workers * bounds.processes, None if args.json else say)
        summary = dataclasses.replace(summary, audits=audits, ok=summary.ok and all(a.sound for a in audits))
    status, verdict = _verdict(args, runs, summary)
    trace_error = _write_trace(args.trace_out, runs)
    kind = "compiled" if _compiled.ACTIVE else "interpreted (scripts/compile.py builds the compiled explorer)"
    if args.json:
        unproven = _unproven(jobs, args.mutant)
        emit_json(
            _document(runs, summary, peak, workers * bounds.processes, bounds.processes, wall, trace_error, unproven)
        )
    else:
        spread = f", each search spread over {bounds.processes}" if bounds.processes > 1 else ""
        folder, digest = source()
        footer = (
            f"{wall:.1f} s on {workers * bounds.processes} worker process(es){spread}, {kind}; "
            f"peak memory {peak:,.0f} MiB (largest process); spec {folder} (source {digest})"
        )
        _print_summary(console, runs, summary, footer)
        if unproven := _unproven(jobs, args.mutant):
            console.print(unproven, highlight=False)
        console.print(verdict, highlight=False)
    if trace_error is not None:  # after the report: the counterexample was printed, not lost
        error_line(UsageError(trace_error))
        return 2
    return status


def _unproven(jobs: list[Job], mutant: str | None) -> str:
    """Which configurations ran on the model's own engine because the flat one is not proven for
    these sources (:mod:`spec.model._proof`; empty when it is, or when none could run on it)."""
    from spec.model._flat import supports

    why = _proof.stale()
    names = [config.name for config, how in jobs if how is None and supports(config, mutant)]
    if not why or not names or os.environ.get("TEAMPROTO_ENGINE"):
        return ""
    return f"{', '.join(names)}: {why}"


def source(root: Path | None = None) -> tuple[str, str]:
    """The spec this run checked: its folder and a short digest of its source (every ``.py`` and
    ``.json`` under it). An editable install imports the tree it was installed from, not the one the
    command was run in: the footer says which (outside review 59 checked another clone unawares)."""
    folder = root or Path(spec.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.suffix in (".py", ".json") and "__pycache__" not in p.parts):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return str(folder), h.hexdigest()[:12]


def _document(
    runs: list[Run],
    summary: Summary,
    peak: float,
    workers: int,
    spread: int,
    wall: float,
    trace_error: str | None,
    unproven: str = "",
) -> dict[str, Any]:
    return {
        "runs": [report_json(r, s, c) for r, s, c in runs],
        "missing_edges": summary.missing_edges,
        "missing_crash_points": summary.missing_crash_points,
        "manifest_drift": [d.config for d in summary.drifts],
        "manifest_drift_detail": [d.to_json() for d in summary.drifts],
        "outgrown": summary.outgrown,
        "audits": [a.to_json() for a in summary.audits],
        "peak_memory_mib": round(peak, 1),
        "workers": workers,
        "spread": spread,  # the processes each search was spread over (spec/_parallel.py)
        "compiled": _compiled.ACTIVE,
        "spec": dict(zip(("path", "digest"), source(), strict=True)),
        "flat_engine_unproven": unproven or None,  # which ran on the model, and why (spec/model/_proof.py)
        "seconds": round(wall, 3),
        **({"mutant_caught_by": mutant_caught(runs)} if any(r.mutant for r, _, _ in runs) else {}),
        **({"trace_out_error": trace_error} if trace_error else {}),
        "ok": summary.ok and trace_error is None,  # every check held (a caught mutant's run is not ok)
    }


def _epilog() -> str:
    pinned = manifest()

    def how(name: str) -> str:
        states = pinned.get(name, {}).get("states")
        if states is not None:
            return f"pinned, {states:,} states"
        split = [pins(f"{name}/{part}").get("states") for part in PARTS]
        if load_config(name).split:
            counts = " + ".join("unpinned" if n is None else f"{n:,}" for n in split)
            return f"explored as two parts with --config (spec/split.py): {counts} states; simulated without"
        return "simulated (never explored to completion)"

    configs = [f"  {name:<16} {how(name)}" for name in config_names()]
    mutants = [f"  {m.name:<31} {m.breaks}, caught by {m.caught_by} in {m.config}" for m in MUTANTS.values()]
    return "\n".join(
        [
            "configurations (--config; without it, every pinned one, then the others simulated):",
            *configs,
            "",
            "model mutants (--mutant; without --config it runs the mutant's own configuration):",
            *mutants,
            "",
            "The reference's mutants are another set: see `teamproto mutants --help`.",
            "Exit status: 0 every check held (with --mutant: the mutant was caught), 1 a check failed "
            "(with --mutant: not caught), 2 bad input.",
        ]
    )


def register(commands: Any) -> Any:
    parser = commands.add_parser(
        "check",
        help="explore the abstract model exhaustively and check every invariant",
        description="Explore the model's configurations breadth-first and check every invariant, every "
        "edge of every machine and every crash point (or simulate them with --simulate).",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        action="append",
        help="a configuration; repeat for several (default: every configuration with a pinned count)",
    )
    parser.add_argument(
        "--mutant", metavar="NAME", help="explore a model mutant (names below); exit 0 when it is caught"
    )
    parser.add_argument("--max-states", type=int, default=None, help="stop after this many states (incomplete)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="stop exploring a configuration after this many seconds (incomplete)",
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="random walks instead of an exhaustive search (every configuration without --config)",
    )
    parser.add_argument(
        "--walks", type=int, default=DEFAULT_PLAN.walks, help=f"walks per simulation (default {DEFAULT_PLAN.walks})"
    )
    parser.add_argument(
        "--walk-depth",
        type=int,
        default=DEFAULT_PLAN.depth,
        help=f"steps per walk at most (default {DEFAULT_PLAN.depth})",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_PLAN.seed, help="the simulation's seed (default 0)")
    parser.add_argument(
        "--crash-rate",
        type=float,
        default=DEFAULT_PLAN.crash_rate,
        help=f"how often a simulated step crashes when it can (default {DEFAULT_PLAN.crash_rate})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="run configurations on this many processes (default: one per processor; 1 runs in this process); "
        "a split configuration's part named alone is searched on them all (spread)",
    )
    parser.add_argument(
        "--fingerprints",
        action="store_true",
        help="hash compaction for runs too large to keep every state: the visited set keeps a 64-bit hash "
        "of each state, traces are rebuilt by replay (the liveness check is off: it needs every state and edge)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="with one --config: go on with the search saved in PATH, if any, and save it there every "
        "--checkpoint-seconds and when a bound stops it (implies --fingerprints; needs a fixed PYTHONHASHSEED)",
    )
    parser.add_argument(
        "--checkpoint-seconds",
        type=float,
        default=CHECKPOINT_SECONDS,
        help=f"how often a --checkpoint is saved (default {CHECKPOINT_SECONDS:.0f})",
    )
    parser.add_argument(
        "--audit",
        action="store_true",
        help="audit every exhaustive run, not only those whose counts drifted from the manifest: search it "
        "again on the other engine and without any reduction, and fail where they find otherwise",
    )
    parser.add_argument(
        "--no-audit", action="store_true", help="do not audit the runs whose counts drifted (faster; less said)"
    )
    parser.add_argument("--trace-out", help="write the first counterexample as a JSON trace here")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return command
