"""pytest plugin of ``bench/stateful.py --breakdown``: where the stateful test's CPU time goes.

Loaded with ``-p stateful_breakdown`` (``bench/`` on ``PYTHONPATH``). During each test's call phase
it times, exclusively (a part called inside another is counted in its own part only), the parts of
one run: Hypothesis choosing each rule and its arguments, the rules' own ``data.draw``, Hypothesis'
engine around the runs (mutating earlier examples, its tree of choices), Hypothesis' work per
example and step (spans, the stop draw, running the invariants); the reference's operations and
storage writes and reads; the model's steps; the checks (snapshot, invariants, refinement); and
the test's own glue (rule bodies, the invariant's body, building the machine). It writes one JSON
line per test to the file named by ``TEAMPROTO_BENCH_BREAKDOWN``: CPU seconds per part.

The parts are wrapped at run time (about a microsecond per wrapped call, counted in the parts);
nothing of the test or of what it checks changes.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

TOTALS: Counter[str] = Counter()
STACK: list[list[Any]] = []  # [part, started, time spent in wrapped callees]


def _wrap(owner: Any, name: str, part: str) -> None:
    function = getattr(owner, name)
    if getattr(function, "_breakdown", False):
        return

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        STACK.append([part, time.process_time(), 0.0])
        try:
            return function(*args, **kwargs)
        finally:
            _, started, inner = STACK.pop()
            spent = time.process_time() - started
            TOTALS[part] += spent - inner
            if STACK:
                STACK[-1][2] += spent

    timed._breakdown = True  # type: ignore[attr-defined]
    setattr(owner, name, timed)


def _wrap_functions(holders: list[Any], part: str) -> None:
    """Rules and invariants: Hypothesis calls ``.function`` of its own records, not the class's."""
    for holder in holders:
        box = type("Box", (), {"function": staticmethod(holder.function)})
        _wrap(box, "function", part)
        object.__setattr__(holder, "function", box.function)


HYPOTHESIS = ("hypothesis: rule choice", "hypothesis: data.draw", "hypothesis: engine", "hypothesis: per example/step")


def _install(machine: type) -> None:
    import hypothesis.core
    import hypothesis.stateful
    from hypothesis.internal.conjecture.engine import ConjectureRunner
    from hypothesis.strategies._internal.core import DataObject

    import model_tests.incremental as incremental
    import model_tests.test_stateful as stateful
    import reference as r
    from reference import _storage

    _wrap(ConjectureRunner, "generate_new_test_cases", HYPOTHESIS[2])
    _wrap(hypothesis.core.StateForActualGivenExecution, "execute_once", HYPOTHESIS[3])
    _wrap(hypothesis.stateful.RuleStrategy, "do_draw", HYPOTHESIS[0])
    _wrap(DataObject, "draw", HYPOTHESIS[1])
    for name in ("request", "review", "call", "cancel", "expire_due", "reconcile"):
        _wrap(r.ApprovalProtocol, name, "reference: operations")
    for name in ("deliver", "set_profile", "reconcile", "add_member", "add_task", "claim", "read", "monitor_pass"):
        _wrap(r.Harness, name, "reference: operations")
    _wrap(_storage.Storage, "_write", "reference: storage writes")
    _wrap(_storage, "_validate", "reference: record loads")
    _wrap(incremental, "_validate", "checks: snapshot")
    _wrap(machine, "_model_take", "model")
    _wrap(stateful, "reconcile", "model")
    _wrap(incremental.IncrementalSnapshot, "__call__", "checks: snapshot")
    _wrap(r.Harness, "snapshot", "checks: snapshot")
    for checks in (incremental.Checks, incremental.FullChecks):
        _wrap(checks, "state", "checks: invariants")
        _wrap(checks, "step", "checks: invariants")
    _wrap(incremental.Refinement, "holds", "checks: refinement")
    _wrap(machine, "__init__", "test: machine setup")
    _wrap(machine, "teardown", "test: machine setup")
    setup = machine.setup_state()  # type: ignore[attr-defined]
    _wrap_functions(setup.rules, "test: rule bodies")
    _wrap_functions(setup.invariants, "test: invariant body")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    machine = _machine_of(item)
    if machine is not None:
        _install(machine)
    TOTALS.clear()
    cpu = time.process_time()
    yield
    cpu = time.process_time() - cpu
    TOTALS["pytest and unwrapped rest"] += cpu - sum(TOTALS.values())
    path = os.environ.get("TEAMPROTO_BENCH_BREAKDOWN")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": item.nodeid, "cpu": cpu, "parts": dict(TOTALS.most_common())}) + "\n")


def _machine_of(item: Any) -> type | None:
    """The state machine class of a ``Machine.TestCase`` item (None for other tests)."""
    import model_tests.test_stateful as stateful

    machine = getattr(getattr(item, "cls", None), "__qualname__", "").split(".")[0]
    found = getattr(stateful, machine, None)
    return found if isinstance(found, type) and hasattr(found, "setup_state") else None
