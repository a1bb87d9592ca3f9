"""The clause registry: every clause id of ``docs/protocol.md`` with a one-line title.

Clause ids are stable. Tests cite them with ``@pytest.mark.clause("APR-5")``, spec modules
cite them in docstrings, and the conformance report groups by them. ``tests/test_clauses.py``
checks this registry against ``docs/protocol.md``, which states each clause in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

_CLAUSES: dict[str, str] = {
    "STO-1": "Each store is atomic for one record; no transaction spans stores",
    "STO-2": "put_if_absent: identical request returns the stored record, different content conflicts",
    "STO-3": "Durable backends write atomically; a torn or corrupt record is reported, never dropped",
    "STO-4": "Multi-process deployments use transactions or compare-and-set on a version",
    "MSG-1": "Every message carries type, id, correlation id, sender, target, timestamp, ttl (reply_to on replies)",
    "MSG-2": "Every message type has a JSON Schema; sender and receiver validate; invalid changes nothing",
    "MSG-3": "Reading or acknowledging a message never completes a request",
    "MSG-4": "Stable name-based ids: protocol_id from (requester, tool call, kind), message_id from (protocol, phase)",
    "MSG-5": "Receivers deduplicate on (message_id, correlation_id) and return the recorded result",
    "MSG-6": "Write order: protocol record, then request message, then in-memory wake-up",
    "MSG-7": "The required message types",
    "APR-1": "A protected call without an approval id executes nothing and creates a requested approval",
    "APR-2": "arguments_digest = sha256(canonical_json({tool_name, normalized arguments}))",
    "APR-3": "Requester, tool call, actor and task ownership are injected by the harness",
    "APR-4": "Only the named responder reviews; same outcome twice is idempotent; late review fails; summary redacted",
    "APR-5": "Consumption re-checks owner, profile, status, binding and deadline atomically with the change",
    "APR-6": "A consumed approval is never reused, whatever the call's outcome",
    "APR-7": "Approval never adds capability",
    "APR-8": "After a crash, recovery looks the outcome up by idempotency key; it never repeats the call blindly",
    "APR-9": "The requester may cancel its own request before consumption, not after",
    "PLN-1": "A plan request carries every plan field and validates against its schema",
    "PLN-2": "plan_decision.decision is approved, rejected or needs_revision, with the correlation id unchanged",
    "PLN-3": "The requester executes only on a decision matched to a plan it waits on",
    "PLN-4": "Every executed step maps to an approved step id, in order; a deviation aborts",
    "PLN-5": "Waiting past ttl_seconds expires the plan; a timeout never approves",
    "PLN-6": "The approver may retract an approval whose decision has not been delivered",
    "PLN-7": "A plan is executed at most once (executed marker written before the first step)",
    "PLN-8": "A rejected or expired plan id is never retried; a retry is a new plan",
    "PLN-9": "Execution timeout marks the execution failed and runs the rollback",
    "PLN-10": "Completion is reported with the correlation id",
    "PLN-11": "The requester may withdraw its own plan before execution starts",
    "MEM-1": "Claims need running, accepting and no active shutdown request, under the assignment lock",
    "MEM-2": "A member stops only at safe points",
    "MEM-3": "Between task steps the runtime checks the member; draining raises DrainRequested",
    "MEM-4": "Long commands run as background jobs",
    "SHD-1": "The Lead creates ShutdownRequest(requested); the bus delivers a stable shutdown_request",
    "SHD-2": "Beginning the drain checks target, responder, deadline, idempotence and running status",
    "SHD-3": "A drain pass cancels jobs, waits for them, then checkpoints and releases the task",
    "SHD-4": "A non-interruptible operation keeps the member draining; its task is not handed over",
    "SHD-5": "Finishing completes the request, stops the member and owes a stable shutdown_ack",
    "SHD-6": "The deadline monitor expires requested and times out draining requests",
    "SHD-7": "Escalation ladder after timed_out, ending in force-terminate and needs_inspection",
    "SHD-8": "SIGINT and SIGTERM set a shutdown event read at safe points",
    "SHD-9": "A unit of work past its hard deadline is suspended with a task_suspended notice",
    "SHD-10": "Last will: a lapsed heartbeat sends member_lost and flags the member's claims",
    "TSK-1": "Only the current claim token may checkpoint, release, complete or fail a task",
    "TSK-2": "A checkpoint holds only serialisable business state and is written atomically",
    "TSK-3": "A released task keeps its last checkpoint and its history",
    "JOB-1": "A cancel request is recorded as cancel_requested; only the job's exit settles it",
    "JOB-2": "A non-cancellable job is never signalled by a drain pass",
    "XPR-1": "Fencing by incarnation: a message or call for an older incarnation is refused",
    "XPR-2": "Draining cancels the member's requested approvals and pending plans; late decisions are ignored",
    "XPR-3": "Fail closed: a check that cannot complete refuses the protected action",
    "XPR-4": "An approval is bound to the capability profile version",
    "XPR-5": "Every terminal outcome carries a reason code from one taxonomy",
    "REC-1": "Reconciliation is idempotent",
    "REC-2": "Reconciliation converges from every crash prefix to a state where every invariant holds",
    "REC-3": "The outbox re-sends every owed message with its stable id",
    "REC-4": "Recovery takes over only work whose writer, a registered harness instance, can no longer finish it",
    "REC-5": "The deadline monitor's pass is one step: a pass a crash cut short is finished before reconciling",
    "AUD-1": "Each protocol record keeps its events, saved atomically with the record",
    "AUD-2": "What the audit trail stores",
    "AUD-3": "Never stored: hidden reasoning, transcripts, tokens, secrets, unredacted environment",
    "AUD-4": "Agent-facing tools are named per protocol; there is no generic set-status tool",
    "AUD-5": "The team audit log is append-only and hash-chained; a verifier names the first broken link",
    "INV-1": "An approval is consumed at most once; every executed protected call has one matching consumed approval",
    "INV-2": "No task is claimed by a member that is not running, not accepting, or targeted by an active shutdown",
    "INV-3": "Every status change follows its machine's transition table",
    "INV-4": "A shutdown completed iff its member is stopped; a stopped member holds no task",
    "INV-5": "A draining member releases a task only when none of its jobs is running",
    "INV-6": "A retry never creates a second protocol record or a second distinct message",
    "INV-7": "After reconcile every owed message is on the bus or in the outbox; reconciling again changes nothing",
    "INV-8": "A plan executes at most once and only its approved steps",
    "INV-9": "Approval never grants a tool outside the member's profile",
    "INV-10": "No secret from the test corpus appears in any stored record",
    "INV-11": "No message or call for an older member incarnation changes any record",
    "INV-12": "Every request reaches a final state within its deadline plus one monitor pass, or is timed_out",
}

CLAUSES: Final[Mapping[str, str]] = MappingProxyType(_CLAUSES)
"""Clause id → one-line title, in the order of ``docs/protocol.md``."""


class UnknownClause(KeyError):
    """A clause id that ``docs/protocol.md`` does not define (definite: nothing was recorded)."""

    def __init__(self, clause_id: str) -> None:
        super().__init__(clause_id)
        self.clause_id = clause_id

    def __str__(self) -> str:
        return f"unknown clause id {self.clause_id!r}; known families: STO MSG APR PLN MEM SHD TSK JOB XPR REC AUD INV"


def require_clauses(*clause_ids: str) -> tuple[str, ...]:
    """Return the ids unchanged, raising :class:`UnknownClause` for the first unknown one."""
    for clause_id in clause_ids:
        if clause_id not in _CLAUSES:
            raise UnknownClause(clause_id)
    return clause_ids
