"""Guard cost: spec.ensure_transition against a hand-written dict-of-sets check, one run.

The baseline is what the source articles write by hand: ``ALLOWED = {state: {targets}}`` and a
function that raises when the target is not in the set. Both run the same list of legal
(current, target) pairs of every machine, interleaved in rounds so that machine noise hits both.
Target: ratio ≤ 2.0. Run: ``python bench/guards.py [--json]``.
"""

from __future__ import annotations

import json
import sys
import timeit

import spec

PAIRS = [(name, e.source, e.target) for name in spec.MACHINES for e in spec.edges(name)]
HAND_WRITTEN = {name: {s: set(t) for s, t in spec.transition_table(name).items()} for name in spec.MACHINES}


class HandWrittenIllegal(Exception):
    pass


def hand_written_ensure(name: str, current: str, target: str) -> None:
    if target not in HAND_WRITTEN[name][current]:
        raise HandWrittenIllegal(current, target)


def run_all(check: object) -> None:
    for name, current, target in PAIRS:
        check(name, current, target)  # type: ignore[operator]


def measure(rounds: int = 7, loops: int = 2000) -> dict[str, float]:
    spec_best = hand_best = float("inf")
    for _ in range(rounds):
        spec_best = min(spec_best, timeit.timeit(lambda: run_all(spec.ensure_transition), number=loops))
        hand_best = min(hand_best, timeit.timeit(lambda: run_all(hand_written_ensure), number=loops))
    calls = loops * len(PAIRS)
    return {
        "calls_per_round": calls,
        "spec_ns_per_call": spec_best / calls * 1e9,
        "dict_ns_per_call": hand_best / calls * 1e9,
        "ratio": spec_best / hand_best,
        "target_ratio_at_most": 2.0,
    }


if __name__ == "__main__":
    result = measure()
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"spec.ensure_transition : {result['spec_ns_per_call']:.1f} ns/call")
        print(f"hand-written dict check: {result['dict_ns_per_call']:.1f} ns/call")
        print(f"ratio (target ≤ 2.0)   : {result['ratio']:.2f}")
