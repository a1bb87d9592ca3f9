"""Partial-order reduction across records: one approval's or one plan's operations taken alone.

At 0 ticks ``standard`` has millions of states while its approval half (``pair_crashes``) and its
plan half (``pair_plan``) have tens of thousands each: the explorer interleaves every step of the
approval with every step of the plan, though no operation of one reads what the other writes. This
module picks, in a state, an *ample set*: every enabled operation (crash variants included) of one
record's protocol — an approval slot's ``review``/``retry``/``cancel``/``consume``, or a plan
slot's ``submit`` … ``rollback`` — and the explorer expands only those. It does so only where the
record is *isolated* (:func:`isolated`), which is what makes the reduction sound:

- **C0** — the ample set yields at least one transition that changes the state.
- **C1** (independence, on every path) — while a record is isolated, no operation of another
  record or family changes what the record's operations read (its requester's status and
  incarnation, the clock, its own records and messages) or writes, and the record's operations read
  nothing the others write: the requester cannot be stopped or drained any more (no free shutdown
  slot, no active shutdown aimed at it, no heartbeat lapse), no tick or monitor pass is left (time
  is frozen at the bound), and the record's own requests are settled where another reads them
  (an approval only while ``requested``, its request message delivered to the bus). Isolation
  itself is kept by every other operation, and the record's enabled operations stay the same and
  commute with them — among them the crash between operations (``crash_between``,
  :data:`spec.model._model.HARNESS_CRASH`) and the restart after it, enabled in every live state:
  ``model_tests/test_partial_order.py`` checks exactly this, for every
  transition out of every reachable state of the small configurations, healthy and with every model
  mutant. XPR-2's coupling (a drain or an inspection cancels both an approval and a plan), the
  monitor (every deadline) and a restart's reconciliation are what isolation rules out.
- **C2** (visibility) — every check is a conjunction over records: a state invariant's problems
  about one approval or plan read that record, its execution, its messages and its requester's
  status, incarnation and the clock (all frozen while isolated); a step check's problems read one
  record's change. So a path that runs other operations first and the ample operation later shows
  the same problems, in states the reduced search reaches: the record's problems in the state where
  it was isolated, the others' after the ample operations. Edges and crash points belong to the
  operation that takes them, and every operation taken by the full search from a state is taken by
  the reduced one from a state where it has the same effect (it commutes with the ample ones).
- **C3** (cycle proviso, BFS-compatible) — ample operations only move their record forward (a
  status along its table, a step cursor, a retraction count, a message added or delivered) and an
  ample operation of one record changes no other record, so no cycle of the state graph consists of
  reduced states only: every cycle passes a fully expanded state, and no operation is postponed
  forever. This needs no knowledge of the visited set, so breadth-first order does not matter.

Deadlocks are kept too (C0 and C1: an isolated record's operations stay enabled until taken).
The liveness check is not an invariant of states: with ``liveness`` on, the reduction is off.
Symmetry (members and tasks renamed) and dead data (final jobs and tasks erased) commute with
the choice: it reads slots, which are not renamed, and no job or task.

Time: a tick changes what every record's operations read (a deadline is set from the clock, a
review or a start is allowed up to its deadline) and the monitor pass writes every record, so a
record is isolated only once both are over — at the clock bound, or at once with 0 ticks. Where
deadlines become events of their own records (issue 18 item 1), a record's deadline event belongs
to its own operations and this condition can shrink to the events of other records.

Why it stays off under deadline regions (issue 18 items 2 and 5, measured): one tick moves every
live deadline at once, so it is dependent on every live record's operations — from a record's last
region (offset 0) a tick disables its review, consume, decision or start, and from any region a
tick and an operation that creates a request (its deadline is the clock plus the ttl) give other
regions in the two orders. A path of other operations and two ticks therefore reaches an
operation dependent on the record's before the record's own (C1 fails), whatever the requester's
state: an ample set would have to hold the tick, and with it every creating and deadline-reading
operation of every record. Adding the dependents instead of forbidding isolation (a stubborn set)
adds the tick, and with it the operations of every record with a live deadline: the very ones
the set was to leave out. ``bench/por_bound.py`` bounds any reduction of members'
steps from above (unsound: no C1 over future states): on ``standard`` without crashes, jobs and
shutdown it saves 2.3× (37,252 → 16,109 states), with crashes 2.2× (120,778 → 55,139).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._state import State

if TYPE_CHECKING:
    from ._model import Action, Model, Operation

APPROVAL_OPS = frozenset({"approval.review", "approval.retry", "approval.cancel", "approval.consume"})
PLAN_OPS = frozenset(
    {
        "plan.submit",
        "plan.decide",
        "plan.retract",
        "plan.deliver_decision",
        "plan.withdraw",
        "plan.start",
        "plan.step",
        "plan.complete",
        "plan.fail",
        "plan.rollback",
    }
)
"""The operations of one record's protocol, keyed by its slot (``args["slot"]``)."""

_ACTIVE = frozenset({"", "requested", "draining", "timed_out"})
_APPROVAL_GUARD_MUTANTS = frozenset(
    {
        # they let a requested approval be consumed, or a retry write, or a cancel read more
        "consume_without_digest_check",
        "consume_after_deadline",
        "consume_by_other_member",
        "approval_grants_capability",
        "consume_ignores_profile_version",
        "drain_cancels_others_requests",  # another member's drain ends the approval
        "cancel_after_consume",
        "retry_new_message_id",
        "draining_member_consumes",
        "review_after_deadline",
    }
)


def component(action: Action) -> tuple[str, int] | None:
    """The record whose protocol ``action`` belongs to: ("approval", slot), ("plan", slot) or None."""
    if action.name in APPROVAL_OPS:
        return ("approval", int(dict(action.args)["slot"]))
    if action.name in PLAN_OPS:
        return ("plan", int(dict(action.args)["slot"]))
    return None


def requester_settled(model: Model, s: State, r: int) -> bool:
    """Member ``r``'s status and incarnation can no longer change: running with no shutdown that
    could drain it and no lapse, or retired."""
    member = s.members[r]
    if member.status == "retired":
        return True
    if member.status != "running" or model.config.lapses:
        return False
    return all(sd.status != "" and (sd.target != r or sd.status not in _ACTIVE) for sd in s.shutdowns)


def time_frozen(model: Model, s: State) -> bool:
    """No tick and no monitor pass is left, and the liveness check is off: records may be isolated.
    Under deadline regions (``max_ticks`` None, ``spec.model._time``) a tick is never ruled out, so
    time is never frozen and this reduction stays off."""
    bound = model.config.max_ticks
    if bound is None:
        return False
    return not (model.config.liveness or s.crashed or not s.monitor_done or s.clock < bound)


def isolated(model: Model, s: State, kind: str, slot: int) -> bool:
    """No operation outside the record's own protocol can read or change what its operations do."""
    if not time_frozen(model, s):
        return False
    if kind == "plan":
        plan = s.plans[slot]
        return plan.status != "" and requester_settled(model, s, plan.requester)
    approval = s.approvals[slot]
    if approval.status != "requested" or model.mutant in _APPROVAL_GUARD_MUTANTS:
        return False
    message = ("approval_request", slot, 0)
    delivered = any(m.key == message and m.copy == 0 for m in s.bus)
    return delivered and requester_settled(model, s, approval.requester)


def _effective(s: State, operation: Operation) -> bool:
    """The operation completes without breaking a table and changes the state."""
    from .._tables import IllegalTransition

    state = s
    try:
        for _, apply in operation[1]:
            state = apply(state)
    except IllegalTransition:
        return False
    return state != s


def ample(model: Model, s: State, operations: list[Operation]) -> Iterator[Operation] | None:
    """The operations of the isolated record with the fewest enabled ones, or None (expand all)."""
    if not time_frozen(model, s):
        return None
    best = smallest_isolated(
        operations, lambda kind, slot: isolated(model, s, kind, slot), lambda op: _effective(s, op)
    )
    return None if best is None else iter(best)


def smallest_isolated(
    operations: list[Any], is_isolated: Callable[[str, int], bool], effective: Callable[[Any], bool]
) -> list[Any] | None:
    """The ample set's choice, for the model's states and for plain tuples alike: the operations of
    the isolated record (``is_isolated(kind, slot)``) with the fewest enabled ones, at least one of
    them ``effective``, and fewer than all; the first such record in slot order; None if none."""
    groups: dict[tuple[str, int], list[Any]] = {}
    for operation in operations:
        key = component(operation[0])
        if key is not None:
            groups.setdefault(key, []).append(operation)
    best: list[Any] | None = None
    for (kind, slot), group in sorted(groups.items()):
        if len(group) == len(operations) or (best is not None and len(group) >= len(best)):
            continue
        if is_isolated(kind, slot) and any(effective(op) for op in group):
            best = group
    return best


__all__ = [
    "APPROVAL_OPS",
    "PLAN_OPS",
    "ample",
    "component",
    "isolated",
    "requester_settled",
    "smallest_isolated",
    "time_frozen",
]
