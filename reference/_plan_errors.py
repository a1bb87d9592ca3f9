"""Typed refusals of plan approval and plan execution (PLN-1 … PLN-11, XPR-1, XPR-2; DESIGN rule 8).

Every refusal is *definite*: the call changed nothing. :class:`PlanDeviation` is the one error
that reports a change: the step did not run, and the execution was ended ``failed`` and rolled
back (PLN-4) — it says so, and what differed.
"""

from __future__ import annotations

from spec.errors import ProtocolError


class PlanRefused(ProtocolError):
    """Base of every refusal of a plan operation. Definite: nothing changed."""


class UnknownPlan(PlanRefused, KeyError):
    def __init__(self, plan_id: str) -> None:
        self.plan_id = plan_id
        super().__init__(f"no plan {plan_id!r}; draft one with team_request_plan_approval (PlanProtocol.draft)")

    def __str__(self) -> str:
        return str(self.args[0])


class NotPlanRequester(PlanRefused):
    def __init__(self, plan_id: str, requester: str, actor: str) -> None:
        super().__init__(f"only {requester} may do this with plan {plan_id}, not {actor} (PLN-11)")


class PlanMemberNotRunning(PlanRefused):
    def __init__(self, actor: str, status: str, what: str) -> None:
        super().__init__(f"{actor} is {status}; only a running member may {what} (XPR-2)")


class PlanNoTask(PlanRefused):
    def __init__(self, actor: str, task: str | None) -> None:
        super().__init__(f"{actor} does not hold task {task or '<none>'}; a plan is drafted for a task it holds")


class PlanStatusConflict(PlanRefused):
    """The plan is not in a state that allows the operation (the plan machine has no such edge)."""

    def __init__(self, plan_id: str, status: str, operation: str, hint: str) -> None:
        self.plan_id, self.status, self.operation = plan_id, status, operation
        super().__init__(f"cannot {operation} plan {plan_id}: it is {status}; {hint}")


class PlanExpired(PlanRefused):
    def __init__(self, plan_id: str, deadline: float, now: float, what: str) -> None:
        super().__init__(
            f"cannot {what} plan {plan_id}: its ttl ran out at {deadline} (now {now}); "
            "a timeout never approves — draft a new plan (PLN-5, PLN-8)"
        )


class DecisionNotDelivered(PlanRefused):
    def __init__(self, plan_id: str) -> None:
        super().__init__(
            f"plan {plan_id} is approved, but its plan_decision has not been delivered to the requester; "
            "start only after matching the decision (PLN-3)"
        )


class PlanAlreadyStarted(PlanRefused):
    def __init__(self, plan_id: str, status: str) -> None:
        super().__init__(
            f"plan {plan_id} has its executed marker (execution {status}); a plan runs at most once (PLN-7)"
        )


class StalePlan(PlanRefused):
    def __init__(self, plan_id: str, made_for: int, current: int) -> None:
        super().__init__(
            f"plan {plan_id} was made for incarnation {made_for}; the member is now incarnation {current}: "
            "withdraw it and draft a new one (XPR-1)"
        )


class ExecutionNotRunning(PlanRefused):
    def __init__(self, plan_id: str, status: str | None, what: str) -> None:
        super().__init__(f"cannot {what} plan {plan_id}: its execution is {status or 'not started'}")


class BadDecisionMessage(PlanRefused):
    def __init__(self, message_id: str, reason: str) -> None:
        super().__init__(f"message {message_id} is not a plan decision this member can handle: {reason}")


class PlanDeviation(ProtocolError):
    """PLN-4: a step that is not the next approved step. It did not run; the execution was marked
    ``failed`` and its rollback ran (both recorded). ``kind`` is one of ``unknown_step``,
    ``changed_tool``, ``changed_parameters``, ``reordered``, ``repeated``, ``skipped``, ``extra_step``."""

    advice = "nothing to retry: the step did not run, the execution failed and was rolled back; draft a new plan"
    """What to do (the error catalogue): definite about the step, but it changed the execution."""

    def __init__(self, plan_id: str, index: int, kind: str, difference: str) -> None:
        self.plan_id, self.index, self.deviation = plan_id, index, kind
        super().__init__(
            f"plan {plan_id}, step {index + 1}: {kind}: {difference}; the step did not run, the execution "
            "failed and was rolled back (PLN-4) — to do something else, draft a new plan"
        )


__all__ = [
    "BadDecisionMessage",
    "DecisionNotDelivered",
    "ExecutionNotRunning",
    "NotPlanRequester",
    "PlanAlreadyStarted",
    "PlanDeviation",
    "PlanExpired",
    "PlanMemberNotRunning",
    "PlanNoTask",
    "PlanRefused",
    "PlanStatusConflict",
    "StalePlan",
    "UnknownPlan",
]
