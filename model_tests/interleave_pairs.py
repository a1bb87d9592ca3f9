"""The worlds and operations the interleaving explorer races (``model_tests/interleave.py``).

``PAIRS`` holds, for every pair of operations that can touch one record, a prepared world and
the two operations, each on an instance of its own. ``POOL`` holds the operations the Hypothesis
programs draw from, over one world where they all apply.

Every new operation that can touch a record another operation writes joins ``PAIRS``;
``ISSUE_PAIRS`` are those issue 17 names, which a test keeps there.
"""

from __future__ import annotations

import reference as r
from spec.ids import message_id, protocol_id

from .interleave import Operation, Scenario

ARGS = {"path": "srv/app"}
CTX = r.CallContext("m0", 1, "call-1", "t0")
PID = protocol_id("m0", "call-1", "operation_approval")
"""The approval of ``CTX``: requested at time 0 with the default time to live, so its deadline is 300."""
DEADLINE = 300.0
CTX_M1 = r.CallContext("m1", 1, "call-2", "t1")
PID_M1 = protocol_id("m1", "call-2", "operation_approval")


def _member_with_task(harness: r.Harness, member: str, task: str) -> None:
    harness.add_member(member, ["deploy"])
    harness.add_task(task)
    harness.claim(member, task)


def requested(harness: r.Harness) -> None:
    """m0 holds t0 and has requested ``PID`` (deadline 300)."""
    _member_with_task(harness, "m0", "t0")
    harness.approvals.call(CTX, "deploy", ARGS)


def approved(harness: r.Harness) -> None:
    """``requested``, and the Lead approved it."""
    requested(harness)
    harness.approvals.review("lead", PID, "approved", "ok")


def review_cut_short(harness: r.Harness) -> None:
    """``requested``, then approved by the set-up's instance, which died after the record's write,
    before its decision message and its log entry: reconciliation owes that work (REC-4)."""
    requested(harness)
    harness.storage.faults.crash_after.add("approval.review/record")
    try:
        harness.approvals.review("lead", PID, "approved", "ok")
    except r.Crash:
        return
    raise AssertionError("the review did not stop after its record")


def consumption_cut_short(harness: r.Harness) -> None:
    """``approved``, then consumed by the set-up's instance, which died after writing its
    execution record, before the call: the set-up's instance is closed, so this is work whose
    writer can no longer finish it (REC-4), for any instance to take over."""
    approved(harness)
    harness.storage.faults.crash_after.add("approval.consume/execution")
    try:
        harness.approvals.call(CTX, "deploy", ARGS, approval_id=PID)
    except r.Crash:
        return
    raise AssertionError("the consumption did not stop after its execution record")


def two_members_one_pending_task(harness: r.Harness) -> None:
    harness.add_member("m0", ["deploy"])
    harness.add_member("m1", ["deploy"])
    harness.add_task("t0")


def one_claimed_task(harness: r.Harness) -> None:
    _member_with_task(harness, "m0", "t0")


SHUTDOWN = protocol_id("lead", "sd-1", "shutdown_request")
SHUTDOWN_MESSAGE = message_id(SHUTDOWN, "request")
SHUTDOWN_DEADLINE = 60.0
"""The deadline of ``SHUTDOWN``: requested at time 0 with the default time to live."""
SHUTDOWN_M1_MESSAGE = message_id(protocol_id("lead", "sd-m1", "shutdown_request"), "request")


def shutdown_requested(harness: r.Harness) -> None:
    """m0 runs and holds nothing, t0 is pending, and the Lead has asked m0 to shut down."""
    harness.add_member("m0", ["deploy"])
    harness.add_task("t0")
    harness.shutdowns.request("lead", "m0", "sd-1")


def shutdown_requested_with_task(harness: r.Harness) -> None:
    """m0 holds t0 and runs, and the Lead has asked it to shut down: it may still request approvals
    until it begins draining (SHD-3, XPR-2)."""
    _member_with_task(harness, "m0", "t0")
    harness.shutdowns.request("lead", "m0", "sd-1")


def draining_with_task(harness: r.Harness) -> None:
    """m0 holds t0 and has begun draining for ``SHUTDOWN``; no job runs, so it may release."""
    _member_with_task(harness, "m0", "t0")
    harness.shutdowns.request("lead", "m0", "sd-1")
    harness.shutdowns.begin_drain("m0", SHUTDOWN_MESSAGE)


PLAN = r.plan_key_id("m0", "plan-1")
PLAN_BODY = {
    "goal": "move the app",
    "steps": [{"id": "s1", "action": "deploy", "params": ARGS}],
    "estimated_cost": 1,
    "rollback": "move it back",
    "risks": [],
    "ttl_seconds": DEADLINE,
}
PLAN_CTX = r.CallContext("m0", 1, "call-plan", "t0")
DECISION = message_id(PLAN, "decision-0")


def plan_pending(harness: r.Harness) -> None:
    """m0 holds t0 and has submitted ``PLAN`` (deadline 300)."""
    _member_with_task(harness, "m0", "t0")
    harness.plans.draft(PLAN_CTX, "plan-1", PLAN_BODY)
    harness.plans.submit(PLAN_CTX, PLAN)


def plan_drafted_shutdown_requested(harness: r.Harness) -> None:
    """m0 holds t0 and has drafted ``PLAN``, and the Lead has asked it to shut down."""
    _member_with_task(harness, "m0", "t0")
    harness.plans.draft(PLAN_CTX, "plan-1", PLAN_BODY)
    harness.shutdowns.request("lead", "m0", "sd-1")


def plan_approved(harness: r.Harness) -> None:
    """``plan_pending``, and the Lead approved it; the decision is not delivered yet."""
    plan_pending(harness)
    harness.plans.decide("lead", PLAN, "approved")


def plan_delivered(harness: r.Harness) -> None:
    """``plan_approved``, and m0 received the decision: it may start the plan."""
    plan_approved(harness)
    harness.plans.deliver_decision("m0", DECISION)


def team(harness: r.Harness) -> None:
    """The Hypothesis programs' world: ``approved``; m1 holds t1; t2 is pending."""
    approved(harness)
    _member_with_task(harness, "m1", "t1")
    harness.add_task("t2")


CONSUME = Operation("consume", lambda h: h.approvals.call(CTX, "deploy", ARGS, approval_id=PID))
CANCEL = Operation("cancel", lambda h: h.approvals.cancel(CTX, PID))
REVIEW = Operation("review", lambda h: h.approvals.review("lead", PID, "approved", "ok"))
EXPIRE = Operation("expire_due", lambda h: h.approvals.expire_due())
RECONCILE = Operation("reconcile", lambda h: h.reconcile())
REQUEST = Operation("request", lambda h: h.approvals.call(CTX, "deploy", ARGS))


def claim(member: str, task: str) -> Operation:
    return Operation(f"claim {member} {task}", lambda h: h.claim(member, task))


def finish(member: str, task: str) -> Operation:
    """The holder of the task's first claim completes it (TSK-1: the claim token is stable)."""
    token = message_id(task, "claim-1")
    return Operation(f"finish {member} {task}", lambda h: h.finish_task(member, task, "completed", token))


DECIDE_PLAN = Operation("decide plan", lambda h: h.plans.decide("lead", PLAN, "approved"))
WITHDRAW_PLAN = Operation("withdraw plan", lambda h: h.plans.withdraw(PLAN_CTX, PLAN))
RETRACT_PLAN = Operation("retract plan", lambda h: h.plans.retract("lead", PLAN, "rejected"))
DELIVER_DECISION = Operation("deliver decision", lambda h: h.plans.deliver_decision("m0", DECISION))
START_PLAN = Operation("start plan", lambda h: h.plans.start(PLAN_CTX, PLAN))
EXPIRE_PLANS = Operation("expire plans", lambda h: h.monitor_pass())
EXPIRE_SHUTDOWNS = Operation("expire shutdowns", lambda h: h.monitor_pass())
BEGIN_DRAIN = Operation("begin_drain", lambda h: h.shutdowns.begin_drain("m0", SHUTDOWN_MESSAGE))
REQUEST_SHUTDOWN = Operation("request_shutdown", lambda h: h.shutdowns.request("lead", "m0", "sd-1"))
RELEASE = Operation("release", lambda h: h.shutdowns.release_task("m0"))


DRAFT_PLAN = Operation("draft plan", lambda h: h.plans.draft(PLAN_CTX, "plan-1", PLAN_BODY))
SUBMIT_PLAN = Operation("submit plan", lambda h: h.plans.submit(PLAN_CTX, PLAN))


STEP = {"id": "s1", "action": "deploy", "params": ARGS}


def plan_started(harness: r.Harness) -> None:
    """``plan_delivered``, and m0 started it: its execution runs, no step taken yet."""
    plan_delivered(harness)
    harness.plans.start(PLAN_CTX, PLAN)


def plan_stepped(harness: r.Harness) -> None:
    """``plan_started``, and its one step ran: the execution may complete."""
    plan_started(harness)
    harness.plans.step(PLAN_CTX, PLAN, STEP)


def drain_begun(harness: r.Harness) -> None:
    """m0 runs and holds nothing, and has begun draining for ``SHUTDOWN``: it may finish."""
    shutdown_requested(harness)
    harness.shutdowns.begin_drain("m0", SHUTDOWN_MESSAGE)


def draining_with_two_jobs(harness: r.Harness) -> None:
    """m0 holds t0, runs two cancellable jobs and has begun draining for ``SHUTDOWN``."""
    _member_with_task(harness, "m0", "t0")
    harness.jobs.start("m0", "j1", "make one")
    harness.jobs.start("m0", "j2", "make two")
    harness.shutdowns.request("lead", "m0", "sd-1")
    harness.shutdowns.begin_drain("m0", SHUTDOWN_MESSAGE)


DRAIN_JOBS = Operation("drain jobs", lambda h: h.shutdowns.drain_jobs("m0"))
STEP_PLAN = Operation("step plan", lambda h: h.plans.step(PLAN_CTX, PLAN, STEP))
COMPLETE_PLAN = Operation("complete plan", lambda h: h.plans.complete(PLAN_CTX, PLAN))
STOP_PLAN = Operation("stop plan", lambda h: h.plans.fail(PLAN_CTX, PLAN))
FINISH_DRAIN = Operation("finish drain", lambda h: h.shutdowns.finish("m0"))
DRAIN_PASS = Operation("drain pass", lambda h: h.shutdowns.drain_pass("m0", {"step": 1}))
CANCEL_SHUTDOWN = Operation("cancel shutdown", lambda h: h.shutdowns.cancel("lead", SHUTDOWN))
HEARTBEAT = Operation("heartbeat", lambda h: h.members.heartbeat("m0", 1))
FORCE_TERMINATE = Operation("force terminate", lambda h: h.shutdowns.force_terminate(SHUTDOWN))
INSPECT = Operation("inspect m0", lambda h: h.members.inspect("m0"))
SUSPEND = Operation("suspend m0's task", lambda h: h.tasks.suspend("m0", UNIT_SECONDS))
PUT_BACK = Operation("put t0 back", lambda h: h.tasks.inspect("t0", "pending"))
CLAIM_M1 = Operation("m1 claims t0", lambda h: h.claim("m1", "t0"))


def timed_out_with_task_beside_m1(harness: r.Harness) -> None:
    """As ``draining_with_task``, past the drain's deadline with the monitor's pass taken (the drain
    ``timed_out``, SHD-6), and m1 running beside m0."""
    draining_with_task(harness)
    harness.add_member("m1", ["deploy"])
    assert isinstance(harness.clock, r.ManualClock)
    harness.clock.advance(SHUTDOWN_DEADLINE + 1)
    harness.monitor_pass()


UNIT_SECONDS = 10.0
"""SHD-9's unit deadline in ``release||suspend``: t0, claimed at 0, is due from 10 on."""


PAIRS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario("consume||consume", approved, ((CONSUME,), (CONSUME,))),
        Scenario("consume||cancel", approved, ((CONSUME,), (CANCEL,))),
        # Two processes' clocks: the review at the deadline (still allowed), the monitor just after.
        Scenario("review||expire_due", requested, ((REVIEW,), (EXPIRE,)), clocks=(DEADLINE, DEADLINE + 1)),
        # Two processes' deadline monitors, both past the deadline.
        Scenario("expire_due||expire_due", requested, ((EXPIRE,), (EXPIRE,)), clocks=(DEADLINE + 1, DEADLINE + 1)),
        Scenario("consume||expire_due", approved, ((CONSUME,), (EXPIRE,)), clocks=(DEADLINE, DEADLINE + 1)),
        Scenario("cancel||expire_due", requested, ((CANCEL,), (EXPIRE,)), clocks=(DEADLINE, DEADLINE + 1)),
        Scenario("review||cancel", requested, ((REVIEW,), (CANCEL,))),
        Scenario("claim||claim", two_members_one_pending_task, ((claim("m0", "t0"),), (claim("m1", "t0"),))),
        # The two-write task operation that exists today beside reconciliation's claim repair
        # (REC-2); release (SHD-3) has the same two writes and joins as release||reconcile.
        Scenario("finish||reconcile", one_claimed_task, ((finish("m0", "t0"),), (RECONCILE,))),
        # The holder's finish sent twice, from two processes (a retried tool call): one wins, the
        # other gets the typed refusal a serial order gives, never a raw VersionConflict (STO-4).
        Scenario("finish||finish", one_claimed_task, ((finish("m0", "t0"),), (finish("m0", "t0"),))),
        Scenario("claim||reconcile", two_members_one_pending_task, ((claim("m0", "t0"),), (RECONCILE,))),
        # A process that restarts reconciles the whole store while the others run on. Their clocks
        # differ: a reconciliation that re-delivered the live request (REC-4) would stamp the
        # message with its own time, 0, where the requester's is 301 (the deadline is 601).
        Scenario("request||reconcile", one_claimed_task, ((REQUEST,), (RECONCILE,)), clocks=(301.0, 0.0)),
        # A live consumption beside the takeover of a dead reviewer's work on the same approval
        # (REC-4): until the consumer's first write the reconciler posts the decision and logs
        # it; from then on the approval is the consumer's, its execution, call and log entry too.
        # The two serial orders end differently (the decision posted, or never).
        Scenario("consume||reconcile", review_cut_short, ((CONSUME,), (RECONCILE,)), clocks=(1.0, 2.0)),
        # Two processes restart at once over a dead one's consumption: both take it over (REC-4).
        Scenario("reconcile||reconcile", consumption_cut_short, ((RECONCILE,), (RECONCILE,))),
        Scenario("claim||begin_drain", shutdown_requested, ((claim("m0", "t0"),), (BEGIN_DRAIN,))),
        Scenario("claim||request_shutdown", two_members_one_pending_task, ((claim("m0", "t0"),), (REQUEST_SHUTDOWN,))),
        # The Lead asks m0 to stop and its drain begins while m0 claims: with a crash between the
        # claim's two writes (explore(..., crashes=True)), the drain begins before the claim is
        # whole, and the restart's reconciliation must give the draining member its task (REC-2).
        Scenario(
            "claim||request_shutdown;begin_drain",
            two_members_one_pending_task,
            ((claim("m0", "t0"),), (REQUEST_SHUTDOWN, BEGIN_DRAIN)),
        ),
        Scenario("release||reconcile", draining_with_task, ((RELEASE,), (RECONCILE,))),
        # The member's delivery of its shutdown request at the deadline against the monitor just after
        # it (SHD-2, SHD-6), and a draining member's release against the monitor timing its drain out
        # (SHD-3, SHD-6, SHD-7).
        Scenario(
            "begin_drain||expire_shutdowns",
            shutdown_requested,
            ((BEGIN_DRAIN,), (EXPIRE_SHUTDOWNS,)),
            clocks=(SHUTDOWN_DEADLINE, SHUTDOWN_DEADLINE + 1),
        ),
        # A delivery past the deadline (refused, SHD-2) against the monitor expiring the message it
        # just read (MSG-1): the delivery's one write meets an expired message.
        Scenario(
            "late_begin_drain||expire_shutdowns",
            shutdown_requested,
            ((BEGIN_DRAIN,), (EXPIRE_SHUTDOWNS,)),
            clocks=(SHUTDOWN_DEADLINE + 1, SHUTDOWN_DEADLINE + 1),
        ),
        Scenario(
            "release||expire_shutdowns",
            draining_with_task,
            ((RELEASE,), (EXPIRE_SHUTDOWNS,)),
            clocks=(SHUTDOWN_DEADLINE, SHUTDOWN_DEADLINE + 1),
        ),
        # Two processes' deadline monitors past an undelivered shutdown request's deadline (SHD-6,
        # MSG-1, STO-4): one expires the record and the message, the other finds them expired.
        Scenario(
            "expire_shutdowns||expire_shutdowns",
            shutdown_requested,
            ((EXPIRE_SHUTDOWNS,), (EXPIRE_SHUTDOWNS,)),
            clocks=(SHUTDOWN_DEADLINE + 1, SHUTDOWN_DEADLINE + 1),
        ),
        # Plans (PLN, Reference III): the Lead's decision against the requester's withdrawal and
        # against the monitor just past the deadline; a retraction against the delivery it races
        # (PLN-6: after delivery only withdrawal or expiry ends it); the start sent twice (PLN-7).
        Scenario("decide_plan||withdraw_plan", plan_pending, ((DECIDE_PLAN,), (WITHDRAW_PLAN,))),
        Scenario(
            "decide_plan||expire_plans",
            plan_pending,
            ((DECIDE_PLAN,), (EXPIRE_PLANS,)),
            clocks=(DEADLINE, DEADLINE + 1),
        ),
        # Two processes' deadline monitors past a plan's deadline: the record, its audit entry and
        # the request message each settle a lost compare-and-set (STO-4, PLN-5, MSG-1).
        Scenario(
            "expire_plans||expire_plans",
            plan_pending,
            ((EXPIRE_PLANS,), (EXPIRE_PLANS,)),
            clocks=(DEADLINE + 1, DEADLINE + 1),
        ),
        # The requester's start at the plan's deadline (its last instant) against the monitor just
        # after it (PLN-7, PLN-5, PLN-9), and against its own withdrawal from another process
        # (PLN-11); a decision's delivery sent from two processes (MSG-5).
        Scenario(
            "start_plan||expire_plans",
            plan_delivered,
            ((START_PLAN,), (EXPIRE_PLANS,)),
            clocks=(DEADLINE, DEADLINE + 1),
        ),
        Scenario("start_plan||withdraw_plan", plan_delivered, ((START_PLAN,), (WITHDRAW_PLAN,))),
        Scenario("deliver_decision||deliver_decision", plan_approved, ((DELIVER_DECISION,), (DELIVER_DECISION,))),
        Scenario("retract_plan||deliver_decision", plan_approved, ((RETRACT_PLAN,), (DELIVER_DECISION,))),
        Scenario("start_plan||start_plan", plan_delivered, ((START_PLAN,), (START_PLAN,))),
        # Each multi-write operation against the monitor just past its deadline and against its
        # rivals, where the model's operations never interleave (a sweep after the begin_drain race).
        Scenario(
            "deliver_decision||expire_plans",
            plan_approved,
            ((DELIVER_DECISION,), (EXPIRE_PLANS,)),
            clocks=(DEADLINE, DEADLINE + 1),
        ),
        Scenario(
            "withdraw_plan||expire_plans",
            plan_pending,
            ((WITHDRAW_PLAN,), (EXPIRE_PLANS,)),
            clocks=(DEADLINE, DEADLINE + 1),
        ),
        Scenario(
            "step_plan||expire_plans", plan_started, ((STEP_PLAN,), (EXPIRE_PLANS,)), clocks=(DEADLINE, DEADLINE + 1)
        ),
        Scenario(
            "complete_plan||expire_plans",
            plan_stepped,
            ((COMPLETE_PLAN,), (EXPIRE_PLANS,)),
            clocks=(DEADLINE, DEADLINE + 1),
        ),
        Scenario("complete_plan||stop_plan", plan_stepped, ((COMPLETE_PLAN,), (STOP_PLAN,))),
        Scenario("step_plan||stop_plan", plan_started, ((STEP_PLAN,), (STOP_PLAN,))),
        Scenario(
            "finish_drain||expire_shutdowns",
            drain_begun,
            ((FINISH_DRAIN,), (EXPIRE_SHUTDOWNS,)),
            clocks=(SHUTDOWN_DEADLINE, SHUTDOWN_DEADLINE + 1),
        ),
        Scenario(
            "drain_pass||expire_shutdowns",
            draining_with_task,
            ((DRAIN_PASS,), (EXPIRE_SHUTDOWNS,)),
            clocks=(SHUTDOWN_DEADLINE, SHUTDOWN_DEADLINE + 1),
        ),
        Scenario("finish_drain||finish_drain", drain_begun, ((FINISH_DRAIN,), (FINISH_DRAIN,))),
        # The member's heartbeat (its own thread, SHD-10) beside its finish: both write the member.
        Scenario("finish_drain||heartbeat", drain_begun, ((FINISH_DRAIN,), (HEARTBEAT,))),
        Scenario("begin_drain||cancel_shutdown", shutdown_requested, ((BEGIN_DRAIN,), (CANCEL_SHUTDOWN,))),
        Scenario("begin_drain||begin_drain", shutdown_requested, ((BEGIN_DRAIN,), (BEGIN_DRAIN,))),
        Scenario("drain_pass||finish_drain", draining_with_task, ((DRAIN_PASS,), (FINISH_DRAIN,))),
        # A release beside a process that reconciles and then finishes (SHD-3, SHD-5, REC-2): the
        # reconciliation may clear the member's task once the task's write is in, before the
        # release notes it on the request, and the finish then completes the request.
        Scenario("release||reconcile_finish", draining_with_task, ((RELEASE,), (RECONCILE, FINISH_DRAIN))),
        # A drain's finish beside another live instance's reconciliation (SHD-5, SHD-10, REC-2,
        # REC-4): between the finish's request write and its member write the member drains for a
        # completed request, which still stands; an outside review's plant called it lost there.
        Scenario("finish_drain||reconcile", drain_begun, ((FINISH_DRAIN,), (RECONCILE,))),
        # A release beside the Lead's last rung (SHD-6, SHD-7): the monitor times the drain out, the
        # Lead force-terminates the member and inspects it, which ends the request; the release's
        # note must not land on the ended request (an outside review found it did, MSG-6).
        Scenario(
            "release||force_inspect",
            draining_with_task,
            ((RELEASE,), (EXPIRE_SHUTDOWNS, FORCE_TERMINATE, INSPECT)),
            clocks=(SHUTDOWN_DEADLINE, SHUTDOWN_DEADLINE + 1),
        ),
        # The same from a drain already timed out, and the Lead goes on (three processes' worth):
        # it puts the task back after the inspection and m1 claims it. An outside review found a
        # release that read m0 before the Lead's steps noting t0, which it never let go, on the
        # request the inspection completed (MSG-6); and, before that, an inspection that missed a
        # release made before m1's claim.
        Scenario(
            "release||force_inspect_claim",
            timed_out_with_task_beside_m1,
            ((RELEASE,), (FORCE_TERMINATE, INSPECT, PUT_BACK, CLAIM_M1)),
            clocks=(SHUTDOWN_DEADLINE + 1, SHUTDOWN_DEADLINE + 1),
        ),
        # A release beside the unit deadline's suspension (SHD-9) of the task it releases: an outside
        # review found the release's refusal, when the suspension came between its read and its task
        # write, called the draining member unhealthy.
        Scenario(
            "release||suspend",
            draining_with_task,
            ((RELEASE,), (SUSPEND,)),
            clocks=(UNIT_SECONDS + 1, UNIT_SECONDS + 1),
        ),
        Scenario("complete_plan||reconcile", plan_stepped, ((COMPLETE_PLAN,), (RECONCILE,))),
        # A member's approval request beside its drain's beginning (XPR-2, SHD-3, APR-1): the request
        # reads the member running, the drain cancels what is open; an approval written after the
        # drain's pass would stay open for a draining member, an outcome no serial order gives.
        Scenario("request||begin_drain", shutdown_requested_with_task, ((REQUEST,), (BEGIN_DRAIN,))),
        # The same for a plan's draft and its submission (XPR-2 withdraws drafts and pending plans).
        Scenario("draft_plan||begin_drain", shutdown_requested_with_task, ((DRAFT_PLAN,), (BEGIN_DRAIN,))),
        Scenario("submit_plan||begin_drain", plan_drafted_shutdown_requested, ((SUBMIT_PLAN,), (BEGIN_DRAIN,))),
        # A drain's job cancellation sent twice at once over two jobs (SHD-3, JOB-2; outside review
        # 58: the whole settled ran again after asking one job and was refused as if it had asked none).
        Scenario("drain_jobs||drain_jobs_two_jobs", draining_with_two_jobs, ((DRAIN_JOBS,), (DRAIN_JOBS,))),
    )
}

ISSUE_PAIRS = (
    "consume||consume",
    "consume||cancel",
    "review||expire_due",
    "claim||claim",
    "claim||begin_drain",
    "release||reconcile",
)
"""The pairs issue 17 lists by name (PAIRS holds more)."""

POOL: tuple[Operation, ...] = (
    CONSUME,
    CANCEL,
    EXPIRE,
    RECONCILE,
    claim("m0", "t2"),
    claim("m1", "t2"),
    finish("m1", "t1"),
    Operation("request m1", lambda h: h.approvals.call(CTX_M1, "deploy", ARGS)),
    Operation("review m1", lambda h: h.approvals.review("lead", PID_M1, "approved", "ok")),
    Operation("request_shutdown m1", lambda h: h.shutdowns.request("lead", "m1", "sd-m1", ttl_seconds=1000)),
    Operation("begin_drain m1", lambda h: h.shutdowns.begin_drain("m1", SHUTDOWN_M1_MESSAGE)),
    Operation("release m1", lambda h: h.shutdowns.release_task("m1")),
)
"""What the Hypothesis programs draw from, over :func:`team`; every instance clock is 0 or 301."""
BY_NAME = {operation.name: operation for operation in POOL}


def program(names: tuple[tuple[str, ...], ...], clocks: tuple[float, ...]) -> Scenario:
    """The scenario of a program given by operation names per instance, as a failure prints it:
    ``interleave.run(program(names, clocks), interleave.backend("sqlite"), schedule)`` replays it."""
    programs = tuple(tuple(BY_NAME[name] for name in names_) for names_ in names)
    return Scenario(f"program {names} @ {clocks}", team, programs, clocks)
