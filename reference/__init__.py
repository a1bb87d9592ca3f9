"""teamproto's reference harness: storage backends, stores, bus, outbox, the approval protocol,
the audit log, agent-facing tools and the ``teamproto`` command line."""

from __future__ import annotations

from ._agent_tools import AGENT_TOOLS, AgentTool
from ._approval import APPROVAL_STEPS, ApprovalProtocol
from ._audit import ChainReport
from ._audit import verify as verify_audit_log
from ._clock import Clock, ManualClock, SystemClock
from ._errors import (
    AlreadyExists,
    ApprovalExpired,
    ApprovalNotActive,
    ApprovalOtherAgent,
    ApprovalOtherTask,
    ApprovalRefused,
    ArgumentsChanged,
    CancelRefused,
    CorruptRecord,
    Crash,
    FailClosed,
    ForgedIdentity,
    MemberNotRunning,
    NotResponder,
    NotTaskOwner,
    ProfileChanged,
    ProtocolConflict,
    ReviewConflict,
    StaleIncarnation,
    StorageError,
    StorageUnavailable,
    ToolMismatch,
    ToolNotInProfile,
    UnknownApproval,
    UnknownTool,
    VersionConflict,
)
from ._harness import CallContext, Harness
from ._storage import FaultPlan, MemoryStorage, SQLiteStorage, Storage, Stored
from ._tools import RecordingTool, Tool, normalize_paths

__all__ = [
    "AGENT_TOOLS",
    "APPROVAL_STEPS",
    "AgentTool",
    "AlreadyExists",
    "ApprovalExpired",
    "ApprovalNotActive",
    "ApprovalOtherAgent",
    "ApprovalOtherTask",
    "ApprovalProtocol",
    "ApprovalRefused",
    "ArgumentsChanged",
    "CallContext",
    "CancelRefused",
    "ChainReport",
    "Clock",
    "CorruptRecord",
    "Crash",
    "FailClosed",
    "FaultPlan",
    "ForgedIdentity",
    "Harness",
    "ManualClock",
    "MemberNotRunning",
    "MemoryStorage",
    "NotResponder",
    "NotTaskOwner",
    "ProfileChanged",
    "ProtocolConflict",
    "RecordingTool",
    "ReviewConflict",
    "SQLiteStorage",
    "StaleIncarnation",
    "Storage",
    "StorageError",
    "StorageUnavailable",
    "Stored",
    "SystemClock",
    "Tool",
    "ToolMismatch",
    "ToolNotInProfile",
    "UnknownApproval",
    "UnknownTool",
    "VersionConflict",
    "normalize_paths",
    "verify_audit_log",
]
