"""``teamproto demo``: a Lead and two members as real OS processes over one SQLite file.

The scenario, each step waited for (bounded) by the Lead, which is this process:

1. members m0 and m1 start as processes and claim t0 and t1 (MEM-1);
2. m0 asks approval for the protected tool ``deploy``; the Lead approves; m0 runs it once (APR-*);
3. while m0's background job runs, the Lead asks m0 to shut down: m0 drains (its cancellable job
   is cancelled and exits), checkpoints and releases t0, stops, and the ``shutdown_ack`` is sent
   (SHD-1 … SHD-5);
4. while m1's job runs, the Lead kills m1 with SIGKILL: its heartbeat lapses, one ``member_lost``
   is sent and t1 is flagged ``needs_inspection`` (SHD-10); the Lead kills what is left of m1's
   processes, inspects it, returns t1 to ``pending`` and restarts m1 as incarnation 2 (SHD-7,
   XPR-1), which claims t0 and t1 again and resumes them from their checkpoints (TSK-3);
5. the Lead sends SIGTERM to m1#2, which shuts itself down and sends a ``shutdown_notice`` (SHD-8).

The timeline is read back from the stores and the members' logs. The command exits 0 only if
every state invariant of :mod:`spec.invariants` holds on the final snapshot, reconciling that
state changes nothing (``reconcile_is_idempotent``), and every step above happened.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import spec.invariants
from spec.errors import ProtocolError

from ._clock import SystemClock
from ._harness import Harness
from ._lead import inspect_lost_member, watch_lapses
from ._member_process import EXIT_CLEAN, FileTool, send_owed, start_member
from ._processes import SubprocessJobRunner, wait_until
from ._storage import SQLiteStorage

LAPSE_SECONDS = 2.0
PHASE_TIMEOUT_SECONDS = 30.0


def scripts(gate: str) -> dict[str, list[dict[str, Any]]]:
    """The scripted model's turns, per task: whoever holds a task follows its script from the step
    its checkpoint reached. Each task's long step is a background job that runs until the Lead
    creates the file ``gate``, so the scenario does not depend on how fast the machine is."""
    gated = shlex.quote(gate)  # bounded: an orphaned job (the demo itself killed) ends within a minute
    wait = f"for i in $(seq 1200); do [ -e {gated} ] && exit 0; sleep 0.05; done; exit 1"
    job = {"tool": "job", "arguments": {"command": f"sh -c {shlex.quote(wait)}", "cancellable": True}}
    return {
        "t0": [
            {"calls": [{"tool": "note", "arguments": {"plan": "build, deploy, load test"}}]},
            {"calls": [{"tool": "deploy", "arguments": {"path": "srv/app"}}]},
            {"calls": [job]},
            {"done": True},
        ],
        "t1": [
            {"calls": [{"tool": "note", "arguments": {"plan": "run the migration"}}]},
            {"calls": [job]},
            {"done": True},
        ],
    }


class DemoFailed(Exception):
    """A step of the scenario did not happen in time."""


class DemoRefused(ProtocolError):
    """The demo was not started (bad ``--keep`` folder). Definite: nothing ran, nothing was written."""


class Demo:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.db = str(workdir / "team.db")
        self.runner = SubprocessJobRunner(log_dir=str(workdir))
        world = FileTool(str(workdir / "world.jsonl"))
        self.h = Harness(SQLiteStorage(self.db), SystemClock(), [world.tool()], jobs=self.runner)
        self.started = self.h.clock.now()
        self.gate = workdir / "gate"
        self.actions: list[dict[str, Any]] = []
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    # ---- the Lead's chores while it waits -----------------------------------------------------
    def act(self, event: str, subject: str = "") -> None:
        self.actions.append({"at": self.h.clock.now(), "actor": "lead", "event": event, "subject": subject})

    def serve(self) -> None:
        """Approve what waits for the Lead, watch heartbeats, send what is owed, run the monitor."""
        for row in self.h.storage.scan("operation_approval"):
            if row.doc["status"] == "requested" and row.doc["responder_id"] == self.h.lead_id:
                self.h.approvals.review(self.h.lead_id, row.key, "approved", "staging deploy is fine")
        watch_lapses(self.h, LAPSE_SECONDS)
        send_owed(self.h)
        self.h.monitor_pass()

    def wait(self, what: str, done: Callable[[], bool]) -> None:
        def ready() -> bool:
            self.serve()
            return done()

        if not wait_until(ready, PHASE_TIMEOUT_SECONDS, 0.02):
            raise DemoFailed(f"timed out after {PHASE_TIMEOUT_SECONDS:g} s waiting for {what}")

    def start(self, member_id: str, incarnation: int) -> None:
        options = {"heartbeat_seconds": 0.05, "unit_seconds": 60, "max_wait_seconds": 20}
        self.processes[f"{member_id}#{incarnation}"] = start_member(
            self.db, member_id, incarnation, scripts(str(self.gate)), str(self.workdir), **options
        )
        self.act(f"started process {member_id}#{incarnation}", member_id)

    # ---- record queries ----------------------------------------------------------------------
    def task(self, task_id: str) -> dict[str, Any]:
        return self.h.task_row(task_id).doc

    def job_running(self, member_id: str) -> bool:
        return any(job.doc["status"] == "running" for job in self.h.jobs.busy_rows(member_id))

    def messages(self, message_type: str) -> list[dict[str, Any]]:
        rows = self.h.storage.scan("message")
        return [row.doc["message"] for row in rows if row.doc["message"]["message_type"] == message_type]

    # ---- the scenario ------------------------------------------------------------------------
    def play(self) -> None:
        for member_id, task_id in (("m0", "t0"), ("m1", "t1")):
            self.h.add_member(member_id, ["deploy"])
            self.h.add_task(task_id)
        self.start("m0", 1)
        self.wait("m0 to claim t0", lambda: self.task("t0")["owner_id"] == "m0")
        self.start("m1", 1)
        self.wait("m1 to claim t1", lambda: self.task("t1")["owner_id"] == "m1")
        self.wait("m0's deploy to be approved and its job to run", lambda: self.job_running("m0"))
        shutdown = self.h.shutdowns.request(self.h.lead_id, "m0", "demo-scale-down", "scale down", ttl_seconds=20)
        self.act("asked m0 to shut down", "m0")
        self.wait("m0's drain to complete", lambda: self.h.shutdowns.require(shutdown).doc["status"] == "completed")
        self.wait("the shutdown_ack", lambda: bool(self.messages("shutdown_ack")))
        self.wait("m1's job to run", lambda: self.job_running("m1"))
        self.processes["m1#1"].send_signal(signal.SIGKILL)
        self.processes["m1#1"].wait(timeout=10)
        self.act("SIGKILL to m1#1", "m1")
        self.wait("m1's heartbeat to lapse", lambda: self.h.member("m1")["status"] == "unhealthy")
        flagged = inspect_lost_member(self.h, "m1")
        self.act(f"inspected m1#1: no process left, tasks to inspect: {', '.join(flagged)}", "m1")
        for task_id in flagged:
            self.h.tasks.inspect(task_id, "pending")
        self.gate.touch()
        self.act("opened the gate: the jobs of the tasks' long steps may finish now")
        incarnation = self.h.members.restart("m1")
        self.act(f"restarted m1 as incarnation {incarnation}", "m1")
        self.start("m1", incarnation)
        self.wait("t0 and t1 to be completed", lambda: all(self.task(t)["status"] == "completed" for t in ("t0", "t1")))
        self.processes[f"m1#{incarnation}"].send_signal(signal.SIGTERM)
        self.act(f"SIGTERM to m1#{incarnation}", "m1")
        code = self.processes[f"m1#{incarnation}"].wait(timeout=PHASE_TIMEOUT_SECONDS)
        if code != EXIT_CLEAN:
            raise DemoFailed(f"m1#{incarnation} exited with {code} after SIGTERM, not {EXIT_CLEAN}")
        self.serve()

    def stop_processes(self) -> None:
        """Kill every process the demo started that still runs (also after a failure)."""
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        for job in self.h.storage.scan("job"):
            if job.doc["status"] in ("running", "cancel_requested"):
                self.runner.kill(job.key)

    def repairs(self, snap: dict[str, Any]) -> list[str]:
        """Reconcile the final state once (PROTOCOL §5): a run that left every record consistent
        needs no repair, so reconciliation must change nothing (REC-1, INV-7)."""
        self.h.reconcile()
        return spec.invariants.reconcile_is_idempotent({**snap, "clock": 0}, {**self.h.snapshot(), "clock": 0})

    # ---- the report --------------------------------------------------------------------------
    def timeline(self, snap: dict[str, Any]) -> list[dict[str, Any]]:
        events = list(self.actions)
        for task in snap["task"]:
            events += [{**e, "subject": task["task_id"]} for e in task["history"] if e["event"] != "checkpointed"]
        for kind in ("operation_approval", "shutdown_request"):
            for record in snap[kind]:
                subject = f"{kind} {record['protocol_id'][:8]}"
                events += [{**e, "subject": subject} for e in record["events"]]
        events += self.member_lines()
        for row in snap["message"]:
            message = row["message"]
            summary = f"{message['message_type']} {message['sender']} → {message['target']}"
            events.append({"at": message["timestamp"], "actor": "bus", "event": summary, "subject": ""})
        return sorted(({**e, "at": round(e["at"] - self.started, 3)} for e in events), key=lambda e: e["at"])

    def member_lines(self) -> list[dict[str, Any]]:
        """What the member processes said (their logs), except what the task records already show."""
        lines = []
        for log in sorted(self.workdir.glob("m*-*.log")):
            for found in re.finditer(r"^\[(\S+) ([\d.]+)\] (.*)$", log.read_text(encoding="utf-8"), re.M):
                actor, at, text = found.groups()
                if not text.startswith(("claimed ", "completed ")):
                    lines.append({"at": float(at), "actor": actor, "event": text, "subject": ""})
        return lines


def expectations(snap: dict[str, Any]) -> list[str]:
    """What the scenario must have done, as failures (empty: all happened)."""
    types = [row["message"]["message_type"] for row in snap["message"]]
    shutdown = snap["shutdown_request"][0] if snap["shutdown_request"] else {}
    failures = []
    if shutdown.get("status") != "completed" or shutdown.get("released_task_id") != "t0":
        failures.append("the shutdown of m0 did not complete with t0 released")
    for kind, count in (("shutdown_ack", 1), ("member_lost", 1), ("shutdown_notice", 1), ("approval_decision", 1)):
        if types.count(kind) != count:
            failures.append(f"{types.count(kind)} {kind} message(s) on the bus, not {count}")
    history = next(t["history"] for t in snap["task"] if t["task_id"] == "t1")
    if "needs_inspection" not in [e["event"] for e in history]:
        failures.append("t1 was never flagged needs_inspection")
    if any(t["status"] != "completed" for t in snap["task"]):
        failures.append("not every task completed")
    # Each task's long step was cut short once (t0 by m0's drain, t1 by the SIGKILL) and claimed
    # again: the new holder's call is a new call, so it runs a job of its own, which succeeds
    # now that the gate is open (TSK-3, MEM-4). An id repeated across claims would hand it the
    # earlier claim's stopped job instead, and the task would complete on a job that never ran.
    for task_id in ("t0", "t1"):
        jobs = [j for j in snap["job"] if j["task_id"] == task_id]
        succeeded = [j["job_id"] for j in jobs if j["status"] == "succeeded"]
        if len(jobs) != 2 or len(succeeded) != 1:
            states = ", ".join(f"{j['job_id']} {j['status']}" for j in jobs) or "none"
            failures.append(
                f"{task_id} ran {len(jobs)} job(s) ({states}), not its stopped one and a new one that succeeded"
            )
    return failures


def run_demo(workdir: Path) -> dict[str, Any]:
    demo = Demo(workdir)
    error = ""
    try:
        demo.play()
    except (DemoFailed, ProtocolError) as failed:
        error = f"{type(failed).__name__}: {failed}"
    except KeyboardInterrupt:
        error = "interrupted: every process the demo started was killed"
    finally:
        demo.stop_processes()
        snap = demo.h.snapshot()
        violations = [f"{inv.name} ({inv.clause}): {text}" for inv, text in spec.invariants.check_state(snap)]
        violations += [f"reconcile_is_idempotent (REC-1): {text}" for text in demo.repairs(snap)]
        demo.h.storage.close()
    failures = ([error] if error else []) + expectations(snap)
    return {
        "ok": not violations and not failures,
        "events": demo.timeline(snap),
        "invariant_violations": violations,
        "scenario_failures": failures,
        "invariants_checked": [inv.name for inv in spec.invariants.STATE_INVARIANTS] + ["reconcile_is_idempotent"],
    }


__all__ = ["Demo", "run_demo", "scripts"]
