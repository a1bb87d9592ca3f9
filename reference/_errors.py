"""Typed errors of the reference harness (DESIGN rule 8).

Each says whether it is *definite* (nothing changed; act on it) or *indefinite* (it may have
happened; look the outcome up by idempotency key before doing anything else).
"""

from __future__ import annotations

from spec.errors import ProtocolError


class StorageError(ProtocolError):
    """Base of storage errors."""


class CorruptRecord(StorageError):
    """A stored row that is torn, not JSON, schema-invalid or has an unknown status (STO-3).

    Definite: nothing was changed; the row is left as it is for inspection, never dropped.
    """

    def __init__(self, table: str, key: str, reason: str) -> None:
        self.table, self.key, self.reason = table, key, reason
        super().__init__(f"corrupt record {table}/{key}: {reason}; inspect or restore it, it was left untouched")


class VersionConflict(StorageError):
    """A compare-and-set lost against a concurrent writer (STO-4). Definite: re-read and retry."""

    def __init__(self, table: str, key: str, expected: int, actual: int | None) -> None:
        self.table, self.key, self.expected, self.actual = table, key, expected, actual
        super().__init__(f"{table}/{key}: expected version {expected}, found {actual}; re-read and retry")


class AlreadyExists(StorageError):
    def __init__(self, table: str, key: str) -> None:
        self.table, self.key = table, key
        super().__init__(f"{table}/{key} already exists")


class StorageUnavailable(StorageError):
    """The store could not be read or written (disk, lock, I/O). Indefinite for writes."""

    definite = False


class UnknownWriteStep(StorageError):
    """A write under a step name that no list of write steps declares (``reference.WRITE_STEPS``).

    A bug of the implementation, not of its input: a crash "after step X" could never be placed
    there, so the crash tests would pass without testing it. Definite: nothing was written.
    """

    def __init__(self, step: object) -> None:
        self.step = step
        super().__init__(
            f"write step {step!r} is not a declared write step; name it in its module's *_STEPS "
            "(reference/_steps.py) or fix the name: nothing was written"
        )


class Crash(BaseException):
    """Raised by a fault plan at a named write step to simulate the process dying there.

    A BaseException so that no protocol code can catch it by accident: the harness object is
    dead after it; a test builds a new harness over the same storage and reconciles.
    """

    def __init__(self, step: str, when: str) -> None:
        self.step, self.when = step, when
        super().__init__(f"crash {when} {step}")


class ProtocolConflict(ProtocolError):
    """STO-2: the same protocol id with different participants, task, deadline or content."""

    def __init__(
        self,
        protocol_id: str,
        field: str,
        stored: object,
        offered: object,
        hint: str = "use a new tool_call_id for a different request",
    ) -> None:
        self.protocol_id, self.field, self.stored, self.offered = protocol_id, field, stored, offered
        super().__init__(
            f"{protocol_id}: a request with this id exists with {field}={stored!r}, not {offered!r}; {hint}"
        )


class ApprovalRefused(ProtocolError):
    """Base of every APR-5 refusal: definite — the call did not run and nothing changed."""


class UnknownApproval(ApprovalRefused):
    def __init__(self, protocol_id: str) -> None:
        super().__init__(f"no approval {protocol_id!r}; request one by calling the tool without an approval id")


class NotTaskOwner(ApprovalRefused):
    def __init__(self, actor: str, task: str) -> None:
        super().__init__(f"{actor} does not hold task {task} (claim it first)")


class ToolNotInProfile(ApprovalRefused):
    def __init__(self, actor: str, tool: str, version: int) -> None:
        super().__init__(
            f"{tool} is not in the capability profile v{version} of {actor}; approval never adds capability (APR-7)"
        )


class ApprovalNotActive(ApprovalRefused):
    def __init__(self, protocol_id: str, status: str) -> None:
        self.status = status
        if status == "requested":
            advice = "the Lead has not decided yet — wait for the approval_decision, then call again"
        else:
            advice = "a consumed approval is never reused (APR-6) — request a new one"
        super().__init__(f"approval {protocol_id} is {status}, not approved; {advice}")


class ApprovalOtherAgent(ApprovalRefused):
    def __init__(self, protocol_id: str, requester: str, actor: str) -> None:
        super().__init__(f"approval {protocol_id} belongs to {requester}, not {actor}")


class ApprovalOtherTask(ApprovalRefused):
    def __init__(self, protocol_id: str, approved: str, actual: str) -> None:
        super().__init__(f"approval {protocol_id} is for task {approved}, not {actual}")


class ToolMismatch(ApprovalRefused):
    def __init__(self, protocol_id: str, approved: str, actual: str) -> None:
        super().__init__(f"approval {protocol_id} is for tool {approved}, not {actual}")


class ArgumentsChanged(ApprovalRefused):
    def __init__(self, protocol_id: str, expected_digest: str, actual_digest: str) -> None:
        self.expected_digest, self.actual_digest = expected_digest, actual_digest
        super().__init__(
            f"approval {protocol_id}: arguments changed since approval (approved digest "
            f"{expected_digest[:12]}…, call digest {actual_digest[:12]}…); request a new approval"
        )


class ApprovalExpired(ApprovalRefused):
    def __init__(self, protocol_id: str, deadline: float, now: float) -> None:
        super().__init__(f"approval {protocol_id} expired at {deadline} (now {now})")


class ProfileChanged(ApprovalRefused):
    def __init__(self, protocol_id: str, approved: int, current: int) -> None:
        super().__init__(
            f"approval {protocol_id} was made under profile v{approved}; the profile is now "
            f"v{current} (XPR-4) — request a new approval"
        )


class StaleIncarnation(ApprovalRefused):
    def __init__(self, what: str, made_for: int, current: int) -> None:
        super().__init__(f"{what} was made for incarnation {made_for}; the member is now incarnation {current} (XPR-1)")


class MemberNotRunning(ApprovalRefused):
    def __init__(self, actor: str, status: str) -> None:
        super().__init__(f"{actor} is {status}; only a running member may use or request approvals (XPR-2)")


class NotResponder(ProtocolError):
    def __init__(self, protocol_id: str, responder: str, actor: str) -> None:
        super().__init__(f"only {responder} may review {protocol_id}, not {actor} (APR-4)")


class ReviewConflict(ProtocolError):
    def __init__(self, protocol_id: str, status: str, decision: str) -> None:
        super().__init__(f"{protocol_id} is already {status}; cannot review it as {decision}")


class CancelRefused(ProtocolError):
    def __init__(self, protocol_id: str, reason: str) -> None:
        super().__init__(f"cannot cancel {protocol_id}: {reason}")


class FailClosed(ProtocolError):
    """XPR-3: a check could not be completed, so the protected action was refused. Definite."""

    def __init__(self, check: str, cause: BaseException) -> None:
        self.check = check
        super().__init__(f"refused: {check} could not be completed ({cause}); the action did not run")


class UnknownTool(ProtocolError):
    def __init__(self, tool: str) -> None:
        super().__init__(f"no tool named {tool!r} is registered")


class ForgedIdentity(ProtocolError):
    """APR-3: a model-written argument tried to set an identity the harness injects."""

    def __init__(self, field: str) -> None:
        super().__init__(f"argument {field!r} is injected by the harness and may not be given by the caller")
