"""Each named write step of the model writes what its name says (DESIGN rule 3; SHD-5, SHD-3, APR-8).

A write step's name (``spec.model._ops.OPERATIONS``) is what the reference's crash points, the
model tests and the counterexamples call it; its order is the protocol's write order (e.g. SHD-5:
the request ``completed``, then the member ``stopped``). Within one operation the model's steps run
together unless a crash falls between two, and reconciliation repairs every prefix, so two steps
swapped under their old names change no verdict of the explorer (an outside review's plant P26:
``shutdown.finish`` writing the member under the name ``record``, caught by nothing). This test
ties each name to the state it may change: on every reachable state of small configurations,
every step of every enabled operation is applied in turn and changes only the fields its name
allows.
"""

from __future__ import annotations

import dataclasses

import pytest

from spec.explore import _search
from spec.model import Model, load_config
from spec.model._ops import OPERATIONS, WRITE_STEPS
from spec.model._state import State

_FIELDS = tuple(f.name for f in dataclasses.fields(State))

_BY_NAME: dict[str, frozenset[str]] = {
    "member": frozenset({"members"}),
    "task": frozenset({"tasks"}),
    "job": frozenset({"jobs"}),
    "jobs": frozenset({"jobs"}),
    "outbox": frozenset({"outbox"}),
    "entry": frozenset({"outbox"}),
    "message": frozenset({"bus"}),
    "clock": frozenset({"clock", "monitor_done"}),
    "profile": frozenset({"members", "profile_changes"}),
    "cancel_requests": frozenset({"approvals", "plans"}),  # XPR-2: the member's open requests
    "requests": frozenset({"approvals", "plans"}),
    "call": frozenset({"executions"}),
    "outcome": frozenset({"executions"}),
    # the monitor's one pass ends what is past its deadline, its messages and notices (SHD-6, APR-4)
    "records": frozenset({"approvals", "plans", "runs", "shutdowns", "bus", "outbox", "monitor_done"}),
}
_RECORD = {"approval": "approvals", "plan": "plans", "shutdown": "shutdowns", "member": "shutdowns"}
_EXECUTION = {"approval": "executions", "plan": "runs"}
_EXCEPTIONS = {
    # the member's ``released`` mark (the reference's ``released`` event in the task's history,
    # seen from the member) is written with the task: Member.released, a ghost of the snapshot
    "shutdown.release_task/task": frozenset({"members"}),
    # the Lead's inspection completes the request and owes its shutdown_ack in one write (SHD-7)
    "member.inspect/shutdown": frozenset({"outbox"}),
}
_UNREACHED = {
    "restart/reconcile": "a crashed state is restarted at once, never stored: reconciliation may write anything",
}
CONFIGS = (
    "approval_drain",
    "plan_drain",
    "restarts",
    "pair_lapses",
    "plan",
    "monitor",
    "tiny",
    "plan_lost",
    "shutdown",
)
"""``shutdown`` for SHD-9's unit deadline (``task.suspend``, ``task.resume``): no other has it."""


def allowed(step: str) -> frozenset[str]:
    """The state fields the step named ``step`` may change."""
    operation, _, name = step.partition("/")
    family = operation.partition(".")[0]
    fields = _BY_NAME.get(name, frozenset())
    if name == "record":
        fields = frozenset({_RECORD[family]})
    elif name == "execution":
        fields = frozenset({_EXECUTION[family]})
    elif name == "shutdown":
        fields = frozenset({"shutdowns"})
    return fields | _EXCEPTIONS.get(step, frozenset())


def in_order(operation: str, steps: list[str]) -> bool:
    """``steps`` are written in the order ``OPERATIONS`` gives ``operation``'s (the protocol's write
    order, e.g. SHD-5's record before member), each at most once; a step may be left out (a
    write with nothing to write is not yielded); ``approval.retry`` re-runs the request's message."""
    names = [f"{operation}/{n}" for n in OPERATIONS[operation]] or ["approval.request/message"]
    positions = [names.index(step) if step in names else -1 for step in steps]
    return -1 not in positions and positions == sorted(set(positions))


def test_every_step_name_allows_something() -> None:
    for step in WRITE_STEPS:
        assert step in _UNREACHED or allowed(step), f"{step}: its name says nothing it may write"


@pytest.mark.clause("SHD-5", "SHD-3", "APR-8", "REC-2")
def test_each_write_step_changes_only_what_its_name_says() -> None:
    seen: set[str] = set()
    wrong: dict[str, set[str]] = {}
    disorder: set[str] = set()
    for name in CONFIGS:
        model = Model(load_config(name))
        for s in _search(model).states:
            for action, steps in model.operations(s):
                if not in_order(action.name, [step for step, _ in steps]):
                    disorder.add(f"{action.name}: {[step for step, _ in steps]}")
                x = s
                for step, write in steps:
                    y = write(x)
                    if not isinstance(y, State):
                        break
                    seen.add(step)
                    changed = {f for f in _FIELDS if getattr(x, f) != getattr(y, f)}
                    if changed - allowed(step):
                        wrong.setdefault(step, set()).update(changed - allowed(step))
                    x = y
    assert not wrong, f"steps writing what their names do not say: {wrong}"
    assert not disorder, f"operations whose writes are not in OPERATIONS' order: {sorted(disorder)}"
    assert seen == set(WRITE_STEPS) - set(_UNREACHED), sorted(set(WRITE_STEPS) ^ seen)


def test_a_swapped_pair_of_writes_is_found() -> None:
    """The checks themselves, on ``shutdown.finish``'s first two writes swapped: under each
    other's names, each writes what the other's name says (refused by :func:`allowed`); under
    their own names, they are out of order (the reviewer's P26, refused by :func:`in_order`)."""
    assert "members" not in allowed("shutdown.finish/record")
    assert "shutdowns" not in allowed("shutdown.finish/member")
    written = ["shutdown.finish/record", "shutdown.finish/member", "shutdown.finish/outbox"]
    assert in_order("shutdown.finish", written) and in_order("shutdown.finish", written[1:])
    assert not in_order("shutdown.finish", [written[1], written[0], written[2]])
    assert not in_order("shutdown.finish", [written[0], written[0]])
    assert not in_order("shutdown.finish", ["shutdown.release_task/task"])
