"""The reference's own detectors fire exactly where the model enables their event (SHD-10, MEM-2).

The model takes a heartbeat's lapse as an event, enabled for a member in the statuses its guard
names; the conformance suite triggers the lapse itself, so the detector that decides *when* a
member lapsed (``Members.lapsed``) was held to the model by nothing: a detector that no longer saw a
draining member's lapse passed every test and the suite (outside review). Here every status of the
member machine is tried: the detector and the operation it leads to must agree with the model's
guard, status by status.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import reference as r
import spec
from reference import Storage
from spec.model import Model, load_config
from tests.test_team import Team

MEMBER_STATUSES = sorted({e.source for e in spec.edges("member")} | {e.target for e in spec.edges("member")})


def model_lets_it_lapse(status: str) -> bool:
    """Whether the model's ``member.lapse`` is enabled for member 0 in ``status``."""
    model = Model(load_config("pair_lapses"))
    s = model.initial()
    s = replace(s, members=(replace(s.members[0], status=status), *s.members[1:]))
    return any(a.name == "member.lapse" and dict(a.args)["member"] == 0 for a, _ in model.operations(s))


def test_the_model_lets_a_live_member_lapse_and_no_other() -> None:
    """The premise, so the test below cannot pass by both sides saying no."""
    assert [s for s in MEMBER_STATUSES if model_lets_it_lapse(s)] == ["draining", "running"]


@pytest.mark.clause("SHD-10")
@pytest.mark.parametrize("status", MEMBER_STATUSES)
def test_a_heartbeat_lapses_exactly_where_the_model_lets_the_member_lapse(storage: Storage, status: str) -> None:
    team = Team(storage).setup()
    h = team.h
    h.members.heartbeat("m0", 1)
    h.members.heartbeat("m1", 1)
    row = h.member_row("m0")
    h.storage.update("test/status", "member", "m0", {**row.doc, "status": status}, row.version)
    team.clock.advance(30)
    h.members.heartbeat("m1", 1)
    enabled = model_lets_it_lapse(status)
    assert h.members.lapsed(max_age=10) == (["m0"] if enabled else [])
    assert h.members.lapsed(max_age=60) == []  # not yet past a longer window: nothing lapsed
    if enabled:
        h.members.lapse("m0")
        assert h.member("m0")["status"] == "unhealthy"
    else:
        with pytest.raises(r.MemberBusy):
            h.members.lapse("m0")
