"""Outbox entry: a message still owed, with its stable id (SHD-5, REC-3, INV-7).

Abstracts away: how many attempts a send takes. A failed attempt leaves the entry ``owed``;
the outbox re-sends it with the same id until the bus has it (at least once on the wire,
exactly once in effect through MSG-5).
"""

from statemachine import State, StateMachine

from ._notes import describe


class OutboxEntry(StateMachine):
    """owed → sent."""

    owed = State(initial=True)
    sent = State(final=True)

    put_on_bus = owed.to(sent)


STATES = describe(
    owed=("written with its protocol record's change; not yet on the bus", "SHD-5 REC-3"),
    sent=("the bus holds the message under its stable id", "REC-3 INV-7"),
)

EVENTS = describe(
    put_on_bus=("the outbox put the message on the bus (idempotent on its stable id)", "REC-3"),
)
