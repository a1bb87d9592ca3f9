"""Reconciliation's catch-up of the team log survives a crash between two of its own appends.

Clause: AUD-5, REC-2, REC-4.

A shutdown request whose two events (requested, draining) the log misses — the request's and the
drain's audit steps both cut off by crashes — is caught up by the next reconciliation one event
at a time. When that reconciliation itself crashes after its first append, the request must
still be marked unlogged, so the one after appends the second event, once. An outside review
planted an off-by-one in the SQLite trigger that clears the mark; only a crash interleaving of
two instances caught it.
"""

from __future__ import annotations

import pytest

import reference as r
from tests.conftest import Team


@pytest.mark.clause("AUD-5", "REC-2", "REC-4")
def test_a_reconciliation_cut_off_between_two_catch_up_appends_is_finished_by_the_next(storage: r.Storage) -> None:
    team = Team(storage)
    h = team.harness
    h.tasks.finish("m1", "t1", "completed", h.task_row("t1").doc["claim_token"])
    storage.faults.crash_before.add("shutdown.request/audit")
    with pytest.raises(r.Crash):
        h.shutdowns.request("lead", "m1", "k1")
    pid = storage.scan("shutdown_request")[0].key
    h = Team(storage, team.clock, team.world, setup=False).harness  # restarted, not yet reconciled
    storage.faults.crash_before.add("shutdown.begin_drain/audit")
    with pytest.raises(r.Crash):
        h.shutdowns.begin_drain("m1", h.shutdowns.request_message_id(pid))
    events = [e["event"] for e in storage.read("shutdown_request", pid).doc["events"]]
    assert len(events) == 2 and storage.audit_entries(pid) == []
    assert storage.unlogged("shutdown_request") == [pid]

    storage.faults.crash_after.add("shutdown.reconcile/audit")
    with pytest.raises(r.Crash):
        Team(storage, team.clock, team.world, setup=False).harness.reconcile()
    assert len(storage.audit_entries(pid)) == 1
    assert storage.unlogged("shutdown_request") == [pid], "the mark went with the first of two entries"

    Team(storage, team.clock, team.world, setup=False).harness.reconcile()
    logged = [e.doc["event"] for e in storage.audit_entries(pid)]
    assert logged == [f"shutdown.{event}" for event in events]  # each once, in record order
    assert storage.unlogged("shutdown_request") == []
    Team(storage, team.clock, team.world, setup=False).harness.reconcile()
    assert len(storage.audit_entries(pid)) == 2  # a third reconciliation appends nothing
