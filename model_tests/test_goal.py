"""The liveness goal, status by status (INV-12, SHD-6, APR-5, PLN-5, PLN-9).

``Model.is_goal`` is what ``every_request_can_finish`` and ``no_cycle_avoids_finish`` aim at: every
request final. At a configuration's clock bound, a request that the deadline monitor would end at
the next tick counts as settled too — the model stops time, the protocol does not. Which statuses
those are is the whole argument: a status counted settled that time alone does not end hides
every run stuck in it from both liveness checks, and moves no state count. An outside review
counted a ``draining`` shutdown settled at the bound (time only makes it ``timed_out``, from which
it must still be finished) and every test passed. Here each request's every status is tried below
and at the bound, with nothing else in the state.
"""

from __future__ import annotations

import dataclasses

import pytest

from spec._tables import final_states, transition_table
from spec.model import Model, load_config
from spec.model._state import State

BY_TIME = {
    "approvals": ("operation_approval", {"requested", "approved"}),  # APR-5: the monitor expires them
    "plans": ("plan_approval", {"pending", "approved"}),  # PLN-5: expired
    "runs": ("plan_execution", {"running"}),  # PLN-9: failed, then rolled back whoever its requester is
    "shutdowns": ("shutdown_request", {"requested"}),  # SHD-6: expired; a drain only times out
}
"""Each request's field, its machine, and the statuses that time alone ends, at the bound."""

MODEL = Model(dataclasses.replace(load_config("everything"), name="goal"))
BOUND = MODEL.config.max_ticks
CASES = [
    (field, status) for field, (machine, _) in sorted(BY_TIME.items()) for status in sorted(transition_table(machine))
]


def _with(field: str, status: str, clock: int) -> State:
    """The initial state at ``clock`` with its first ``field`` record in ``status``."""
    s = MODEL.initial()
    records = getattr(s, field)
    first = dataclasses.replace(records[0], status=status)
    return dataclasses.replace(s, clock=clock, **{field: (first, *records[1:])})


@pytest.mark.clause("INV-12", "SHD-6", "APR-5", "PLN-5", "PLN-9")
@pytest.mark.parametrize(("field", "status"), CASES, ids=[f"{f}-{s}" for f, s in CASES])
def test_a_request_is_settled_when_final_or_ended_by_time_at_the_bound(field: str, status: str) -> None:
    machine, by_time = BY_TIME[field]
    final = status in final_states(machine)
    assert BOUND is not None and BOUND > 0
    assert MODEL.is_goal(_with(field, status, BOUND - 1)) is final
    assert MODEL.is_goal(_with(field, status, BOUND)) is (final or status in by_time)
