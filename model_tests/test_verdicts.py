"""Every predicate judges the pinned near misses as pinned (``model_tests/verdicts.py``; INV-*).

Outside review 59 weakened INV-4 in one condition (a completed shutdown whose member is
``unhealthy`` let through): every check and test passed. Here every predicate is held, condition by
condition, to the problems it reports on some 128,000 snapshots one field off the model's steps,
and a change is named: the predicate, the problem, the base step, the field, and whether it
stopped or started reporting it.

Clause: INV-1, INV-2, INV-3, INV-4, INV-5, INV-6, INV-7, INV-8, INV-9, INV-10, INV-11, INV-12.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from model_tests import verdicts
from spec.invariants import INVARIANTS, WORLD, Invariant

NEVER_FIRE = {
    "audit_log_is_a_chain": "the model keeps no audit log (its snapshots' audit_entry is empty); the reference's "
    "chain is verify_audit_log's, tested in tests/test_audit_log.py",
    "records_keep_their_status_events": "the model abstracts a record's events away; the predicate judges the "
    "reference's records (tests/test_approval_crashes.py, test_stateful's crash cases)",
}
"""Predicates no near miss of a model step can make fire, each with where it is held instead."""


@functools.cache
def _pinned() -> tuple[list[verdicts.Base], dict[str, Any]]:
    return verdicts.load()


@pytest.mark.clause("INV-4")
def test_every_predicate_judges_the_near_misses_as_pinned() -> None:
    """A predicate changed on purpose is pinned again with ``python -m model_tests.verdicts --write``."""
    bases, pinned = _pinned()
    said, _ = verdicts.flips(pinned, bases)
    assert not said, "\n".join(said)


def test_the_near_misses_reach_every_predicate_both_ways() -> None:
    """Not a vacuous pin: each predicate fires on some near miss and is silent on another, but those
    no near miss of a model step reaches, each with its reason."""
    _, pinned = _pinned()
    assert pinned["near_misses"] > 50_000, pinned["near_misses"]
    never = {name for name, problems in pinned["verdicts"].items() if not problems}
    assert never == set(NEVER_FIRE), never
    for name, problems in pinned["verdicts"].items():
        fired = set().union(*(verdicts._unpack(entry["bits"]) for entry in problems.values()))
        assert len(fired) < pinned["near_misses"], f"{name} reports a problem on every near miss"
    assert set(pinned["verdicts"]) == {inv.name for inv in (*INVARIANTS, WORLD)}
    # a predicate that checks several things is held to each: its problems are told apart
    assert len(pinned["verdicts"]["messages_agree_with_records"]) > 20


def _weakened(name: str, check: Any) -> tuple[Invariant, ...]:
    return tuple(dataclasses.replace(inv, check=check) if inv.name == name else inv for inv in INVARIANTS)


def test_a_predicate_weakened_in_one_condition_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 59's P7 as a test-local mutant: INV-4 lets a completed shutdown of an unhealthy member
    through. The flips name INV-4, the member's status changed to unhealthy, and that it stopped firing."""
    original = next(inv for inv in INVARIANTS if inv.name == "shutdown_completed_iff_member_stopped").check

    def weakened(snap: Any) -> list[str]:
        return [p for p in original(snap) if not p.endswith("completed but member is unhealthy")]

    monkeypatch.setattr(verdicts, "INVARIANTS", _weakened("shutdown_completed_iff_member_stopped", weakened))
    bases, pinned = _pinned()
    said, _ = verdicts.flips(pinned, bases, frozenset({"shutdown_completed_iff_member_stopped"}))
    assert said and all("shutdown_completed_iff_member_stopped" in line for line in said), said
    assert "no longer reports 'shutdown_request/ID: completed but member is unhealthy'" in said[0], said[0]
    assert "member[0].status 'stopped' -> 'unhealthy'" in said[0], said[0]


def test_a_predicate_that_starts_firing_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    original = next(inv for inv in INVARIANTS if inv.name == "owed_messages_present").check

    def stricter(snap: Any) -> list[str]:
        return original(snap) or (["a retired member"] if any(m["status"] == "retired" for m in snap["member"]) else [])

    monkeypatch.setattr(verdicts, "INVARIANTS", _weakened("owed_messages_present", stricter))
    bases, pinned = _pinned()
    said, _ = verdicts.flips(pinned, bases, frozenset({"owed_messages_present"}))
    assert said and "owed_messages_present now reports 'a retired member'" in said[0], said[:2]


def test_a_predicate_that_raises_on_a_schema_valid_snapshot_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A claimed task that names no member raised KeyError in INV-2 (found by this corpus); a
    predicate must judge whatever the schemas allow, since implementations' snapshots are judged too."""

    def raising(before: Any, after: Any) -> list[str]:
        members = {m["member_id"]: m for m in before["member"]}
        for task in after["task"]:
            if task["status"] == "claimed":
                members[task["owner_id"]]  # KeyError for a claim naming no member (INV-2 before its fix)
        return []

    monkeypatch.setattr(verdicts, "INVARIANTS", _weakened("claims_only_by_eligible_members", raising))
    bases, pinned = _pinned()
    with pytest.raises(verdicts.PredicateRaised, match=r"INV-2 claims_only_by_eligible_members raised KeyError"):
        verdicts.flips(pinned, bases, frozenset({"claims_only_by_eligible_members"}))


def test_one_condition_of_a_predicate_that_checks_many_is_held_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A near miss often breaks several things at once (a renumbered plan decision also has a stale
    message id), so a predicate that still fires for the other reason hides a weakened condition
    unless its problems are told apart: plan decisions' numbering dropped for a plan that exists."""
    original = next(inv for inv in INVARIANTS if inv.name == "messages_agree_with_records").check

    def weakened(snap: Any) -> list[str]:
        return [p for p in original(snap) if not (p.startswith("plan_decision of") and "for a plan None" not in p)]

    monkeypatch.setattr(verdicts, "INVARIANTS", _weakened("messages_agree_with_records", weakened))
    bases, pinned = _pinned()
    said, _ = verdicts.flips(pinned, bases, frozenset({"messages_agree_with_records"}))
    assert said and "no longer reports 'plan_decision of ID: decisions numbered [N" in said[0], said[:2]


def test_the_world_check_is_held_to_each_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside review 65's P5 as a test-local mutant: the world check's "no key called twice" read
    ``count > 2``, and no near miss of a snapshot reached it (its other argument is the world's
    calls). The world's own near misses (a call made twice, three times, never, one unrecorded) do."""
    import spec.invariants as inv

    def weakened(calls: Any, executions: Any) -> list[str]:
        if any(calls.count(key) == 2 for key in calls):
            return []
        return inv.world_agrees(calls, executions)

    monkeypatch.setattr(verdicts, "WORLD", dataclasses.replace(inv.WORLD, check=weakened))
    bases, pinned = _pinned()
    said, _ = verdicts.flips(pinned, bases, frozenset({inv.WORLD.name}))
    assert said and "world_agrees_with_executions no longer reports 'INVN the protected tool was called" in said[0]
    assert "called twice" in said[0], said[0]
