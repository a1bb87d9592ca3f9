"""Count a configuration's states level by level, without checking them: how large is it?

Breadth-first over the model's successors, one state per class of the explorer's key (dead data
erased, canonical under symmetry), crashed states restarted at once as the explorer does; the
visited set holds 64-bit hashes of the keys and only one level of states is kept. No invariant,
step, coverage or deadlock check runs, so it reaches about twice as many states a second as
``teamproto check``: a measure of a configuration's size beyond what the checking explorer
reaches, never a check. The counts per depth equal the explorer's (``model_tests`` pin the
explorer's; compare ``teamproto check --json``'s ``states_by_depth``).

Prints, after each level and every 20,000 states expanded: new states at the depth being built,
the total, transitions, seconds, states/s and peak memory. ``--seconds`` bounds the run (polled
every 2,000 states; it stops within the level it is building, and says so).
``--set FIELD=VALUE`` (repeatable) counts a variant of the configuration (``--set plans=0``,
``--set max_ticks=0``, ``--set crashes=false``; ``null`` for None): the variants of ``standard``
show where its product comes from. ``--no-independence`` counts without the records' partial-order
reduction (``spec.model._por``), to measure what it saves.
Run: ``python bench/count_states.py [CONFIG] [--set F=V ...] [--seconds S] [--json]`` (default
``standard``, 600 s).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import resource
import sys
import time

from spec import _compiled
from spec.model import Model, load_config
from spec.model._config import Config
from spec.model._state import State
from spec.simulate import _fingerprint


def variant(name: str, settings: list[str]) -> Config:
    """The configuration ``name`` with ``FIELD=VALUE`` overrides (JSON values: 0, false, null)."""
    config = load_config(name)
    changes: dict[str, object] = {}
    for setting in settings:
        field, _, value = setting.partition("=")
        if field not in {f.name for f in dataclasses.fields(config)} or field == "name":
            raise SystemExit(f"--set {setting}: no configuration field {field!r}")
        changes[field] = json.loads(value)
    if changes:
        label = ",".join(f"{k}={v}" for k, v in changes.items())
        config = dataclasses.replace(config, name=f"{name}[{label}]", **changes)  # type: ignore[arg-type]
    return config


def count(
    name: str, seconds: float, say: bool, settings: list[str] | None = None, independence: bool = True
) -> dict[str, object]:
    config = variant(name, settings or [])
    name = config.name
    model = Model(config, independence=independence)

    started = time.perf_counter()
    initial = model.initial()
    seen = {_fingerprint(model, initial)}
    level: list[State] = [initial]
    by_depth, transitions, complete = [1], 0, True

    def line(text: str) -> None:
        if say:
            elapsed = time.perf_counter() - started
            total = sum(by_depth)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            print(
                f"{text}; {total:,} states, {transitions:,} transitions, {elapsed:,.0f} s, "
                f"{total / max(elapsed, 1e-9):,.0f} states/s, peak {peak:.1f} GiB",
                flush=True,
            )

    gc.disable()  # as the explorer: millions of acyclic containers, kept
    while level and complete:
        following: list[State] = []
        by_depth.append(0)
        for done, state in enumerate(level, 1):
            for _, after in model.successors(state):
                transitions += 1
                if not isinstance(after, State):
                    raise SystemExit(f"{name}: a step breaks its machine's table ({after}); run teamproto check")
                if after.crashed:
                    after = next(iter(model.successors(after)))[1]  # the restart, as the explorer
                    assert isinstance(after, State)
                    transitions += 1
                key = _fingerprint(model, after)  # the explorer's key, hashed
                if key not in seen:
                    seen.add(key)
                    following.append(after)
                    by_depth[-1] += 1
            if done % 2_000 == 0:
                if done % 20_000 == 0:
                    line(f"  depth {len(by_depth) - 1}: {by_depth[-1]:,} new from {done:,} of {len(level):,}")
                if time.perf_counter() - started > seconds:
                    complete = False
                    break
        level = following
        line(f"depth {len(by_depth) - 1}: {by_depth[-1]:,} new{'' if complete else ' (incomplete)'}")
    if by_depth[-1] == 0:
        by_depth.pop()
    elapsed = time.perf_counter() - started
    return {
        "config": name,
        "compiled": _compiled.ACTIVE,
        "complete": complete,
        "states": sum(by_depth),
        "transitions": transitions,
        "states_by_depth": by_depth,
        "seconds": round(elapsed, 1),
        "states_per_second": round(sum(by_depth) / elapsed),
        "peak_memory_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="count a configuration's states by depth, without checks")
    parser.add_argument("config", nargs="?", default="standard")
    parser.add_argument("--seconds", type=float, default=600.0, help="bound of the run (default 600)")
    parser.add_argument("--json", action="store_true", help="machine-readable output (progress on stderr)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="count a variant")
    parser.add_argument("--no-independence", action="store_true", help="without the records' reduction")
    args = parser.parse_args()
    independence = not args.no_independence
    if args.json:
        sys.stdout, real = sys.stderr, sys.stdout
        result = count(args.config, args.seconds, True, args.set, independence)
        json.dump(result, real, indent=2)
        real.write("\n")
        return
    result = count(args.config, args.seconds, True, args.set, independence)
    print(
        f"{result['config']}: {'complete' if result['complete'] else 'INCOMPLETE'}, {result['states']:,} states "
        f"(compiled: {result['compiled']})"
    )


if __name__ == "__main__":
    main()
