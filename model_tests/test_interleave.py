"""Two harness instances over one store, interleaved at every yield point (DESIGN rule 9).

For every pair of operations that can touch one record, every interleaving is explored
(``model_tests/interleave.py``), on memory and on SQLite; every invariant must hold on every final
state, and every outcome must be one that some serial order of the same operations gives
(linearizability). Longer programs are interleaved by Hypothesis, which picks the schedule.

Clause: STO-4, APR-4, APR-5, APR-6, APR-8, APR-9, MEM-1, SHD-1, SHD-2, SHD-3, TSK-1, TSK-3, REC-1, REC-2, REC-4,
AUD-5, INV-1, INV-2, INV-3, INV-12.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import reference as r
from model_tests import interleave, race
from model_tests.interleave_pairs import ISSUE_PAIRS, PAIRS, POOL, program
from spec import invariants

BACKENDS = ("memory", "sqlite")

XFAIL = {
    interleave.RawConflict: pytest.mark.xfail(
        raises=interleave.RawConflict,
        strict=True,
        reason="known defect 1 (issue 17 item 6, h17 fixes it in reference/_approval.py): the loser of a "
        "compare-and-set race gets a raw VersionConflict instead of the typed refusal a serial order gives",
    ),
    AssertionError: pytest.mark.xfail(
        raises=AssertionError,
        strict=True,
        reason="a known race (see KNOWN_RACES)",
    ),
}

KNOWN_RACES: dict[str, str] = {
    "submit_plan||begin_drain": "XPR-2, PLN-1: a drain that begins between a submission's two writes (its "
    "plan_request posted, the plan not yet pending) withdraws the draft, and the submission is refused with "
    "its request on the bus: the state of a submission cut short after its message and then the drain (the "
    "model reaches it with a crash, so every invariant holds), but no serial order's. Closing the window "
    "needs a protocol decision (the drain finishing a submission cut short before it withdraws, as "
    "reconciliation does, or the record written before its message)",
    "drain_jobs||drain_jobs_two_jobs": "SHD-3, JOB-2: two job cancellations of one drain at once over two jobs "
    "may split them, each asking one ([j1] and [j2]); every serial order has the first ask both and the second "
    "refused. The final state is a serial order's (both asked, both noted); only what the callers are told "
    "differs. Each job is its own settled part — the whole settled was worse (a caller that had asked a job "
    "refused as if it had asked none); a linearizable cancellation needs the asked set written in one write "
    "(the request's note) before any job is asked, a change of the drain's write order (a protocol decision)",
}
"""A race a pair found that is not fixed yet: its tests are strict xfails, so a fix
shows (each fails once it passes, to be moved to None in KNOWN_DEFECT)."""

CLAUSES = {
    "consume||consume": ("STO-4", "APR-5", "APR-6", "INV-1"),
    "consume||cancel": ("STO-4", "APR-5", "APR-9", "INV-1"),
    "review||expire_due": ("STO-4", "APR-4", "INV-12"),
    "expire_due||expire_due": ("STO-4", "INV-12"),
    "consume||expire_due": ("STO-4", "APR-5", "INV-12", "INV-1"),
    "cancel||expire_due": ("STO-4", "APR-9", "INV-12"),
    "review||cancel": ("STO-4", "APR-4", "APR-9", "AUD-5"),
    "claim||claim": ("STO-4", "MEM-1", "INV-2"),
    "finish||reconcile": ("STO-4", "REC-2", "TSK-1"),
    "finish||finish": ("STO-4", "TSK-1"),
    "claim||reconcile": ("STO-4", "REC-2", "MEM-1"),
    "request||reconcile": ("STO-4", "REC-1", "REC-4", "AUD-5", "MSG-6"),
    "consume||reconcile": ("STO-4", "REC-1", "REC-4", "APR-8", "AUD-5"),
    "reconcile||reconcile": ("STO-4", "REC-1", "REC-4", "APR-8"),
    "claim||begin_drain": ("STO-4", "MEM-1", "SHD-2", "INV-2"),
    "claim||request_shutdown": ("STO-4", "MEM-1", "SHD-1", "INV-2"),
    "claim||request_shutdown;begin_drain": ("STO-4", "MEM-1", "SHD-1", "SHD-2", "REC-2", "INV-2"),
    "release||reconcile": ("STO-4", "SHD-3", "REC-2", "TSK-3"),
    "decide_plan||withdraw_plan": ("STO-4", "PLN-2", "PLN-11"),
    "decide_plan||expire_plans": ("STO-4", "PLN-2", "PLN-5", "INV-12"),
    "expire_plans||expire_plans": ("STO-4", "PLN-5", "MSG-1", "INV-12"),
    "start_plan||expire_plans": ("STO-4", "PLN-5", "PLN-7", "INV-8"),
    "start_plan||withdraw_plan": ("STO-4", "PLN-7", "PLN-11", "INV-8"),
    "deliver_decision||deliver_decision": ("STO-4", "MSG-5", "PLN-6", "AUD-5"),
    "begin_drain||expire_shutdowns": ("STO-4", "SHD-2", "SHD-6", "MSG-1"),
    "late_begin_drain||expire_shutdowns": ("STO-4", "SHD-2", "SHD-6", "MSG-1"),
    "release||expire_shutdowns": ("STO-4", "SHD-3", "SHD-6", "SHD-7"),
    "expire_shutdowns||expire_shutdowns": ("STO-4", "SHD-6", "MSG-1", "INV-12"),
    "retract_plan||deliver_decision": ("STO-4", "PLN-3", "PLN-6", "MSG-5"),
    "start_plan||start_plan": ("STO-4", "PLN-7", "INV-8"),
    "deliver_decision||expire_plans": ("STO-4", "PLN-3", "PLN-5", "MSG-1"),
    "withdraw_plan||expire_plans": ("STO-4", "PLN-5", "PLN-11"),
    "step_plan||expire_plans": ("STO-4", "PLN-4", "PLN-9"),
    "complete_plan||expire_plans": ("STO-4", "PLN-9", "PLN-10"),
    "complete_plan||stop_plan": ("STO-4", "PLN-10", "PLN-11"),
    "step_plan||stop_plan": ("STO-4", "PLN-4", "PLN-11"),
    "finish_drain||expire_shutdowns": ("STO-4", "SHD-5", "SHD-6"),
    "drain_pass||expire_shutdowns": ("STO-4", "SHD-3", "SHD-6"),
    "finish_drain||finish_drain": ("STO-4", "SHD-5"),
    "finish_drain||heartbeat": ("STO-4", "SHD-5", "SHD-10"),
    "begin_drain||cancel_shutdown": ("STO-4", "SHD-1", "SHD-2"),
    "begin_drain||begin_drain": ("STO-4", "SHD-2", "MSG-5"),
    "drain_pass||finish_drain": ("STO-4", "SHD-3", "SHD-5"),
    "release||reconcile_finish": ("STO-4", "SHD-3", "SHD-5", "REC-2"),
    "finish_drain||reconcile": ("STO-4", "SHD-5", "SHD-10", "REC-2", "REC-4"),
    "release||force_inspect": ("STO-4", "SHD-3", "SHD-7", "MSG-6"),
    "release||force_inspect_claim": ("STO-4", "SHD-3", "SHD-7", "MSG-6"),
    "release||suspend": ("STO-4", "SHD-3", "SHD-9"),
    "complete_plan||reconcile": ("STO-4", "PLN-10", "REC-3", "REC-4"),
    "request||begin_drain": ("STO-4", "XPR-2", "SHD-3", "APR-1"),
    "draft_plan||begin_drain": ("STO-4", "XPR-2", "SHD-3", "PLN-1"),
    "submit_plan||begin_drain": ("STO-4", "XPR-2", "SHD-3", "PLN-1"),
    "drain_jobs||drain_jobs_two_jobs": ("STO-4", "SHD-3", "JOB-2"),
}
Defect = type[AssertionError] | None
KNOWN_DEFECT: dict[str, tuple[Defect, Defect, Defect]] = {
    # pair: the defect (or None) that the outcome test, the final-state test and the invariants
    # test expect
    "consume||consume": (None, None, None),
    "consume||cancel": (None, None, None),
    "review||expire_due": (None, None, None),  # AUD-5's append rule (was known defect 3)
    "expire_due||expire_due": (None, None, None),
    "consume||expire_due": (None, None, None),
    "cancel||expire_due": (None, None, None),
    "review||cancel": (None, None, None),  # AUD-5's append rule (was known defect 3)
    "claim||claim": (None, None, None),
    "finish||reconcile": (None, None, None),
    "finish||finish": (None, None, None),
    "claim||reconcile": (None, None, None),
    "request||reconcile": (None, None, None),  # AUD-5's append rule (was known defect 2's audit half)
    "consume||reconcile": (None, None, None),  # REC-4 (was known defect 2, its execution half)
    "reconcile||reconcile": (None, None, None),
    "claim||begin_drain": (None, None, None),
    "claim||request_shutdown": (None, None, None),
    "claim||request_shutdown;begin_drain": (None, None, None),
    "release||reconcile": (None, None, None),
    "decide_plan||withdraw_plan": (None, None, None),
    "decide_plan||expire_plans": (None, None, None),
    "expire_plans||expire_plans": (None, None, None),
    "start_plan||expire_plans": (None, None, None),
    "start_plan||withdraw_plan": (None, None, None),
    "deliver_decision||deliver_decision": (None, None, None),
    # a known race until the monitor left the message of a begun drain to its reader (SHD-2, MSG-1)
    "begin_drain||expire_shutdowns": (None, None, None),
    "late_begin_drain||expire_shutdowns": (None, None, None),
    "release||expire_shutdowns": (None, None, None),
    "expire_shutdowns||expire_shutdowns": (None, None, None),
    "retract_plan||deliver_decision": (None, None, None),
    "start_plan||start_plan": (None, None, None),
    "deliver_decision||expire_plans": (None, None, None),
    "withdraw_plan||expire_plans": (None, None, None),
    "step_plan||expire_plans": (None, None, None),
    "complete_plan||expire_plans": (None, None, None),
    "complete_plan||stop_plan": (None, None, None),
    "step_plan||stop_plan": (None, None, None),
    "finish_drain||expire_shutdowns": (None, None, None),
    "drain_pass||expire_shutdowns": (None, None, None),
    "finish_drain||finish_drain": (None, None, None),
    "finish_drain||heartbeat": (None, None, None),
    "begin_drain||cancel_shutdown": (None, None, None),
    "begin_drain||begin_drain": (None, None, None),
    "drain_pass||finish_drain": (None, None, None),
    "release||reconcile_finish": (None, None, None),
    "finish_drain||reconcile": (None, None, None),
    "release||force_inspect": (None, None, None),
    "release||force_inspect_claim": (None, None, None),
    "release||suspend": (None, None, None),
    "complete_plan||reconcile": (None, None, None),
    "request||begin_drain": (None, None, None),
    "draft_plan||begin_drain": (None, None, None),
    "submit_plan||begin_drain": (AssertionError, AssertionError, None),  # KNOWN_RACES
    "drain_jobs||drain_jobs_two_jobs": (AssertionError, None, None),  # KNOWN_RACES
}


@dataclass(frozen=True)
class Explored:
    found: interleave.Exploration
    serials: list[interleave.Outcome]


@functools.cache
def explored(pair: str, backend: str) -> Explored:
    """One exhaustive exploration per pair and backend, shared by the tests below."""
    store = interleave.backend(backend)
    try:
        scenario = PAIRS[pair]
        found = interleave.explore(scenario, store)
        serials = [interleave.serial(scenario, store, order) for order in interleave.serial_orders(scenario)]
    finally:
        store.close()
    print(
        f"\ninterleavings {pair} on {backend}: {found.interleavings} schedules, {found.nodes} distinct states, "
        f"{len(found.ends)} final states, {found.runs} runs"
    )
    return Explored(found, serials)


def cases(which: int | None) -> list[object]:
    """Every pair on every backend; ``which`` picks the column of ``KNOWN_DEFECT`` (None: no xfail)."""
    params = []
    for pair in PAIRS:
        defect = None if which is None else KNOWN_DEFECT[pair][which]
        marks = [pytest.mark.clause(*CLAUSES[pair]), *([XFAIL[defect]] if defect else [])]
        params += [pytest.param(pair, backend, marks=marks, id=f"{pair}-{backend}") for backend in BACKENDS]
    return params


@pytest.mark.parametrize(("pair", "backend"), cases(2))
def test_every_interleaving_keeps_every_invariant(pair: str, backend: str) -> None:
    """Every final state of every interleaving, and every serial order's every step, satisfies
    every ``spec.invariants`` predicate (state ones before and after reconciling; step ones from
    the prepared world to the end), and the audit chain is whole. Clause: INV-1, INV-2, INV-3
    (and the pair's own)."""
    result = explored(pair, backend)
    assert len(result.found.ends) >= 2, "a race with one possible end explores nothing"
    serial_problems = [p for serial in result.serials for p in serial.problems if not p.startswith(interleave.ACROSS)]
    assert serial_problems == []
    failing = [outcome for outcome in result.found.outcomes if interleave.unexcused(outcome, result.serials)]
    shown = "\n".join(
        f"{interleave.unexcused(o, result.serials)}\n{interleave.describe(PAIRS[pair], backend, o)}"
        for o in failing[:3]
    )
    assert not failing, f"{len(failing)} final state(s) break an invariant:\n{shown}"


@pytest.mark.clause("REC-4", "STO-4", "APR-8")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_live_consumption_beside_a_takeover_races_to_both_serial_outcomes(backend: str) -> None:
    """Not a vacuous pass: in consume||reconcile the two serial orders end in two different states
    (the dead reviewer's decision posted by the reconciler, or the consumption first and no
    decision ever posted), the interleavings reach both and nothing else. Under the mutant
    ``reconcile_takes_live_work`` they reach others (REC-4)."""
    result = explored("consume||reconcile", backend)
    serial_states = {serial.state for serial in result.serials}
    assert len(serial_states) == 2
    assert {outcome.state for outcome in result.found.outcomes} == serial_states


@pytest.mark.clause("XPR-2", "STO-4", "PLN-1")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_submission_a_drain_cuts_short_is_refused_typed_and_its_plan_withdrawn(backend: str) -> None:
    """What KNOWN_RACES leaves open in submit_plan||begin_drain, bounded: in every interleaving the
    plan ends withdrawn (XPR-2), and a submission that loses gets a typed refusal — the member not
    running, or the plan no longer a draft — never a raw conflict or an illegal transition (STO-4)."""
    result = explored("submit_plan||begin_drain", backend)
    refusals = set()
    for outcome in result.found.outcomes:
        (submitted,), _ = outcome.results
        if submitted[0] != "ok":
            refusals.add(submitted[1].split(":")[0])
        plans = json.loads(outcome.state)["snapshot"]["plan_approval"]
        assert [plan["status"] for plan in plans] == ["withdrawn"], interleave.describe(
            PAIRS["submit_plan||begin_drain"], backend, outcome
        )
    assert refusals == {"PlanMemberNotRunning", "PlanStatusConflict"}


@pytest.mark.parametrize(("pair", "backend"), cases(None))
def test_the_explorer_reaches_every_serial_order(pair: str, backend: str) -> None:
    """The serial orders are interleavings too: each one's outcome is among those explored."""
    result = explored(pair, backend)
    keys = {outcome.key for outcome in result.found.outcomes}
    assert all(serial.key in keys for serial in result.serials)


@pytest.mark.parametrize(("pair", "backend"), cases(1))
def test_every_final_state_is_some_serial_orders(pair: str, backend: str) -> None:
    """Linearizability of the stores: the final snapshot and the external world's calls equal
    those of some serial order."""
    result = explored(pair, backend)
    interleave.require_serialisable(PAIRS[pair], backend, result.found.outcomes, result.serials, results=False)


@pytest.mark.parametrize(("pair", "backend"), cases(0))
def test_every_caller_gets_what_some_serial_order_gives(pair: str, backend: str) -> None:
    """Linearizability: what each caller got back (result or typed refusal) and the final state
    together equal the outcome of one serial order — a loser gets a typed refusal."""
    result = explored(pair, backend)
    interleave.require_serialisable(PAIRS[pair], backend, result.found.outcomes, result.serials, results=True)


@pytest.mark.clause("STO-4")
def test_every_pair_the_issue_names_is_explored() -> None:
    """Each pair issue 17 names is explored, with its clauses and its expected defects declared."""
    assert set(ISSUE_PAIRS) <= set(PAIRS)
    assert set(PAIRS) == set(CLAUSES) == set(KNOWN_DEFECT)


@pytest.mark.clause("STO-4")
def test_every_access_to_the_shared_store_is_a_yield_point() -> None:
    """A backend method the scheduled views do not wrap would run between yield points unseen:
    every row-touching hook of MemoryStorage is overridden, and on SQLite only the two wrapped
    statement funnels (and opening and closing) touch the connection."""
    memory_hooks = {name for name in vars(r.MemoryStorage) if name.startswith("_") and not name.startswith("__")}
    assert memory_hooks <= set(vars(interleave.ScheduledMemory))
    touching = {
        name
        for name, method in vars(r.SQLiteStorage).items()
        if callable(method) and "self._db" in inspect.getsource(method)
    }
    assert touching == {"__init__", "_write_ahead_log", "_create", "_query", "_execute", "close"}
    for opener in ("self._create(", "self._write_ahead_log("):
        opening = {
            name
            for name, method in vars(r.SQLiteStorage).items()
            if callable(method) and opener in inspect.getsource(method)
        }
        assert opening == {"__init__"}, f"{opener} runs only while a connection opens"
    assert {"_query", "_execute"} <= set(vars(interleave.ScheduledSQLite))


UNRACED = {
    "approval.consume/outcome": "the consumer's own execution record, after its first write won: no live "
    "instance writes another's work in flight (REC-4; consume||reconcile takes over a dead one's only)",
    "plan.start/message": "the acknowledgement of a decision the requester was delivered: after delivery only "
    "its start writes it (PLN-6), and a second start loses at the executed marker first (PLN-7)",
    "plan.start/record": "the consumption of a plan whose executed marker this start wrote: from the marker on, "
    "nobody else moves the plan (the monitor's expiry and the withdrawal are guarded by its absence, PLN-7)",
    "member.inspect/shutdown": "the completion of a drain whose member the inspection just stopped: a finish "
    "refuses a member that no longer drains (SHD-5), the monitor has timed the drain out before any "
    "force-termination (SHD-7), and a release in flight finds its note already written by the inspection's "
    "own note (member.inspect/record), or refuses when it never let its task go, and writes nothing",
    "task.suspend/member": "the member's hold cleared once the suspension's task write won: a release in flight "
    "(release||suspend) then finds the task suspended and writes nothing more (SHD-3), and reconciliation counts a "
    "suspended task as held (REC-2), so no other process writes the member's task then",
    "task.inspect/task": "the Lead's putting back of a task it flagged needs_inspection: only the Lead's own "
    "inspection moves a flagged task (a release writes only a task claimed by its member, a claim only a pending "
    "one, release||force_inspect_claim), and the Lead's steps run in one process",
    "shutdown.finish/message": "the acknowledgement of the request message whose delivery began this drain: "
    "after delivery nobody else writes it (a redelivery returns the recorded result, MSG-5; the monitor leaves "
    "a begun drain's message, SHD-6), and a second finish is a no-op once the request completed (SHD-5)",
}
"""The compare-and-set steps no pair makes lose, each with the reason no other process races it."""


@pytest.mark.clause("STO-4")
def test_every_compare_and_set_loses_in_some_interleaving() -> None:
    """STO-4's settling, exercised: every write step that an instance writes by compare-and-set in
    some pair loses one (another process wrote the record first) in some interleaving of some pair
    on memory, but those ``UNRACED`` names with its reason. A new operation's write, or a new
    write of an old one, that no pair races fails here until a pair races it (how the unsettled
    monitor writes of plans and shutdowns went unseen: no pair ran two monitors at once)."""
    attempted: set[str] = set()
    lost: set[str] = set()
    for pair in PAIRS:
        found = explored(pair, "memory").found
        attempted |= found.attempted
        lost |= found.lost
    assert attempted - lost == set(UNRACED), f"never lost: {sorted(attempted - lost)}"


@pytest.mark.clause("STO-4")
@pytest.mark.parametrize("backend", BACKENDS)
def test_memoised_search_counts_every_schedule_a_naive_search_runs(backend: str) -> None:
    """The explorer expands each node once; a naive search that runs every schedule to its end
    finds the same number of schedules and the same outcomes, on a small pair that races (two
    finishes of one task: 736 schedules; ``expire_due||expire_due`` was used until the monitor's
    pass also expired the approval's request message, MSG-1, which made it 76,076)."""
    scenario = PAIRS["finish||finish"]
    store = interleave.backend(backend)
    try:
        found = interleave.explore(scenario, store)
        naive = list(_every_schedule(scenario, store, ()))
    finally:
        store.close()
    assert found.interleavings == len(naive)
    assert {outcome.key for outcome in naive} == {outcome.key for outcome in found.outcomes}
    assert found.runs < len(naive) or len(naive) < 40


def _every_schedule(
    scenario: interleave.Scenario, store: interleave.Backend, prefix: tuple[int, ...]
) -> list[interleave.Outcome]:
    execution = interleave.Execution(scenario, store)
    for choice in prefix:
        execution.step(choice)
    enabled = execution.enabled()
    if not enabled:
        return [execution.outcome()]
    execution.abandon()
    return [outcome for choice in enabled for outcome in _every_schedule(scenario, store, (*prefix, choice))]


@pytest.mark.clause("STO-4")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_printed_schedule_replays_the_same_outcome(backend: str) -> None:
    """A failure prints its schedule; running it again gives the same outcome, byte for byte."""
    scenario = PAIRS["consume||cancel"]
    store = interleave.backend(backend)
    try:
        found = interleave.explore(scenario, store)
        for outcome in found.outcomes:
            assert interleave.run(scenario, store, outcome.schedule).key == outcome.key
    finally:
        store.close()


# ---- longer programs, interleaved by Hypothesis ---------------------------------------------------


Program = tuple[tuple[tuple[str, ...], ...], tuple[float, ...], list[int]]
"""Operation names per instance, instance clocks, schedule: printed by Hypothesis, pasteable."""


@st.composite
def programs(draw: st.DrawFn) -> Program:
    """3–4 operations from ``POOL`` over 2–3 instances, each instance's clock 0 or just past the
    approval's deadline, and a schedule (instance numbers; ``run`` maps each onto an enabled one)."""
    instances = draw(st.integers(2, 3))
    names = draw(st.lists(st.sampled_from([operation.name for operation in POOL]), min_size=3, max_size=4))
    owners = draw(st.lists(st.integers(0, instances - 1), min_size=len(names), max_size=len(names)))
    clocks = tuple(draw(st.sampled_from([0.0, 301.0])) for _ in range(instances))
    per_instance = tuple(
        tuple(name for name, owner in zip(names, owners, strict=True) if owner == i) for i in range(instances)
    )
    return per_instance, clocks, draw(st.lists(st.integers(0, instances - 1), max_size=120))


@functools.cache
def _serials(names: tuple[tuple[str, ...], ...], clocks: tuple[float, ...], backend: str) -> list[interleave.Outcome]:
    scenario = program(names, clocks)
    store = interleave.backend(backend)
    try:
        interleave.prepare(scenario, store)
        outcomes = [interleave.serial(scenario, store, order) for order in interleave.serial_orders(scenario)]
    finally:
        store.close()
    # each serial operation's own step is judged at its instance's clock; what the whole run's span
    # shows (interleave.ACROSS) excuses the same in an interleaving of these programs
    own = [[p for p in o.problems if not p.startswith(interleave.ACROSS)] for o in outcomes]
    assert not any(own), own
    return outcomes


@pytest.mark.clause("STO-4", "APR-5", "APR-6", "APR-9", "MEM-1", "INV-1", "INV-2")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=int(os.environ.get("TEAMPROTO_INTERLEAVE_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=programs())
def test_longer_programs_under_a_chosen_schedule(backend: str, case: Program) -> None:
    """Every invariant holds, and the outcome is some serial order's or one of the known
    defects explains it (``interleave.classify``; counted as an event, so the statistics show how
    often). Replay a failure: ``interleave.run(program(names, clocks), interleave.backend(backend),
    schedule)`` with the three values of the printed ``case``."""
    names, clocks, schedule = case
    scenario = program(names, clocks)
    serials = _serials(names, clocks, backend)
    store = interleave.backend(backend)
    try:
        interleave.prepare(scenario, store)
        outcome = interleave.run(scenario, store, schedule)
    finally:
        store.close()
    detail = interleave.describe(scenario, backend, outcome)
    # a step predicate judged across the whole run sees each instance's record at the latest clock:
    # counted only where no serial order of the same programs, on the same clocks, shows it too
    assert not interleave.unexcused(outcome, serials), f"{outcome.problems}\n{detail}"
    if outcome.key in {serial.key for serial in serials}:
        event("serialisable")
        return
    defect = interleave.classify(scenario, outcome, serials)
    assert defect is not AssertionError, f"linearizability: no serial order gives this outcome:\n{detail}"
    event(f"not serialisable, explained by known defect {defect.__name__}")


# ---- real processes -------------------------------------------------------------------------------


def _loser_errors(pair: str) -> dict[str, set[str]]:
    """Per operation name, the error types its callers got in the explored interleavings."""
    errors: dict[str, set[str]] = {}
    scenario = PAIRS[pair]
    for outcome in explored(pair, "sqlite").found.outcomes:
        for index, results in enumerate(outcome.results):
            for operation, (kind, text) in zip(scenario.programs[index], results, strict=True):
                if kind == "error":
                    errors.setdefault(operation.name, set()).add(text.split(":")[0])
    return errors


@pytest.mark.clause("STO-4", "APR-5", "APR-6", "APR-9", "INV-1", "AUD-5")
def test_real_processes_race_only_to_outcomes_the_explorer_found(tmp_path: Path) -> None:
    """Three OS processes, each with its own connection to one SQLite file, race for each round's
    approval: exactly one caller wins, the tool runs once if a consume won, every loser's error
    is one the explorer found for the pair, and every invariant holds at the end."""
    rounds = int(os.environ.get("TEAMPROTO_RACE_ROUNDS", "16"))
    calls, snapshot, seconds = race.race(tmp_path / "team.db", rounds, workers=3)
    allowed = {pair: _loser_errors(pair) for pair in race.KINDS}
    seen: dict[tuple[str, str], int] = {}
    for round_ in range(rounds):
        mine = [call for call in calls if call.round == round_]
        pair = race.KINDS[round_ % len(race.KINDS)]
        winners = [call for call in mine if call.outcome == "ok"]
        assert len(mine) == 3 and len(winners) == 1, mine
        assert sum(call.tool_runs for call in mine) == (winners[0].operation == "consume"), mine
        status = next(a["status"] for a in snapshot["operation_approval"] if a["protocol_id"] == race.approval(round_))
        assert status == ("consumed" if winners[0].operation == "consume" else "cancelled")
        for call in mine:
            seen[(call.operation, call.outcome)] = seen.get((call.operation, call.outcome), 0) + 1
            assert call.outcome == "ok" or call.outcome in allowed[pair][call.operation], (pair, call)
    assert invariants.check_state(snapshot) == []
    store = r.SQLiteStorage(tmp_path / "team.db")
    assert r.verify_audit_log(store).ok  # concurrent appends from three processes keep one chain (AUD-5)
    store.close()
    print(f"\nrace: {rounds} rounds x 3 processes on one SQLite file in {seconds:.1f} s: {seen}")
