"""Background job (JOB-1, JOB-2, MEM-4, SHD-3, SHD-4).

Abstracts away: the process, its output and whether it is cancellable (a record field: a
non-cancellable job is never signalled by a drain pass). Only terminal states are "settled".
"""

from statemachine import State, StateMachine

from ._notes import describe


class Job(StateMachine):
    """running → succeeded | failed | cancelled | cancel_requested; cancel_requested → settled."""

    running = State(initial=True)
    cancel_requested = State()
    succeeded = State(final=True)
    failed = State(final=True)
    cancelled = State(final=True)

    request_cancel = running.to(cancel_requested)
    succeed = running.to(succeeded) | cancel_requested.to(succeeded)
    fail = running.to(failed) | cancel_requested.to(failed)
    exit_cancelled = running.to(cancelled) | cancel_requested.to(cancelled)


STATES = describe(
    running=("the background command runs outside the member's thread", "MEM-4"),
    cancel_requested=("cancel was asked; still running until it exits", "JOB-1 SHD-3"),
    succeeded=("exited successfully", "JOB-1"),
    failed=("exited with failure", "JOB-1"),
    cancelled=("exited because of a cancel", "JOB-1"),
)

EVENTS = describe(
    request_cancel=("a drain pass or a user asks a cancellable job to stop", "JOB-1 JOB-2 SHD-3"),
    succeed=("the job exited with success, even after a cancel request", "JOB-1"),
    fail=("the job exited with failure", "JOB-1"),
    exit_cancelled=("the job exited in response to cancellation", "JOB-1"),
)
