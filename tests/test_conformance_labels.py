"""What a failed restart is labelled with: recovery, and the clauses of the operation the crash cut
short (REC-1, REC-2; an APR-8 label on every restart sent implementers of a drain's recovery to
the approval protocol's clause).

Clause: REC-1, REC-2, APR-8.
"""

from __future__ import annotations

import pytest

from conformance._translate import clauses_of, restart_clauses
from tests.test_conformance import REFERENCE, suite


@pytest.mark.clause("REC-1", "REC-2", "APR-8")
@pytest.mark.parametrize(
    "operation", ["approval.consume", "approval.request", "shutdown.begin_drain", "plan.start", "task.claim"]
)
def test_a_restart_is_judged_on_recovery_and_on_the_operation_it_cut_short(operation: str) -> None:
    clauses = restart_clauses(operation)
    assert clauses[:2] == ("REC-1", "REC-2") and set(clauses_of(operation)) <= set(clauses)
    assert ("APR-8" in clauses) is operation.startswith("approval.")  # the call's outcome looked up by key


@pytest.mark.clause("REC-2", "SHD-2", "XPR-2")
def test_a_drain_recovered_wrongly_fails_under_the_drains_clauses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reconciliation that leaves a half-begun drain half done (reference mutant
    ``reconcile_keeps_half_drain``) fails the restart after the crash in ``shutdown.begin_drain``,
    and the report names the drain's clauses, not the approval protocol's."""
    monkeypatch.setenv("TEAMPROTO_MUTANT", "reconcile_keeps_half_drain")
    cases, result = suite(REFERENCE, sections=("vectors",), configs=("plan_drain",))
    failed = [case for case in cases if case.verdict == "FAILED"]
    assert failed and result["exit"] == 1
    assert all("the restart after a crash in shutdown.begin_drain" in case.message for case in failed)
    assert {"SHD-2", "XPR-2", "REC-2"} <= set(result["failed_clauses"]) and "APR-8" not in result["failed_clauses"]
