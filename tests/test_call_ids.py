"""The ids a member process derives for its tool calls: one per call, a new one per claim.

A job's id and a protected call's ``tool_call_id`` are derived by the harness from the task's
record (APR-3, DESIGN rule 2). A retry within one claim must repeat the id (MSG-4: it finds its
own job or approval again, JOB-1, APR-6); a task claimed again is a new holder making a new call
(TSK-3, XPR-1): its interrupted job must run again and its protected call ask again. The end to
end case — a drained and a lost member's jobs, re-run after the re-claim — is the demo's
(``tests/test_demo.py``, ``reference._demo.expectations``); this file holds the derivation to
the rule for every history Hypothesis draws.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference._member_process import tool_call_id

OTHER_EVENTS = ("checkpointed", "released", "needs_inspection", "suspended", "resumed", "pending")


@st.composite
def calls(draw: st.DrawFn) -> tuple[tuple[int, int, int, str], dict[str, Any]]:
    """A task record whose history holds ``claims`` claims among other events, and the call its
    holder makes next: (claims, step, calls done, kind) and the record."""
    claims = draw(st.integers(0, 4))
    step, done = draw(st.integers(0, 5)), draw(st.integers(0, 3))
    kind = draw(st.sampled_from(["job", "deploy"]))
    history = [{"event": "claimed", "at": float(i), "actor": "m0"} for i in range(claims)]
    others = draw(st.lists(st.sampled_from(OTHER_EVENTS), max_size=4))
    history += [{"event": e, "at": 0.5, "actor": "lead"} for e in others]
    history = draw(st.permutations(history))
    checkpoint = draw(
        st.sampled_from([None, {"state": {"step": step, "calls_done": done, "results": []}, "saved_at": 1.0}])
    )
    if checkpoint is None:
        step, done = 0, 0  # no checkpoint: the task starts from its first step (TSK-3)
    task = {"task_id": "t0", "status": "claimed", "history": history, "checkpoint": checkpoint}
    return (claims, step, done, kind), task


@pytest.mark.clause("MSG-4", "TSK-3", "XPR-1", "JOB-1")
@given(calls(), calls())
def test_two_calls_share_an_id_exactly_when_they_are_one_call_of_one_claim(
    first: tuple[tuple[int, int, int, str], dict[str, Any]], second: tuple[tuple[int, int, int, str], dict[str, Any]]
) -> None:
    """Same claim, step, calls done and kind: the same id (a retry); any of them different — a
    later claim above all — another id. Clause: TSK-3"""
    (call_a, task_a), (call_b, task_b) = first, second
    assert (tool_call_id(task_a, call_a[3]) == tool_call_id(task_b, call_b[3])) == (call_a == call_b), (call_a, call_b)


@pytest.mark.clause("TSK-3", "XPR-1")
def test_a_task_claimed_again_at_the_same_step_makes_a_new_call() -> None:
    """The instance the property generalises: a drain released the task mid-job at step 2; the
    next claim resumes at step 2 with a new job id. Clause: TSK-3"""
    checkpoint = {"state": {"step": 2, "calls_done": 0, "results": []}, "saved_at": 3.0}
    once = {"task_id": "t0", "history": [{"event": "claimed", "at": 1.0}], "checkpoint": checkpoint}
    again = {**once, "history": [*once["history"], {"event": "released", "at": 4.0}, {"event": "claimed", "at": 5.0}]}
    assert tool_call_id(once, "job") == "t0-c1-s2-0-job"
    assert tool_call_id(again, "job") == "t0-c2-s2-0-job"
