"""The pure system model: one guarded action per protocol step, crashes between write steps.

Each operation yields an :class:`Action` and its list of named write steps. The model applies all
steps (the operation completes) and, while crashes remain, each proper prefix of them followed by
a crash: the harness dies with exactly that prefix persisted, and the only move left is
``restart`` (a new harness over the same stores runs reconciliation, REC-*). In-memory queues are
not modelled: losing them loses nothing (MSG-6).

What the model abstracts away (and where it is checked instead):
- names, payloads and free text: members and tasks are indices, a tool call is "same" or
  "changed" arguments, and one risk summary carries one secret from the corpus;
- audit events and the hash chain (AUD-1, AUD-5): only the approving actor of a plan is kept;
- the deadline monitor's pass is one atomic step run once per tick, and reconciliation itself is
  not crashed (both are idempotent passes that simply run again after a crash);
- message delivery and acknowledgement except where a handler acts on them (a shutdown_request
  begins a drain, a plan_decision enables the start): reading a notice changes no record (MSG-3);
- timestamps other than deadlines, and the claim time unless a unit deadline can pass;
- SIGTERM handling, heartbeats as timers, processes and their signals: a heartbeat lapse and a
  forced termination are single actions;
- one job slot and one claim at a time per member; one protected tool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .._tables import IllegalTransition, SlotTaken, ensure_transition, initial_state, open_states
from ..safety import BUSY_JOB
from ._action import Action as Action  # re-exported: the model's moves are named here
from ._config import Config
from ._mutants import MUTANTS
from ._state import NONE, Approval, Execution, Job, Member, Message, Owed, Plan, PlanRun, Shutdown, State, Task, replace

ACTIVE_SHUTDOWN = frozenset(open_states("shutdown_request"))  # as spec.invariants.ACTIVE_SHUTDOWN


HARNESS = Action("harness.crash")
HARNESS_CRASH = replace(HARNESS, crash_after="between operations")
"""With ``crash_between``: the harness dies between two operations (nothing half written), and
the only move left is the restart. Not an operation: it does not keep a state from deadlock."""

Step = tuple[str, Callable[[State], State]]
Operation = tuple[Action, list[Step]]
Outcome = tuple[Action, "State | IllegalTransition | None", list[tuple[str, State]]]
"""An operation, the state its whole run leaves, and its crash points (:meth:`Model.outcomes`)."""


def crashed(action: Action, step_name: str, state: State) -> tuple[Action, State]:
    """The move of a crash right after ``action``'s write step ``step_name``, which left ``state``."""
    return replace(action, crash_after=step_name), replace(state, crashed=True)


EDGE_LOG: list[set[tuple[str, str, str]]] = []
"""While the explorer runs, the innermost list records every edge taken (machine, source, target)."""


DEADLINE_EDGES: dict[tuple[str, str, str], tuple[int, str]] = {
    ("operation_approval", "requested", "approved"): (0, "APR-4"),
    ("operation_approval", "requested", "rejected"): (0, "APR-4"),
    ("operation_approval", "approved", "consumed"): (0, "APR-5"),
    ("plan_approval", "pending", "approved"): (0, "PLN-5"),
    ("plan_approval", "pending", "rejected"): (0, "PLN-5"),
    ("plan_approval", "pending", "needs_revision"): (0, "PLN-5"),
    ("plan_approval", "approved", "consumed"): (0, "PLN-5"),
    ("shutdown_request", "requested", "draining"): (0, "SHD-2"),
    ("task", "claimed", "suspended"): (0, "SHD-9"),
    ("operation_approval", "requested", "expired"): (-1, "APR-5"),
    ("operation_approval", "approved", "expired"): (-1, "APR-5"),
    ("plan_approval", "pending", "expired"): (-1, "PLN-5"),
    ("plan_approval", "approved", "expired"): (-1, "PLN-5"),
    ("shutdown_request", "requested", "expired"): (-1, "SHD-6"),
    ("shutdown_request", "draining", "timed_out"): (-1, "SHD-6"),
    ("message", "pending", "expired unread"): (-1, "MSG-1"),
}
"""The edges a guard opens or closes by comparing the clock with the record's deadline, each with
the offset ``deadline - clock`` at the guard's boundary and the clause that sets it: a request
is still decided, consumed, started or drained *at* its deadline (offset 0, the last instant the
guard allows), and expires or times out *just past* it (offset -1, the first instant the
monitor acts). The safety checks see one side of each boundary (nothing decided after the
deadline, APR-4; nothing expired before it, APR-5); a guard one tick too strict on the other
side removes no edge and breaks no check, it only removes states. So the explorer also records
each of these edges taken exactly at its boundary (:func:`deadline_edge`) and every run that
takes one of them must take it there too (:func:`spec.explore.check_boundaries`). The last is not
a machine edge but the monitor's expiry of a request's message (MSG-1: a request message, still
pending, expires once its request's deadline passed), which :func:`note_unread_expiry` logs; a
message also expires when a plan decision is retracted (PLN-6), at no deadline."""

REQUEST_EXPIRY = ("message", "pending", "expired unread")
"""The edge-log entry of the monitor's expiry of a request message, at whatever offset."""


def deadline_edge(machine: str, source: str, target: str) -> tuple[str, str, str]:
    """The edge-log entry of a deadline edge taken at its boundary: the target reads
    ``"approved at the deadline"`` or ``"expired just past the deadline"``."""
    offset, _ = DEADLINE_EDGES[(machine, source, target)]
    return machine, source, f"{target} {'at' if offset == 0 else 'just past'} the deadline"


def note_deadline(machine: str, source: str, target: str, deadline: int, clock: int) -> None:
    """Log the edge at its boundary when it is taken there (the record helpers of the model and
    of its flat form call this with the record's deadline before the move and the step's clock)."""
    boundary = DEADLINE_EDGES.get((machine, source, target))
    if boundary is not None and EDGE_LOG and deadline - clock == boundary[0]:
        EDGE_LOG[-1].add(deadline_edge(machine, source, target))


@contextmanager
def probing() -> Iterator[None]:
    """While a guard computes a step only to compare its result (the monitor's idle test), what
    the step moves goes to a throwaway log, not the explorer's."""
    if not EDGE_LOG:
        yield
        return
    EDGE_LOG.append(set())
    try:
        yield
    finally:
        EDGE_LOG.pop()


def note_unread_expiry(deadline: int, clock: int) -> None:
    """The monitor expires a request message whose request has ``deadline``: log it, and log it
    on its boundary when that is just past the deadline."""
    if EDGE_LOG:
        EDGE_LOG[-1].add(REQUEST_EXPIRY)
    note_deadline(*REQUEST_EXPIRY, deadline, clock)


def move(machine: str, record: Any, target: str, **changes: Any) -> Any:
    """Change a record's status through the runtime guard (INV-3): an illegal edge raises."""
    ensure_transition(machine, record.status, target)
    if EDGE_LOG:
        EDGE_LOG[-1].add((machine, record.status, target))
    return replace(record, status=target, **changes)


def create(machine: str, record: Any, **changes: Any) -> Any:
    """Create a record in a free slot, in its machine's initial state."""
    if record.status != "":
        raise SlotTaken(machine, record.status, initial_state(machine))
    return replace(record, status=initial_state(machine), **changes)


Info = tuple[tuple[str, Any], ...]


def message_info(s: State, key: tuple[str, int, int]) -> Info:
    """The body facts of a message, fixed from the persisted records when it is written."""
    kind, ref, _ = key
    if kind == "approval_decision":
        return (("decision", "rejected" if s.approvals[ref].status == "rejected" else "approved"),)
    if kind == "plan_decision":
        status = s.plans[ref].status
        return (("decision", status if status in ("rejected", "needs_revision") else "approved"),)
    if kind == "shutdown_ack":
        return (("released", s.shutdowns[ref].released), ("waited", s.shutdowns[ref].waited))
    if kind == "member_lost":
        flagged = tuple(t for t, task in enumerate(s.tasks) if task.status == "needs_inspection" and task.owner == ref)
        return (("flagged", flagged),)
    if kind == "task_suspended":
        return (("member", s.tasks[ref].owner),)
    if kind == "plan_completion":
        return (("outcome", s.runs[ref].status),)
    return ()


def owe(state: State, key: tuple[str, int, int]) -> State:
    """Add an outbox entry for ``key`` unless one exists (SHD-5, REC-3)."""
    if any(entry.key == key for entry in state.outbox):
        return state
    return replace(state, outbox=tuple(sorted([*state.outbox, Owed(key, info=message_info(state, key))])))


def post(state: State, key: tuple[str, int, int], info: Info | None = None) -> State:
    """Put the message with stable key ``key`` on the bus unless it is there (MSG-4, MSG-5)."""
    if any(message.key == key and message.copy == 0 for message in state.bus):
        return state
    message = Message(key, info=message_info(state, key) if info is None else info)
    return replace(state, bus=tuple(sorted([*state.bus, message])))


def set_message(state: State, key: tuple[str, int, int], target: str) -> State:
    bus = tuple(move("message", m, target) if m.key == key and m.copy == 0 else m for m in state.bus)
    return replace(state, bus=bus)


def message_status(state: State, key: tuple[str, int, int]) -> str:
    for message in state.bus:
        if message.key == key and message.copy == 0:
            return message.status
    return ""


class Model:
    """The system model for one configuration, optionally with one named mutant."""

    def __init__(
        self, config: Config, mutant: str | None = None, *, reduce: bool = True, independence: bool = True
    ) -> None:
        if mutant is not None and mutant not in MUTANTS:
            raise KeyError(f"unknown mutant {mutant!r}; known: {', '.join(MUTANTS)}")
        self.config = config
        self.mutant = mutant
        self.reduce = reduce
        self.independence = reduce and independence  # the records' partial-order reduction (_por)

    def broken(self, name: str) -> bool:
        return self.mutant == name

    def initial(self) -> State:
        c = self.config
        return State(
            clock=0,
            members=tuple(Member() for _ in range(c.members)),
            tasks=tuple(Task() for _ in range(c.tasks)),
            jobs=tuple(Job() for _ in range(c.members)),
            approvals=tuple(Approval() for _ in range(c.approvals)),
            executions=tuple(Execution() for _ in range(c.approvals)),
            plans=tuple(Plan() for _ in range(c.plans)),
            runs=tuple(PlanRun() for _ in range(c.plans)),
            shutdowns=tuple(Shutdown() for _ in range(c.shutdowns)),
            bus=(),
            outbox=(),
        )

    # ---- shared guards -------------------------------------------------------------------
    def active_shutdown(self, s: State, m: int) -> bool:
        """MEM-1's last check: a persisted, active shutdown request targets this incarnation."""
        incarnation = s.members[m].incarnation
        return any(
            sd.status in ACTIVE_SHUTDOWN and sd.target == m and sd.target_incarnation == incarnation
            for sd in s.shutdowns
        )

    @staticmethod
    def holds(s: State, m: int) -> int:
        """The task member ``m`` holds under its current incarnation, or NONE."""
        member = s.members[m]
        if member.task == NONE:
            return NONE
        task = s.tasks[member.task]
        if task.status == "claimed" and task.owner == m and task.owner_incarnation == member.incarnation:
            return member.task
        return NONE

    @staticmethod
    def job_busy(s: State, m: int) -> bool:
        return s.jobs[m].status in BUSY_JOB

    # ---- the transition relation ---------------------------------------------------------
    def operations(self, s: State) -> Iterator[Operation]:
        from . import _ops

        if s.crashed:
            yield from _ops.restart(self, s)
            return
        if (
            self.reduce
            and any(entry.status == "owed" for entry in s.outbox)
            and not self._lapse_beside_crash(s)
            and not self._expiry_beside_crash(s)
        ):
            # Partial-order reduction: sending an owed outbox entry is independent of every other
            # operation (no guard reads the bus copy of an outbox message, and nothing but the
            # send changes the entry) and invisible to every invariant (the message is present
            # before and after, under the same id and content). Each send lowers the number of
            # owed entries, so no cycle is closed by reduced states alone. Exploring it alone
            # from such a state therefore preserves every invariant violation, deadlock and
            # reachable final state.
            yield from _ops.first_outbox_send(self, s)
            return
        if self.reduce and not s.monitor_done and _ops.monitor_is_idle(self, s):
            # Partial-order reduction: a monitor pass with nothing past its deadline changes only
            # ``monitor_done``, which no guard but the tick's and no snapshot reads, and it stays
            # idle whatever else runs first until the next tick: every record made meanwhile gets
            # a deadline after now, and nothing moves a record back into a status the monitor
            # watches (approval requested/approved, plan pending/approved, run running, shutdown
            # requested/draining, message pending). So it is independent of every other operation
            # and invisible to every check; it is taken alone, and it ends the reduced stretch.
            yield from _ops.clock_ops(self, s)
            return
        if self.independence:
            # Partial-order reduction across records (spec.model._por, where C0-C3 are argued):
            # an isolated approval's or plan's operations, crash variants included, taken alone.
            from ._por import ample

            operations = [op for family in _ops.FAMILIES for op in family(self, s)]
            yield from ample(self, s, operations) or operations
            return
        for family in _ops.FAMILIES:
            yield from family(self, s)

    def _lapse_beside_crash(self, s: State) -> bool:
        """Where the outbox-first reduction does not hold (INV-12): a send cut off by a crash, then
        the restart's reconciliation, does not commute with a member's lapse — reconciliation clears
        a lapsed member's task, so *lapse, send ⚡, restart* ends where no order of the send first
        leads (``teamproto check --audit`` found it: 104 such pairs of states on plan_lost, none
        elsewhere). So with crashes on, no send is taken alone while a member could lapse. (The
        plain-tuple engine never meets it: it does not run lapses, ``_flat.unsupported``.)"""
        c = self.config
        return c.crashes and c.lapses and any(m.status in ("running", "draining") for m in s.members)

    def _expiry_beside_crash(self, s: State) -> bool:
        """Where the outbox-first reduction does not hold (APR-4, REC-2): reconciliation expires a
        requested approval past its deadline (the monitor's pass may not have run yet), so a send
        cut off by a crash, then the restart, reads the clock. It does not commute with the tick
        (*tick, send ⚡, restart* expires what *send ⚡, restart, tick* leaves requested until the
        pass) nor with what else ends the approval (an inspection cancels it, XPR-2). ``teamproto
        check --audit`` found both on ``approval_lost``, the first configuration with an approval
        and lapses. So with crashes on, no send is taken alone while a requested approval is at or
        past its deadline."""
        return self.config.crashes and any(ap.status == "requested" and ap.deadline <= s.clock for ap in s.approvals)

    def outcomes(self, s: State) -> Iterator[Outcome]:
        """Every operation enabled in ``s`` once, with all it can leave: its action; the state its
        whole run leaves (``None`` when that is ``s`` itself, the :class:`IllegalTransition` when
        one of its steps breaks its machine's table — then it has no crash points); its crash
        points, each the write step and the state right after it, not yet marked crashed. With
        ``crash_between``, the harness crash comes last, as ``harness.crash`` with one crash point
        and no whole run. :meth:`successors` is this, spelt out; the simulator (:mod:`spec.simulate`)
        builds only the crash it picks."""
        can_crash = self.config.crashes
        for action, steps in self.operations(s):
            state = s
            crashes: list[tuple[str, State]] = []
            try:
                for index, (step_name, apply) in enumerate(steps):
                    state = apply(state)
                    if can_crash and index < len(steps) - 1 and state != s:
                        # A crash before the first effective write leaves a consistent state: it is
                        # a plain restart, not a crash point of this operation.
                        crashes.append((step_name, state))
            except IllegalTransition as error:
                yield action, error, []
                continue
            if state != s or crashes:
                yield action, (state if state != s else None), crashes
        if can_crash and self.config.crash_between and not s.crashed:
            yield HARNESS, None, [(HARNESS_CRASH.crash_after, s)]  # between two operations (spec/split.py)

    def successors(self, s: State) -> Iterator[tuple[Action, State | IllegalTransition]]:
        """Every (action, next state), crash variants included: each operation's whole run, then
        its crash points (so that shortest traces prefer no crash).

        An operation whose step breaks its machine's table yields the :class:`IllegalTransition`
        instead of a state: the explorer reports it as a violation of INV-3.
        """
        for action, whole, crashes in self.outcomes(s):
            if whole is not None:
                yield action, whole
            for step_name, state in crashes:
                yield crashed(action, step_name, state)

    def is_goal(self, s: State) -> bool:
        """Every request is final (the liveness target): approvals, plans, runs, shutdowns.

        At the clock bound (of a configuration with one) a request that only time would end (a requested or
        approved approval, a pending or approved plan, a requested shutdown: the deadline monitor
        expires them at the next tick; a running plan execution: the monitor fails it, and a failed
        execution is rolled back whoever its requester is — the only way out when its requester
        stopped or drained meanwhile) also counts as settled — the model stops time, the protocol
        does not. A draining shutdown is never settled by time alone: it only times out.

        Tasks too (issue 19; SHD-7, SHD-9, SHD-10): none is left ``needs_inspection`` or
        ``suspended`` — such a task must always be able to become final or pending again.
        """
        from .._tables import final_states

        bound = self.config.max_ticks  # None: unbounded time (deadline regions), never at a bound
        at_bound = bound is not None and s.clock >= bound
        groups = (
            ("operation_approval", s.approvals, ("requested", "approved")),
            ("plan_approval", s.plans, ("pending", "approved")),
            ("plan_execution", s.runs, ("running",)),
            ("shutdown_request", s.shutdowns, ("requested",)),
        )
        for machine, records, by_time in groups:
            finals = final_states(machine)
            for record in records:
                if record.status and record.status not in finals and not (at_bound and record.status in by_time):
                    return False
        if any(task.status in ("needs_inspection", "suspended") for task in s.tasks):
            return False
        return not s.crashed
