"""A crash inside a write step that writes several records under one name (REC-2, XPR-2, SHD-2).

The model's write step is one move; the reference may write several records under its name: a
drain's XPR-2 cancellations write each open request's record and its audit entry under
``shutdown.begin_drain/cancel_requests``. A crash test armed after a step dies after its *first*
write, so a crash after the second or third was never tried. Here the drain begins with an
approval request and a pending plan of its member open — four writes under that one name — and
the process is killed after each in turn, on both backends; after the restart the reference must
refine the model's state after the whole step, with every invariant holding. The random programs
draw such cuts too (``test_stateful.SEVERAL_WRITES``; ``FaultPlan.passes``).
"""

from __future__ import annotations

from typing import Any

import pytest

from model_tests.test_stateful import CRASHED, PlanComparison, SqlitePlanComparison, _Fixed

STEP = "shutdown.begin_drain/cancel_requests"


def _drain_with_requests_open(machine: PlanComparison, cut: int) -> list[str]:
    machine.scripted = True
    machine.claim(0, 0, None)
    machine.request(0, None)  # an approval request of member 0
    machine.plan_draft(0, None)
    machine.plan_submit(_Fixed(0), None)  # type: ignore[arg-type]  # and its pending plan
    machine.shutdown_request(0, None, 1)
    written: list[str] = []
    observer = machine.storage.on_write
    machine.storage.on_write = lambda step: (written.append(step), observer and observer(step))  # type: ignore[func-returns-value]
    try:
        machine.begin_drain(0, f"{STEP}#{cut}" if cut else None)
    finally:
        machine.storage.on_write = observer
    return written


def test_the_drain_writes_several_records_under_one_name() -> None:
    machine = PlanComparison()
    try:
        written = _drain_with_requests_open(machine, 0)
    finally:
        machine.teardown()
    assert written.count(STEP) == 4, written


@pytest.mark.clause("REC-2", "XPR-2", "SHD-2")
@pytest.mark.parametrize("kind", [PlanComparison, SqlitePlanComparison], ids=["memory", "sqlite"])
@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_crash_inside_the_drains_cancellations_restarts_to_the_whole_step(cut: int, kind: Any) -> None:
    machine = kind()
    try:
        written = _drain_with_requests_open(machine, cut)  # scripted: refinement is checked after it
        assert written.count(STEP) == cut, written
        assert machine.steps[-2][0].crash_after == STEP, "the step was not cut"
        assert STEP in CRASHED
    finally:
        machine.teardown()
