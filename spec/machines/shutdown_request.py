"""Shutdown request: the Lead asks one member to stop at a safe point (SHD-1 … SHD-7).

Abstracts away: the member's own record (the ``member`` machine), the drain passes (a guard over
jobs and the current task), and the escalation ladder's steps, which act on jobs, processes and
the task but do not change this record until the drain finishes.
"""

from statemachine import State, StateMachine

from ._notes import describe


class ShutdownRequest(StateMachine):
    """requested → draining → completed; draining → timed_out → completed; requested → cancelled | expired."""

    requested = State(initial=True)
    draining = State()
    timed_out = State()
    completed = State(final=True)
    cancelled = State(final=True)
    expired = State(final=True)

    begin_drain = requested.to(draining)
    finish = draining.to(completed) | timed_out.to(completed)
    time_out = draining.to(timed_out)
    cancel = requested.to(cancelled)
    expire = requested.to(expired)


STATES = describe(
    requested=("created by the Lead; shutdown_request owed to the member", "SHD-1"),
    draining=("the member accepted it and drains: no new claims, jobs settle", "SHD-2 SHD-3"),
    timed_out=("the deadline passed while draining; escalation, the process may still run", "SHD-6 SHD-7"),
    completed=("the member stopped with no task; shutdown_ack owed", "SHD-5"),
    cancelled=("the Lead withdrew it before the drain began", "AUD-4 XPR-5"),
    expired=("the member never began draining before the deadline", "SHD-6 XPR-5"),
)

EVENTS = describe(
    begin_drain=("the targeted member begins draining for this request", "SHD-2"),
    finish=("the drained member finishes: stopped, no task, ack owed", "SHD-5 SHD-6"),
    time_out=("the deadline monitor sees draining past the deadline", "SHD-6"),
    cancel=("the Lead cancels before the drain began", "AUD-4"),
    expire=("the deadline monitor sees requested past the deadline", "SHD-6"),
)
