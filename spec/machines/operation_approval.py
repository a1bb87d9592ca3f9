"""Operation approval: one approval, one call (APR-1 … APR-9, XPR-2, XPR-4, XPR-5).

Abstracts away: who the parties are, the tool and its arguments (bound by ``arguments_digest``),
the clock (the deadline is a guard evaluated by the protocol, not a state). The outcome of the
protected call lives in ``ToolExecution``/``Job``, never here: there is no ``executing``,
``completed`` or ``failed`` state.
"""

from statemachine import State, StateMachine

from ._notes import describe


class OperationApproval(StateMachine):
    """requested → approved → consumed; requested|approved → cancelled|expired; requested → rejected."""

    requested = State(initial=True)
    approved = State()
    consumed = State(final=True)
    rejected = State(final=True)
    cancelled = State(final=True)
    expired = State(final=True)

    approve = requested.to(approved)
    reject = requested.to(rejected)
    consume = approved.to(consumed)
    cancel = requested.to(cancelled) | approved.to(cancelled)
    expire = requested.to(expired) | approved.to(expired)


STATES = describe(
    requested=("a protected call without approval id created it; nothing executed", "APR-1"),
    approved=("the named responder approved before the deadline; not yet used", "APR-4"),
    consumed=("one matching call used it as its idempotency key; never reused", "APR-5 APR-6"),
    rejected=("the named responder refused it", "APR-4 XPR-5"),
    cancelled=("the requester withdrew it, or its member began draining", "APR-9 XPR-2 XPR-5"),
    expired=("its deadline passed before it was consumed", "APR-5 XPR-5"),
)

EVENTS = describe(
    approve=("review: the responder approves", "APR-4"),
    reject=("review: the responder rejects", "APR-4"),
    consume=("the same-argument call re-checks everything and consumes it", "APR-5 APR-6"),
    cancel=("the requester cancels before consumption, or drain cancels it", "APR-9 XPR-2"),
    expire=("the deadline monitor expires it", "APR-5 INV-12"),
)
