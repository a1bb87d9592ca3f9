"""Replay an explorer trace (``teamproto-trace/1``) against the reference harness.

Each step of the trace is an action of the model and the model's snapshot after it. The replayer
performs the same action through the reference's public API — crashing it after the named write
step where the trace says so, and restarting it on ``restart`` — and compares the reference's
snapshot with the trace's after every step (projected on what the approval slice decides).
Supported: every operation of the model (claims, task finish, suspend, resume and inspection,
jobs, members' lapse, inspection, restart and retirement, shutdowns, the outbox, approvals, plans
and their executions, ticks and the monitor, profile changes, crashes and restarts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import reference as r
import spec
from conformance._abstract import STATUS_SEEN, project_plans
from conformance._abstract import project as project_approval
from conformance._translate import plan_document
from reference._plans import retractions
from spec.model._ops import RISK_TEXT
from spec.model._snapshot import plan_id, shutdown_id

SAME, CHANGED = {"target": "staging"}, {"target": "production"}


def project(snap: dict[str, Any]) -> dict[str, Any]:
    """The refinement mapping of the model tests: the approval slice's projection (shared with the
    conformance suite, :func:`conformance._abstract.project`) and the team's (:func:`project_team`).
    The reference's snapshot must equal the model's under it (audit entries, timestamps and delivery
    status are the reference's own)."""
    return {**project_approval(snap), **project_team(snap), **project_plans(snap)}


def project_team(snap: dict[str, Any]) -> dict[str, Any]:
    """What members, tasks, jobs, shutdowns and the outbox decide (the refinement mapping of the
    team operations): statuses, holders, tokens, fencing, what a drain released and waited for.
    A task's checkpoint projects to whether it was ever released (the model abstracts its data)."""
    return {
        "members": sorted(
            (
                m["member_id"],
                m["status"],
                m["incarnation"],
                m["accepting_new_tasks"],
                m["shutdown_request_id"],
                m["current_task_id"],
            )
            for m in snap["member"]
        ),
        "tasks": sorted(
            (
                t["task_id"],
                t["owner_incarnation"],
                t["claim_token"],
                bool((t["checkpoint"] or {}).get("released")),
            )
            for t in snap["task"]
        ),
        "jobs": sorted((j["job_id"], j["status"], j["owner_id"], j["task_id"], j["cancellable"]) for j in snap["job"]),
        "shutdowns": sorted(
            (
                sd["protocol_id"],
                sd["status"],
                sd["target_id"],
                sd["target_incarnation"],
                sd["deadline"],
                sd["released_task_id"],
                tuple(sd["waited_job_ids"]),
                sd["reason"],
            )
            for sd in snap["shutdown_request"]
        ),
        "all_messages": sorted(
            (m["message"]["message_id"], m["status"] if m["message"]["message_type"] in STATUS_SEEN else "")
            for m in snap["message"]
        ),
        "outbox": sorted((o["message_id"], o["status"]) for o in snap["outbox_entry"]),
    }


class Replayer:
    def __init__(
        self,
        trace: dict[str, Any],
        ttl_seconds: float,
        storage: r.Storage | None = None,
        unit_seconds: float = 9,
        plan_steps: int = 1,
    ) -> None:
        self.trace = trace
        self.plan_steps = plan_steps
        self.ttl = ttl_seconds
        self.unit_seconds = unit_seconds
        self.storage = storage or r.MemoryStorage()
        self.clock = r.ManualClock(0.0)
        self.world = r.RecordingTool()
        self.harness = self._harness()
        first = trace["steps"][0]["snapshot"]
        for member in first["member"]:
            self.harness.add_member(member["member_id"], ["deploy"])
        for task in first["task"]:
            self.harness.add_task(task["task_id"])

    def _harness(self) -> r.Harness:
        return r.Harness(self.storage, self.clock, [self.world.tool(normalize=lambda arguments: arguments)])

    def run(self) -> None:
        """Replay every step; raise AssertionError naming the first step where they differ."""
        for number, step in enumerate(self.trace["steps"][1:], start=1):
            self.apply(step["action"], step["snapshot"])
            expected, actual = project(step["snapshot"]), project(self.harness.snapshot())
            assert actual == expected, f"step {number} {step['action']}: reference {actual} != model {expected}"

    def _tools(self, member: str, after: dict[str, Any]) -> list[str]:
        """The tools the model's profile holds after its change (XPR-4: each change shows in them)."""
        return next(p["tools"] for p in after["capability_profile"] if p["member_id"] == member)

    def _approval(self, snap: dict[str, Any], slot: int) -> dict[str, Any]:
        return next(a for a in snap["operation_approval"] if a["tool_call_id"] == f"call-{slot}")

    def apply(self, action: dict[str, Any], after: dict[str, Any]) -> None:
        name, args, crash = action["action"], action["args"], action["crash_after"]
        if name == "restart":
            self.harness = self._harness()
            self.harness.reconcile()
            return
        operation = self._operation(name, args, after)
        if crash:
            self.storage.faults.crash_after.add(crash)
        try:
            operation()
        except r.Crash:
            pass
        finally:
            self.storage.faults.crash_after.clear()

    def _operation(self, name: str, args: dict[str, Any], after: dict[str, Any]) -> Callable[[], Any]:
        if name.startswith("approval."):
            return self._approval_operation(name, args, after)
        if name.startswith("plan."):
            return self._plan_operation(name, args)
        h = self.harness
        member = f"m{args['member']}" if "member" in args else ""
        simple: dict[str, Callable[[], Any]] = {
            "task.claim": lambda: h.claim(member, f"t{args['task']}"),
            "task.finish": lambda: self._finish(member, args["outcome"]),
            "task.suspend": lambda: h.tasks.suspend(member, self.unit_seconds),
            "job.start": lambda: h.jobs.start(member, f"job-{member}", "make deploy", args["cancellable"]),
            "job.exit": lambda: h.jobs.exited(f"job-{member}", EXIT_CODES[args["outcome"]]),
            "member.lapse": lambda: h.members.lapse(member),
            "member.inspect": lambda: h.members.inspect(member),
            "member.restart": lambda: h.members.restart(member),
            "member.retire": lambda: h.members.retire(member),
            "profile.change": lambda: h.set_profile(member, self._tools(member, after)),
            "shutdown.drain_jobs": lambda: h.shutdowns.drain_jobs(member),
            "shutdown.release_task": lambda: h.shutdowns.release_task(member),
            "shutdown.finish": lambda: h.shutdowns.finish(member),
            "tick": lambda: self.clock.advance(1),
            "monitor.pass": h.monitor_pass,
        }
        if name in simple:
            return simple[name]
        if name in ("task.resume", "task.inspect"):
            task = f"t{args['task']}"
            return lambda: h.tasks.resume(task) if name == "task.resume" else h.tasks.inspect(task, args["outcome"])
        if name.startswith("shutdown."):
            return self._shutdown_operation(name, args)
        if name == "outbox.send":
            return lambda: h.outbox.send(self._outbox_id(args["type"], args["ref"], args["phase"]))
        raise NotImplementedError(f"the replayer does not drive {name!r} yet")

    def _outbox_id(self, kind: str, ref: int, phase: int) -> str:
        if kind in PLAN_NOTICES:
            return spec.ids.message_id(self._plan_pid(ref), PLAN_NOTICES[kind])
        return outbox_message_id(kind, ref, phase)

    def _plan_pid(self, slot: int) -> str:
        """The id of the plan in model slot ``slot``: the one of whichever member drafted it."""
        for member in self.harness.storage.scan("member"):
            pid = spec.ids.protocol_id(member.key, f"plan-{slot}", "plan_approval")
            if self.harness.storage.read("plan_approval", pid) is not None:
                return pid
        raise AssertionError(f"no plan in slot {slot}")

    def _plan_operation(self, name: str, args: dict[str, Any]) -> Callable[[], Any]:
        h = self.harness
        if name == "plan.draft":
            member = f"m{args['member']}"
            slot = len(h.storage.scan("plan_approval"))
            body = plan_document(slot, args["member"], self.plan_steps, self.ttl)
            return lambda: h.plans.draft(self._member_ctx(member, f"plan-{slot}"), f"plan-{slot}", body)
        pid = self._plan_pid(args["slot"])
        plan = h.plans.require(pid).doc
        ctx = self._member_ctx(plan["requester_id"], "plan")
        if name == "plan.decide":
            return lambda: h.plans.decide("lead", pid, args["decision"])
        if name == "plan.retract":
            return lambda: h.plans.retract("lead", pid, args["to"])
        if name == "plan.deliver_decision":
            mid = spec.ids.message_id(pid, f"decision-{retractions(plan)}")
            return lambda: h.plans.deliver_decision(plan["requester_id"], mid)
        if name == "plan.step":
            run = h.storage.read("plan_execution", pid)
            done = len(run.doc["executed_step_ids"]) if run else 0
            step = plan["plan"]["steps"][min(done, len(plan["plan"]["steps"]) - 1)]
            return lambda: h.plans.step(ctx, pid, step)
        if name == "plan.rollback":
            return lambda: h.plans.rollback("lead", pid)
        method = {"plan.submit": h.plans.submit, "plan.withdraw": h.plans.withdraw, "plan.start": h.plans.start}
        method |= {"plan.complete": h.plans.complete, "plan.fail": h.plans.fail}
        if name in method:
            call = method[name]
            return lambda: call(ctx, pid)
        raise NotImplementedError(f"the replayer does not drive {name!r} yet")

    def _member_ctx(self, member: str, call: str) -> r.CallContext:
        doc = self.harness.member(member)
        return r.CallContext(member, doc["incarnation"], call, doc["current_task_id"])

    def _finish(self, member: str, outcome: str) -> None:
        task = self.harness.member(member)["current_task_id"]
        token = self.harness.read("task", task).doc["claim_token"] if task else ""
        self.harness.finish_task(member, task or "", outcome, token)

    def _shutdown_operation(self, name: str, args: dict[str, Any]) -> Callable[[], Any]:
        h = self.harness
        if name == "shutdown.request":
            slot = len(h.storage.scan("shutdown_request"))
            return lambda: h.shutdowns.request("lead", f"m{args['member']}", f"shutdown-{slot}", ttl_seconds=self.ttl)
        pid = shutdown_id(args["slot"])
        if name == "shutdown.cancel":
            return lambda: h.shutdowns.cancel("lead", pid)
        if name == "shutdown.force_terminate":
            return lambda: h.shutdowns.force_terminate(pid)
        if name == "shutdown.begin_drain":
            target = h.shutdowns.require(pid).doc["target_id"]
            return lambda: h.shutdowns.begin_drain(target, spec.ids.message_id(pid, "request"))
        raise NotImplementedError(f"the replayer does not drive {name!r} yet")

    def _approval_operation(self, name: str, args: dict[str, Any], after: dict[str, Any]) -> Callable[[], Any]:
        h = self.harness
        if name in ("approval.request", "approval.retry"):
            slot = args.get("slot", len(after["operation_approval"]) - 1)
            approval = self._approval(after, slot)
            ctx = self._ctx(approval["requester_id"], slot, approval["task_id"])
            return lambda: h.approvals.request(ctx, "deploy", SAME, RISK_TEXT, ttl_seconds=self.ttl)
        approval = self._approval(after, args["slot"])
        pid = approval["protocol_id"]
        if name == "approval.review":
            return lambda: h.approvals.review("lead", pid, args["decision"])
        if name == "approval.cancel":
            ctx = self._ctx(approval["requester_id"], args["slot"], approval["task_id"])
            return lambda: h.approvals.cancel(ctx, pid)
        if name == "approval.consume":
            ctx = self._ctx(f"m{args['member']}", args["slot"], approval["task_id"])
            arguments = CHANGED if args["changed_arguments"] else SAME
            return lambda: h.approvals.call(ctx, "deploy", arguments, pid)
        raise NotImplementedError(f"the replayer does not drive {name!r} yet")

    def _ctx(self, member: str, slot: int, task: str) -> r.CallContext:
        return r.CallContext(member, self.harness.member(member)["incarnation"], f"call-{slot}", task)


EXIT_CODES = {"succeeded": 0, "failed": 1, "cancelled": r.CANCEL_EXIT}
PLAN_NOTICES = {"plan_completion": "completion", "plan_abandoned": "abandoned"}


def plan_message_id(kind: str, slot: int, requester: int) -> str:
    """The stable id of a plan notice (``plan_completion``/``plan_abandoned``) of model slot ``slot``."""
    return spec.ids.message_id(plan_id(slot, requester), PLAN_NOTICES[kind])


def outbox_message_id(kind: str, ref: int, phase: int) -> str:
    """The stable id of the message the model's outbox entry (kind, ref, phase) stands for."""
    if kind == "shutdown_ack":
        return spec.ids.message_id(shutdown_id(ref), "ack")
    if kind == "member_lost":
        return spec.ids.message_id(spec.ids.protocol_id(f"m{ref}", f"incarnation-{phase}", "member_lost"), "lost")
    if kind == "task_suspended":
        return spec.ids.message_id(spec.ids.protocol_id(f"t{ref}", f"claim-{phase}", "task_suspended"), "suspended")
    raise NotImplementedError(f"the replayer does not send {kind!r} yet")


def replay(trace: dict[str, Any], ttl_seconds: float, unit_seconds: float = 9, plan_steps: int = 1) -> None:
    spec.validate_snapshot(trace["steps"][-1]["snapshot"])
    Replayer(trace, ttl_seconds, unit_seconds=unit_seconds, plan_steps=plan_steps).run()
