"""Real OS processes: background jobs and member processes (MEM-4, JOB-1, JOB-2, SHD-7, SHD-8).

Every process the harness starts gets its own session, hence its own process group whose id is
the process id: a signal sent to the group reaches the command and every child it forked, and
a signal sent to the member's group never reaches its jobs (they have groups of their own).

Nothing here decides protocol state. The caller persists what happened through the harness's
job and member operations; this module only starts, signals, polls and reaps processes. Every
wait is bounded by a timeout and polls (no long sleep).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from spec.errors import ProtocolError

from ._mutants import broken

POLL_SECONDS = 0.01
"""How often a bounded wait looks again."""


class ProcessGone(ProtocolError):
    """A process to signal or wait for is not known here. Definite: nothing was signalled."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not a process this runner started; look its job record up instead")


def spawn(argv: Sequence[str], *, env: dict[str, str] | None = None, log: str | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session (own process group, pgid == pid); output to ``log`` or nowhere."""
    assert argv, "a command needs at least a program"
    output = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below, the child keeps its copy)
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    finally:
        if log:
            output.close()  # type: ignore[union-attr]


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an exited child nobody reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc: kill(pid, 0) said it exists


def signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to process group ``pgid``; False if the group no longer exists."""
    assert pgid > 1, "never signal init or every process of the session"
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def wait_until(predicate: Callable[[], bool], timeout_seconds: float, poll_seconds: float = POLL_SECONDS) -> bool:
    """Poll ``predicate`` until it holds or ``timeout_seconds`` pass; returns its last value."""
    deadline = time.monotonic() + timeout_seconds
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(poll_seconds)
    return True


MEMBER_ENV = "TEAMPROTO_MEMBER"
"""Every member process carries ``<member_id>:<incarnation>`` here, so the Lead's escalation
ladder finds it from the member record alone. Its jobs do not inherit it: a signal meant for the
member must never reach a job (JOB-2)."""

TEAM_ENV = "TEAMPROTO_TEAM"
"""Every member and job process carries its team's name here (``Storage.team``: the real path of
the team's SQLite file), and is found only together with it. Member ids, incarnations and job ids
are a team's own: two teams on one machine may each have a member ``m0`` in its first incarnation
running a job of the same id, and one team's escalation ladder (SHD-7) or inspection must never
signal the other's processes."""

JOB_ENV = "TEAMPROTO_JOB_ID"
"""Every job process carries its job id in this environment variable, so that any process of the
team (the Lead's escalation ladder, after the member that started the job died) can find the
job's process group from the job record alone, without a second copy of state (DESIGN rule 2)."""


def _environments() -> Iterator[tuple[int, set[bytes]]]:
    """Each process whose environment this user may read (Linux ``/proc``), with its ``NAME=value``
    pairs; one gone meanwhile, or not ours, is skipped."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                pairs = set(environ.read().split(b"\0"))
        except OSError:
            continue
        yield int(entry), pairs


def find_processes(team: str, variable: str, value: str) -> list[int]:
    """Live processes of ``team`` whose environment has ``variable=value`` (Linux ``/proc``; same
    user): see :data:`TEAM_ENV`."""
    wanted = {f"{TEAM_ENV}={team}".encode(), f"{variable}={value}".encode()}
    if broken("processes_found_by_id_alone"):
        wanted = {f"{variable}={value}".encode()}
    return sorted(pid for pid, pairs in _environments() if wanted <= pairs and alive(pid))


def live_values(team: str, variable: str) -> set[str]:
    """The values of ``variable`` in the environments of ``team``'s live processes (as
    :func:`find_processes`): e.g. the ids of every job with a process left, whatever its record says."""
    prefix, member = f"{variable}=".encode(), f"{TEAM_ENV}={team}".encode()
    found: set[str] = set()
    for pid, pairs in _environments():
        if member in pairs and alive(pid):
            found.update(pair[len(prefix) :].decode(errors="replace") for pair in pairs if pair.startswith(prefix))
    return found


@dataclass
class SubprocessJobRunner:
    """Background jobs as real OS subprocesses (MEM-4), one process group each.

    Implements the harness's ``JobRunner`` interface (``start``, ``signal_cancel``, ``kill``,
    ``poll``). The harness persists ``running`` before ``start`` and ``cancel_requested`` before
    ``signal_cancel`` (JOB-1), and never calls ``signal_cancel`` for a non-cancellable job
    (JOB-2); this runner never signals a job on its own. ``signal_cancel`` sends SIGTERM to the
    job's group — a handleable signal the command may trap to stop cleanly — and only ``poll``
    reporting the exit lets the harness record ``cancelled``, ``succeeded`` or ``failed``.
    ``kill`` (SIGKILL) is the escalation ladder's last rung (SHD-7); it also reaches a job started
    by another process, found by :data:`JOB_ENV`. ``poll`` of a job this runner did not start
    is ``None``: only the process that started a job can read its exit code.
    """

    log_dir: str | None = None
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    exits: dict[str, int] = field(default_factory=dict)
    team: str | None = field(default=None, kw_only=True)
    """The name of the team whose jobs these are (:data:`TEAM_ENV`), as ``Storage.team`` gives it:
    a harness binds its store's team; a runner without one starts and finds nothing."""

    def start(self, job_id: str, command: str | Sequence[str]) -> None:
        assert job_id not in self.processes, f"job {job_id} was started already"
        team = self.bound()
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        log = os.path.join(self.log_dir, f"{job_id}.log") if self.log_dir else None
        hidden = (JOB_ENV,) if broken("member_signal_reaches_jobs") else (MEMBER_ENV, JOB_ENV)
        env = {name: value for name, value in os.environ.items() if name not in hidden}
        self.processes[job_id] = spawn(argv, env={**env, TEAM_ENV: team, JOB_ENV: job_id}, log=log)

    def bound(self) -> str:
        if self.team is None:
            raise ValueError("a job runner starts and finds the jobs of one team: give it team= or a Harness")
        return self.team

    def poll(self, job_id: str) -> int | None:
        """The exit code once the job's process has exited (negative: killed by that signal)."""
        if job_id in self.exits:
            return self.exits[job_id]
        process = self.processes.get(job_id)
        code = process.poll() if process is not None else None
        if code is not None:
            self.exits[job_id] = code
        return code

    def signal_cancel(self, job_id: str) -> None:
        """SIGTERM to the job's process group (the harness asked: the record is cancel_requested)."""
        self.signal(job_id, signal.SIGTERM)

    def kill(self, job_id: str) -> None:
        """SIGKILL to the job's process group, wherever it was started (SHD-7's last rung)."""
        self.signal(job_id, signal.SIGKILL)

    def signal(self, job_id: str, signum: int) -> bool:
        """Signal the job's group; False if no process of the job runs any more."""
        if job_id in self.processes:
            if self.poll(job_id) is not None:
                return False
            return signal_group(self.processes[job_id].pid, signum)
        groups = {_pgid_or_none(pid) for pid in find_processes(self.bound(), JOB_ENV, job_id)}
        return any([signal_group(pgid, signum) for pgid in sorted(g for g in groups if g and g > 1)])

    def wait(self, job_id: str, timeout_seconds: float) -> int | None:
        """Wait (bounded) for the job to exit; its exit code, or None if it still runs."""
        wait_until(lambda: self.poll(job_id) is not None, timeout_seconds)
        return self.poll(job_id)

    def pid(self, job_id: str) -> int:
        return self._process(job_id).pid

    def running(self) -> list[str]:
        return sorted(job_id for job_id in self.processes if self.poll(job_id) is None)

    def close(self) -> None:
        """Kill and reap every job still running (for tests and for a process that exits)."""
        for job_id in self.running():
            self.signal(job_id, signal.SIGKILL)
        for process in [] if broken("close_leaves_zombies") else self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL cannot be caught
                process.wait(timeout=5)

    def _process(self, job_id: str) -> subprocess.Popen[bytes]:
        try:
            return self.processes[job_id]
        except KeyError:
            raise ProcessGone(f"job {job_id}") from None


def _pgid_or_none(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
