"""The error codes a refusal may carry: for each operation the suite sends where the model refuses
it (the random programs' refused calls, the vectors' refused steps), every guard of the model's
precondition that fails names the codes that report it, and each guard has a name and clauses
(:data:`CLAUSES`) so that the vectors can send each guard's refusal alone (``_vectors.refusals``).

A refused call must say *why* it was refused, in the driver protocol's words (``error.code``, the
conformance README's list): a cancel of a consumed approval is ``cancel_refused`` (APR-9), not
``approval_not_active``; a claim of a task another member holds is ``task_taken``, not
``claim_refused``. Where several guards fail at once, an implementation may check them in any
order, so the reply may name any failing guard's code: :func:`expected_codes` is the union.

The guards are the model's (``spec/model/_ops.py``: ``task_ops``, ``member_ops``,
``consume_allowed``, ``approval_ops``, ``plan_ops``), restated here with the code each one maps to.
They are not a second definition of the steps: ``tests/test_refusal_codes.py`` walks the whole
state space of every pinned configuration that offers these operations and requires
:func:`expected_codes` to be empty exactly where the model offers the call, so this table cannot
drift from the model's guards without a failing test. For that test to see a guard of the model
change, the table calls none of the model's guard functions: what a member holds, whether a
shutdown request stands against it and whether it is alive are restated below from the clauses
(an outside review made the model's own shutdown guard ignore the incarnation, and the table,
which called it, agreed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from spec import open_states
from spec.model import Model
from spec.model._model import Action
from spec.model._state import NONE, State

_OPEN_SHUTDOWN = frozenset(open_states("shutdown_request"))


def _requested(s: State, m: int) -> bool:
    """MEM-1, XPR-1: an open shutdown request targets member ``m``'s current incarnation (a request
    of an earlier incarnation keeps nothing from the new one)."""
    incarnation = s.members[m].incarnation
    return any(
        sd.status in _OPEN_SHUTDOWN and sd.target == m and sd.target_incarnation == incarnation for sd in s.shutdowns
    )


def _holding(s: State, m: int) -> int:
    """TSK-1, XPR-1: the task member ``m`` names and holds claimed under its current incarnation, or NONE."""
    member = s.members[m]
    task = s.tasks[member.task] if member.task != NONE else None
    mine = task is not None and task.owner == m and task.owner_incarnation == member.incarnation
    return member.task if mine and task is not None and task.status == "claimed" else NONE


def _alive(s: State, m: int, incarnation: int) -> bool:
    """SHD-7: incarnation ``incarnation`` of member ``m`` still runs (running or draining)."""
    return s.members[m].incarnation == incarnation and s.members[m].status in ("running", "draining")


Guard = tuple[str, bool, frozenset[str]]
"""(the guard's name, whether it fails, the codes that report it)."""
BOUND: frozenset[str] = frozenset()
"""The codes of a guard that is one of the model's bounds, not the protocol's (the configuration's
shutdown requests used up, its last incarnation reached): a call refused by bounds alone may be
taken by an implementation, so it is never sent refused (:func:`sendable`)."""


def _codes(*names: str) -> frozenset[str]:
    return frozenset(names)


def _claim(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    member, task = s.members[a["member"]], s.tasks[a["task"]]
    # MEM-1: a member that is not running accepts no task (every such member is also not accepting)
    yield (
        "not_running",
        member.status != "running" or not member.accepting,
        _codes("claim_refused", "member_not_running"),
    )
    yield "holds_a_task", member.task != NONE, _codes("claim_refused")  # TSK-1: one task at a time
    yield (
        "shutdown_requested",
        _requested(s, a["member"]),
        _codes("claim_refused"),
    )  # MEM-1: a request targets it
    yield "task_not_pending", task.status != "pending", _codes("task_taken")  # TSK-1


def _suspend(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    t = _holding(s, a["member"])
    yield "holds_no_task", t == NONE, _codes("task_not_due", "not_claim_holder")  # SHD-9: it holds no task
    units = model.config.units
    due = t != NONE and units and s.clock >= s.tasks[t].claimed_at + model.config.unit_ticks
    yield "not_due", t != NONE and units and not due, _codes("task_not_due")  # SHD-9: its unit deadline is ahead
    yield "no_unit_deadlines", t != NONE and not units, BOUND  # the configuration never lets one pass
    job = s.jobs[a["member"]].status  # SHD-4: a job still runs, or was asked to stop and has not exited
    yield "job_running", job == "running", _codes("drain_not_ready", "member_busy")
    yield "job_stopping", job == "cancel_requested", _codes("drain_not_ready", "member_busy")


def _resume(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    yield "not_suspended", s.tasks[a["task"]].status != "suspended", _codes("task_not_due")  # SHD-9


def _inspect_task(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    t, task = a["task"], s.tasks[a["task"]]
    yield "not_flagged", task.status != "needs_inspection", _codes("task_not_due")  # SHD-7
    owner_live = task.owner != NONE and _alive(s, task.owner, task.owner_incarnation)
    yield "owner_live", owner_live, _codes("task_not_due")  # SHD-7: its member still runs
    # SHD-7, SHD-4: a job on it still runs, or was asked to stop and has not exited (a lapse stops neither)
    yield "job_running", any(job.status == "running" and job.task == t for job in s.jobs), _codes("task_not_due")
    stopping = any(job.status == "cancel_requested" and job.task == t for job in s.jobs)
    yield "job_stopping", stopping, _codes("task_not_due")


def _inspect_member(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    yield "not_unhealthy", s.members[a["member"]].status != "unhealthy", _codes("member_busy")  # SHD-7


def _consume(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    ap, m = s.approvals[a["slot"]], a["member"]
    member = s.members[m]
    yield "not_running", member.status != "running", _codes("member_not_running")  # XPR-2
    not_active = (
        _codes("approval_not_active", "approval_expired") if ap.status == "expired" else _codes("approval_not_active")
    )
    yield "not_approved", ap.status != "approved", not_active  # APR-5, APR-6
    yield "other_member", ap.requester != m, _codes("approval_other_agent")  # APR-5
    held = _holding(s, m)
    yield (
        "not_holding_its_task",
        held != ap.task,
        _codes("not_task_owner") if held == NONE else _codes("not_task_owner", "approval_other_task"),
    )
    yield "arguments_changed", bool(a["changed_arguments"]), _codes("arguments_changed")  # APR-2, APR-5
    yield "past_deadline", s.clock > ap.deadline, _codes("approval_expired")  # APR-5
    bound = member.has_tool and member.profile_version == ap.profile_version
    yield "profile_changed", not bound, _codes("tool_not_in_profile", "profile_changed")  # APR-7, XPR-4
    yield "earlier_incarnation", member.incarnation != ap.incarnation, _codes("stale_incarnation")  # XPR-1


def _cancel(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    ap = s.approvals[a["slot"]]
    yield "final", ap.status not in ("requested", "approved"), _codes("cancel_refused")  # APR-9
    yield "requester_not_running", s.members[ap.requester].status != "running", _codes("member_not_running")  # XPR-2


def _decide(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    plan = s.plans[a["slot"]]
    yield "not_pending", plan.status != "pending", _codes("plan_status_conflict")  # PLN-2
    yield "past_deadline", s.clock > plan.deadline, _codes("plan_expired")  # PLN-5


def _start(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    plan, run = s.plans[a["slot"]], s.runs[a["slot"]]
    requester = s.members[plan.requester]
    yield "requester_not_running", requester.status != "running", _codes("member_not_running")  # XPR-2
    started = run.status != "" or plan.status == "consumed"  # PLN-7: it started once (the two go together)
    conflict = _codes("plan_already_started", "plan_status_conflict") if started else _codes("plan_status_conflict")
    yield (
        "not_approved",
        plan.status != "approved" or run.status != "",
        conflict,
    )  # PLN-2, PLN-7: only an approved plan starts
    yield "not_delivered", not plan.delivered, _codes("decision_not_delivered")  # PLN-3
    yield "past_deadline", s.clock > plan.deadline, _codes("plan_expired")  # PLN-5
    yield "earlier_incarnation", plan.incarnation != requester.incarnation, _codes("stale_plan")  # XPR-1


def _request_shutdown(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    yield "target_not_running", s.members[a["member"]].status != "running", _codes("shutdown_refused")  # SHD-1
    yield "no_free_slot", all(sd.status for sd in s.shutdowns), BOUND  # the configuration's shutdowns are used up


def _stopped_and_settled(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    """A restart's and a retirement's: the member stopped, none of its jobs still running or on its
    way out (SHD-7: a stopped member's job asked to stop has not exited until it has)."""
    yield "not_stopped", s.members[a["member"]].status != "stopped", _codes("member_busy")
    job = s.jobs[a["member"]].status
    yield "job_running", job == "running", _codes("member_busy")
    yield "job_stopping", job == "cancel_requested", _codes("member_busy")


def _restart_member(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    yield from _stopped_and_settled(model, s, a)
    yield "past_max_incarnation", s.members[a["member"]].incarnation >= model.config.max_incarnation, BOUND


GUARDS: dict[str, Callable[[Model, State, dict[str, int]], Iterator[Guard]]] = {
    "task.claim": _claim,
    "task.suspend": _suspend,
    "task.resume": _resume,
    "task.inspect": _inspect_task,
    "member.inspect": _inspect_member,
    "approval.consume": _consume,
    "approval.cancel": _cancel,
    "plan.decide": _decide,
    "plan.start": _start,
    "shutdown.request": _request_shutdown,
    "member.restart": _restart_member,
    "member.retire": _stopped_and_settled,
}
"""The operations whose refusals the random programs send, each with its guards in the model's order."""


CLAUSES: dict[str, dict[str, tuple[str, ...]]] = {
    "task.claim": {
        name: ("MEM-1",) for name in ("not_running", "holds_a_task", "shutdown_requested", "task_not_pending")
    },
    "task.suspend": {
        "holds_no_task": ("SHD-9",),
        "not_due": ("SHD-9",),
        "no_unit_deadlines": (),
        "job_running": ("SHD-4", "SHD-9"),
        "job_stopping": ("SHD-4", "SHD-9"),
    },
    "task.resume": {"not_suspended": ("SHD-9",)},
    "task.inspect": {
        "not_flagged": ("SHD-7",),
        "owner_live": ("SHD-7",),
        "job_running": ("SHD-4", "SHD-7"),
        "job_stopping": ("SHD-4", "SHD-7"),
    },
    "member.inspect": {"not_unhealthy": ("SHD-7",)},
    "approval.consume": {
        "not_running": ("XPR-2",),
        "not_approved": ("APR-5", "APR-6"),
        "other_member": ("APR-5",),
        "not_holding_its_task": ("APR-5",),
        "arguments_changed": ("APR-2", "APR-5"),
        "past_deadline": ("APR-5",),
        "profile_changed": ("APR-7", "XPR-4"),
        "earlier_incarnation": ("XPR-1",),
    },
    "approval.cancel": {"final": ("APR-9",), "requester_not_running": ("APR-9", "XPR-2")},
    "plan.decide": {"not_pending": ("PLN-2",), "past_deadline": ("PLN-5",)},
    "shutdown.request": {"target_not_running": ("SHD-1",), "no_free_slot": ()},
    "member.restart": {
        "not_stopped": ("XPR-1",),
        "job_running": ("SHD-4", "XPR-1"),
        "job_stopping": ("SHD-4", "XPR-1"),
        "past_max_incarnation": (),
    },
    "member.retire": {"not_stopped": ("SHD-7",), "job_running": ("SHD-4",), "job_stopping": ("SHD-4",)},
    "plan.start": {
        "requester_not_running": ("XPR-2",),
        "not_approved": ("PLN-7",),
        "not_delivered": ("PLN-3",),
        "past_deadline": ("PLN-5",),
        "earlier_incarnation": ("XPR-1",),
    },
}
"""The clauses each guard stands for: a refusal that a guard alone decides, answered wrongly, is
reported under them (a consume with changed arguments under APR-2 and APR-5, not every clause
of the consume)."""


def clauses_of_refusal(model: Model, s: State, action: Action) -> tuple[str, ...]:
    """The clauses of every guard of ``action`` that fails in ``s``, in the table's order."""
    found = (CLAUSES[action.name][name] for name, _ in failing(model, s, action))
    return tuple(dict.fromkeys(clause for clauses in found for clause in clauses))


def expected_codes(model: Model, s: State, action: Action) -> frozenset[str]:
    """Every code a refusal of ``action`` in ``s`` may carry: the union over the failing guards;
    empty where no guard fails (the model offers the call) or only the model's bounds do.
    ``action`` must name records that exist."""
    codes: frozenset[str] = frozenset()
    for _, fails, names in GUARDS[action.name](model, s, dict(action.args)):
        if fails:
            codes |= names
    return codes


def failing(model: Model, s: State, action: Action) -> list[tuple[str, frozenset[str]]]:
    """(name, codes) of each guard of ``action`` that fails in ``s``, in the model's order."""
    return [(name, codes) for name, fails, codes in GUARDS[action.name](model, s, dict(action.args)) if fails]


def refusing(model: Model, s: State, action: Action) -> list[tuple[str, frozenset[str]]]:
    """(name, codes) of each guard of the protocol that refuses ``action`` in ``s`` (the model's
    bounds, :data:`BOUND`, aside: the protocol's guard refuses the call on any implementation, and
    its codes are the reply's); none where the call may not be sent refused at all."""
    if action.name == "task.suspend" and not model.config.units:
        # the model keeps no claim time where no unit deadline can pass (``claimed_at`` is 0): whether
        # the held task is due is unknown there, and an implementation may say so first
        return []
    return [(name, codes) for name, codes in failing(model, s, action) if codes]


def sendable(model: Model, s: State, action: Action) -> bool:
    """Whether the protocol refuses ``action`` in ``s`` (:func:`refusing`)."""
    return bool(refusing(model, s, action))


def candidates(s: State) -> Iterator[Action]:
    """Every call of an operation of :data:`GUARDS` on records that exist in ``s``, in one fixed order."""

    def act(name: str, **args: object) -> Action:
        return Action(name, tuple(sorted(args.items())))

    members, tasks = range(len(s.members)), range(len(s.tasks))
    for m in members:
        yield act("shutdown.request", member=m)
        yield act("member.restart", member=m)
        yield act("member.retire", member=m)
        yield act("task.suspend", member=m)
        yield act("member.inspect", member=m)
        for t in tasks:
            yield act("task.claim", member=m, task=t)
    for t in tasks:
        yield act("task.resume", task=t)
        for outcome in ("pending", "failed"):
            yield act("task.inspect", task=t, outcome=outcome)
    for slot, ap in enumerate(s.approvals):
        if ap.status:
            yield act("approval.cancel", slot=slot)
            for m in members:
                for changed in (False, True):
                    yield act("approval.consume", slot=slot, member=m, changed_arguments=changed)
    for slot, plan in enumerate(s.plans):
        if plan.status:
            yield act("plan.start", slot=slot)
            for decision in ("approved", "rejected", "needs_revision"):
                yield act("plan.decide", slot=slot, decision=decision)


def refusal_problem(operation: str, reply: dict[str, Any], codes: Iterable[str]) -> str | None:
    """What is wrong with ``reply`` to a call of ``operation`` the model refuses, or None: it must
    be an error, definite (nothing changed, DESIGN rule 8), whose code is one of ``codes`` (the
    failing guards' codes: the reply names a reason the model refuses it, in the protocol's words)."""
    if reply["type"] != "error":
        return f"{operation} was taken, but the model refuses it"
    if not reply["error"]["definite"]:
        return f"{operation} was refused, but not definite"
    wanted = sorted(codes)
    if reply["error"]["code"] not in wanted:
        why = " or ".join(wanted) or "nothing (conformance/_refusals.py lacks the model's guard)"
        return f"{operation} was refused as {reply['error']['code']}, but the model refuses it as {why}"
    return None
