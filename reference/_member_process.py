"""A member as a real OS process (MEM-1 … MEM-4, SHD-2 … SHD-5, SHD-8 … SHD-10).

``python -m reference._member_main --db team.db --member m0 --incarnation 1 --script s.json``
runs one member over a shared SQLite file with the wall clock. Start it with :func:`start_member`
(or set ``TEAMPROTO_MEMBER=<member>:<incarnation>`` in its environment yourself): that is how the
Lead's escalation ladder finds the process; without it the ladder can only fence it by its
records (the member stops at its next safe point once its record is not ``running``). Everything it knows it reads from
the stores (DESIGN rule 2): its record, its task and checkpoint, its jobs, its messages. Its loop:

1. at every pass and every safe point: heartbeat (SHD-10), handle a ``shutdown_request``
   addressed to it (SHD-2: the drain begins), record the exits of its jobs (JOB-1);
2. a SIGINT/SIGTERM only sets the shutdown event (SHD-8); the loop reads it;
3. draining for a shutdown request: drain passes until the task is released and the drain
   finished (SHD-3, SHD-5), then exit;
4. running: claim a pending task if it holds none (MEM-1), then one step of it (MEM-2, MEM-3);
   past the unit's hard deadline the task is suspended (SHD-9).

The process's own shutdown on a signal (SHD-8), step by step, is :meth:`MemberProcess.exit_on_signal`.
Its write steps (the model has no signals; these are the reference's own, listed in
:data:`EXIT_STEPS`): ``member.exit/member`` (draining, not accepting: no new work) →
``member.exit/requests`` (its own ``requested`` approvals cancelled, ``member_draining``, XPR-2) →
``member.exit/jobs`` (cancellable jobs ``cancel_requested``; then SIGTERM) → ``job.exit/job``
for each job's own exit → ``member.exit/task`` (released with the checkpoint the step wrote
after its last tool call, ``task.checkpoint/task``, and its history, TSK-3) →
``member.exit/stopped`` → ``member.exit/outbox`` (``shutdown_notice`` owed) → ``outbox.send/*``.

A crash after ``member.exit/member`` … ``member.exit/task`` leaves a member ``draining``
without a shutdown request: reconciliation marks it ``unhealthy`` and owes ``member_lost``
(PROTOCOL §5) — a shutdown that did not finish is told like a crash. A crash between
``member.exit/stopped`` and ``member.exit/outbox`` loses the ``shutdown_notice``: no record owes
it (the model has no signals), and the store shows a stopped member holding nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import spec
from spec.errors import ProtocolError
from spec.ids import protocol_id

from ._clock import SystemClock
from ._errors import UnknownTool, VersionConflict
from ._harness import CallContext, Harness
from ._mutants import broken
from ._processes import MEMBER_ENV, TEAM_ENV, SubprocessJobRunner, spawn, wait_until
from ._runtime import (
    FRESH_STATE,
    DrainRequested,
    MemberCannotContinue,
    Model,
    SafePoints,
    ScriptedModel,
    ShutdownEvent,
    ShutdownSignalled,
    StepRunner,
    UnitDeadlineExceeded,
)
from ._storage import SQLiteStorage, team_of
from ._tasks import released_task
from ._team_errors import StaleMember, TeamRefusal
from ._tools import Tool, normalize_paths

EXIT_CLEAN, EXIT_NOT_RUNNING, EXIT_STALE, EXIT_STUCK = 0, 3, 4, 5
"""Process exit codes: a clean exit; the record says the member may not go on (e.g. unhealthy);
a newer incarnation exists (XPR-1); jobs did not settle within ``max_wait_seconds``."""

NOTICE_TTL = 60.0


def send_owed(harness: Harness) -> list[str]:
    """REC-3 from any process of the team: send every owed outbox entry. Several processes share
    the outbox; when another one sends an entry first, its compare-and-set wins and this one
    leaves the entry to it (the message id is stable, so a second post changes nothing, MSG-4)."""
    sent = []
    for message_id in harness.outbox.owed():
        try:
            harness.outbox.send(message_id)
        except VersionConflict:
            continue
        sent.append(message_id)
    return sent


def tool_call_id(task: Mapping[str, Any], kind: str) -> str:
    """The id of the tool call the holder of ``task`` makes next (a job's id, a protected call's
    ``tool_call_id``; APR-3: the harness derives it, the model never writes it).

    It is a function of the task's record alone (DESIGN rule 2), and it names the call exactly:
    the task, how many times it has been claimed, the step its checkpoint reached, the calls of
    that step already done, and the call's kind. Hence
    - within one claim, a retry of the same call repeats the id, so it finds its own job or its
      own approval again and cannot start a second one (MSG-4, JOB-1, APR-6);
    - a task claimed again (after a drain released it, a lost member's task was inspected back to
      ``pending``, or a restart; TSK-3, XPR-1) makes a *new* call: its interrupted job runs again
      and its protected call asks for a new approval — an id that ignored the claim would hand the
      new holder the earlier claim's cancelled job or its old incarnation's approval.
    """
    state = {**FRESH_STATE, **((task["checkpoint"] or {}).get("state") or {})}
    claims = sum(1 for event in task["history"] if event["event"] == "claimed")
    claim = "" if broken("call_id_ignores_claim") else f"-c{claims}"
    return f"{task['task_id']}{claim}-s{state['step']}-{state['calls_done']}-{kind}"


class FileTool:
    """A protected tool whose external effect is a line in a file, keyed by idempotency key
    (APR-8: the outcome of a call is looked up, never repeated)."""

    def __init__(self, path: str, name: str = "deploy") -> None:
        self.path, self.name = path, name

    def run(self, key: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        with open(self.path, "a", encoding="utf-8") as world:
            world.write(json.dumps({"key": key, "tool": self.name, "arguments": dict(arguments)}) + "\n")
        return {"ok": True}

    def lookup(self, key: str) -> dict[str, Any] | None:
        if not os.path.exists(self.path):
            return None
        lines = Path(self.path).read_text(encoding="utf-8").splitlines()
        return {"ok": True} if any(json.loads(line)["key"] == key for line in lines if line) else None

    def tool(self) -> Tool:
        return Tool(self.name, self.run, normalize_paths("path"), lookup=self.lookup)


class MemberProcess:
    def __init__(
        self,
        harness: Harness,
        member_id: str,
        incarnation: int,
        model: Model | Mapping[str, Model],
        *,
        unit_seconds: float = 60.0,
        heartbeat_seconds: float = 0.05,
        poll_seconds: float = 0.02,
        max_wait_seconds: float = 60.0,
    ) -> None:
        self.h, self.member_id, self.incarnation = harness, member_id, incarnation
        self.models: Mapping[str, Model] = model if isinstance(model, Mapping) else {"*": model}
        self.unit_seconds, self.heartbeat_seconds = unit_seconds, heartbeat_seconds
        self.poll_seconds, self.max_wait_seconds = poll_seconds, max_wait_seconds
        self.shutdown = ShutdownEvent()
        self.last_beat = float("-inf")
        self.log: list[str] = []

    # ---- what happens at every pass and every safe point --------------------------------------
    def tick(self, where: str = "loop") -> None:
        """Heartbeat (rate-limited), handle a shutdown request to this member, record job exits."""
        now = time.monotonic()
        if now - self.last_beat >= self.heartbeat_seconds:
            self.beat()
            self.last_beat = now
        self.h.jobs.poll()
        for row in self.h.storage.scan("message"):
            envelope = row.doc["message"]
            to_me = envelope["target"] == self.member_id and envelope["message_type"] == "shutdown_request"
            if to_me and row.doc["status"] == "pending":
                result = self.h.shutdowns.begin_drain(self.member_id, row.key)
                self.say(f"shutdown_request {row.key[:8]} at {where}: {result['outcome']}")

    def beat(self) -> None:
        """SHD-10: the heartbeat. A write of the Lead to the member record in between (a lapse,
        say) wins the compare-and-set; the next beat reads again (and the next safe point sees
        what the Lead wrote)."""
        with contextlib.suppress(VersionConflict):
            self.h.members.heartbeat(self.member_id, self.incarnation)

    def say(self, line: str) -> None:
        self.log.append(line)
        print(f"[{self.member_id}#{self.incarnation} {self.h.clock.now():.3f}] {line}", flush=True)

    # ---- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        while True:
            try:
                self.tick()
            except TeamRefusal as refusal:  # e.g. a stale incarnation's heartbeat (XPR-1)
                self.say(f"stopping: {refusal}")
                return EXIT_STALE if isinstance(refusal, StaleMember) else EXIT_NOT_RUNNING
            if self.shutdown.is_set():
                return self.exit_on_signal()
            member = self.h.member(self.member_id)
            if member["incarnation"] != self.incarnation:
                return EXIT_STALE
            if member["status"] == "draining" and member["shutdown_request_id"]:
                return self.drain()
            if member["status"] != "running":
                self.say(f"member is {member['status']}; stopping")
                return EXIT_NOT_RUNNING
            task_id = member["current_task_id"] or self.claim_next()
            if task_id is None:
                self.shutdown.wait(self.poll_seconds)
                continue
            self.work(task_id)

    def claim_next(self) -> str | None:
        for row in self.h.storage.scan("task"):
            if row.doc["status"] == "pending":
                try:
                    self.h.tasks.claim(self.member_id, row.key, self.incarnation)
                except (TeamRefusal, VersionConflict):
                    continue  # another member was first, or the member may not claim (MEM-1)
                self.say(f"claimed {row.key}")
                return row.key
        return None

    # ---- one step of the held task (MEM-2, MEM-3, SHD-9) ------------------------------------------
    def work(self, task_id: str) -> None:
        task = self.h.task_row(task_id).doc
        checkpoint = task["checkpoint"] or {}
        state = {**FRESH_STATE, **(checkpoint.get("state") or {})}
        claimed_at = max(event["at"] for event in task["history"] if event["event"] == "claimed")
        points = SafePoints(
            self.h.storage,
            self.h.clock,
            self.member_id,
            self.incarnation,
            self.shutdown,
            task_id=task_id,
            unit_deadline=claimed_at + self.unit_seconds,
            on_check=self.tick,
        )
        token = task["claim_token"]

        def save(business: dict[str, Any]) -> None:
            self.h.tasks.checkpoint(self.member_id, task_id, token, business, self.incarnation)

        model = self.models.get(task_id) or self.models.get("*")
        if model is None:
            self.say(f"no script for {task_id}; leaving it")
            raise SystemExit(EXIT_NOT_RUNNING)
        runner = StepRunner(model, self.tools(task_id, points), points, save, state)
        try:
            done = runner.step()
        except (DrainRequested, ShutdownSignalled, MemberCannotContinue) as stop:
            self.say(f"left {task_id} at safe point {stop.where}: {type(stop).__name__}")
            return
        except UnitDeadlineExceeded as late:
            self.say(f"{task_id} past its unit deadline at {late.where}")
            self.settle_jobs("unit deadline")
            self.h.tasks.suspend(self.member_id, self.unit_seconds)
            send_owed(self.h)
            self.say(f"suspended {task_id}; task_suspended sent")
            return
        except UnknownTool as unknown:  # the model asked for a tool this member does not have
            self.settle_jobs("the task failed")
            self.h.tasks.finish(self.member_id, task_id, "failed", token, self.incarnation)
            self.say(f"failed {task_id}: {unknown}")
            return
        if done:
            self.h.tasks.finish(self.member_id, task_id, "completed", token, self.incarnation)
            self.say(f"completed {task_id}")

    def tools(self, task_id: str, points: SafePoints) -> dict[str, Callable[[Mapping[str, Any]], Any]]:
        def call_id(kind: str) -> str:
            return tool_call_id(self.h.task_row(task_id).doc, kind)

        return {
            "note": lambda arguments: {"noted": dict(arguments)},
            "job": lambda arguments: self.run_job(call_id("job"), arguments, points),
            "deploy": lambda arguments: self.protected_call(task_id, call_id("deploy"), arguments, points),
        }

    def run_job(self, job_id: str, arguments: Mapping[str, Any], points: SafePoints) -> dict[str, Any]:
        """MEM-4: a long command runs as a background job; the member waits at safe points."""
        stored = self.h.storage.read("job", job_id)
        if stored is None:
            cancellable = bool(arguments.get("cancellable", True))
            self.h.jobs.start(self.member_id, job_id, str(arguments["command"]), cancellable)
            self.say(f"job {job_id} started (cancellable={cancellable})")
        while True:
            job = self.h.jobs.require(job_id).doc
            if job["status"] not in ("running", "cancel_requested"):
                self.say(f"job {job_id} {job['status']} (exit {job['exit_code']})")
                return {"job_id": job_id, "status": job["status"], "exit_code": job["exit_code"]}
            points.check("waiting_for_job")
            time.sleep(self.poll_seconds)

    def protected_call(self, task_id: str, call: str, arguments: Mapping[str, Any], points: SafePoints) -> Any:
        """APR-1 … APR-5: request an approval, wait for the Lead at safe points, then consume it."""
        ctx = CallContext(self.member_id, self.incarnation, call, task_id)
        first = self.h.approvals.call(ctx, "deploy", dict(arguments), risk_summary=f"deploy {arguments}")
        if first["status"] == "done":
            return first["result"]
        pid = first["protocol_id"]
        self.say(f"asked the Lead to approve deploy {dict(arguments)} ({pid[:8]})")
        while True:
            stored = self.h.read("operation_approval", pid)
            status = stored.doc["status"] if stored is not None else "missing"
            if status == "approved":
                result = self.h.approvals.call(ctx, "deploy", dict(arguments), approval_id=pid)
                self.say(f"deploy approved and run once (idempotency key {pid[:8]})")
                return result["result"]
            if status != "requested":
                return {"refused": status}
            points.check("waiting_for_approval")
            time.sleep(self.poll_seconds)

    # ---- jobs settle (SHD-3, SHD-4, JOB-1, JOB-2) ----------------------------------------------------
    def settle_jobs(self, why: str) -> None:
        """Ask every own cancellable running job to stop, then wait (bounded) for every own job's
        exit. A non-cancellable job is never signalled; it is waited for (JOB-2, SHD-4)."""
        for job in self.h.jobs.busy_rows(self.member_id):
            cancellable = job.doc["cancellable"] or broken("signal_exit_cancels_any_job")
            if job.doc["status"] == "running" and cancellable:
                spec.ensure_transition("job", "running", "cancel_requested")
                asked = {**job.doc, "status": "cancel_requested"}
                self.h.storage.update("member.exit/jobs", "job", job.key, asked, job.version)
                self.h.jobs.runner.signal_cancel(job.key)  # after cancel_requested is persisted (JOB-1)
                self.say(f"cancel requested for job {job.key} ({why})")
        busy = self.h.jobs.busy(self.member_id)
        self.wait_for(lambda: not self.h.jobs.busy(self.member_id), f"jobs to settle ({why})")
        for job_id in busy:
            ended = self.h.jobs.require(job_id).doc
            self.say(f"job {job_id} exited: {ended['status']} (exit {ended['exit_code']})")

    def wait_for(self, done: Callable[[], bool], what: str) -> None:
        def ready() -> bool:
            self.beat()
            self.h.jobs.poll()
            return done()

        if not wait_until(ready, self.max_wait_seconds, self.poll_seconds):
            self.say(f"gave up waiting for {what}")
            raise SystemExit(EXIT_STUCK)

    # ---- a drain for the Lead's shutdown request (SHD-3, SHD-5) ----------------------------------------
    def drain(self) -> int:
        """Drain passes (SHD-3) until the task is released and the drain finished (SHD-5)."""
        self.say("draining")
        while True:
            self.beat()
            self.h.jobs.poll()
            result = self.h.shutdowns.drain_pass(self.member_id)
            if result["ready"]:
                break
            waiting = result["waiting"]
            self.say(
                f"drain pass not ready: waiting for jobs {', '.join(waiting)} (cancellable ones were asked to stop)"
            )
            self.wait_for(lambda: not self.h.jobs.busy(self.member_id), "jobs during the drain")
            for job_id in waiting:
                ended = self.h.jobs.require(job_id).doc
                self.say(f"job {job_id} exited: {ended['status']} (exit {ended['exit_code']})")
        send_owed(self.h)
        self.say(f"drained: released {result['released']}, stopped, shutdown_ack sent")
        if self.shutdown.is_set():
            self.notify(self.shutdown.signal_name, f"drained for the Lead; released {result['released']}")
        return EXIT_CLEAN

    # ---- SHD-8: the process's own shutdown on SIGINT/SIGTERM ----------------------------------------------
    def exit_on_signal(self) -> int:
        """Stop new work → finish or checkpoint the unit → save state → shutdown_notice → close."""
        signal_name = self.shutdown.signal_name
        self.say(f"{signal_name}: shutting down")
        if broken("signal_exits_at_once"):
            return EXIT_CLEAN
        member = self.h.member(self.member_id)
        if member["status"] == "draining" and member["shutdown_request_id"]:
            return self.drain()  # a drain for the Lead's request is already under way: finish it
        if member["status"] != "running":
            return EXIT_NOT_RUNNING
        # 1. stop new work: no claim from now on (MEM-1); the next safe point raises DrainRequested.
        self.h.set_member("member.exit/member", self.member_id, "draining", accepting_new_tasks=False)
        #    Its own requested approvals end as a drain ends them (XPR-2).
        if not broken("signal_exit_keeps_requests"):
            self.h.cancel_own_requests("member.exit/requests", self.member_id, "member_draining")
        # 2. finish or checkpoint the unit: the step stopped at a safe point with its tool results
        #    checkpointed; its jobs are cancelled (if cancellable) and waited for.
        self.settle_jobs(signal_name)
        # 3. save state: the task is released with its last checkpoint; the member is stopped.
        released = self.release_own_task(member["current_task_id"])
        self.h.set_member(
            "member.exit/stopped", self.member_id, "stopped", accepting_new_tasks=False, current_task_id=None
        )
        # 4. notify peers.
        self.notify(signal_name, f"released {released}" if released else "held no task")
        # 5. close resources: no job of ours runs any more (settled above).
        close = getattr(self.h.jobs.runner, "close", None)
        if close is not None:
            close()
        self.h.storage.close()
        return EXIT_CLEAN

    def release_own_task(self, task_id: str | None) -> str | None:
        if task_id is None:
            return None
        row = self.h.task_row(task_id)
        task = row.doc
        if task["status"] != "claimed" or task["owner_id"] != self.member_id:
            return None
        previous = task["checkpoint"] or {"state": None, "saved_at": self.h.clock.now()}
        released = released_task(task, previous, self.h.event(self.member_id, "released"))
        self.h.storage.update("member.exit/task", "task", task_id, released, row.version)
        self.say(f"released {task_id} with its checkpoint")
        return task_id

    def notify(self, reason: str, summary: str) -> None:
        """The ``shutdown_notice`` is owed in the outbox, then sent under its stable id."""
        pid = protocol_id(self.member_id, f"incarnation-{self.incarnation}", "shutdown_notice")
        body = {"reason_text": reason, "summary": summary}
        notice = self.h.envelope("shutdown_notice", pid, "notice", self.member_id, "team", body, NOTICE_TTL)
        self.h.outbox.owe("member.exit/outbox", notice)
        send_owed(self.h)
        self.say(f"shutdown_notice sent: {summary}")


def install_signal_handlers(event: ShutdownEvent) -> None:
    """SHD-8: SIGINT and SIGTERM only set the shutdown event; nothing throws into the loop."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _frame: event.set(signal.Signals(number).name))


Script = Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]]
"""The scripted model's turns: one list for every task, or a list per task id."""


def load_models(script: Script) -> Model | dict[str, Model]:
    if isinstance(script, Mapping):
        return {task_id: ScriptedModel.from_json(turns) for task_id, turns in script.items()}
    return ScriptedModel.from_json(script)


def start_member(
    db: str, member_id: str, incarnation: int, script: Script, workdir: str, **options: Any
) -> subprocess.Popen[bytes]:
    """Start a member process (its own process group) and return its ``Popen``."""
    script_path = os.path.join(workdir, f"{member_id}-{incarnation}.script.json")
    Path(script_path).write_text(json.dumps(script), encoding="utf-8")
    argv = [sys.executable, "-m", "reference._member_main", "--db", db, "--member", member_id]
    argv += ["--incarnation", str(incarnation), "--script", script_path, "--workdir", workdir]
    for name, value in options.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    env = {**os.environ, TEAM_ENV: team_of(db), MEMBER_ENV: f"{member_id}:{incarnation}", "PYTHONUNBUFFERED": "1"}
    return spawn(argv, env=env, log=os.path.join(workdir, f"{member_id}-{incarnation}.log"))


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m reference._member_main", description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--member", required=True)
    parser.add_argument("--incarnation", type=int, required=True)
    parser.add_argument("--script", required=True, help="JSON turns for the scripted model: a list, or a list per task")
    parser.add_argument("--workdir", required=True, help="job logs and the deploy tool's file")
    parser.add_argument("--unit-seconds", type=float, default=60.0)
    parser.add_argument("--heartbeat-seconds", type=float, default=0.05)
    parser.add_argument("--max-wait-seconds", type=float, default=60.0)
    return parser.parse_args(argv)


def _member(args: argparse.Namespace, event: ShutdownEvent) -> MemberProcess:
    runner = SubprocessJobRunner(log_dir=args.workdir)
    world = FileTool(os.path.join(args.workdir, "world.jsonl"))
    harness = Harness(SQLiteStorage(args.db), SystemClock(), [world.tool()], jobs=runner)
    model = load_models(json.loads(Path(args.script).read_text(encoding="utf-8")))
    member = MemberProcess(
        harness,
        args.member,
        args.incarnation,
        model,
        unit_seconds=args.unit_seconds,
        heartbeat_seconds=args.heartbeat_seconds,
        max_wait_seconds=args.max_wait_seconds,
    )
    member.shutdown = event
    return member


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    event = ShutdownEvent()
    install_signal_handlers(event)  # first: a signal from now on is read at a safe point (SHD-8)
    try:
        member = _member(args, event)
    except (ProtocolError, OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: member {args.member} not started: {error}", file=sys.stderr)
        return 2
    try:
        return member.run()
    except ProtocolError as error:  # a refusal or an unreadable store: stop, the records tell the rest
        member.say(f"stopping on {type(error).__name__}: {error}")
        return EXIT_NOT_RUNNING
