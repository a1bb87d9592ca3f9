"""Random programs: the model's own operations drawn at random (as the model tests and the
explorer's random walks draw them), run on the implementation and on the model side by side, with
armed crashes at named write steps, real SIGKILLs of the driver process mid-operation followed by
a restart on the same data directory, and calls the model refuses (which must be refused and
change nothing). After every step the implementation's snapshot must abstract to the model's state
and satisfy every ``spec.invariants`` predicate."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from spec.model import Config, Model, parse_config, snapshot
from spec.model._model import Action
from spec.model._reconcile import reconcile
from spec.model._snapshot import plan_body

from ._abstract import abstract, canonical_ids, differences
from ._cases import Case, Session
from ._client import Crashed
from ._refusals import GUARDS, candidates, clauses_of_refusal, expected_codes, refusal_problem
from ._refusals import sendable as refusable_call
from ._replay import WORLD_CLAUSES, _id_problem, actor_problems, invariant_problems, resolve, world_problems
from ._translate import clauses_of, init_request, request_for, restart_clauses

APPROVALS = {
    "description": "the model side of the conformance suite's random programs",
    "members": 2, "tasks": 2, "approvals": 3, "plans": 0, "shutdowns": 0, "max_ticks": 6, "ttl_ticks": 1,
    "unit_ticks": 10**9, "plan_steps": 1, "crashes": True, "jobs": False, "lapses": False, "max_incarnation": 1,
    "profile_changes": 3, "max_retractions": 0, "symmetry": False, "liveness": False, "require_coverage": False,
}  # fmt: skip
CONFIG = parse_config("conformance", APPROVALS)
TEAM_CONFIG = parse_config(
    "conformance_team",
    {
        **APPROVALS,
        "description": "the model side of the random programs that also approve and run plans and stop members",
        "approvals": 2, "plans": 1, "shutdowns": 1, "plan_steps": 2, "profile_changes": 1, "max_retractions": 1,
    },
)  # fmt: skip
"""Every third program (numbers 1, 4, 7, …) runs on this one: plan approval and execution (PLN),
shutdown requests and drains (SHD, XPR-2) beside the approvals, where the driver declares those
operations."""
LIFE_CONFIG = parse_config(
    "conformance_lives",
    {
        **APPROVALS,
        "description": "the model side of the random programs whose members run jobs, miss their unit "
        "deadlines, lapse, are inspected and restart",
        "approvals": 1, "shutdowns": 1, "unit_ticks": 2, "jobs": True, "lapses": True, "max_incarnation": 2,
        "profile_changes": 1,
    },
)  # fmt: skip
"""And every third (numbers 2, 5, 8, …) on this one: a member's life — background jobs (JOB-1), a
unit of work past its deadline (SHD-9), a lapse and its inspection (SHD-7, SHD-10), a restart as a
new incarnation (XPR-1, MEM-1) — beside an approval and a shutdown request, where the driver
declares those operations. Without it no random program started a job, suspended a task or lapsed
or restarted a member (outside review 63: an inspection that ignored a job asked to cancel, and a
restarted member's claim refused by its old incarnation's request, passed the whole suite)."""
CONFIGS = (CONFIG, TEAM_CONFIG, LIFE_CONFIG)


def config_of(number: int) -> Config:
    return CONFIGS[number % len(CONFIGS)]


REFUSED, KILL, CRASH, APPROVED_CALL = 0.15, 0.08, 0.12, 0.2
QUIET_RESTART, TICK_BETWEEN, REFUSED_AGAIN = 0.05, 0.4, 0.1
"""The odds that a step restarts the driver with nothing crashed (REC-1, REC-2: reconciliation is
an operation of its own, enabled in every state, not only where a crash left the stores; the model
reconciles its state); that time passes between two steps of one record's life in
:meth:`Program.approved_call` and :meth:`Program.started_plan` (a deadline is anchored at one event
of that life: with no time between the events, an anchor at the wrong one looks the same); and that
a step sends a call of :data:`REFUSING` the model refuses now."""
REFUSING = frozenset(GUARDS) - {"approval.consume", "approval.cancel"}  # those two: :meth:`Program.refusable`
"""The operations whose refusals the model tells from its own bounds (``_refusals.sendable``: a
restart past ``max_incarnation``, a shutdown request past the configuration's count, a suspension
where no unit deadline can pass are never sent), so that any call of one on the state's records
(``_refusals.candidates``) that the model does not take now must be refused, definite, changing
nothing, with a code of a failing guard (:meth:`Program.refused`). Before review 64 only calls the
model had taken earlier in the program were sent: a claim of a task by a member that never claimed
it, say, never was."""
STARTED_PLAN, DEVIATE = 0.1, 0.3
"""The odds that a step of a program with plans drafts a plan and takes it to its start at once
(:meth:`Program.started_plan`; drawn just under ``APPROVED_CALL``'s band), and then"""
"""The odds that a step of a running plan execution is sent as a deviation instead (PLN-4)."""
WEIGHTS = {"task.finish": 0.2, "profile.change": 0.2, "tick": 0.4, "approval.review": 3.0, "approval.consume": 4.0}
"""As the model tests draw (``model_tests/test_stateful.py``): mostly the approval path, which
keeps approved approvals common; finishing tasks, profile changes and time passing more rarely."""


class Program:
    def __init__(
        self, command: str, caps: dict[str, Any], root: Path, seed: str, case: Case, config: Config = CONFIG
    ) -> None:
        self.rng = random.Random(seed)
        self.twists = random.Random(f"{seed}/twists")
        """Draws the quiet restarts and the time between steps (:data:`QUIET_RESTART`), apart from
        ``rng``: a program's other draws are those it drew before they were added."""
        self.refusing = random.Random(f"{seed}/refusing")
        """Draws the calls of :data:`REFUSING` sent refused, apart from both: whether one can be sent
        depends on the state, so drawing them from ``twists`` would move its other draws."""
        self.caps, self.case, self.config = caps, case, config
        self.model = Model(config, reduce=False)
        self.state = self.model.initial()
        self.session = Session(command, init_request(config), root)
        self.ids: dict[str, str] = {}
        self.taken: set[str] = set()  # the operations sent (taken, refused, crashed or killed)
        self.between = TICK_BETWEEN  # the odds of time passing inside a chain (none in a set-up)
        self.before: dict[str, Any] = {}
        self.prior: dict[str, Any] = {}  # the last snapshot checked (``before`` is emptied where a step is not one)

    # ---- checks ------------------------------------------------------------------------------
    def check(self, clauses: tuple[str, ...], what: str, ran: tuple[str, ...] = ()) -> bool:
        """The snapshot abstracts to the model's state and every invariant holds, and every event
        appended names the actor its step's (``ran``: the operations it took; none for a refused
        call) allows (AUD-1); False if not."""
        snap = self.session.snapshot()
        expected = abstract(snapshot(self.state, self.config))
        actual = abstract(snap)
        if actual != expected:
            lines = differences(expected, actual)
            self.case.fail(
                f"after {what}: the snapshot does not abstract to the model's state",
                clauses,
                self.session.trace + lines,
            )
            return False
        after = canonical_ids(snap)
        problems = invariant_problems(self.before, after, snap)
        problems += actor_problems(self.prior, after, ran, self.session)
        if problems:
            self.case.fail(f"after {what}: {problems[0][1]}", [c for c, _ in problems], self.session.trace)
            return False
        world = world_problems(self.session, self.caps, snap)
        if world:
            self.case.fail(f"after {what}: {world[0]}", WORLD_CLAUSES, self.session.trace)
            return False
        self.before = self.prior = after
        return True

    # ---- steps -------------------------------------------------------------------------------
    def run(self, depth: int) -> None:
        self.session.start()
        if not self.check(("REC-2",), "init"):
            return
        for _ in range(depth):
            deviations = self.deviations()
            if deviations and self.rng.random() < DEVIATE:
                if not self.deviated(*self.rng.choice(deviations)):
                    return
                continue
            enabled = [(a, s) for a, s in self.model.operations(self.state) if a.name in self.caps["operations"]]
            refusable = self.refusable({a for a, _ in self.model.operations(self.state)})
            if self.twists.random() < QUIET_RESTART and "restart" in self.caps["operations"]:
                if not self.restarted():
                    return
                continue
            offered = {a for a, _ in self.model.operations(self.state)}
            again = sorted(
                (
                    a
                    for a in set(candidates(self.state)) - offered
                    if a.name in REFUSING
                    and a.name in self.caps["operations"]
                    and refusable_call(self.model, self.state, a)
                    and self.sendable(a)
                ),
                key=repr,
            )
            # beside the step, not instead of it: a refused call changes nothing
            if again and self.refusing.random() < REFUSED_AGAIN and not self.refused(self.refusing.choice(again)):
                return
            draw = self.rng.random()
            if draw > 1 - APPROVED_CALL:
                took = self.approved_call()
                if self.case.verdict != "OK":  # a step of it failed: the case ends there
                    return
                if took:
                    continue
            if draw > 1 - APPROVED_CALL - STARTED_PLAN and self.config.plans:
                took = self.started_plan()
                if self.case.verdict != "OK":
                    return
                if took:
                    continue
            if draw < REFUSED and refusable:
                ok = self.refused(self.rng.choice(refusable))
            elif not enabled:
                return
            else:
                weights = [WEIGHTS.get(a.name, 1.0) for a, _ in enabled]
                action, steps = self.rng.choices(enabled, weights)[0]
                ok = self.take(action, steps, draw)
            if not ok:
                return

    def take(self, action: Action, steps: list[Any], draw: float) -> bool:
        self.taken.add(action.name)
        request = request_for(action, self.state, self.config)
        assert request is not None
        request = resolve(request, self.session.last)
        writing = self.writing(steps)
        if writing and action.name != "tick" and draw < REFUSED + KILL:
            return self.killed(action, request, steps)
        if writing and action.name != "tick" and draw < REFUSED + KILL + CRASH:
            return self.crashed(action, request, steps, self.rng.choice(writing))
        reply = self.session.call(request)
        if reply["type"] != "ok":
            self.case.fail(
                f"{action.name} was refused, but the model takes it", clauses_of(action.name), self.session.trace
            )
            return False
        problem = _id_problem(action.name, request, reply, self.ids)
        if problem:
            self.case.fail(problem, ("MSG-4", "INV-6"), self.session.trace)
            return False
        for _, apply in steps:
            self.state = apply(self.state)
        return self.check(clauses_of(action.name), action.name, (action.name,))

    def writing(self, steps: list[Any]) -> list[int]:
        """The write steps that write something the abstraction sees (a step that changes nothing
        writes nothing, so no implementation can die after it; a message's delivery status is the
        implementation's own) and that the driver can arm a crash at."""
        out, state = [], self.state
        for number, (name, apply) in enumerate(steps):
            after = apply(state)
            if (
                abstract(snapshot(after, self.config)) != abstract(snapshot(state, self.config))
                and name in self.caps["write_steps"]
            ):
                out.append(number)
            state = after
        return out

    def crashed(self, action: Action, request: dict[str, Any], steps: list[Any], last: int) -> bool:
        self.taken.add("restart")
        name = steps[last][0]
        if self.session.crash_call(request, name) is not None:
            self.case.fail(
                f"armed to crash after {name}, {action.name} did not reach it",
                clauses_of(action.name),
                self.session.trace,
            )
            return False
        for _, apply in steps[: last + 1]:
            self.state = apply(self.state)
        self.state = reconcile(self.model, replace(self.state, crashed=False))
        self.session.start()
        return self.check(
            restart_clauses(action.name), f"the restart after a crash at {name}", (action.name, "restart")
        )

    def sendable(self, action: Action) -> bool:
        """Whether ``action`` can be written as a request in this state: the translation reads the
        model's records it names (a claim's task holder, a plan's label), which a state may lack."""
        try:
            resolve(request_for(action, self.state, self.config) or {}, self.session.last)
        except (KeyError, IndexError, StopIteration, ValueError, TypeError, AssertionError):
            return False
        return True

    def restarted(self) -> bool:
        """The driver restarts with nothing crashed (its ``restart`` request); the model reconciles."""
        self.taken.add("restart")
        reply = self.session.call({"type": "restart"})
        if reply["type"] != "ok":
            self.case.fail("a restart with nothing crashed was refused", ("REC-1", "REC-2"), self.session.trace)
            return False
        self.state = reconcile(self.model, self.state)
        return self.check(("REC-1", "REC-2"), "a restart with nothing crashed", ("restart",))

    def time_passes(self) -> bool:
        """A tick, sometimes (:data:`TICK_BETWEEN`), where the model lets time pass; False if it failed."""
        if self.twists.random() >= self.between or "tick" not in self.caps["operations"]:
            return True
        ticks = [(a, s) for a, s in self.model.operations(self.state) if a.name == "tick"]
        return not ticks or self.take(*ticks[0], 1.0)

    def killed(self, action: Action, request: dict[str, Any], steps: list[Any]) -> bool:
        self.taken.add("restart")
        """SIGKILL while the operation may be anywhere; the model explains it by some prefix."""
        self.session.impl.send_raw(_line(request, self.session.impl))
        time.sleep(self.rng.uniform(0.0, 0.01))
        self.session.impl.kill()
        self.session.note(f"{action.name} — the process killed with SIGKILL mid-operation", None)
        self.session.start()
        snap = self.session.snapshot()
        prefixes, state = [self.state], self.state
        for _, apply in steps:
            state = apply(state)
            prefixes.append(state)
        for prefix in prefixes:
            candidate = reconcile(self.model, replace(prefix, crashed=False))
            if abstract(snapshot(candidate, self.config)) == abstract(snap):
                self.state = candidate
                return self.check(("REC-2",), "the restart after SIGKILL", (action.name, "restart"))
        self.case.fail(
            f"after SIGKILL during {action.name}: no crash point of the model explains the snapshot",
            ("REC-2",),
            self.session.trace,
        )
        return False

    def approved_call(self) -> bool:
        """Request, approve and call at once, as the model tests' ``approved_call`` rule does: the
        calls the approval is nearly good for (changed arguments, another member's call; each
        drawn with even odds) are sent first and must be refused while it stays approved (APR-2,
        APR-5), then the right call is taken, two times in three. False if no request can be made
        now (or a step failed, which the case records)."""
        requests = [(a, s) for a, s in self.model.operations(self.state) if a.name == "approval.request"]
        if not requests or self.case.verdict != "OK":
            return False
        slot = next(a for a, ap in enumerate(self.state.approvals) if not ap.status)
        action, _ = self.rng.choice(requests)
        requester = dict(action.args)["member"]
        review = Action("approval.review", (("decision", "approved"), ("slot", slot)))
        for step in (action, review):
            found = [s for a, s in self.model.operations(self.state) if a == step]
            if not found or not self.take(step, found[0], 1.0) or not self.time_passes():
                return self.case.verdict == "OK"
        for changed, member in approved_calls(self.rng, requester):
            call = (("changed_arguments", changed), ("member", member), ("slot", slot))
            consume = Action("approval.consume", call)
            enabled = {a: s for a, s in self.model.operations(self.state)}
            if not (self.take(consume, enabled[consume], 1.0) if consume in enabled else self.refused(consume)):
                break
        return True

    def refusable(self, enabled: set[Action]) -> list[Action]:
        """Calls the model refuses now: consumes by anyone, with the same or changed arguments, and
        cancels, of every approval that exists."""
        out = []
        for slot, ap in enumerate(self.state.approvals):
            if not ap.status:
                continue
            for m in range(self.config.members):
                for changed in (False, True):
                    out.append(
                        Action("approval.consume", (("changed_arguments", changed), ("member", m), ("slot", slot)))
                    )
            out.append(Action("approval.cancel", (("slot", slot),)))
        refusable = [a for a in out if a not in enabled and a.name in self.caps["operations"]]
        approved = [a for a in refusable if self.state.approvals[dict(a.args)["slot"]].status == "approved"]
        return refusable + 4 * approved  # the calls an approval is nearly good for are the telling ones

    def refused(self, action: Action) -> bool:
        self.taken.add(action.name)
        request = resolve(request_for(action, self.state, self.config) or {}, self.session.last)
        reply = self.session.call(request)
        clauses = clauses_of_refusal(self.model, self.state, action) or clauses_of(action.name)
        problem = refusal_problem(action.name, reply, expected_codes(self.model, self.state, action))
        if problem:
            self.case.fail(problem, clauses, self.session.trace)
            return False
        return self.check(clauses, f"the refused {action.name}")

    def started_plan(self) -> bool:
        """Draft, submit, approve, deliver and start a plan at once (as :meth:`approved_call` does
        for an approval): a random walk seldom takes all five, and only a running execution can
        deviate (PLN-4). False if no plan can be drafted now (or a step failed: the case says so)."""
        drafts = [(a, s) for a, s in self.model.operations(self.state) if a.name == "plan.draft"]
        if not drafts or not {"plan.draft", "plan.start"} <= set(self.caps["operations"]):
            return False
        slot = next(p for p, plan in enumerate(self.state.plans) if plan.status == "")
        chain = [self.rng.choice(drafts)[0]] + [
            Action(name, tuple(sorted({"slot": slot, **extra}.items())))
            for name, extra in (
                ("plan.submit", {}),
                ("plan.decide", {"decision": "approved"}),
                ("plan.deliver_decision", {}),
                ("plan.start", {}),
            )
        ]
        for step in chain:
            found = [s for a, s in self.model.operations(self.state) if a == step]
            if not found or not self.take(step, found[0], 1.0) or not self.time_passes():
                return self.case.verdict == "OK"
        return True

    # ---- PLN-4: deviations ---------------------------------------------------------------------
    def deviations(self) -> list[tuple[int, str]]:
        """(slot, kind) of every deviation the requester of a running execution could send now:
        a step that is not the next approved one (unknown, another tool, other parameters, one
        later, one that already ran, one past the last) or a completion with approved steps left
        (``skipped``). The model takes none of them: its requester runs the approved steps, so a
        deviation is drawn here, where the implementation's answer is checked against the model."""
        offered = {a for a, _ in self.model.operations(self.state)}
        needed = {"plan.step", "plan.complete", "plan.fail", "plan.rollback"}
        if not needed <= set(self.caps["operations"]):
            return []
        out = []
        for p, run in enumerate(self.state.runs):
            if Action("plan.fail", (("slot", p),)) not in offered:
                continue  # not running, or its requester cannot act
            if run.cursor >= self.config.plan_steps:
                out.append((p, "extra_step"))
                continue
            out += [(p, kind) for kind in ("unknown_step", "changed_tool", "changed_parameters", "skipped")]
            out += [(p, "reordered")] if run.cursor + 1 < self.config.plan_steps else []
            out += [(p, "repeated")] if run.cursor > 0 else []
        return out

    def deviated(self, p: int, kind: str) -> bool:
        """Send deviation ``kind`` of execution ``p``; it must be refused as ``plan_deviation``, the
        step must not run, and the execution must end as the model's requester stopping it ends
        it: failed, or failed and rolled back (PLN-4, PLN-11). False if not (the case says why)."""
        self.taken.add("plan.step" if kind != "skipped" else "plan.complete")
        steps = plan_body(p, self.state.plans[p], self.config.plan_steps)["steps"]
        cursor = self.state.runs[p].cursor
        name = "plan.complete" if kind == "skipped" else "plan.step"
        request = resolve(request_for(Action(name, (("slot", p),)), self.state, self.config) or {}, self.session.last)
        if kind != "skipped":
            nearest = steps[min(cursor, len(steps) - 1)]
            request["step"] = {
                "unknown_step": {**nearest, "id": "s9"},
                "changed_tool": {**nearest, "action": "drop"},
                "changed_parameters": {**nearest, "params": {"part": 99}},
                "reordered": steps[min(cursor + 1, len(steps) - 1)],
                "repeated": steps[max(cursor - 1, 0)],
                "extra_step": nearest,
            }[kind]
        reply = self.session.call(request)
        what = f"the deviation {kind} of a plan's execution"
        if reply["type"] != "error" or reply["error"]["code"] != "plan_deviation":
            said = reply["error"]["code"] if reply["type"] == "error" else "ok"
            self.case.fail(f"{what} was answered {said}, not plan_deviation", ("PLN-4",), self.session.trace)
            return False
        failed = self._after(self.state, "plan.fail", p)
        snap = self.session.snapshot()
        for candidate in (failed, self._after(failed, "plan.rollback", p)):
            if abstract(snapshot(candidate, self.config)) == abstract(snap):
                self.state = candidate
                if candidate is not failed:
                    # two of the model's steps (fail, rollback) in one call: the step invariants
                    # read pairs of single steps, so here the state is checked, not the step
                    self.before = {}
                return self.check(("PLN-4",), what, (name,))
        expected = abstract(snapshot(failed, self.config))
        self.case.fail(
            f"after {what}: the execution did not end failed (or failed and rolled back), the step not run",
            ("PLN-4",),
            self.session.trace + differences(expected, abstract(snap)),
        )
        return False

    def _after(self, state: Any, name: str, p: int) -> Any:
        """``state`` after the model's operation ``name`` on execution ``p``, every write step."""
        steps = dict(self.model.operations(state))[Action(name, (("slot", p),))]
        for _, apply in steps:
            state = apply(state)
        return state


def approved_calls(rng: random.Random, requester: int) -> list[tuple[bool, int]]:
    """The calls (changed arguments?, caller) made on a just-approved approval of member
    ``requester`` (of two): the forged ones first — changed arguments, another member's call, each
    drawn with even odds — so that they meet the approval while it is approved; then the right
    call, two times in three."""
    forged = [(True, requester)] if rng.random() < 0.5 else []
    forged += [(False, 1 - requester)] if rng.random() < 0.5 else []
    return forged + ([(False, requester)] if rng.random() < 2 / 3 else [])


def _line(request: dict[str, Any], impl: Any) -> str:
    import json

    impl.next_id += 1
    return json.dumps({**request, "msg_id": impl.next_id - 1})


def run_program(command: str, caps: dict[str, Any], root: Path, seed: int, number: int, depth: int) -> Case:
    clauses = sorted({c for op in caps.get("operations", []) for c in clauses_of(op)} | {"REC-2", "INV-1", "INV-3"})
    case = Case(
        f"random-{number:03d}",
        "random programs",
        ("operation approval", "operation approval, plans, shutdown", "member lives, jobs, shutdown")[number % 3],
        f"seed {seed}/{number}, {depth} steps",
        clauses,
    )
    program = Program(command, caps, root, f"{seed}/{number}", case, config_of(number))

    def run() -> None:
        program.run(depth)
        # an OK program vouches only for the clauses of what it sent (not every operation offered)
        case.clauses = sorted({c for op in program.taken for c in clauses_of(op)} | {"REC-2", "INV-1", "INV-3"})

    return _judged(program, run)


def _judged(program: Program, run: Callable[[], None]) -> Case:
    """Run ``program``'s case (``run``), timed; a driver that dies unexpectedly fails it (REC-2)."""
    started = time.monotonic()
    try:
        run()
    except Crashed as error:
        program.case.fail(f"the process died unexpectedly ({error})", ["REC-2"], program.session.trace)
    finally:
        program.session.close()
        program.case.seconds = time.monotonic() - started
    return program.case


DEVIATIONS = {
    "unknown_step": (0, "a step whose id the plan does not have"),
    "changed_tool": (0, "the next step, called with another tool"),
    "changed_parameters": (0, "the next step, with other parameters"),
    "reordered": (0, "the second step before the first"),
    "skipped": (0, "a completion with both steps still to run"),
    "repeated": (1, "the first step again, after it ran"),
    "extra_step": (2, "a step after the last approved one"),
}
"""Each kind of deviation (PLN-4) → (approved steps run first, what is sent), one case each."""


def run_deviation(command: str, caps: dict[str, Any], root: Path, kind: str) -> Case:
    """One deviation of every kind, whatever the random programs draw: m0 or m1 drafts a plan of
    two steps; it is submitted, approved, delivered and started, the first ``ran`` steps run as
    approved, then the deviation is sent. It must be refused as ``plan_deviation``, the step must
    not run, and the execution must end failed (or failed and rolled back); after every call the
    snapshot abstracts to the model's state and the invariants hold, as in a random program."""
    ran, title = DEVIATIONS[kind]
    case = Case(f"bad-deviation-{kind}", "bad input", "plan approval", title, ["PLN-4", "PLN-11"])
    needed = ["task.claim", "plan.draft", "plan.submit", "plan.decide", "plan.deliver_decision", "plan.start"]
    needed += ["plan.step", "plan.complete", "plan.fail", "plan.rollback"]
    missing = sorted(set(needed) - set(caps.get("operations", [])))
    if missing:
        return case.unimplemented(missing)
    program = Program(command, caps, root, f"deviation/{kind}", case, TEAM_CONFIG)
    program.between = 0.0  # the set-up must start the plan: no deadline may pass on the way

    def run() -> None:
        program.session.start()
        if not program.check(("REC-2",), "init"):
            return
        claims = [(a, s) for a, s in program.model.operations(program.state) if a.name == "task.claim"]
        if claims and not program.take(*claims[0], 1.0):
            return
        if not program.started_plan():
            if case.verdict == "OK":
                case.fail("no plan could be drafted and started in the set-up", ["PLN-4"], program.session.trace)
            return
        p = next(p for p, run in enumerate(program.state.runs) if run.status == "running")
        for _ in range(ran):
            step = Action("plan.step", (("slot", p),))
            found = [s for a, s in program.model.operations(program.state) if a == step]
            if not found or not program.take(step, found[0], 1.0):
                return
        if (p, kind) not in program.deviations():
            case.fail(f"the set-up cannot send {kind}", ["PLN-4"], program.session.trace)
            return
        program.deviated(p, kind)

    return _judged(program, run)


__all__ = [
    "CONFIG",
    "CONFIGS",
    "DEVIATIONS",
    "LIFE_CONFIG",
    "TEAM_CONFIG",
    "approved_calls",
    "config_of",
    "run_deviation",
    "run_program",
]
