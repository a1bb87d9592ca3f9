"""Every write step the reference may write under, in one set (DESIGN rule 3: named write steps).

A write step's name is how a crash is placed "after step X" in the model tests and the conformance
vectors: a write under a name no list declares — a typo, or a name left behind by a rename — is a
crash point that no test can reach, and the crash tests would still pass. So a harness's store
refuses such a write before it writes anything (:class:`reference.UnknownWriteStep`), and so does
:meth:`reference.Harness.step` for a step that may write nothing.

The protocol operations' steps are declared beside their code (``APPROVAL_STEPS``, ``TASK_STEPS``,
``SHUTDOWN_STEPS``, ``PLAN_STEPS``, ``RECOVERY_STEPS``, ``EXIT_STEPS``, …); the steps below are
the reference's own, written inside one model step or outside the protocol.
"""

from __future__ import annotations

from ._approval import APPROVAL_STEPS
from ._members import MEMBER_STEPS
from ._plans import PLAN_STEPS
from ._recovery import RECOVERY_STEPS
from ._shutdown import SHUTDOWN_STEPS
from ._tasks import TASK_STEPS

EXIT_STEPS = (
    "member.exit/member",
    "member.exit/requests",
    "member.exit/jobs",
    "member.exit/task",
    "member.exit/stopped",
    "member.exit/outbox",
)
"""Write steps of a member's own shutdown on SIGINT/SIGTERM (SHD-8), in order."""

TEAM_STEPS: tuple[str, ...] = (
    *TASK_STEPS,
    "job.start/job",
    "job.exit/job",
    *MEMBER_STEPS,
    *SHUTDOWN_STEPS,
    "outbox.send/message",
    "outbox.send/entry",
    "monitor.pass/records",
    "profile.change/profile",
)
"""The write steps of the team operations (members, tasks, jobs, shutdowns, outbox, monitor, a
capability profile's change: XPR-4)."""

MONITOR_STEPS = (
    "approval.expire/record",
    "approval.expire/audit",
    "approval.expire/message",
    "plan.expire/record",
    "plan.expire/execution",
    "plan.expire/message",
    "plan.expire/outbox",
    "plan.expire/audit",
    "shutdown.expire/record",
    "shutdown.expire/message",
    "shutdown.expire/audit",
)
"""The monitor's pass (the model's one step ``monitor.pass/records``), per record it moves (APR-5,
PLN-5, PLN-9, SHD-6)."""

RECONCILE_STEPS = (
    "approval.reconcile/execution",
    "approval.reconcile/outcome",
    "approval.reconcile/audit",
    "plan.reconcile/record",
    "plan.reconcile/message",
    "plan.reconcile/outbox",
    "plan.reconcile/audit",
)
"""Reconciliation's approval and plan rows (the model's one ``restart/reconcile``; the team's rows
are ``RECOVERY_STEPS``)."""

OWN_STEPS = (
    "member.add/member",
    "member.add/profile",
    "task.add/task",
    "message.receive/message",
    "message.deliver/message",
    "message.acknowledge/message",
)
"""Setting a team up, and a message's delivery, receipt and acknowledgement (MSG-5)."""

WRITE_STEPS: frozenset[str] = frozenset(
    (
        *APPROVAL_STEPS,
        *TEAM_STEPS,
        *PLAN_STEPS,
        *RECOVERY_STEPS,
        *EXIT_STEPS,
        *MONITOR_STEPS,
        *RECONCILE_STEPS,
        *OWN_STEPS,
    )
)
"""Every name a harness's store accepts a write under."""

__all__ = ["EXIT_STEPS", "MONITOR_STEPS", "OWN_STEPS", "RECONCILE_STEPS", "TEAM_STEPS", "WRITE_STEPS"]
