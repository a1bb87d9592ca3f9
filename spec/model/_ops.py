"""The model's operations, one generator per protocol family. Each yields (Action, write steps).

Step names are ``<operation>/<write step>`` (STYLE rule 4) and are listed in ``WRITE_STEPS``; the
reference harness uses the same names for its fault hook.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import safety
from ..redaction import redact
from ..secret_corpus import carrier
from ._model import (
    Action,
    Model,
    Operation,
    Step,
    create,
    message_status,
    move,
    note_deadline,
    note_unread_expiry,
    owe,
    post,
    probing,
    set_message,
)
from ._state import NONE, Message, State, put, replace
from ._time import tick_matters

RISK_TEXT = "deploy to staging: " + carrier("openai_key")
"""The risk summary the model's requester writes; it carries a secret that must be redacted."""


def A(name: str, **args: object) -> Action:
    return Action(name, tuple(sorted(args.items())))


# ---- tasks, jobs, members ----------------------------------------------------------------------


def task_ops(model: Model, s: State) -> Iterator[Operation]:
    for m, member in enumerate(s.members):
        free = member.status == "running" and member.accepting and member.task == NONE
        if free and (model.broken("claim_ignores_shutdown_request") or not model.active_shutdown(s, m)):
            for t, task in enumerate(s.tasks):
                if task.status == "pending":
                    track = model.config.units
                    keep = not model.broken("claim_drops_checkpoint")
                    yield A("task.claim", member=m, task=t), _claim_steps(m, t, track, keep)
        t = model.holds(s, m)
        if (
            t != NONE
            and (member.status == "running" or model.broken("draining_member_finishes_task"))
            and (not model.job_busy(s, m) or model.broken("finish_beside_busy_job"))
        ):
            for outcome in ("completed", "failed"):
                yield A("task.finish", member=m, outcome=outcome), _finish_task_steps(m, t, outcome)
        due = t != NONE and model.config.units and s.clock >= s.tasks[t].claimed_at + model.config.unit_ticks
        if due and (not model.job_busy(s, m) or model.broken("suspend_while_job_runs")):
            yield A("task.suspend", member=m), _suspend_steps(m, t, model.config.unit_ticks)
    for t, task in enumerate(s.tasks):
        if task.status == "suspended" and not model.broken("suspended_task_stuck"):
            yield A("task.resume", task=t), [("task.resume/task", lambda x, t=t: _task(x, t, "pending"))]
        owner_live = task.owner != NONE and _member_live(s, task.owner, task.owner_incarnation)
        if model.broken("inspect_treats_draining_as_lost"):
            owner_live = owner_live and s.members[task.owner].status == "running"
        # SHD-7, SHD-4: the lost member's processes are inspected first: none of its jobs on the
        # task still runs (a lapse does not stop them) before the task is re-pended or failed.
        running = any(job.status in safety.BUSY_JOB and job.task == t for job in s.jobs)
        if task.status == "needs_inspection" and not owner_live and not running:
            for target in ("pending", "failed"):
                yield (
                    A("task.inspect", task=t, outcome=target),
                    [("task.inspect/task", lambda x, t=t, g=target: _task(x, t, g, owner=NONE))],
                )


def _member_live(s: State, m: int, incarnation: int) -> bool:
    member = s.members[m]
    return member.incarnation == incarnation and member.status in ("running", "draining")


def _task(s: State, t: int, target: str, **changes: object) -> State:
    return replace(s, tasks=put(s.tasks, t, move("task", s.tasks[t], target, **changes)))


def note_release(s: State, m: int) -> State:
    """SHD-3, SHD-7, REC-2: a release of member ``m`` cut short after its task write (its member
    still names the task it released, ``Member.released``, whatever moved the task since) is noted
    on the request ``m`` drains for before anything clears the member's task; so no completion of
    the request (a finish, or the Lead's inspection) owes its ``shutdown_ack`` without the note
    (MSG-6). Shared by reconciliation and inspection. The request needs no test of its status: only
    the inspection ends a request while its member still names a task, and it notes first, so an
    ended request here already says so (were it not so, ``messages_agree_with_records`` would
    show the request and its ack apart)."""
    member = s.members[m]
    slot, t = member.shutdown, member.task
    if slot != NONE and t != NONE and member.released:
        s = replace(s, shutdowns=put(s.shutdowns, slot, replace(s.shutdowns[slot], released=t)))
    return s


def _member_task(s: State, m: int, task: int) -> State:
    """Member ``m`` names ``task``; every write of a member's task forgets its release (``Member.released``)."""
    return replace(s, members=put(s.members, m, replace(s.members[m], task=task, released=False)))


def _claim_steps(m: int, t: int, track_time: bool, keep_checkpoint: bool = True) -> list[Step]:
    def claim(s: State) -> State:
        task, member = s.tasks[t], s.members[m]
        claimed = move(
            "task",
            task,
            "claimed",
            owner=m,
            owner_incarnation=member.incarnation,
            claims=task.claims + 1,
            claimed_at=s.clock if track_time else 0,
            checkpoint=task.checkpoint and keep_checkpoint,
        )
        return replace(s, tasks=put(s.tasks, t, claimed))

    return [("task.claim/task", claim), ("task.claim/member", lambda s: _member_task(s, m, t))]


def _finish_task_steps(m: int, t: int, outcome: str) -> list[Step]:
    return [
        ("task.finish/task", lambda s: _task(s, t, outcome)),
        ("task.finish/member", lambda s: _member_task(s, m, NONE)),
    ]


def _suspend_steps(m: int, t: int, unit_ticks: int) -> list[Step]:
    def suspend(s: State) -> State:  # SHD-9: the unit deadline is the claim's time plus the unit
        note_deadline("task", "claimed", "suspended", s.tasks[t].claimed_at + unit_ticks, s.clock)
        return _task(s, t, "suspended")

    return [
        ("task.suspend/task", suspend),
        ("task.suspend/member", lambda s: _member_task(s, m, NONE)),
        ("task.suspend/outbox", lambda s: owe(s, ("task_suspended", t, s.tasks[t].claims))),
    ]


def job_ops(model: Model, s: State) -> Iterator[Operation]:
    if not model.config.jobs:
        return
    for m, job in enumerate(s.jobs):
        held = model.holds(s, m) != NONE or model.broken("job_without_task")
        if job.status == "" and s.members[m].status == "running" and held:
            for cancellable in (True, False):
                yield (
                    A("job.start", member=m, cancellable=cancellable),
                    [("job.start/job", lambda x, m=m, c=cancellable: _job_start(x, m, c))],
                )
        exits = {"running": ("succeeded", "failed"), "cancel_requested": ("succeeded", "failed", "cancelled")}
        for outcome in exits.get(job.status, ()):
            yield A("job.exit", member=m, outcome=outcome), [("job.exit/job", lambda x, m=m, o=outcome: _job(x, m, o))]


def _job_start(s: State, m: int, cancellable: bool) -> State:
    job = create("job", s.jobs[m], task=s.members[m].task, cancellable=cancellable)
    return replace(s, jobs=put(s.jobs, m, job))


def _job(s: State, m: int, target: str) -> State:
    return replace(s, jobs=put(s.jobs, m, move("job", s.jobs[m], target)))


def member_ops(model: Model, s: State) -> Iterator[Operation]:
    c = model.config
    for m, member in enumerate(s.members):
        if c.lapses and member.status in ("running", "draining"):
            steps = _lapse_steps(m, model.broken("lapse_flags_other_task"))
            yield (
                A("member.lapse", member=m),
                [steps[0], steps[2], steps[1]] if model.broken("lapse_owes_before_flagging") else steps,
            )
        if member.status == "unhealthy":
            yield A("member.inspect", member=m), _inspect_steps(model, m)
        if member.status == "stopped" and not model.job_busy(s, m):
            if member.incarnation < c.max_incarnation:
                bump = 0 if model.broken("restart_keeps_incarnation") else 1
                keep = model.broken("restart_keeps_shutdown")
                restart_step = ("member.restart/member", lambda x, m=m, b=bump, k=keep: _restart(x, m, b, k))
                yield A("member.restart", member=m), [restart_step]
            yield A("member.retire", member=m), [("member.retire/member", lambda x, m=m: _member(x, m, "retired"))]
        if s.profile_changes < c.profile_changes and member.status != "retired":
            for keep_tool in (True, False):
                yield (
                    A("profile.change", member=m, keep_tool=keep_tool),
                    [("profile.change/profile", lambda x, m=m, k=keep_tool: _profile(model, x, m, k))],
                )


def _member(s: State, m: int, target: str, **changes: object) -> State:
    if "task" in changes:
        changes["released"] = False
    return replace(s, members=put(s.members, m, move("member", s.members[m], target, **changes)))


def _restart(s: State, m: int, bump: int = 1, keep_shutdown: bool = False) -> State:
    member = s.members[m]
    shutdown = member.shutdown if keep_shutdown else NONE  # mutant restart_keeps_shutdown: the old request stays
    return _member(s, m, "running", incarnation=member.incarnation + bump, accepting=True, shutdown=shutdown, task=NONE)


def _profile(model: Model, s: State, m: int, keep_tool: bool) -> State:
    member = s.members[m]
    same = not keep_tool and model.broken("profile_removal_keeps_version")  # the tool gone, the version not raised
    version = member.profile_version + (0 if same else 1)
    changed = replace(member, profile_version=version, has_tool=keep_tool, profile_edits=member.profile_edits + 1)
    return replace(s, members=put(s.members, m, changed), profile_changes=s.profile_changes + 1)


def _flag_task(s: State, m: int, anyone: bool = False) -> State:
    member = s.members[m]
    for t, task in enumerate(s.tasks):
        mine = task.owner == m and task.owner_incarnation == member.incarnation
        if task.status == "claimed" and (mine or anyone):
            s = _task(s, t, "needs_inspection")
    return s


def _lapse_steps(m: int, anyone: bool = False) -> list[Step]:
    """SHD-10: the heartbeat lapsed; the team is told on the member's behalf, its claims flagged
    (``anyone``: the mutant ``lapse_flags_other_task`` flags every claimed task)."""
    return [
        ("member.lapse/member", lambda s: _member(s, m, "unhealthy", accepting=False)),
        ("member.lapse/task", lambda s: _flag_task(s, m, anyone)),
        ("member.lapse/outbox", lambda s: owe(s, ("member_lost", m, s.members[m].incarnation))),
    ]


def _inspect_steps(model: Model, m: int) -> list[Step]:
    """SHD-7: after inspection the member is stopped; every shutdown it drained for completes (INV-4).

    Its own open requests end as a drain ends them (XPR-2), with reason ``crashed`` (SHD-10): a
    draft plan, which only its running requester may submit or withdraw (PLN-11), would otherwise
    never become final (INV-12).
    """

    def requests(s: State) -> State:
        if model.broken("inspection_keeps_requests"):
            return s
        reason = "member_draining" if model.broken("inspection_cancels_as_draining") else "crashed"
        return cancel_own_requests(s, m, reason=reason)

    def complete_shutdown(s: State) -> State:
        if model.broken("inspection_leaves_drain_open"):
            return s
        # Every drain of this incarnation ends, not only the one its record names: a crash between
        # begin_drain's record and member writes leaves a draining request the member never noted,
        # which nothing else would end once the member is restarted (INV-12).
        incarnation = s.members[m].incarnation
        for slot, sd in enumerate(s.shutdowns):
            mine = sd.target == m and sd.target_incarnation == incarnation
            if mine and sd.status in ("draining", "timed_out"):
                s = _shutdown(s, slot, "completed")
                s = owe(s, ("shutdown_ack", slot, 0))
        return s

    return [
        ("member.inspect/task", lambda s: _flag_task(s, m)),
        ("member.inspect/requests", requests),
        ("member.inspect/record", lambda s: note_release(s, m)),
        ("member.inspect/member", lambda s: _member(s, m, "stopped", accepting=False, task=NONE)),
        ("member.inspect/shutdown", complete_shutdown),
    ]


# ---- shutdown ------------------------------------------------------------------------------------


def _shutdown(s: State, slot: int, target: str, **changes: object) -> State:
    record = s.shutdowns[slot]
    note_deadline("shutdown_request", record.status, target, record.deadline, s.clock)
    return replace(s, shutdowns=put(s.shutdowns, slot, move("shutdown_request", record, target, **changes)))


def shutdown_ops(model: Model, s: State) -> Iterator[Operation]:
    free = [i for i, sd in enumerate(s.shutdowns) if sd.status == ""]
    if free:
        for m, member in enumerate(s.members):
            if member.status == "running":
                from_claim = model.broken("shutdown_deadline_from_claim")
                steps = _request_shutdown_steps(free[0], m, model.config.ttl_ticks, from_claim)
                yield A("shutdown.request", member=m), steps
    for slot, sd in enumerate(s.shutdowns):
        if sd.status == "requested":
            yield (
                A("shutdown.cancel", slot=slot),
                [("shutdown.cancel/record", lambda x, i=slot: _shutdown(x, i, "cancelled", reason="cancelled"))],
            )
        if message_status(s, ("shutdown_request", slot, 0)) == "pending":
            yield A("shutdown.begin_drain", slot=slot), _begin_drain_steps(model, s, slot)
        target = s.members[sd.target]
        # SHD-7, XPR-1: the last rung only for the drain the member runs now, for this very request
        if sd.status == "timed_out" and target.status == "draining" and target.shutdown == slot:
            yield A("shutdown.force_terminate", slot=slot), _force_steps(sd.target)
    for m, member in enumerate(s.members):
        drains = member.status == "draining" and member.shutdown != NONE
        if drains and s.shutdowns[member.shutdown].status in ("draining", "timed_out"):
            yield from _drain_ops(model, s, m, member.shutdown)


def _request_shutdown_steps(slot: int, m: int, ttl: int, from_claim: bool = False) -> list[Step]:
    def record(s: State) -> State:
        t = s.members[m].task
        start = s.tasks[t].claimed_at if from_claim and t != NONE else s.clock  # mutant: the unit's start
        sd = create(
            "shutdown_request",
            s.shutdowns[slot],
            target=m,
            target_incarnation=s.members[m].incarnation,
            deadline=start + ttl,
        )
        return replace(s, shutdowns=put(s.shutdowns, slot, sd))

    return [
        ("shutdown.request/record", record),
        ("shutdown.request/message", lambda s: post(s, ("shutdown_request", slot, 0))),
    ]


def _begin_drain_steps(model: Model, s: State, slot: int) -> list[Step]:
    """SHD-2 on delivery of shutdown_request; the dedup result is recorded last (MSG-5)."""
    sd = s.shutdowns[slot]
    m = sd.target
    member = s.members[m]
    fenced = sd.target_incarnation == member.incarnation or model.broken("stale_incarnation_accepted")
    late = 1 if model.broken("begin_drain_refused_at_deadline") else 0  # refused at the deadline itself
    fresh = sd.status == "requested" and s.clock + late <= sd.deadline and member.status == "running"
    resuming = sd.status == "draining" and member.shutdown in (NONE, slot)
    deliver = ("shutdown.begin_drain/message", lambda x: set_message(x, ("shutdown_request", slot, 0), "delivered"))
    if not (fenced and (fresh or resuming)):
        return [deliver]  # refused: recorded, nothing else changes (XPR-1, SHD-2)

    def record(x: State) -> State:
        return _shutdown(x, slot, "draining") if x.shutdowns[slot].status == "requested" else x

    keeps = model.broken("begin_drain_keeps_accepting")

    def member_half(x: State) -> State:
        if x.members[m].status == "running":
            named = NONE if model.broken("begin_drain_forgets_request") else slot
            return _member(x, m, "draining", accepting=keeps, shutdown=named)
        return x

    return [
        ("shutdown.begin_drain/record", record),
        ("shutdown.begin_drain/member", member_half),
        (
            "shutdown.begin_drain/cancel_requests",
            lambda x: cancel_own_requests(
                x,
                m,
                reason="cancelled" if model.broken("drain_cancels_as_cancelled") else "member_draining",
                everyone=model.broken("drain_cancels_others_requests"),
            ),
        ),
        deliver,
    ]


def cancel_own_requests(s: State, m: int, reason: str = "member_draining", everyone: bool = False) -> State:
    """XPR-2: a draining member's requested approvals are cancelled, its pending plans withdrawn
    (drafts too: nobody else could end them). Inspection of a lost member does the same.
    ``everyone``: the mutant ``drain_cancels_others_requests``, which ends every member's."""
    incarnation = s.members[m].incarnation
    for a, approval in enumerate(s.approvals):
        mine = approval.requester == m and approval.incarnation == incarnation
        if approval.status == "requested" and (mine or everyone):
            s = replace(
                s,
                approvals=put(s.approvals, a, move("operation_approval", approval, "cancelled", reason=reason)),
            )
    for p, plan in enumerate(s.plans):
        if plan.status in ("draft", "pending") and plan.requester == m and plan.incarnation == incarnation:
            s = replace(s, plans=put(s.plans, p, move("plan_approval", plan, "withdrawn", reason=reason)))
    return s


def _drain_ops(model: Model, s: State, m: int, slot: int) -> Iterator[Operation]:
    """SHD-3 drain pass, SHD-5 finish."""
    job = s.jobs[m]
    if job.status == "running" and (job.cancellable or model.broken("drain_signals_non_cancellable")):

        def cancel(x: State) -> State:
            return _job(x, m, "cancel_requested")

        def waited(x: State) -> State:
            if model.broken("drain_forgets_waited"):
                return x
            sd = x.shutdowns[slot]
            return replace(x, shutdowns=put(x.shutdowns, slot, replace(sd, waited=tuple(sorted({*sd.waited, m})))))

        # AUD-2: the job is noted on the request before it is asked, so that a crash between the
        # two leaves a request naming a job still running (the next pass asks it), never a job
        # asked that no request names
        yield (
            A("shutdown.drain_jobs", member=m),
            [("shutdown.drain_jobs/record", waited), ("shutdown.drain_jobs/jobs", cancel)],
        )
    settled = not model.job_busy(s, m)
    if model.broken("release_while_cancel_requested"):  # a job asked to cancel taken as stopped
        settled = s.jobs[m].status != "running"
    t = s.members[m].task
    if t != NONE and (settled or model.broken("release_before_jobs_settle")):
        yield (
            A("shutdown.release_task", member=m),
            _release_steps(
                m,
                t,
                slot,
                model.broken("release_notes_before_task"),
                not model.broken("release_drops_checkpoint"),
                not model.broken("release_unnoted"),
            ),
        )
    if settled and (t == NONE or model.broken("finish_keeps_task")):
        yield (
            A("shutdown.finish", member=m),
            [
                ("shutdown.finish/record", lambda x: _shutdown(x, slot, "completed")),
                (
                    "shutdown.finish/member",
                    (lambda x: x)
                    if model.broken("finish_leaves_member_draining")
                    else (lambda x: _member(x, m, "stopped", accepting=False)),
                ),
                ("shutdown.finish/outbox", lambda x: owe(x, ("shutdown_ack", slot, 0))),
                ("shutdown.finish/message", lambda x: _acknowledge_request(x, slot)),
            ],
        )


def _acknowledge_request(s: State, slot: int) -> State:
    """The drained member acknowledges the shutdown_request; this completes nothing (MSG-3)."""
    key = ("shutdown_request", slot, 0)
    return set_message(s, key, "acknowledged") if message_status(s, key) == "delivered" else s


def _release_steps(
    m: int, t: int, slot: int, broken_order: bool = False, keep: bool = True, noted: bool = True
) -> list[Step]:
    """SHD-3, TSK-3: the task back to pending, then noted on the request, then off the member.

    The member's write is last: while the member holds the task no finish can complete the
    request (SHD-5), so the request's ``released`` is written before any finish reads it, and the
    ``shutdown_ack`` a finish owes agrees with the record (MSG-3). With the member written before
    the record, a finish by a second process of the member between the two completed the request
    with nothing released, and the release then noted its task on the completed request. The task's
    write comes first: a request never names a task its member still holds (SHD-3's
    ``released_task_left_its_member``; the mutant ``release_notes_before_task``). A crash before
    the member's write leaves the release to be run again by the next pass (the task's write does
    nothing twice), or a reconciliation (REC-2) or the Lead's inspection (SHD-7) notes the release
    on the request (:func:`note_release`) and then clears the member's task."""

    def release(x: State) -> State:
        task = x.tasks[t]
        if task.status == "claimed" and task.owner == m:
            x = _task(x, t, "pending", owner=NONE, checkpoint=True if keep else x.tasks[t].checkpoint)
            # the reference's ``released`` event in the task's history, seen from the member
            return replace(x, members=put(x.members, m, replace(x.members[m], released=True)))
        return x

    def record(x: State) -> State:
        sd = x.shutdowns[slot]
        return replace(x, shutdowns=put(x.shutdowns, slot, replace(sd, released=t)))

    steps: list[Step] = [
        ("shutdown.release_task/task", release),
        ("shutdown.release_task/record", record),
        ("shutdown.release_task/member", lambda x: _member_task(x, m, NONE)),
    ]
    if broken_order:  # mutant release_notes_before_task: the note first
        steps[0], steps[1] = steps[1], steps[0]
    if not noted:  # mutant release_unnoted: no note at all
        del steps[1]
    return steps


def _force_steps(m: int) -> list[Step]:
    """SHD-7's last rung: terminate the member's jobs and process; its task needs inspection."""

    def terminate_job(x: State) -> State:
        return _job(x, m, "cancelled") if x.jobs[m].status in ("running", "cancel_requested") else x

    return [
        ("shutdown.force_terminate/jobs", terminate_job),
        ("shutdown.force_terminate/task", lambda x: _flag_task(x, m)),
        ("shutdown.force_terminate/member", lambda x: _member(x, m, "unhealthy", accepting=False)),
        ("shutdown.force_terminate/outbox", lambda x: owe(x, ("member_lost", m, x.members[m].incarnation))),
    ]


# ---- operation approval --------------------------------------------------------------------------


def _approval(s: State, a: int, target: str, **changes: object) -> State:
    record = s.approvals[a]
    note_deadline("operation_approval", record.status, target, record.deadline, s.clock)
    return replace(s, approvals=put(s.approvals, a, move("operation_approval", record, target, **changes)))


def approval_ops(model: Model, s: State) -> Iterator[Operation]:
    free = [i for i, ap in enumerate(s.approvals) if ap.status == ""]
    for m, member in enumerate(s.members):
        t = model.holds(s, m)
        running = member.status == "running" or model.broken("draining_member_requests")
        bound = t != NONE or model.broken("request_without_task")
        if free and bound and running and (member.has_tool or model.broken("request_ignores_profile")):
            raw = model.broken("secret_not_redacted")
            yield A("approval.request", member=m), _request_approval_steps(free[0], m, t, model.config.ttl_ticks, raw)
    late = 1 if model.broken("review_refused_at_deadline") else 0  # refused at the deadline itself
    for a, ap in enumerate(s.approvals):
        if ap.status == "requested" and (s.clock + late <= ap.deadline or model.broken("review_after_deadline")):
            for decision in ("approved", "rejected"):
                steps: list[Step] = [
                    ("approval.review/record", lambda x, a=a, d=decision: _review(x, a, d)),
                    ("approval.review/message", lambda x, a=a: post(x, ("approval_decision", a, 0))),
                ]
                if model.broken("decision_before_record"):  # MSG-6's write order reversed
                    steps.reverse()
                yield A("approval.review", slot=a, decision=decision), steps
        requester = s.members[ap.requester] if ap.status else None
        retry_ok = (
            requester is not None
            and requester.status == "running"
            and requester.has_tool
            and requester.profile_version == ap.profile_version
        )  # else a different request (STO-2)
        if ap.status == "requested" and retry_ok and model.holds(s, ap.requester) == ap.task:
            resend = _post_copy if model.broken("retry_new_message_id") else _post_request
            yield A("approval.retry", slot=a), [("approval.request/message", lambda x, a=a, f=resend: f(x, a))]
        cancellable = (
            ("requested", "approved", "consumed") if model.broken("cancel_after_consume") else ("requested", "approved")
        )
        if ap.status in cancellable and s.members[ap.requester].status == "running":
            why = "rejected" if model.broken("cancel_recorded_as_rejected") else "cancelled"
            yield (
                A("approval.cancel", slot=a),
                [("approval.cancel/record", lambda x, a=a, w=why: _approval(x, a, "cancelled", reason=w))],
            )
        for m in range(len(s.members)):
            for changed in (False, True):
                if consume_allowed(model, s, a, m, changed):
                    yield (
                        A("approval.consume", slot=a, member=m, changed_arguments=changed),
                        _consume_steps(a, m, changed, _consume_order(model)),
                    )


def _review(s: State, a: int, decision: str) -> State:
    return _approval(s, a, decision, reason="rejected" if decision == "rejected" else "")


def _post_request(s: State, a: int) -> State:
    """APR-1 retried with the same tool_call_id: same protocol id, same message id (MSG-4)."""
    return post(s, ("approval_request", a, 0))


def _post_copy(s: State, a: int) -> State:
    """Mutant retry_new_message_id: the retry's message gets a fresh id (at most one extra copy)."""
    if any(msg.copy for msg in s.bus if msg.key == ("approval_request", a, 0)):
        return s
    return replace(s, bus=tuple(sorted([*s.bus, Message(("approval_request", a, 0), copy=1)])))


def _request_approval_steps(a: int, m: int, t: int, ttl: int, raw_summary: bool) -> list[Step]:
    summary = RISK_TEXT if raw_summary else redact(RISK_TEXT)

    def record(s: State) -> State:
        member = s.members[m]
        ap = create(
            "operation_approval",
            s.approvals[a],
            requester=m,
            incarnation=member.incarnation,
            task=t,
            profile_version=member.profile_version,
            deadline=s.clock + ttl,
            risk_summary=summary,
        )
        return replace(s, approvals=put(s.approvals, a, ap))

    return [
        ("approval.request/record", record),
        ("approval.request/message", lambda s: post(s, ("approval_request", a, 0))),
    ]


def consume_allowed(model: Model, s: State, a: int, m: int, changed: bool) -> bool:
    """APR-5's checks, each one removable by exactly one mutant (DESIGN rule 7)."""
    ap, member = s.approvals[a], s.members[m]
    allowed = ("running", "draining") if model.broken("draining_member_consumes") else ("running",)
    if ap.status == "" or member.status not in allowed:
        return False
    # the profile the approval was bound to (a changed profile bumps the version, kept tool or not)
    bound = member.profile_version == ap.profile_version or model.broken("consume_ignores_profile_version")
    checks = (
        ("consume_unapproved", ap.status == "approved"),
        ("consume_by_other_member", ap.requester == m),
        ("consume_without_task", model.holds(s, m) == ap.task),
        ("consume_without_digest_check", not changed),
        ("consume_after_deadline", s.clock <= ap.deadline),
        ("approval_grants_capability", member.has_tool and bound),
        ("consume_ignores_incarnation", member.incarnation == ap.incarnation),
    )
    return all(ok or model.broken(name) for name, ok in checks)


_CONSUME_ORDERS = {  # the consume's steps: record 0, execution 1 (ahead of the call, APR-6), call 2, outcome 3 (APR-8)
    "consume_execution_first": (1, 0, 2, 3),
    "call_before_execution_record": (0, 2, 1, 3),
    "outcome_before_call": (0, 1, 3, 2),
}
"""The mutants that take the consume's steps in another order, and the order each takes."""


def _consume_order(model: Model) -> tuple[int, ...]:
    """The order of the consume's steps: theirs, or a mutant's of :data:`_CONSUME_ORDERS`."""
    return next((order for name, order in _CONSUME_ORDERS.items() if model.broken(name)), (0, 1, 2, 3))


def _consume_steps(a: int, m: int, changed: bool, order: tuple[int, ...] = (0, 1, 2, 3)) -> list[Step]:
    def record(s: State) -> State:
        return _approval(s, a, "consumed", consumed_at=s.clock)

    def execution(s: State) -> State:
        ex = create(
            "tool_execution",
            s.executions[a],
            requester=m,
            task=s.members[m].task,
            changed_arguments=changed,
            profile_version=s.members[m].profile_version,
            attempts=1,
        )
        return replace(s, executions=put(s.executions, a, ex))

    def call(s: State) -> State:
        ex = s.executions[a]
        return replace(s, executions=put(s.executions, a, replace(ex, world_calls=ex.world_calls + 1)))

    def outcome(s: State) -> State:
        return replace(s, executions=put(s.executions, a, move("tool_execution", s.executions[a], "succeeded")))

    steps: list[Step] = [
        ("approval.consume/record", record),
        ("approval.consume/execution", execution),
        ("approval.consume/call", call),
        ("approval.consume/outcome", outcome),
    ]
    return [steps[i] for i in order]


# ---- plan approval ------------------------------------------------------------------------------


def _plan(s: State, p: int, target: str, **changes: object) -> State:
    record = s.plans[p]
    note_deadline("plan_approval", record.status, target, record.deadline, s.clock)
    return replace(s, plans=put(s.plans, p, move("plan_approval", record, target, **changes)))


def _complete(p: int) -> Operation:
    """``plan.complete`` of plan ``p``: its execution completed, then its ``plan_completion`` owed
    (PLN-10)."""
    return (
        A("plan.complete", slot=p),
        [
            ("plan.complete/execution", lambda x: _run(x, p, "completed")),
            ("plan.complete/outbox", lambda x: owe(x, ("plan_completion", p, 0))),
        ],
    )


def _run(s: State, p: int, target: str, **changes: object) -> State:
    return replace(s, runs=put(s.runs, p, move("plan_execution", s.runs[p], target, **changes)))


def plan_ops(model: Model, s: State) -> Iterator[Operation]:
    free = [i for i, plan in enumerate(s.plans) if plan.status == ""]
    for m, member in enumerate(s.members):
        t = model.holds(s, m)
        if free and t != NONE and (member.status == "running" or model.broken("draining_member_drafts_plan")):
            yield A("plan.draft", member=m), _draft_plan_steps(free[0], m, t)
    for p, plan in enumerate(s.plans):
        submits = s.members[plan.requester].status == "running" or model.broken("draining_member_submits_plan")
        if plan.status == "draft" and submits:
            yield A("plan.submit", slot=p), _submit_plan_steps(p, model.config.ttl_ticks)
        yield from _plan_decisions(model, s, p)
        yield from _plan_requester(model, s, p)
        yield from _plan_run(model, s, p)


def _draft_plan_steps(p: int, m: int, t: int) -> list[Step]:
    def record(s: State) -> State:
        plan = create("plan_approval", s.plans[p], requester=m, incarnation=s.members[m].incarnation, task=t)
        return replace(s, plans=put(s.plans, p, plan))

    return [("plan.draft/record", record)]


def _submit_plan_steps(p: int, ttl: int) -> list[Step]:
    """PLN-1, MSG-6: the request message with its stable id first, then the record goes pending;
    ttl_seconds runs from the submission (PLN-5)."""

    def sent(s: State) -> State:
        return _plan(s, p, "pending", deadline=s.clock + ttl) if s.plans[p].status == "draft" else s

    return [
        ("plan.submit/message", lambda s: post(s, ("plan_request", p, 0))),
        ("plan.submit/record", sent),
    ]


def _plan_decisions(model: Model, s: State, p: int) -> Iterator[Operation]:
    plan = s.plans[p]
    if plan.status == "pending" and s.clock <= plan.deadline:
        for decision in ("approved", "rejected", "needs_revision"):
            yield (
                A("plan.decide", slot=p, decision=decision),
                [
                    (
                        "plan.decide/record",
                        lambda x, d=decision: _plan(
                            x,
                            p,
                            d,
                            approved_by="lead" if d == "approved" or model.broken("decision_names_approver") else "",
                            reason="rejected" if d == "rejected" else "",
                        ),
                    ),
                    ("plan.decide/message", lambda x: post(x, ("plan_decision", p, x.plans[p].retractions))),
                ],
            )
    undelivered = not plan.delivered or model.broken("retract_after_delivery")
    if plan.status == "approved" and undelivered and plan.retractions < model.config.max_retractions:
        for target in ("pending", "rejected"):
            yield (
                A("plan.retract", slot=p, to=target),
                [
                    (
                        "plan.retract/record",
                        lambda x, g=target: _plan(
                            x,
                            p,
                            g,
                            retractions=x.plans[p].retractions + 1,
                            approved_by="",
                            reason="rejected" if g == "rejected" else "",
                        ),
                    ),
                    ("plan.retract/message", lambda x: _expire_decision(x, p)),
                ],
            )
    key = ("plan_decision", p, plan.retractions)
    if message_status(s, key) == "pending":

        def deliver(x: State) -> State:
            if x.plans[p].status == "approved":
                return replace(x, plans=put(x.plans, p, replace(x.plans[p], delivered=True)))
            return x

        yield (
            A("plan.deliver_decision", slot=p),
            [
                ("plan.deliver_decision/record", deliver),
                ("plan.deliver_decision/message", lambda x: set_message(x, key, "delivered")),
            ],
        )


def _expire_decision(s: State, p: int) -> State:
    """PLN-6: the undelivered decision is withdrawn; a retraction into rejected is a new decision."""
    key = ("plan_decision", p, s.plans[p].retractions - 1)
    if message_status(s, key) == "pending":
        s = set_message(s, key, "expired")
    if s.plans[p].status == "rejected":
        s = post(s, ("plan_decision", p, s.plans[p].retractions))
    return s


def _plan_requester(model: Model, s: State, p: int) -> Iterator[Operation]:
    plan, run = s.plans[p], s.runs[p]
    requester_running = plan.status != "" and s.members[plan.requester].status == "running"
    reason = "" if model.broken("withdraw_without_reason") else "cancelled"
    if plan.status in ("draft", "pending", "approved") and requester_running:
        yield (
            A("plan.withdraw", slot=p),
            [("plan.withdraw/record", lambda x, r=reason: _plan(x, p, "withdrawn", reason=r))],
        )
    delivered = plan.delivered or model.broken("start_before_delivery")
    # XPR-1: a plan approved for an older incarnation of its requester (lost, inspected and
    # restarted since) is not started by the new one; it expires, or the new one withdraws it.
    same = plan.incarnation == s.members[plan.requester].incarnation
    current = plan.status != "" and (same or model.broken("plan_start_ignores_incarnation"))
    late = 1 if model.broken("start_refused_at_deadline") else 0  # refused at the deadline itself
    in_time = s.clock + late <= plan.deadline or model.broken("start_after_deadline")
    startable = plan.status == "approved" and delivered and in_time and run.status == "" and current
    duplicate = (
        model.broken("execute_plan_twice") and plan.status == "consumed" and run.status == "running" and run.starts < 2
    )  # a second delivery of the decision starts the steps again
    if requester_running and (startable or duplicate):
        ttl = model.config.ttl_ticks

        def start(x: State) -> State:
            r = x.runs[p]
            if r.status == "":  # PLN-7: the executed marker, written before the first step
                # PLN-9: a whole ttl from the start (the mutant: the plan's own deadline, inherited)
                inherited = model.broken("run_inherits_plan_deadline")
                r = create("plan_execution", r, deadline=x.plans[p].deadline if inherited else x.clock + ttl)
            return replace(x, runs=put(x.runs, p, replace(r, starts=r.starts + 1, cursor=0)))

        def consumed(x: State) -> State:
            return _plan(x, p, "consumed") if x.plans[p].status == "approved" else x

        def acknowledge(x: State) -> State:
            key = ("plan_decision", p, x.plans[p].retractions)
            return set_message(x, key, "acknowledged") if message_status(x, key) == "delivered" else x

        yield (
            A("plan.start", slot=p),
            [("plan.start/execution", start), ("plan.start/record", consumed), ("plan.start/message", acknowledge)],
        )


def _plan_run(model: Model, s: State, p: int) -> Iterator[Operation]:
    plan, run = s.plans[p], s.runs[p]
    acting = ("running", "draining") if model.broken("draining_member_runs_steps") else ("running",)
    if run.status == "running" and s.members[plan.requester].status in acting:
        last = model.config.plan_steps - (1 if model.broken("run_completes_a_step_early") else 0)
        if run.cursor < last:

            def step(x: State) -> State:
                r = x.runs[p]
                return replace(
                    x, runs=put(x.runs, p, replace(r, steps=(*r.steps, f"s{r.cursor + 1}"), cursor=r.cursor + 1))
                )

            yield A("plan.step", slot=p), [("plan.step/execution", step)]
        else:
            yield _complete(p)
        yield A("plan.fail", slot=p), [("plan.fail/execution", lambda x: _run(x, p, "failed"))]
    elif (
        model.broken("draining_member_completes_run")
        and run.status == "running"
        and run.cursor >= model.config.plan_steps
        and s.members[plan.requester].status == "draining"
    ):
        yield _complete(p)  # every step ran while the requester was running; it completes while draining
    if run.status == "failed":
        yield (
            A("plan.rollback", slot=p),
            [
                ("plan.rollback/execution", lambda x: _run(x, p, "rolled_back")),
                ("plan.rollback/outbox", lambda x: owe(x, ("plan_completion", p, 0))),
            ],
        )


# ---- messages, outbox, clock --------------------------------------------------------------------


def first_outbox_send(model: Model, s: State) -> Iterator[Operation]:
    """The ample set of the partial-order reduction: the first owed entry's send alone."""
    yield next(message_ops(model, s))


def message_ops(model: Model, s: State) -> Iterator[Operation]:
    for entry in s.outbox:
        if entry.status == "owed":
            kind, ref, phase = entry.key

            def sent(x: State, k: tuple[str, int, int] = entry.key) -> State:
                outbox = tuple(move("outbox_entry", o, "sent") if o.key == k else o for o in x.outbox)
                return replace(x, outbox=outbox)

            steps: list[Step] = [
                ("outbox.send/message", lambda x, k=entry.key, i=entry.info: post(x, k, i)),
                ("outbox.send/entry", sent),
            ]
            yield (
                A("outbox.send", type=kind, ref=ref, phase=phase),
                steps[::-1] if model.broken("send_marks_entry_first") else steps,
            )


def clock_ops(model: Model, s: State) -> Iterator[Operation]:
    """The deadline monitor's pass after each tick, and the tick: up to ``max_ticks``, or under
    deadline regions (``max_ticks`` null) whenever it changes a region (:mod:`spec.model._time`)."""
    if not s.monitor_done:
        yield A("monitor.pass"), [("monitor.pass/records", lambda x: monitor_pass(model, x))]
    elif s.clock < model.config.max_ticks if model.config.max_ticks is not None else tick_matters(model, s):
        yield A("tick"), [("tick/clock", lambda x: replace(x, clock=x.clock + 1, monitor_done=False))]


def monitor_pass(model: Model, s: State) -> State:
    """SHD-6, PLN-5, PLN-9, INV-12: everything past its deadline moves on; a timeout never approves."""
    now = s.clock
    early = 1 if model.broken("monitor_expires_early") else 0  # one tick before the deadline
    for a, ap in enumerate(s.approvals):
        if ap.status in ("requested", "approved") and now + early > ap.deadline:
            s = _approval(s, a, "expired", reason="expired")
            if model.broken("monitor_one_approval_a_pass"):
                break  # the next overdue approval waits for the next pass
    for p, plan in enumerate(s.plans):
        if plan.status in ("pending", "approved") and now > plan.deadline:
            if plan.status == "pending" and model.broken("timeout_approves_plan"):
                s = _plan(s, p, "approved", approved_by="monitor", delivered=True)
                continue
            s = owe(_plan(s, p, "expired", reason="expired"), ("plan_abandoned", p, 0))
        at = 1 if model.broken("monitor_fails_run_at_deadline") else 0  # at the deadline, not after it
        spared = model.broken("monitor_spares_unstarted_runs") and not s.runs[p].steps  # nothing to roll back
        if s.runs[p].status == "running" and now + at > s.runs[p].deadline and not spared:
            s = _run(s, p, "failed")
    for slot, sd in enumerate(s.shutdowns):
        if model.broken("monitor_skips_shutdown") or now <= sd.deadline:
            continue
        if sd.status == "requested":
            s = _shutdown(s, slot, "expired", reason="expired")
        elif sd.status == "draining":
            reason = "expired" if model.broken("timeout_recorded_as_expired") else "timed_out"
            s = _shutdown(s, slot, "timed_out", reason=reason)
        else:
            continue
        if model.broken("monitor_one_shutdown_a_pass"):
            break  # the next overdue request waits for the next pass
    for message in s.bus:
        kind, ref, _ = message.key
        early = 1 if model.broken("request_message_expires_at_deadline") else 0  # at the deadline itself
        late = 1 if model.broken("request_message_expires_late") else 0  # a tick after the first instant
        deadline = _request_deadline(s, kind, ref)
        kept = model.broken("monitor_keeps_unread_shutdown_requests")  # as if every drain had begun
        if kind == "shutdown_request" and (drain_began(s.shutdowns[ref].status) or kept):
            # SHD-2, MSG-1: a drain began under this request, so its delivery is under way (or was cut
            # short by a crash, and the bus delivers it again): its reader records the result
            deadline = deadline if model.broken("monitor_expires_begun_drain_message") else NEVER
        if message.status == "pending" and message.copy == 0 and deadline - early + late < now:
            note_unread_expiry(deadline, now)
            s = set_message(s, message.key, "expired")
    return replace(s, monitor_done=True)


def monitor_is_idle(model: Model, s: State) -> bool:
    """The monitor pass would change nothing but ``monitor_done`` (nothing is past its deadline).
    A probe: the edges the pass would take are not logged as taken — the pass logs them when it
    is taken, so that each edge's first move (its witness) is the pass, not whatever move the
    explorer notes next."""
    with probing():
        return monitor_pass(model, s) == replace(s, monitor_done=True)


def _request_deadline(s: State, kind: str, ref: int) -> int:
    if kind == "approval_request":
        return s.approvals[ref].deadline
    if kind == "plan_request":
        return s.plans[ref].deadline
    if kind == "shutdown_request":
        return s.shutdowns[ref].deadline
    return NEVER  # notices and replies do not expire in the model


NEVER = 1 << 30
"""The deadline of a message that never expires unread."""

DRAIN_BEGUN = safety.DRAIN_BEGUN


def drain_began(status: str) -> bool:
    """SHD-2, MSG-1: whether a drain began under a shutdown request in ``status``; from then on
    the monitor leaves its request message to its reader. A drain's first write moves the record
    before the delivery is recorded (its last write): a monitor that expired the message in between
    would leave the delivery nothing to record (the race ``begin_drain||expire_shutdowns``), and a
    crash in between leaves the message pending for the bus to deliver again, which resumes or
    refuses the drain and records that."""
    return status in DRAIN_BEGUN


def restart(model: Model, s: State) -> Iterator[Operation]:
    from ._reconcile import reconcile

    yield A("restart"), [("restart/reconcile", lambda x: reconcile(model, replace(x, crashed=False)))]


FAMILIES = (task_ops, job_ops, member_ops, shutdown_ops, approval_ops, plan_ops, message_ops, clock_ops)


OPERATIONS: dict[str, tuple[str, ...]] = {
    "task.claim": ("task", "member"),
    "task.finish": ("task", "member"),
    "task.suspend": ("task", "member", "outbox"),
    "task.resume": ("task",),
    "task.inspect": ("task",),
    "job.start": ("job",),
    "job.exit": ("job",),
    "member.lapse": ("member", "task", "outbox"),
    "member.inspect": ("task", "requests", "record", "member", "shutdown"),
    "member.restart": ("member",),
    "member.retire": ("member",),
    "profile.change": ("profile",),
    "shutdown.request": ("record", "message"),
    "shutdown.cancel": ("record",),
    "shutdown.begin_drain": ("record", "member", "cancel_requests", "message"),
    "shutdown.drain_jobs": ("record", "jobs"),
    "shutdown.release_task": ("task", "record", "member"),
    "shutdown.finish": ("record", "member", "outbox", "message"),
    "shutdown.force_terminate": ("jobs", "task", "member", "outbox"),
    "approval.request": ("record", "message"),
    "approval.retry": (),
    "approval.review": ("record", "message"),
    "approval.cancel": ("record",),
    "approval.consume": ("record", "execution", "call", "outcome"),
    "plan.draft": ("record",),
    "plan.submit": ("message", "record"),
    "plan.decide": ("record", "message"),
    "plan.retract": ("record", "message"),
    "plan.deliver_decision": ("record", "message"),
    "plan.withdraw": ("record",),
    "plan.start": ("execution", "record", "message"),
    "plan.step": ("execution",),
    "plan.complete": ("execution", "outbox"),
    "plan.fail": ("execution",),
    "plan.rollback": ("execution", "outbox"),
    "outbox.send": ("message", "entry"),
    "monitor.pass": ("records",),
    "tick": ("clock",),
    "restart": ("reconcile",),
}
"""Every operation of the model and its write steps, in order (DESIGN rule 3). ``approval.retry``
re-runs ``approval.request/message`` with the same stable id."""

WRITE_STEPS: tuple[str, ...] = tuple(f"{op}/{step}" for op, steps in OPERATIONS.items() for step in steps)
"""Every named write step: ``<operation>/<write step>``."""

CRASH_POINTS: tuple[str, ...] = tuple(f"{op}/{step}" for op, steps in OPERATIONS.items() for step in steps[:-1])
"""The write steps after which the harness can die with work still to do (the crash points)."""
