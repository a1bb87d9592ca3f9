"""The model in plain tuples: a second, faster form of :mod:`spec.model._ops` (issue 18 item 3).

A state is one plain tuple laid out as :class:`~spec.model._state.State` (clock, members, tasks,
jobs, approvals, executions, plans, runs, shutdowns, bus, outbox, monitor_done, crashed,
profile_changes), every record a plain tuple of its dataclass's fields in declaration order, a
message ``(key, status, copy, info)`` and an outbox entry ``(key, status, info)``, the bus and the
outbox sorted as the model sorts them. :func:`encode` and :func:`decode` are exact inverses. Plain
tuples hash and compare in C, where the model's frozen dataclasses do it in Python, and a record
is rebuilt by slicing instead of by ``replace``.

One source (DESIGN rule 1): this module is not a second protocol. It restates the model's
operations for the configurations :func:`supports` accepts (the feature set of ``pair``,
``pair_crashes``, ``wide``, ``pair_plan`` and ``standard``: approvals, plans, shutdowns, jobs,
crashes with restart and reconciliation, symmetry, time — the tick, the deadline monitor's pass,
every guard that compares the clock with a deadline, under a bounded clock or under deadline
regions — no lapses, the healthy model only), in the model's order, with the model's actions,
write-step names, crash variants, machine edges (``EDGE_LOG``) and
:class:`~spec._tables.IllegalTransition` cases; ``model_tests/test_flat.py`` proves the two equal
transition by transition on the whole state space of every configuration it supports (``decode``
of every successor against ``Model.successors``), and the explorer uses it only where
:func:`supports` says so. Time follows :mod:`spec.model._ops` (``clock_ops``, ``monitor_pass``,
the idle monitor pass taken alone) and :mod:`spec.model._time` (``tick_matters``, and
:func:`relative`, the deadline-region key the explorer keys the visited set by); the records'
partial-order reduction applies only where ``_por.time_frozen`` holds (a bounded clock at its
bound, never under regions, and never with the liveness check on). Everything else (lapses,
profile changes, restarts of members, unit deadlines, every model mutant) runs on the model itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._tables import _ALLOWED, IllegalTransition, SlotTaken, ensure_transition, final_states, initial_state
from ..redaction import redact
from ..safety import BUSY_JOB
from . import _model
from ._action import Action
from ._config import Config
from ._ops import DRAIN_BEGUN as _DRAIN_BEGUN
from ._ops import NEVER as _NEVER
from ._ops import RISK_TEXT
from ._por import _ACTIVE as _POR_ACTIVE
from ._por import smallest_isolated
from ._state import NONE, Approval, Execution, Job, Member, Message, Owed, Plan, PlanRun, Shutdown, State, Task
from ._time import FLOOR, _kept, _offset

Flat = tuple[Any, ...]
Step = tuple[str, Callable[[Flat], Flat]]
Operation = tuple[Action, list[Step]]

CLOCK, MEMBERS, TASKS, JOBS, APPROVALS, EXECUTIONS, PLANS, RUNS, SHUTDOWNS, BUS, OUTBOX = range(11)
MONITOR_DONE, CRASHED, PROFILE_CHANGES = 11, 12, 13
_RECORD_FIELDS = (
    (MEMBERS, Member),
    (TASKS, Task),
    (JOBS, Job),
    (APPROVALS, Approval),
    (EXECUTIONS, Execution),
    (PLANS, Plan),
    (RUNS, PlanRun),
    (SHUTDOWNS, Shutdown),
)


def _fields(cls: type) -> tuple[str, ...]:
    return tuple(cls.__dataclass_fields__)  # type: ignore[attr-defined]


_NAMES: dict[type, tuple[str, ...]] = {cls: _fields(cls) for _, cls in _RECORD_FIELDS}


def _index(cls: type, name: str) -> int:
    return _NAMES[cls].index(name)


# Field positions inside a record's tuple, derived from the dataclasses (one source).
M_STATUS, M_INCARNATION, M_ACCEPTING, M_SHUTDOWN, M_TASK, M_PROFILE, M_TOOL, M_RELEASED = (
    _index(Member, n)
    for n in ("status", "incarnation", "accepting", "shutdown", "task", "profile_version", "has_tool", "released")
)
T_STATUS, T_OWNER, T_INCARNATION, T_CLAIMS, T_CHECKPOINT, T_CLAIMED_AT = (
    _index(Task, n) for n in ("status", "owner", "owner_incarnation", "claims", "checkpoint", "claimed_at")
)
J_STATUS, J_TASK, J_CANCELLABLE = (_index(Job, n) for n in ("status", "task", "cancellable"))
A_STATUS, A_REQUESTER, A_INCARNATION, A_TASK, A_PROFILE, A_DEADLINE, A_CONSUMED_AT, A_REASON, A_SUMMARY = (
    _index(Approval, n)
    for n in (
        "status",
        "requester",
        "incarnation",
        "task",
        "profile_version",
        "deadline",
        "consumed_at",
        "reason",
        "risk_summary",
    )
)
E_STATUS, E_REQUESTER, E_TASK, E_CHANGED, E_PROFILE, E_ATTEMPTS, E_WORLD = (
    _index(Execution, n)
    for n in ("status", "requester", "task", "changed_arguments", "profile_version", "attempts", "world_calls")
)
P_STATUS, P_REQUESTER, P_INCARNATION, P_TASK, P_DEADLINE, P_DELIVERED, P_RETRACTIONS, P_APPROVED_BY, P_REASON = (
    _index(Plan, n)
    for n in (
        "status",
        "requester",
        "incarnation",
        "task",
        "deadline",
        "delivered",
        "retractions",
        "approved_by",
        "reason",
    )
)
R_STATUS, R_STEPS, R_DEADLINE, R_STARTS, R_CURSOR = (
    _index(PlanRun, n) for n in ("status", "steps", "deadline", "starts", "cursor")
)
S_STATUS, S_TARGET, S_INCARNATION, S_DEADLINE, S_RELEASED, S_WAITED, S_REASON = (
    _index(Shutdown, n) for n in ("status", "target", "target_incarnation", "deadline", "released", "waited", "reason")
)


def _record(value: Any) -> tuple[Any, ...]:
    return tuple(getattr(value, name) for name in _NAMES[type(value)])


def encode(s: State) -> Flat:
    """The state as plain tuples (see the module docstring)."""
    return (
        s.clock,
        *(tuple(_record(r) for r in getattr(s, name)) for name in _fields(State)[1:9]),
        tuple((m.key, m.status, m.copy, m.info) for m in s.bus),
        tuple((o.key, o.status, o.info) for o in s.outbox),
        s.monitor_done,
        s.crashed,
        s.profile_changes,
    )


def decode(f: Flat) -> State:
    """The model's state of a plain tuple: ``decode(encode(s)) == s``."""
    records: list[Any] = [tuple(cls(*r) for r in f[position]) for position, cls in _RECORD_FIELDS]
    return State(  # type: ignore[call-arg]
        f[CLOCK],
        *records,
        tuple(Message(*m) for m in f[BUS]),
        tuple(Owed(*o) for o in f[OUTBOX]),
        f[MONITOR_DONE],
        f[CRASHED],
        f[PROFILE_CHANGES],
    )


def unsupported(config: Config, mutant: str | None) -> list[str]:
    """What of ``config`` and ``mutant`` this form does not implement (empty: it runs them)."""
    reasons = []
    if mutant is not None:
        reasons.append(f"model mutant {mutant}")
    if config.lapses:
        reasons.append("heartbeat lapses")
    if config.max_incarnation > 1:
        reasons.append("member restarts (max_incarnation > 1)")
    if config.profile_changes:
        reasons.append("profile changes")
    if config.units:
        reasons.append("unit deadlines (task.suspend, a clock reaching unit_ticks)")
    return reasons


def supports(config: Config, mutant: str | None = None) -> bool:
    return not unsupported(config, mutant)


# ---- building blocks ---------------------------------------------------------------------------

_LEGAL = frozenset(
    (machine, source, target) for machine, table in _ALLOWED.items() for source, ts in table.items() for target in ts
)
_ACTIVE_SHUTDOWN = _model.ACTIVE_SHUTDOWN


def _check(machine: str, source: str, target: str) -> None:
    """The model's ``move``: the table's guard (INV-3), then the edge into the explorer's log."""
    if (machine, source, target) not in _LEGAL:
        ensure_transition(machine, source, target)  # raises IllegalTransition (or names the bad status)
    log = _model.EDGE_LOG
    if log:
        log[-1].add((machine, source, target))


_note_deadline = _model.note_deadline
_note_unread_expiry = _model.note_unread_expiry


def _set(record: tuple[Any, ...], changes: dict[int, Any]) -> tuple[Any, ...]:
    out = list(record)
    for position, value in changes.items():
        out[position] = value
    return tuple(out)


def _moved(
    machine: str, record: tuple[Any, ...], target: str, changes: dict[int, Any] | None = None
) -> tuple[Any, ...]:
    _check(machine, record[0], target)
    out = list(record)
    out[0] = target
    if changes:
        for position, value in changes.items():
            out[position] = value
    return tuple(out)


def _moved_entry(machine: str, entry: tuple[Any, ...], target: str) -> tuple[Any, ...]:
    """A message's or an outbox entry's status change (its status follows its key)."""
    _check(machine, entry[1], target)
    return (entry[0], target, *entry[2:])


def _created(machine: str, record: tuple[Any, ...], changes: dict[int, Any]) -> tuple[Any, ...]:
    if record[0] != "":
        raise SlotTaken(machine, record[0], initial_state(machine))
    out = list(record)
    out[0] = initial_state(machine)
    for position, value in changes.items():
        out[position] = value
    return tuple(out)


def _put(f: Flat, field: int, slot: int, record: tuple[Any, ...]) -> Flat:
    records = f[field]
    return (*f[:field], (*records[:slot], record, *records[slot + 1 :]), *f[field + 1 :])


def _with(f: Flat, field: int, value: Any) -> Flat:
    return (*f[:field], value, *f[field + 1 :])


def _move(f: Flat, field: int, machine: str, slot: int, target: str, changes: dict[int, Any] | None = None) -> Flat:
    return _put(f, field, slot, _moved(machine, f[field][slot], target, changes))


_ACTIONS: dict[tuple[str, tuple[tuple[str, Any], ...]], Action] = {}
_CRASHES: dict[tuple[Action, str], Action] = {}


def _act(name: str, *args: tuple[str, Any]) -> Action:
    """The model's ``A(name, **args)``, one object per distinct action."""
    key = (name, args)
    known = _ACTIONS.get(key)
    if known is None:
        known = _ACTIONS[key] = Action(name, tuple(sorted(args)))
    return known


def _crash(action: Action, step: str) -> Action:
    key = (action, step)
    known = _CRASHES.get(key)
    if known is None:
        known = _CRASHES[key] = Action(action.name, action.args, step)
    return known


# ---- messages and the outbox (spec.model._model) -----------------------------------------------


def message_info(f: Flat, key: tuple[str, int, int]) -> tuple[tuple[str, Any], ...]:
    kind, ref, _ = key
    if kind == "approval_decision":
        return (("decision", "rejected" if f[APPROVALS][ref][A_STATUS] == "rejected" else "approved"),)
    if kind == "plan_decision":
        status = f[PLANS][ref][P_STATUS]
        return (("decision", status if status in ("rejected", "needs_revision") else "approved"),)
    if kind == "shutdown_ack":
        sd = f[SHUTDOWNS][ref]
        return (("released", sd[S_RELEASED]), ("waited", sd[S_WAITED]))
    if kind == "member_lost":
        flagged = tuple(
            t for t, task in enumerate(f[TASKS]) if task[T_STATUS] == "needs_inspection" and task[T_OWNER] == ref
        )
        return (("flagged", flagged),)
    if kind == "task_suspended":
        return (("member", f[TASKS][ref][T_OWNER]),)
    if kind == "plan_completion":
        return (("outcome", f[RUNS][ref][R_STATUS]),)
    return ()


def owe(f: Flat, key: tuple[str, int, int]) -> Flat:
    outbox = f[OUTBOX]
    for entry in outbox:
        if entry[0] == key:
            return f
    return _with(f, OUTBOX, tuple(sorted([*outbox, (key, "owed", message_info(f, key))])))


def post(f: Flat, key: tuple[str, int, int], info: Any = None) -> Flat:
    bus = f[BUS]
    for message in bus:
        if message[0] == key and message[2] == 0:
            return f
    message = (key, "pending", 0, message_info(f, key) if info is None else info)
    return _with(f, BUS, tuple(sorted([*bus, message])))


def set_message(f: Flat, key: tuple[str, int, int], target: str) -> Flat:
    bus = tuple(_moved_entry("message", m, target) if m[0] == key and m[2] == 0 else m for m in f[BUS])
    return _with(f, BUS, bus)


def message_status(f: Flat, key: tuple[str, int, int]) -> str:
    for message in f[BUS]:
        if message[0] == key and message[2] == 0:
            return str(message[1])
    return ""


# ---- the operations (spec.model._ops), in the model's order -------------------------------------


def _member(f: Flat, m: int, target: str, changes: dict[int, Any] | None = None) -> Flat:
    if changes is not None and M_TASK in changes:
        changes = {**changes, M_RELEASED: False}
    return _move(f, MEMBERS, "member", m, target, changes)


def _member_task(f: Flat, m: int, task: int) -> Flat:
    return _put(f, MEMBERS, m, _set(f[MEMBERS][m], {M_TASK: task, M_RELEASED: False}))


def _task(f: Flat, t: int, target: str, changes: dict[int, Any] | None = None) -> Flat:
    """The model's ``_ops._task``."""
    return _move(f, TASKS, "task", t, target, changes)


def _job(f: Flat, m: int, target: str) -> Flat:
    return _move(f, JOBS, "job", m, target)


def _shutdown(f: Flat, slot: int, target: str, changes: dict[int, Any] | None = None) -> Flat:
    record = f[SHUTDOWNS][slot]
    _note_deadline("shutdown_request", record[0], target, record[S_DEADLINE], f[CLOCK])
    return _move(f, SHUTDOWNS, "shutdown_request", slot, target, changes)


def _plan(f: Flat, p: int, target: str, changes: dict[int, Any] | None = None) -> Flat:
    record = f[PLANS][p]
    _note_deadline("plan_approval", record[0], target, record[P_DEADLINE], f[CLOCK])
    return _move(f, PLANS, "plan_approval", p, target, changes)


def _run(f: Flat, p: int, target: str) -> Flat:
    return _move(f, RUNS, "plan_execution", p, target)


def _approval(f: Flat, a: int, target: str, changes: dict[int, Any] | None = None) -> Flat:
    record = f[APPROVALS][a]
    _note_deadline("operation_approval", record[0], target, record[A_DEADLINE], f[CLOCK])
    return _move(f, APPROVALS, "operation_approval", a, target, changes)


def _member_live(f: Flat, m: int, incarnation: int) -> bool:
    member = f[MEMBERS][m]
    return bool(member[M_INCARNATION] == incarnation and member[M_STATUS] in ("running", "draining"))


def _flag_task(f: Flat, m: int) -> Flat:
    member = f[MEMBERS][m]
    for t, task in enumerate(f[TASKS]):
        if task[T_STATUS] == "claimed" and task[T_OWNER] == m and task[T_INCARNATION] == member[M_INCARNATION]:
            f = _task(f, t, "needs_inspection")
    return f


def cancel_own_requests(f: Flat, m: int, reason: str = "member_draining") -> Flat:
    """XPR-2 (the model's ``cancel_own_requests``)."""
    incarnation = f[MEMBERS][m][M_INCARNATION]
    for a, ap in enumerate(f[APPROVALS]):
        if ap[A_STATUS] == "requested" and ap[A_REQUESTER] == m and ap[A_INCARNATION] == incarnation:
            f = _put(f, APPROVALS, a, _moved("operation_approval", ap, "cancelled", {A_REASON: reason}))
    for p, plan in enumerate(f[PLANS]):
        if plan[P_STATUS] in ("draft", "pending") and plan[P_REQUESTER] == m and plan[P_INCARNATION] == incarnation:
            f = _put(f, PLANS, p, _moved("plan_approval", plan, "withdrawn", {P_REASON: reason}))
    return f


class FlatModel:
    """The healthy model of one supported configuration, on plain tuples (see the module docstring)."""

    def __init__(self, config: Config) -> None:
        reasons = unsupported(config, None)
        if reasons:
            raise ValueError(f"{config.name}: the flat model does not support {', '.join(reasons)}")
        self.config = config
        self.summary = redact(RISK_TEXT)
        self.goal_finals = {
            machine: final_states(machine)
            for machine in ("operation_approval", "plan_approval", "plan_execution", "shutdown_request")
        }

    def initial(self) -> Flat:
        from ._model import Model

        return encode(Model(self.config).initial())

    # ---- shared guards ----
    @staticmethod
    def active_shutdown(f: Flat, m: int) -> bool:
        incarnation = f[MEMBERS][m][M_INCARNATION]
        for sd in f[SHUTDOWNS]:
            if sd[S_STATUS] in _ACTIVE_SHUTDOWN and sd[S_TARGET] == m and sd[S_INCARNATION] == incarnation:
                return True
        return False

    @staticmethod
    def holds(f: Flat, m: int) -> int:
        member = f[MEMBERS][m]
        t: int = member[M_TASK]
        if t == NONE:
            return NONE
        task = f[TASKS][t]
        if task[T_STATUS] == "claimed" and task[T_OWNER] == m and task[T_INCARNATION] == member[M_INCARNATION]:
            return t
        return NONE

    @staticmethod
    def job_busy(f: Flat, m: int) -> bool:
        return bool(f[JOBS][m][J_STATUS] in BUSY_JOB)

    # ---- families ----
    def task_ops(self, f: Flat, out: list[Operation]) -> None:
        tasks = f[TASKS]
        for m, member in enumerate(f[MEMBERS]):
            free = member[M_STATUS] == "running" and member[M_ACCEPTING] and member[M_TASK] == NONE
            if free and not self.active_shutdown(f, m):
                for t, task in enumerate(tasks):
                    if task[T_STATUS] == "pending":
                        out.append((_act("task.claim", ("member", m), ("task", t)), _claim_steps(m, t)))
            t = self.holds(f, m)
            if t != NONE and member[M_STATUS] == "running" and not self.job_busy(f, m):
                for outcome in ("completed", "failed"):
                    out.append((_act("task.finish", ("member", m), ("outcome", outcome)), _finish_steps(m, t, outcome)))
        jobs = f[JOBS]
        for t, task in enumerate(tasks):
            owner_live = task[T_OWNER] != NONE and _member_live(f, task[T_OWNER], task[T_INCARNATION])
            running = any(job[J_STATUS] in BUSY_JOB and job[J_TASK] == t for job in jobs)
            if task[T_STATUS] == "needs_inspection" and not owner_live and not running:
                for target in ("pending", "failed"):
                    out.append(
                        (
                            _act("task.inspect", ("outcome", target), ("task", t)),
                            [_step("task.inspect/task", lambda x, t=t, g=target: _task(x, t, g, {T_OWNER: NONE}))],  # type: ignore[misc]
                        )
                    )

    def job_ops(self, f: Flat, out: list[Operation]) -> None:
        if not self.config.jobs:
            return
        members = f[MEMBERS]
        for m, job in enumerate(f[JOBS]):
            status = job[J_STATUS]
            if status == "" and members[m][M_STATUS] == "running" and self.holds(f, m) != NONE:
                for cancellable in (True, False):
                    out.append(
                        (
                            _act("job.start", ("cancellable", cancellable), ("member", m)),
                            [_step("job.start/job", lambda x, m=m, c=cancellable: _job_start(x, m, c))],  # type: ignore[misc]
                        )
                    )
            exits = (
                ("succeeded", "failed")
                if status == "running"
                else _CANCEL_EXITS
                if status == "cancel_requested"
                else ()
            )
            for outcome in exits:
                out.append(
                    (
                        _act("job.exit", ("member", m), ("outcome", outcome)),
                        [_step("job.exit/job", lambda x, m=m, o=outcome: _job(x, m, o))],  # type: ignore[misc]
                    )
                )

    def member_ops(self, f: Flat, out: list[Operation]) -> None:
        for m, member in enumerate(f[MEMBERS]):
            status = member[M_STATUS]
            if status == "unhealthy":
                out.append((_act("member.inspect", ("member", m)), _inspect_steps(m)))
            if status == "stopped" and not self.job_busy(f, m):
                out.append(
                    (
                        _act("member.retire", ("member", m)),
                        [_step("member.retire/member", lambda x, m=m: _member(x, m, "retired"))],  # type: ignore[misc]
                    )
                )

    def shutdown_ops(self, f: Flat, out: list[Operation]) -> None:
        shutdowns, members = f[SHUTDOWNS], f[MEMBERS]
        free = [i for i, sd in enumerate(shutdowns) if sd[S_STATUS] == ""]
        if free:
            for m, member in enumerate(members):
                if member[M_STATUS] == "running":
                    steps = _request_shutdown_steps(free[0], m, self.config.ttl_ticks)
                    out.append((_act("shutdown.request", ("member", m)), steps))
        for slot, sd in enumerate(shutdowns):
            if sd[S_STATUS] == "requested":
                out.append(
                    (
                        _act("shutdown.cancel", ("slot", slot)),
                        [
                            (
                                "shutdown.cancel/record",
                                lambda x, i=slot: _shutdown(x, i, "cancelled", {S_REASON: "cancelled"}),  # type: ignore[misc]
                            )
                        ],
                    )
                )
            if message_status(f, ("shutdown_request", slot, 0)) == "pending":
                out.append((_act("shutdown.begin_drain", ("slot", slot)), _begin_drain_steps(f, slot)))
            target = members[sd[S_TARGET]]
            if sd[S_STATUS] == "timed_out" and target[M_STATUS] == "draining" and target[M_SHUTDOWN] == slot:
                out.append((_act("shutdown.force_terminate", ("slot", slot)), _force_steps(sd[S_TARGET])))
        for m, member in enumerate(members):
            slot = member[M_SHUTDOWN]
            if (
                member[M_STATUS] == "draining"
                and slot != NONE
                and shutdowns[slot][S_STATUS] in ("draining", "timed_out")
            ):
                self.drain_ops(f, m, slot, out)

    def drain_ops(self, f: Flat, m: int, slot: int, out: list[Operation]) -> None:
        job = f[JOBS][m]
        if job[J_STATUS] == "running" and job[J_CANCELLABLE]:
            out.append((_act("shutdown.drain_jobs", ("member", m)), _drain_jobs_steps(m, slot)))
        settled = not self.job_busy(f, m)
        t = f[MEMBERS][m][M_TASK]
        if t != NONE and settled:
            out.append((_act("shutdown.release_task", ("member", m)), _release_steps(m, t, slot)))
        if settled and t == NONE:
            out.append((_act("shutdown.finish", ("member", m)), _finish_shutdown_steps(m, slot)))

    def approval_ops(self, f: Flat, out: list[Operation]) -> None:
        approvals, members = f[APPROVALS], f[MEMBERS]
        free = [i for i, ap in enumerate(approvals) if ap[A_STATUS] == ""]
        for m, member in enumerate(members):
            t = self.holds(f, m)
            if free and t != NONE and member[M_STATUS] == "running" and member[M_TOOL]:
                steps = _request_approval_steps(free[0], m, t, self.config.ttl_ticks, self.summary)
                out.append((_act("approval.request", ("member", m)), steps))
        clock = f[CLOCK]
        for a, ap in enumerate(approvals):
            status = ap[A_STATUS]
            if status == "requested" and clock <= ap[A_DEADLINE]:
                for decision in ("approved", "rejected"):
                    out.append(
                        (_act("approval.review", ("decision", decision), ("slot", a)), _review_steps(a, decision))
                    )
            requester = members[ap[A_REQUESTER]] if status else None
            retry_ok = (
                requester is not None
                and requester[M_STATUS] == "running"
                and requester[M_TOOL]
                and requester[M_PROFILE] == ap[A_PROFILE]
            )
            if status == "requested" and retry_ok and self.holds(f, ap[A_REQUESTER]) == ap[A_TASK]:
                out.append(
                    (
                        _act("approval.retry", ("slot", a)),
                        [_step("approval.request/message", lambda x, a=a: post(x, ("approval_request", a, 0)))],  # type: ignore[misc]
                    )
                )
            if status in ("requested", "approved") and members[ap[A_REQUESTER]][M_STATUS] == "running":
                out.append(
                    (
                        _act("approval.cancel", ("slot", a)),
                        [
                            (
                                "approval.cancel/record",
                                lambda x, a=a: _approval(x, a, "cancelled", {A_REASON: "cancelled"}),  # type: ignore[misc]
                            )
                        ],
                    )
                )
            for m in range(len(members)):
                for changed in (False, True):
                    if self.consume_allowed(f, a, m, changed):
                        out.append(
                            (
                                _act("approval.consume", ("changed_arguments", changed), ("member", m), ("slot", a)),
                                _consume_steps(a, m, changed),
                            )
                        )

    def plan_ops(self, f: Flat, out: list[Operation]) -> None:
        """The model's ``plan_ops`` (healthy), in its order."""
        plans, members = f[PLANS], f[MEMBERS]
        free = [i for i, plan in enumerate(plans) if plan[P_STATUS] == ""]
        for m, member in enumerate(members):
            t = self.holds(f, m)
            if free and t != NONE and member[M_STATUS] == "running":
                out.append((_act("plan.draft", ("member", m)), [("plan.draft/record", _draft_plan(free[0], m, t))]))
        ttl = self.config.ttl_ticks
        for p, plan in enumerate(plans):
            if plan[P_STATUS] == "draft" and members[plan[P_REQUESTER]][M_STATUS] == "running":
                out.append((_act("plan.submit", ("slot", p)), _submit_plan_steps(p, ttl)))
            self.plan_decisions(f, p, out)
            self.plan_requester(f, p, out)
            self.plan_run(f, p, out)

    def plan_decisions(self, f: Flat, p: int, out: list[Operation]) -> None:
        plan = f[PLANS][p]
        if plan[P_STATUS] == "pending" and f[CLOCK] <= plan[P_DEADLINE]:
            for decision in ("approved", "rejected", "needs_revision"):
                out.append((_act("plan.decide", ("decision", decision), ("slot", p)), _decide_steps(p, decision)))
        if plan[P_STATUS] == "approved" and not plan[P_DELIVERED] and plan[P_RETRACTIONS] < self.config.max_retractions:
            for target in ("pending", "rejected"):
                out.append((_act("plan.retract", ("slot", p), ("to", target)), _retract_steps(p, target)))
        key = ("plan_decision", p, plan[P_RETRACTIONS])
        if message_status(f, key) == "pending":
            out.append((_act("plan.deliver_decision", ("slot", p)), _deliver_decision_steps(p, key)))

    def plan_requester(self, f: Flat, p: int, out: list[Operation]) -> None:
        plan, run = f[PLANS][p], f[RUNS][p]
        status = plan[P_STATUS]
        requester_running = status != "" and f[MEMBERS][plan[P_REQUESTER]][M_STATUS] == "running"
        if status in ("draft", "pending", "approved") and requester_running:
            out.append(
                (
                    _act("plan.withdraw", ("slot", p)),
                    [("plan.withdraw/record", lambda x, p=p: _plan(x, p, "withdrawn", {P_REASON: "cancelled"}))],  # type: ignore[misc]
                )
            )
        same = plan[P_INCARNATION] == f[MEMBERS][plan[P_REQUESTER]][M_INCARNATION]
        current = status != "" and same
        startable = (
            status == "approved"
            and plan[P_DELIVERED]
            and f[CLOCK] <= plan[P_DEADLINE]
            and run[R_STATUS] == ""
            and current
        )
        if requester_running and startable:
            out.append((_act("plan.start", ("slot", p)), _start_plan_steps(p, self.config.ttl_ticks)))

    def plan_run(self, f: Flat, p: int, out: list[Operation]) -> None:
        plan, run = f[PLANS][p], f[RUNS][p]
        if run[R_STATUS] == "running" and f[MEMBERS][plan[P_REQUESTER]][M_STATUS] == "running":
            if run[R_CURSOR] < self.config.plan_steps:
                out.append((_act("plan.step", ("slot", p)), [("plan.step/execution", lambda x, p=p: _plan_step(x, p))]))  # type: ignore[misc]
            else:
                out.append(
                    (
                        _act("plan.complete", ("slot", p)),
                        [
                            ("plan.complete/execution", lambda x, p=p: _run(x, p, "completed")),  # type: ignore[misc]
                            ("plan.complete/outbox", lambda x, p=p: owe(x, ("plan_completion", p, 0))),  # type: ignore[misc]
                        ],
                    )
                )
            out.append((_act("plan.fail", ("slot", p)), [("plan.fail/execution", lambda x, p=p: _run(x, p, "failed"))]))  # type: ignore[misc]
        if run[R_STATUS] == "failed":
            out.append(
                (
                    _act("plan.rollback", ("slot", p)),
                    [
                        ("plan.rollback/execution", lambda x, p=p: _run(x, p, "rolled_back")),  # type: ignore[misc]
                        ("plan.rollback/outbox", lambda x, p=p: owe(x, ("plan_completion", p, 0))),  # type: ignore[misc]
                    ],
                )
            )

    def consume_allowed(self, f: Flat, a: int, m: int, changed: bool) -> bool:
        """APR-5's checks (the healthy model's ``consume_allowed``)."""
        ap, member = f[APPROVALS][a], f[MEMBERS][m]
        return bool(
            ap[A_STATUS] == "approved"
            and member[M_STATUS] == "running"
            and ap[A_REQUESTER] == m
            and self.holds(f, m) == ap[A_TASK]
            and not changed
            and f[CLOCK] <= ap[A_DEADLINE]
            and member[M_TOOL]
            and member[M_PROFILE] == ap[A_PROFILE]
            and member[M_INCARNATION] == ap[A_INCARNATION]
        )

    @staticmethod
    def message_ops(f: Flat, out: list[Operation]) -> None:
        for entry in f[OUTBOX]:
            if entry[1] == "owed":
                key = entry[0]
                kind, ref, phase = key
                out.append(
                    (
                        _act("outbox.send", ("phase", phase), ("ref", ref), ("type", kind)),
                        [
                            _step("outbox.send/message", lambda x, k=key, i=entry[2]: post(x, k, i)),  # type: ignore[misc]
                            _step("outbox.send/entry", lambda x, k=key: _sent(x, k)),  # type: ignore[misc]
                        ],
                    )
                )

    # ---- the clock (spec.model._ops.clock_ops, monitor_pass; spec.model._time.tick_matters) ----
    def clock_ops(self, f: Flat, out: list[Operation]) -> None:
        """The monitor pass after a tick, else the tick: below a bounded clock's ``max_ticks``, or
        under deadline regions where it changes a region (``_ops.clock_ops``)."""
        if not f[MONITOR_DONE]:
            out.append((_MONITOR, [("monitor.pass/records", monitor_pass)]))
            return
        bound = self.config.max_ticks
        if f[CLOCK] < bound if bound is not None else self.tick_matters(f):
            out.append((_TICK, [("tick/clock", _tick)]))

    def monitor_is_idle(self, f: Flat) -> bool:
        """``_ops.monitor_is_idle``: the pass would change nothing but ``monitor_done`` (a probe,
        as there: nothing it moves is logged)."""
        with _model.probing():
            return monitor_pass(f) == _with(f, MONITOR_DONE, True)

    def tick_matters(self, f: Flat) -> bool:
        """``_time.tick_matters``: some kept offset is above the floor, or the monitor pass after
        the tick would not be idle."""
        clock, pending = f[CLOCK], _pending_requests(f)
        for field, kind, at in _DEADLINED:
            for i, record in enumerate(f[field]):
                if record[at] - clock > FLOOR and _kept(kind, record[0], i, pending):
                    return True
        return not self.monitor_is_idle((clock + 1, *f[MEMBERS:MONITOR_DONE], False, *f[MONITOR_DONE + 1 :]))

    # ---- the transition relation (Model.operations, Model.successors) ----
    def operations(self, f: Flat) -> list[Operation]:
        if f[CRASHED]:
            return [(_RESTART, [("restart/reconcile", self._restart)])]
        for entry in f[OUTBOX]:
            if entry[1] == "owed":  # the outbox-first reduction: the first owed send alone
                if self.expiry_beside_crash(f):
                    break
                out: list[Operation] = []
                self.message_ops(f, out)
                return out[:1]
        if not f[MONITOR_DONE] and self.monitor_is_idle(f):  # the idle monitor pass alone (Model.operations)
            return [(_MONITOR, [("monitor.pass/records", monitor_pass)])]
        out = []
        self.task_ops(f, out)
        self.job_ops(f, out)
        self.member_ops(f, out)
        self.shutdown_ops(f, out)
        self.approval_ops(f, out)
        self.plan_ops(f, out)
        self.message_ops(f, out)
        self.clock_ops(f, out)
        return self.ample(f, out) or out

    def successors(self, f: Flat) -> Iterator[tuple[Action, Flat | IllegalTransition]]:
        can_crash = self.config.crashes
        for action, steps in self.operations(f):
            state = f
            crashes = []
            last = len(steps) - 1
            try:
                for index, (step_name, apply) in enumerate(steps):
                    state = apply(state)
                    if can_crash and index < last and state != f:
                        crashes.append((_crash(action, step_name), (*state[:CRASHED], True, *state[CRASHED + 1 :])))
            except IllegalTransition as error:
                yield action, error
                continue
            if state != f:
                yield action, state
            yield from crashes
        if can_crash and self.config.crash_between and not f[CRASHED]:  # Model.successors
            yield _model.HARNESS_CRASH, (*f[:CRASHED], True, *f[CRASHED + 1 :])

    def expiry_beside_crash(self, f: Flat) -> bool:
        """``Model._expiry_beside_crash``: with crashes on, no send is taken alone while a requested
        approval is at or past its deadline (the restart's reconciliation would expire it)."""
        clock = f[CLOCK]
        return self.config.crashes and any(a[A_STATUS] == "requested" and a[A_DEADLINE] <= clock for a in f[APPROVALS])

    def _restart(self, f: Flat) -> Flat:
        return self.reconcile((*f[:CRASHED], False, *f[CRASHED + 1 :]))

    # ---- the partial-order reduction across records (spec.model._por, approvals only) ----
    def requester_settled(self, f: Flat, r: int) -> bool:
        status = f[MEMBERS][r][M_STATUS]
        if status == "retired":
            return True
        if status != "running":
            return False
        return all(sd[S_STATUS] != "" and (sd[S_TARGET] != r or sd[S_STATUS] not in _POR_ACTIVE) for sd in f[SHUTDOWNS])

    def isolated(self, f: Flat, slot: int) -> bool:
        approval = f[APPROVALS][slot]
        if approval[A_STATUS] != "requested":
            return False
        key = ("approval_request", slot, 0)
        delivered = any(m[0] == key and m[2] == 0 for m in f[BUS])
        return delivered and self.requester_settled(f, approval[A_REQUESTER])

    def ample(self, f: Flat, operations: list[Operation]) -> list[Operation] | None:
        """``spec.model._por.ample``: only where time is frozen (``_por.time_frozen``: a bounded
        clock at its bound, its monitor pass done; never under deadline regions) and the liveness
        check is off."""
        bound = self.config.max_ticks
        if bound is None or self.config.liveness or not f[MONITOR_DONE] or f[CRASHED] or f[CLOCK] < bound:
            return None
        return smallest_isolated(
            operations, lambda kind, slot: self._isolated(f, kind, slot), lambda op: _effective(f, op)
        )

    def _isolated(self, f: Flat, kind: str, slot: int) -> bool:
        """``spec.model._por.isolated`` on plain tuples."""
        if kind == "plan":
            plan = f[PLANS][slot]
            return plan[P_STATUS] != "" and self.requester_settled(f, plan[P_REQUESTER])
        return self.isolated(f, slot)

    # ---- reconciliation (spec.model._reconcile) ----
    def reconcile(self, f: Flat) -> Flat:
        f = _reconcile_approvals(f)
        f = _reconcile_plans(f, self.config.ttl_ticks)
        f = _reconcile_shutdowns(f)
        f = _reconcile_members(f)
        return _reconcile_tasks(f)

    def is_goal(self, f: Flat) -> bool:
        """``Model.is_goal``: at a bounded clock's bound a request only time would end is settled;
        under deadline regions there is no bound."""
        bound = self.config.max_ticks
        at_bound = bound is not None and f[CLOCK] >= bound
        for machine, field, by_time in _GOAL_GROUPS:
            finals = self.goal_finals[machine]
            for record in f[field]:
                status = record[0]
                if status and status not in finals and not (at_bound and status in by_time):
                    return False
        if any(task[T_STATUS] in ("needs_inspection", "suspended") for task in f[TASKS]):
            return False
        return not f[CRASHED]


_RESTART = Action("restart")
_MONITOR = Action("monitor.pass")
_TICK = Action("tick")
_GOAL_GROUPS = (
    ("operation_approval", APPROVALS, ("requested", "approved")),
    ("plan_approval", PLANS, ("pending", "approved")),
    ("plan_execution", RUNS, ("running",)),
    ("shutdown_request", SHUTDOWNS, ("requested",)),
)


def monitor_pass(f: Flat) -> Flat:
    """SHD-6, PLN-5, PLN-9, INV-12 (the healthy model's ``monitor_pass``, in its order)."""
    now = f[CLOCK]
    for a, ap in enumerate(f[APPROVALS]):
        if ap[A_STATUS] in ("requested", "approved") and now > ap[A_DEADLINE]:
            f = _approval(f, a, "expired", {A_REASON: "expired"})
    for p, plan in enumerate(f[PLANS]):
        if plan[P_STATUS] in ("pending", "approved") and now > plan[P_DEADLINE]:
            f = owe(_plan(f, p, "expired", {P_REASON: "expired"}), ("plan_abandoned", p, 0))
        run = f[RUNS][p]
        if run[R_STATUS] == "running" and now > run[R_DEADLINE]:
            f = _run(f, p, "failed")
    for slot, sd in enumerate(f[SHUTDOWNS]):
        if now <= sd[S_DEADLINE]:
            continue
        if sd[S_STATUS] == "requested":
            f = _shutdown(f, slot, "expired", {S_REASON: "expired"})
        elif sd[S_STATUS] == "draining":
            f = _shutdown(f, slot, "timed_out", {S_REASON: "timed_out"})
    for message in f[BUS]:
        key = message[0]
        deadline = _request_deadline(f, key[0], key[1])
        if key[0] == "shutdown_request" and f[SHUTDOWNS][key[1]][S_STATUS] in _DRAIN_BEGUN:
            deadline = _NEVER  # SHD-2, MSG-1: its reader records the delivery (``_ops.drain_began``)
        if message[1] == "pending" and message[2] == 0 and deadline < now:
            _note_unread_expiry(deadline, now)
            f = set_message(f, key, "expired")
    return _with(f, MONITOR_DONE, True)


def _tick(f: Flat) -> Flat:
    return (f[CLOCK] + 1, *f[MEMBERS:MONITOR_DONE], False, *f[MONITOR_DONE + 1 :])


def _request_deadline(f: Flat, kind: str, ref: int) -> int:
    """``_ops._request_deadline``: a request message expires with its record's deadline."""
    if kind == "approval_request":
        return int(f[APPROVALS][ref][A_DEADLINE])
    if kind == "plan_request":
        return int(f[PLANS][ref][P_DEADLINE])
    if kind == "shutdown_request":
        return int(f[SHUTDOWNS][ref][S_DEADLINE])
    return _NEVER


# ---- deadline regions (spec.model._time) -------------------------------------------------------

_DEADLINED = (
    (APPROVALS, "approvals", A_DEADLINE),
    (PLANS, "plans", P_DEADLINE),
    (RUNS, "runs", R_DEADLINE),
    (SHUTDOWNS, "shutdowns", S_DEADLINE),
)


def _pending_requests(f: Flat) -> set[tuple[str, int]]:
    return {(m[0][0], m[0][1]) for m in f[BUS] if m[1] == "pending" and m[2] == 0}


def relative(f: Flat) -> Flat:
    """``_time.relative`` on a plain tuple: clock 0, kept deadlines as cut-off offsets, the rest 0,
    a consumed approval's ``consumed_at`` as whether it was consumed after its deadline, claim
    times 0."""
    clock, pending = f[CLOCK], _pending_requests(f)
    out = list(f)
    out[CLOCK] = 0
    for field, kind, at in _DEADLINED:
        records = []
        for i, r in enumerate(f[field]):
            region = _offset(r[at], clock) if _kept(kind, r[0], i, pending) else 0
            if field == APPROVALS:
                consumed = r[A_CONSUMED_AT]
                r = _set(r, {at: region, A_CONSUMED_AT: NONE if consumed == NONE else int(consumed > r[at])})
            elif region != r[at]:
                r = _set(r, {at: region})
            records.append(r)
        out[field] = tuple(records)
    tasks = f[TASKS]
    if any(t[T_CLAIMED_AT] != 0 for t in tasks):
        out[TASKS] = tuple(_set(t, {T_CLAIMED_AT: 0}) for t in tasks)
    return tuple(out)


_CANCEL_EXITS = ("succeeded", "failed", "cancelled")


def _step(name: str, apply: Callable[[Flat], Flat]) -> Step:
    return name, apply


def _effective(f: Flat, operation: Operation) -> bool:
    state = f
    try:
        for _, apply in operation[1]:
            state = apply(state)
    except IllegalTransition:
        return False
    return state != f


def _sent(f: Flat, key: tuple[str, int, int]) -> Flat:
    return _with(f, OUTBOX, tuple(_moved_entry("outbox_entry", o, "sent") if o[0] == key else o for o in f[OUTBOX]))


def _claim_steps(m: int, t: int) -> list[Step]:
    def claim(f: Flat) -> Flat:
        task, member = f[TASKS][t], f[MEMBERS][m]
        changes = {T_OWNER: m, T_INCARNATION: member[M_INCARNATION], T_CLAIMS: task[T_CLAIMS] + 1, T_CLAIMED_AT: 0}
        changes[T_CHECKPOINT] = task[T_CHECKPOINT]
        return _put(f, TASKS, t, _moved("task", task, "claimed", changes))

    return [("task.claim/task", claim), ("task.claim/member", lambda f: _member_task(f, m, t))]


def _finish_steps(m: int, t: int, outcome: str) -> list[Step]:
    return [
        ("task.finish/task", lambda f: _task(f, t, outcome)),
        ("task.finish/member", lambda f: _member_task(f, m, NONE)),
    ]


def _job_start(f: Flat, m: int, cancellable: bool) -> Flat:
    job = _created("job", f[JOBS][m], {J_TASK: f[MEMBERS][m][M_TASK], J_CANCELLABLE: cancellable})
    return _put(f, JOBS, m, job)


def _inspect_steps(m: int) -> list[Step]:
    def complete_shutdown(f: Flat) -> Flat:
        incarnation = f[MEMBERS][m][M_INCARNATION]
        for slot, sd in enumerate(f[SHUTDOWNS]):
            mine = sd[S_TARGET] == m and sd[S_INCARNATION] == incarnation
            if mine and sd[S_STATUS] in ("draining", "timed_out"):
                f = _shutdown(f, slot, "completed")
                f = owe(f, ("shutdown_ack", slot, 0))
        return f

    return [
        ("member.inspect/task", lambda f: _flag_task(f, m)),
        ("member.inspect/requests", lambda f: cancel_own_requests(f, m, reason="crashed")),
        ("member.inspect/record", lambda f: _note_release(f, m)),
        ("member.inspect/member", lambda f: _member(f, m, "stopped", {M_ACCEPTING: False, M_TASK: NONE})),
        ("member.inspect/shutdown", complete_shutdown),
    ]


def _request_shutdown_steps(slot: int, m: int, ttl: int) -> list[Step]:
    def record(f: Flat) -> Flat:
        changes = {S_TARGET: m, S_INCARNATION: f[MEMBERS][m][M_INCARNATION], S_DEADLINE: f[CLOCK] + ttl}
        return _put(f, SHUTDOWNS, slot, _created("shutdown_request", f[SHUTDOWNS][slot], changes))

    return [
        ("shutdown.request/record", record),
        ("shutdown.request/message", lambda f: post(f, ("shutdown_request", slot, 0))),
    ]


def _begin_drain_steps(f: Flat, slot: int) -> list[Step]:
    """SHD-2 on delivery of shutdown_request (the model's ``_begin_drain_steps``)."""
    sd = f[SHUTDOWNS][slot]
    m = sd[S_TARGET]
    member = f[MEMBERS][m]
    fenced = sd[S_INCARNATION] == member[M_INCARNATION]
    fresh = sd[S_STATUS] == "requested" and f[CLOCK] <= sd[S_DEADLINE] and member[M_STATUS] == "running"
    resuming = sd[S_STATUS] == "draining" and member[M_SHUTDOWN] in (NONE, slot)
    key = ("shutdown_request", slot, 0)
    deliver: Step = ("shutdown.begin_drain/message", lambda x: set_message(x, key, "delivered"))
    if not (fenced and (fresh or resuming)):
        return [deliver]

    def record(x: Flat) -> Flat:
        return _shutdown(x, slot, "draining") if x[SHUTDOWNS][slot][S_STATUS] == "requested" else x

    def member_half(x: Flat) -> Flat:
        if x[MEMBERS][m][M_STATUS] == "running":
            return _member(x, m, "draining", {M_ACCEPTING: False, M_SHUTDOWN: slot})
        return x

    return [
        ("shutdown.begin_drain/record", record),
        ("shutdown.begin_drain/member", member_half),
        ("shutdown.begin_drain/cancel_requests", lambda x: cancel_own_requests(x, m)),
        deliver,
    ]


def _drain_jobs_steps(m: int, slot: int) -> list[Step]:
    def waited(x: Flat) -> Flat:
        sd = x[SHUTDOWNS][slot]
        return _put(x, SHUTDOWNS, slot, _set(sd, {S_WAITED: tuple(sorted({*sd[S_WAITED], m}))}))

    return [
        ("shutdown.drain_jobs/record", waited),
        ("shutdown.drain_jobs/jobs", lambda x: _job(x, m, "cancel_requested")),
    ]


def _release_steps(m: int, t: int, slot: int) -> list[Step]:
    def release(x: Flat) -> Flat:
        task = x[TASKS][t]
        if task[T_STATUS] == "claimed" and task[T_OWNER] == m:
            x = _task(x, t, "pending", {T_OWNER: NONE, T_CHECKPOINT: True})
            return _put(x, MEMBERS, m, _set(x[MEMBERS][m], {M_RELEASED: True}))
        return x

    def record(x: Flat) -> Flat:
        return _put(x, SHUTDOWNS, slot, _set(x[SHUTDOWNS][slot], {S_RELEASED: t}))

    return [
        ("shutdown.release_task/task", release),
        ("shutdown.release_task/record", record),
        ("shutdown.release_task/member", lambda x: _member_task(x, m, NONE)),
    ]


def _acknowledge_request(f: Flat, slot: int) -> Flat:
    key = ("shutdown_request", slot, 0)
    return set_message(f, key, "acknowledged") if message_status(f, key) == "delivered" else f


def _finish_shutdown_steps(m: int, slot: int) -> list[Step]:
    return [
        ("shutdown.finish/record", lambda x: _shutdown(x, slot, "completed")),
        ("shutdown.finish/member", lambda x: _member(x, m, "stopped", {M_ACCEPTING: False})),
        ("shutdown.finish/outbox", lambda x: owe(x, ("shutdown_ack", slot, 0))),
        ("shutdown.finish/message", lambda x: _acknowledge_request(x, slot)),
    ]


def _force_steps(m: int) -> list[Step]:
    def terminate_job(x: Flat) -> Flat:
        return _job(x, m, "cancelled") if x[JOBS][m][J_STATUS] in BUSY_JOB else x

    return [
        ("shutdown.force_terminate/jobs", terminate_job),
        ("shutdown.force_terminate/task", lambda x: _flag_task(x, m)),
        ("shutdown.force_terminate/member", lambda x: _member(x, m, "unhealthy", {M_ACCEPTING: False})),
        ("shutdown.force_terminate/outbox", lambda x: owe(x, ("member_lost", m, x[MEMBERS][m][M_INCARNATION]))),
    ]


def _review_steps(a: int, decision: str) -> list[Step]:
    reason = "rejected" if decision == "rejected" else ""
    return [
        ("approval.review/record", lambda x: _approval(x, a, decision, {A_REASON: reason})),
        ("approval.review/message", lambda x: post(x, ("approval_decision", a, 0))),
    ]


def _request_approval_steps(a: int, m: int, t: int, ttl: int, summary: str) -> list[Step]:
    def record(f: Flat) -> Flat:
        member = f[MEMBERS][m]
        changes = {
            A_REQUESTER: m,
            A_INCARNATION: member[M_INCARNATION],
            A_TASK: t,
            A_PROFILE: member[M_PROFILE],
            A_DEADLINE: f[CLOCK] + ttl,
            A_SUMMARY: summary,
        }
        return _put(f, APPROVALS, a, _created("operation_approval", f[APPROVALS][a], changes))

    return [
        ("approval.request/record", record),
        ("approval.request/message", lambda f: post(f, ("approval_request", a, 0))),
    ]


def _consume_steps(a: int, m: int, changed: bool) -> list[Step]:
    def record(f: Flat) -> Flat:
        return _approval(f, a, "consumed", {A_CONSUMED_AT: f[CLOCK]})

    def execution(f: Flat) -> Flat:
        member = f[MEMBERS][m]
        changes = {
            E_REQUESTER: m,
            E_TASK: member[M_TASK],
            E_CHANGED: changed,
            E_PROFILE: member[M_PROFILE],
            E_ATTEMPTS: 1,
        }
        return _put(f, EXECUTIONS, a, _created("tool_execution", f[EXECUTIONS][a], changes))

    def call(f: Flat) -> Flat:
        ex = f[EXECUTIONS][a]
        return _put(f, EXECUTIONS, a, _set(ex, {E_WORLD: ex[E_WORLD] + 1}))

    def outcome(f: Flat) -> Flat:
        return _move(f, EXECUTIONS, "tool_execution", a, "succeeded")

    return [
        ("approval.consume/record", record),
        ("approval.consume/execution", execution),
        ("approval.consume/call", call),
        ("approval.consume/outcome", outcome),
    ]


# ---- plans (spec.model._ops.plan_ops) ----------------------------------------------------------


def _draft_plan(p: int, m: int, t: int) -> Callable[[Flat], Flat]:
    def record(f: Flat) -> Flat:
        changes = {P_REQUESTER: m, P_INCARNATION: f[MEMBERS][m][M_INCARNATION], P_TASK: t}
        return _put(f, PLANS, p, _created("plan_approval", f[PLANS][p], changes))

    return record


def _submit_plan_steps(p: int, ttl: int) -> list[Step]:
    def sent(f: Flat) -> Flat:
        return _plan(f, p, "pending", {P_DEADLINE: f[CLOCK] + ttl}) if f[PLANS][p][P_STATUS] == "draft" else f

    return [("plan.submit/message", lambda f: post(f, ("plan_request", p, 0))), ("plan.submit/record", sent)]


def _decide_steps(p: int, decision: str) -> list[Step]:
    changes = {
        P_APPROVED_BY: "lead" if decision == "approved" else "",
        P_REASON: "rejected" if decision == "rejected" else "",
    }
    return [
        ("plan.decide/record", lambda f: _plan(f, p, decision, changes)),
        ("plan.decide/message", lambda f: post(f, ("plan_decision", p, f[PLANS][p][P_RETRACTIONS]))),
    ]


def _retract_steps(p: int, target: str) -> list[Step]:
    def record(f: Flat) -> Flat:
        changes = {
            P_RETRACTIONS: f[PLANS][p][P_RETRACTIONS] + 1,
            P_APPROVED_BY: "",
            P_REASON: "rejected" if target == "rejected" else "",
        }
        return _plan(f, p, target, changes)

    return [("plan.retract/record", record), ("plan.retract/message", lambda f: _expire_decision(f, p))]


def _expire_decision(f: Flat, p: int) -> Flat:
    key = ("plan_decision", p, f[PLANS][p][P_RETRACTIONS] - 1)
    if message_status(f, key) == "pending":
        f = set_message(f, key, "expired")
    if f[PLANS][p][P_STATUS] == "rejected":
        f = post(f, ("plan_decision", p, f[PLANS][p][P_RETRACTIONS]))
    return f


def _deliver_decision_steps(p: int, key: tuple[str, int, int]) -> list[Step]:
    def deliver(f: Flat) -> Flat:
        if f[PLANS][p][P_STATUS] == "approved":
            return _put(f, PLANS, p, _set(f[PLANS][p], {P_DELIVERED: True}))
        return f

    return [
        ("plan.deliver_decision/record", deliver),
        ("plan.deliver_decision/message", lambda f: set_message(f, key, "delivered")),
    ]


def _start_plan_steps(p: int, ttl: int) -> list[Step]:
    def start(f: Flat) -> Flat:
        r = f[RUNS][p]
        if r[R_STATUS] == "":
            r = _created("plan_execution", r, {R_DEADLINE: f[CLOCK] + ttl})
        return _put(f, RUNS, p, _set(r, {R_STARTS: r[R_STARTS] + 1, R_CURSOR: 0}))

    def consumed(f: Flat) -> Flat:
        return _plan(f, p, "consumed") if f[PLANS][p][P_STATUS] == "approved" else f

    def acknowledge(f: Flat) -> Flat:
        key = ("plan_decision", p, f[PLANS][p][P_RETRACTIONS])
        return set_message(f, key, "acknowledged") if message_status(f, key) == "delivered" else f

    return [("plan.start/execution", start), ("plan.start/record", consumed), ("plan.start/message", acknowledge)]


def _plan_step(f: Flat, p: int) -> Flat:
    r = f[RUNS][p]
    return _put(f, RUNS, p, _set(r, {R_STEPS: (*r[R_STEPS], f"s{r[R_CURSOR] + 1}"), R_CURSOR: r[R_CURSOR] + 1}))


# ---- reconciliation ---------------------------------------------------------------------------


def _reconcile_approvals(f: Flat) -> Flat:
    for a, ap in enumerate(f[APPROVALS]):
        status = ap[A_STATUS]
        if status == "requested":
            f = post(f, ("approval_request", a, 0))
            if f[CLOCK] > ap[A_DEADLINE]:
                f = _approval(f, a, "expired", {A_REASON: "expired"})
        elif status in ("approved", "rejected"):
            f = post(f, ("approval_decision", a, 0))
        elif status == "consumed":
            f = _look_up_outcome(f, a)
    return f


def _look_up_outcome(f: Flat, a: int) -> Flat:
    """APR-8 (the model's ``_look_up_outcome``)."""
    ex = f[EXECUTIONS][a]
    if ex[E_STATUS] == "":
        ap = f[APPROVALS][a]
        started = _set(
            ex, {E_STATUS: "started", E_REQUESTER: ap[A_REQUESTER], E_TASK: ap[A_TASK], E_PROFILE: ap[A_PROFILE]}
        )
        ex = _moved("tool_execution", started, "failed")
    elif ex[E_STATUS] == "started":
        ex = _moved("tool_execution", ex, "succeeded" if ex[E_WORLD] >= ex[E_ATTEMPTS] else "failed")
    return _put(f, EXECUTIONS, a, ex)


def _reconcile_plans(f: Flat, ttl: int) -> Flat:
    """The model's ``_reconcile._plans`` (healthy)."""
    for p, plan in enumerate(f[PLANS]):
        status = plan[P_STATUS]
        if status == "draft" and message_status(f, ("plan_request", p, 0)):
            f = _plan(f, p, "pending", {P_DEADLINE: f[CLOCK] + ttl})
        elif status == "pending":
            f = post(f, ("plan_request", p, 0))
        elif status in ("approved", "rejected", "needs_revision"):
            f = post(f, ("plan_decision", p, plan[P_RETRACTIONS]))
        if plan[P_RETRACTIONS] and message_status(f, ("plan_decision", p, plan[P_RETRACTIONS] - 1)) == "pending":
            f = set_message(f, ("plan_decision", p, plan[P_RETRACTIONS] - 1), "expired")
        if f[PLANS][p][P_STATUS] == "approved" and f[RUNS][p][R_STATUS] != "":
            f = _plan(f, p, "consumed")
        if f[PLANS][p][P_STATUS] == "expired":
            f = owe(f, ("plan_abandoned", p, 0))
        if f[RUNS][p][R_STATUS] in ("completed", "rolled_back"):
            f = owe(f, ("plan_completion", p, 0))
    return f


def _reconcile_shutdowns(f: Flat) -> Flat:
    for slot, sd in enumerate(f[SHUTDOWNS]):
        status = sd[S_STATUS]
        if not status:
            continue
        target = sd[S_TARGET]
        member = f[MEMBERS][target]
        current = member[M_INCARNATION] == sd[S_INCARNATION]
        if status == "requested":
            f = post(f, ("shutdown_request", slot, 0))
        elif status in ("draining", "timed_out") and current and member[M_STATUS] == "running":
            f = _member(f, target, "draining", {M_ACCEPTING: False, M_SHUTDOWN: slot})
            f = cancel_own_requests(f, target)
        elif status in ("draining", "timed_out") and current and member[M_STATUS] == "draining":
            if member[M_SHUTDOWN] == slot:
                f = cancel_own_requests(f, target)
        elif status in ("draining", "timed_out") and (
            (current and member[M_STATUS] == "stopped") or member[M_INCARNATION] > sd[S_INCARNATION]
        ):  # stopped, or its incarnation has (the model's reconcile says why)
            f = owe(_shutdown(f, slot, "completed"), ("shutdown_ack", slot, 0))
        elif status == "completed":
            if current and member[M_STATUS] == "draining":
                f = _member(f, target, "stopped", {M_ACCEPTING: False, M_TASK: NONE})
            f = owe(f, ("shutdown_ack", slot, 0))
    return f


_VALID_DRAIN = _ACTIVE_SHUTDOWN | {"completed"}


def _reconcile_members(f: Flat) -> Flat:
    for m, member in enumerate(f[MEMBERS]):
        drains_for = member[M_SHUTDOWN]
        valid = drains_for != NONE and f[SHUTDOWNS][drains_for][S_STATUS] in _VALID_DRAIN
        if member[M_STATUS] == "draining" and not valid:
            f = _member(f, m, "unhealthy", {M_ACCEPTING: False})
        if f[MEMBERS][m][M_STATUS] == "unhealthy":
            f = owe(f, ("member_lost", m, member[M_INCARNATION]))
    return f


def _reconcile_tasks(f: Flat) -> Flat:
    for m, member in enumerate(f[MEMBERS]):
        t = member[M_TASK]
        if t != NONE:
            task = f[TASKS][t]
            if not (
                task[T_STATUS] == "claimed" and task[T_OWNER] == m and task[T_INCARNATION] == member[M_INCARNATION]
            ):
                f = _note_release(f, m)
                f = _put(f, MEMBERS, m, _set(member, {M_TASK: NONE, M_RELEASED: False}))
        elif member[M_STATUS] in ("running", "draining"):
            for t2, task in enumerate(f[TASKS]):
                if task[T_STATUS] == "claimed" and task[T_OWNER] == m and task[T_INCARNATION] == member[M_INCARNATION]:
                    f = _put(f, MEMBERS, m, _set(member, {M_TASK: t2, M_RELEASED: False}))
    for t, task in enumerate(f[TASKS]):
        if task[T_STATUS] == "suspended":
            f = owe(f, ("task_suspended", t, task[T_CLAIMS]))
    return f


def _note_release(f: Flat, m: int) -> Flat:
    """The model's ``_ops.note_release``: a release of member ``m`` cut short after its task write is
    noted on its request (SHD-3, SHD-7, REC-2)."""
    member = f[MEMBERS][m]
    slot, t = member[M_SHUTDOWN], member[M_TASK]
    if slot != NONE and t != NONE and member[M_RELEASED]:
        f = _put(f, SHUTDOWNS, slot, _set(f[SHUTDOWNS][slot], {S_RELEASED: t}))
    return f


__all__ = ["FlatModel", "decode", "encode", "relative", "supports", "unsupported"]
