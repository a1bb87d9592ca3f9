"""Deadline regions (``spec/model/_time.py``): unbounded time, keyed by what the checks compare.

Clause: INV-12 (the explorer's soundness), SHD-6, PLN-5, APR-4, APR-5 (deadlines), INV-1 (consumed
by the deadline). A configuration with ``"max_ticks": null`` lets time run unbounded and keys
its visited set by deadline regions. A clock search with bound N reaches a subset of its region
classes; from a large enough N (:data:`SATURATED`) exactly the same ones — compared up to an idle
monitor pass still owed (a clock search may tick when nothing can pass; the region search does
not) — with the same findings: violations, edges, crash points, deadlocks, liveness. Checked
healthy on every configuration small enough, and with every model mutant of those (the larger
ones only with ``TEAMPROTO_TIME_FULL=1``: a few minutes).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest

from spec.explore import _search, explore
from spec.model import MUTANTS, Model, load_config
from spec.model._config import BadConfig, parse_config
from spec.model._dead import erase
from spec.model._ops import monitor_is_idle
from spec.model._state import State, replace
from spec.model._symmetry import canonical_key
from spec.model._time import FLOOR, relative

CLOCK = {
    "tiny": (3, 2),
    "monitor": (3, 2),
    "plan": (3, 3),
    "fencing": (2, 2),
    "plan_lost": (1, 3),
    "pair_lapses": (1, 1),
    "approval_drain": (2, 3),
}
"""Configuration in deadline regions → (its clock bound before it had regions, the smallest clock
bound whose search reaches every region class). ``wide`` and ``standard`` are too large to
search with a clock that long."""

MUTANT_CLOCK = {"tiny": 3, "monitor": 3, "plan": 3, "fencing": 3, "plan_lost": 3, "pair_lapses": 3, "approval_drain": 4}
"""The clock bound a mutant's comparison runs to: the smallest that reached every region class
before the unread deadlines were erased (``spec.model._time.UNREAD``). A mutant may keep a
deadline open that the healthy model closes (monitor_skips_shutdown never times a drain out;
request_message_expires_late leaves a message pending a tick longer, so tiny needs 3), so the
healthy model's smallest bound can be too short for it."""

QUICK = {False: ("tiny", "monitor"), True: ("tiny", "monitor")}
"""Compared in the default run, healthy (False) and with each mutant (True); the rest with
``TEAMPROTO_TIME_FULL=1``."""

FULL = os.environ.get("TEAMPROTO_TIME_FULL") == "1"
ENDLESS = {"restart_keeps_incarnation"}  # its search is infinite, region or clock: caught, not compared


def _class(model: Model, s: State) -> Any:
    """A state's region class, an owed idle monitor pass counted as done."""
    if not s.monitor_done and monitor_is_idle(model, s):
        s = replace(s, monitor_done=True)
    alike = erase(s, regions=True)
    return canonical_key(alike) if model.config.symmetry else alike


def _compare(name: str, mutant: str | None, bound: int) -> tuple[Any, Any]:
    regions = _search(Model(load_config(name), mutant))
    clock = _search(Model(dataclasses.replace(load_config(name), max_ticks=bound), mutant))
    assert regions.report.complete and clock.report.complete
    return regions, clock


def _cases(mutants: bool) -> list[Any]:
    cases = []
    for name in CLOCK:
        names = [m for m, v in MUTANTS.items() if v.config == name and m not in ENDLESS] if mutants else [None]
        for mutant in names:
            slow = name not in QUICK[mutants]
            marks = [pytest.mark.skipif(slow and not FULL, reason="TEAMPROTO_TIME_FULL=1 compares it")]
            cases.append(pytest.param(name, mutant, marks=marks, id=f"{name}-{mutant or 'healthy'}"))
    return cases


@pytest.mark.clause("INV-12", "SHD-6", "PLN-5", "APR-5")
@pytest.mark.parametrize(("name", "mutant"), _cases(mutants=False))
def test_regions_reach_the_classes_of_a_long_enough_clock(name: str, mutant: str | None) -> None:
    """Every region class a long enough clock search reaches, the region search reaches, and no
    other; with one tick less the clock misses some (the bound is the smallest). The configuration's
    old bound (``CLOCK[name][0]``) was at most this: it saw a subset."""
    _, enough = CLOCK[name]
    regions, clock = _compare(name, mutant, enough)
    reached = {_class(regions.model, s) for s in regions.states}
    assert {_class(clock.model, s) for s in clock.states} == reached
    assert regions.report.findings() == clock.report.findings()
    assert regions.report.states < clock.report.states
    shorter = _search(Model(dataclasses.replace(load_config(name), max_ticks=enough - 1)))
    assert {_class(shorter.model, s) for s in shorter.states} < reached


@pytest.mark.clause("INV-12", "SHD-6", "PLN-5", "APR-4", "APR-5")
@pytest.mark.parametrize(("name", "mutant"), _cases(mutants=True))
def test_regions_find_what_a_long_enough_clock_finds_in_every_mutant(name: str, mutant: str) -> None:
    """Each model mutant of a configuration in regions: the same violations, edges, crash points,
    deadlocks and liveness verdict as the clock search, and caught by its own check."""
    regions, clock = _compare(name, mutant, MUTANT_CLOCK[name])
    assert regions.report.findings() == clock.report.findings()
    assert MUTANTS[mutant].found_in(regions.report.violations)


DEADLINE_MUTANTS = (
    "consume_after_deadline",
    "monitor_expires_early",
    "review_after_deadline",
    "timeout_approves_plan",
    "monitor_skips_shutdown",
    "review_refused_at_deadline",
    "begin_drain_refused_at_deadline",
    "start_refused_at_deadline",
)


@pytest.mark.clause("APR-4", "APR-5", "PLN-5", "SHD-6", "INV-12")
@pytest.mark.parametrize("mutant", DEADLINE_MUTANTS)
def test_every_deadline_mutant_is_caught_in_regions(mutant: str) -> None:
    """The mutants that break a deadline are caught by their own check under unbounded time."""
    config = load_config(MUTANTS[mutant].config)
    assert config.regions
    report = explore(Model(config, mutant), stop_on=MUTANTS[mutant].caught_by)
    assert MUTANTS[mutant].found_in(report.violations)


def _requested(name: str = "tiny") -> State:
    """tiny's state with its approval just requested (the first such state breadth-first)."""
    model = Model(load_config(name))
    search = _search(model, max_states=200)
    return next(s for s in search.states if s.approvals[0].status == "requested" and s.monitor_done)


@pytest.mark.clause("APR-5", "INV-1", "INV-12")
def test_a_region_keeps_what_is_compared_and_nothing_else() -> None:
    """States that differ by a shift of every time, or below the floor, are one region; offsets
    that a check tells apart, and a consumption before or after the deadline, are not."""
    s = _requested()
    approval = s.approvals[0]
    shifted = replace(s, clock=s.clock + 5, approvals=(replace(approval, deadline=approval.deadline + 5),))
    assert relative(shifted) == relative(s)
    deep = [replace(s, clock=approval.deadline - FLOOR + k) for k in (0, 1, 7)]
    assert relative(deep[0]) == relative(deep[1]) == relative(deep[2])
    offsets = {relative(replace(s, clock=approval.deadline + k)) for k in (-1, 0, 1, 2)}
    assert len(offsets) == 4, "deadline ahead, now, just passed, passed a monitor pass ago: four regions"
    consumed = replace(approval, status="consumed", consumed_at=approval.deadline)
    late = replace(consumed, consumed_at=approval.deadline + 1)
    on_time, too_late = (relative(replace(s, approvals=(a,), bus=())) for a in (consumed, late))
    assert on_time != too_late
    assert on_time.approvals[0].deadline == 0, "a final approval's deadline is read no more"


def test_a_final_record_keeps_its_deadline_while_its_request_message_is_pending() -> None:
    """The monitor expires a pending request message once the deadline passed (MSG-5): a rejected
    approval's deadline stays in its region until that message is no longer pending."""
    s = _requested()
    rejected = replace(s, approvals=(replace(s.approvals[0], status="rejected"),))
    assert any(m.key[0] == "approval_request" and m.status == "pending" for m in rejected.bus)
    later = replace(rejected, clock=rejected.clock + 1)
    assert relative(later) != relative(rejected)
    quiet = replace(rejected, bus=tuple(replace(m, status="expired") for m in rejected.bus))
    assert relative(replace(quiet, clock=quiet.clock + 1)) == relative(quiet)


@pytest.mark.clause("SHD-6")
def test_a_tick_is_taken_only_when_it_changes_a_region() -> None:
    """Nothing pending: no tick (the clock search would tick on to its bound for nothing). A
    request pending: ticks until its deadline passed and the monitor expired it."""
    model = Model(load_config("tiny"))
    assert "tick" not in [a.name for a, _ in model.successors(model.initial())]
    s = _requested()
    ticks = 0
    while True:
        moves = {a.name: after for a, after in model.successors(s) if not a.crash_after}
        if "monitor.pass" in moves:
            s = moves["monitor.pass"]
        elif "tick" in moves:
            s, ticks = moves["tick"], ticks + 1
        else:
            break
    assert s.approvals[0].status == "expired" and ticks == 2, (ticks, s.approvals[0])  # ttl_ticks + 1
    assert not [a for a, _ in model.successors(s) if a.name == "tick"]


def test_the_comparison_catches_a_region_that_hides_too_much(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a floor of -1 merges "just passed" with "passed a monitor pass
    ago", which INV-12 tells apart; the monitor_skips_shutdown mutant's violation is then lost."""
    from spec.model import _time

    config = load_config("monitor")
    mutant = "monitor_skips_shutdown"
    honest = explore(Model(config, mutant))
    assert "requests_final_by_deadline" in honest.violations
    monkeypatch.setattr(_time, "FLOOR", -1)
    coarse = explore(Model(config, mutant))
    assert "requests_final_by_deadline" not in coarse.violations


def test_max_ticks_is_a_whole_number_or_null() -> None:
    """A bad bound is a typed error naming the configuration; null is unbounded time."""
    document = {f.name: getattr(load_config("tiny"), f.name) for f in dataclasses.fields(load_config("tiny"))}
    del document["name"]
    assert parse_config("t", document).regions
    for bad in (-1, "3", 1.5):
        with pytest.raises(BadConfig, match="max_ticks"):
            parse_config("t", {**document, "max_ticks": bad})
    assert not parse_config("t", {**document, "max_ticks": 3}).regions
