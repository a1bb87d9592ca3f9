"""An outside review of the flat engine's time (issue 18): the blind spots of ``test_flat.py``'s
time tests, closed.

``test_flat.py`` proves the tick, the monitor pass, ``tick_matters`` and the region key
(:func:`spec.model._flat.relative`) equal to the model's on whole state spaces of ``plan``,
``monitor``, ``tiny`` (regions) and of ``pair`` and ``shutdown`` with a bounded clock, and on
walks through ``standard``. Every one of these has **one slot per kind of record** (one approval,
one plan, one shutdown). So wherever the flat time code reads a message's key or a record's slot,
slot 0 and the key's other zeros look alike: the monitor's message expiry (MSG-5) looking up the
record by the key's retraction number instead of its slot, or the region key's pending requests
(``_pending_requests``) keyed the same wrong way, pass every time test there is, yet change what
``explore()`` and ``teamproto check`` report on any supported configuration with two approvals or
two shutdowns under a clock or deadline regions (for instance ``pair`` with ``"approvals": 2`` and
``"max_ticks": null``). Here, within seconds: the same per-transition proof (successors, edges,
goal, region key, ``tick_matters``) and whole-report equality on regions variants with two
approval slots (with crashes) and two shutdown slots.

Both bugs, planted in a scratch clone, change ``explore()``'s state and transition counts on the
variants below and on ``pair`` with two approvals under regions; each fails both tests here.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import pytest

from spec.explore import _search, explore, flat_engine
from spec.model import Model, load_config
from spec.model._state import State

from .test_flat import _findings, time_differences

SLOT_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # regions, an approval's request and its decision in slot 1 as well as slot 0, crashes (REC)
    "tiny, 2 approvals": ("tiny", {"liveness": False, "profile_changes": 0, "approvals": 2}),
    # regions, two shutdown requests of one member: SHD-6's expiry and timeout per slot
    "monitor, 2 shutdowns": ("monitor", {"liveness": False, "shutdowns": 2, "jobs": False}),
}


@cache
def _slot_expanded(variant: str) -> tuple[Model, list[State]]:
    base, changes = SLOT_VARIANTS[variant]
    model = Model(dataclasses.replace(load_config(base), **changes))
    states = list(_search(model).states)
    crashed = [s for state in states for _, s in model.successors(state) if isinstance(s, State) and s.crashed]
    return model, states + crashed


def _second_slot_expires(states: list[State]) -> bool:
    """The sample is what it claims: a request message of slot 1 expired by the monitor (MSG-5)."""
    return any(m.key[1] == 1 and m.key[0].endswith("_request") and m.status == "expired" for s in states for m in s.bus)


@pytest.mark.clause("MSG-5", "SHD-6", "APR-4")
@pytest.mark.parametrize("variant", sorted(SLOT_VARIANTS))
def test_flat_time_equals_the_models_with_two_slots(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per transition on the whole state space (with the region key and ``tick_matters`` of every
    state), and the whole flat search's report against the model's search."""
    model, states = _slot_expanded(variant)
    assert model.config.regions and flat_engine(model)
    assert _second_slot_expires(states)
    assert time_differences(model, states) == []
    mine = explore(model)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    assert not flat_engine(model)
    assert _findings(mine) == _findings(explore(model))
