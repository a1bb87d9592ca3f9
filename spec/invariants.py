"""INV-1 … INV-12 as pure, named predicates over snapshots (DESIGN rule 5, STYLE rule 3).

A *state* invariant takes one snapshot; a *step* invariant takes the snapshots before and after
one operation (a crash or restart included). Each returns the list of its violations, as
sentences naming the record, the field, the expected and the actual value; an empty list means
it holds. The same functions run in the explorer, the Hypothesis model tests and the conformance
suite. Invariants marked ``after_reconcile`` (INV-4, INV-7) may be broken by a crash prefix and
must hold again once reconciliation has run (REC-2).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import ids, safety
from ._tables import final_states, initial_state, open_states, transition_table
from .schemas import RECORD_MACHINES, record_id, record_key
from .secret_corpus import SECRETS

Snapshot = Mapping[str, Any]
ACTIVE_SHUTDOWN = frozenset(open_states("shutdown_request"))
"""A shutdown request still in force: the machine's states no edge ends (one source for the model,
the invariants and the reference; an outside review dropped ``timed_out`` from a copy unseen)."""


@dataclass(frozen=True)
class Invariant:
    clause: str
    name: str
    kind: str  # "state" or "step"
    after_reconcile: bool
    check: Callable[..., list[str]]
    reads: tuple[str, ...] = ()  # the snapshot sections the check reads; () = every section
    by_section: Callable[..., list[str]] | None = None
    """If set, ``check`` is the concatenation, over the sections it reads (in snapshot order when
    ``reads`` is empty), of ``by_section(section, value, ...)`` with that section's value in each
    snapshot: a memo can then cache each section's share on its own. A step check's share of a
    section that holds the very same documents before and after must be empty."""
    quiet_unless: tuple[str, ...] = ()
    """For a step check that reads every section: it finds nothing in a step that leaves all of
    these sections with the very same documents, so a memo need not run it then."""
    suspect: Callable[[Snapshot, Snapshot], bool] | None = None
    """For a step check that reads every section: it finds nothing in a step where
    ``suspect(before, after)`` is false, and ``suspect`` reads only the ``suspect_reads``
    sections, so a memo can key ``suspect`` on them and run ``check`` only where it holds."""
    suspect_reads: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return (self.check.__doc__ or "").strip().splitlines()[0]


def _index(records: list[Mapping[str, Any]], field: str) -> dict[Any, Mapping[str, Any]]:
    return {record[field]: record for record in records}


# ---- state invariants ----------------------------------------------------------------------------


def approval_consumed_at_most_once(snap: Snapshot) -> list[str]:
    """INV-1: one consumed approval per executed call, matching requester, task, tool and digest.

    Clauses: APR-5, APR-6, APR-8, XPR-4. Each tool execution is keyed by a consumed approval's id,
    was called at most once under that key, matches the approval's binding (the profile version
    too: the call runs under the profile it was approved under, XPR-4 — and an execution recovery
    writes for a call that never ran, APR-8, carries it as well), and was consumed by its deadline.
    """
    approvals = _index(snap["operation_approval"], "protocol_id")
    problems = []
    for ex in snap["tool_execution"]:
        key = ex["idempotency_key"]
        ap = approvals.get(key)
        if ap is None or ap["status"] != "consumed":
            problems.append(f"tool_execution/{key}: no consumed approval under its key (found {ap and ap['status']})")
            continue
        for field in ("requester_id", "task_id", "tool_name", "arguments_digest", "profile_version"):
            if ex[field] != ap[field]:
                problems.append(f"tool_execution/{key}: {field} {ex[field]!r} != approved {ap[field]!r}")
        if ex["attempts"] > 1:
            problems.append(f"tool_execution/{key}: called {ex['attempts']} times under one approval")
        if ap["consumed_at"] is None or ap["consumed_at"] > ap["deadline"]:
            problems.append(
                f"operation_approval/{key}: consumed at {ap['consumed_at']} after deadline {ap['deadline']}"
            )
    return problems


def world_agrees(calls: Sequence[str], executions: Sequence[Mapping[str, Any]]) -> list[str]:
    """APR-8 (and INV-1, APR-6): the external system against the stores.

    ``calls`` is the idempotency key of every call the protected tool received, in order;
    ``executions`` the ``tool_execution`` records. No key was called twice (a call is never
    repeated, a recovery looks its outcome up instead); every call has its execution record
    (written ahead of the call); and — the tools of the model and of the conformance suite always
    answer ok — an execution is recorded ``succeeded`` exactly when the tool was called under its
    key. The stores alone cannot show an outcome recorded without looking it up: the snapshot holds
    what was recorded, not what the world received. The explorer reads the world from the model's
    ghost (:func:`spec.model._snapshot.world_of`), the conformance suite from the driver's
    ``world.calls``; so this is :data:`WORLD`, not one of :data:`INVARIANTS` (predicates of a
    snapshot alone).
    """
    twice = sorted({key for key in calls if calls.count(key) > 1})
    if twice:
        return [f"INV-1 the protected tool was called {calls.count(twice[0])} times under {twice[0]}: never again"]
    recorded = {e["idempotency_key"]: e["status"] for e in executions}
    unrecorded = sorted(set(calls) - set(recorded))
    if unrecorded:
        return [f"APR-6 the protected tool was called under {unrecorded[0]}, which no execution records"]
    uncalled = sorted(key for key, status in recorded.items() if status == "succeeded" and key not in calls)
    if uncalled:
        return [f"APR-8 the execution {uncalled[0]} is recorded succeeded, but the tool was never called under it"]
    failed = sorted(key for key, status in recorded.items() if status == "failed" and key in calls)
    if failed:
        return [
            f"APR-8 the tool was called under {failed[0]} and answered ok, but its execution is recorded failed "
            "(an outcome recorded without looking it up, or a call made after the outcome was decided)"
        ]
    return []


def shutdown_completed_iff_member_stopped(snap: Snapshot) -> list[str]:
    """INV-4: a completed shutdown ⇔ its member is stopped; a stopped member holds no task.

    Clauses: SHD-5, SHD-7. "Its member" is the incarnation the request was made for; a member
    restarted since then is a new incarnation and is not that member.
    """
    members = _index(snap["member"], "member_id")
    shutdowns = _index(snap["shutdown_request"], "protocol_id")
    problems = []
    for sd in snap["shutdown_request"]:
        member = members.get(sd["target_id"])
        if member is None:  # a schema-valid snapshot may target a member the team lacks
            problems.append(f"shutdown_request/{sd['protocol_id']}: targets {sd['target_id']!r}, no member of the team")
            continue
        same_incarnation = member["incarnation"] == sd["target_incarnation"]
        if sd["status"] == "completed" and same_incarnation and member["status"] not in ("stopped", "retired"):
            problems.append(f"shutdown_request/{sd['protocol_id']}: completed but member is {member['status']}")
    for member in snap["member"]:
        if member["status"] != "stopped":
            continue
        sid = member["shutdown_request_id"]
        status = shutdowns[sid]["status"] if sid in shutdowns else "not in the store"
        if sid is not None and status != "completed":
            problems.append(f"member/{member['member_id']}: stopped but shutdown {sid} is {status}")
        if member["current_task_id"] is not None:
            problems.append(f"member/{member['member_id']}: stopped but holds task {member['current_task_id']}")
        for task in snap["task"]:
            mine = task["owner_id"] == member["member_id"] and task["owner_incarnation"] == member["incarnation"]
            if mine and task["status"] == "claimed":
                problems.append(f"task/{task['task_id']}: claimed by stopped member {member['member_id']}")
    return problems


def _message_content(doc: Mapping[str, Any]) -> str:
    return ids.canonical_json({k: v for k, v in doc.items() if k not in ("message_id", "timestamp")})


def retry_creates_no_duplicate(snap: Snapshot) -> list[str]:
    """INV-6: a retry never creates a second protocol record or a second distinct message.

    Clauses: MSG-4, STO-2. Approval ids are the stable id of (requester, tool call, kind), so one
    call has one record; two messages with the same content must have the same id.
    """
    problems = []
    for ap in snap["operation_approval"]:
        expected = ids.protocol_id(ap["requester_id"], ap["tool_call_id"], "operation_approval")
        if ap["protocol_id"] != expected:
            problems.append(f"operation_approval/{ap['protocol_id']}: not the stable id {expected}")
    by_content: dict[str, set[str]] = defaultdict(set)
    for kind in ("message", "outbox_entry"):
        for record in snap[kind]:
            by_content[_message_content(record["message"])].add(record["message"]["message_id"])
    for content, message_ids in by_content.items():
        if len(message_ids) > 1:
            problems.append(f"one message under {len(message_ids)} ids {sorted(message_ids)}: {content[:120]}")
    return problems


def owed_messages(snap: Snapshot) -> Iterator[tuple[str, str, str]]:
    """(record, message_type, key) for every message the persisted records owe: the key is the
    message's ``correlation_id``; a ``task_suspended`` notice's as :func:`_suspension_key` says."""
    owes = {
        "operation_approval": {
            "requested": "approval_request",
            "approved": "approval_decision",
            "rejected": "approval_decision",
        },
        "plan_approval": {
            "pending": "plan_request",
            "approved": "plan_decision",
            "rejected": "plan_decision",
            "needs_revision": "plan_decision",
            "expired": "plan_abandoned",
        },
        "shutdown_request": {"requested": "shutdown_request", "completed": "shutdown_ack"},
    }
    for kind, table in owes.items():
        for record in snap[kind]:
            if record["status"] in table:
                yield f"{kind}/{record['protocol_id']}", table[record["status"]], record["protocol_id"]
    for run in snap["plan_execution"]:
        if run["status"] in ("completed", "rolled_back"):
            yield f"plan_execution/{run['plan_id']}", "plan_completion", run["plan_id"]
    for member in snap["member"]:
        if member["status"] == "unhealthy":
            pid = ids.protocol_id(member["member_id"], f"incarnation-{member['incarnation']}", "member_lost")
            yield f"member/{member['member_id']}", "member_lost", pid
    for task in snap["task"]:
        if task["status"] == "suspended":  # SHD-9
            yield f"task/{task['task_id']}", "task_suspended", _suspension_key(task)


def _suspension_key(task: Mapping[str, Any]) -> str:
    """The key a suspended task's ``task_suspended`` notice is owed under: its stable id, which
    counts the task's claims (``claim-n``, SHD-9), where the task's history shows them (an
    implementation's records); else — a record with no history, as the model's — the task itself,
    and then an earlier suspension's notice of the same task answers for it too."""
    claims = sum(1 for event in task.get("history") or () if event.get("event") == "claimed")
    if claims:
        return ids.protocol_id(task["task_id"], f"claim-{claims}", "task_suspended")
    return str(task["task_id"])


def _owed_keys(message: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """How :func:`owed_messages` names a message: by its type and correlation id — a
    ``task_suspended`` notice by its task too (:func:`_suspension_key`)."""
    if message["message_type"] == "task_suspended":
        return ("task_suspended", message["correlation_id"]), ("task_suspended", message["body"].get("task_id"))
    return ((message["message_type"], message["correlation_id"]),)


def owed_messages_present(snap: Snapshot) -> list[str]:
    """INV-7: every message a record owes is on the bus or in the outbox under its stable id, and an
    outbox entry marked sent has its message on the bus (it is marked only after the post).

    Owed are the protocols' requests and replies and the two notices a record's status owes: an
    ``unhealthy`` member its ``member_lost`` (SHD-10), a ``suspended`` task its ``task_suspended``
    (SHD-9): this suspension's, told apart from an earlier one's by the claims the task's history
    counts; where a record keeps no history (the model's), any notice of the same task answers.

    Clauses: REC-3, MSG-6, SHD-5, SHD-9, SHD-10. Checked after reconciliation; that reconciling
    again changes nothing is the step invariant ``reconcile_is_idempotent``.
    """
    present = {key for kind in ("message", "outbox_entry") for r in snap[kind] for key in _owed_keys(r["message"])}
    on_bus = {r["message"]["message_id"] for r in snap["message"]}
    return [
        f"{record}: owes {message_type}, which is neither on the bus nor in the outbox"
        for record, message_type, correlation in owed_messages(snap)
        if (message_type, correlation) not in present
    ] + [
        f"outbox_entry/{entry['message_id']}: marked sent, but its {entry['message']['message_type']} is not on "
        "the bus: lost, since the outbox sends again only what it still owes (REC-3)"
        for entry in snap["outbox_entry"]
        if entry["status"] == "sent" and entry["message_id"] not in on_bus
    ]


_PLAN_DECISION_EVENTS = frozenset({"approved", "rejected", "needs_revision", "retracted"})
_NOT_APPROVED = frozenset({"draft", "pending", "rejected", "needs_revision"})


def plan_executes_once_and_only_approved_steps(snap: Snapshot) -> list[str]:
    """INV-8: a plan executes at most once and only its approved steps, in order.

    Clauses: PLN-4, PLN-5, PLN-7. An approved or consumed plan was approved by its responder
    (a timeout never approves), and a plan not approved (pending, rejected, sent back) has no
    approval as its latest decision event; a consumed plan has its executed marker (PLN-7: the
    marker is written before the plan is marked consumed, so a plan consumed without one was
    used up by nothing that ran); an execution belongs to a consumed plan and its executed step
    ids are a prefix of the approved steps, none repeated.
    """
    plans = _index(snap["plan_approval"], "protocol_id")
    runs = {run["plan_id"] for run in snap["plan_execution"]}
    problems = []
    for plan in snap["plan_approval"]:
        if plan["status"] in ("approved", "consumed"):
            actors = [e["actor"] for e in plan["events"] if e["event"] == "approved"]
            if not actors or actors[-1] != plan["responder_id"]:
                problems.append(
                    f"plan_approval/{plan['protocol_id']}: {plan['status']} without approval by "
                    f"{plan['responder_id']} (approved by {actors})"
                )
        decisions = [e["event"] for e in plan["events"] if e["event"] in _PLAN_DECISION_EVENTS]
        if plan["status"] in _NOT_APPROVED and decisions and decisions[-1] == "approved":
            problems.append(
                f"plan_approval/{plan['protocol_id']}: {plan['status']}, but its last decision is an approval"
            )
        if plan["status"] == "consumed" and plan["protocol_id"] not in runs:
            problems.append(f"plan_approval/{plan['protocol_id']}: consumed without its executed marker")
    for run in snap["plan_execution"]:
        plan = plans.get(run["plan_id"])
        done = run["executed_step_ids"]
        # PLN-7: the executed marker is written before the plan is marked consumed, so a crash
        # between the two leaves an approved plan with a marker — but no step may have run yet.
        if plan is None or plan["status"] not in ("approved", "consumed") or (plan["status"] == "approved" and done):
            problems.append(
                f"plan_execution/{run['plan_id']}: ran {done} while its plan is {plan and plan['status']}, not consumed"
            )
            continue
        approved = [step["id"] for step in plan["plan"]["steps"]]
        if done != approved[: len(done)]:
            problems.append(f"plan_execution/{run['plan_id']}: executed {done}, approved order {approved}")
    return problems


_SCANNED: dict[int, tuple[Any, tuple[str, ...]]] = {}
"""id(document) → (document, secret names found). Snapshots share unchanged documents, so each
document is scanned once; the entry holds the document, so its id cannot be reused meanwhile."""


def _secrets_in(document: Any) -> tuple[str, ...]:
    found = _SCANNED.get(id(document))
    if found is None:
        text = json.dumps(document)
        found = (document, tuple(name for name, secret in SECRETS.items() if secret in text))
        if len(_SCANNED) > 500_000:
            _SCANNED.clear()
        _SCANNED[id(document)] = found
    return found[1]


def no_secret_stored(snap: Snapshot) -> list[str]:
    """INV-10: no secret from the test corpus appears in any stored record.

    Clauses: AUD-3, APR-4. Every string of every record of every store is searched (through the
    records' JSON text; the corpus secrets contain nothing that JSON escapes).
    """
    return [problem for kind, records in snap.items() for problem in _secrets_stored(kind, records)]


def _secrets_stored(kind: str, records: Any) -> list[str]:
    """INV-10 for one section of a snapshot."""
    if kind == "clock":
        return []
    problems = []
    for record in records:
        parts = [record["message"], record["status"]] if kind in ("message", "outbox_entry") else [record]
        for name in (n for part in parts for n in _secrets_in(part)):
            problems.append(f"{record_key(kind, record)}: stores the {name} secret")
    return problems


_DEADLINED = ("operation_approval", "plan_approval", "shutdown_request")


def requests_final_by_deadline(snap: Snapshot) -> list[str]:
    """INV-12: every request is final within its deadline plus one monitor pass, or timed_out.

    Clauses: SHD-6, PLN-5, APR-5, PLN-9. A draining shutdown held by a non-interruptible job must be
    ``timed_out``, never silently stuck. A plan's execution is no request, but its time budget is
    judged by the same pass (PLN-9): a run still ``running`` a pass after its deadline was left
    alone by the monitor (that it then rolls back is the liveness check's). A request's message
    still unread is expired by the same pass (SHD-6), unless a drain began under it (its reader
    records the delivery).
    """
    now = snap["clock"]
    problems = []
    for kind in _DEADLINED:
        finals = final_states(RECORD_MACHINES[kind]) | {"timed_out"}
        for record in snap[kind]:
            if record["status"] == "draft":
                continue  # not yet sent, so not yet a request (PLN-1); ttl runs from submission
            if record["deadline"] < now - 1 and record["status"] not in finals:
                problems.append(
                    f"{record_key(kind, record)}: still {record['status']} at {now}, deadline was {record['deadline']}"
                )
    for run in snap["plan_execution"]:
        if run["status"] == "running" and run["deadline"] < now - 1:
            problems.append(f"plan_execution/{run['plan_id']}: still running at {now}, deadline was {run['deadline']}")
    requests = {kind: _index(snap[kind], "protocol_id") for kind in _DEADLINED}
    for entry in snap["message"]:
        message = entry["message"]
        section = safety.REQUEST_MESSAGES.get(message["message_type"], "")
        pending = section in requests and entry["status"] == "pending"
        # the request's own message, under its stable id (a second copy is MSG-4's to judge)
        pending = pending and message["message_id"] == ids.message_id(message["correlation_id"], "request")
        request = requests[section].get(message["correlation_id"]) if pending else None
        if request is None or request["status"] == "draft":
            continue  # a plan's request message goes out before its record is pending (MSG-6, PLN-1)
        if section == "shutdown_request" and request["status"] in safety.DRAIN_BEGUN:
            continue
        if request["deadline"] < now - 1:
            problems.append(
                f"message/{message['message_id']}: the {message['message_type']} still pending unread at {now}, "
                f"its request's deadline was {request['deadline']}"
            )
    return problems


# ---- step invariants -----------------------------------------------------------------------------


def claims_only_by_eligible_members(before: Snapshot, after: Snapshot) -> list[str]:
    """INV-2: no task is claimed by a member that is not running, not accepting, or targeted by
    an active shutdown request.

    Clauses: MEM-1, SHD-2. Judged on the state the claim saw (``before``).
    """
    members = _index(before["member"], "member_id")
    old = {t["task_id"]: t for t in before["task"]}
    problems = []
    for task in after["task"]:
        if task["status"] != "claimed" or not _newly_claimed(old.get(task["task_id"]), task):
            continue
        member = members.get(task["owner_id"])
        if member is None:  # a schema-valid snapshot may name no member, or one the team lacks
            problems.append(f"task/{task['task_id']}: claimed by {task['owner_id']!r}, no member of the team")
            continue
        targeted = [
            sd["protocol_id"]
            for sd in before["shutdown_request"]
            if sd["status"] in ACTIVE_SHUTDOWN
            and sd["target_id"] == member["member_id"]
            and sd["target_incarnation"] == member["incarnation"]
        ]
        if member["status"] != "running" or not member["accepting_new_tasks"] or targeted:
            problems.append(
                f"task/{task['task_id']}: claimed by {member['member_id']} while {member['status']}, "
                f"accepting={member['accepting_new_tasks']}, targeted by {targeted}"
            )
    return problems


def _newly_claimed(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """A claim happened in the step: the task was not claimed, or is now another holder's, or has
    another claim token. Not by the token alone: a claim that reused its task's old token (outside
    review 59's P1) would then have been no claim at all to INV-2."""
    if before is None or before["status"] != "claimed":
        return True
    holder = ("owner_id", "owner_incarnation", "claim_token")
    return any(before[field] != after[field] for field in holder)


def transitions_follow_tables(before: Snapshot, after: Snapshot) -> list[str]:
    """INV-3: every status change follows its machine's table; nothing is resurrected or lost.

    A new record starts in its initial state or one edge from it (created and moved by one step).
    """
    return [problem for kind in RECORD_MACHINES for problem in _table_steps(kind, before[kind], after[kind])]


def _table_steps(kind: str, before: list[Mapping[str, Any]], after: list[Mapping[str, Any]]) -> list[str]:
    """INV-3 for the records of one kind."""
    if len(before) == len(after) and all(b is a for b, a in zip(before, after, strict=True)):
        return []  # the very same documents: nothing changed
    machine = RECORD_MACHINES[kind]
    table = transition_table(machine)
    old = {record_id(kind, r): r["status"] for r in before}
    new = {record_id(kind, r): r["status"] for r in after}
    problems = [f"{kind}/{key}: record disappeared (was {old[key]})" for key in old.keys() - new.keys()]
    start = initial_state(machine)
    for key, status in new.items():
        previous = old.get(key)
        if previous is None and status != start and status not in table[start]:
            problems.append(f"{kind}/{key}: created as {status!r}, not {start!r}")
        elif previous is not None and previous != status and status not in table[previous]:
            problems.append(f"{kind}/{key}: illegal {previous!r} -> {status!r}")
    return problems


def release_only_after_jobs_settle(before: Snapshot, after: Snapshot) -> list[str]:
    """INV-5: a draining member releases a task only when none of its jobs is running.

    Clauses: SHD-3, SHD-4, JOB-1. A cancel request is not a stopped job.
    """
    members = _index(before["member"], "member_id")
    released_now = {t["task_id"] for t in after["task"] if t["status"] == "pending"}
    problems = []
    for task in before["task"]:
        if task["status"] != "claimed" or task["task_id"] not in released_now:
            continue
        owner = members.get(task["owner_id"])
        if owner is None:  # a schema-valid snapshot may name no owner, or one the team lacks
            problems.append(f"task/{task['task_id']}: claimed by {task['owner_id']!r}, no member of the team")
            continue
        busy = [
            j["job_id"] for j in before["job"] if j["owner_id"] == owner["member_id"] and j["status"] in safety.BUSY_JOB
        ]
        if owner["status"] == "draining" and busy:
            problems.append(f"task/{task['task_id']}: released by draining {owner['member_id']} while {busy} run")
    return problems


def approval_grants_no_capability(before: Snapshot, after: Snapshot) -> list[str]:
    """INV-9: approval never grants a tool outside the member's profile (APR-7, XPR-4).

    At consumption the requester's current profile holds the tool and has the version the
    approval was bound to. And at the request (APR-7: a tool outside the profile is refused,
    approval or not): a new approval is for a tool of its requester's profile, bound to that
    profile's version.
    """
    profiles = _index(before["capability_profile"], "member_id")
    was = {a["protocol_id"]: a["status"] for a in before["operation_approval"]}
    problems = []
    for ap in after["operation_approval"]:
        if ap["protocol_id"] not in was:
            profile = profiles.get(ap["requester_id"], {"tools": [], "version": None})
            if ap["tool_name"] not in profile["tools"] or profile["version"] != ap["profile_version"]:
                problems.append(
                    f"operation_approval/{ap['protocol_id']}: requested for {ap['tool_name']} under profile "
                    f"v{ap['profile_version']}, but the requester's profile is v{profile['version']} {profile['tools']}"
                )
        if ap["status"] != "consumed" or was.get(ap["protocol_id"]) == "consumed":
            continue
        profile = profiles.get(ap["requester_id"], {"tools": [], "version": None})
        if ap["tool_name"] not in profile["tools"] or profile["version"] != ap["profile_version"]:
            problems.append(
                f"operation_approval/{ap['protocol_id']}: consumed for {ap['tool_name']} under profile "
                f"v{ap['profile_version']}, but profile is v{profile['version']} {profile['tools']}"
            )
    return problems


_INCARNATION_FIELDS = {
    "shutdown_request": "target_incarnation",
    "approval_request": "requester_incarnation",
    "plan_request": "requester_incarnation",
}


def _stale_deliveries(before: Snapshot, after: Snapshot) -> list[tuple[Mapping[str, Any], Any, Any]]:
    """The messages this step delivers that were made for an older incarnation of their member:
    (the message, the incarnation it names, the member's). Reads ``member`` (before) and ``message``."""
    members = _index(before["member"], "member_id")
    was = {r["message"]["message_id"]: r["status"] for r in before["message"]}
    stale = []
    for record in after["message"]:
        message = record["message"]
        field = _INCARNATION_FIELDS.get(message["message_type"])
        if field is None or record["status"] == was.get(message["message_id"]) or record["status"] != "delivered":
            continue
        member_name = message["target"] if message["message_type"] == "shutdown_request" else message["sender"]
        member = members.get(member_name)
        if member is None or message["body"][field] >= member["incarnation"]:
            continue
        stale.append((message, message["body"][field], member["incarnation"]))
    return stale


def _stale_consumptions(before: Snapshot, after: Snapshot) -> list[str]:
    """Approvals this step consumes by another incarnation than the one they were made for. Reads
    ``member`` (before) and ``operation_approval``."""
    members = _index(before["member"], "member_id")
    old = {a["protocol_id"]: a["status"] for a in before["operation_approval"]}
    problems = []
    for ap in after["operation_approval"]:
        member = members.get(ap["requester_id"])
        newly = ap["status"] == "consumed" and old.get(ap["protocol_id"]) != "consumed"
        if not newly:
            continue
        if member is None:  # a schema-valid snapshot may name a member the team lacks
            problems.append(f"operation_approval/{ap['protocol_id']}: consumed for {ap['requester_id']!r}, no member")
        elif ap["requester_incarnation"] != member["incarnation"]:
            problems.append(
                f"operation_approval/{ap['protocol_id']}: made for incarnation "
                f"{ap['requester_incarnation']}, consumed by incarnation {member['incarnation']}"
            )
    return problems


def stale_incarnation_changes_nothing(before: Snapshot, after: Snapshot) -> list[str]:
    """INV-11: no message or call for an older member incarnation changes any record (XPR-1).

    A message handled in this step that was made for an older incarnation of its member may only
    change its own delivery status; an approval may be consumed only by the incarnation it was
    made for. Its problems come only from :func:`stale_incarnation_suspected`'s findings, so it
    finds nothing where that is false.
    """
    problems = []
    for message, incarnation, current in _stale_deliveries(before, after):
        changed = [kind for kind in RECORD_MACHINES if kind != "message" and before[kind] != after[kind]]
        if changed:
            problems.append(
                f"message/{message['message_id']}: stale {message['message_type']} for incarnation "
                f"{incarnation} (member at {current}) changed {changed}"
            )
    return problems + _stale_consumptions(before, after)


def stale_incarnation_suspected(before: Snapshot, after: Snapshot) -> bool:
    """INV-11's guard: whether this step delivers a message made for an older incarnation or
    consumes an approval by another incarnation. It reads only the sections named by
    :data:`STALE_INCARNATION_SUSPECT_READS` (the rest of INV-11 compares every record section, so
    only where the guard holds)."""
    return bool(_stale_deliveries(before, after)) or bool(_stale_consumptions(before, after))


STALE_INCARNATION_SUSPECT_READS = ("member", "message", "operation_approval")


def reconcile_is_idempotent(first: Snapshot, second: Snapshot) -> list[str]:
    """INV-7 (second half), REC-1: reconciling a reconciled state changes nothing."""
    return [] if first == second else [f"reconcile changed {_diff_kinds(first, second)} on a second run"]


def _diff_kinds(a: Snapshot, b: Snapshot) -> list[str]:
    return [kind for kind in a if a[kind] != b.get(kind)]


_AUDITED = {"operation_approval": "approval", "shutdown_request": "shutdown", "plan_approval": "plan"}
"""Protocol records whose events the team audit log must hold, with the prefix of the log's event
names (the reference's ``reference._audit.AUDITED``). Every status change of an approval, a
shutdown request or a plan approval is a decision (AUD-2: "every legal transition and its time");
a plan's execution carries out a logged decision and is not one. The abstract model keeps no events of
these records (it abstracts the log away), so on its snapshots this holds trivially; it is the
reference's and a foreign implementation's check."""


_HASH_CHECKED: dict[int, tuple[Mapping[str, Any], bool]] = {}
"""id of an audit entry document → (the document, whether its hash is the protocol's). Snapshots
share unchanged documents and are never edited, so an entry's hash is computed once; the document
is kept beside its verdict, so its id cannot be reused while the verdict is kept."""


def _hash_holds(entry: Mapping[str, Any]) -> bool:
    known = _HASH_CHECKED.get(id(entry))  # the entry is kept with its verdict, so its id stays its own
    if known is None:
        if len(_HASH_CHECKED) > 100_000:
            _HASH_CHECKED.clear()
        known = _HASH_CHECKED[id(entry)] = (entry, ids.audit_entry_hash(entry) == entry["hash"])
    return known[1]


def audit_log_is_a_chain(snap: Snapshot) -> list[str]:
    """AUD-5: the team's audit log is a whole hash chain.

    Its entries are numbered 0, 1, 2, … with no gap; the first links to ``spec.ids.AUDIT_GENESIS``
    and every other to the hash of the entry before it; and each entry's ``hash`` is the protocol's
    (:func:`spec.ids.audit_entry_hash`: SHA-256 of the canonical JSON of its other fields), so that
    anyone can verify any implementation's log, and an entry left out, moved, altered or relinked
    is found at its first broken link.
    """
    previous = ids.AUDIT_GENESIS
    for index, entry in enumerate(sorted(snap["audit_entry"], key=lambda e: e["sequence"])):
        if entry["sequence"] != index:
            return [f"audit_entry: entry {index} is missing (the next is number {entry['sequence']})"]
        if entry["previous_hash"] != previous:
            return [f"audit_entry/{index}: links to {entry['previous_hash'][:12]}…, not to the entry before it"]
        if not _hash_holds(entry):
            hashed = ids.canonical_json({key: value for key, value in entry.items() if key != "hash"})
            return [
                f"audit_entry/{index}: its hash {entry['hash'][:12]}… is not {ids.audit_entry_hash(entry)[:12]}…, "
                f"the SHA-256 of its other fields in canonical JSON: {hashed[:240]}"
            ]
        previous = entry["hash"]
    return []


def decisions_audited(snap: Snapshot) -> list[str]:
    """AUD-5: every protocol decision in the stores has its entry in the team audit log.

    Clauses: AUD-1, AUD-5. Checked after reconciliation: a crash can fall between a record's write
    and its log entry, and reconciliation appends what the log misses. The entries under a record's
    id, in log order, are exactly the record's events (actor, event, summary, time), none missing,
    none extra, none altered; and no entry names a record of an audited kind that does not exist.
    """
    log: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for entry in sorted(snap["audit_entry"], key=lambda e: e["sequence"]):
        log[entry["subject_id"]].append((entry["actor"], entry["event"], entry["summary"], entry["at"]))
    problems = []
    for kind, prefix in _AUDITED.items():
        for record in snap.get(kind, []):
            expected = [(e["actor"], f"{prefix}.{e['event']}", e["summary"], e["at"]) for e in record["events"]]
            found = log.pop(record["protocol_id"], [])
            if found != expected:
                at = next((i for i, pair in enumerate(zip(expected, found, strict=False)) if pair[0] != pair[1]), None)
                at = min(len(expected), len(found)) if at is None else at
                problems.append(
                    f"{record_key(kind, record)}: event {at} is {expected[at] if at < len(expected) else 'absent'} "
                    f"in the record but {found[at] if at < len(found) else 'absent'} in the audit log"
                )
    prefixes = tuple(f"{prefix}." for prefix in _AUDITED.values())
    for subject, entries in log.items():
        for entry in entries:
            if entry[1].startswith(prefixes):
                problems.append(f"audit_entry: {entry[1]} of {subject}, which no record holds")
    return problems


_CREATED = {"operation_approval": "requested", "shutdown_request": "requested", "plan_approval": "drafted"}
"""The event each audited record is created with: a record whose events start with it keeps its
whole history (the reference's); the model keeps none, or only a plan's approval (abstraction)."""


def records_keep_their_status_events(snap: Snapshot) -> list[str]:
    """AUD-1: a record that keeps its history keeps the event of the status it is in.

    Clauses: AUD-1. An approval, a shutdown request or a plan approval enters a status and records
    the event of that move in one write, so its status is the one its last status event names: an
    event named after a status of its machine, a plan's ``drafted`` (draft), or its ``retracted``
    (the status its summary names); any other event (a delivery, a note) leaves the status as it
    was. Judged only for a record whose events start with its creation (the reference's records):
    the model abstracts these events away.
    """
    problems = []
    for kind, created in _CREATED.items():
        table = transition_table(RECORD_MACHINES[kind])
        statuses = set(table) | {target for targets in table.values() for target in targets}
        for record in snap.get(kind, []):
            events = record["events"]
            if not events or events[0]["event"] != created:
                continue
            status = None
            for event in events:
                name = event["event"]
                if name == "drafted":
                    status = "draft"
                elif name == "retracted" and kind == "plan_approval":
                    status = event["summary"]
                elif name in statuses:
                    status = name
            if status != record["status"]:
                problems.append(
                    f"{record_key(kind, record)}: {record['status']}, but its last status event says {status}"
                )
    return problems


_APPROVALS, _PLANS, _SHUTDOWNS = "operation_approval", "plan_approval", "shutdown_request"
_MESSAGES = ("message", "outbox_entry")

INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "INV-1",
        "approval_consumed_at_most_once",
        "state",
        False,
        approval_consumed_at_most_once,
        (_APPROVALS, "tool_execution"),
    ),
    Invariant(
        "INV-2",
        "claims_only_by_eligible_members",
        "step",
        False,
        claims_only_by_eligible_members,
        ("member", "task", _SHUTDOWNS),
    ),
    Invariant(
        "INV-3",
        "transitions_follow_tables",
        "step",
        False,
        transitions_follow_tables,
        tuple(RECORD_MACHINES),
        by_section=_table_steps,
    ),
    Invariant(
        "INV-4",
        "shutdown_completed_iff_member_stopped",
        "state",
        True,
        shutdown_completed_iff_member_stopped,
        ("member", "task", _SHUTDOWNS),
    ),
    Invariant(
        "INV-5",
        "release_only_after_jobs_settle",
        "step",
        False,
        release_only_after_jobs_settle,
        ("member", "task", "job"),
    ),
    Invariant(
        "INV-6", "retry_creates_no_duplicate", "state", False, retry_creates_no_duplicate, (_APPROVALS, *_MESSAGES)
    ),
    Invariant(
        "INV-7",
        "owed_messages_present",
        "state",
        True,
        owed_messages_present,
        ("member", "task", _APPROVALS, _PLANS, "plan_execution", _SHUTDOWNS, *_MESSAGES),
    ),
    Invariant(
        "INV-8",
        "plan_executes_once_and_only_approved_steps",
        "state",
        False,
        plan_executes_once_and_only_approved_steps,
        (_PLANS, "plan_execution"),
    ),
    Invariant(
        "INV-9",
        "approval_grants_no_capability",
        "step",
        False,
        approval_grants_no_capability,
        ("capability_profile", _APPROVALS),
    ),
    Invariant("INV-10", "no_secret_stored", "state", False, no_secret_stored, by_section=_secrets_stored),
    Invariant(
        "INV-11",
        "stale_incarnation_changes_nothing",
        "step",
        False,
        stale_incarnation_changes_nothing,
        quiet_unless=("message", _APPROVALS),  # only a delivery or a consumption can break it
        suspect=stale_incarnation_suspected,  # ... of a stale message or by another incarnation
        suspect_reads=STALE_INCARNATION_SUSPECT_READS,
    ),
    Invariant(
        "INV-12",
        "requests_final_by_deadline",
        "state",
        False,
        requests_final_by_deadline,
        ("clock", _APPROVALS, _PLANS, "plan_execution", _SHUTDOWNS, "message"),
    ),
    # ---- issue 19: the safety clauses no INV-* names (spec.safety; spec.clause_checks maps them)
    Invariant(
        "APR-5",
        "expiry_only_after_deadline",
        "step",
        False,
        safety.expiry_only_after_deadline,
        ("clock", _APPROVALS, _PLANS, _SHUTDOWNS, "message"),
    ),
    Invariant(
        "PLN-5",
        "deadline_runs_from_submission",
        "state",
        False,
        safety.deadline_runs_from_submission,
        (_APPROVALS, _PLANS, _SHUTDOWNS),
    ),
    Invariant(
        "XPR-2",
        "stopped_member_acts_not",
        "step",
        False,
        safety.stopped_member_acts_not,
        ("member", _APPROVALS, _PLANS, "plan_execution", "job", "task"),
    ),
    Invariant(
        "SHD-10",
        "lost_notice_names_its_flagged_tasks",
        "step",
        False,
        safety.lost_notice_names_its_flagged_tasks,
        ("task", *_MESSAGES),
    ),
    Invariant(
        "APR-1",
        "work_binds_a_held_task",
        "step",
        False,
        safety.work_binds_a_held_task,
        ("member", "task", _APPROVALS, _PLANS, "job"),
    ),
    Invariant(
        "SHD-2", "draining_member_accepts_nothing", "state", False, safety.draining_member_accepts_nothing, ("member",)
    ),
    Invariant(
        "XPR-1",
        "restart_raises_incarnation",
        "step",
        False,
        safety.restart_raises_incarnation,
        ("member", "task", _PLANS, "plan_execution"),
    ),
    Invariant(
        "PLN-6", "retraction_only_before_delivery", "step", False, safety.retraction_only_before_delivery, (_PLANS,)
    ),
    Invariant(
        "JOB-2",
        "non_cancellable_job_never_signalled",
        "state",
        False,
        safety.non_cancellable_job_never_signalled,
        ("job",),
    ),
    Invariant(
        "SHD-4",
        "task_leaves_owner_after_jobs_settle",
        "state",
        False,
        safety.task_leaves_owner_after_jobs_settle,
        ("task", "job"),
    ),
    Invariant(
        "SHD-7",
        "task_flagged_only_for_its_lost_owner",
        "step",
        False,
        safety.task_flagged_only_for_its_lost_owner,
        ("member", "task", _SHUTDOWNS),
    ),
    Invariant(
        "APR-4",
        "decisions_only_before_deadline",
        "step",
        False,
        safety.decisions_only_before_deadline,
        ("clock", _APPROVALS, _PLANS, _SHUTDOWNS),
    ),
    Invariant(
        "PLN-3",
        "plan_starts_only_after_delivery",
        "state",
        False,
        safety.plan_starts_only_after_delivery,
        (_PLANS, "plan_execution"),
    ),
    Invariant(
        "PLN-5",
        "plan_starts_only_before_deadline",
        "step",
        False,
        safety.plan_starts_only_before_deadline,
        ("clock", _PLANS, "plan_execution"),
    ),
    Invariant(
        "SHD-3",
        "released_task_left_its_member",
        "state",
        False,
        safety.released_task_left_its_member,
        ("task", _SHUTDOWNS),
    ),
    Invariant(
        "SHD-3",
        "asked_jobs_are_waited_for",
        "state",
        False,
        safety.asked_jobs_are_waited_for,
        ("member", "job", _SHUTDOWNS),
    ),
    Invariant(
        "TSK-3",
        "released_task_has_checkpoint",
        "state",
        False,
        safety.released_task_has_checkpoint,
        ("task", _SHUTDOWNS),
    ),
    Invariant("TSK-3", "checkpoint_never_lost", "step", False, safety.checkpoint_never_lost, ("task",)),
    Invariant(
        "SHD-3",
        "release_noted_on_its_request",
        "step",
        False,
        safety.release_noted_on_its_request,
        ("member", "task", _SHUTDOWNS),
    ),
    Invariant(
        "PLN-4",
        "completed_run_ran_every_step",
        "state",
        False,
        safety.completed_run_ran_every_step,
        (_PLANS, "plan_execution"),
    ),
    Invariant(
        "REC-2", "members_hold_their_claims", "state", True, safety.members_hold_their_claims, ("member", "task")
    ),
    Invariant(
        "APR-8",
        "consumed_calls_have_outcomes",
        "state",
        True,
        safety.consumed_calls_have_outcomes,
        (_APPROVALS, "tool_execution"),
    ),
    Invariant(
        "XPR-5",
        "terminal_outcomes_carry_reasons",
        "state",
        False,
        safety.terminal_outcomes_carry_reasons,
        (_APPROVALS, _PLANS, _SHUTDOWNS),
    ),
    Invariant(
        "PLN-9",
        "run_starts_within_its_step",
        "step",
        False,
        safety.run_starts_within_its_step,
        ("clock", "plan_execution"),
    ),
    Invariant(
        "XPR-4",
        "profile_changes_raise_version",
        "step",
        False,
        safety.profile_changes_raise_version,
        ("capability_profile",),
    ),
    Invariant(
        "SHD-1",
        "requests_created_within_their_step",
        "step",
        False,
        safety.requests_created_within_their_step,
        ("clock", "operation_approval", "shutdown_request"),
    ),
    Invariant(
        "XPR-5",
        "reasons_name_their_causes",
        "step",
        False,
        safety.reasons_name_their_causes,
        ("member", _APPROVALS, _PLANS),
    ),
    Invariant(
        "MSG-6",
        "messages_agree_with_records",
        "state",
        True,
        safety.messages_agree_with_records,
        ("member", "task", _APPROVALS, _PLANS, "plan_execution", _SHUTDOWNS, *_MESSAGES),
    ),
    Invariant(
        "AUD-1",
        "records_keep_their_status_events",
        "state",
        False,
        records_keep_their_status_events,
        tuple(_CREATED),
    ),
    Invariant("AUD-5", "decisions_audited", "state", True, decisions_audited, ("audit_entry", *_AUDITED)),
    Invariant("AUD-5", "audit_log_is_a_chain", "state", False, audit_log_is_a_chain, ("audit_entry",)),
)
"""Every invariant, in clause order. ``reconcile_is_idempotent`` is run by whoever reconciles."""

WORLD = Invariant("APR-8", "world_agrees_with_executions", "state", False, world_agrees, ("tool_execution",))
"""The check of the external system against the stores (:func:`world_agrees`): on every state the
explorer reaches, crashed or not, with the calls the model's world received."""

STATE_INVARIANTS = tuple(i for i in INVARIANTS if i.kind == "state")
STEP_INVARIANTS = tuple(i for i in INVARIANTS if i.kind == "step")


def check_state(snap: Snapshot, *, reconciled: bool = True) -> list[tuple[Invariant, str]]:
    """Every violated state invariant with its messages; ``after_reconcile`` ones only if reconciled."""
    return [(inv, p) for inv in STATE_INVARIANTS if reconciled or not inv.after_reconcile for p in inv.check(snap)]


def check_step(before: Snapshot, after: Snapshot) -> list[tuple[Invariant, str]]:
    return [(inv, p) for inv in STEP_INVARIANTS for p in inv.check(before, after)]


class Memo:
    """Memoised invariant checks for snapshots whose documents are shared and never changed (the
    model's): a check's result is a function of the documents in the sections it ``reads``, so it
    is keyed by their identities. Each distinct section content is numbered once and the number
    table holds its documents, so an identity cannot be reused while it is numbered. Never use it
    for snapshots whose documents are edited in place.
    """

    LIMIT = 500_000

    def __init__(self) -> None:
        self._sections: dict[tuple[int, ...], tuple[int, list[Any]]] = {}
        self._lists: dict[int, tuple[list[Any], int]] = {}  # id of a section list -> (it, its number)
        self._results: dict[tuple[Any, ...], list[str]] = {}
        self._recent: list[tuple[Snapshot, dict[str, Any]]] = []

    def _signature(self, snap: Snapshot) -> dict[str, Any]:
        if len(self._sections) + len(self._results) + len(self._lists) > self.LIMIT:
            self._sections.clear()
            self._results.clear()
            self._lists.clear()
            self._recent = []
        for known, signature in self._recent:
            if known is snap:
                return signature
        signature = {}
        lists = self._lists
        for section, value in snap.items():
            if isinstance(value, list):
                shared = lists.get(id(value))
                if shared is not None and shared[0] is value:  # the very list numbered before
                    signature[section] = shared[1]
                    continue
                ids = tuple(map(id, value))
                entry = self._sections.get(ids)
                if entry is None:
                    entry = self._sections[ids] = (len(self._sections), value)
                lists[id(value)] = (value, entry[0])
                signature[section] = entry[0]
            else:
                signature[section] = value
        self._recent = [(snap, signature), *self._recent[:2]]
        return signature

    def _run(self, inv: Invariant, snaps: tuple[Snapshot, ...], signatures: list[dict[str, Any]]) -> list[str]:
        if inv.by_section is not None:
            return self._run_by_section(inv, snaps, signatures)
        if not inv.reads:
            return inv.check(*snaps)
        key = (inv.name, *[signature[section] for signature in signatures for section in inv.reads])
        known = self._results.get(key)
        if known is None:
            known = self._results[key] = inv.check(*snaps)
        return known

    def _run_by_section(
        self, inv: Invariant, snaps: tuple[Snapshot, ...], signatures: list[dict[str, Any]]
    ) -> list[str]:
        """Each section's share of a check that decomposes by section, memoised on its own: most
        steps change one or two sections, and a section's content recurs in many states."""
        assert inv.by_section is not None
        problems: list[str] = []
        step = len(signatures) == 2
        for section in inv.reads or snaps[0].keys():
            if step and signatures[0][section] == signatures[1][section]:
                continue  # the very same documents before and after: nothing to find
            key = (inv.name, section, *[signature[section] for signature in signatures])
            known = self._results.get(key)
            if known is None:
                known = self._results[key] = inv.by_section(section, *(snap[section] for snap in snaps))
            problems += known
        return problems

    def check_state(self, snap: Snapshot, *, reconciled: bool = True) -> list[tuple[Invariant, str]]:
        """As :func:`check_state`."""
        signatures = [self._signature(snap)]
        return [
            (inv, p)
            for inv in STATE_INVARIANTS
            if reconciled or not inv.after_reconcile
            for p in self._run(inv, (snap,), signatures)
        ]

    def check_step(self, before: Snapshot, after: Snapshot) -> list[tuple[Invariant, str]]:
        """As :func:`check_step`."""
        signatures = [self._signature(before), self._signature(after)]
        return [(inv, p) for inv in STEP_INVARIANTS for p in self._run(inv, (before, after), signatures)]
