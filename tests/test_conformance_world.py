"""The suite's judgement of the external system against the stores (``world.calls``: INV-1, APR-6,
APR-8): each branch on a driver's answer made by hand, and the reference's own answer.

An outside review (45) planted a recovery that called a started tool call again and recorded the
outcome the model records: the stores looked right, and only the external system could tell.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance._replay import WORLD, world_problems

CAPS = {"operations": [], "reads": [WORLD]}


class Answers:
    """A session whose driver answers ``world.calls`` with ``calls`` (or ``reply`` as given)."""

    def __init__(self, calls: Any = None, reply: dict[str, Any] | None = None) -> None:
        self.reply = reply or {"type": "ok", "result": {"calls": calls}}
        self.impl = self
        self.noted: list[str] = []

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert request == {"type": WORLD}
        return self.reply

    def note(self, what: str, reply: dict[str, Any]) -> None:
        self.noted.append(what)


def stores(**executions: str) -> dict[str, Any]:
    return {"tool_execution": [{"idempotency_key": key, "status": status} for key, status in executions.items()]}


@pytest.mark.clause("INV-1", "APR-6", "APR-8")
@pytest.mark.parametrize(
    ("calls", "own", "said"),
    [
        (["k1"], stores(k1="succeeded", k2="started"), None),
        ([], stores(k2="failed", k3="started"), None),
        (["k1", "k1"], stores(k1="succeeded"), "INV-1 the protected tool was called 2 times under k1"),
        (["k1", "k9"], stores(k1="succeeded"), "APR-6 the protected tool was called under k9, which no execution"),
        ([], stores(k1="succeeded"), "APR-8 the execution k1 is recorded succeeded, but the tool was never called"),
        (["k1"], stores(k1="failed"), "APR-8 the tool was called under k1 and answered ok, but its execution is"),
    ],
    ids=["agree", "nothing-called", "twice", "unrecorded", "never-called", "called-but-failed"],
)
def test_the_external_system_is_judged_against_the_stores(calls: list[str], own: dict[str, Any], said: str) -> None:
    problems = world_problems(Answers(calls), CAPS, own)  # type: ignore[arg-type]
    if said is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(said), problems


@pytest.mark.clause("INV-1")
def test_a_driver_without_the_read_is_not_judged_and_a_bad_answer_is_named() -> None:
    assert world_problems(Answers(["k1", "k1"]), {"reads": []}, stores()) == []  # type: ignore[arg-type]
    session = Answers(reply={"type": "ok", "result": {"calls": [1, 2]}})
    (problem,) = world_problems(session, CAPS, stores())  # type: ignore[arg-type]
    assert problem.startswith(f"{WORLD} must answer") and session.noted == [WORLD]
