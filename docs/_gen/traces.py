"""Real traces of the model for the course, the sequence diagrams and the trace viewer.

Two kinds, both computed from the model at build time, never written by hand:

- a **happy path**: the shortest run without crashes of a configuration to a goal (the approval
  consumed and its call done, the plan completed, the shutdown completed), found breadth-first
  over :class:`spec.model.Model`;
- a **counterexample**: the shortest trace by which the explorer catches a model mutant
  (:func:`spec.explore.explore` with ``stop_on`` the invariant named for the mutant).

Both come out in the explorer's trace format (``teamproto-trace/1``, as ``--trace-out`` writes),
and :func:`steps` turns one into what the viewer and the sequence diagram show at each step.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from typing import Any

from spec.explore import explore, trace_json
from spec.model import MUTANTS, Model, load_config, snapshot
from spec.schemas import RECORD_KEYS, record_id
from spec.schemas._records import RECORD_MACHINES

Snapshot = dict[str, Any]


def _has(kind: str, status: str) -> Callable[[Snapshot], bool]:
    return lambda snap: any(record.get("status") == status for record in snap[kind])


def _drained(snap: Snapshot) -> bool:
    released = any(task["checkpoint"] is not None and task["status"] == "pending" for task in snap["task"])
    return released and _has("shutdown_request", "completed")(snap)


HAPPY: dict[str, tuple[str, str, Callable[[Snapshot], bool]]] = {
    "approval_happy": (
        "tiny",
        "an approval requested, approved and consumed; its call runs once",
        _has("tool_execution", "succeeded"),
    ),
    "plan_happy": (
        "plan",
        "a plan drafted, approved, run step by step and completed",
        _has("plan_execution", "completed"),
    ),
    "shutdown_happy": ("shutdown", "a member with a task drains at a safe point, releases it and stops", _drained),
}

COUNTEREXAMPLES = (
    "cancel_after_consume",
    "consume_without_digest_check",
    "approval_grants_capability",
    "recovery_repeats_call",
    "retry_new_message_id",
    "claim_ignores_shutdown_request",
    "release_before_jobs_settle",
    "stale_incarnation_accepted",
    "execute_plan_twice",
    "timeout_approves_plan",
    "reconcile_skips_redelivery",
)


def shortest_path(config_name: str, goal: Callable[[Snapshot], bool], max_states: int = 200_000) -> list[Any]:
    """The shortest crash-free run of a configuration to a state whose snapshot meets ``goal``:
    a list of ``(action, state)``, the first action ``None`` (breadth-first over the model)."""
    config = load_config(config_name)
    model = Model(config)
    start = model.initial()
    parents: dict[Any, tuple[Any, Any]] = {start: (None, None)}
    queue = deque([start])
    while queue and len(parents) < max_states:
        state = queue.popleft()
        if goal(snapshot(state, config)):
            return _path(parents, state)
        for action, successor in model.successors(state):
            if action.crash_after or isinstance(successor, Exception) or successor in parents:
                continue
            parents[successor] = (state, action)
            queue.append(successor)
    raise RuntimeError(f"no state of {config_name} within {max_states} states meets the goal")


def happy_path(name: str) -> dict[str, Any]:
    """The shortest crash-free trace of ``HAPPY[name]``'s configuration that reaches its goal."""
    config_name, title, goal = HAPPY[name]
    return _trace(name, title, load_config(config_name), shortest_path(config_name, goal))


def _path(parents: dict[Any, tuple[Any, Any]], state: Any) -> list[tuple[Any, Any]]:
    path = []
    while state is not None:
        parent, action = parents[state]
        path.append((action, state))
        state = parent
    return path[::-1]


def _trace(name: str, title: str, config: Any, path: list[tuple[Any, Any]]) -> dict[str, Any]:
    return {
        "format": "teamproto-trace/1",
        "name": name,
        "title": title,
        "config": config.name,
        "steps": [
            {"action": None if a is None else a.to_json(), "snapshot": copy.deepcopy(snapshot(s, config))}
            for a, s in path
        ],
    }


def counterexample(mutant: str) -> dict[str, Any]:
    """The explorer's shortest trace that catches model mutant ``mutant``, in ``--trace-out`` form."""
    info = MUTANTS[mutant]
    config = load_config(info.config)
    report = explore(Model(config, mutant), stop_on=info.caught_by)
    first = next(iter(report.violations.values()))
    violation = next((v for v in report.violations.values() if v.clause == info.caught_by), first)
    trace = trace_json(violation, config)
    title = f"mutant {mutant}: {info.description} ({info.breaks}); caught by {info.caught_by}"
    return {"name": mutant, "title": title, "mutant": mutant, **trace}


def all_traces() -> dict[str, dict[str, Any]]:
    """Every trace the docs show, by name."""
    traces = {name: happy_path(name) for name in HAPPY}
    traces.update({name: counterexample(name) for name in COUNTEREXAMPLES})
    return traces


def action_text(action: dict[str, Any] | None) -> str:
    """``approval.review(decision='approved')``, or ``initial state``; a crash is marked ⚡."""
    if action is None:
        return "initial state"
    args = ", ".join(f"{k}={v!r}" for k, v in action["args"].items())
    text = f"{action['action']}({args})"
    return f"{text} ⚡ crash after {action['crash_after']}" if action.get("crash_after") else text


def _records(snap: Snapshot, kind: str) -> dict[str, dict[str, Any]]:
    return {str(record_id(kind, r)): r for r in snap.get(kind, [])}


def changes(before: Snapshot | None, after: Snapshot) -> list[dict[str, Any]]:
    """What one step changed: one entry per record created or changed, with its fields."""
    out: list[dict[str, Any]] = []
    for kind in RECORD_KEYS:
        old = _records(before, kind) if before is not None else {}
        for key, record in _records(after, kind).items():
            previous = old.get(key)
            if previous == record:
                continue
            fields = {f: [None if previous is None else previous.get(f), v] for f, v in record.items()}
            fields = {f: pair for f, pair in fields.items() if pair[0] != pair[1] or previous is None}
            out.append({"kind": kind, "key": key[:8], "created": previous is None, "fields": fields})
    if before is not None and before["clock"] != after["clock"]:
        out.append(
            {"kind": "clock", "key": "", "created": False, "fields": {"clock": [before["clock"], after["clock"]]}}
        )
    return out


def steps(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Per step: the action, what changed, each machine's current states and the edges just taken."""
    out = []
    previous: Snapshot | None = None
    for step in trace["steps"]:
        snap = step["snapshot"]
        current: dict[str, list[str]] = {}
        for kind, machine in RECORD_MACHINES.items():
            current[machine] = sorted({r["status"] for r in snap.get(kind, [])})
        taken = []
        for change in changes(previous, snap):
            changed_machine = RECORD_MACHINES.get(change["kind"])
            status = change["fields"].get("status")
            if changed_machine and status and status[0] != status[1]:
                taken.append([changed_machine, status[0], status[1]])
        out.append(
            {
                "action": action_text(step["action"]),
                "crash": bool(step["action"] and step["action"].get("crash_after")),
                "changes": changes(previous, snap),
                "current": current,
                "taken": taken,
            }
        )
        previous = snap
    return out
