"""Safety predicates beyond INV-1 … INV-12 (issue 19): each a pure, named function of snapshots.

Like :mod:`spec.invariants` (which lists them in ``INVARIANTS``), a *state* predicate takes one
snapshot and a *step* predicate the snapshots before and after one operation, a crash or a
restart; each returns its violations as sentences. They read only the snapshot — the contract a
reference or foreign implementation exports — so the explorer, the Hypothesis model tests and the
conformance suite run them unchanged. Where they can, they are postconditions (what must hold of
any state, or of any step into a state), so every route to a bad state is caught, not one edge.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from . import ids
from .schemas import REASON_CODES

Snapshot = Mapping[str, Any]
BUSY_JOB = frozenset({"running", "cancel_requested"})
"""A job not yet ended (SHD-3: asked to cancel is not stopped); the one definition, which the model,
the flat engine and the reference import (``tests/test_status_sets.py`` reads it off the job machine)."""
LIVE_MEMBER = frozenset({"running", "draining"})


def _by(records: list[Mapping[str, Any]], field: str) -> dict[Any, Mapping[str, Any]]:
    return {record[field]: record for record in records}


def _status(records: list[Mapping[str, Any]], field: str) -> dict[Any, str]:
    return {record[field]: record["status"] for record in records}


# ---- deadlines -------------------------------------------------------------------------------------

_EXPIRING = {
    "operation_approval": ("expired",),
    "plan_approval": ("expired",),
    "shutdown_request": ("expired", "timed_out"),
}


def expiry_only_after_deadline(before: Snapshot, after: Snapshot) -> list[str]:
    """APR-5, PLN-5, SHD-6: a request expires (or a drain times out) only once its deadline passed.

    Lateness is bounded by INV-12; this bounds earliness: in the step that moves a record to
    ``expired`` or ``timed_out`` the clock is past its deadline.
    """
    now = after["clock"]
    problems = []
    for kind, targets in _EXPIRING.items():
        was = _status(before[kind], "protocol_id")
        for record in after[kind]:
            status = record["status"]
            if status in targets and was.get(record["protocol_id"]) != status and now <= record["deadline"]:
                problems.append(
                    f"{kind}/{record['protocol_id']}: {status} at {now}, but its deadline {record['deadline']} "
                    "has not passed"
                )
    return problems + _request_messages_expire_late(before, after)


_SUBMITTED = {
    "operation_approval": None,
    "plan_approval": frozenset({"pending", "approved", "rejected", "needs_revision", "expired", "consumed"}),
    "shutdown_request": None,
}
"""The deadlined requests, and the statuses in which a plan has certainly been submitted (None:
every status; a plan withdrawn may have been withdrawn as a draft)."""


def deadline_runs_from_submission(snap: Snapshot) -> list[str]:
    """APR-1, PLN-5, SHD-1: a request's deadline lies ahead of its creation.

    A request gets its deadline when it starts to wait — an approval or a shutdown request when it
    is created, a plan when it is submitted (by its requester, or by the reconciliation that
    finishes a cut submit), which is never before its creation — and the deadline is that moment
    plus the request's ttl. So a plan's deadline lies after ``created_at`` (its ``ttl_seconds`` is
    positive, PLN-1), and an approval's and a shutdown request's not before it (no clause bounds
    their ttl from below: a Lead may ask a member to stop now, and the model's ``pair_lapses`` has a
    ttl of 0 ticks). Judged on records alone, each with
    its own creation time, so it holds whatever the clocks of the processes that wrote them. In
    the model, whose records show ``created_at`` as ``deadline - ttl`` (never below 0), it says
    that a submitted request's deadline was set at all: a submit that keeps a draft's unset
    deadline breaks it.
    """
    problems = []
    for kind, submitted in _SUBMITTED.items():
        may_be_now = kind != "plan_approval"
        for record in snap[kind]:
            if submitted is not None and record["status"] not in submitted:
                continue
            deadline, created = record["deadline"], record["created_at"]
            if deadline < created or (deadline == created and not may_be_now):
                problems.append(
                    f"{kind}/{record['protocol_id']}: {record['status']} with its deadline {deadline} not after "
                    f"its creation at {created} (a request waits its ttl from its submission)"
                )
    return problems


REQUEST_MESSAGES = {
    "approval_request": "operation_approval",
    "plan_request": "plan_approval",
    "shutdown_request": "shutdown_request",
}
"""A request message's type → the section of the request it carries (its ``correlation_id``)."""


def _request_messages_expire_late(before: Snapshot, after: Snapshot) -> list[str]:
    """MSG-1: a request's message expires unread only once its request's deadline passed — while
    the request can still be decided, its message must still be deliverable — and a shutdown
    request's never once a drain began under it (SHD-2): the drain's delivery records its result
    last, so an expiry in between would leave it nothing to record."""
    now = after["clock"]
    was = {record["message"]["message_id"]: record["status"] for record in before["message"]}
    problems = []
    for record in after["message"]:
        message = record["message"]
        kind = REQUEST_MESSAGES.get(message["message_type"])
        if kind is None or record["status"] != "expired" or was.get(message["message_id"]) == "expired":
            continue
        request = _by(after[kind], "protocol_id").get(message["correlation_id"])
        if request is not None and now <= request["deadline"]:
            problems.append(
                f"message/{message['message_id']}: the {message['message_type']} expired at {now}, but its "
                f"request's deadline {request['deadline']} has not passed"
            )
        if request is not None and kind == "shutdown_request" and request["status"] in DRAIN_BEGUN:
            problems.append(
                f"message/{message['message_id']}: the shutdown_request expired unread, but a drain began "
                f"under it (request {request['status']}): its delivery is left to its reader (SHD-2)"
            )
    return problems


DRAIN_BEGUN = frozenset({"draining", "timed_out", "completed"})
"""A shutdown request's statuses once a drain began under it (SHD-2, SHD-5, SHD-6); the model's
monitor reads them from here."""


# ---- members -----------------------------------------------------------------------------------------


def _newly(before: list[Mapping[str, Any]], after: list[Mapping[str, Any]], field: str, status: str) -> Iterator[Any]:
    was = _status(before, field)
    for record in after:
        if record["status"] == status and was.get(record[field]) != status:
            yield record


def _new_work(before: Snapshot, after: Snapshot) -> Iterator[tuple[str, str, Any, str]]:
    """The approvals requested, plans drafted and jobs started in a step: (record, member, task, what)."""
    requested = {ap["protocol_id"] for ap in before["operation_approval"]}
    for ap in after["operation_approval"]:
        if ap["protocol_id"] not in requested:
            yield f"operation_approval/{ap['protocol_id']}", ap["requester_id"], ap["task_id"], "requested"
    drafted = {plan["protocol_id"] for plan in before["plan_approval"]}
    for plan in after["plan_approval"]:
        if plan["protocol_id"] not in drafted:
            yield f"plan_approval/{plan['protocol_id']}", plan["requester_id"], plan["task_id"], "drafted"
    old_jobs = {job["job_id"] for job in before["job"]}
    for job in after["job"]:
        if job["job_id"] not in old_jobs:
            yield f"job/{job['job_id']}", job["owner_id"], job["task_id"], "started"


def stopped_member_acts_not(before: Snapshot, after: Snapshot) -> list[str]:
    """XPR-2, MEM-3, SHD-3: a member that is not running consumes nothing: no approval, plan or job.

    Judged on the member as the step found it: a draining, unhealthy or stopped member's call
    requests no approval and drafts or submits no plan (its drain ended its requests once, XPR-2:
    a later one would be left open), consumes no approval (even an ``approved`` one), starts no
    plan execution and no job, runs no further step of a started execution nor completes it
    (MEM-3: between two steps a draining member stops), and does not finish its task: a claimed task it holds becomes
    completed or failed only by a running member (SHD-3: a drain releases the task; it is never
    marked completed just to get out). A run's failure and rollback are not the requester's acts
    alone (the monitor times a run out, PLN-9), nor is the failure of a task the Lead inspected
    (``needs_inspection``, SHD-7), so they are not judged here.
    """
    members = _by(before["member"], "member_id")
    problems = []

    def check(record: str, member_id: str, what: str) -> None:
        member = members.get(member_id)
        if member is not None and member["status"] != "running":
            problems.append(f"{record}: {what} by {member_id} while {member['status']}")

    for ap in _newly(before["operation_approval"], after["operation_approval"], "protocol_id", "consumed"):
        check(f"operation_approval/{ap['protocol_id']}", ap["requester_id"], "consumed")
    for record, member_id, _, what in _new_work(before, after):
        check(record, member_id, what)
    drafted = {plan["protocol_id"]: plan["status"] for plan in before["plan_approval"]}
    for plan in after["plan_approval"]:
        if drafted.get(plan["protocol_id"]) == "draft" and plan["status"] == "pending":
            check(f"plan_approval/{plan['protocol_id']}", plan["requester_id"], "submitted")
    plans = _by(after["plan_approval"], "protocol_id")
    started = {run["plan_id"] for run in before["plan_execution"]}
    for run in after["plan_execution"]:
        if run["plan_id"] not in started and run["plan_id"] in plans:
            check(f"plan_execution/{run['plan_id']}", plans[run["plan_id"]]["requester_id"], "started")
    runs = _by(before["plan_execution"], "plan_id")
    for run in after["plan_execution"]:
        old = runs.get(run["plan_id"])
        if old is None or run["plan_id"] not in plans:
            continue
        requester = plans[run["plan_id"]]["requester_id"]
        if len(run["executed_step_ids"]) > len(old["executed_step_ids"]):
            check(f"plan_execution/{run['plan_id']}", requester, f"step {run['executed_step_ids'][-1]} run")
        if run["status"] == "completed" and old["status"] != "completed":
            check(f"plan_execution/{run['plan_id']}", requester, "completed")
    held = _by(before["task"], "task_id")
    for task in after["task"]:
        old = held.get(task["task_id"])
        if old is not None and old["status"] == "claimed" and task["status"] in ("completed", "failed"):
            check(f"task/{task['task_id']}", old["owner_id"], f"marked {task['status']}")
    return problems


def lost_notice_names_its_flagged_tasks(before: Snapshot, after: Snapshot) -> list[str]:
    """SHD-10, MSG-1: a ``member_lost``, in the step that first owes it, names exactly the member's
    claims that need inspection (an older incarnation's still waiting included). The notice's body
    is fixed when it is owed, so a lapse (or a force-termination) flags the claims first and then
    owes the notice; one owed before the flags tells the Lead of no task to inspect. (A notice owed
    by reconciliation for a lapse cut before its flags names none, and none is flagged then: the
    inspection flags later.)"""
    old = {message["message_id"] for _, message in _messages(before, "member_lost")}
    flagged: dict[Any, set[str]] = {}
    for task in after["task"]:
        if task["status"] == "needs_inspection":
            flagged.setdefault(task["owner_id"], set()).add(task["task_id"])
    new = {m["message_id"]: m for _, m in _messages(after, "member_lost") if m["message_id"] not in old}
    problems = []
    for message_id, message in sorted(new.items()):
        body = message["body"]
        want = sorted(flagged.get(body["member_id"], set()))
        if sorted(body["flagged_task_ids"]) != want:
            problems.append(
                f"member_lost/{message_id}: owed naming {sorted(body['flagged_task_ids'])} as flagged, but "
                f"{body['member_id']}'s claims {want} need inspection"
            )
    return problems


def work_binds_a_held_task(before: Snapshot, after: Snapshot) -> list[str]:
    """APR-1, APR-3: new work is bound to a task its member holds.

    An approval is requested, a plan drafted and a job started for the task its member holds when
    the step begins: claimed by that member, under its current incarnation (the harness supplies
    the task's ownership, APR-3). Work named after a task the member never claimed, has released,
    or holds only under an older incarnation would be bound to someone else's work.
    """
    members = _by(before["member"], "member_id")
    tasks = _by(before["task"], "task_id")
    problems = []

    def check(record: str, member_id: str, task_id: Any, what: str) -> None:
        member, task = members.get(member_id), tasks.get(task_id)
        held = (
            member is not None
            and task is not None
            and task["status"] == "claimed"
            and task["owner_id"] == member_id
            and task["owner_incarnation"] == member["incarnation"]
        )
        if not held:
            how = "no such task" if task is None else f"{task['status']} by {task['owner_id']}"
            if task is not None and task["owner_id"] == member_id and member is not None:
                how += f" under incarnation {task['owner_incarnation']}, member at {member['incarnation']}"
            problems.append(f"{record}: {what} by {member_id} for task {task_id}, which it does not hold ({how})")

    for record, member_id, task_id, what in _new_work(before, after):
        check(record, member_id, task_id, what)
    return problems


def draining_member_accepts_nothing(snap: Snapshot) -> list[str]:
    """SHD-2, MEM-1: only a running member accepts new tasks; a draining one names its request.

    A promise of the member record itself, not only of the claim guard: a begin-drain that leaves
    ``accepting_new_tasks`` set is a broken record even while the status guard masks it. And the
    other way round (XPR-1): a running member drains for nothing, so its record names no shutdown
    request — a restart that keeps the old incarnation's request id leaves a record that
    reconciliation would read as a drain (REC-2).
    """
    problems = []
    for member in snap["member"]:
        if member["status"] != "running" and member["accepting_new_tasks"]:
            problems.append(f"member/{member['member_id']}: {member['status']} but accepting_new_tasks is true")
        if member["status"] == "draining" and member["shutdown_request_id"] is None:
            problems.append(f"member/{member['member_id']}: draining without a shutdown_request_id")
        if member["status"] == "running" and member["shutdown_request_id"] is not None:
            problems.append(
                f"member/{member['member_id']}: running but names shutdown request {member['shutdown_request_id']}"
            )
    return problems


def restart_raises_incarnation(before: Snapshot, after: Snapshot) -> list[str]:
    """XPR-1: a restart strictly raises the incarnation, and nothing of an older one acts afterwards.

    An incarnation never falls; a member that becomes ``running`` again has a higher one; every
    claimed task and every claim or plan start made in this step belongs to its member's current
    incarnation.
    """
    old = _by(before["member"], "member_id")
    members = _by(after["member"], "member_id")
    problems = []
    for member in after["member"]:
        was = old.get(member["member_id"])
        if was is None:
            continue
        if member["incarnation"] < was["incarnation"]:
            problems.append(
                f"member/{member['member_id']}: incarnation fell {was['incarnation']} -> {member['incarnation']}"
            )
        restarted = was["status"] != "running" and member["status"] == "running"
        if restarted and member["incarnation"] <= was["incarnation"]:
            problems.append(
                f"member/{member['member_id']}: {was['status']} -> running keeps incarnation {member['incarnation']}"
            )
    for task in after["task"]:
        owner = members.get(task["owner_id"])
        if task["status"] == "claimed" and owner is not None and task["owner_incarnation"] != owner["incarnation"]:
            problems.append(
                f"task/{task['task_id']}: claimed by incarnation {task['owner_incarnation']} of {task['owner_id']}, "
                f"which is at {owner['incarnation']}"
            )
    plans = _by(after["plan_approval"], "protocol_id")
    started = {run["plan_id"] for run in before["plan_execution"]}
    for run in after["plan_execution"]:
        plan = plans.get(run["plan_id"])
        if run["plan_id"] in started or plan is None:
            continue
        requester = members.get(plan["requester_id"])
        if requester is not None and plan["requester_incarnation"] != requester["incarnation"]:
            problems.append(
                f"plan_execution/{run['plan_id']}: started for incarnation {plan['requester_incarnation']}, "
                f"member at {requester['incarnation']}"
            )
    return problems


# ---- plans -------------------------------------------------------------------------------------------

_AFTER_DELIVERY = frozenset({"approved", "consumed", "withdrawn", "expired"})


def retraction_only_before_delivery(before: Snapshot, after: Snapshot) -> list[str]:
    """PLN-6: once its decision was delivered, only withdrawal or expiry ends an approved plan.

    A plan whose ``decision_delivered`` is set (before or after the step) is never back in
    ``pending`` or ``rejected``: a retraction honoured after delivery is caught however it came.
    """
    delivered = {plan["protocol_id"] for plan in before["plan_approval"] if plan["decision_delivered"]}
    problems = []
    for plan in after["plan_approval"]:
        if (plan["decision_delivered"] or plan["protocol_id"] in delivered) and plan["status"] not in _AFTER_DELIVERY:
            problems.append(f"plan_approval/{plan['protocol_id']}: {plan['status']} after its decision was delivered")
    return problems


# ---- jobs and tasks ----------------------------------------------------------------------------------


def non_cancellable_job_never_signalled(snap: Snapshot) -> list[str]:
    """JOB-2, SHD-4: a job marked non-cancellable is never signalled: it is never ``cancel_requested``."""
    return [
        f"job/{job['job_id']}: non-cancellable, yet {job['status']}"
        for job in snap["job"]
        if not job["cancellable"] and job["status"] == "cancel_requested"
    ]


_OUT_OF_HAND = frozenset({"pending", "suspended", "completed", "failed"})


def task_leaves_owner_after_jobs_settle(snap: Snapshot) -> list[str]:
    """SHD-4, SHD-9, JOB-1, SHD-3: a task is out of its owner's hands only once its jobs settled.

    A postcondition over every route (release, suspension and resume, inspection, completion,
    failure): no task that is ``pending``, ``suspended``, ``completed`` or ``failed`` has a job
    still running or asked to cancel (a cancel request is not a stopped job).
    """
    busy: dict[str, list[str]] = {}
    for job in snap["job"]:
        if job["status"] in BUSY_JOB and job["task_id"] is not None:
            busy.setdefault(job["task_id"], []).append(job["job_id"])
    return [
        f"task/{task['task_id']}: {task['status']} while its job(s) {busy[task['task_id']]} still run"
        for task in snap["task"]
        if task["status"] in _OUT_OF_HAND and task["task_id"] in busy
    ]


_HELD = frozenset({"claimed", "suspended"})


def members_hold_their_claims(snap: Snapshot) -> list[str]:
    """REC-2, MEM-1, TSK-1: a claim's two writes (the task's, then its member's) agree once
    reconciled, for every member that may still work (``running`` or ``draining``).

    Its ``current_task_id`` names a task it holds under its present incarnation (``claimed``, or
    ``suspended`` by a unit deadline), and if it names none, no task is claimed by it under its
    incarnation. A crash between the two writes leaves them apart; reconciliation must join them
    for a member that began to drain since, as for a running one, else the drain cannot release
    the task and the member stops with the task claimed by nobody (INV-4, later). (A lost member
    keeps the name of a task the Lead has since inspected: nothing reads it.)
    """
    tasks = _by(snap["task"], "task_id")
    problems = []
    for member in snap["member"]:
        if member["status"] not in ("running", "draining"):
            continue
        name, incarnation, current = member["member_id"], member["incarnation"], member["current_task_id"]
        if current is not None:
            task = tasks.get(current)
            if task is None:
                problems.append(f"member/{name}: holds task {current}, which does not exist")
            elif task["status"] not in _HELD or (task["owner_id"], task["owner_incarnation"]) != (name, incarnation):
                problems.append(
                    f"member/{name}: holds task {current}, which is {task['status']} by {task['owner_id']} "
                    f"(incarnation {task['owner_incarnation']}; the member's is {incarnation})"
                )
        else:
            problems += [
                f"member/{name}: {member['status']} and holds no task, but task {task['task_id']} is claimed by it "
                f"(incarnation {incarnation})"
                for task in snap["task"]
                if task["status"] == "claimed" and task["owner_id"] == name and task["owner_incarnation"] == incarnation
            ]
    return problems


def _lost(member: Mapping[str, Any] | None, incarnation: Any) -> bool:
    """The task owner's incarnation is gone: restarted since, or no longer running or draining."""
    return member is None or member["incarnation"] != incarnation or member["status"] not in LIVE_MEMBER


def task_flagged_only_for_its_lost_owner(before: Snapshot, after: Snapshot) -> list[str]:
    """SHD-7, SHD-10: a task is flagged, or re-pended from inspection, only when its own owner is lost.

    Flagged: its owner's incarnation is unhealthy or stopped after the step, or is being
    force-terminated (draining under a ``timed_out`` request). Cleared: its owner's incarnation
    was no longer running or draining when the step began.
    """
    old_tasks = _by(before["task"], "task_id")
    members_before = _by(before["member"], "member_id")
    members_after = _by(after["member"], "member_id")
    forced = {sd["target_id"] for sd in after["shutdown_request"] if sd["status"] == "timed_out"}
    problems = []
    for task in after["task"]:
        was = old_tasks.get(task["task_id"])
        if was is None or was["status"] == task["status"]:
            continue
        owner, incarnation = was["owner_id"], was["owner_incarnation"]
        if task["status"] == "needs_inspection":
            member = members_after.get(owner)
            ending = member is not None and member["status"] == "draining" and owner in forced
            if not (ending or _lost(member, incarnation)):
                status = member and member["status"]
                problems.append(f"task/{task['task_id']}: flagged while its owner {owner} is {status}")
        elif was["status"] == "needs_inspection" and not _lost(members_before.get(owner), incarnation):
            member = members_before[owner]
            problems.append(
                f"task/{task['task_id']}: {task['status']} after inspection while its owner {owner} "
                f"is {member['status']}"
            )
    return problems


# ---- messages ----------------------------------------------------------------------------------------

_PHASES = {
    "approval_request": "request",
    "plan_request": "request",
    "shutdown_request": "request",
    "approval_decision": "decision",
    "plan_completion": "completion",
    "plan_abandoned": "abandoned",
    "shutdown_ack": "ack",
    "member_lost": "lost",
    "task_suspended": "suspended",
    "shutdown_notice": "notice",  # a member's own exit on a signal (SHD-8; the reference's runtime, not the model)
}
_APPROVAL_SAYS = {
    "approved": frozenset({"approved", "consumed", "cancelled", "expired"}),
    "rejected": frozenset({"rejected"}),
}
_PLAN_SAYS = {
    "approved": _AFTER_DELIVERY,
    "rejected": frozenset({"rejected"}),
    "needs_revision": frozenset({"needs_revision"}),
}


def _phase(message: Mapping[str, Any]) -> str:
    kind = message["message_type"]
    if kind == "plan_decision":
        return f"decision-{message['body']['sequence']}"
    return _PHASES.get(kind, "?")


def messages_agree_with_records(snap: Snapshot) -> list[str]:
    """MSG-4, MSG-6, REC-3: every message is under its one stable id and says what its record says.

    Presence is INV-7; this is content. Each message on the bus or in the outbox has the id of its
    correlation id and phase, and one on the bus is its outbox entry's very message; each field of
    its body says what :data:`BODY_RULES` says it must; a decision exists only once its record
    decided (the record is written first, MSG-6) and agrees with it; of a plan's decisions, numbered
    from 0 without gaps, only the latest may be live (not expired) and it agrees with the plan; an
    acknowledgement or completion repeats its record's facts; a notice its record's (SHD-9, SHD-10),
    and a ``member_lost`` speaks of an incarnation that is no longer running or draining (SHD-10).
    Checked after reconciliation (a crash may fall between the writes).
    """
    problems = []
    for kind in ("message", "outbox_entry"):
        for record in snap[kind]:
            message = record["message"]
            expected = ids.message_id(message["correlation_id"], _phase(message))
            if message["message_id"] != expected:
                problems.append(
                    f"{kind}/{message['message_id']}: {message['message_type']} is not under its stable id {expected}"
                )
    owed = {record["message"]["message_id"]: record["message"] for record in snap["outbox_entry"]}
    for record in snap["message"]:
        entry = owed.get(record["message"]["message_id"])
        if entry is not None and entry != record["message"]:
            problems.append(
                f"message/{record['message']['message_id']}: {record['message']['message_type']} on the bus "
                "other than its outbox entry (one id, one message: the outbox sends its entry's)"
            )
    problems += _parties_agree(snap)
    problems += _approval_decisions_agree(snap)
    problems += _plan_decisions_agree(snap)
    problems += _replies_agree(snap)
    problems += _notices_agree(snap)
    return problems


BODY_RULES: dict[str, dict[str, str]] = {
    "approval_request": {
        **dict.fromkeys(
            ("protocol_id", "requester_id", "requester_incarnation", "task_id", "tool_name", "arguments_digest"),
            "record",
        ),
        **dict.fromkeys(("profile_version", "risk_summary", "deadline"), "record"),
    },
    "approval_decision": {
        "protocol_id": "record",
        "decision": "_approval_decisions_agree",
        "review_summary": "record or empty",
    },
    "plan_request": dict.fromkeys(("plan", "revision", "supersedes", "requester_incarnation"), "record"),
    "plan_decision": {"decision": "_plan_decisions_agree", "sequence": "_plan_decisions_agree", "comment": "text"},
    "plan_completion": {"plan_id": "correlation", "outcome": "_replies_agree", "summary": "text"},
    "plan_abandoned": {"plan_id": "correlation", "reason": "record"},
    "shutdown_request": dict.fromkeys(("protocol_id", "target_incarnation", "reason_text", "deadline"), "record"),
    "shutdown_ack": {"protocol_id": "record", "released_task_id": "_replies_agree", "waited_job_ids": "_replies_agree"},
    "shutdown_notice": {"reason_text": "text", "summary": "text"},
    "member_lost": {
        "member_id": "_notices_agree",
        "incarnation": "_notices_agree",
        "last_heartbeat_at": "_notices_agree",
        "flagged_task_ids": "lost_notice_names_its_flagged_tasks",
    },
    "task_suspended": {"task_id": "_notices_agree", "member_id": "_notices_agree", "reason_text": "text"},
}
"""MSG-1, MSG-4: what each field of each message's body must say. Every field of every body
schema (:data:`spec.schemas.BODIES`) has a rule, so a field added to a message is judged before
it is sent (``tests/test_message_parties.py``): ``record`` — its record's field of the same name
(the record :data:`_PARTIES` names, found by the message's correlation id); ``record or empty`` —
the same, ``""`` where the record holds none (a review written without a summary); ``correlation``
— the message's correlation id (the record it is about); ``text`` — free text (INV-10 judges what
it may hold); otherwise the check that judges it, by its name in this module."""

# message type → (the section of its record, found by the message's correlation id as protocol_id;
# the record's fields that name its (sender, target); whether it answers the request); a reply goes
# back the way its request came (MSG-1). What its body repeats of the record is BODY_RULES'.
_PARTIES: dict[str, tuple[str, tuple[str, str], bool]] = {
    "approval_request": ("operation_approval", ("requester_id", "responder_id"), False),
    "approval_decision": ("operation_approval", ("responder_id", "requester_id"), True),
    "plan_request": ("plan_approval", ("requester_id", "responder_id"), False),
    "plan_decision": ("plan_approval", ("responder_id", "requester_id"), True),
    "plan_completion": ("plan_approval", ("requester_id", "responder_id"), False),
    "plan_abandoned": ("plan_approval", ("requester_id", "responder_id"), False),
    "shutdown_request": ("shutdown_request", ("requester_id", "target_id"), False),
    "shutdown_ack": ("shutdown_request", ("target_id", "requester_id"), True),
}
_REPEATED = {
    kind: tuple((field, rule == "record or empty") for field, rule in rules.items() if rule.startswith("record"))
    for kind, rules in BODY_RULES.items()
}
"""Message type → the body fields that repeat its record's, each with whether ``""`` stands for none."""


def _leads(snap: Snapshot) -> set[str]:
    """Who the store names as the Lead: the responder of every approval and plan, the requester
    of every shutdown request (empty where no record names one yet)."""
    return {doc["responder_id"] for section in ("operation_approval", "plan_approval") for doc in snap[section]} | {
        doc["requester_id"] for doc in snap["shutdown_request"]
    }


def _notice_parties(message: Mapping[str, Any], members: set[str], leads: set[str]) -> str | None:
    """MSG-1 for the notices no protocol record answers for, by their body: a ``task_suspended``
    goes from the member the body names (its task's holder) to the Lead (SHD-9); a ``member_lost``
    goes from the Lead to the team, on the lost member's behalf (SHD-10); a ``shutdown_notice`` goes
    from a member to the team (SHD-8). The Lead is who the records name as one (:func:`_leads`);
    where none does yet, anyone but a member and the team. What is wrong, or None."""
    kind, sender, target, body = message["message_type"], message["sender"], message["target"], message["body"]

    def lead(party: str) -> bool:
        return party in leads if leads else party not in members and party != "team"

    if kind == "task_suspended" and (sender != body.get("member_id") or sender not in members or not lead(target)):
        return f"from {sender} to {target}; it goes from the task's holder {body.get('member_id')} to the Lead"
    if kind == "member_lost" and (target != "team" or not lead(sender)):
        return f"from {sender} to {target}; it goes from the Lead to the team on {body.get('member_id')}'s behalf"
    if kind == "shutdown_notice" and (target != "team" or sender not in members):
        return f"from {sender} to {target}; a member's own shutdown notice goes from it to the team"
    return None


NOTICES = ("task_suspended", "member_lost", "shutdown_notice")
"""The message types whose parties :func:`_notice_parties` judges by their body (every other type
is judged by its record, :data:`_PARTIES`)."""


def _parties_agree(snap: Snapshot) -> list[str]:
    """MSG-1, MSG-4: a request goes from its record's requester to its responder (a shutdown
    request from the Lead to its target) and repeats the record's facts in its body — the
    approval's arguments digest and deadline, the plan as submitted, the target's incarnation; a
    reply (decision, acknowledgement) goes back the way the request came and names it in
    ``reply_to``; a plan's completion or abandonment goes from its requester to its responder; a
    notice (:data:`NOTICES`) goes as its body says. A message misaddressed or carrying other facts
    than its record's is another request; a type no rule covers is a problem, never skipped."""
    sections = ("operation_approval", "plan_approval", "shutdown_request")
    records = {section: _by(snap[section], "protocol_id") for section in sections}
    members, leads = {doc["member_id"] for doc in snap["member"]}, _leads(snap)
    problems = []
    for kind in ("message", "outbox_entry"):
        for row in snap[kind]:
            message = row["message"]
            name = f"{message['message_type']}/{message['message_id']}"
            if message["message_type"] in NOTICES:
                wrong = _notice_parties(message, members, leads)
                if wrong is not None:
                    problems.append(f"{name}: {wrong}")
                continue
            known = _PARTIES.get(message["message_type"])
            if known is None:  # a new message type: its parties need a rule before it is sent
                problems.append(f"{name}: no rule says who sends a {message['message_type']} to whom (MSG-1)")
                continue
            section, (sender, target), reply = known
            record = records[section].get(message["correlation_id"])
            if record is None:
                continue  # a message of no record: the decision checks below say so where it matters
            parties = (message["sender"], message["target"])
            if parties != (record[sender], record[target]):
                problems.append(
                    f"{name}: from {parties[0]} to {parties[1]}; by its {section} it goes from "
                    f"{record[sender]} to {record[target]}"
                )
            body = message["body"]
            for field, empty in _REPEATED[message["message_type"]]:
                said = record[field] or "" if empty else record[field]
                if body.get(field) != said:
                    problems.append(f"{name}: says {field} {body.get(field)!r}, but its {section} says {said!r}")
            for field, rule in BODY_RULES[message["message_type"]].items():
                if rule == "correlation" and body.get(field) != message["correlation_id"]:
                    problems.append(
                        f"{name}: says {field} {body.get(field)!r}, but it is about {message['correlation_id']}"
                    )
            answers = ids.message_id(message["correlation_id"], "request") if reply else None
            if message.get("reply_to") != answers:
                problems.append(f"{name}: replies to {message.get('reply_to')}, not to {answers}")
    return problems


def _messages(snap: Snapshot, message_type: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(delivery status, message) of every message of a type, on the bus or still owed."""
    for record in snap["message"]:
        if record["message"]["message_type"] == message_type:
            yield record["status"], record["message"]
    for record in snap["outbox_entry"]:
        if record["message"]["message_type"] == message_type:
            yield "owed", record["message"]


def _approval_decisions_agree(snap: Snapshot) -> list[str]:
    approvals = _by(snap["operation_approval"], "protocol_id")
    problems = []
    for _, message in _messages(snap, "approval_decision"):
        ap = approvals.get(message["correlation_id"])
        decision = message["body"]["decision"]
        if ap is None or ap["status"] not in _APPROVAL_SAYS.get(decision, ()):
            problems.append(
                f"approval_decision/{message['message_id']}: says {decision}, but the approval is {ap and ap['status']}"
            )
    return problems


def _plan_decisions_agree(snap: Snapshot) -> list[str]:
    decisions: dict[str, list[tuple[int, str, str]]] = {}
    for status, message in _messages(snap, "plan_decision"):
        entry = (message["body"]["sequence"], status, message["body"]["decision"])
        decisions.setdefault(message["correlation_id"], []).append(entry)
    plans = _by(snap["plan_approval"], "protocol_id")
    problems = []
    for pid, found in decisions.items():
        plan = plans.get(pid)
        sequences = sorted({sequence for sequence, _, _ in found})
        if plan is None or sequences != list(range(len(sequences))):
            problems.append(
                f"plan_decision of {pid}: decisions numbered {sequences} for a plan {plan and plan['status']}"
            )
            continue
        live = [(sequence, decision) for sequence, status, decision in found if status != "expired"]
        if len(live) > 1 or (live and live[0][0] != sequences[-1]):
            problems.append(f"plan_approval/{pid}: decisions {sorted(live)} are live; only the latest may be")
        for _, decision in live:
            if plan["status"] not in _PLAN_SAYS.get(decision, ()):
                problems.append(f"plan_approval/{pid}: {plan['status']}, but its live decision says {decision}")
    for plan in snap["plan_approval"]:
        owed = plan["status"] in ("approved", "rejected", "needs_revision") and not plan["decision_delivered"]
        current = [s for s, status, _ in decisions.get(plan["protocol_id"], []) if status != "expired"]
        if owed and not current:
            problems.append(f"plan_approval/{plan['protocol_id']}: {plan['status']}, but no live decision tells it")
    return problems


def _replies_agree(snap: Snapshot) -> list[str]:
    shutdowns = _by(snap["shutdown_request"], "protocol_id")
    runs = _by(snap["plan_execution"], "plan_id")
    problems = []
    for _, message in _messages(snap, "shutdown_ack"):
        sd = shutdowns.get(message["correlation_id"])
        body = message["body"]
        facts = sd and (sd["status"], sd["released_task_id"], sd["waited_job_ids"])
        if facts != ("completed", body["released_task_id"], body["waited_job_ids"]):
            problems.append(f"shutdown_ack/{message['message_id']}: says {body}, but the request is {facts}")
    members = _by(snap["member"], "member_id")
    for _, message in _messages(snap, "member_lost"):
        member = members.get(message["body"]["member_id"])
        if member is None or member["status"] not in LIVE_MEMBER:
            continue
        if member["incarnation"] == message["body"]["incarnation"]:
            problems.append(
                f"member_lost/{message['message_id']}: says incarnation {member['incarnation']} of "
                f"{member['member_id']} is lost, but it is {member['status']}"
            )
    for _, message in _messages(snap, "plan_completion"):
        run = runs.get(message["correlation_id"])
        if run is None or run["status"] != message["body"]["outcome"]:
            problems.append(
                f"plan_completion/{message['message_id']}: says {message['body']['outcome']}, "
                f"but the execution is {run and run['status']}"
            )
    return problems


def _notices_agree(snap: Snapshot) -> list[str]:
    """SHD-9, SHD-10: a notice repeats the facts of the record it is about. A ``member_lost`` is
    under the id of the member and incarnation its body names, and says when that incarnation last
    beat, as the member's record says while it is that incarnation (none: 0). A ``task_suspended`` is
    under the id of one claim of the task its body names, and names that claim's holder — where the
    task's history shows its claims (an implementation's records; the model's keep none)."""
    members, tasks = _by(snap["member"], "member_id"), _by(snap["task"], "task_id")
    problems = []
    for _, message in _messages(snap, "member_lost"):
        body, name = message["body"], f"member_lost/{message['message_id']}"
        pid = ids.protocol_id(body["member_id"], f"incarnation-{body['incarnation']}", "member_lost")
        if message["correlation_id"] != pid:
            problems.append(
                f"{name}: about {message['correlation_id']}, but it names {body['member_id']} "
                f"incarnation {body['incarnation']} ({pid})"
            )
        member = members.get(body["member_id"])
        if member is not None and member["incarnation"] == body["incarnation"]:
            beat = member["last_heartbeat_at"] or 0
            if body["last_heartbeat_at"] != beat:
                problems.append(
                    f"{name}: says the last heartbeat was at {body['last_heartbeat_at']}, but "
                    f"member/{body['member_id']} says {beat}"
                )
    for _, message in _messages(snap, "task_suspended"):
        body, name = message["body"], f"task_suspended/{message['message_id']}"
        task = tasks.get(body["task_id"])
        if task is None:
            problems.append(f"{name}: names task/{body['task_id']}, which the team does not have")
            continue
        claims = [e for e in task.get("history") or () if e.get("event") == "claimed"]
        if not claims:
            continue
        pids = [ids.protocol_id(body["task_id"], f"claim-{n}", "task_suspended") for n in range(1, len(claims) + 1)]
        if message["correlation_id"] not in pids:
            problems.append(f"{name}: about {message['correlation_id']}, no claim of task/{body['task_id']}")
        elif body["member_id"] != claims[pids.index(message["correlation_id"])]["actor"]:
            holder = claims[pids.index(message["correlation_id"])]["actor"]
            problems.append(f"{name}: names {body['member_id']}, but the claim it is about was {holder}'s")
    return problems


# ---- deadlines, deliveries, checkpoints, reasons ----------------------------------------------------

_DECIDED = {
    "operation_approval": ("requested", frozenset({"approved", "rejected"})),
    "plan_approval": ("pending", frozenset({"approved", "rejected", "needs_revision"})),
    "shutdown_request": ("requested", frozenset({"draining"})),
}


def decisions_only_before_deadline(before: Snapshot, after: Snapshot) -> list[str]:
    """APR-4, PLN-5, SHD-2: a request is decided (reviewed, or its drain begun) only by its deadline.

    A review after the deadline fails; so does beginning a drain: in the step that moves a request
    out of its waiting state to a decision, the clock has not passed its deadline.
    """
    now = after["clock"]
    problems = []
    for kind, (waiting, decided) in _DECIDED.items():
        was = _status(before[kind], "protocol_id")
        for record in after[kind]:
            moved = was.get(record["protocol_id"]) == waiting and record["status"] in decided
            when = _decided_at(record, decided, now)
            if moved and when > record["deadline"]:
                problems.append(
                    f"{kind}/{record['protocol_id']}: {waiting} -> {record['status']} at {when}, after its deadline "
                    f"{record['deadline']}"
                )
    return problems


def _decided_at(record: Mapping[str, Any], decided: Any, now: Any) -> Any:
    """When a record was decided: the time of its latest decision event where it keeps events
    (AUD-1; two processes' clocks may differ, and a snapshot has one), else the step's clock (the
    model's). The latest: a plan approved in time, retracted (PLN-6) and approved again is decided
    by the second approval."""
    for event in reversed(record.get("events") or ()):
        if event.get("event") in decided:
            return event.get("at", now)
    return now


def plan_starts_only_after_delivery(snap: Snapshot) -> list[str]:
    """PLN-3: a plan is executed only after its decision was delivered to (matched by) its requester."""
    plans = _by(snap["plan_approval"], "protocol_id")
    return [
        f"plan_execution/{run['plan_id']}: started, but the plan's decision was never delivered"
        for run in snap["plan_execution"]
        if run["plan_id"] in plans and not plans[run["plan_id"]]["decision_delivered"]
    ]


def plan_starts_only_before_deadline(before: Snapshot, after: Snapshot) -> list[str]:
    """PLN-5: an approved plan not started by its deadline expires, so no execution starts after it
    (a step check: the clock of the step that starts it is at or before the plan's ``deadline``)."""
    plans = _by(before["plan_approval"], "protocol_id")
    started = {run["plan_id"] for run in before["plan_execution"]}
    return [
        f"plan_execution/{run['plan_id']}: started at {after['clock']}, after its plan's deadline "
        f"{plans[run['plan_id']]['deadline']}"
        for run in after["plan_execution"]
        if run["plan_id"] not in started
        and run["plan_id"] in plans
        and after["clock"] > plans[run["plan_id"]]["deadline"]
    ]


_CAUSES = {
    "crashed": ("unhealthy",),  # SHD-10: a lost member's inspection ends its open requests
    "member_draining": ("running", "draining"),  # XPR-2: its drain begins, or resumes after a crash
    "cancelled": ("running",),  # APR-6, PLN-6: its running requester withdrew it
}
"""XPR-5's reasons that name what became of the requester, and the requester statuses (before the
step that ends the request) in which that is what happened."""
_CAUSED = {"member_draining": ("draining",), "cancelled": ("running",)}
"""And the requester statuses after that step: a request ends ``member_draining`` because its own
requester drains (XPR-2), so after the step that requester is draining — a running requester
before it is one whose drain begins in that very step, never a bystander of another's drain; one
ends ``cancelled`` because its requester, running, withdrew it, so that requester is still running
after the step — not one whose drain began in it (that is ``member_draining``)."""


def reasons_name_their_causes(before: Snapshot, after: Snapshot) -> list[str]:
    """XPR-5: a request ended ``crashed`` was its requester's when that requester was lost, one
    ended ``member_draining`` when its requester was still running or draining and is draining
    after the step, one ended ``cancelled`` when its requester was running before and after it (a
    step check: the requester's status before and after the step that ended the request). A cause
    misnamed is a legal reason all the same, so no state predicate and no pinned count sees it.
    The reasons a status names (``rejected``, ``expired``, ``timed_out``) are judged by
    :func:`terminal_outcomes_carry_reasons`; ``force_killed`` and ``superseded`` end no approval or
    plan here (no step of the model writes them)."""
    members, members_after = _by(before["member"], "member_id"), _by(after["member"], "member_id")
    problems = []
    for kind in ("operation_approval", "plan_approval"):
        was = {record["protocol_id"]: record["status"] for record in before[kind]}
        for record in after[kind]:
            causes = _CAUSES.get(record["reason"])
            if causes is None or was.get(record["protocol_id"]) == record["status"]:
                continue
            member = members.get(record["requester_id"])
            status = member["status"] if member is not None else "absent"
            if status not in causes:
                problems.append(
                    f"{kind}/{record['protocol_id']}: {record['status']} with reason {record['reason']!r} "
                    f"while its requester {record['requester_id']} was {status}, not {' or '.join(causes)}"
                )
                continue
            caused = _CAUSED.get(record["reason"])
            member = members_after.get(record["requester_id"])
            status = member["status"] if member is not None else "absent"
            if caused is not None and status not in caused:
                problems.append(
                    f"{kind}/{record['protocol_id']}: {record['status']} with reason {record['reason']!r}, "
                    f"yet its requester {record['requester_id']} is {status} after that step, not {' or '.join(caused)}"
                )
    return problems


def released_task_left_its_member(snap: Snapshot) -> list[str]:
    """SHD-3, MSG-6: a shutdown request names as released only a task its member let go.

    The release writes the task first (``pending``, its holder cleared), so a request whose
    ``released_task_id`` names a task its target still holds under the drained incarnation
    (``claimed``, or flagged ``needs_inspection`` by the Lead's last rung, SHD-7) says something
    that did not happen, and the ``shutdown_ack`` it owes says it too. A drained incarnation never
    claims again (MEM-1), so the task's holder is never that incarnation after a real release.
    """
    tasks = _by(snap["task"], "task_id")
    problems = []
    for sd in snap["shutdown_request"]:
        task = tasks.get(sd["released_task_id"]) if sd["released_task_id"] is not None else None
        if task is not None and (task["owner_id"], task["owner_incarnation"]) == (
            sd["target_id"],
            sd["target_incarnation"],
        ):
            problems.append(
                f"shutdown_request/{sd['protocol_id']}: {sd['status']}, says it released task {task['task_id']}, "
                f"which is {task['status']} by {task['owner_id']} (incarnation {task['owner_incarnation']})"
            )
    return problems


def asked_jobs_are_waited_for(snap: Snapshot) -> list[str]:
    """SHD-3, AUD-2, JOB-1: a job its member's drain asked to stop is named on the drain's request.

    A drain pass (the Lead's ladder asks through the same pass, SHD-7) notes a job on the request
    it drains for before it asks the job to stop (``waited_job_ids``), so while a member drains
    for a shutdown request, each of its jobs ``cancel_requested`` is one that request says it waited
    for — also when a crash cut the pass between its two writes. A pass that asked first and was
    cut there, or that never wrote the note, would leave the request and the ``shutdown_ack`` it
    owes silent about a job it stopped. A member that stops on its own signal (SHD-8) drains for no
    request: its jobs are not judged here.
    """
    members = _by(snap["member"], "member_id")
    requests = _by(snap["shutdown_request"], "protocol_id")
    problems = []
    for job in snap["job"]:
        member = members.get(job["owner_id"])
        if job["status"] != "cancel_requested" or member is None or member["status"] != "draining":
            continue
        request = requests.get(member["shutdown_request_id"])
        if request is not None and job["job_id"] not in request["waited_job_ids"]:
            problems.append(
                f"job/{job['job_id']}: cancel_requested while {job['owner_id']} drains for "
                f"{request['protocol_id']}, which does not name it among the jobs it waited for"
            )
    return problems


def released_task_has_checkpoint(snap: Snapshot) -> list[str]:
    """TSK-3, SHD-3: a task a shutdown request names as released carries a checkpoint.

    A drain pass checkpoints the task and releases it in one write (SHD-3), so the next claimer
    resumes from that checkpoint (TSK-3); ``checkpoint_never_lost`` keeps a checkpoint once
    written, but only this check asks that the release wrote one. The release writes the task
    before the request notes it (``released_task_left_its_member``), so no state shows a noted
    release whose task has not been written yet."""
    tasks = _by(snap["task"], "task_id")
    problems = []
    for sd in snap["shutdown_request"]:
        task = tasks.get(sd["released_task_id"]) if sd["released_task_id"] is not None else None
        if task is not None and task["checkpoint"] is None:
            problems.append(
                f"shutdown_request/{sd['protocol_id']}: says it released task {task['task_id']}, "
                f"which has no checkpoint ({task['status']}): the next claimer has nothing to resume from"
            )
    return problems


def checkpoint_never_lost(before: Snapshot, after: Snapshot) -> list[str]:
    """TSK-3, TSK-2: a task's checkpoint, once written, is kept through release, claim and inspection."""
    kept = {task["task_id"] for task in before["task"] if task["checkpoint"] is not None}
    return [
        f"task/{task['task_id']}: its checkpoint was lost ({task['status']})"
        for task in after["task"]
        if task["task_id"] in kept and task["checkpoint"] is None
    ]


REASONS = frozenset(REASON_CODES)  # XPR-5's one taxonomy, from the schemas (one source)
_ANY_REASON = frozenset({"cancelled", "withdrawn"})
"""The outcomes other than success that the taxonomy does not name by themselves: such a record
carries any reason of the taxonomy (who or what ended it)."""

_NAMED = frozenset({"rejected", "expired", "timed_out"})
"""The outcomes the taxonomy names by themselves: such a record's reason is its status (a timed-out
drain recorded as ``expired`` tells the Lead its request was never taken up) — and that reason is
theirs alone: a request cancelled or withdrawn was not rejected, nor did it expire."""


_SETTLED_CALL = frozenset({"succeeded", "failed"})


def consumed_calls_have_outcomes(snap: Snapshot) -> list[str]:
    """APR-8, REC-2: once reconciled, every consumed approval's call has its outcome recorded.

    Consuming writes the approval, then the execution record ahead of the call, then the call's
    outcome; a crash between leaves the call without one, and recovery must settle it — looked up
    by the idempotency key where the call may have run, ``failed`` where the write-ahead record is
    missing (the call never ran). A consumed approval with no execution, or with one still
    ``started``, after reconciliation is a call whose outcome nobody will ever record.
    """
    executions = _by(snap["tool_execution"], "idempotency_key")
    problems = []
    for ap in snap["operation_approval"]:
        if ap["status"] != "consumed":
            continue
        ex = executions.get(ap["protocol_id"])
        if ex is None:
            problems.append(f"operation_approval/{ap['protocol_id']}: consumed, and no execution records its call")
        elif ex["status"] not in _SETTLED_CALL:
            problems.append(
                f"tool_execution/{ap['protocol_id']}: still {ex['status']} after reconciliation: the call's outcome "
                "was never looked up"
            )
    return problems


def terminal_outcomes_carry_reasons(snap: Snapshot) -> list[str]:
    """XPR-5: every request that ended other than by success carries a reason from the one taxonomy,
    an outcome the taxonomy names (rejected, expired, timed out) carries that very reason, and a
    cancelled or withdrawn one none of those three (its reason says who or what ended it)."""
    problems = []
    for kind in _DECIDED:
        for record in snap[kind]:
            status, reason = record["status"], record["reason"]
            if status in _ANY_REASON and reason not in REASONS:
                problems.append(
                    f"{kind}/{record['protocol_id']}: {status} with reason {reason!r}, not one of the taxonomy"
                )
            elif status in _ANY_REASON and reason in _NAMED:
                problems.append(
                    f"{kind}/{record['protocol_id']}: {status} with reason {reason!r}, which only a request "
                    f"{reason} carries"
                )
            elif status in _NAMED and reason != status:
                problems.append(f"{kind}/{record['protocol_id']}: {status} with reason {reason!r}, not {status!r}")
    return problems


# ---- PLN-9: an execution's time runs from its start ---------------------------------------------


def run_starts_within_its_step(before: Snapshot, after: Snapshot) -> list[str]:
    """PLN-9: an execution's time budget runs from its own start, not from its plan's.

    The start writes the execution (the executed marker, PLN-7) with ``started_at`` the instant it
    starts and ``deadline`` a whole ``ttl`` later; an execution that took over its plan's deadline
    instead is failed by the monitor as soon as the plan's time is up, however little of its own
    it used. So an execution that a step (or an interleaving's run of several) creates started
    within it: its ``started_at`` is neither before the clock before the step nor after the clock
    after it. The model keeps a run's deadline alone and shows ``started_at`` as that deadline less
    the ttl, so there this is the deadline set from the clock of the start.
    """
    started = {run["plan_id"] for run in before["plan_execution"]}
    problems = []
    for run in after["plan_execution"]:
        if run["plan_id"] in started:
            continue
        if not before["clock"] <= run["started_at"] <= after["clock"]:
            problems.append(
                f"plan_execution/{run['plan_id']}: created in a step from clock {before['clock']} to "
                f"{after['clock']}, but started at {run['started_at']} (deadline {run['deadline']})"
            )
    return problems


def profile_changes_raise_version(before: Snapshot, after: Snapshot) -> list[str]:
    """XPR-4, APR-7: a capability profile's version says which profile an approval was bound to, so
    every change of what the profile holds raises it, and nothing lowers it. A change that kept the
    version would let an approval made under the old profile be consumed under the new one (the
    consumption compares versions, INV-9, and both sides would agree)."""
    was = _by(before["capability_profile"], "member_id")
    problems = []
    for profile in after["capability_profile"]:
        old = was.get(profile["member_id"])
        if old is None:
            continue
        if profile["version"] < old["version"]:
            fell = f"its version fell from {old['version']} to {profile['version']}"
            problems.append(f"capability_profile/{profile['member_id']}: {fell}")
        elif sorted(profile["tools"]) != sorted(old["tools"]) and profile["version"] == old["version"]:
            problems.append(
                f"capability_profile/{profile['member_id']}: its tools changed from {sorted(old['tools'])} to "
                f"{sorted(profile['tools'])} under the same version {profile['version']}"
            )
    return problems


_CREATED_AT = ("operation_approval", "shutdown_request")
"""The requests whose ``created_at`` is the instant their record is written (a plan's record is
its draft, whose creation may lie long before its submission starts its ttl)."""


def requests_created_within_their_step(before: Snapshot, after: Snapshot) -> list[str]:
    """APR-1, SHD-1: a request's record says when it was created, and that is the step that wrote it.

    An approval or a shutdown request is created ``requested`` with ``created_at`` the instant of
    its creation and ``deadline`` its ttl later (its wait starts at once; a plan's starts at its
    submission, :func:`deadline_runs_from_submission`). So a request that a step (or an
    interleaving's run of several) creates has ``created_at`` neither before the clock before the
    step nor after the clock after it — as :func:`run_starts_within_its_step` asks of an
    execution's ``started_at``. The model keeps a request's deadline alone and shows
    ``created_at`` as that deadline less the ttl, so there this is the deadline set from the clock
    of the request: a deadline taken from another instant (a task's claim, a tick early or late)
    breaks it wherever the request is made after the clock first moved.
    """
    problems = []
    for kind in _CREATED_AT:
        known = {record["protocol_id"] for record in before[kind]}
        for record in after[kind]:
            if record["protocol_id"] in known:
                continue
            if not before["clock"] <= record["created_at"] <= after["clock"]:
                problems.append(
                    f"{kind}/{record['protocol_id']}: created in a step from clock {before['clock']} to "
                    f"{after['clock']}, but says it was created at {record['created_at']} "
                    f"(deadline {record['deadline']})"
                )
    return problems


# ---- SHD-3: a release noted on its request; PLN-4: a completion after every approved step ----------


def release_noted_on_its_request(before: Snapshot, after: Snapshot) -> list[str]:
    """SHD-3, AUD-2: a draining member lets go of its task back to ``pending`` only with its request
    noting the release.

    The release writes the task, then the request's ``released_task_id``, then clears the member's
    task (the member's write is last); a reconciliation or the Lead's inspection that ends a release
    cut short notes it on the request before it clears the member's task (``note_release``). So in
    any step where a member that was draining for a request stops naming a task, still drains, and
    that task is ``pending`` afterwards, the request names it as released: otherwise the request
    and the ``shutdown_ack`` it owes are silent about the task the drain handed back (AUD-2: "which
    task a shutdown released"). A member no longer draining is not judged: across several steps
    (an interleaving's run) it may have been force-terminated and inspected, and the Lead may have
    put its task back (SHD-7), which is no release.
    """
    tasks = _by(after["task"], "task_id")
    requests = _by(after["shutdown_request"], "protocol_id")
    now = _by(after["member"], "member_id")
    problems = []
    for member in before["member"]:
        t, sid = member["current_task_id"], member["shutdown_request_id"]
        if member["status"] != "draining" or t is None or sid is None:
            continue
        later = now.get(member["member_id"])
        task = tasks.get(t)
        if later is None or later["status"] != "draining" or later["current_task_id"] is not None:
            continue
        if task is None or task["status"] != "pending":
            continue
        request = requests.get(sid)
        if request is not None and request["released_task_id"] != t:
            problems.append(
                f"member/{member['member_id']}: let go of task {t} (now pending) while draining for {sid}, "
                f"which names {request['released_task_id']} as released"
            )
    return problems


def completed_run_ran_every_step(snap: Snapshot) -> list[str]:
    """PLN-4, PLN-10: an execution is ``completed`` only after every approved step ran, in order.

    INV-8 asks that the executed steps be a prefix of the approved ones; a completion with a
    prefix short of the whole plan skipped steps (PLN-4: a skipped step aborts, it never completes),
    and the ``plan_completion`` it owes reports a plan done that was not.
    """
    plans = _by(snap["plan_approval"], "protocol_id")
    problems = []
    for run in snap["plan_execution"]:
        plan = plans.get(run["plan_id"])
        if run["status"] != "completed" or plan is None:
            continue
        approved = [step["id"] for step in plan["plan"]["steps"]]
        if run["executed_step_ids"] != approved:
            problems.append(
                f"plan_execution/{run['plan_id']}: completed after {run['executed_step_ids']}, approved {approved}"
            )
    return problems
