"""Member lifecycle (MEM-1 … MEM-3, SHD-2, SHD-5, SHD-7, SHD-10, XPR-1).

Abstracts away: ``accepting_new_tasks``, ``shutdown_request_id`` and the current task (record
fields checked by guards), and the incarnation number, which grows on every ``restart``.
"""

from statemachine import State, StateMachine

from ._notes import describe


class Member(StateMachine):
    """running → draining → stopped; running|draining → unhealthy → stopped; stopped → running | retired."""

    running = State(initial=True)
    draining = State()
    unhealthy = State()
    stopped = State()
    retired = State(final=True)

    begin_drain = running.to(draining)
    stop = draining.to(stopped) | unhealthy.to(stopped)
    mark_unhealthy = running.to(unhealthy) | draining.to(unhealthy)
    restart = stopped.to(running)
    retire = stopped.to(retired)


STATES = describe(
    running=("may claim work when accepting and no active shutdown targets it", "MEM-1"),
    draining=("finishing or checkpointing its unit; accepts nothing new", "SHD-2 MEM-3"),
    unhealthy=("heartbeat lapsed or its records disagree; claims flagged", "SHD-10 REC-2"),
    stopped=("holds no task; may be restarted with a new incarnation", "SHD-5 INV-4"),
    retired=("removed from the team", "MEM-1"),
)

EVENTS = describe(
    begin_drain=("a valid shutdown request begins the drain", "SHD-2"),
    stop=("drain finished, or inspection / forced termination done", "SHD-5 SHD-7"),
    mark_unhealthy=("heartbeat lapsed (last will) or reconcile found disagreement", "SHD-10"),
    restart=("started again with a higher incarnation", "XPR-1"),
    retire=("removed from the team for good", "MEM-1"),
)
