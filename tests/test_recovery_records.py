"""What recovery writes, exactly (APR-8, REC-2, DESIGN rule 3): the outcome record of a call that
never happened or whose outcome was looked up, and the names of the write steps it used.

Clause: APR-8, REC-2, INV-1.
Found by the mutation score: recovery's records and step names were written but never read back.
"""

from __future__ import annotations

import pytest

import reference as r
from tests.conftest import Team

ARGS = {"path": "srv/app"}
RECOVERY_STEPS = {
    "approval.reconcile/execution",
    "approval.reconcile/outcome",
    "approval.reconcile/audit",
    "approval.request/message",
    "approval.review/message",
    "approval.expire/record",
}
"""The write steps a restart may use (the request and decision messages are re-sent, MSG-6)."""


def crashed_after(team: Team, step: str) -> tuple[Team, str]:
    pid = team.approved()
    team.storage.faults.crash_after.add(step)
    with pytest.raises(r.Crash):
        team.harness.approvals.call(team.ctx(), "deploy", ARGS, approval_id=pid)
    written = len(team.storage.steps_written)
    team = team.restart()
    steps = set(team.storage.steps_written[written:])
    assert steps <= RECOVERY_STEPS, f"recovery wrote under unnamed steps {steps - RECOVERY_STEPS}"
    return team, pid


@pytest.mark.clause("APR-8", "REC-2")
@pytest.mark.parametrize(
    ("step", "result"),
    [
        ("approval.consume/record", {"ok": False, "error": "crashed before the call"}),
        ("approval.consume/execution", {"ok": False, "error": "the call never happened (crashed before it)"}),
    ],
    ids=["before-the-write-ahead", "before-the-call"],
)
def test_a_call_that_never_happened_is_recorded_failed(team: Team, step: str, result: dict[str, object]) -> None:
    team, pid = crashed_after(team, step)
    execution = team.harness.read("tool_execution", pid).doc  # type: ignore[union-attr]
    assert (execution["status"], execution["result"]) == ("failed", result)
    assert execution["attempts"] == (0 if step == "approval.consume/record" else 1)
    assert team.world.calls == []


@pytest.mark.clause("APR-8", "INV-1")
def test_a_looked_up_call_is_recorded_with_the_tools_answer(team: Team) -> None:
    team, pid = crashed_after(team, "approval.consume/call")
    execution = team.harness.read("tool_execution", pid).doc  # type: ignore[union-attr]
    assert (execution["status"], execution["result"], execution["attempts"]) == ("succeeded", {"ok": True}, 1)
    assert "approval.reconcile/outcome" in team.storage.steps_written


@pytest.mark.clause("INV-12", "AUD-5")
def test_the_monitor_writes_under_its_named_steps(team: Team) -> None:
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS)
    team.clock.advance(301)
    written = len(team.storage.steps_written)
    assert team.harness.approvals.expire_due() == [pid]
    expired = ["approval.expire/record", "approval.expire/audit", "approval.expire/message"]  # MSG-1
    assert team.storage.steps_written[written:] == expired
