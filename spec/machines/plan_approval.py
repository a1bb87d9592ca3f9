"""Plan approval: approve the plan, then execute only the plan (PLN-1 … PLN-11).

One record per plan version. A revision is a *new* record (``revision = n + 1``,
``supersedes = <previous id>``), so ``needs_revision`` is final here. Abstracts away: the plan's
contents (bound by the plan's schema and digest), delivery of ``plan_decision`` (PLN-6 retraction
is allowed only while the decision is undelivered — a guard, not a state), and execution, which
is the separate ``plan_execution`` machine.
"""

from statemachine import State, StateMachine

from ._notes import describe


class PlanApproval(StateMachine):
    """draft → pending → approved → consumed, with retraction, withdrawal and expiry."""

    draft = State(initial=True)
    pending = State()
    approved = State()
    consumed = State(final=True)
    rejected = State(final=True)
    needs_revision = State(final=True)
    expired = State(final=True)
    withdrawn = State(final=True)

    submit = draft.to(pending)
    approve = pending.to(approved)
    reject = pending.to(rejected)
    request_revision = pending.to(needs_revision)
    start_execution = approved.to(consumed)
    retract_to_review = approved.to(pending)
    retract_reject = approved.to(rejected)
    expire = pending.to(expired) | approved.to(expired)
    withdraw = draft.to(withdrawn) | pending.to(withdrawn) | approved.to(withdrawn)


STATES = describe(
    draft=("written by the requester, not yet sent", "PLN-1"),
    pending=("sent to the approver; waiting for a decision within ttl_seconds", "PLN-1 PLN-5"),
    approved=("approved; the requester may start executing exactly this plan", "PLN-2 PLN-3"),
    consumed=("execution started (executed marker written); never started again", "PLN-7"),
    rejected=("the approver rejected it, or retracted an undelivered approval", "PLN-2 PLN-6 PLN-8"),
    needs_revision=("the approver asked for a new revision (a new plan record)", "PLN-2 PLN-8"),
    expired=("not decided or not started within ttl_seconds; a timeout never approves", "PLN-5 PLN-8"),
    withdrawn=("the requester withdrew it before execution started", "PLN-11"),
)

EVENTS = describe(
    submit=("the requester sends plan_request", "PLN-1"),
    approve=("the approver decides approved", "PLN-2"),
    reject=("the approver decides rejected", "PLN-2"),
    request_revision=("the approver decides needs_revision", "PLN-2"),
    start_execution=("the requester matched the decision and writes the executed marker", "PLN-3 PLN-7"),
    retract_to_review=("the approver retracts an undelivered approval to review again", "PLN-6"),
    retract_reject=("the approver retracts an undelivered approval into a rejection", "PLN-6"),
    expire=("ttl_seconds passed without decision or start", "PLN-5"),
    withdraw=("the requester withdraws before execution starts", "PLN-11"),
)
