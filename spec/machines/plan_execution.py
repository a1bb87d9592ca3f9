"""Plan execution: the run of one approved plan, kept apart from its approval (PLN-4, PLN-7, PLN-9).

Like a job, it records an outcome. Abstracts away: the individual steps (each must map to an
approved step id in order — a deviation is a ``fail``), and the rollback's own steps.
"""

from statemachine import State, StateMachine

from ._notes import describe


class PlanExecution(StateMachine):
    """running → completed | failed; failed → rolled_back."""

    running = State(initial=True)
    completed = State(final=True)
    failed = State()
    rolled_back = State(final=True)

    complete = running.to(completed)
    fail = running.to(failed)
    roll_back = failed.to(rolled_back)


STATES = describe(
    running=("the executed marker is written and approved steps run in order", "PLN-4 PLN-7"),
    completed=("every approved step ran; plan_completion is owed", "PLN-10"),
    failed=("a step deviated, failed or timed out; rollback is owed", "PLN-4 PLN-9"),
    rolled_back=("the plan's rollback ran", "PLN-9"),
)

EVENTS = describe(
    complete=("the last approved step finished", "PLN-10"),
    fail=("deviation, step failure, timeout or the requester's stop", "PLN-4 PLN-9 PLN-11"),
    roll_back=("the plan's rollback finished", "PLN-9"),
)
