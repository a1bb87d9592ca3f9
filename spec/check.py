"""The model checker's driver (``teamproto check``): explore the model's configurations and judge the run.

Without configuration names it runs the default suite — every configuration with a pinned count
in the manifest — and requires that together they take every edge of every machine and crash at
every crash point; then it simulates (random walks, :mod:`spec.simulate`) each configuration never
explored to completion (marked ``pending`` in the manifest), so that their deep states are
checked too. :func:`run_jobs` runs the searches (on worker processes), :func:`summarize` judges
them; the command line (:mod:`teamproto._check_cli`) is a thin layer that parses, validates and
prints.

Unlike the rest of ``spec/``, this module does I/O, on purpose and only here: it starts worker
processes, reads the clock to bound a run (``--max-seconds``) and to pace progress lines, and
reads and writes ``--checkpoint`` files. The explorer and the model it drives stay pure.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from spec import _compiled, drift
from spec.audit import Audit, audit
from spec.errors import ProtocolError
from spec.explore import Report, engine_name, explore_states, trace_json
from spec.invariants import INVARIANTS
from spec.model import CRASH_POINTS, MUTANTS, Model, manifest, unreached_bounds
from spec.model._config import Config, engine_choice, pins
from spec.simulate import Plan, simulate

EXTRA_CHECKS = {  # reported beside the invariants (an illegal edge is INV-3's own name)
    "APR-8": ["world_agrees_with_executions"],  # spec.invariants.WORLD: the stores against the model's world
    "INV-7": ["reconcile_is_idempotent"],
    "INV-12": ["no_deadlock", "every_request_can_finish", "no_cycle_avoids_finish"],
    "PLN-9": ["deadline_is_the_last_instant"],  # and APR-5, PLN-5, SHD-6: one check for every deadline
    "SHD-2": ["deadline_boundaries_reached"],  # and APR-4, APR-5, PLN-5, SHD-6: every deadline guard's boundary
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
    """The peak resident memory of this process or of the largest child it waited for, in MiB."""
    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


@dataclass(frozen=True)
class Bounds:
    """How a run of ``teamproto check`` is bounded and kept: its limits, hash compaction, and the
    file a search with fingerprints is saved to and resumed from."""

    max_states: int | None = None
    max_seconds: float | None = None
    fingerprints: bool = False
    checkpoint: Path | None = None
    checkpoint_seconds: float = CHECKPOINT_SECONDS
    processes: int = 1  # processes one exhaustive search is spread over (spec._parallel), if it can be


class BadCheckpoint(ProtocolError):
    """A checkpoint file that cannot be resumed: unreadable, truncated, or of another model or run.
    Definite: the file is left as it is and no search ran from it."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"checkpoint {path}: {reason}; it was left as it is")

    def __reduce__(self) -> tuple[Any, ...]:  # raised in a worker process, re-raised in the caller
        return (BadCheckpoint, (self.path, self.reason))


def load_checkpoint(
    path: Path, config: Config, mutant: str | None, search: bool = True
) -> tuple[dict[str, Any], float] | None:
    """The saved search in ``path`` and the seconds spent on it so far, or None when there is no
    file yet. Refuses (:class:`BadCheckpoint`) a file that is not a checkpoint, or one made by
    another source of the model (``spec/``), another configuration or another mutant, or by the
    other engine than the one that would resume it (:func:`spec.explore.engine_name`). The file
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
    made, engine = kept.get("engine", "model"), engine_name(Model(config, mutant))  # files before engines: the model's
    if made != engine:
        reason = f"saved by the {made} engine, not the {engine} engine this run uses"
        raise BadCheckpoint(path, f"{reason}: resume it with TEAMPROTO_ENGINE={made}")


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
        "engine": search.get("engine", "model"),  # the engine that saved it: only it resumes it
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
        max_states = bounds.max_states or drift.state_bound(pins(config.name))  # issue 19
        fingerprints = bounds.fingerprints or bounds.checkpoint is not None
        report, states = explore_states(
            model,
            stop_on=stop_on,
            max_states=max_states,
            progress=progress,
            out_of_time=out_of_time,
            fingerprints=fingerprints,
            resume=resume,
            checkpoint=None if bounds.checkpoint is None else checkpoint,
            processes=bounds.processes,
        )
        if states is not None and report.complete and not report.fingerprints and mutant is None:  # at hand
            report.unreached_bounds = unreached_bounds(config, states, bool(report.crashed_at))
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
    pinned = pins(config.name).get("transitions")
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
    engine_choice(os.environ.get("TEAMPROTO_ENGINE"))  # a misspelt engine is refused here, before any worker starts
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
    pinned = pins(config.name).get("states")
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
        "unreached_bounds": report.unreached_bounds,
        **({"walks": report.walks, "seed": report.seed, "crash_rate": report.crash_rate} if report.simulation else {}),
        "ok": report.ok,
    }


def default_suite() -> list[str]:
    """The configurations ``teamproto check`` explores by default: every one with a pinned count."""
    return [name for name, pinned in manifest().items() if pinned.get("states") is not None]


def pending_configs() -> list[str]:
    """The configurations never explored to completion: ``teamproto check`` simulates them."""
    return [name for name, pinned in manifest().items() if pinned.get("states") is None]


def all_edges() -> list[tuple[str, str, str]]:
    """Every edge of every machine: (machine, source, target)."""
    from spec import MACHINES, edges

    return [(name, e.source, e.target) for name in MACHINES for e in edges(name)]


Run = tuple[Report, float, Config]
"""One finished run: its report, the seconds it took, its configuration."""


@dataclass(frozen=True)
class Summary:
    """The verdict over the runs of one ``teamproto check``."""

    missing_edges: list[tuple[str, str, str]]
    missing_crash_points: list[str]
    coverage_required: bool
    drifts: list[drift.Drift]  # configurations whose counts differ from the manifest's, and how (issue 19)
    outgrown: list[str]  # searches stopped far past their pinned counts, as findings
    violated: bool
    complete: bool
    ok: bool
    audits: list[Audit] = field(default_factory=list)  # spec.audit: the runs searched again (drifted, or --audit)


def summarize(runs: list[Run], coverage_required: bool, mutant: str | None) -> Summary:
    """Judge the runs: every check held, every run complete, no count drifted from the manifest
    and — when coverage is required (the default suite, or a configuration that asks for it) —
    every edge taken and every crash point crashed by some run. With a mutant only the first
    counts for the exit status (see :func:`mutant_caught`); coverage and drift are not asked."""
    taken = set().union(*(r.edges_taken for r, _, _ in runs))
    crashed = set().union(*(r.crashed_at for r, _, _ in runs))
    missing_edges = sorted({e for r, _, _ in runs for e in r.missing_edges} - taken)
    missing_crashes = [p for p in CRASH_POINTS if p not in crashed]
    pinned = [(r, c, pins(c.name)) for r, _, c in runs if not mutant and not r.simulation]
    drifts = [drift.explain(c.name, p, r) for r, c, p in pinned if r.complete and p.get("states") is not None]
    drifts = [d for d in drifts if d.drifted]
    outgrown = [f for r, c, p in pinned if (f := drift.outgrown(c.name, p, r))]
    violated = any(r.violations for r, _, _ in runs)
    complete = all(r.complete for r, _, _ in runs)
    covered = not coverage_required or not (missing_edges or missing_crashes) or bool(mutant)
    ok = complete and not violated and not drifts and covered
    return Summary(missing_edges, missing_crashes, coverage_required, drifts, outgrown, violated, complete, ok)


def auditable(report: Report) -> bool:
    """Whether :func:`spec.audit.audit` can audit a run: a complete, exhaustive search of the
    healthy model that kept its states (not simulated, not bounded, not hash-compacted)."""
    return report.complete and not report.simulation and not report.fingerprints and report.mutant is None


def _audit_one(index: int, report: Report, config: Config) -> tuple[int, Audit]:
    return index, audit(config, report)


def run_audits(
    runs: list[Run], drifted: set[str], every: bool, workers: int, say: Callable[[str], None] | None
) -> list[Audit]:
    """Audit (:mod:`spec.audit`) each auditable run whose configuration drifted, or each one with
    ``every``, on ``workers`` processes (the largest first); the audits in the order of ``runs``."""
    todo = [(r, c) for r, _, c in runs if auditable(r) and (every or c.name in drifted)]
    if say is not None and todo:
        say(f"  [dim]auditing {', '.join(c.name for _, c in todo)}: the other engine, and no reductions[/dim]")
    if workers <= 1 or len(todo) <= 1:
        return [audit(c, r) for r, c in todo]
    order = sorted(range(len(todo)), key=lambda i: -todo[i][0].transitions)
    found: dict[int, Audit] = {}
    with ProcessPoolExecutor(min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
        for index, result in pool.map(_audit_one, order, [todo[i][0] for i in order], [todo[i][1] for i in order]):
            found[index] = result
    return [found[i] for i in range(len(todo))]


def mutant_caught(runs: list[Run]) -> list[str]:
    """The checks a mutant's runs violated, as "clause name" (empty: the mutant was not caught)."""
    return sorted({f"{v.clause} {name}" for r, _, _ in runs for name, v in r.violations.items()})
