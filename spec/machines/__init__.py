"""The protocol's state machines, one module each, declared with python-statemachine.

Everything else — runtime guards, diagrams, schema enums, the model's legal moves — is derived
from these classes (DESIGN "one source, many products").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType, ModuleType

from statemachine import StateMachine

from . import (
    job,
    member,
    message,
    operation_approval,
    outbox_entry,
    plan_approval,
    plan_execution,
    shutdown_request,
    task,
    tool_execution,
)
from ._notes import Note

_MODULES: dict[str, tuple[ModuleType, type[StateMachine]]] = {
    "operation_approval": (operation_approval, operation_approval.OperationApproval),
    "plan_approval": (plan_approval, plan_approval.PlanApproval),
    "plan_execution": (plan_execution, plan_execution.PlanExecution),
    "shutdown_request": (shutdown_request, shutdown_request.ShutdownRequest),
    "member": (member, member.Member),
    "task": (task, task.Task),
    "job": (job, job.Job),
    "message": (message, message.Message),
    "outbox_entry": (outbox_entry, outbox_entry.OutboxEntry),
    "tool_execution": (tool_execution, tool_execution.ToolExecution),
}

MACHINES: Mapping[str, type[StateMachine]] = MappingProxyType({name: cls for name, (_, cls) in _MODULES.items()})
"""Machine name → python-statemachine class."""

STATE_NOTES: Mapping[str, Mapping[str, Note]] = MappingProxyType(
    {name: module.STATES for name, (module, _) in _MODULES.items()}
)
EVENT_NOTES: Mapping[str, Mapping[str, Note]] = MappingProxyType(
    {name: module.EVENTS for name, (module, _) in _MODULES.items()}
)
MODULE_DOCS: Mapping[str, str] = MappingProxyType(
    {name: (module.__doc__ or "").strip() for name, (module, _) in _MODULES.items()}
)

__all__ = ["EVENT_NOTES", "MACHINES", "MODULE_DOCS", "STATE_NOTES", "Note"]
