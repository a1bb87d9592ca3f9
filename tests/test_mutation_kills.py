"""Behaviour that mutants found unchecked (issue 17 item 5, ``scripts/mutation.py``).

Clause: AUD-1, INV-12.
Each test here was written for a mutant of ``reference/`` that the rest of the suite let survive
(named in its docstring); it checks what a caller or the stores see, on both backends.
"""

from __future__ import annotations

from typing import Any

import pytest

import reference as r
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
