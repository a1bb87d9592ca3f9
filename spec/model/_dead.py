"""Dead-data reduction: what a final job or task record holds beyond "final" is never read again.

A job that exited (succeeded, failed or cancelled) and a task that ended (completed or failed)
never change again, and nothing that decides the model's future reads more of them than that
their status is final:

- guards and write steps read a job's status only to ask whether it is empty, running or
  cancel-requested (``job.start``, ``job.exit``, MEM-4's ``job_busy``, SHD-3's drain pass, SHD-7's
  termination), and a task's only to ask whether it is pending, claimed, suspended or needs
  inspection; the task a final job ran for, its ``cancellable`` flag, and a final task's owner,
  claim count, checkpoint and claim time are read by no guard, no write step and no
  reconciliation (REC-*) — a claim's token and a suspension's key are taken from a live task;
- the invariants read them no further: INV-2, INV-4 and INV-5 look only at claimed tasks and
  busy jobs, INV-3 and INV-11 at records that change in the step (a final one does not), and
  INV-10 finds no secret in a job or a task; no other invariant reads jobs or tasks;
- the liveness goal (``Model.is_goal``) reads protocol records only.

So two states that differ only there have the same futures, step by step, with the same verdict
of every check: they are bisimilar. The explorer keys its visited set by :func:`erase` (before
symmetry) and expands one state per class; it still stores, checks and prints the concrete
states it reached. ``model_tests/test_dead_data.py`` checks the claim on whole state spaces: the
reduced search reaches every class the full search reaches, with the same verdicts.
"""

from __future__ import annotations

from .._tables import final_states
from ._state import Job, State, Task, replace
from ._time import relative

_FINAL_JOBS = frozenset(final_states("job"))
_FINAL_TASKS = frozenset(final_states("task"))
FINAL_JOB = Job(status=min(_FINAL_JOBS))
FINAL_TASK = Task(status=min(_FINAL_TASKS))


def erase(s: State, regions: bool = False) -> State:
    """``s`` with every final job and task replaced by one representative final record; with
    ``regions`` (a configuration whose time is unbounded) keyed by deadline regions too
    (:func:`spec.model._time.relative`)."""
    if regions:
        s = relative(s)
    jobs = s.jobs
    if any(j.status in _FINAL_JOBS and j != FINAL_JOB for j in jobs):
        jobs = tuple(FINAL_JOB if j.status in _FINAL_JOBS else j for j in jobs)
    tasks = s.tasks
    if any(t.status in _FINAL_TASKS and t != FINAL_TASK for t in tasks):
        tasks = tuple(FINAL_TASK if t.status in _FINAL_TASKS else t for t in tasks)
    if jobs is s.jobs and tasks is s.tasks:
        return s
    return replace(s, jobs=jobs, tasks=tasks)


__all__ = ["FINAL_JOB", "FINAL_TASK", "erase"]
