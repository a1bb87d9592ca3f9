"""States only two instances reach: the model's operations (and the flat engine's) there.

In the model a crash is followed at once by its restart's reconciliation, so no configuration
reaches a drain cut short at its first write and then met by another instance's inspection,
restart or monitor. The reference reaches them (``tests/test_shutdown_details.py``), and the
model's operations must decide them as the reference does: the explorer cannot check rules no
reachable state exercises (a second outside review removed each of the three below and no model
test failed). Built by hand here, on a configuration of two members and two shutdown requests.

Clause: SHD-7, XPR-1, INV-4, INV-12, REC-2.
"""

from __future__ import annotations

import pytest

from model_tests.test_flat import differences
from spec.model import Model, parse_config
from spec.model._flat import supports
from spec.model._reconcile import reconcile
from spec.model._state import Member, Shutdown, State, replace

CONFIG = {
    "description": "two members, two shutdown requests, restarts: states two instances reach",
    "members": 2, "tasks": 1, "approvals": 0, "plans": 0, "shutdowns": 2, "max_ticks": 3, "ttl_ticks": 1,
    "unit_ticks": 10**9, "plan_steps": 1, "crashes": False, "jobs": False, "lapses": False,
    "max_incarnation": 2, "profile_changes": 0, "max_retractions": 0, "symmetry": False, "liveness": False,
    "require_coverage": False,
}  # fmt: skip


@pytest.fixture(scope="module")
def model() -> Model:
    return Model(parse_config("two_instances", CONFIG), reduce=False)


def _state(model: Model, members: tuple[Member, ...], shutdowns: tuple[Shutdown, ...]) -> State:
    return replace(model.initial(), members=members, shutdowns=shutdowns)


def _after(model: Model, state: State, operation: str) -> list[State]:
    """Every state ``operation`` leads to from ``state`` (run whole)."""
    return [after for action, after in model.successors(state) if action.name == operation and isinstance(after, State)]


def stale_force(model: Model) -> State:
    """m0 restarted (incarnation 2) drains for request 1; request 0, of incarnation 1, cut short
    and never reconciled, timed out; request 1 timed out too."""
    return _state(
        model,
        (Member(status="draining", incarnation=2, accepting=False, shutdown=1), Member()),
        (Shutdown("timed_out", 0, 1, 1), Shutdown("timed_out", 0, 2, 1)),
    )


def other_member_draining(model: Model) -> State:
    """m0 lost (unhealthy) with a drain it never noted (request 0); m1 drains for request 1."""
    return _state(
        model,
        (Member(status="unhealthy", accepting=False), Member(status="draining", accepting=False, shutdown=1)),
        (Shutdown("draining", 0, 1, 1), Shutdown("draining", 1, 1, 1)),
    )


def two_incarnations_draining(model: Model) -> State:
    """m0, incarnation 2, lost, with a drain of its own (request 1) and an older incarnation's
    drain still open (request 0)."""
    return _state(
        model,
        (Member(status="unhealthy", incarnation=2, accepting=False, shutdown=1), Member()),
        (Shutdown("draining", 0, 1, 1), Shutdown("draining", 0, 2, 1)),
    )


def old_drain_after_restart(model: Model) -> State:
    """m0 runs incarnation 2; request 0, of incarnation 1, still draining (the inspection was cut off)."""
    return _state(model, (Member(incarnation=2), Member()), (Shutdown("draining", 0, 1, 1), Shutdown()))


def test_a_stale_request_is_never_force_terminated(model: Model) -> None:
    """SHD-7, XPR-1: the last rung only for the drain the member runs now."""
    enabled = sorted(
        dict(action.args)["slot"]
        for action, _ in model.successors(stale_force(model))
        if action.name == "shutdown.force_terminate"
    )
    assert enabled == [1]


def test_an_inspection_ends_its_members_drains_and_no_others(model: Model) -> None:
    """SHD-7, INV-12: inspecting m0 completes the drain m0 never noted, and leaves m1's."""
    (after,) = _after(model, other_member_draining(model), "member.inspect")
    assert [sd.status for sd in after.shutdowns] == ["completed", "draining"]
    assert after.members[1] == other_member_draining(model).members[1]


def test_an_inspection_ends_the_drains_of_its_members_incarnation_only(model: Model) -> None:
    """XPR-1: an older incarnation's open drain is reconciliation's to end, not this inspection's."""
    (after,) = _after(model, two_incarnations_draining(model), "member.inspect")
    assert [sd.status for sd in after.shutdowns] == ["draining", "completed"]
    assert [sd.status for sd in reconcile(model, after).shutdowns] == ["completed", "completed"]


def test_reconciliation_completes_an_old_incarnations_drain_and_leaves_the_new_one(model: Model) -> None:
    """INV-12, XPR-1: the old request completes; m0's new incarnation runs on untouched."""
    before = old_drain_after_restart(model)
    after = reconcile(model, before)
    assert after.shutdowns[0].status == "completed" and after.members == before.members


def test_the_flat_engine_decides_these_states_as_the_model() -> None:
    """The plain-tuple engine's successors equal the model's on each of these states (under the
    same configuration without restarts, which the flat engine does not take: the states carry
    their incarnations all the same)."""
    model = Model(parse_config("two_instances_flat", {**CONFIG, "max_incarnation": 1}), reduce=False)
    assert supports(model.config)
    states = [
        stale_force(model),
        other_member_draining(model),
        two_incarnations_draining(model),
        old_drain_after_restart(model),
    ]
    assert differences(model, states) == []
