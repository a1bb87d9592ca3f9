"""Time as the protocol needs it, not as a clock: deadline regions (``"max_ticks": null``).

A configuration with a bounded clock (``max_ticks`` a number) lets at most that many ticks pass;
every state carries the absolute clock, so the same situation reached after 0, 1, 2 or 3 ticks
is 4 states, and a record's deadline is one more absolute number. Nothing in the protocol reads
an absolute time, though: every guard, write step, reconciliation and check compares a time with
the clock or with another time, and only in a few ways. A configuration with ``"max_ticks":
null`` lets time run unbounded and keys the explorer's visited set by *deadline regions* (the
region abstraction of timed automata, on the model's integer clock):

- **What is kept.** For each record whose deadline can still be read — a live request (an
  approval requested or approved, a plan pending or approved, a plan execution running or
  failed, a shutdown requested, draining or timed out), or a final one whose request message is
  still pending (the monitor expires that message once the deadline passed, MSG-5) — the offset
  ``deadline - clock``, cut off below at :data:`FLOOR` = -2. The comparisons made are
  ``clock <= deadline`` (APR-4, APR-5, PLN-5, SHD-2 guards), ``clock > deadline`` (the monitor,
  REC reconciliation, message expiry), ``clock + 1 > deadline`` (the ``monitor_expires_early``
  mutant), ``deadline < clock - 1`` (INV-12), so offsets of -2 and below answer every one alike,
  and stay so as time passes. Offsets above are at most ``ttl_ticks`` (a deadline is set to
  ``clock + ttl_ticks``), so the regions are finitely many. A consumed approval keeps whether it
  was consumed by its deadline (INV-1 reads ``consumed_at > deadline``, nothing else reads
  ``consumed_at``).
- **What is erased.** The absolute clock (keyed as 0), a final record's deadline when its
  request message is no longer pending, the deadline of a record in a status where nothing reads
  it any more (:data:`UNREAD`: a ``failed`` plan execution — the monitor fails only running ones,
  the rollback has no time guard, reconciliation reads no run's deadline, INV-12 reads only a
  running one's, the deadline step checks cover requests, not runs; a ``timed_out`` shutdown — the monitor acts only on
  requested and draining ones, SHD-2's drain begins only from requested or resumes only from
  draining, INV-12 counts timed_out as settled, the expiry check reads only the step into it —
  in both, unless its request message is still pending, whose expiry reads it), an empty slot's
  or a draft plan's deadline (a draft has none yet: PLN-5's ttl runs from submission; the one
  state that reads it — a plan_request posted by a submit cut off by a crash — is crashed, and
  its only move, the restart, re-pends the plan with a fresh deadline), and a task's claim time
  (unit deadlines, SHD-9, need a bounded clock: each suspension lets the task be claimed again,
  so unbounded time would make the claims unbounded; configurations with unit deadlines keep
  the clock).
- **The tick.** Time is unbounded, but a tick is taken only when it changes something: some
  kept offset is above the floor, or the monitor pass after it would not be idle. Any other tick
  and its idle monitor pass lead back to the same key: a self-loop of the quotient, which adds
  no state, no edge, no crash point and no verdict, and which the liveness check would
  otherwise misread as a cycle that never finishes. Ticks are so finitely many in effect: each
  deadline, once set, makes at most ``ttl_ticks + 2`` of them matter.

**Soundness** (what the abstraction cannot hide). Two states with the same key differ only by
a shift of every time by one constant, by offsets below the floor, and by fields no step and no
check reads again; every comparison the model and the checks make gives the same answer in both,
before and after any step, so they are bisimilar with the same verdict of every state and step
check, and the same enabled operations, machine edges and crash points. The explorer expands one
state of each class (the concrete state it reached first: traces and snapshots keep the real
clock and deadlines), so every violation, edge, crash point and deadlock of the unbounded-time
model is found. **What it adds**: runs with more ticks than a clock bound would allow — every
deadline can pass, in every order the fixed ``ttl_ticks`` allows (the order of two deadlines is
the order in which their records were created, with or without a tick between: that order is
kept, as a relation of offsets). A clock search at any bound reaches a subset of these classes;
from a large enough bound on, the same ones (``model_tests/test_time.py`` checks both on every
small configuration, healthy and with every model mutant). **What it changes**: the liveness
goal no longer counts a request as settled "at the clock bound" — there is none; a request that
only time would end is ended by the ticks that stay possible, so ``every_request_can_finish``
and ``no_deadlock`` are judged on what time really does. **What it does not cover**: unit
deadlines (SHD-9) — configurations that model them keep a bounded clock — and deadlines of
different lengths (every request's ttl is ``ttl_ticks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from .._tables import final_states
from ..safety import DRAIN_BEGUN
from ._state import NONE, Message, State, replace

if TYPE_CHECKING:
    from ._model import Model


class _Deadlined(Protocol):
    @property
    def status(self) -> str: ...
    @property
    def deadline(self) -> int: ...


R = TypeVar("R", bound=_Deadlined)

FLOOR = -2
"""Offsets ``deadline - clock`` at or below it are one region: every comparison answers alike."""

_FINAL = {
    "approvals": frozenset(final_states("operation_approval")),
    "plans": frozenset(final_states("plan_approval")),
    "runs": frozenset(final_states("plan_execution")),
    "shutdowns": frozenset(final_states("shutdown_request")),
}
UNREAD = {
    "approvals": frozenset[str](),
    "plans": frozenset[str](),
    "runs": frozenset({"failed"}),
    "shutdowns": frozenset({"timed_out"}),
}
"""Statuses, not final, in which no guard, write step, reconciliation or check reads the record's
deadline any more: erased from the key as a final record's (``model_tests/test_unread_deadlines.py``
checks it state by state, and that the search finds what it finds without it)."""
_REQUEST = {"approvals": "approval_request", "plans": "plan_request", "shutdowns": "shutdown_request"}


def _pending_requests(bus: tuple[Message, ...]) -> set[tuple[str, int]]:
    return {(m.key[0], m.key[1]) for m in bus if m.status == "pending" and m.copy == 0}


def _offset(deadline: int, clock: int) -> int:
    """A kept deadline's region as a positive number: 1 at or below :data:`FLOOR`, one more per
    tick above it. Positive, because the fingerprint modes key states by ``hash`` and CPython's
    ``hash(-1) == hash(-2)``: offsets -1 and -2 would be one fingerprint (found by
    ``model_tests/test_count_states.py``: ``bench/count_states.py`` lost 72 of ``plan``'s states)."""
    return max(deadline - clock, FLOOR) - FLOOR + 1


def _kept(kind: str, status: str, slot: int, pending: set[tuple[str, int]]) -> bool:
    """Whether a record's deadline can still be read (see the module docstring)."""
    if status in ("", "draft"):
        return False
    if status not in _FINAL[kind] and status not in UNREAD[kind]:
        return True
    request = _REQUEST.get(kind)
    if kind == "shutdowns" and status in DRAIN_BEGUN:
        return False  # its pending message never expires any more (``_ops.drain_began``)
    return request is not None and (request, slot) in pending


def relative(s: State) -> State:
    """``s`` keyed by deadline regions: clock 0, kept deadlines as cut-off offsets, the rest 0."""
    clock, pending = s.clock, _pending_requests(s.bus)
    approvals = s.approvals
    if approvals:
        approvals = tuple(
            replace(
                a,
                deadline=_offset(a.deadline, clock) if _kept("approvals", a.status, i, pending) else 0,
                consumed_at=NONE if a.consumed_at == NONE else int(a.consumed_at > a.deadline),
            )
            for i, a in enumerate(approvals)
        )
    tasks = s.tasks if all(t.claimed_at == 0 for t in s.tasks) else tuple(replace(t, claimed_at=0) for t in s.tasks)
    return replace(
        s,
        clock=0,
        tasks=tasks,
        approvals=approvals,
        plans=_deadlines("plans", s.plans, clock, pending),
        runs=_deadlines("runs", s.runs, clock, pending),
        shutdowns=_deadlines("shutdowns", s.shutdowns, clock, pending),
    )


def _deadlines(kind: str, records: tuple[R, ...], clock: int, pending: set[tuple[str, int]]) -> tuple[R, ...]:
    """``records`` with each deadline as its region (kept) or 0 (erased); the same tuple if unchanged."""
    out = []
    changed = False
    for i, record in enumerate(records):
        deadline = record.deadline
        region = _offset(deadline, clock) if _kept(kind, record.status, i, pending) else 0
        if region != deadline:
            changed = True
            record = replace(record, deadline=region)
        out.append(record)
    return tuple(out) if changed else records


def _open_offsets(s: State) -> bool:
    """Some kept deadline is still above the floor: a tick moves it to another region."""
    clock, pending = s.clock, _pending_requests(s.bus)
    for kind in ("approvals", "plans", "runs", "shutdowns"):
        for i, record in enumerate(getattr(s, kind)):
            if record.deadline - clock > FLOOR and _kept(kind, record.status, i, pending):
                return True
    return False


def tick_matters(model: Model, s: State) -> bool:
    """Under deadline regions: a tick from ``s`` changes the key (see the module docstring)."""
    from ._ops import monitor_is_idle

    if _open_offsets(s):
        return True
    return not monitor_is_idle(model, replace(s, clock=s.clock + 1, monitor_done=False))


__all__ = ["FLOOR", "UNREAD", "relative", "tick_matters"]
