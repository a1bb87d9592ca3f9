"""Hypothesis drives the reference's approval protocol against the abstract model, crashing it
between write steps (DESIGN "model tests"; Hypothesis ``DatabaseComparison`` pattern).

After every rule the reference's snapshot must abstract to the model's state (refinement) and
satisfy every state invariant; every step must satisfy the step invariants. A rule arms a crash
after a named write step of the next operation: the reference dies there, a new harness is built
over the same storage and reconciles; the model takes the same crash and restart.

Clause: APR-1 … APR-9, MSG-4 … MSG-6, REC-1 … REC-3, INV-1, INV-3, INV-6, INV-7, INV-9, INV-10.
Backends: memory by default; ``TEAMPROTO_BACKEND=sqlite`` (or the ``Sqlite`` case below) for SQLite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import reference as r
import spec
from model_tests.replay import CHANGED, SAME, project
from spec import invariants
from spec.model import Model, parse_config, snapshot
from spec.model._model import Action
from spec.model._ops import RISK_TEXT
from spec.model._reconcile import reconcile

CONFIG = parse_config(
    "stateful",
    {
        "description": "the model side of the Hypothesis approval tests",
        "members": 2,
        "tasks": 2,
        "approvals": 3,
        "plans": 0,
        "shutdowns": 0,
        "max_ticks": 10_000,
        "ttl_ticks": 1,
        "unit_ticks": 10**9,
        "plan_steps": 1,
        "crashes": True,
        "jobs": False,
        "lapses": False,
        "max_incarnation": 1,
        "profile_changes": 10_000,
        "max_retractions": 0,
        "symmetry": False,
        "liveness": False,
        "require_coverage": False,
    },
)
CRASHED: set[str] = set()
"""Every write step a crash was injected at, over the whole session (crash-point coverage)."""


def note(text: str) -> None:
    """A Hypothesis event for the statistics; scripted programs run outside Hypothesis."""
    with contextlib.suppress(InvalidArgument):
        event(text)


def crash_points(prefix: str) -> st.SearchStrategy[str | None]:
    """Mostly no crash; otherwise one of the operation's own write steps (named, introspectable)."""
    steps = [step for step in r.APPROVAL_STEPS if step.startswith(prefix)]
    return st.one_of(st.none(), st.sampled_from(steps))


class ApprovalComparison(RuleBasedStateMachine):
    backend = os.environ.get("TEAMPROTO_BACKEND", "memory")

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="teamproto-"))
        self.storage: r.Storage = (
            r.SQLiteStorage(self.folder / "team.db") if self.backend == "sqlite" else r.MemoryStorage()
        )
        self.clock = r.ManualClock(0.0)
        self.world = r.RecordingTool()
        self.harness = self._harness()
        # The full model: its partial-order reductions leave out interleavings that are equivalent
        # for the explorer (an idle monitor pass taken at once) but that the reference may take.
        self.model = Model(CONFIG, reduce=False)
        self.state = self.model.initial()
        self.steps: list[tuple[Action | None, Any]] = [(None, self.state)]
        self.results: dict[str, dict[str, Any]] = {}
        for member, task in ((0, 0), (1, 1)):
            self.harness.add_member(f"m{member}", ["deploy"])
            self.harness.add_task(f"t{task}")
            self.harness.claim(f"m{member}", f"t{task}")
            self._model_take(Action("task.claim", (("member", member), ("task", task))))
        self.before = self.harness.snapshot()

    def teardown(self) -> None:
        self.storage.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _harness(self) -> r.Harness:
        return r.Harness(self.storage, self.clock, [self.world.tool(normalize=lambda arguments: arguments)])

    # ---- driving both sides ----------------------------------------------------------------
    def _model_take(self, action: Action, crash_after: str | None = None) -> bool:
        """Apply ``action`` to the model if it is enabled; with a crash, only up to that step."""
        for candidate, steps in self.model.operations(self.state):
            if (candidate.name, candidate.args) != (action.name, action.args):
                continue
            state = self.state
            for name, apply in steps:
                state = apply(state)
                if name == crash_after:
                    break
            if crash_after is not None:
                self.steps.append((replace(action, crash_after=crash_after), replace(state, crashed=True)))
                state = reconcile(self.model, replace(state, crashed=False))
                action = Action("restart")
            self.state = state
            self.steps.append((action, state))
            return True
        return False

    def _both(self, action: Action, call: Any, crash_after: str | None = None) -> None:
        """Run the reference operation and the model action; they must agree on whether it ran.

        With ``crash_after`` the reference dies right after that write step (if it gets there)."""
        if crash_after:
            self.storage.faults.crash_after.add(crash_after)
        crashed: str | None = None
        try:
            call()
            ran = True
        except r.Crash as crash:
            crashed, ran = crash.step, True
            CRASHED.add(crash.step)
        except (
            r.ApprovalRefused,
            r.ProtocolConflict,
            r.CancelRefused,
            r.NotResponder,
            r.ReviewConflict,
            r.ApprovalExpired,
        ) as error:
            ran = False
            note(f"{action.name}: refused with {type(error).__name__}")
        finally:
            self.storage.faults.crash_after.clear()
        note(f"{action.name}: {'crashed' if crashed else 'ran' if ran else 'refused'}")
        model_ran = self._model_take(action, crash_after=crashed)
        assert ran == model_ran, f"{action}: reference {'ran' if ran else 'refused'}, model did not agree"
        if crashed is not None:
            self.harness = self._harness()  # a restart: a new harness over the same storage
            self.harness.reconcile()

    def ctx(self, member: int, slot: int) -> r.CallContext:
        return r.CallContext(f"m{member}", 1, f"call-{slot}", f"t{member}")

    def slots(self, *statuses: str) -> list[int]:
        """Approval slots whose model status is one of ``statuses`` (repeats weight the draw)."""
        return [a for status in statuses for a, ap in enumerate(self.state.approvals) if ap.status == status]

    def free_slot(self) -> int | None:
        return next((a for a, ap in enumerate(self.state.approvals) if not ap.status), None)

    # ---- rules -----------------------------------------------------------------------------
    @rule(member=st.integers(0, 1), crash=crash_points("approval.request/"))
    def request(self, member: int, crash: str | None) -> None:
        slot = self.free_slot()
        if slot is None:
            return
        self._both(
            Action("approval.request", (("member", member),)),
            lambda: self.harness.approvals.request(
                self.ctx(member, slot), "deploy", SAME, RISK_TEXT, ttl_seconds=CONFIG.ttl_ticks
            ),
            crash,
        )

    @precondition(lambda self: any(ap.status == "requested" for ap in self.state.approvals))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """The same call again (same tool_call_id): same record, same message (MSG-4, STO-2)."""
        slots = [a for a, ap in enumerate(self.state.approvals) if ap.status == "requested"]
        slot = data.draw(st.sampled_from(slots))
        member = self.state.approvals[slot].requester
        self._both(
            Action("approval.retry", (("slot", slot),)),
            lambda: self.harness.approvals.request(
                self.ctx(member, slot), "deploy", SAME, RISK_TEXT, ttl_seconds=CONFIG.ttl_ticks
            ),
        )
        self._model_take(Action("approval.retry", (("slot", slot),)))

    @rule(member=st.integers(0, 1), crash=crash_points("approval.review/"))
    def request_and_approve(self, member: int, crash: str | None = None) -> None:
        """A request the Lead approves at once (keeps approved approvals common: rarer invalid draws)."""
        slot = self.free_slot()
        if slot is None:
            return
        self.request(member, None)
        self.refines_the_model_and_every_invariant_holds()  # each operation is a step of its own
        if self.state.approvals[slot].status == "requested":
            pid = self._pid(slot)
            self._both(
                Action("approval.review", (("decision", "approved"), ("slot", slot))),
                lambda: self.harness.approvals.review("lead", pid, "approved"),
                crash,
            )

    @rule(
        member=st.integers(0, 1),
        crash=crash_points("approval.consume/"),
        twist=st.sampled_from([None, None, None, "late", "changed", "other_member", "new_profile", "no_tool"]),
    )
    def approved_call(self, member: int, crash: str | None, twist: str | None) -> None:
        """Request, approve and call at once — the common path, often crashed in the call. A
        *twist* breaks one APR-5 condition just before the call: past the deadline (before the
        monitor's pass), changed arguments, another member's call, a new profile version, the
        tool gone from the profile. Each must be refused exactly when the model refuses it."""
        slot = self.free_slot()
        self.request_and_approve(member)
        self.refines_the_model_and_every_invariant_holds()
        if slot is None or self.state.approvals[slot].status != "approved":
            return
        caller, arguments = member, SAME
        if twist == "late" and self.state.monitor_done:
            for _ in range(CONFIG.ttl_ticks):
                self.tick(0)
                self.monitor()
            self.tick(0)
        elif twist == "changed":
            arguments = CHANGED
        elif twist == "other_member":
            caller = 1 - member
        elif twist in ("new_profile", "no_tool"):
            self.change_profile(member, twist == "new_profile", 0)
        self.refines_the_model_and_every_invariant_holds()
        pid = self._pid(slot)
        changed = arguments is CHANGED
        action = Action("approval.consume", (("changed_arguments", changed), ("member", caller), ("slot", slot)))
        self._both(action, lambda: self.harness.approvals.call(self.ctx(caller, slot), "deploy", arguments, pid), crash)

    @precondition(lambda self: self.slots("requested"))
    @rule(
        data=st.data(),
        decision=st.sampled_from(["approved", "approved", "rejected"]),
        crash=crash_points("approval.review/"),
    )
    def review(self, data: st.DataObject, decision: str, crash: str | None) -> None:
        slot = data.draw(st.sampled_from(self.slots("requested")))
        pid = self._pid(slot)
        if self.state.approvals[slot].status == decision:
            return  # idempotent in the reference, no model move: checked in tests/test_approval.py
        self._both(
            Action("approval.review", (("decision", decision), ("slot", slot))),
            lambda: self.harness.approvals.review("lead", pid, decision),
            crash,
        )

    @precondition(lambda self: self.slots("approved", "consumed", "expired"))
    @rule(
        data=st.data(),
        other_member=st.integers(0, 4),
        changed=st.integers(0, 4),
        crash=crash_points("approval.consume/"),
    )
    def consume(self, data: st.DataObject, other_member: int, changed: int, crash: str | None) -> None:
        """Same or changed arguments, own or another member's approval: only the right call runs.
        Mostly the right call (so that calls do run); one in five is forged in each way."""
        slot = data.draw(st.sampled_from(self.slots("approved", "approved", "consumed", "expired")))
        requester = self.state.approvals[slot].requester
        member = 1 - requester if other_member == 0 else requester
        changed = changed == 0  # type: ignore[assignment]
        pid = self._pid(slot)
        args = CHANGED if changed else SAME
        action = Action("approval.consume", (("changed_arguments", changed), ("member", member), ("slot", slot)))
        self._both(action, lambda: self.harness.approvals.call(self.ctx(member, slot), "deploy", args, pid), crash)

    @precondition(lambda self: self.slots("requested", "approved", "consumed"))
    @rule(data=st.data(), crash=crash_points("approval.cancel/"))
    def cancel(self, data: st.DataObject, crash: str | None) -> None:
        self.cancel_slot(data.draw(st.sampled_from(self.slots("requested", "approved", "consumed"))), crash)

    def cancel_slot(self, slot: int, crash: str | None) -> None:
        member = self.state.approvals[slot].requester
        self._both(
            Action("approval.cancel", (("slot", slot),)),
            lambda: self.harness.approvals.cancel(self.ctx(member, slot), self._pid(slot)),
            crash,
        )

    @precondition(lambda self: self.state.monitor_done)
    @rule(skip=st.integers(0, 1))
    def tick(self, skip: int) -> None:
        """One second passes (drawn less often than other rules). Until the monitor's next pass,
        anything past its deadline is still in its old state: the checks themselves must refuse."""
        if skip:
            return
        self.clock.advance(1)
        assert self._model_take(Action("tick"))

    @precondition(lambda self: not self.state.monitor_done)
    @rule()
    def monitor(self) -> None:
        """The deadline monitor's pass (INV-12)."""
        self.harness.approvals.expire_due()
        assert self._model_take(Action("monitor.pass"))

    @rule(member=st.integers(0, 1), keep_tool=st.booleans(), skip=st.integers(0, 4))
    def change_profile(self, member: int, keep_tool: bool, skip: int) -> None:
        """The Lead changes a capability profile (drawn less often: it voids outstanding approvals)."""
        if skip:
            return
        self.harness.set_profile(f"m{member}", ["deploy"] if keep_tool else [])
        assert self._model_take(Action("profile.change", (("keep_tool", keep_tool), ("member", member))))

    @precondition(lambda self: any(ap.status for ap in self.state.approvals))
    @rule(data=st.data())
    def deliver(self, data: st.DataObject) -> None:
        """Deliver (or re-deliver) the request message: one recorded result, no record changes."""
        slot = data.draw(st.sampled_from([a for a, ap in enumerate(self.state.approvals) if ap.status]))
        pid = self._pid(slot)
        mid = spec.ids.message_id(pid, "request")
        if self.harness.read("message", mid) is None:
            return
        approvals_before = self.harness.snapshot()["operation_approval"]
        result = self.harness.deliver(mid, pid)
        assert self.results.setdefault(mid, result) == result, "MSG-5: a duplicate delivery changed the result"
        assert self.harness.snapshot()["operation_approval"] == approvals_before, "MSG-3"

    def _pid(self, slot: int) -> str:
        return spec.ids.protocol_id(f"m{self.state.approvals[slot].requester}", f"call-{slot}", "operation_approval")

    # ---- invariants ------------------------------------------------------------------------
    @invariant()
    def refines_the_model_and_every_invariant_holds(self) -> None:
        """One snapshot per step (its records were validated as they were read)."""
        after = self.harness.snapshot()
        problems = [
            f"{inv.clause} {inv.name}: {message}"
            for inv, message in invariants.check_state(after) + invariants.check_step(self.before, after)
        ]
        if project(after) != project(snapshot(self.state, CONFIG)):
            problems.append("refinement: the reference's snapshot does not abstract to the model's state")
        if problems:
            path = write_trace(self.steps, problems[0])
            raise AssertionError(f"{problems}; the model's side of this run is in {path}")
        keys = [key for key, _ in self.world.calls]
        assert len(keys) == len(set(keys)), "INV-1 approval_consumed_at_most_once: a key was called twice"
        self.before = after


def write_trace(steps: list[tuple[Action | None, Any]], problem: str) -> Path:
    """The run so far in the explorer's counterexample format (replayable: model_tests/replay.py)."""
    import json

    from spec.explore import Violation, trace_json

    path = Path(tempfile.gettempdir()) / "teamproto-stateful-trace.json"
    document = trace_json(Violation("-", "model_tests", problem, steps), CONFIG)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


ApprovalComparison.TestCase.settings = settings(
    stateful_step_count=50,
    suppress_health_check=[HealthCheck.too_slow],
    deadline=None,
    max_examples=settings().max_examples,
)
TestApprovalProtocol = pytest.mark.clause(
    "APR-1",
    "APR-4",
    "APR-5",
    "APR-6",
    "APR-7",
    "APR-8",
    "APR-9",
    "MSG-4",
    "MSG-5",
    "MSG-6",
    "REC-1",
    "REC-2",
    "REC-3",
    "INV-1",
    "INV-3",
    "INV-6",
    "INV-7",
    "INV-9",
    "INV-10",
    "XPR-4",
)(ApprovalComparison.TestCase)


class SqliteComparison(ApprovalComparison):
    backend = "sqlite"


SqliteComparison.TestCase.settings = settings(
    stateful_step_count=20,
    max_examples=max(10, settings().max_examples // 5),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestApprovalProtocolSqlite = pytest.mark.clause("STO-1", "STO-3", "REC-2")(SqliteComparison.TestCase)


@pytest.mark.clause("REC-2", "REC-3", "APR-8")
@pytest.mark.parametrize("step", r.APPROVAL_STEPS)
def test_each_write_step_crashed_under_refinement(step: str) -> None:
    """A scripted program per write step, through the same machine: the random programs above
    explore; these make sure every step is crashed whatever the draw (crash-point coverage)."""
    machine = ApprovalComparison()
    try:
        if step.startswith("approval.request/"):
            machine.request(0, step)
        elif step.startswith("approval.review/"):
            machine.request_and_approve(0, step)
        elif step.startswith("approval.consume/"):
            machine.approved_call(0, step, None)
        else:
            machine.request(0, None)
            machine.cancel_slot(0, step)
        machine.refines_the_model_and_every_invariant_holds()
        assert step in CRASHED
    finally:
        machine.teardown()


@pytest.mark.clause("REC-2")
def test_every_approval_write_step_was_crashed() -> None:
    """Runs after the stateful tests: every write step of the approval operations was crashed."""
    if not CRASHED:
        pytest.skip("run together with the stateful tests")
    missing = [step for step in r.APPROVAL_STEPS if step not in CRASHED]
    assert not missing, f"never crashed after: {missing}"


def test_teamproto_mutants_reports_a_caught_mutant() -> None:
    """The mutants command runs the model tests in a subprocess with one mutant switched on."""
    import json
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "teamproto._cli", "mutants", "--only", "secret_not_redacted", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[1],
    )
    report = json.loads(result.stdout)
    row = report["mutants"][0]
    assert (result.returncode, row["caught"], row["by"]) == (0, True, "no_secret_stored")
    assert row["shrunk_program_steps"] and row["examples_until_caught"]
