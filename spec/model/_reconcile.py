"""Reconciliation on restart: act on persisted state alone (docs/protocol.md §5, REC-1 … REC-3).

One pass over every store, row by row of the docs/protocol.md §5 table. Each repair is idempotent, so the
pass as a whole is (REC-1); the explorer checks that running it twice changes nothing.
"""

from __future__ import annotations

from ._model import ACTIVE_SHUTDOWN, Model, message_status, move, owe, post, set_message
from ._ops import _approval, _member, _plan, _shutdown, cancel_own_requests, note_release
from ._state import NONE, State, put, replace


def reconcile(model: Model, s: State) -> State:
    s = _approvals(model, s)
    s = _plans(model, s)
    s = _shutdowns(model, s)
    s = _members(model, s)
    s = _tasks(model, s)
    return s


def _redeliver(model: Model, s: State, key: tuple[str, int, int]) -> State:
    return s if model.broken("reconcile_skips_redelivery") else post(s, key)


def _approvals(model: Model, s: State) -> State:
    for a, ap in enumerate(s.approvals):
        if ap.status == "requested":
            s = _redeliver(model, s, ("approval_request", a, 0))
            if s.clock > ap.deadline:
                s = _approval(s, a, "expired", reason="expired")
        elif ap.status in ("approved", "rejected"):
            s = _redeliver(model, s, ("approval_decision", a, 0))
        elif ap.status == "consumed":
            s = _look_up_outcome(model, s, a)
    return s


def _look_up_outcome(model: Model, s: State, a: int) -> State:
    """APR-8: the outcome is looked up by idempotency key; the call is never repeated blindly."""
    ex = s.executions[a]
    if ex.status == "" and model.broken("recovery_forgets_unrun_call"):
        pass  # the call that never ran is left with no outcome at all
    elif ex.status == "":  # consumed, but the write-ahead record is missing: the call never ran
        ap = s.approvals[a]
        profile = ex.profile_version if model.broken("recovered_execution_unbound") else ap.profile_version
        ex = replace(ex, status="started", requester=ap.requester, task=ap.task, profile_version=profile)
        ex = move("tool_execution", ex, "failed")
    elif ex.status == "started" and model.broken("recovery_repeats_call"):
        ex = move("tool_execution", replace(ex, attempts=ex.attempts + 1, world_calls=ex.world_calls + 1), "succeeded")
    elif ex.status == "started" and model.broken("recovery_assumes_call_failed"):
        ex = move("tool_execution", ex, "failed")  # the outcome guessed, not looked up
    elif ex.status == "started":  # ask the tool by key whether the call happened
        ex = move("tool_execution", ex, "succeeded" if ex.world_calls >= ex.attempts else "failed")
    return replace(s, executions=put(s.executions, a, ex))


def _plans(model: Model, s: State) -> State:
    for p, plan in enumerate(s.plans):
        if plan.status == "draft" and message_status(s, ("plan_request", p, 0)):
            # the request went out before the crash: finish the submit
            keep = model.broken("reconciled_submit_without_deadline")
            s = _plan(s, p, "pending", deadline=plan.deadline if keep else s.clock + model.config.ttl_ticks)
        elif plan.status == "pending":
            s = _redeliver(model, s, ("plan_request", p, 0))
        elif plan.status in ("approved", "rejected", "needs_revision"):
            phase = 0 if model.broken("reconcile_wrong_decision_phase") else plan.retractions
            s = _redeliver(model, s, ("plan_decision", p, phase))
        if plan.retractions and message_status(s, ("plan_decision", p, plan.retractions - 1)) == "pending":
            s = set_message(s, ("plan_decision", p, plan.retractions - 1), "expired")  # PLN-6: retracted
        started = s.runs[p].status != "" or model.broken("reconcile_consumes_unstarted_plan")
        if s.plans[p].status == "approved" and started:
            s = _plan(s, p, "consumed")  # the executed marker exists: never start a second run
        if s.plans[p].status == "expired":
            s = owe(s, ("plan_abandoned", p, 0))
        if s.runs[p].status in ("completed", "rolled_back"):
            s = owe(s, ("plan_completion", p, 0))
    return s


def _shutdowns(model: Model, s: State) -> State:
    for slot, sd in enumerate(s.shutdowns):
        if not sd.status:
            continue
        member = s.members[sd.target]
        # XPR-1: a request speaks only for the incarnation it was made for
        current = member.incarnation == sd.target_incarnation or model.broken("reconcile_ignores_incarnation")
        if sd.status == "requested":
            s = _redeliver(model, s, ("shutdown_request", slot, 0))
        elif sd.status in ("draining", "timed_out") and current and member.status == "running":
            s = _member(s, sd.target, "draining", accepting=False, shutdown=slot)  # finish the member's half
            s = cancel_own_requests(s, sd.target)
        elif sd.status in ("draining", "timed_out") and current and member.status == "draining":
            # Resume the drain: SHD-2's last half may have been cut off by the crash. Its XPR-2
            # cancellation is idempotent; without it a draft plan of the member, which only a
            # running requester may withdraw, would never become final (INV-12).
            if member.shutdown == slot and not model.broken("resumed_drain_keeps_requests"):
                s = cancel_own_requests(s, sd.target)
        elif sd.status in ("draining", "timed_out") and current and member.status == "stopped":
            s = owe(_shutdown(s, slot, "completed"), ("shutdown_ack", slot, 0))
        elif sd.status in ("draining", "timed_out") and member.incarnation > sd.target_incarnation:
            # Its incarnation has stopped (a restart needs a stopped member), so its drain is over;
            # it never drains the new one (XPR-1), and it must not stay open forever (INV-12).
            s = owe(_shutdown(s, slot, "completed"), ("shutdown_ack", slot, 0))
        elif sd.status == "completed":
            if current and member.status == "draining":
                s = _member(s, sd.target, "stopped", accepting=False, task=NONE)
            s = owe(s, ("shutdown_ack", slot, 0))
    return s


def _members(model: Model, s: State) -> State:
    for m, member in enumerate(s.members):
        drains_for = member.shutdown
        valid = drains_for != NONE and s.shutdowns[drains_for].status in ACTIVE_SHUTDOWN | {"completed"}
        if member.status == "draining" and not valid:
            s = _member(s, m, "unhealthy", accepting=False)  # draining without its request: tell the Lead
        if s.members[m].status == "unhealthy" or model.broken("reconcile_reports_every_member_lost"):
            s = owe(s, ("member_lost", m, member.incarnation))
    return s


def _tasks(model: Model, s: State) -> State:
    for m, member in enumerate(s.members):
        t = member.task
        if t != NONE:
            task = s.tasks[t]
            if not (task.status == "claimed" and task.owner == m and task.owner_incarnation == member.incarnation):
                s = note_release(s, m)
                s = replace(s, members=put(s.members, m, replace(member, task=NONE, released=False)))
        elif member.status in ("running", "draining"):
            for t2, task in enumerate(s.tasks):
                if task.status == "claimed" and task.owner == m and task.owner_incarnation == member.incarnation:
                    s = replace(s, members=put(s.members, m, replace(member, task=t2, released=False)))
    for t, task in enumerate(s.tasks):
        if task.status == "suspended" and not model.broken("reconcile_forgets_suspension"):
            s = owe(s, ("task_suspended", t, task.claims))
    return s
