"""Explorer throughput: the reduced search against a naive one, side by side in one run.

For each configuration: distinct states, transitions, wall time and states/s with every
reduction on (partial-order reduction of outbox sends, dead-data reduction, symmetry where the
configuration allows it, crashed states kept transient) and with the naive search (none of the
first three), then the ratio of wall times. Peak memory of the whole run is printed last,
with whether the explorer ran compiled (`scripts/compile.py`; `TEAMPROTO_PURE=1` runs it interpreted).
Targets (issue 3): `standard` fully explored in ≤ 60 s, ≥ 50,000 states/s, ≤ 2 GiB.

Every run is bounded by ``--seconds`` (default 120). Where the reduced search completes and the
naive one does not (``wide`` without symmetry has millions of states), the wall-time ratio is a
lower bound (printed with ``≥``). A configuration the manifest marks ``pending`` (``standard``)
completes in neither; then the figures are the states reached, the depth completed and the rate,
and the ratio is of rates, not of wall times.
Run: ``python bench/explore.py [--json] [--seconds N] [CONFIG ...]`` (default: the default suite,
then ``standard``).

First (issue 18 item 3) it prints the engine against the engine of :data:`BASELINE` (the explorer
before the state-keyed invariant memo and the numbered visited set), side by side: each explores
``--engine-configs`` (default ``pair_crashes``) in a fresh process, the baseline from that git
revision's ``spec/`` unpacked into a temporary folder, alternately ``--rounds`` times; the figures
are distinct states and transitions per CPU-second of the process, and the ratio is this tree's
transitions per CPU-second over the baseline's (best round of each; both take the same
transitions). A configuration never explored to completion (``standard``, ``everything``) is
simulated as ``teamproto check`` does, with :data:`WALKS` walks. Target: ≥ 10×. ``--engine-only``
stops after it. Both run interpreted (``TEAMPROTO_PURE=1``) unless ``--compiled``: then this
tree runs its build (made by ``scripts/compile.py``) and the baseline is compiled in its
temporary folder first (~40 s of CPU).

The engines must agree, or the ratio means nothing: every round of both must report the same
states, transitions, violations (with their clauses, messages and traces), edges taken, crash
points and deadlocks. ``--engine-configs pinned mutants`` runs every pinned configuration and every
model mutant on its own configuration (until its invariant is broken, or :data:`MUTANT_STATES`
states) — the differential test of a new engine against today's, which stays the oracle.
A configuration or mutant the baseline revision lacks (added since) is skipped and named. A run
marked "plain tuples" ran on :mod:`spec._flat_explore` (``explore()`` picks it where
:func:`spec.model._flat.supports` the configuration and mutant).

``--flat-vs-model CONFIG --states N`` (e.g. ``standard``, whose time runs in deadline regions)
instead runs this tree's two engines on the first ``N`` states of ``CONFIG``'s breadth-first search,
each in a fresh process, alternately ``--rounds`` times: the plain-tuple engine
(``TEAMPROTO_ENGINE=flat``) and the model's own search (``TEAMPROTO_ENGINE=model``); with
``--fingerprints`` both with hash compaction, and then each once more to ``N/2`` for the bytes one
more state costs (issue 18 item 5). Both must
reach the same states per depth, transitions and findings; it prints states and transitions per
CPU-second of each, their ratio, and the time an exhaustive search of ``--estimate LOW HIGH``
states (default ``standard``'s estimate, 1.5e8–7e8) would take at each rate — a rate measured on
the first states, where the memo is still cold and the states are small, so an extrapolation.

``--spread CONFIG`` (issue 18 item 5) runs CONFIG's flat search in one process and spread over
``--processes`` (default 2) forked processes (:mod:`spec._parallel`), alternately ``--rounds``
times, to completion or to ``--states`` states with ``--bounded``; both must find the same states
per depth (a bounded pair: the depths both found whole), transitions, checks broken, edges and
crash points (complete runs). It prints each one's wall and CPU seconds (the spread: its
processes' together) and states per wall-second, and the ratio of wall times (best round each).

``--memo-limit CONFIG --states N [--limits A B …]`` (issue 18 item 5) runs CONFIG's flat search to
``N`` states with the checks' memo tables emptied past each limit in turn
(:data:`spec._flat_explore.MEMO_LIMIT`; default 2^14, the old limit, against 2^18, today's), each in
a fresh process, alternately ``--rounds`` times; all must find the same states per depth,
transitions and findings; it prints states per CPU-second and peak memory of each, and the ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from spec import _compiled
from spec.check import default_suite
from spec.explore import explore
from spec.model import MUTANTS, Model, load_config, manifest

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "59053e7dde5448f697bbf3eb2f095fa219ce996d"
"""main before this session's engine work (issue 18 item 3): today's engine, the oracle of the ratio
(``--baseline d13c6b54d798`` measures against main before the state-keyed memo of the session before)."""

WALKS = 300
"""Walks of a simulated configuration (``standard``, ``everything``: ``teamproto check`` runs 3,000)."""

CHILD = """
import json, sys, time
from spec import _compiled
from spec.explore import explore
from spec.model import MUTANTS, Model, load_config, manifest
name, _, mutant = sys.argv[1].partition(":")
model = Model(load_config(name), mutant or None)
started = time.process_time()
if manifest()[name]["states"] is None:  # never explored to completion: simulated, as check does
    from spec.simulate import Plan, simulate
    report = simulate(model, Plan(walks=int(sys.argv[2])))
elif mutant:  # until its invariant is broken, as the model tests run it
    report = explore(model, stop_on=MUTANTS[mutant].caught_by, max_states=int(sys.argv[3]))
else:
    report = explore(model)
cpu = time.process_time() - started
import spec.explore as explorer
flat = getattr(explorer, "flat_engine", lambda model: False)(model) and not manifest()[name]["states"] is None
print(json.dumps({"states": report.states, "transitions": report.transitions, "cpu": cpu, "tuples": flat,
                  "violations": sorted(report.violations), "compiled": _compiled.ACTIVE,
                  "findings": [sorted(map(list, report.edges_taken)), sorted(report.crashed_at), report.deadlocks,
                               {n: [v.clause, v.message, [str(a) for a, _ in v.trace]]
                                for n, v in sorted(report.violations.items())}]}))
"""
MUTANT_STATES = 20_000
"""A mutant's search (``CONFIG:MUTANT``) stops at its invariant's violation or at this many states."""


ENGINES_CHILD = """
import json, resource, sys, time
from spec import _compiled
from spec.explore import explore, flat_engine
from spec.model import Model, load_config
model = Model(load_config(sys.argv[1]))
started = time.process_time()
report = explore(model, max_states=int(sys.argv[2]), fingerprints=sys.argv[3:] == ["fingerprints"])
cpu = time.process_time() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"states": report.states, "transitions": report.transitions, "cpu": cpu, "peak_mib": peak,
                  "tuples": flat_engine(model), "compiled": _compiled.ACTIVE, "by_depth": report.states_by_depth,
                  "findings": [sorted(map(list, report.edges_taken)), sorted(report.crashed_at), report.deadlocks,
                               {n: [v.clause, v.message, [str(a) for a, _ in v.trace]]
                                for n, v in sorted(report.violations.items())}]}))
"""
MEMO_CHILD = """
import json, resource, sys, time
import spec._flat_explore as flat
from spec import _compiled
from spec.model import Model, load_config
flat.MEMO_LIMIT = int(sys.argv[3])  # read at each trim, compiled or not
model = Model(load_config(sys.argv[1]))
started = time.process_time()
report = flat.search_flat(model, max_states=int(sys.argv[2])).report
cpu = time.process_time() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"states": report.states, "transitions": report.transitions, "cpu": cpu, "peak_mib": peak,
                  "compiled": _compiled.ACTIVE, "by_depth": report.states_by_depth,
                  "findings": [sorted(map(list, report.edges_taken)), sorted(report.crashed_at),
                               sorted(report.violations)]}))
"""
STANDARD_ESTIMATE = (1.5e8, 7e8)
"""``standard``'s estimated states (issue 18's review): the extrapolation's default range."""


def engines_child(name: str, states: int, engine: str, compiled: bool, fingerprints: bool = False) -> dict[str, Any]:
    args = [name, str(states), *(["fingerprints"] if fingerprints else [])]
    return run_child(ENGINES_CHILD, args, {"TEAMPROTO_ENGINE": engine}, ROOT, compiled)


def flat_against_model(
    name: str, states: int, rounds: int, compiled: bool, fingerprints: bool = False
) -> dict[str, Any]:
    """This tree's plain-tuple engine against its model search on the first ``states`` states
    (both with hash compaction when ``fingerprints``; then each also to half the bound once, for
    the memory one more state costs: the difference of the two peaks over that of the counts)."""
    runs: dict[str, list[dict[str, Any]]] = {"flat": [], "model": []}
    for number in range(rounds):
        for engine in ("model", "flat"):
            print(f"{name}: {engine} engine, round {number + 1}, {states:,} states …", file=sys.stderr, flush=True)
            runs[engine].append(engines_child(name, states, engine, compiled, fingerprints))
    first = runs["model"][0]
    same = all(
        (r["states"], r["transitions"], r["by_depth"], r["findings"])
        == (first["states"], first["transitions"], first["by_depth"], first["findings"])
        for r in runs["flat"] + runs["model"]
    )
    best = {engine: max(rs, key=lambda r: r["states_per_cpu_second"]) for engine, rs in runs.items()}
    for engine, run in best.items():
        run["fingerprints"] = fingerprints
        if fingerprints:
            print(f"{name}: {engine} engine, {states // 2:,} states …", file=sys.stderr, flush=True)
            half = engines_child(name, states // 2, engine, compiled, fingerprints)
            grown = (run["peak_mib"] - half["peak_mib"]) * 2**20
            run["bytes_per_state_more"] = grown / max(run["states"] - half["states"], 1)
    return {
        "flat": best["flat"],
        "model": best["model"],
        "ratio": best["flat"]["states_per_cpu_second"] / best["model"]["states_per_cpu_second"],
        "same": same,
        "ran_flat": all(r["tuples"] for r in runs["flat"]) and not any(r["tuples"] for r in runs["model"]),
    }


def print_flat_against_model(name: str, result: dict[str, Any], estimate: tuple[float, float]) -> None:
    print(
        f"{'config':<10} {'engine':<6} {'states':>8} {'transitions':>12} {'depth':>5} {'CPU s':>7} "
        f"{'states/CPU-s':>12} {'trans./CPU-s':>12} {'peak MiB':>8} {'B/state':>7}  "
        f"exhaustive at this rate ({estimate[0]:.2g}–{estimate[1]:.2g} states)"
    )
    for engine in ("model", "flat"):
        r = result[engine]
        low, high = (n / r["states_per_cpu_second"] / 3600 for n in estimate)
        print(
            f"{name:<10} {engine:<6} {r['states']:>8,} {r['transitions']:>12,} {len(r['by_depth']) - 1:>5} "
            f"{r['cpu']:>7.1f} {r['states_per_cpu_second']:>12,.0f} {r['transitions_per_cpu_second']:>12,.0f} "
            f"{r['peak_mib']:>8,.0f} {r['peak_mib'] * 2**20 / r['states']:>7,.0f}  "
            f"{low:,.1f}–{high:,.1f} CPU-hours" + ("  (compiled)" if r["compiled"] else "  (interpreted)")
        )
    agree = "same states per depth, transitions, findings" if result["same"] else "ENGINES DIFFER"
    ran = "" if result["ran_flat"] else "; the flat run did NOT run on plain tuples"
    print(f"{name:<10} flat / model, states per CPU-second: {result['ratio']:.2f}x ({agree}{ran})")
    if result["flat"]["fingerprints"]:
        more = {engine: result[engine]["bytes_per_state_more"] for engine in ("model", "flat")}
        print(
            f"{name:<10} both with fingerprints; one more state costs {more['model']:,.0f} bytes (model) "
            f"against {more['flat']:,.0f} (flat): peak at the bound minus peak at half of it, per state"
        )


def memo_limits(name: str, states: int, limits: list[int], rounds: int, compiled: bool) -> dict[str, Any]:
    """The flat search of ``name``'s first ``states`` states with its memo tables trimmed at each
    of ``limits`` entries (:data:`spec._flat_explore.MEMO_LIMIT`), each in a fresh process,
    alternately ``rounds`` times: the memo's size against its time (issue 18 item 5)."""
    runs: dict[int, list[dict[str, Any]]] = {limit: [] for limit in limits}
    for number in range(rounds):
        for limit in limits:
            print(f"{name}: memo limit {limit:,}, round {number + 1} …", file=sys.stderr, flush=True)
            runs[limit].append(run_child(MEMO_CHILD, [name, str(states), str(limit)], {}, ROOT, compiled))
    first = runs[limits[0]][0]
    fields = ("states", "transitions", "by_depth", "findings")
    same = all(tuple(r[f] for f in fields) == tuple(first[f] for f in fields) for rs in runs.values() for r in rs)
    best = {limit: max(rs, key=lambda r: r["states_per_cpu_second"]) for limit, rs in runs.items()}
    return {"config": name, "states": states, "best": best, "same": same}


def print_memo_limits(result: dict[str, Any]) -> None:
    best, name = result["best"], result["config"]
    print(f"{'config':<16} {'memo limit':>10} {'states':>9} {'CPU s':>7} {'states/CPU-s':>12} {'peak MiB':>8}")
    for limit, r in best.items():
        kind = "  (compiled)" if r["compiled"] else "  (interpreted)"
        print(
            f"{name:<16} {limit:>10,} {r['states']:>9,} {r['cpu']:>7.1f} {r['states_per_cpu_second']:>12,.0f} "
            f"{r['peak_mib']:>8,.0f}{kind}"
        )
    rates = [r["states_per_cpu_second"] for r in best.values()]
    agree = "same states per depth, transitions, findings" if result["same"] else "the runs DIFFER"
    print(f"{name:<16} last limit / first, states per CPU-second: {rates[-1] / rates[0]:.2f}x ({agree})")


def unpack(revision: str, folder: Path) -> None:
    """The revision's ``spec/``, ``scripts/`` and ``pyproject.toml`` into ``folder`` (``git archive``)."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "spec", "scripts", "pyproject.toml"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(folder, filter="data")


def child_run(root: Path, name: str, compiled: bool) -> dict[str, Any]:
    return run_child(CHILD, [name, str(WALKS), str(MUTANT_STATES)], {"PYTHONPATH": str(root)}, root, compiled)


def run_child(code: str, args: list[str], env: dict[str, str], root: Path, compiled: bool) -> dict[str, Any]:
    """``code`` in a fresh process in ``root`` (interpreted unless ``compiled``); its JSON result with
    states and transitions per CPU-second added."""
    env = {**os.environ, **env}
    env.pop("TEAMPROTO_PURE", None)
    if not compiled:
        env["TEAMPROTO_PURE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=root, check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    result["states_per_cpu_second"] = result["states"] / result["cpu"]
    result["transitions_per_cpu_second"] = result["transitions"] / result["cpu"]
    return result


def engine_against_baseline(names: list[str], revision: str, rounds: int, compiled: bool) -> dict[str, Any]:
    """This tree's engine against ``revision``'s, alternately in fresh processes (see the docstring)."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="teamproto-baseline-") as temporary:
        baseline = Path(temporary)
        unpack(revision, baseline)
        if compiled:
            subprocess.run([sys.executable, str(baseline / "scripts" / "compile.py")], check=True, cwd=baseline)
        for name in names:
            missing = unknown_to(baseline, name)
            if missing:
                print(f"{name}: skipped, {missing}", file=sys.stderr, flush=True)
                results[name] = {"skipped": missing}
                continue
            print(f"{name}: this engine against {revision[:12]}, {rounds} round(s) …", file=sys.stderr, flush=True)
            mine, theirs = [], []
            for _ in range(rounds):
                theirs.append(child_run(baseline, name, compiled))
                mine.append(child_run(ROOT, name, compiled))
            best_mine = max(mine, key=lambda r: r["transitions_per_cpu_second"])
            best_theirs = max(theirs, key=lambda r: r["transitions_per_cpu_second"])
            same = all(
                (r["states"], r["transitions"], r["violations"], r["findings"])
                == (theirs[0]["states"], theirs[0]["transitions"], theirs[0]["violations"], theirs[0]["findings"])
                for r in mine + theirs
            )
            results[name] = {
                "engine": best_mine,
                "baseline": best_theirs,
                "ratio": best_mine["transitions_per_cpu_second"] / best_theirs["transitions_per_cpu_second"],
                "same_counts": same,
            }
    return results


def unknown_to(baseline: Path, name: str) -> str:
    """Why the baseline cannot run ``CONFIG[:MUTANT]`` (a configuration or mutant added since), or ""."""
    config, _, mutant = name.partition(":")
    if not (baseline / "spec" / "model" / "configs" / f"{config}.json").is_file():
        return f"the baseline has no configuration {config!r}"
    if mutant and f'"{mutant}"' not in (baseline / "spec" / "model" / "_mutants.py").read_text(encoding="utf-8"):
        return f"the baseline has no model mutant {mutant!r}"
    return ""


def print_engine(results: dict[str, Any], revision: str) -> None:
    print(
        f"{'config':<14} {'engine':<10} {'states':>8} {'transitions':>12} {'CPU s':>7} {'states/CPU-s':>12} "
        f"{'trans./CPU-s':>12}"
    )
    for name, result in results.items():
        if "skipped" in result:
            print(f"{name:<14} skipped: {result['skipped']}")
            continue
        for kind, label in (("baseline", revision[:10]), ("engine", "this tree")):
            r = result[kind]
            print(
                f"{name:<14} {label:<10} {r['states']:>8,} {r['transitions']:>12,} {r['cpu']:>7.1f} "
                f"{r['states_per_cpu_second']:>12,.0f} {r['transitions_per_cpu_second']:>12,.0f}"
                + ("  (compiled)" if r["compiled"] else "")
                + ("  (plain tuples)" if r.get("tuples") else "")
            )
        agree = (
            "same states, transitions, findings, traces, edges, crash points, deadlocks"
            if result["same_counts"]
            else "COUNTS DIFFER"
        )
        print(f"{name:<14} this tree / baseline, per CPU-second: {result['ratio']:.2f}x ({agree})")


def run(name: str, naive: bool, budget: float) -> dict[str, Any]:
    config = load_config(name)
    if naive:
        config = dataclasses.replace(config, symmetry=False)
    started = time.perf_counter()

    def out_of_time() -> bool:
        return time.perf_counter() - started > budget

    report = explore(Model(config, reduce=not naive), out_of_time=out_of_time)
    seconds = time.perf_counter() - started
    return {
        "states": report.states,
        "transitions": report.transitions,
        "depth": report.depth,
        "complete": report.complete,
        "seconds": seconds,
        "states_per_second": report.states / seconds,
    }


def _expand(arg: str) -> list[str]:
    """``pinned``: every configuration with pinned counts; ``mutants``: every model mutant on its own."""
    if arg == "pinned":
        return [name for name, pinned in manifest().items() if pinned["states"] is not None]
    if arg == "mutants":
        return [f"{MUTANTS[m].config}:{m}" for m in sorted(MUTANTS)]
    return [arg]


def one_against_spread(name: str, processes: int, states: int | None, rounds: int) -> dict[str, Any]:
    """The flat search of ``name`` in this process and spread over ``processes``, alternately."""
    from spec._flat_explore import search_flat
    from spec._parallel import search_parallel
    from spec.model import Model, load_config

    model = Model(load_config(name))
    best: dict[str, dict[str, Any]] = {}
    reports: dict[str, Any] = {}
    for _ in range(rounds):
        for kind in ("one", "spread"):
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu, wall = time.process_time(), time.perf_counter()
            if kind == "one":
                report = search_flat(model, max_states=states).report
            else:
                report = search_parallel(model, processes, max_states=states)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = time.process_time() - cpu + after.ru_utime - children.ru_utime + after.ru_stime - children.ru_stime
            if kind not in best or wall < best[kind]["wall_seconds"]:
                best[kind] = {
                    "states": report.states,
                    "transitions": report.transitions,
                    "depth": report.depth,
                    "complete": report.complete,
                    "wall_seconds": round(wall, 2),
                    "cpu_seconds": round(cpu, 2),
                    "states_per_wall_second": round(report.states / wall),
                }
            reports[kind] = report
    one, spread = reports["one"], reports["spread"]
    whole = min(one.expanded_through, spread.expanded_through) + 2
    same = one.states_by_depth[:whole] == spread.states_by_depth[:whole] and sorted(one.violations) == sorted(
        spread.violations
    )
    if one.complete and spread.complete:
        same = same and (one.transitions, one.crashed_at, one.edges_taken) == (
            spread.transitions,
            spread.crashed_at,
            spread.edges_taken,
        )
    return {
        "config": name,
        "processes": processes,
        "one": best["one"],
        "spread": best["spread"],
        "same": same,
        "wall_ratio_one_over_spread": round(best["one"]["wall_seconds"] / best["spread"]["wall_seconds"], 2),
        "compiled": _compiled.ACTIVE,
    }


def _spread_lines(name: str, result: dict[str, Any]) -> str:
    lines = [
        f"{name}: one process against {result['processes']} ({'compiled' if result['compiled'] else 'interpreted'})"
    ]
    for kind in ("one", "spread"):
        r = result[kind]
        lines.append(
            f"  {kind:<7} {r['states']:>10,} states {r['transitions']:>12,} transitions, "
            f"{r['wall_seconds']:>8.1f} wall-s {r['cpu_seconds']:>8.1f} CPU-s, "
            f"{r['states_per_wall_second']:>7,} states/wall-s" + ("" if r["complete"] else " (bounded)")
        )
    agree = "they agree" if result["same"] else "they DIFFER"
    lines.append(f"  wall time one/spread: {result['wall_ratio_one_over_spread']:.2f}x; {agree}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="explorer throughput, reduced against naive")
    parser.add_argument("configs", nargs="*", help="configurations (default: the default suite, then standard)")
    parser.add_argument("--seconds", type=float, default=120.0, help="bound of every run (default 120)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--engine-configs",
        nargs="+",
        default=["pair_crashes"],
        help="engine against baseline: CONFIG, CONFIG:MUTANT, 'pinned' or 'mutants' (every one)",
    )
    parser.add_argument("--baseline", default=BASELINE, help="the git revision of today's engine")
    parser.add_argument("--rounds", type=int, default=2, help="alternate runs of each engine (best counts)")
    parser.add_argument("--compiled", action="store_true", help="compare the compiled builds")
    parser.add_argument("--engine-only", action="store_true", help="only the engine against the baseline")
    parser.add_argument("--flat-vs-model", metavar="CONFIG", help="this tree's two engines on CONFIG's first states")
    parser.add_argument("--states", type=int, default=20_000, help="with --flat-vs-model: states of each run")
    parser.add_argument("--fingerprints", action="store_true", help="with --flat-vs-model: both with hash compaction")
    parser.add_argument("--estimate", type=float, nargs=2, default=STANDARD_ESTIMATE, metavar=("LOW", "HIGH"))
    parser.add_argument("--spread", metavar="CONFIG", help="CONFIG's flat search on one process and on several")
    parser.add_argument("--processes", type=int, default=2, help="with --spread: processes of the spread search")
    parser.add_argument("--bounded", action="store_true", help="with --spread: stop each at --states states")
    parser.add_argument("--memo-limit", metavar="CONFIG", help="CONFIG's flat search with the memo trimmed at --limits")
    parser.add_argument("--limits", type=int, nargs="+", default=[1 << 14, 1 << 18], help="with --memo-limit")
    args = parser.parse_args()
    if args.memo_limit:
        memo = memo_limits(args.memo_limit, args.states, args.limits, args.rounds, args.compiled)
        if args.json:
            print(json.dumps(memo, indent=2))
        else:
            print_memo_limits(memo)
        return
    if args.spread:
        spread = one_against_spread(args.spread, args.processes, args.states if args.bounded else None, args.rounds)
        print(json.dumps(spread, indent=2) if args.json else _spread_lines(args.spread, spread))
        if not spread["same"]:
            raise SystemExit(1)
        return
    if args.flat_vs_model:
        result = flat_against_model(args.flat_vs_model, args.states, args.rounds, args.compiled, args.fingerprints)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_flat_against_model(args.flat_vs_model, result, tuple(args.estimate))
        if not (result["same"] and result["ran_flat"]):
            raise SystemExit(1)
        return
    names = [n for arg in args.engine_configs for n in _expand(arg)]
    engine = engine_against_baseline(names, args.baseline, args.rounds, args.compiled)
    differ = [n for n, r in engine.items() if not r.get("same_counts", True)]
    if differ:
        print("the engines DIFFER on " + ", ".join(differ), file=sys.stderr)
    if args.engine_only:
        if args.json:
            print(json.dumps({"engine": engine}, indent=2))
        else:
            print_engine(engine, args.baseline)
        if not all(result.get("same_counts", True) for result in engine.values()):
            raise SystemExit(1)  # the engines disagree: a failed differential test
        return
    budget = args.seconds
    results: dict[str, dict[str, Any]] = {}
    for name in args.configs or [*default_suite(), "standard"]:
        print(f"{name}: reduced search, then naive (at most {budget:.0f} s each) …", file=sys.stderr, flush=True)
        reduced, naive = run(name, False, budget), run(name, True, budget)
        results[name] = {"reduced": reduced, "naive": naive}
        if reduced["complete"]:
            results[name]["time_ratio_naive_over_reduced"] = naive["seconds"] / reduced["seconds"]
            results[name]["ratio_is_lower_bound"] = not naive["complete"]
        else:
            results[name]["rate_ratio_reduced_over_naive"] = reduced["states_per_second"] / naive["states_per_second"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(
            json.dumps(
                {"engine": engine, "configs": results, "peak_memory_mib": peak, "compiled": _compiled.ACTIVE}, indent=2
            )
        )
        return
    print_engine(engine, args.baseline)
    print(
        f"{'config':<14} {'search':<8} {'states':>10} {'transitions':>12} {'depth':>5} {'seconds':>8} {'states/s':>9}"
    )
    for name, result in results.items():
        for kind in ("reduced", "naive"):
            r = result[kind]
            print(
                f"{name:<14} {kind:<8} {r['states']:>10,} {r['transitions']:>12,} {r['depth']:>5} "
                f"{r['seconds']:>8.1f} {r['states_per_second']:>9,.0f}" + ("" if r["complete"] else "  (bounded)")
            )
        if "time_ratio_naive_over_reduced" in result:
            bound = "≥ " if result["ratio_is_lower_bound"] else ""
            print(f"{name:<14} naive/reduced wall time: {bound}{result['time_ratio_naive_over_reduced']:.2f}x")
        else:
            print(
                f"{name:<14} not complete in {budget:.0f} s each; reduced/naive rate: "
                f"{result['rate_ratio_reduced_over_naive']:.2f}x"
            )
    print(f"peak memory: {peak:,.0f} MiB; explorer {'compiled' if _compiled.ACTIVE else 'interpreted'}")


if __name__ == "__main__":
    main()
