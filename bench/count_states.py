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
Run: ``python bench/count_states.py [CONFIG] [--seconds S] [--json]`` (default ``standard``, 600 s).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time

from spec import _compiled
from spec.model import Model, load_config
from spec.model._state import State
from spec.simulate import _fingerprint


def count(name: str, seconds: float, say: bool) -> dict[str, object]:
    model = Model(load_config(name))

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
    args = parser.parse_args()
    if args.json:
        sys.stdout, real = sys.stderr, sys.stdout
        result = count(args.config, args.seconds, True)
        json.dump(result, real, indent=2)
        real.write("\n")
        return
    result = count(args.config, args.seconds, True)
    print(
        f"{result['config']}: {'complete' if result['complete'] else 'INCOMPLETE'}, {result['states']:,} states "
        f"(compiled: {result['compiled']})"
    )


if __name__ == "__main__":
    main()
