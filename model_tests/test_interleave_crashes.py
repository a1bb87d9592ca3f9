"""Two harness instances over one store, one of them crashing (REC-1, REC-2, REC-4, AUD-5).

The interleaving explorer (``model_tests/interleave.py``) runs two instances without a crash in
``test_interleave.py``; the model's crashes have one harness, which reconciles at once. Neither
shows what only two processes and a crash show together: one instance dies between two of its
write steps, the other acts on what it left before the dead one's process starts again and
reconciles, or after. Here every pair of ``PAIRS`` is explored with one crash move open at every
write and tool call of either instance (``explore(..., crashes=True)``), the restart's
reconciliation taken as one move at every later point; every final state must satisfy every state
invariant (after one more reconciliation, the ``after_reconcile`` ones too), every step invariant
from the prepared world, and the audit chain.

What it found when first run: an audit entry appended by one instance cleared the unlogged mark of
another instance's later write to the same record (``review||cancel``: the review's entry, written
after the cancel's record write, cleared the cancel's mark; the cancel died before its own entry;
its restart saw no mark, and the cancellation never reached the log: AUD-5). Named reference mutant
``audit_clears_later_mark`` (memory; the SQLite trigger had the same flaw). And the kind of an
outside review's miss: a claim cut short, a drain begun by the other instance before the restart,
a reconciliation that repaired running members only (``claim_repair_only_running``, REC-2).

Linearizability is not asked of a crashed run: its operation is cut short, not whole or absent.

Clause: REC-1, REC-2, REC-4, AUD-5, STO-4.
"""

from __future__ import annotations

import functools
import json

import pytest

from model_tests import interleave
from model_tests.interleave_pairs import PAIRS
from model_tests.test_interleave import CLAUSES, KNOWN_DEFECT, KNOWN_RACES

SQLITE_PAIRS = ("review||cancel", "claim||request_shutdown;begin_drain", "consume||cancel")
"""The pairs also explored with crashes on SQLite (each write step one statement, so a crash
before a statement is one between two steps): the audit log's marks are kept there by a trigger."""


@functools.cache
def crashed(pair: str, backend: str) -> interleave.Exploration:
    store = interleave.backend(backend)
    try:
        found = interleave.explore(PAIRS[pair], store, crashes=True)
    finally:
        store.close()
    print(f"\ncrash interleavings {pair} on {backend}: {found.nodes} nodes, {len(found.ends)} ends, {found.runs} runs")
    return found


def _serials(pair: str, backend: str) -> list[interleave.Outcome]:
    """The pair's serial orders, uncrashed: what excuses a problem seen only across a whole run."""
    store = interleave.backend(backend)
    try:
        scenario = PAIRS[pair]
        interleave.prepare(scenario, store)
        return [interleave.serial(scenario, store, order) for order in interleave.serial_orders(scenario)]
    finally:
        store.close()


def _crashed(outcome: interleave.Outcome) -> bool:
    return any(kind == "crashed" for program in outcome.results for kind, _ in program)


def _cases() -> list[object]:
    params = []
    for pair in PAIRS:
        marks = [pytest.mark.clause("REC-1", "REC-2", "REC-4", "AUD-5", *CLAUSES[pair])]
        if KNOWN_DEFECT[pair][2] is not None:  # a known race breaks an invariant uncrashed already
            marks.append(pytest.mark.xfail(raises=AssertionError, strict=True, reason=KNOWN_RACES[pair]))
        params.append(pytest.param(pair, "memory", marks=marks, id=f"{pair}-memory"))
        if pair in SQLITE_PAIRS:
            params.append(pytest.param(pair, "sqlite", marks=marks, id=f"{pair}-sqlite"))
    return params


@pytest.mark.parametrize(("pair", "backend"), _cases())
def test_a_crash_of_either_instance_and_its_restart_beside_the_other_keep_every_invariant(
    pair: str, backend: str
) -> None:
    """Every final state of every interleaving with one crash and its restart satisfies every
    invariant (and some run did crash)."""
    found = crashed(pair, backend)
    crashes = [outcome for outcome in found.outcomes if _crashed(outcome)]
    assert crashes, "no run crashed"
    serials = _serials(pair, backend)
    failing = [outcome for outcome in found.outcomes if interleave.unexcused(outcome, serials)]
    shown = "\n".join(
        f"{interleave.unexcused(o, serials)}\n{interleave.describe(PAIRS[pair], backend, o)}" for o in failing[:3]
    )
    assert not failing, f"{len(failing)} final state(s) break an invariant:\n{shown}"


def _member(outcome: interleave.Outcome, member: str) -> dict[str, object]:
    snapshot = json.loads(outcome.state)["snapshot"]
    return next(m for m in snapshot["member"] if m["member_id"] == member)  # type: ignore[no-any-return]


@pytest.mark.clause("REC-2", "SHD-2", "MEM-1")
def test_a_drain_begins_between_a_claims_two_writes_and_the_restart_gives_the_task_back() -> None:
    """Not vacuous: some run cuts the claim short between the task's write and the member's, the
    other instance asks the member to stop and begins its drain, and only then does the dead
    instance restart (the schedule ends with the crash move and the restart); its reconciliation
    gives the draining member its task (so the drain can release it)."""
    found = crashed("claim||request_shutdown;begin_drain", "memory")
    cut = [
        outcome
        for outcome in found.outcomes
        if outcome.results[0][0] == ("crashed", "crash before update member")
        and [kind for kind, _ in outcome.results[1]] == ["ok", "ok"]
        and outcome.schedule[-2:] == (interleave.crash_choice(0), 0)
    ]
    assert cut, "no run cut the claim short and drained before the restart"
    assert all(
        {k: _member(outcome, "m0")[k] for k in ("status", "current_task_id")}
        == {"status": "draining", "current_task_id": "t0"}
        for outcome in cut
    )


@pytest.mark.clause("REC-4")
def test_a_printed_crash_schedule_replays_the_same_outcome() -> None:
    """A crashed run's schedule (a negative entry is the crash move) replays to the same outcome."""
    scenario = PAIRS["consume||cancel"]
    found = crashed("consume||cancel", "memory")
    store = interleave.backend("memory")
    try:
        interleave.prepare(scenario, store)
        replays = [
            (interleave.run(scenario, store, outcome.schedule).key, outcome.key)
            for outcome in found.outcomes
            if _crashed(outcome)
        ]
    finally:
        store.close()
    assert replays and all(replayed == original for replayed, original in replays)
