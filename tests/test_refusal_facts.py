"""The refusal facts check itself (``tests/_refusal_facts.py``; DESIGN rule 8, APR-5, XPR-1).

Every test runs under it (``conftest.py``); here: every refusal class has a rule or a reason to
have none, a misstated fact is found and a true one is not, and a refusal made outside any harness
operation is left alone. Its mutant: ``stale_plan_misstated`` (a stale plan's refusal with the two
incarnations swapped), which only this check sees.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

import reference as r
from tests import _refusal_facts
from tests._refusal_facts import RULES, UNCHECKED, refusal_classes, summary, watching
from tests.conftest import Team


def test_every_refusal_class_has_a_rule_or_a_reason() -> None:
    """A new refusal class fails here until its facts have a rule (or a reason to have none)."""
    classes = set(refusal_classes())
    assert not set(RULES) & set(UNCHECKED), "a class is both checked and excused"
    assert set(RULES) | set(UNCHECKED) == classes, (
        f"without a rule or a reason: {sorted(classes - set(RULES) - set(UNCHECKED))}; "
        f"named but no refusal class: {sorted((set(RULES) | set(UNCHECKED)) - classes)}"
    )


def _refuse(self: r.Harness, cls: type[Exception], *facts: Any) -> Exception:
    """A refusal made inside an operation of the harness ``self`` (as the reference makes them)."""
    return cls(*facts)


@pytest.mark.clause("APR-5")
def test_a_misstated_fact_is_found_and_a_true_one_is_not(team: Team) -> None:
    pid = team.approved()
    approval = next(a for a in team.harness.snapshot()["operation_approval"] if a["protocol_id"] == pid)
    deadline = approval["deadline"]
    team.clock.advance(deadline - team.clock.now() + 1)
    now = team.clock.now()
    with watching() as problems:
        _refuse(team.harness, r.ApprovalExpired, pid, deadline, now)
        _refuse(team.harness, r.ApprovalNotActive, pid, "approved")
        assert problems == []
        _refuse(team.harness, r.ApprovalExpired, pid, now, deadline)  # the two times swapped
        _refuse(team.harness, r.ApprovalNotActive, pid, "requested")
        _refuse(team.harness, r.UnknownApproval, pid)
    said = [problem.split(": ", 1)[1] for problem in problems]
    assert said == [
        f"deadline is {now!r}, the store has {deadline!r}",
        f"now is {deadline!r}, the store has {now!r}",
        f"now {deadline} is not past deadline {now}",
        "status is 'requested', the store has 'approved'",
        f"operation_approval {pid} is in the store",
    ], problems


def test_a_refusal_made_outside_any_harness_is_not_checked_but_counted(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test or a document that builds a refusal with made-up facts checks nothing — and the run's
    tally says so (outside review 58's D6), as it does for one made on an interleaving's thread."""
    monkeypatch.setattr(_refusal_facts, "TALLY", Counter())
    monkeypatch.setattr(_refusal_facts, "NO_HARNESS_IN", Counter())
    with watching() as problems:
        r.ApprovalNotActive("no-such-approval", "requested")
        _refuse(team.harness, r.ApprovalNotActive, "no-such-approval", "requested")
        thread = threading.Thread(target=_refuse, args=(team.harness, r.ApprovalNotActive, "x", "requested"))
        thread.start()
        thread.join()
    assert len(problems) == 1, problems  # the one made inside the harness's operation
    assert Counter({("ApprovalNotActive", "tests/test_refusal_facts.py"): 1}) == _refusal_facts.NO_HARNESS_IN
    assert (
        Counter(
            {
                ("ApprovalNotActive", "no harness"): 1,
                ("ApprovalNotActive", "checked"): 1,
                ("ApprovalNotActive", "on a thread"): 1,
            }
        )
        == _refusal_facts.TALLY
    )


def test_a_refusal_made_where_a_function_holds_the_harness_is_checked(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lead's inspection is a function taking ``harness``, not a method on ``self.h``: its
    refusals were made with "no harness" and their facts never judged."""
    monkeypatch.setattr(_refusal_facts, "TALLY", Counter())

    def inspect(harness: r.Harness) -> None:
        r.ApprovalNotActive("no-such-approval", "requested")

    with watching() as problems:
        inspect(team.harness)
    assert problems and "operation_approval no-such-approval" in problems[0], problems
    assert Counter({("ApprovalNotActive", "checked"): 1}) == _refusal_facts.TALLY


def test_the_tally_names_the_classes_no_test_checked() -> None:
    tally = Counter(
        {("ApprovalNotActive", "checked"): 3, ("StalePlan", "on a thread"): 2, ("TaskTaken", "no harness"): 1}
    )
    lines = summary(tally)
    assert (
        lines[0]
        == f"refusal facts: 3 refusals checked, 1/{len(RULES)} classes with a rule; 2 on a thread; 1 no harness"
    )
    assert lines[1] == "refusal facts out of reach: StalePlan 2 on a thread, TaskTaken 1 no harness"
    never = lines[2].removeprefix("refusal facts never checked: ").split(", ")
    assert "StalePlan (on a thread only)" in never and "TaskTaken (no harness only)" in never
    assert len(never) == len(RULES) - 1 and not any(name.startswith("ApprovalNotActive") for name in never)
    places = Counter({("TaskTaken", "tests/test_a.py"): 1, ("MemberBusy", "tests/test_a.py"): 2})
    assert summary(tally, places)[2] == (
        "refusal facts with no harness, by test file: tests/test_a.py (MemberBusy 2, TaskTaken 1)"
    )
