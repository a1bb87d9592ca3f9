"""Every loop over a kind of deadlined record meets two of them overdue at once (SHD-6, INV-12).

The deadline monitor, reconciliation and the inspections each loop over the records of a kind. A
loop that stops after its first record (a ``break``, an ``any`` for an ``all``) is seen only where
two records of that kind are past their deadlines in one state: outside review 65's P1 (a pass
that moved one overdue shutdown request) passed every check, since every pinned configuration had
at most one record of a kind under a clock. Here, for each kind, some pinned configuration must
reach such a state; a kind none reaches is listed with its reason.
"""

from __future__ import annotations

import pytest

from spec.explore import explore_states
from spec.model import Model, load_config, manifest
from spec.model._state import State

OVERDUE = {
    "approvals": ("approvals", ("requested", "approved")),
    "shutdowns": ("shutdowns", ("requested", "draining")),
    "plans": ("plans", ("pending", "approved")),
}
"""Per kind (a configuration's slot count): the state's records, and the statuses the monitor moves."""

UNMET = {
    "plans": "two plans under a clock outgrow 300,000 states (an approval and two plans too); "
    "plans meet the monitor one at a time (plan, plan_lost, plan_fencing)",
}
"""Kinds no pinned configuration shows two of overdue at once, with the reason."""


def _overdue(state: State, kind: str) -> int:
    field, statuses = OVERDUE[kind]
    return sum(1 for r in getattr(state, field) if r.status in statuses and state.clock > r.deadline)


def _witnesses(kind: str) -> list[str]:
    """The pinned configurations with two slots of ``kind`` and a clock."""
    out = []
    for name, pins in manifest().items():
        if pins.get("states") is None or "/" in name:
            continue
        config = load_config(name)
        if getattr(config, kind) >= 2 and (config.max_ticks is None or config.max_ticks > 0):
            out.append(name)
    return sorted(out)


@pytest.mark.clause("SHD-6", "INV-12", "REC-2")
@pytest.mark.parametrize("kind", sorted(OVERDUE))
def test_some_pinned_configuration_has_two_overdue_records_of_each_kind(kind: str) -> None:
    names = _witnesses(kind)
    if kind in UNMET:
        assert not names, f"{kind}: {names} may show two overdue at once now; drop it from UNMET"
        return
    assert names, f"no pinned configuration has two {kind} under a clock"
    for name in names:
        _, states = explore_states(Model(load_config(name)))
        if any(_overdue(s, kind) >= 2 for s in states or ()):
            return
    pytest.fail(f"none of {names} reaches a state with two {kind} past their deadlines at once")
