"""``teamproto check``: explore the model's configurations and report (the main job).

Without ``--config`` it runs the default suite — every configuration with a pinned count in the
manifest — and requires that together they take every edge of every machine and crash at every
crash point; then it simulates (random walks, :mod:`spec.simulate`) each configuration never
explored to completion (marked ``pending`` in the manifest), so that their deep states are
checked too. ``--simulate`` runs only simulations.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import resource
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

from rich.console import Console
from rich.table import Table

from spec import _compiled
from spec.explore import Report, explore, format_trace, trace_json
from spec.invariants import INVARIANTS
from spec.model import CRASH_POINTS, MUTANTS, Model, load_config, manifest
from spec.model._config import Config, config_names
from spec.simulate import DEFAULT_PLAN, Plan, simulate

EXTRA_CHECKS = {  # reported beside the invariants (an illegal edge is INV-3's own name)
    "INV-7": ["reconcile_is_idempotent"],
    "INV-12": ["no_deadlock", "every_request_can_finish", "no_cycle_avoids_finish"],
}


DEFAULTS = Plan()
"""The simulation's defaults (read from an instance: a compiled dataclass keeps no class defaults)."""

CHECKPOINT_SECONDS = 600.0
"""How often ``--checkpoint`` saves a long search (and when a bound stops it)."""

CHECKPOINT_FORMAT = "teamproto-checkpoint/2"  # /2: the header and the search are pickled one after the other

PROGRESS_SECONDS = 3.0
"""A progress line at most this often (the explorer reports every 2,000 states)."""


def check_names() -> list[tuple[str, str]]:
    """(clause, check name) of every check the explorer reports, invariants first."""
    names = [(inv.clause, inv.name) for inv in INVARIANTS]
    for clause, extra in EXTRA_CHECKS.items():
        names.extend((clause, name) for name in extra)
    return names


def peak_memory_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass(frozen=True)
class Bounds:
    """How a run of ``teamproto check`` is bounded and kept: its limits, hash compaction, and the
    file a search with fingerprints is saved to and resumed from."""

    max_states: int | None = None
    max_seconds: float | None = None
    fingerprints: bool = False
    checkpoint: Path | None = None
    checkpoint_seconds: float = CHECKPOINT_SECONDS


class BadCheckpoint(Exception):
    """A checkpoint file that cannot be resumed: unreadable, or of another model or run."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"checkpoint {path}: {reason}; it was left as it is")


def load_checkpoint(
    path: Path, config: Config, mutant: str | None, search: bool = True
) -> tuple[dict[str, Any], float] | None:
    """The saved search in ``path`` and the seconds spent on it so far, or None when there is no
    file yet. Refuses (:class:`BadCheckpoint`) a file that is not a checkpoint, or one made by
    another source of the model (``spec/``), another configuration or another mutant. The file
    holds a small header, then the search: with ``search`` false only the header is read (the
    search returned is empty), to refuse a bad file before a run without loading it twice."""
    if not path.exists():
        return None
    try:
        with path.open("rb") as file:
            kept = pickle.load(file)  # the user's own file, written by save_checkpoint
            if not isinstance(kept, dict) or kept.get("format") != CHECKPOINT_FORMAT:
                raise BadCheckpoint(path, "not a teamproto checkpoint")
            _check_header(path, kept, config, mutant)
            saved: dict[str, Any] = pickle.load(file) if search else {}
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as error:
        raise BadCheckpoint(path, f"unreadable ({error})") from error
    return saved, kept["seconds"]


def _check_header(path: Path, kept: dict[str, Any], config: Config, mutant: str | None) -> None:
    if kept["hash_seed"] != os.environ.get("PYTHONHASHSEED"):
        raise BadCheckpoint(path, f"saved with PYTHONHASHSEED={kept['hash_seed']}: run with the same")
    if kept["source"] != _compiled.source_digest():
        raise BadCheckpoint(path, "saved by another version of the model (spec/ changed since)")
    if (kept["config"], kept["mutant"]) != (config.name, mutant):
        saved, wanted = _run_name(kept["config"], kept["mutant"]), _run_name(config.name, mutant)
        raise BadCheckpoint(path, f"a search of {saved}, not of {wanted}")


def _run_name(config: str, mutant: str | None) -> str:
    return f"{config} with the mutant {mutant}" if mutant else config


def save_checkpoint(path: Path, config: Config, mutant: str | None, search: dict[str, Any], seconds: float) -> None:
    """Write the saved search atomically: a crash while writing leaves the previous checkpoint."""
    kept = {
        "format": CHECKPOINT_FORMAT,
        "source": _compiled.source_digest(),
        "hash_seed": os.environ.get("PYTHONHASHSEED"),
        "config": config.name,
        "mutant": mutant,
        "seconds": seconds,
    }
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as file:
        pickle.dump(kept, file, protocol=pickle.HIGHEST_PROTOCOL)  # the header, read alone by the CLI first
        pickle.dump(search, file, protocol=pickle.HIGHEST_PROTOCOL)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)


def run_config(
    config: Config,
    mutant: str | None,
    bounds: Bounds = Bounds(),
    plan: Plan | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[Report, float]:
    """Explore ``config`` exhaustively, or simulate it when a ``plan`` of walks is given; ``say``
    receives a progress line (rich markup) at most every :data:`PROGRESS_SECONDS`. With a
    checkpoint file, the search goes on from it and is saved to it (see :class:`Bounds`); the
    seconds returned then count every run of it."""
    started = time.perf_counter()
    max_seconds = bounds.max_seconds
    resume, before = None, 0.0
    if bounds.checkpoint is not None:
        found = load_checkpoint(bounds.checkpoint, config, mutant)
        if found is not None:
            resume, before = found
            if say is not None:
                say(f"  [dim]{config.name}: resumed from {bounds.checkpoint} ({before:,.0f} s spent before)[/dim]")
    last_saved = [started]

    def checkpoint(save: Callable[[], dict[str, Any]], final: bool) -> None:
        now = time.perf_counter()
        if bounds.checkpoint is None or not (final or now - last_saved[0] >= bounds.checkpoint_seconds):
            return
        data = save()
        save_checkpoint(bounds.checkpoint, config, mutant, data, before + now - started)
        last_saved[0] = time.perf_counter()
        if say is not None:
            say(f"  [dim]{config.name}: {data['count']:,} states saved to {bounds.checkpoint}[/dim]")

    stop_on = MUTANTS[mutant].caught_by if mutant else None

    last = [started]

    def progress(states: int, queue: int, depth: int) -> None:
        now = time.perf_counter()
        if say is not None and now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            rate = states / max(before + now - started, 1e-9)  # a resumed search: over all its runs
            line = (
                f"{states:,} distinct states, {queue:,} walks, longest {depth}"
                if plan is not None
                else f"{states:,} states, {queue:,} queued, depth {depth}, {rate:,.0f} states/s"
            )
            say(f"  [dim]{config.name}: {line}[/dim]")

    def out_of_time() -> bool:
        return max_seconds is not None and time.perf_counter() - started > max_seconds

    model = Model(config, mutant)
    if plan is not None:
        report = simulate(model, plan, stop_on=stop_on, progress=progress, out_of_time=out_of_time)
    else:
        report = explore(
            model,
            stop_on=stop_on,
            max_states=bounds.max_states,
            progress=progress,
            out_of_time=out_of_time,
            fingerprints=bounds.fingerprints or bounds.checkpoint is not None,
            resume=resume,
            checkpoint=None if bounds.checkpoint is None else checkpoint,
        )
    return report, before + time.perf_counter() - started


Job = tuple[Config, Plan | None]
"""One run of ``teamproto check``: a configuration, and the walks to simulate (None: exhaustive)."""

_PROGRESS: Any = None  # a worker process's queue of progress lines


def _start_worker(queue: Any) -> None:
    global _PROGRESS
    _PROGRESS = queue


def _work(index: int, job: Job, mutant: str | None, bounds: Bounds, quiet: bool) -> tuple[int, Report, float, float]:
    say = None if quiet else _PROGRESS.put
    report, seconds = run_config(job[0], mutant, bounds, job[1], say)
    return index, report, seconds, peak_memory_mib()


def _cost(job: Job) -> float:
    """A run's expected cost, to start the longest first: its pinned transitions (a simulation
    costs about as much as a search of 150,000 transitions)."""
    config, plan = job
    pinned = manifest().get(config.name, {}).get("transitions")
    return 150_000.0 if plan is not None or pinned is None else float(pinned)


def run_jobs(
    jobs: list[Job],
    mutant: str | None,
    bounds: Bounds,
    workers: int,
    say: Callable[[str], None] | None,
    done: Callable[[int, Report, float], None],
) -> tuple[list[tuple[Report, float]], float]:
    """Run every job, on ``workers`` processes when more than one (the longest first); ``done``
    is called for each run in the order of ``jobs``, as soon as it and every run before it ended.
    Returns the runs in that order and the peak memory of the largest process in MiB."""
    results: dict[int, tuple[Report, float]] = {}
    reported = 0
    peak = peak_memory_mib()

    def report_ready() -> None:
        nonlocal reported
        while reported in results:
            done(reported, *results[reported])
            reported += 1

    if workers <= 1 or len(jobs) <= 1:
        for index, job in enumerate(jobs):
            results[index] = run_config(job[0], mutant, bounds, job[1], say)
            report_ready()
        return [results[i] for i in range(len(jobs))], peak_memory_mib()
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()

    def relay() -> None:
        while True:
            try:
                line = queue.get_nowait()
            except Empty:
                return
            if say is not None:
                say(line)

    order = sorted(range(len(jobs)), key=lambda i: -_cost(jobs[i]))
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker, initargs=(queue,)) as pool:
        pending = {pool.submit(_work, i, jobs[i], mutant, bounds, say is None) for i in order}
        while pending:
            finished, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            relay()
            for future in finished:
                index, report, seconds, worker_peak = future.result()
                results[index] = (report, seconds)
                peak = max(peak, worker_peak)
            report_ready()
    relay()
    return [results[i] for i in range(len(jobs))], max(peak, peak_memory_mib())


def default_workers() -> int:
    """One worker per processor this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def report_json(report: Report, seconds: float, config: Config) -> dict[str, Any]:
    pinned = manifest().get(config.name, {}).get("states")
    return {
        "config": config.name,
        "mode": "simulation" if report.simulation else "exhaustive",
        "mutant": report.mutant,
        "states": report.states,
        "transitions": report.transitions,
        "depth": report.depth,
        "expanded_through_depth": report.expanded_through,
        "states_by_depth": report.states_by_depth,
        "seconds": round(seconds, 3),
        "states_per_second": round(report.states / max(seconds, 1e-9)),
        "complete": report.complete,
        "pinned_states": pinned,
        "liveness_checked": report.liveness_checked,
        "deadlocks": report.deadlocks,
        **({"fingerprints": True, "omission_bound": report.omission_bound} if report.fingerprints else {}),
        "checks": {name: ("violated" if name in report.violations else "held") for _, name in check_names()},
        "violations": [trace_json(v, config) for v in report.violations.values()],
        "missing_edges": [list(edge) for edge in report.missing_edges],
        "crashed_at": sorted(report.crashed_at),
        **({"walks": report.walks, "seed": report.seed, "crash_rate": report.crash_rate} if report.simulation else {}),
        "ok": report.ok,
    }


def _print_report(console: Console, report: Report, seconds: float, config: Config) -> None:
    if report.simulation:
        console.print(
            f"[bold]{config.name}[/bold]{' mutant ' + report.mutant if report.mutant else ''} "
            f"[yellow]simulated[/yellow] (random walks, seed {report.seed}, crash rate {report.crash_rate}; "
            "not exhaustive): "
            f"{report.walks:,} walks, {report.transitions:,} steps, {report.states:,} distinct states, "
            f"longest walk {report.depth}, {seconds:.1f} s, {report.transitions / max(seconds, 1e-9):,.0f} steps/s",
            highlight=False,
        )
        for violation in report.violations.values():
            console.print(format_trace(violation, config), highlight=False, markup=False)
        return
    pinned = manifest().get(config.name, {}).get("states")
    drift = "" if report.mutant or pinned in (None, report.states) else f" [red](manifest pins {pinned:,})[/red]"
    console.print(
        f"[bold]{config.name}[/bold]{' mutant ' + report.mutant if report.mutant else ''}: "
        f"{report.states:,} states{drift}, {report.transitions:,} transitions, depth {report.depth}, "
        f"{seconds:.1f} s, {report.states / max(seconds, 1e-9):,.0f} states/s"
        + (
            ""
            if report.complete
            else f" [red]INCOMPLETE[/red] (a bound was reached; every state up to depth {report.expanded_through} "
            f"was expanded; new states by depth: {', '.join(f'{n:,}' for n in report.states_by_depth)})"
        )
        + (
            f"; fingerprints (hash compaction): a state missed with probability ≤ {report.omission_bound:.1e}"
            if report.fingerprints
            else ""
        ),
        highlight=False,
    )
    for violation in report.violations.values():
        console.print(format_trace(violation, config), highlight=False, markup=False)


def _summary_table(reports: list[tuple[Report, float, Config]]) -> Table:
    """One row per check, whatever the number of configurations: held, or where it was violated."""
    table = Table(title=f"checks over {len(reports)} run(s)")
    table.add_column("clause")
    table.add_column("check", no_wrap=True)
    table.add_column("result")
    for clause, name in check_names():
        liveness = name.startswith(("every_request", "no_cycle"))
        violated = [_label(r, c) for r, _, c in reports if name in r.violations]
        checked = [r for r, _, _ in reports if r.liveness_checked or not liveness]
        if violated:
            cell = f"[red]violated[/red] in {', '.join(violated)}"
        elif not checked:
            cell = "[dim]n/a[/dim] (needs an exhaustive run without symmetry)"
        elif len(checked) < len(reports):
            cell = f"[green]held[/green] in the {len(checked)} run(s) that check it"
        else:
            cell = "[green]held[/green]"
        table.add_row(clause, name, cell)
    return table


def _label(report: Report, config: Config) -> str:
    return f"{config.name} (simulated)" if report.simulation else config.name


def _plan(args: argparse.Namespace) -> Plan:
    for flag, value in (("--walks", args.walks), ("--walk-depth", args.walk_depth)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, not {value}")
    if args.simulate and args.max_states is not None:
        raise ValueError("--max-states bounds an exhaustive search; bound a simulation with --walks or --max-seconds")
    if not 0.0 <= args.crash_rate <= 1.0:
        raise ValueError(f"--crash-rate must be between 0 and 1, not {args.crash_rate}")
    return Plan(walks=args.walks, depth=args.walk_depth, seed=args.seed, crash_rate=args.crash_rate)


def command(args: argparse.Namespace, console: Console) -> int:
    if args.mutant and args.mutant not in MUTANTS:
        console.print(f"[red]unknown mutant {args.mutant!r}[/red]; known: {', '.join(MUTANTS)}")
        return 2
    try:
        plan = _plan(args)
    except ValueError as error:
        console.print(f"[red]{error}[/red]")
        return 2
    if args.jobs is not None and args.jobs < 1:
        console.print(f"[red]--jobs must be at least 1, not {args.jobs}[/red]")
        return 2
    names = args.config or []
    jobs: list[Job]
    if args.simulate:
        jobs = [(load_config(name), plan) for name in (names or config_names())]
    elif names:
        jobs = [(load_config(name), None) for name in names]
    else:
        jobs = [(load_config(name), None) for name in default_suite()]
        jobs += [(load_config(name), plan) for name in pending_configs()]
    if args.fingerprints or args.checkpoint:
        refused = [config.name for config, how in jobs if how is not None or config.liveness]
        if refused:
            console.print(
                "[red]--fingerprints and --checkpoint apply to exhaustive searches without the liveness check[/red] "
                f"(it needs every state and edge); not to: {', '.join(refused)}",
                highlight=False,
            )
            return 2
    if args.checkpoint and not os.environ.get("PYTHONHASHSEED", "").isdigit():
        console.print(
            "[red]--checkpoint needs the same string hashes in every run of the search[/red] (its fingerprints "
            "hash strings): start it with a fixed seed, e.g. PYTHONHASHSEED=0 teamproto check --checkpoint …",
            highlight=False,
        )
        return 2
    if args.checkpoint and len(jobs) != 1:
        console.print("[red]--checkpoint saves one search: name one configuration with --config[/red]")
        return 2
    if args.checkpoint_seconds <= 0:
        console.print(f"[red]--checkpoint-seconds must be positive, not {args.checkpoint_seconds}[/red]")
        return 2
    bounds = Bounds(
        args.max_states,
        args.max_seconds,
        args.fingerprints,
        None if args.checkpoint is None else Path(args.checkpoint),
        args.checkpoint_seconds,
    )
    if bounds.checkpoint is not None and not bounds.checkpoint.absolute().parent.is_dir():
        console.print(f"[red]--checkpoint {bounds.checkpoint}: no such folder[/red]", highlight=False)
        return 2
    if bounds.checkpoint is not None:
        try:  # refuse a bad file before anything runs
            load_checkpoint(bounds.checkpoint, jobs[0][0], args.mutant, search=False)
        except BadCheckpoint as error:
            console.print(str(error), style="red", highlight=False, markup=False)
            return 2
    for config, how in jobs:
        pending = manifest().get(config.name, {}).get("pending")
        if pending and how is None:  # on stderr with --json
            console.print(
                f"[yellow]{config.name} has never been explored to completion[/yellow] ({pending}); "
                "bound the run with --max-seconds or --max-states, or --simulate it",
                highlight=False,
            )
    workers = min(args.jobs or default_workers(), len(jobs))

    def say(line: str) -> None:
        console.print(line, highlight=False)

    def done(index: int, report: Report, seconds: float) -> None:
        if not args.json:
            _print_report(console, report, seconds, jobs[index][0])

    started = time.perf_counter()
    # With --json the console writes to stderr: progress stays beside the JSON, not in it.
    results, peak = run_jobs(jobs, args.mutant, bounds, workers, say, done)
    wall = time.perf_counter() - started
    runs = [(report, seconds, config) for (report, seconds), (config, _) in zip(results, jobs, strict=True)]
    taken = set().union(*(r.edges_taken for r, _, _ in runs))
    crashed = set().union(*(r.crashed_at for r, _, _ in runs))
    coverage_required = (args.config is None and not args.simulate) or any(c.require_coverage for c, _ in jobs)
    missing_edges = sorted({e for r, _, _ in runs for e in r.missing_edges} - taken)
    missing_crashes = [p for p in CRASH_POINTS if p not in crashed]
    drift = [
        c.name
        for r, _, c in runs
        if not args.mutant
        and r.complete
        and not r.simulation
        and manifest().get(c.name, {}).get("states") is not None
        and (manifest()[c.name]["states"], manifest()[c.name]["transitions"]) != (r.states, r.transitions)
    ]
    violated = any(r.violations for r, _, _ in runs)
    complete = all(r.complete for r, _, _ in runs)
    ok = (
        complete
        and not violated
        and not drift
        and (not coverage_required or not (missing_edges or missing_crashes) or bool(args.mutant))
    )
    if args.trace_out:
        first = next((v for r, _, c in runs for v in r.violations.values()), None)
        if first is not None:
            config = next(c for r, _, c in runs if first in r.violations.values())
            Path(args.trace_out).write_text(json.dumps(trace_json(first, config), indent=2) + "\n", encoding="utf-8")
    if args.json:
        json.dump(
            {
                "runs": [report_json(r, s, c) for r, s, c in runs],
                "missing_edges": missing_edges,
                "missing_crash_points": missing_crashes,
                "manifest_drift": drift,
                "peak_memory_mib": round(peak, 1),
                "workers": workers,
                "compiled": _compiled.ACTIVE,
                "seconds": round(wall, 3),
                "ok": ok,
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        console.print(_summary_table(runs))
        total_edges = sum(1 for _ in _all_edges())
        console.print(
            f"edge coverage: {total_edges - len(missing_edges)}/{total_edges}; crash points: "
            f"{len(CRASH_POINTS) - len(missing_crashes)}/{len(CRASH_POINTS)}; "
            f"{wall:.1f} s on {workers} worker process(es), "
            f"{'compiled' if _compiled.ACTIVE else 'interpreted (scripts/compile.py builds the compiled explorer)'}; "
            f"peak memory {peak:,.0f} MiB (largest process)",
            highlight=False,
        )
        for edge in missing_edges if coverage_required and not args.mutant else ():
            console.print(f"[red]edge never taken[/red]: {edge[0]} {edge[1]} -> {edge[2]}")
        for point in missing_crashes if coverage_required and not args.mutant else ():
            console.print(f"[red]never crashed after[/red] {point}")
        for name in drift:
            console.print(
                f"[red]state or transition count of {name} drifted from the manifest[/red]: "
                "update spec/model/configs/manifest.json in the same commit"
            )
        console.print("[green]all checks hold[/green]" if ok else "[red]check failed[/red]")
    if args.mutant:
        return 0 if violated else 1
    return 0 if ok else 1


def default_suite() -> list[str]:
    """The configurations ``teamproto check`` explores by default: every one with a pinned count."""
    return [name for name, pinned in manifest().items() if pinned.get("states") is not None]


def pending_configs() -> list[str]:
    """The configurations never explored to completion: ``teamproto check`` simulates them."""
    return [name for name, pinned in manifest().items() if pinned.get("states") is None]


def _all_edges() -> list[tuple[str, str, str]]:
    from spec import MACHINES, edges

    return [(name, e.source, e.target) for name in MACHINES for e in edges(name)]


def register(commands: Any) -> Any:
    parser = commands.add_parser("check", help="explore the abstract model exhaustively and check every invariant")
    parser.add_argument(
        "--config",
        action="append",
        help="a configuration; repeat for several (default: every configuration with a pinned count)",
    )
    parser.add_argument("--mutant", help="explore a named mutant; exit 0 when a violation is found")
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
        help="run configurations on this many processes (default: one per processor; 1 runs in this process)",
    )
    parser.add_argument(
        "--fingerprints",
        action="store_true",
        help="hash compaction for runs too large to keep every state: the visited set keeps a 64-bit hash "
        "of each state, traces are rebuilt by replay (not with liveness)",
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
    parser.add_argument("--trace-out", help="write the first counterexample as a JSON trace here")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return command
