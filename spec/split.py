"""Two protocols explored apart: a ``split`` configuration is checked as its approval part and its
plan part, each with the state both share (issue 18 items 2 and 5; XPR-2).

``standard`` interleaves every step of its approval with every step of its plan, though no
operation of one reads what the other writes: the product, not either protocol, is what makes it
too large to explore (its approval part alone has 870,361 states under deadline regions, its plan
part alone a few million; together some 10^8). A configuration with ``"split": true`` is
therefore explored as two configurations (:func:`parts`): the same one without plans (the approval
part) and without approvals (the plan part), each with ``crash_between`` on. Their findings
together are the findings of the whole configuration with ``crash_between`` on.

**The state in three parts.** *g*, what both read: members, tasks, jobs, shutdowns, the clock,
``monitor_done``, ``crashed``, and the bus's and outbox's entries of the other kinds; *a*: the
approvals, their tool executions, and the ``approval_*`` messages; *p*: the plans, their runs, and
the ``plan_*`` messages and outbox entries. :func:`project` keeps g and one of a, p.

**Why the parts are the whole** (each premise is checked transition by transition by
``model_tests/test_split.py`` on the healthy model: on a whole small state space, the first states
of larger ones, and one state of each shape — statuses, passed deadlines, requesters — of two
larger ones searched to the end; the verdict of the parts against the whole's with every model
mutant):

1. *Each operation is of one part.* An approval operation reads g and a and writes a; a plan
   operation reads g and p and writes p (``spec/model/_ops.py``: neither family reads the
   other's records or messages, nor writes g). An operation of g — a task's, a job's, a member's,
   a shutdown's, a send, the tick, the monitor's pass, the restart's reconciliation — reads g, and
   writes g and, where XPR-2 couples them (a drain or an inspection cancels the member's open
   requests; the monitor and reconciliation end what is past its deadline), a as a function of g
   and a, and p as a function of g and p. So every transition of the whole, projected on g and
   one part, is a transition of that part or leaves the projection as it was.
2. *A crash is seen by the other part as a crash between operations.* A crash in the middle of a
   plan operation leaves, in the approval part's view, the harness dead with nothing of a or g
   half written — and the restart then reconciles a and g as it would after any crash. The model's
   crashes are between write steps (``Model.successors``: a crash before an operation's first
   effective write is not one), so that view exists only if the parts may also crash between two
   operations: ``crash_between`` (:data:`spec.model._model.HARNESS_CRASH`). It is a real
   behaviour — a harness can die at any moment — so the parts check the protocol under at least
   every crash the whole configuration has: the split checks the whole configuration with
   ``crash_between``, which contains every run of the configuration as written. (On the pinned
   configurations it adds 0 to 9 states: reconciling a consistent state mostly changes nothing.)
3. *Time.* Under deadline regions a tick is taken when it changes some region (``_time``), which
   is a disjunction over records: a tick of the whole that changes no region of a part leaves
   that part's key as it was, once its (then idle) monitor pass is taken — which nothing can
   disturb before the next tick (the idle-monitor reduction's argument in ``Model.operations``).
   The tests compare the parts' keys (:func:`key`) for that reason.
4. *Every check is of one part.* Each problem a state check or a step check reports reads g and
   the records of one approval or one plan (``spec/model/_por.py``, C2): the problems of a state of
   the whole are the problems of its two projections together, and those of a step the problems
   of the two projected steps.

So every run of the whole projects on each part as a run of that part (1–3), and its problems
are problems of the parts' states and steps (4): no violation is hidden. The converse holds too —
a run of a part is a run of the whole in which the other protocol never starts — so every
violation the parts report is one of the whole, with its trace. Edges and crash points of the
whole are those of the parts together.

**Deadlocks** are judged per part: a state of the whole with no operation enabled projects on
two states of the parts with no operation enabled (the tick too: it matters to the whole only if
it matters to a part), so no deadlock of the whole is missed. A part's deadlock need not be one of
the whole (the other protocol may still move), so a reported ``no_deadlock`` of a part is a lead,
to be confirmed on the whole; ``standard``'s parts have none.

**Liveness** (REC-2, INV-12) is judged per part too, each part with ``crash_between`` as above.
The goal (``Model.is_goal``: every request final, no task left suspended or to inspect) is a
conjunction over records: a state of the whole is a goal state exactly when both its projections
are goal states of their parts.

- *Every request can finish.* From a state of the whole, its approval projection reaches a goal
  state of its part along some path; each move of that path is the projection of a move of the
  whole from the state the whole is in (the converse above), so the whole follows it, its plan
  projection moving only by g's operations. Then the plan projection — a reachable state of its
  part — reaches its part's goal the same way, and the approval records stay final: no operation
  leaves a final status (the machines' tables), and a new approval is made only by an approval
  operation. So the whole reaches a goal state, and a state of a part that cannot is a state of
  the whole that cannot (the part's run is the whole's, the other protocol never started).
- *No cycle avoids the goal.* Every move of the whole changes one part's key at least (the key of
  the whole is the two keys together; an idle monitor pass, which the parts' keys count as taken,
  cannot be undone without a tick, which changes a region of one part), so a cycle of the whole
  projects on a closed walk with a move in one part at least — a cycle, or a step back to itself,
  of that part's graph. A part is therefore held to have **no cycle at all** without a crash
  (``Config.part``; ``spec.explore.report_liveness``): then the whole has none, and no cycle avoids
  its goal. A part's cycle that avoids the goal is the whole's livelock; one through a goal state
  is reported as what the parts cannot decide (explore the whole). Measured: no pinned
  configuration's graph has a cycle without a crash.
- *A deadline is its record's last instant* (``spec.explore.LastInstants``): existential over the
  states of a kind of record live at its deadline before and after the monitor's pass; each such
  state of the whole projects on one of the part that holds that kind, and each state of a part is
  one of the whole, so the whole and its parts see the same kinds before and after.

``model_tests/test_liveness_reduced.py`` and ``test_split.py`` compare the parts' liveness findings
with the whole's, healthy and with every model mutant (two of which only a liveness check finds).

**What it does not cover.** The state count of the whole: the manifest pins each part's.
"""

from __future__ import annotations

import dataclasses

from .model._config import Config
from .model._state import State
from .model._time import relative

PARTS = ("approvals", "plans")
"""The parts of a split configuration, by the records each keeps."""

_DROPPED = {"approvals": "plan_", "plans": "approval_"}  # the message kinds of the other part


def parts(config: Config) -> list[Config]:
    """The two configurations ``config`` is explored as: without plans, and without approvals,
    each with ``crash_between`` on, named ``<name>/approvals`` and ``<name>/plans``."""
    assert config.split, f"{config.name} is not a split configuration"
    whole = dataclasses.replace(config, split=False, crash_between=True)
    return [
        dataclasses.replace(whole, name=f"{config.name}/approvals", plans=0, part="approvals"),
        dataclasses.replace(whole, name=f"{config.name}/plans", approvals=0, part="plans"),
    ]


def project(s: State, part: str) -> State:
    """State ``s`` of the whole as the ``part`` sees it: g, and that part's records and messages."""
    drop = _DROPPED[part]
    bus = tuple(m for m in s.bus if not m.key[0].startswith(drop))
    outbox = tuple(o for o in s.outbox if not o.key[0].startswith(drop))
    if part == "approvals":
        return dataclasses.replace(s, plans=(), runs=(), bus=bus, outbox=outbox)
    return dataclasses.replace(s, approvals=(), executions=(), bus=bus, outbox=outbox)


def key(s: State, regions: bool, idle: bool) -> State:
    """What tells two states of a part apart for the premises' tests: under deadline regions the
    region key (:func:`spec.model._time.relative`), and a monitor pass that would change nothing
    (``idle``) counted as taken."""
    if idle and not s.monitor_done:
        s = dataclasses.replace(s, monitor_done=True)
    return relative(s) if regions else s
