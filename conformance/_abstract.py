"""The refinement mapping: what of a snapshot the model decides, with identifiers made opaque.

``project`` is the mapping of the model tests (ids compared as they are: the reference computes
them by the formula the model uses). ``abstract`` is the conformance suite's: an implementation
may name its protocols, messages and idempotency keys as it likes (``protocol-`` plus 16 hex
digits, UUIDs, anything), so every id is replaced by what the *caller* chose — the requester and
the ``tool_call_id`` the harness injected (APR-3). Two approvals under one label, or two messages
of one type for one approval, are then visible as duplicates (MSG-4, INV-6).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

Snapshot = dict[str, Any]


def project(snap: Snapshot) -> dict[str, Any]:
    """What the approval slice decides: approvals, executions, approval messages, profiles, claims.
    The refinement mapping of the model tests: the reference's snapshot must equal the model's
    under it (audit entries, timestamps and delivery status are the reference's own)."""
    return {
        "approvals": sorted(
            (
                a["protocol_id"],
                a["status"],
                a["requester_id"],
                a["task_id"],
                a["profile_version"],
                a["reason"] or None,
                a["consumed_at"] is not None,
            )
            for a in snap["operation_approval"]
        ),
        "executions": sorted(
            (e["idempotency_key"], e["status"], e["attempts"], e["arguments_digest"], e["requester_id"])
            for e in snap["tool_execution"]
        ),
        "messages": sorted(
            m["message"]["message_id"] for m in snap["message"] if m["message"]["message_type"].startswith("approval_")
        ),
        "profiles": sorted((p["member_id"], p["version"], tuple(p["tools"])) for p in snap["capability_profile"]),
        "claims": sorted((t["task_id"], t["status"], t["owner_id"]) for t in snap["task"]),
    }


def approval_labels(snap: Snapshot) -> dict[str, str]:
    """Each approval's id → its caller-chosen label ``<requester>/<tool_call_id>``."""
    return {a["protocol_id"]: f"{a['requester_id']}/{a['tool_call_id']}" for a in snap.get("operation_approval", [])}


def shutdown_labels(snap: Snapshot) -> dict[str, str]:
    """Each shutdown request's id → ``<target>#<target incarnation>/<k>``: what the Lead chose (the
    member and which of its incarnations), ``k`` counting that member incarnation's requests in the
    order they were made (``created_at``; every pinned configuration makes at most one)."""
    rows = sorted(snap.get("shutdown_request", []), key=lambda sd: (sd["created_at"], sd["deadline"]))
    return _numbered(rows, lambda sd: f"{sd['target_id']}#{sd['target_incarnation']}", "")


def plan_labels(snap: Snapshot) -> dict[str, str]:
    """Each plan's id → ``<requester>#<its incarnation>/plan/<k>``: who drafted it, ``k`` counting
    that member incarnation's plans in the order they were drafted (``created_at``, then revision;
    every pinned configuration drafts at most one)."""
    rows = sorted(snap.get("plan_approval", []), key=lambda p: (p["created_at"], p.get("revision", 1)))
    return _numbered(rows, lambda plan: f"{plan['requester_id']}#{plan['requester_incarnation']}", "plan/")


def _numbered(rows: list[dict[str, Any]], who: Callable[[dict[str, Any]], str], kind: str) -> dict[str, str]:
    """Each row's id → ``<who>/<kind><k>``, ``k`` counting ``who``'s rows in the order given."""
    seen: Counter[str] = Counter()
    out = {}
    for row in rows:
        owner = who(row)
        out[row["protocol_id"]] = f"{owner}/{kind}{seen[owner]}"
        seen[owner] += 1
    return out


def approved_by(doc: dict[str, Any]) -> str:
    """The actor of the plan approval that stands (none after a retraction or another decision)."""
    actor = ""
    for event in doc.get("events", []):
        if event["event"] == "approved":
            actor = event["actor"]
        elif event["event"] in ("rejected", "needs_revision", "retracted"):
            actor = ""
    return actor


def _same(pid: str) -> str:
    return pid


def project_plans(snap: Snapshot, name: Callable[[str], str] = _same) -> dict[str, Any]:
    """What plan approval and plan execution decide (PLN-1 … PLN-11): each plan's status, requester
    and its incarnation, task, reason, whether its decision was delivered, who approved it (the
    approval that stands) and its revision; each execution's status, executed step ids and
    deadline; the delivery status of each plan request and decision (by plan and sequence).
    Plans are named by ``name``: their ids as they are in the model tests (the reference computes
    them by the model's formula), their labels (:func:`plan_labels`) in the conformance suite.
    Deadlines of plans, bodies and free text are the implementation's own."""
    return {
        "plans": sorted(
            [
                name(p["protocol_id"]),
                p["status"],
                p["requester_id"],
                p["requester_incarnation"],
                p["task_id"],
                p.get("reason"),
                p.get("decision_delivered"),
                approved_by(p),
                p.get("revision", 1),
            ]
            for p in snap.get("plan_approval", [])
        ),
        "runs": sorted(
            [name(x["plan_id"]), x["status"], list(x["executed_step_ids"]), x["deadline"]]
            for x in snap.get("plan_execution", [])
        ),
        "plan_messages": sorted(
            [
                name(m["message"]["correlation_id"]),
                m["message"]["message_type"],
                m["message"].get("body", {}).get("sequence", 0),
                m["status"],
            ]
            for m in snap.get("message", [])
            if m["message"]["message_type"] in _PLAN_DECIDED
        ),
    }


def message_label(message: dict[str, Any], labels: dict[str, str]) -> str:
    """What a message is about, in caller-chosen names: its request's label (approvals, shutdowns
    and plans, by ``correlation_id``), the lost member's incarnation, the suspended task's holder."""
    body = message.get("body", {})
    if message["message_type"] == "member_lost":
        return f"{body.get('member_id')}#{body.get('incarnation')}"
    if message["message_type"] == "task_suspended":
        return f"{body.get('task_id')}@{body.get('member_id')}"
    return labels.get(message["correlation_id"], "?")


_PLAN_DECIDED = ("plan_request", "plan_decision")
"""Plan messages whose delivery status the model decides (in :func:`project_plans`)."""
STATUS_SEEN = ("shutdown_request", "approval_request")
"""Message types whose delivery status the model decides (a drain's request is delivered once,
acknowledged by the finish, expired by the monitor; an approval's request expires unread once its
deadline passed, MSG-1); other statuses are the implementation's own."""


def _messages(snap: Snapshot, labels: dict[str, str]) -> list[list[Any]]:
    counted: Counter[tuple[str, str, str]] = Counter()
    for record in snap.get("message", []):
        message = record["message"]
        kind = message["message_type"]
        if kind in _PLAN_DECIDED:
            continue  # in project_plans, with their sequence and status
        status = record["status"] if kind in STATUS_SEEN else ""
        counted[(kind, message_label(message, labels), status)] += 1
    return sorted([kind, label, status, count] for (kind, label, status), count in counted.items())


def _outbox(snap: Snapshot, labels: dict[str, str]) -> list[list[Any]]:
    counted: Counter[tuple[str, str, str]] = Counter(
        (o["message"]["message_type"], message_label(o["message"], labels), o["status"])
        for o in snap.get("outbox_entry", [])
    )
    return sorted([kind, label, status, count] for (kind, label, status), count in counted.items())


def abstract(snap: Snapshot) -> dict[str, Any]:
    """The conformance suite's mapping: :func:`project` with every id replaced by its label, and
    what the model decides of members, tasks, jobs, shutdowns and the outbox.

    A key an implementation does not know yet (an execution whose approval is gone) keeps the
    label ``?``; the model never produces one, so it differs."""
    labels = approval_labels(snap)
    drains = shutdown_labels(snap)
    plans = plan_labels(snap)
    every = {**labels, **drains, **plans}
    return {
        "approvals": sorted(
            [
                labels[a["protocol_id"]],
                a["status"],
                a["task_id"],
                a["profile_version"],
                a.get("reason") or None,
                a.get("consumed_at") is not None,
            ]
            for a in snap.get("operation_approval", [])
        ),
        "executions": sorted(
            [labels.get(e["idempotency_key"], "?"), e["status"], e["attempts"], e["arguments_digest"]]
            for e in snap.get("tool_execution", [])
        ),
        "messages": _messages(snap, every),
        "outbox": _outbox(snap, every),
        "profiles": sorted(
            [p["member_id"], p["version"], sorted(p["tools"])] for p in snap.get("capability_profile", [])
        ),
        "claims": sorted(
            [t["task_id"], t["status"], t["owner_id"], t.get("owner_incarnation")] for t in snap.get("task", [])
        ),
        "members": sorted(
            [
                m["member_id"],
                m["status"],
                m["incarnation"],
                m.get("accepting_new_tasks"),
                drains.get(m.get("shutdown_request_id") or "", m.get("shutdown_request_id")),
                m.get("current_task_id"),
            ]
            for m in snap.get("member", [])
        ),
        "jobs": sorted(
            [j["job_id"], j["status"], j["owner_id"], j["task_id"], j["cancellable"]] for j in snap.get("job", [])
        ),
        "shutdowns": sorted(
            [
                drains[sd["protocol_id"]],
                sd["status"],
                sd["target_id"],
                sd["deadline"],
                sd["released_task_id"],
                sorted(sd["waited_job_ids"]),
                sd.get("reason") or None,
            ]
            for sd in snap.get("shutdown_request", [])
        ),
        **project_plans(snap, lambda pid: plans.get(pid, "?")),
    }


def canonical_ids(snap: Snapshot) -> Snapshot:
    """The snapshot with every approval id replaced by the reference's stable id of its label, so
    that predicates written against the reference's ids (``spec.invariants``: INV-6 checks
    ``protocol_id`` against MSG-4's formula) read any implementation's snapshot. Duplicate labels
    are left to :func:`abstract`, which sees them."""
    from spec.ids import protocol_id

    text = json.dumps(snap, sort_keys=True)
    for pid, approval in {a["protocol_id"]: a for a in snap.get("operation_approval", [])}.items():
        stable = protocol_id(approval["requester_id"], approval["tool_call_id"], "operation_approval")
        if pid != stable:
            text = text.replace(json.dumps(pid), json.dumps(stable))
    result: Snapshot = json.loads(text)
    return _canonical_message_ids(result)


def _canonical_message_ids(snap: Snapshot) -> Snapshot:
    """Every message id replaced by MSG-4's stable id of its correlation id and phase (opaque ids
    of another implementation, read by ``spec.safety.messages_agree_with_records``); a reply's
    ``reply_to`` follows its request's id."""
    from spec.ids import message_id
    from spec.safety import _phase

    text = json.dumps(snap, sort_keys=True)
    for kind in ("message", "outbox_entry"):
        for record in snap.get(kind, []):
            message = record["message"]
            stable = message_id(message["correlation_id"], _phase(message))
            if message["message_id"] != stable:
                text = text.replace(json.dumps(message["message_id"]), json.dumps(stable))
    result: Snapshot = json.loads(text)
    return result


def differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """One readable line per section that differs."""
    out = []
    for section in expected:
        want, got = expected[section], actual.get(section)
        if want != got:
            missing = [row for row in want if row not in (got or [])]
            extra = [row for row in got or [] if row not in want]
            out.append(
                f"{section}: model has {missing or 'nothing more'}, implementation has {extra or 'nothing more'}"
            )
    return out


__all__ = [
    "STATUS_SEEN",
    "abstract",
    "approval_labels",
    "approved_by",
    "canonical_ids",
    "differences",
    "message_label",
    "plan_labels",
    "project",
    "project_plans",
    "shutdown_labels",
]
