"""The reference harness as a conformance driver: ``python -m reference.driver``.

It speaks the driver protocol of ``conformance/README.md`` — one JSON request a line on stdin,
one JSON reply a line on stdout — over :class:`SQLiteStorage` in the data directory named by
``init``. ``init`` on a directory that already holds a team is a restart: the harness is rebuilt
over the same storage and reconciles (PROTOCOL §5). ``arm_crash`` names a write step of the model
(``spec.model.WRITE_STEPS``) or of the reference; the next operation that reaches it exits the
process right after it (exit status 70, no reply), through the reference's :class:`FaultPlan`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import spec
from conformance._protocol import DriverError, Message, parse_request
from conformance._schema_src import ERROR_CODES, MAX_ARGUMENTS_BYTES, MAX_LINE_BYTES
from spec.ids import canonical_json, message_id
from spec.model import WRITE_STEPS

from ._agent_tools import AGENT_TOOLS, INJECTED
from ._approval import APPROVAL_STEPS
from ._clock import ManualClock
from ._errors import Crash, UnknownApproval
from ._harness import CallContext, Harness
from ._jobs import CANCEL_EXIT
from ._mutants import broken
from ._shutdown import ShutdownProtocol
from ._storage import SQLiteStorage
from ._team_errors import NotLead
from ._tools import Arguments, Tool

CRASH_EXIT = 70
_OVERRIDES = {
    "UnknownApproval": "unknown_id",
    "UnknownMember": "unknown_id",
    "UnknownTask": "unknown_id",
    "UnknownRecord": "unknown_id",
    "StaleMember": "stale_incarnation",
    "SchemaError": "schema_invalid",
    "BadArguments": "schema_invalid",
    "UnknownProfileTool": "unknown_tool",
    "ApprovalRefused": "refused",
    "UnknownPlan": "unknown_id",
    "PlanMemberNotRunning": "member_not_running",
}
_JOB_EXITS = {"succeeded": 0, "failed": 1, "cancelled": CANCEL_EXIT}


def error_code(error: BaseException) -> str:
    """The protocol's error code of a reference error: its class name in snake case."""
    return code_of(type(error))


def code_of(cls: type) -> str:
    """The protocol's error code of a reference error class (the driver's replies, the catalogue)."""
    name = cls.__name__
    code = _OVERRIDES.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return code if code in ERROR_CODES else "refused"


class FileWorld:
    """The external system of the tests, on disk: every call is kept by idempotency key, so a
    crashed driver's successor can look an outcome up (APR-8)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, key: str, arguments: Arguments) -> dict[str, Any]:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(canonical_json({"key": key, "arguments": arguments}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        return {"ok": True}

    def lookup(self, key: str) -> dict[str, Any] | None:
        return {"ok": True} if key in self.calls() else None

    def calls(self) -> list[str]:
        """The idempotency key of every call made, in order (the suite's ``world.calls`` read)."""
        if not self.path.exists():
            return []
        return [json.loads(line)["key"] for line in self.path.read_text(encoding="utf-8").splitlines() if line]


class Driver:
    def __init__(self) -> None:
        self.harness: Harness | None = None
        self.storage: SQLiteStorage | None = None
        self.init_request: Message | None = None
        self.world: FileWorld | None = None

    # ---- set-up ------------------------------------------------------------------------------
    def init(self, req: Message) -> dict[str, Any]:
        folder = Path(req["data_dir"])
        folder.mkdir(parents=True, exist_ok=True)
        if self.storage is not None:
            self.storage.close()
        self.storage = SQLiteStorage(folder / "team.db")
        self.clock = ManualClock(float(req["clock"]))
        world = self.world = FileWorld(folder / "world.jsonl")
        self.tools = [Tool(t["name"], world.run, lookup=world.lookup, protected=t["protected"]) for t in req["tools"]]
        self.init_request = req
        fresh = not self.storage.scan("member")
        self.harness = Harness(self.storage, self.clock, self.tools, lead_id=req["team"]["lead"])
        if fresh:
            for member in req["team"]["members"]:
                self.harness.add_member(member["member_id"], member["tools"])
            for task in req["team"]["tasks"]:
                self.harness.add_task(task)
        else:
            self.harness.reconcile()
        return {"restarted": not fresh}

    def restart(self, req: Message) -> dict[str, Any]:
        assert self.init_request is not None
        return self.init({**self.init_request, "clock": self.clock.now()})

    @property
    def h(self) -> Harness:
        if self.harness is None:
            raise DriverError("schema_invalid", "send init first")
        return self.harness

    def capabilities(self, req: Message) -> dict[str, Any]:
        steps = sorted(set(WRITE_STEPS) | set(APPROVAL_STEPS))
        limits = {"max_line_bytes": MAX_LINE_BYTES, "max_arguments_bytes": MAX_ARGUMENTS_BYTES}
        return {
            "operations": list(OPERATIONS),
            "reads": list(READS),
            "write_steps": steps,
            "limits": limits,
            "name": "reference",
        }

    def protocol_status(self, req: Message) -> dict[str, Any]:
        """AUD-4: the agent-facing ``team_protocol_status``, as the caller ``actor`` asks it."""
        actor = req["actor"]
        ctx = CallContext(actor["member_id"], actor.get("incarnation", 1), "protocol-status")
        args = {"protocol_id": req["protocol_id"]} if "protocol_id" in req else {}
        return AGENT_TOOLS["team_protocol_status"](self.h, ctx, args)

    def world_calls(self, req: Message) -> dict[str, Any]:
        """The external system's calls (the suite checks them against the stores: INV-1, APR-8)."""
        if self.world is None:
            raise DriverError("schema_invalid", "send init first")
        return {"calls": self.world.calls()}

    def snapshot(self, req: Message) -> dict[str, Any]:
        return {"snapshot": self.h.snapshot()}

    def arm_crash(self, req: Message) -> dict[str, Any]:
        if req["step"] not in WRITE_STEPS and req["step"] not in APPROVAL_STEPS:
            raise DriverError("unknown_id", f"no write step {req['step']!r}; see capabilities.write_steps")
        assert self.storage is not None
        self.storage.faults.crash_after.add(req["step"])
        return {}

    def tick(self, req: Message) -> dict[str, Any]:
        self.clock.advance(req["seconds"])
        return {"clock": self.clock.now()}

    # ---- operations --------------------------------------------------------------------------
    def _ctx(self, req: Message) -> CallContext:
        actor = req["actor"]
        return CallContext(actor["member_id"], actor.get("incarnation", 1), req["tool_call_id"], req["task_id"])

    @staticmethod
    def _arguments(req: Message) -> Arguments:
        arguments: Arguments = req["arguments"]
        forged = [field for field in INJECTED if field in arguments]
        if forged:
            raise DriverError("forged_identity", f"argument {forged[0]!r} is injected by the harness (APR-3)")
        if len(canonical_json(arguments).encode("utf-8")) > MAX_ARGUMENTS_BYTES:
            raise DriverError("payload_too_large", f"tool arguments are at most {MAX_ARGUMENTS_BYTES} bytes")
        return arguments

    def approval_request(self, req: Message) -> dict[str, Any]:
        arguments = self._arguments(req)
        ttl = req["ttl_seconds"]
        pid = self.h.approvals.request(self._ctx(req), req["tool"], arguments, req["risk_summary"], ttl)
        return {"protocol_id": pid}

    approval_retry = approval_request  # the same call again: the same id, nothing new (MSG-4, STO-2)

    def approval_review(self, req: Message) -> dict[str, Any]:
        doc = self.h.approvals.review(
            req["actor"]["member_id"], req["protocol_id"], req["decision"], req.get("summary", "")
        )
        return {"status": doc["status"]}

    def approval_cancel(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.approvals.cancel(self._ctx(req), req["protocol_id"])["status"]}

    def approval_consume(self, req: Message) -> dict[str, Any]:
        arguments = self._arguments(req)
        done = self.h.approvals.call(self._ctx(req), req["tool"], arguments, approval_id=req["protocol_id"])
        return {"idempotency_key": done["idempotency_key"], "result": done["result"]}

    def monitor_pass(self, req: Message) -> dict[str, Any]:
        self.h.monitor_pass()  # approvals, shutdowns and their undelivered requests (SHD-6, INV-12)
        return {}

    def task_claim(self, req: Message) -> dict[str, Any]:
        self._known("member", req["member_id"])
        self._known("task", req["task_id"])
        return {"claim_token": self.h.claim(req["member_id"], req["task_id"])}

    def task_finish(self, req: Message) -> dict[str, Any]:
        task = self._known("task", req["task_id"])
        if task["owner_id"] != req["member_id"] or task["status"] != "claimed":
            raise DriverError("not_task_owner", f"{req['member_id']} does not hold {req['task_id']} (TSK-1)")
        token = req.get("claim_token", task["claim_token"])  # TSK-1: the holder's token, unless the caller names one
        self.h.finish_task(req["member_id"], req["task_id"], req["outcome"], token)
        return {}

    def profile_change(self, req: Message) -> dict[str, Any]:
        self._known("member", req["member_id"])
        return {"version": self.h.set_profile(req["member_id"], req["tools"])}

    def member_lapse(self, req: Message) -> dict[str, Any]:
        self._known("member", req["member_id"])
        self.h.members.lapse(req["member_id"])
        return {}

    def member_inspect(self, req: Message) -> dict[str, Any]:
        self._known("member", req["member_id"])
        self.h.members.inspect(req["member_id"])
        return {}

    def member_restart(self, req: Message) -> dict[str, Any]:
        self._known("member", req["member_id"])
        return {"incarnation": self.h.restart_member(req["member_id"])}

    def message_deliver(self, req: Message) -> dict[str, Any]:
        self._known("message", req["message_id"])
        return {"recorded_result": self.h.deliver(req["message_id"], req["correlation_id"])}

    def member_retire(self, req: Message) -> dict[str, Any]:
        self.h.members.retire(req["member_id"])
        return {}

    # ---- tasks and jobs (SHD-9, SHD-7, MEM-4, JOB-1) ---------------------------------------------
    def task_suspend(self, req: Message) -> dict[str, Any]:
        return {"task_id": self.h.tasks.suspend(req["member_id"], req["unit_seconds"])}

    def task_resume(self, req: Message) -> dict[str, Any]:
        self._known("task", req["task_id"])
        self.h.tasks.resume(req["task_id"])
        return {}

    def task_inspect(self, req: Message) -> dict[str, Any]:
        self._known("task", req["task_id"])
        self.h.tasks.inspect(req["task_id"], req["outcome"])
        return {}

    def job_start(self, req: Message) -> dict[str, Any]:
        self.h.jobs.start(req["member_id"], req["job_id"], req["command"], req["cancellable"])
        return {}

    def job_exit(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.jobs.exited(req["job_id"], _JOB_EXITS[req["outcome"]])["status"]}

    # ---- shutdown (SHD-1 … SHD-7) and the outbox (REC-3) ------------------------------------------
    def shutdown_request(self, req: Message) -> dict[str, Any]:
        lead, target = req["actor"]["member_id"], req["member_id"]
        self._known("member", target)
        pid = self.h.shutdowns.request(lead, target, req["request_key"], req["reason_text"], req["ttl_seconds"])
        return {"protocol_id": pid}

    def shutdown_cancel(self, req: Message) -> dict[str, Any]:
        self.h.shutdowns.cancel(req["actor"]["member_id"], req["protocol_id"])
        return {"status": "cancelled"}

    def shutdown_begin_drain(self, req: Message) -> dict[str, Any]:
        """The target handles the delivered request (its message, by the request's stable id)."""
        pid = self.h.shutdowns.require(req["protocol_id"]).key
        message = ShutdownProtocol.request_message_id(pid)
        return {"recorded_result": self.h.shutdowns.begin_drain(req["member_id"], message)}

    def shutdown_drain_jobs(self, req: Message) -> dict[str, Any]:
        return {"asked": self.h.shutdowns.drain_jobs(req["member_id"])}

    def shutdown_release_task(self, req: Message) -> dict[str, Any]:
        return {"released_task_id": self.h.shutdowns.release_task(req["member_id"])}

    def shutdown_finish(self, req: Message) -> dict[str, Any]:
        self.h.shutdowns.finish(req["member_id"])
        return {}

    def shutdown_force_terminate(self, req: Message) -> dict[str, Any]:
        actor = req["actor"]["member_id"]
        if actor != self.h.lead_id:
            raise NotLead(actor, self.h.lead_id, f"force-terminate for {req['protocol_id']}")
        self.h.shutdowns.force_terminate(req["protocol_id"])
        return {}

    def outbox_send(self, req: Message) -> dict[str, Any]:
        self.h.outbox.send(req["message_id"])
        return {}

    # ---- plans (PLN-1 … PLN-11) -----------------------------------------------------------------
    def _plan_ctx(self, req: Message) -> CallContext:
        """The requester's call: its actor and the task it names, else the one it holds."""
        actor = req["actor"]
        member = self._known("member", actor["member_id"])
        task = req.get("task_id", member["current_task_id"])
        return CallContext(actor["member_id"], actor.get("incarnation", 1), "plan", task)

    def plan_draft(self, req: Message) -> dict[str, Any]:
        return {"plan_id": self.h.plans.draft(self._plan_ctx(req), req["plan_key"], req["plan"])}

    def plan_submit(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.submit(self._plan_ctx(req), req["plan_id"])["status"]}

    def plan_decide(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.decide(req["actor"]["member_id"], req["plan_id"], req["decision"])["status"]}

    def plan_retract(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.retract(req["actor"]["member_id"], req["plan_id"], req["to"])["status"]}

    def plan_deliver_decision(self, req: Message) -> dict[str, Any]:
        """The requester handles the plan's delivered decision number ``sequence`` (its stable id)."""
        pid = self.h.plans.require(req["plan_id"]).key
        mid = message_id(pid, f"decision-{req['sequence']}")
        return {"recorded_result": self.h.plans.deliver_decision(req["member_id"], mid)}

    def plan_withdraw(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.withdraw(self._plan_ctx(req), req["plan_id"])["status"]}

    def plan_start(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.start(self._plan_ctx(req), req["plan_id"])["status"]}

    def plan_step(self, req: Message) -> dict[str, Any]:
        return self.h.plans.step(self._plan_ctx(req), req["plan_id"], req["step"])

    def plan_complete(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.complete(self._plan_ctx(req), req["plan_id"])["status"]}

    def plan_fail(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.fail(self._plan_ctx(req), req["plan_id"])["status"]}

    def plan_rollback(self, req: Message) -> dict[str, Any]:
        return {"status": self.h.plans.rollback(req["actor"]["member_id"], req["plan_id"])["status"]}

    def _known(self, table: str, key: str) -> dict[str, Any]:
        stored = self.h.read(table, key)
        if stored is None:
            raise DriverError("unknown_id", f"no {table} {key!r}")
        return stored.doc

    # ---- dispatch ----------------------------------------------------------------------------
    def handle(self, req: Message) -> Message:
        name = req["type"]
        method = OPERATIONS.get(name) or CONTROL.get(name) or READS.get(name)
        if method is None:
            raise DriverError("unimplemented", f"this driver does not implement {name!r}; see capabilities")
        try:
            result = method(self, req)
        finally:
            if self.storage is not None and name not in ("arm_crash", "capabilities", "snapshot"):
                self.storage.faults.crash_after.clear()
        return {"in_reply_to": req["msg_id"], "type": "ok", "result": result}


Handler = Callable[[Driver, Message], dict[str, Any]]

CONTROL: dict[str, Handler] = {
    "init": Driver.init,
    "capabilities": Driver.capabilities,
    "snapshot": Driver.snapshot,
    "arm_crash": Driver.arm_crash,
}
"""The driver protocol's own requests (not operations of the model)."""

READS: dict[str, Handler] = {"protocol.status": Driver.protocol_status, "world.calls": Driver.world_calls}
"""Reads an agent may make, no operation of the model (what ``capabilities`` lists as ``reads``)."""

OPERATIONS: dict[str, Handler] = {
    "task.claim": Driver.task_claim,
    "task.finish": Driver.task_finish,
    "task.suspend": Driver.task_suspend,
    "task.resume": Driver.task_resume,
    "task.inspect": Driver.task_inspect,
    "profile.change": Driver.profile_change,
    "job.start": Driver.job_start,
    "job.exit": Driver.job_exit,
    "member.lapse": Driver.member_lapse,
    "member.inspect": Driver.member_inspect,
    "member.restart": Driver.member_restart,
    "member.retire": Driver.member_retire,
    "shutdown.request": Driver.shutdown_request,
    "shutdown.cancel": Driver.shutdown_cancel,
    "shutdown.begin_drain": Driver.shutdown_begin_drain,
    "shutdown.drain_jobs": Driver.shutdown_drain_jobs,
    "shutdown.release_task": Driver.shutdown_release_task,
    "shutdown.finish": Driver.shutdown_finish,
    "shutdown.force_terminate": Driver.shutdown_force_terminate,
    "approval.request": Driver.approval_request,
    "approval.retry": Driver.approval_retry,
    "approval.review": Driver.approval_review,
    "approval.cancel": Driver.approval_cancel,
    "approval.consume": Driver.approval_consume,
    "plan.draft": Driver.plan_draft,
    "plan.submit": Driver.plan_submit,
    "plan.decide": Driver.plan_decide,
    "plan.retract": Driver.plan_retract,
    "plan.deliver_decision": Driver.plan_deliver_decision,
    "plan.withdraw": Driver.plan_withdraw,
    "plan.start": Driver.plan_start,
    "plan.step": Driver.plan_step,
    "plan.complete": Driver.plan_complete,
    "plan.fail": Driver.plan_fail,
    "plan.rollback": Driver.plan_rollback,
    "outbox.send": Driver.outbox_send,
    "message.deliver": Driver.message_deliver,
    "monitor.pass": Driver.monitor_pass,
    "tick": Driver.tick,
    "restart": Driver.restart,
}
"""Operation name (the model's, ``spec/model/_ops.py``) → its handler: what ``capabilities``
lists. A new operation of the reference is one method and one entry here;
``message.deliver`` is the harness operation the suite's bad-input cases use."""


def _msg_id(line: str) -> int | None:
    found = re.search(r'"msg_id"\s*:\s*(\d+)', line[:4096])
    return int(found.group(1)) if found else None


def serve_line(driver: Driver, line: str) -> Message:
    try:
        return driver.handle(parse_request(line))
    except DriverError as error:
        return error.reply(_msg_id(line))
    except spec.ProtocolError as error:
        definite = True if broken("driver_replies_every_error_definite") else error.definite
        return DriverError(error_code(error), str(error), definite).reply(_msg_id(line))
    except UnknownApproval as error:  # pragma: no cover - a ProtocolError; kept for clarity
        return DriverError("unknown_id", str(error)).reply(_msg_id(line))


def main() -> int:
    driver = Driver()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = serve_line(driver, line)
        except Crash:
            sys.stdout.flush()
            os._exit(CRASH_EXIT)  # the process dies right after the armed write step
        sys.stdout.write(json.dumps(reply, sort_keys=True) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
