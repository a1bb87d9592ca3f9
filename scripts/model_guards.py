"""An unbiased mutation score of the model's checks: every guard of the model dropped in turn.

The named model mutants (``spec/model/_mutants.py``) remove the guards someone chose to name; a
check can look strong against them and miss the guards nobody named (an outside review's model
bugs mostly moved the pinned state counts and broke no check). Here every conjunct of every
``if``/``while`` test and conditional expression in the model's operations, its driver and its
reconciliation (:data:`FILES`) is weakened in turn — in a condition that enables something, an
operand made ``True`` (one requirement of an ``and`` dropped; an ``or`` always met); in a refusal
(an ``if`` whose body returns, continues or raises at once), an operand made ``False`` (one reason
of an ``or`` dropped; an ``and`` never met) — except those already under a named mutant's switch
(``broken(...)``). Each such model is explored on every pinned configuration with
the model's own engine, interpreted (``TEAMPROTO_ENGINE=model``, ``TEAMPROTO_PURE=1``; the flat
engine is a second implementation, held equal to the model by differential tests, and would not
see the change), cheapest configurations first, stopping at the first that finds something.

Each weakened guard gets one verdict:

- ``violation``: some check breaks (an invariant, a step check, an explorer check) — caught;
- ``refused``: the model itself refuses the state (a status no machine has, a broken table raised
  as a typed error): the checker stops, exit 2 — caught, by the model's own guards;
- ``uncovered``: no check breaks, but some edge of a machine or some crash point that the healthy
  model takes on the same configurations is never taken: a guard weakened into one that disables
  behaviour (``teamproto check`` fails on an edge or crash point no run takes) — caught;
- ``drift``: no check breaks, but some configuration's states or behaviour differ from their pins —
  the change is seen only as a count to review (the outside review's "only moved the counts");
- ``nothing``: no check breaks and no count moves — the guard is redundant in every pinned
  configuration (another guard or the table decides), or what it rules out is never reached.

The score is caught / all; ``drift`` and ``nothing`` are listed, each to be explained (equivalent,
or a blind check: then a predicate or a named mutant closes it). It works in a copy of the tree
(the work tree is never edited), one guard at a time, niced. Not run in CI (about half a minute a
guard on two processors: ~2 hours for all of them; ``--sample N`` takes every N-th).

    .venv/bin/python scripts/model_guards.py [--list] [--sample N] [--only ID ...] [--config NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FILES = ("spec/model/_ops.py", "spec/model/_model.py", "spec/model/_reconcile.py")
CHUNKS = (
    ("tiny", "monitor", "pair", "plan", "approval_plan", "restarts", "fencing", "plan_drain", "approval_fencing"),
    ("wide", "plan_lost", "approval_drain", "pair_lapses", "plan_fencing"),
    ("shutdown", "pair_plan", "pair_crashes"),
)
"""Every pinned configuration, cheapest first (interpreted, the model's engine: about 3, 8 and 15 s)."""
CAUGHT = ("violation", "refused", "uncovered")
VERDICTS = ("violation", "refused", "uncovered", "drift", "nothing")


@dataclass(frozen=True)
class Guard:
    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    source: str
    weakened: str  # what the operand becomes: "True" or "False"

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}:{self.line}:{self.col}"


def guards(root: Path = ROOT, files: tuple[str, ...] = FILES) -> list[Guard]:
    """Every guard operand of ``files``, in file and then source order."""
    out: list[Guard] = []
    for name in files:
        text = (root / name).read_text(encoding="utf-8")
        found: list[Guard] = []
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.If, ast.While, ast.IfExp)):
                continue
            test = node.test
            to = "False" if _refuses(node) else "True"
            operands = test.values if isinstance(test, ast.BoolOp) else [test]
            if any(_switch(ast.get_source_segment(text, operand) or "") for operand in operands):
                continue  # a condition a named mutant switches itself (``x and broken(...)``, ``x or
                # broken(...)``): weakening ``x`` does what the mutant does, or nothing
            for operand in operands:
                source = ast.get_source_segment(text, operand)
                if (
                    source is None
                    or "broken(" in source
                    or operand.end_lineno is None
                    or operand.end_col_offset is None
                ):
                    continue
                found.append(
                    Guard(
                        name, operand.lineno, operand.col_offset, operand.end_lineno, operand.end_col_offset, source, to
                    )
                )
        out += sorted(found, key=lambda g: (g.line, g.col))
    return out


def _switch(source: str) -> bool:
    """A named mutant's switch itself (``model.broken("name")``, ``not broken("name")``)."""
    return source.removeprefix("not ").removeprefix("model.").startswith("broken(")


def _refuses(node: ast.AST) -> bool:
    """An ``if`` whose body leaves at once (``return``, ``continue``, ``break``, ``raise``) and has
    no ``else``: its test is a refusal, weakened by making it false more often; any other test is
    an enabling condition, weakened by making it true more often."""
    if not isinstance(node, ast.If) or node.orelse:
        return False
    return isinstance(node.body[0], (ast.Return, ast.Continue, ast.Break, ast.Raise))


def weaken(text: str, guard: Guard) -> str:
    """``text`` (the guard's file) with the guard's operand replaced by its weakened constant."""
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: guard.line - 1]) + guard.col
    end = sum(len(line) for line in lines[: guard.end_line - 1]) + guard.end_col
    if text[start:end] != guard.source:
        raise ValueError(f"{guard.id}: the source moved since the guards were listed")
    return f"{text[:start]}({guard.weakened}){text[end:]}"


def _names(run: dict[str, Any]) -> list[str]:
    found = run.get("violations") or []
    if isinstance(found, dict):
        return sorted(found)
    return sorted({(v.get("violation") or {}).get("invariant", "?") for v in found if isinstance(v, dict)})


@dataclass(frozen=True)
class Coverage:
    """What a model's runs on some configurations left untaken: machine edges and crash points."""

    missing_edges: frozenset[tuple[str, ...]]
    missing_crash_points: frozenset[str]

    def lost(self, healthy: Coverage) -> list[str]:
        """What this model leaves untaken that the healthy one takes."""
        edges = sorted(" ".join(edge) for edge in self.missing_edges - healthy.missing_edges)
        crashes = sorted(self.missing_crash_points - healthy.missing_crash_points)
        return [f"edge {e}" for e in edges] + [f"crash point {c}" for c in crashes]


def judge(
    tree: Path, configs: tuple[tuple[str, ...], ...], seconds: float, healthy: Coverage | None = None
) -> dict[str, Any]:
    """Explore ``tree``'s model on ``configs``, chunk by chunk, until something is found; with no
    finding, its coverage against ``healthy``'s (the verdict then carries its own ``coverage``)."""
    env = {**os.environ, "TEAMPROTO_PURE": "1", "TEAMPROTO_ENGINE": "model", "PYTHONPATH": str(tree)}
    drifted: list[str] = []
    missing: set[tuple[str, ...]] | None = None
    crashed: set[str] = set()
    started = time.monotonic()
    for chunk in configs:
        command = ["nice", "-n", "10", sys.executable, "-m", "teamproto._cli", "check", "--jobs", "1", "--json"]
        command += ["--max-seconds", str(seconds), *[a for name in chunk for a in ("--config", name)]]
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=30 * seconds)
        try:
            report = json.loads(done.stdout)
        except ValueError:
            report = {"error": done.stderr.strip().splitlines()[-1:] or ["no output"]}
        if report.get("error") or done.returncode not in (0, 1) or "runs" not in report:
            error = report.get("error")
            message = error.get("message") if isinstance(error, dict) else str(error)
            return {"verdict": "refused", "found": [str(message)[:200]], "seconds": time.monotonic() - started}
        found = sorted({f"{run['config']}: {name}" for run in report["runs"] for name in _names(run)})
        if found:
            return {"verdict": "violation", "found": found, "seconds": time.monotonic() - started}
        drifted += [r["config"] for r in report["runs"] if r.get("pinned_states") not in (None, r.get("states"))]
        if report.get("manifest_drift") and not drifted:
            drifted.append(",".join(chunk))
        for run in report["runs"]:
            edges = {tuple(edge) for edge in run.get("missing_edges", [])}
            missing = edges if missing is None else missing & edges
            crashed |= set(run.get("crashed_at", []))
    from spec.model import CRASH_POINTS

    coverage = Coverage(frozenset(missing or ()), frozenset(CRASH_POINTS) - crashed)
    lost = coverage.lost(healthy) if healthy is not None else []
    verdict = "uncovered" if lost else "drift" if drifted else "nothing"
    return {"verdict": verdict, "found": lost or drifted, "seconds": time.monotonic() - started, "coverage": coverage}


def _untaken(coverage: Coverage) -> str:
    edges, crashes = len(coverage.missing_edges), len(coverage.missing_crash_points)
    return f"{edges} edge(s) and {crashes} crash point(s) untaken on these configurations"


def _copy(root: Path, into: Path) -> Path:
    """The packages ``teamproto check`` imports, copied (the work tree is never edited)."""
    tree = into / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.so", ".compiled")
    for package in ("spec", "teamproto", "conformance", "reference"):
        shutil.copytree(root / package, tree / package, ignore=ignore)
    return tree


def main() -> int:
    parser = argparse.ArgumentParser(description="every guard of the model dropped in turn, explored")
    parser.add_argument("--list", action="store_true", help="list the guards and stop")
    parser.add_argument("--sample", type=int, default=1, metavar="N", help="every N-th guard only")
    parser.add_argument("--only", nargs="+", default=[], metavar="ID", help="these guards (ids from --list)")
    parser.add_argument("--config", nargs="+", default=[], metavar="NAME", help="these configurations only")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="bound of each configuration's search")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    every = guards()
    unknown = sorted(set(args.only) - {g.id for g in every})
    if unknown or args.sample < 1:
        print(
            f"model_guards.py: unknown guard id(s) {unknown} (see --list)" if unknown else "--sample is ≥ 1",
            file=sys.stderr,
        )
        return 2
    chosen = [g for g in every if g.id in args.only] if args.only else every[:: args.sample]
    if args.list:
        for guard in chosen:
            print(f"{guard.id:28} -> {guard.weakened:5}  {guard.source}")
        return 0
    configs = (tuple(args.config),) if args.config else CHUNKS
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="model-guards-") as folder:
        tree = _copy(ROOT, Path(folder))
        healthy = judge(tree, configs, args.max_seconds)
        if healthy["verdict"] not in ("nothing", "drift"):
            print(f"model_guards.py: the healthy model is not clean: {healthy['found']}", file=sys.stderr)
            return 1
        print(f"the healthy model: {healthy['seconds']:.0f} s, {_untaken(healthy['coverage'])}", file=sys.stderr)
        for number, guard in enumerate(chosen, start=1):
            path = tree / guard.file
            text = path.read_text(encoding="utf-8")
            path.write_text(weaken(text, guard), encoding="utf-8")
            try:
                verdict = judge(tree, configs, args.max_seconds, healthy["coverage"])
            finally:
                path.write_text(text, encoding="utf-8")
            verdict.pop("coverage", None)
            results.append({"guard": guard.id, **asdict(guard), **verdict})
            print(
                f"[{number}/{len(chosen)}] {guard.id} {verdict['verdict']} ({verdict['seconds']:.0f} s)",
                file=sys.stderr,
            )
    counts = Counter(r["verdict"] for r in results)
    caught = sum(counts[v] for v in CAUGHT)
    summary = {"guards": len(results), "counts": dict(counts), "score": caught / len(results) if results else None}
    if args.json:
        print(json.dumps({**summary, "results": results}, indent=2))
        return 0
    print(f"{len(results)} guards: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS))
    if results:
        share = 100 * caught / len(results)
        print(f"caught (violation, refused or uncovered): {caught} / {len(results)} = {share:.1f} %")
    for r in results:
        if r["verdict"] not in CAUGHT:
            where = f" in {', '.join(r['found'])}" if r["found"] else ""
            print(f"  {r['verdict']:8} {r['guard']:28} {r['source']} -> {r['weakened']}{where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
