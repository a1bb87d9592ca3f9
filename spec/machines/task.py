"""Task lifecycle (TSK-1 … TSK-3, MEM-1, SHD-3, SHD-7, SHD-9, SHD-10).

Abstracts away: the claim token (a fresh token per claim; only its holder moves the task), the
checkpoint contents, and the history that a release keeps.
"""

from statemachine import State, StateMachine

from ._notes import describe


class Task(StateMachine):
    """pending → claimed → completed | failed | pending | suspended | needs_inspection."""

    pending = State(initial=True)
    claimed = State()
    completed = State(final=True)
    failed = State(final=True)
    suspended = State()
    needs_inspection = State()

    claim = pending.to(claimed)
    complete = claimed.to(completed)
    fail = claimed.to(failed) | needs_inspection.to(failed)
    release = claimed.to(pending)
    suspend = claimed.to(suspended)
    flag_for_inspection = claimed.to(needs_inspection)
    resume = suspended.to(pending)
    clear_inspection = needs_inspection.to(pending)


STATES = describe(
    pending=("claimable; keeps its last checkpoint and history", "TSK-3"),
    claimed=("held by one member under one claim token", "MEM-1 TSK-1"),
    completed=("finished by its claim holder", "TSK-1"),
    failed=("failed by its holder, or after inspection", "TSK-1 SHD-7"),
    suspended=("its unit of work passed its hard deadline", "SHD-9"),
    needs_inspection=("its member was force-killed or lost; not re-run until inspected", "SHD-7 SHD-10"),
)

EVENTS = describe(
    claim=("a running, accepting, unfenced member claims it under the assignment lock", "MEM-1"),
    complete=("the claim holder completes it; never used to escape a drain", "TSK-1 SHD-3"),
    fail=("the claim holder fails it, or inspection fails it", "TSK-1 SHD-7"),
    release=("the holder checkpoints and releases it (drain pass with jobs settled)", "SHD-3 TSK-3 INV-5"),
    suspend=("the unit deadline passed; task_suspended is sent", "SHD-9"),
    flag_for_inspection=("its member was force-killed or its heartbeat lapsed", "SHD-7 SHD-10"),
    resume=("a suspended task is made claimable again", "SHD-9"),
    clear_inspection=("inspection found workspace and idempotency records sound", "SHD-7"),
)
