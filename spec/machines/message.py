"""Message delivery on the bus (MSG-3, MSG-5, REC-3).

A message is news, never the source of truth: reading or acknowledging it changes no request
(MSG-3). Abstracts away: the payload and the receiver's deduplication table (MSG-5), which keys
on ``(message_id, correlation_id)`` and answers a duplicate with the recorded result.
"""

from statemachine import State, StateMachine

from ._notes import describe


class Message(StateMachine):
    """pending → delivered → acknowledged; pending → expired."""

    pending = State(initial=True)
    delivered = State()
    acknowledged = State(final=True)
    expired = State(final=True)

    deliver = pending.to(delivered)
    acknowledge = delivered.to(acknowledged)
    expire = pending.to(expired)


STATES = describe(
    pending=("on the bus under its stable id, not yet read by its target", "MSG-4 MSG-6"),
    delivered=("read by its target once; duplicates return the recorded result", "MSG-5"),
    acknowledged=("acknowledged by its target; completes no request", "MSG-3"),
    expired=("its ttl_seconds passed unread", "MSG-1"),
)

EVENTS = describe(
    deliver=("the target reads it (deduplicated on message id and correlation id)", "MSG-5"),
    acknowledge=("the target acknowledges it; no request changes", "MSG-3"),
    expire=("ttl_seconds passed before it was read", "MSG-1"),
)
