"""Tool execution: one protected call's outcome, keyed by its idempotency key (APR-5, APR-8).

The key is the consumed approval's id. A record left ``started`` after a crash is an
*indefinite* outcome: recovery looks it up and reports it; it never re-requests approval and
never repeats the call blindly (APR-8). Abstracts away: the tool's result payload.
"""

from statemachine import State, StateMachine

from ._notes import describe


class ToolExecution(StateMachine):
    """started → succeeded | failed."""

    started = State(initial=True)
    succeeded = State(final=True)
    failed = State(final=True)

    succeed = started.to(succeeded)
    fail = started.to(failed)


STATES = describe(
    started=("the consumed approval's call is under way or its outcome is unknown", "APR-5 APR-8"),
    succeeded=("the call returned; its result is recorded under the key", "APR-8"),
    failed=("the call failed; the approval stays consumed", "APR-6 APR-8"),
)

EVENTS = describe(
    succeed=("the external call returned success", "APR-8"),
    fail=("the external call failed", "APR-6"),
)
