"""Prove the flat engine equal to the model on every pinned configuration it supports, and pin it.

``python -m model_tests.flat_proof`` says whether the pinned proof (``spec/model/flat_proof.json``)
is for the model's and the flat form's sources as they stand (exit 1 if not); ``--write`` proves it
again and pins it: on each pinned configuration the flat form supports, per transition on the
whole state space the model's search expands (``model_tests.test_flat.differences``: the same
successors in the same order, the same crash variants, edges, goal test, ``decode(encode(s))``),
and the two whole searches report the same (states, transitions, depths, violations with their
traces, edges, crash points, deadlocks, witnesses). Until it is pinned again after a change of
either source, ``teamproto check`` explores those configurations on the model itself
(:mod:`spec.model._proof`). The variants with time of ``test_flat.py`` (deadline regions, a
bounded clock past deadlines) are proven per transition first. About a minute and a half here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from spec.explore import explore
from spec.model import Model, _proof, load_config


def prove(names: list[str]) -> tuple[dict[str, int], list[str]]:
    """Each configuration's expanded state count, and the differences found (none: proven): the
    pinned configurations per transition and by their whole reports; then the variants with time
    (deadline regions, a bounded clock past deadlines: ``test_flat.QUICK_TIME``) per transition,
    with the region key and ``tick_matters`` of every state."""
    from model_tests.test_flat import QUICK_TIME, _expanded, _findings, _time_expanded, differences, time_differences

    counts: dict[str, int] = {}
    problems: list[str] = []
    for variant in QUICK_TIME:
        started = time.perf_counter()
        model, states = _time_expanded(variant)
        found = time_differences(model, states)
        counts[f"time:{variant}"] = len(states)
        problems += [f"time:{variant}: {problem}" for problem in found[:5]]
        verdict = "equal" if not found else f"{len(found)} difference(s)"
        print(f"time:{variant}: {len(states):,} states expanded, {verdict} ({time.perf_counter() - started:.0f} s)")
    for name in names:
        started = time.perf_counter()
        model, states = _expanded(name)
        found = differences(model, states)
        previous = os.environ.get("TEAMPROTO_ENGINE")
        try:
            os.environ["TEAMPROTO_ENGINE"] = "flat"
            flat = explore(Model(load_config(name)))
            os.environ["TEAMPROTO_ENGINE"] = "model"
            mine = explore(Model(load_config(name)))
        finally:
            if previous is None:
                os.environ.pop("TEAMPROTO_ENGINE", None)
            else:
                os.environ["TEAMPROTO_ENGINE"] = previous
        if _findings(flat) != _findings(mine):
            found.append(f"{name}: the whole searches report differently ({flat.states:,} and {mine.states:,} states)")
        counts[name] = len(states)
        problems += [f"{name}: {problem}" for problem in found[:5]]
        verdict = "equal" if not found else f"{len(found)} difference(s)"
        print(f"{name}: {len(states):,} states expanded, {verdict} ({time.perf_counter() - started:.0f} s)", flush=True)
    return counts, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="prove it again and pin it")
    args = parser.parse_args(argv)
    if not args.write:
        why = _proof.stale()
        if why:  # only the digests were compared: nothing was proven or disproven (outside review 65)
            print(f"{why}\nnot proven either way: this compares the sources' digests only; "
                  "`python -m model_tests.flat_proof --write` runs the proof (about a minute)")  # fmt: skip
            return 1
        print(f"the flat engine is proven equal to the model as it stands ({_proof.PIN.name})")
        return 0
    from model_tests.test_flat import IN_SCOPE

    counts, problems = prove(list(IN_SCOPE))
    if problems:
        print("not pinned: the flat engine differs from the model", *problems, sep="\n  ", file=sys.stderr)
        return 1
    pin = {
        "about": "the flat engine proven equal to the model on these sources (spec/model/_proof.py)",
        **_proof.digests(),
        "configurations": counts,
    }
    _proof.PIN.write_text(json.dumps(pin, indent=1, sort_keys=True) + "\n")
    print(f"pinned the proof for {len(counts)} configurations -> {_proof.PIN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
