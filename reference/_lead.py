"""The Lead's side of member processes: the escalation ladder (SHD-7), the last will (SHD-10)
and the inspection of a lost member's processes before its task runs again.

Everything is found from the stores: a member's process by ``TEAMPROTO_MEMBER=<id>:<incarnation>``
and a job's by ``TEAMPROTO_JOB_ID=<job id>`` in the process environment, each beside
``TEAMPROTO_TEAM=<the store's team>`` (:func:`reference._processes.find_processes`): another
team's member or job of the same id is never touched. Every wait is bounded and polls.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field

from ._harness import Harness
from ._member_process import send_owed
from ._mutants import broken
from ._processes import JOB_ENV, MEMBER_ENV, alive, find_processes, live_values, signal_group, wait_until
from ._team_errors import MemberBusy, ProcessesSurvive, ShutdownRefused

POLL_SECONDS = 0.02


def member_processes(team: str, member_id: str, incarnation: int) -> list[int]:
    """Process ids of the live OS processes of this member incarnation of ``team``."""
    return find_processes(team, MEMBER_ENV, f"{member_id}:{incarnation}")


@dataclass
class Ladder:
    """What the escalation ladder did, rung by rung (for the timeline and the tests)."""

    shutdown_id: str
    rungs: list[str] = field(default_factory=list)
    outcome: str = ""

    def rung(self, text: str) -> None:
        self.rungs.append(text)


def escalate(harness: Harness, shutdown_id: str, grace_seconds: float = 2.0) -> Ladder:
    """SHD-7, after the monitor marked the drain ``timed_out``: inspect; cancel cancellable jobs;
    SIGTERM the member's process; wait and re-check; only then SIGKILL it and force-terminate
    (its jobs killed, its task ``needs_inspection``, one ``member_lost``)."""
    sd = harness.shutdowns.require(shutdown_id).doc
    if sd["status"] != "timed_out":
        raise ShutdownRefused(f"escalation of {shutdown_id}", f"it is {sd['status']}; the ladder starts at timed_out")
    ladder = Ladder(shutdown_id)
    member_id, incarnation = sd["target_id"], sd["target_incarnation"]
    member = harness.member(member_id)
    task = member["current_task_id"]
    saved = harness.task_row(task).doc["checkpoint"] if task else None
    busy = harness.jobs.busy(member_id)
    ladder.rung(
        f"inspect: {member_id} is {member['status']}, holds {task or 'no task'}, jobs still running: "
        f"{', '.join(busy) or 'none'}, last checkpoint at {saved['saved_at'] if saved else 'never'}"
    )
    ladder.rung("wake: nothing to send; a member process reads its records at every safe point (deadline kept)")
    cancellable = [
        job.key
        for job in harness.jobs.busy_rows(member_id)
        if job.doc["status"] == "running" and job.doc["cancellable"]
    ]
    if cancellable and member["status"] == "draining" and member["shutdown_request_id"] == shutdown_id:
        harness.shutdowns.drain_jobs(member_id)  # JOB-2: only cancellable jobs are asked
    ladder.rung(
        f"cancel cancellable jobs: {', '.join(cancellable) or 'none'}; still waiting for: "
        f"{', '.join(harness.jobs.busy(member_id)) or 'none'}"
    )
    signalled = member["incarnation"] if broken("ladder_signals_current_incarnation") else incarnation
    pids = member_processes(harness.storage.team, member_id, signalled)  # XPR-1: the request's incarnation
    terminated = [] if broken("ladder_skips_sigterm") else pids
    for pid in terminated:
        signal_group(pid, signal.SIGTERM)
    ladder.rung(f"SIGTERM to the member process {', '.join(map(str, terminated)) or '(none alive)'}")
    grace_seconds = 0.0 if broken("ladder_skips_sigterm") else grace_seconds

    def finished() -> bool:
        return bool(harness.shutdowns.require(shutdown_id).doc["status"] == "completed")

    if wait_until(finished, grace_seconds, POLL_SECONDS):
        ladder.rung("re-check: the drain completed after SIGTERM; nothing is killed")
        ladder.outcome = "completed"
        return ladder
    ladder.rung(f"re-check after {grace_seconds:g} s: still {harness.shutdowns.require(shutdown_id).doc['status']}")
    force_kill(pids)
    ladder.rung(f"SIGKILL to the member process {', '.join(map(str, pids)) or '(none alive)'}")
    if finished():  # it finished the drain between the re-check and the kill: nothing to force
        ladder.rung("re-check after SIGKILL: the drain had completed; nothing to force")
        ladder.outcome = "completed"
        return ladder
    jobs = harness.jobs.busy(member_id)
    harness.shutdowns.force_terminate(shutdown_id)
    # SHD-7: the record says killed; the ladder returns once no process of those jobs is found —
    # their groups, and each process that left its group — or names the ones that outlived the kill
    left = [] if broken("ladder_leaves_job_processes") else _kill_jobs(harness.storage.team, jobs)
    send_owed(harness)
    outlived = f"; still alive: {', '.join(map(str, left))}" if left else ""
    ladder.rung(f"force-terminated: jobs killed, task needs_inspection, member_lost sent{outlived}")
    ladder.outcome = "force_terminated"
    return ladder


def force_kill(pids: list[int], timeout_seconds: float = 5.0) -> None:
    for pid in pids:
        signal_group(pid, signal.SIGKILL)
    wait_until(lambda: not any(alive(pid) for pid in pids), timeout_seconds, POLL_SECONDS)


def watch_lapses(harness: Harness, max_age_seconds: float) -> list[str]:
    """SHD-10, the last will: every live member whose heartbeat is older than ``max_age_seconds``
    lapses (one ``member_lost``, its claims flagged) and the notices are sent."""
    lapsed = []
    for member_id in harness.members.lapsed(max_age_seconds):
        try:  # judged again as it is written: a member that beat since lives (SHD-10, STO-4)
            harness.members.lapse(member_id, max_age_seconds)
        except MemberBusy:
            continue
        lapsed.append(member_id)
    if lapsed:
        send_owed(harness)
    return lapsed


def _kill_all(team: str, env: str, value: str, timeout_seconds: float = 5.0) -> list[int]:
    """SIGKILL every live process of ``team`` marked ``env=value``: its group, then itself (a
    process that left its group, e.g. by ``setsid``, is out of the group's reach); the pids still
    found after ``timeout_seconds``."""
    for pid in find_processes(team, env, value):
        signal_group(pid, signal.SIGKILL)
        if not broken("inspection_ignores_survivors"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not find_processes(team, env, value), timeout_seconds, POLL_SECONDS)
    return find_processes(team, env, value)


def _kill_jobs(team: str, job_ids: list[str]) -> list[int]:
    """SIGKILL every live process of each job (:func:`_kill_all`); the pids that outlived it."""
    return [pid for job_id in job_ids for pid in _kill_all(team, JOB_ENV, job_id)]


def inspect_lost_member(harness: Harness, member_id: str) -> list[str]:
    """SHD-7: before a lost member's task runs again, no process of it or of its jobs may live.
    Kill what is left — each process's group, and each process itself (one that left its group) —
    and only once none is found any more, record each busy job's exit and inspect the member (→
    stopped, its own open requests cancelled with ``crashed``). A process that outlives the kill
    refuses the inspection (:class:`ProcessesSurvive`, nothing recorded: fail closed, XPR-3), and
    a member that is not unhealthy is refused before anything is killed (:class:`MemberBusy`).
    Returns the tasks that now need inspection."""
    team, member = harness.storage.team, harness.member(member_id)
    if member["status"] != "unhealthy" and not broken("inspection_kills_before_checking"):
        # XPR-3: judged before the first kill, so that a member inspected by mistake is left alive
        raise MemberBusy(member_id, member["status"], "inspect it", "only an unhealthy member is inspected")
    left = _kill_all(team, MEMBER_ENV, f"{member_id}:{member['incarnation']}")
    busy = harness.jobs.busy(member_id)
    for job_id in busy:
        harness.jobs.runner.kill(job_id)  # its group, wherever it was started
    # every job of the member, ended ones too: a job recorded killed (SHD-7's last rung) may have
    # left a process behind that left its group
    owned = set(busy)
    if not broken("inspection_sweeps_busy_jobs_only"):
        for job_id in live_values(team, JOB_ENV):  # the live processes' jobs, not the history
            row = harness.storage.read("job", job_id)
            if row is not None and row.doc["owner_id"] == member_id:
                owned.add(job_id)
    left += _kill_jobs(team, sorted(owned))
    if left and not broken("inspection_ignores_survivors"):
        raise ProcessesSurvive(member_id, sorted(left))
    for job_id in busy:
        harness.jobs.exited(job_id, signal.SIGKILL if broken("inspection_exit_unsigned") else -signal.SIGKILL)
    harness.members.inspect(member_id)
    return [row.key for row in harness.storage.scan("task") if row.doc["status"] == "needs_inspection"]


__all__ = ["Ladder", "escalate", "force_kill", "inspect_lost_member", "member_processes", "watch_lapses"]
