"""The error codes a refusal may carry: for each operation the random programs send where the model
refuses it, every guard of the model's precondition that fails names the codes that report it.

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
drift from the model's guards without a failing test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from spec import safety
from spec.model import Model
from spec.model._model import Action
from spec.model._state import NONE, State

Guard = tuple[bool, frozenset[str]]
"""(whether the guard fails, the codes that report it)."""


def _codes(*names: str) -> frozenset[str]:
    return frozenset(names)


def _live(s: State, m: int, incarnation: int) -> bool:
    member = s.members[m]
    return member.incarnation == incarnation and member.status in ("running", "draining")


def _claim(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    member, task = s.members[a["member"]], s.tasks[a["task"]]
    # MEM-1: a member that is not running accepts no task (every such member is also not accepting)
    yield member.status != "running" or not member.accepting, _codes("claim_refused", "member_not_running")
    yield member.task != NONE, _codes("claim_refused")  # TSK-1: one task at a time
    yield model.active_shutdown(s, a["member"]), _codes("claim_refused")  # MEM-1: a request targets it
    yield task.status != "pending", _codes("task_taken")  # TSK-1


def _suspend(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    t = model.holds(s, a["member"])
    yield t == NONE, _codes("task_not_due", "not_claim_holder")  # SHD-9: it holds no task
    due = t != NONE and model.config.units and s.clock >= s.tasks[t].claimed_at + model.config.unit_ticks
    yield t != NONE and not due, _codes("task_not_due")  # SHD-9: its unit deadline has not passed
    yield model.job_busy(s, a["member"]), _codes("drain_not_ready", "member_busy")  # SHD-4: a job still runs


def _resume(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    yield s.tasks[a["task"]].status != "suspended", _codes("task_not_due")  # SHD-9


def _inspect_task(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    t, task = a["task"], s.tasks[a["task"]]
    yield task.status != "needs_inspection", _codes("task_not_due")  # SHD-7
    owner_live = task.owner != NONE and _live(s, task.owner, task.owner_incarnation)
    yield owner_live, _codes("task_not_due")  # SHD-7: its member still runs
    running = any(job.status in safety.BUSY_JOB and job.task == t for job in s.jobs)
    yield running, _codes("task_not_due")  # SHD-7, SHD-4: a job on it still runs


def _inspect_member(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    yield s.members[a["member"]].status != "unhealthy", _codes("member_busy")  # SHD-7


def _consume(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    ap, m = s.approvals[a["slot"]], a["member"]
    member = s.members[m]
    yield member.status != "running", _codes("member_not_running")  # XPR-2
    not_active = _codes("approval_not_active", "approval_expired") if ap.status == "expired" else _codes("approval_not_active")
    yield ap.status != "approved", not_active  # APR-5, APR-6
    yield ap.requester != m, _codes("approval_other_agent")  # APR-5
    held = model.holds(s, m)
    yield held != ap.task, _codes("not_task_owner") if held == NONE else _codes("not_task_owner", "approval_other_task")
    yield bool(a["changed_arguments"]), _codes("arguments_changed")  # APR-2, APR-5
    yield s.clock > ap.deadline, _codes("approval_expired")  # APR-5
    bound = member.has_tool and member.profile_version == ap.profile_version
    yield not bound, _codes("tool_not_in_profile", "profile_changed")  # APR-7, XPR-4
    yield member.incarnation != ap.incarnation, _codes("stale_incarnation")  # XPR-1


def _cancel(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    ap = s.approvals[a["slot"]]
    yield ap.status not in ("requested", "approved"), _codes("cancel_refused")  # APR-9
    yield s.members[ap.requester].status != "running", _codes("member_not_running")  # XPR-2


def _decide(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    plan = s.plans[a["slot"]]
    yield plan.status != "pending", _codes("plan_status_conflict")  # PLN-2
    yield s.clock > plan.deadline, _codes("plan_expired")  # PLN-5


def _start(model: Model, s: State, a: dict[str, int]) -> Iterator[Guard]:
    plan, run = s.plans[a["slot"]], s.runs[a["slot"]]
    requester = s.members[plan.requester]
    yield requester.status != "running", _codes("member_not_running")  # XPR-2
    started = run.status != "" or plan.status == "consumed"  # PLN-7: it started once (the two go together)
    conflict = _codes("plan_already_started", "plan_status_conflict") if started else _codes("plan_status_conflict")
    yield plan.status != "approved" or run.status != "", conflict  # PLN-2, PLN-7: only an approved plan starts
    yield not plan.delivered, _codes("decision_not_delivered")  # PLN-3
    yield s.clock > plan.deadline, _codes("plan_expired")  # PLN-5
    yield plan.incarnation != requester.incarnation, _codes("stale_plan")  # XPR-1


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
}
"""The operations whose refusals the random programs send, each with its guards in the model's order."""


def expected_codes(model: Model, s: State, action: Action) -> frozenset[str]:
    """Every code a refusal of ``action`` in ``s`` may carry: the union over the failing guards;
    empty where no guard fails (the model offers the call). ``action`` must name records that exist."""
    codes: frozenset[str] = frozenset()
    for fails, names in GUARDS[action.name](model, s, dict(action.args)):
        if fails:
            codes |= names
    return codes
