"""Behaviour that mutants found unchecked (issue 17 item 5, ``scripts/mutation.py``).

Clause: AUD-1, INV-12, XPR-3, APR-4, MSG-1, STO-2, STO-4, REC-1, MSG-6.
Each test here was written for a mutant of ``reference/`` that the rest of the suite let survive
(named in its docstring); it checks what a caller or the stores see, on both backends.
"""

from __future__ import annotations

from typing import Any

import pytest

import reference as r
from spec.ids import message_id
from tests.conftest import Team

ARGS = {"path": "srv/app"}
TTL_SECONDS = 300.0


def audit_entries(storage: r.Storage) -> list[dict[str, Any]]:
    return [row.doc for row in storage.scan("audit_entry")]


@pytest.mark.clause("AUD-1", "INV-12")
def test_the_monitor_is_the_actor_of_an_expiry(team: Team) -> None:
    """The deadline monitor's expiry is the monitor's event, in the record and in the team log
    (``_expire``: ``self.h.event("MONITOR", …)`` survived)."""
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=TTL_SECONDS)
    team.clock.advance(TTL_SECONDS + 1)
    assert team.harness.approvals.expire_due() == [pid]
    record = team.harness.read("operation_approval", pid)
    assert record is not None
    last = record.doc["events"][-1]
    assert (last["actor"], last["event"]) == ("monitor", "expired")
    logged = [(e["actor"], e["event"]) for e in audit_entries(team.storage) if e["subject_id"] == pid]
    assert logged == [("m0", "approval.requested"), ("monitor", "approval.expired")]


@pytest.mark.clause("XPR-3")
def test_a_failed_consumption_check_names_that_check(team: Team) -> None:
    """XPR-3: a check that cannot complete refuses, naming the check, so the agent knows which
    (``_consume_once``: ``FailClosed("XXthe consumption checkXX", …)`` survived)."""
    pid = team.approved()
    team.storage.corrupt("capability_profile", "m0", "{torn")  # type: ignore[attr-defined]
    with pytest.raises(r.FailClosed) as caught:
        team.harness.approvals.call(team.ctx(), "deploy", ARGS, pid)
    assert caught.value.check == "the consumption check"
    assert str(caught.value).startswith("refused: the consumption check could not be completed (")
    assert str(caught.value).endswith("); the action did not run")


@pytest.mark.clause("APR-4", "MSG-1")
@pytest.mark.parametrize("decision", ["approved", "rejected"])
def test_a_decision_without_a_summary_says_nothing_more(team: Team, decision: str) -> None:
    """A review without a summary sends an empty one, never a made-up text (``_post_decision``:
    ``doc["review_summary"] or "XXXX"`` survived)."""
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS)
    team.harness.approvals.review("lead", pid, decision)
    sent = team.harness.read("message", message_id(pid, "decision"))
    assert sent is not None
    assert sent.doc["message"]["body"] == {"protocol_id": pid, "decision": decision, "review_summary": ""}


@pytest.mark.clause("APR-4")
def test_a_second_contrary_review_names_both_decisions(team: Team) -> None:
    """APR-4: a reviewed approval is not reviewed again the other way, and the refusal says which
    way was asked (``_review_once``: ``ReviewConflict(pid, doc["status"], None)`` survived)."""
    pid = team.approved()
    with pytest.raises(r.ReviewConflict) as caught:
        team.harness.approvals.review("lead", pid, "rejected")
    assert str(caught.value) == f"{pid} is already approved; cannot review it as rejected"


@pytest.mark.clause("STO-2")
def test_a_retry_within_the_ttl_tolerance_is_the_same_request(storage: r.Storage) -> None:
    """STO-2: a retry must match what the request bound, its time to live compared to within
    1e-9 s (the rounding of deadline - created_at); a difference of exactly the tolerance is the
    same request, a larger one a conflict (``_put_if_absent``: ``>= 1e-9`` survived). The clock
    starts at 0 so that the differences are exact."""
    team = Team(storage, clock=r.ManualClock(0.0))
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=2e-9)
    assert team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=1e-9) == pid
    with pytest.raises(r.ProtocolConflict):
        team.harness.approvals.request(team.ctx(), "deploy", ARGS, ttl_seconds=4e-9)


@pytest.mark.clause("REC-1", "MSG-6", "APR-4")
@pytest.mark.parametrize("decision", ["approved", "rejected"])
def test_reconciliation_redelivers_a_decision_a_crash_cut_off(team: Team, decision: str) -> None:
    """A crash after the review's record and before its message: reconciliation sends the
    decision, a rejection as well as an approval (``reconcile``: ``doc["status"] in ("approved",
    "XXrejectedXX")`` survived — the crash tests finish every approval by approving it)."""
    pid = team.harness.approvals.request(team.ctx(), "deploy", ARGS)
    team.storage.faults.crash_after.add("approval.review/record")
    with pytest.raises(r.Crash):
        team.harness.approvals.review("lead", pid, decision, "why")
    assert team.harness.read("message", message_id(pid, "decision")) is None
    team = team.restart()
    sent = team.harness.read("message", message_id(pid, "decision"))
    assert sent is not None
    assert sent.doc["message"]["body"] == {"protocol_id": pid, "decision": decision, "review_summary": "why"}


@pytest.mark.clause("STO-2")
def test_an_insert_over_an_existing_row_names_the_row(storage: r.Storage) -> None:
    """STO-2: a second insert under one key changes nothing and names the table and the key
    (``MemoryStorage._insert``: ``AlreadyExists(None, key)`` survived)."""
    team = Team(storage)
    before = team.harness.read("task", "t0")
    assert before is not None
    with pytest.raises(r.AlreadyExists) as caught:
        storage.insert("test/insert", "task", "t0", {**before.doc, "status": "pending"})
    assert (caught.value.table, caught.value.key) == ("task", "t0")
    assert str(caught.value) == "task/t0 already exists"
    assert team.harness.read("task", "t0") == before


@pytest.mark.clause("STO-4")
def test_a_guarded_update_at_a_stale_version_names_the_version_found(storage: r.Storage) -> None:
    """STO-4: a guarded update that asked for an old version is refused, definite, naming the
    row, the version asked for and the one found, and writes nothing (``SQLiteStorage.
    _update_guarded``: ``row and row[1]`` — the text for the version — survived)."""
    team = Team(storage)
    task = team.harness.read("task", "t0")
    assert task is not None
    guard = r.Guard(unchanged=(("member", "m0", team.harness.read("member", "m0").version),))  # type: ignore[union-attr]
    with pytest.raises(r.VersionConflict) as caught:
        storage.update("test/claim", "task", "t0", task.doc, task.version - 1, guard)
    found = caught.value
    assert (found.table, found.key, found.expected, found.actual) == ("task", "t0", task.version - 1, task.version)
    assert found.definite and team.harness.read("task", "t0") == task
