"""Replay an explorer trace (``teamproto-trace/1``) against the reference harness.

Each step of the trace is an action of the model and the model's snapshot after it. The replayer
performs the same action through the reference's public API — crashing it after the named write
step where the trace says so, and restarting it on ``restart`` — and compares the reference's
snapshot with the trace's after every step (projected on what the approval slice decides).
Supported: the approval slice (claims, approvals, ticks and the monitor, profile changes,
crashes and restarts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import reference as r
import spec
from conformance._abstract import project
from spec.model._ops import RISK_TEXT

SAME, CHANGED = {"target": "staging"}, {"target": "production"}


class Replayer:
    def __init__(self, trace: dict[str, Any], ttl_seconds: float, storage: r.Storage | None = None) -> None:
        self.trace = trace
        self.ttl = ttl_seconds
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
        h = self.harness
        if name == "task.claim":
            return lambda: h.claim(f"m{args['member']}", f"t{args['task']}")
        if name == "task.finish":
            return lambda: h.finish_task(
                f"m{args['member']}", h.read("member", f"m{args['member']}").doc["current_task_id"], args["outcome"]
            )
        if name == "tick":
            return lambda: self.clock.advance(1)
        if name == "monitor.pass":
            return h.approvals.expire_due
        if name == "profile.change":
            return lambda: h.set_profile(f"m{args['member']}", ["deploy"] if args["keep_tool"] else [])
        if name in ("approval.request", "approval.retry"):
            slot = args.get("slot", len(after["operation_approval"]) - 1)
            approval = self._approval(after, slot)
            member = approval["requester_id"]
            ctx = r.CallContext(member, 1, f"call-{slot}", approval["task_id"])
            return lambda: h.approvals.request(ctx, "deploy", SAME, RISK_TEXT, ttl_seconds=self.ttl)
        approval = self._approval(after, args["slot"])
        pid = approval["protocol_id"]
        if name == "approval.review":
            return lambda: h.approvals.review("lead", pid, args["decision"])
        if name == "approval.cancel":
            ctx = r.CallContext(approval["requester_id"], 1, f"call-{args['slot']}", approval["task_id"])
            return lambda: h.approvals.cancel(ctx, pid)
        if name == "approval.consume":
            member = f"m{args['member']}"
            ctx = r.CallContext(member, 1, f"call-{args['slot']}", approval["task_id"])
            arguments = CHANGED if args["changed_arguments"] else SAME
            return lambda: h.approvals.call(ctx, "deploy", arguments, pid)
        raise NotImplementedError(f"the replayer does not drive {name!r} yet")


def replay(trace: dict[str, Any], ttl_seconds: float) -> None:
    spec.validate_snapshot(trace["steps"][-1]["snapshot"])
    Replayer(trace, ttl_seconds).run()
