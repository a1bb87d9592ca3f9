"""The refusal codes of the conformance suite (``conformance/_refusals.py``) against the model's
guards: on every state of the pinned configurations that offer the refused operations (and the first
states of the random programs' own configurations), a call has expected codes exactly when the
model does not offer it, and every code is one of the driver protocol's.

Clause: APR-5, APR-9, MEM-1, TSK-1, SHD-7, SHD-9, PLN-2, PLN-3, PLN-5, XPR-1, XPR-2 (the guards
whose codes the table names).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator

import pytest

from conformance._random import CONFIGS
from conformance._refusals import GUARDS, expected_codes
from conformance._schema_src import ERROR_CODES
from spec.model import Config, Model, load_config
from spec.model._model import Action
from spec.model._state import State

PINNED = (
    "tiny", "pair", "plan", "shutdown", "fencing", "pair_lapses", "restarts", "approval_lost", "approval_fencing",
    "plan_fencing", "approval_plan",
)  # fmt: skip
"""Between them they offer and refuse every operation of ``GUARDS`` (the test below checks it)."""
ALONE: Counter[tuple[str, int]] = Counter()
"""(operation, guard index) → how many refused calls that guard alone refused, over the walks."""
SIZES: dict[str, int] = {}
"""Operation → how many guards it has."""
PREFIX = 4000
"""How many states of each random-program configuration are walked (breadth first): theirs are too
large to walk whole, and their first states already hold every refusal the programs meet early."""


def candidates(s: State) -> Iterator[Action]:
    """Every call of an operation of ``GUARDS`` on records that exist in ``s``."""

    def act(name: str, **args: object) -> Action:
        return Action(name, tuple(sorted(args.items())))

    members, tasks = range(len(s.members)), range(len(s.tasks))
    for m in members:
        yield act("task.suspend", member=m)
        yield act("member.inspect", member=m)
        for t in tasks:
            yield act("task.claim", member=m, task=t)
    for t in tasks:
        yield act("task.resume", task=t)
        for outcome in ("pending", "failed"):
            yield act("task.inspect", task=t, outcome=outcome)
    for slot, ap in enumerate(s.approvals):
        if ap.status:
            yield act("approval.cancel", slot=slot)
            for m in members:
                for changed in (False, True):
                    yield act("approval.consume", slot=slot, member=m, changed_arguments=changed)
    for slot, plan in enumerate(s.plans):
        if plan.status:
            yield act("plan.start", slot=slot)
            for decision in ("approved", "rejected", "needs_revision"):
                yield act("plan.decide", slot=slot, decision=decision)


def walk(config: Config, limit: int | None = None) -> tuple[dict[str, int], dict[str, int], list[str], set[str]]:
    """(offered, refused, mismatches, codes) over the states reached from the start, breadth first:
    how often each operation was offered and refused, and every code a refusal could carry. Also
    counts in :data:`ALONE` each guard that was the one failing guard of a refused call."""
    model = Model(config, reduce=False)
    start = model.initial()
    queue, seen = deque([start]), {start}
    offered: dict[str, int] = {}
    refused: dict[str, int] = {}
    wrong: list[str] = []
    every: set[str] = set()
    while queue:
        state = queue.popleft()
        ops = {action for action, _ in model.operations(state)}
        if not state.crashed:
            for action in candidates(state):
                codes = expected_codes(model, state, action)
                if (action in ops) == bool(codes):
                    wrong.append(f"{config.name}: {action} offered={action in ops} codes={sorted(codes)} in {state}")
                every |= codes
                guards = list(GUARDS[action.name](model, state, dict(action.args)))
                SIZES[action.name] = len(guards)
                failing = [i for i, (fails, _) in enumerate(guards) if fails]
                if len(failing) == 1:
                    ALONE[action.name, failing[0]] += 1
                tally = offered if action in ops else refused
                tally[action.name] = tally.get(action.name, 0) + 1
        if len(wrong) > 5:
            break
        for _, after in model.successors(state):
            if not isinstance(after, Exception) and after not in seen and (limit is None or len(seen) < limit):
                seen.add(after)
                queue.append(after)
    return offered, refused, wrong, every


@pytest.mark.clause("APR-5", "APR-9", "MEM-1", "TSK-1", "SHD-7", "SHD-9", "PLN-2", "PLN-3", "PLN-5", "XPR-1")
def test_a_call_has_refusal_codes_exactly_where_the_model_refuses_it() -> None:
    offered: dict[str, int] = {}
    refused: dict[str, int] = {}
    codes: set[str] = set()
    for config in [load_config(name) for name in PINNED]:
        got, missed, wrong, every = walk(config)
        codes |= every
        assert not wrong, "the refusal table and the model's guards disagree:\n" + "\n".join(wrong)
        for name, n in got.items():
            offered[name] = offered.get(name, 0) + n
        for name, n in missed.items():
            refused[name] = refused.get(name, 0) + n
    # the walk means something: every operation of the table is both offered and refused somewhere
    assert set(offered) == set(refused) == set(GUARDS), (sorted(offered), sorted(refused))
    # every guard is the one reason of some refusal: none is folded into another, none is spurious
    # (a guard that always fails beside another would let its codes stand where they never could alone)
    for name in GUARDS:
        lonely = [i for i in range(SIZES[name]) if not ALONE[name, i]]
        assert not lonely, f"{name}: guards {lonely} never refuse a call alone on {PINNED}"
    # and every code it names is one the driver protocol has (the reply schema enumerates them)
    assert codes and codes <= set(ERROR_CODES), sorted(codes - set(ERROR_CODES))


@pytest.mark.clause("APR-5", "MEM-1", "PLN-2")
@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_the_random_programs_configurations_agree_with_the_table_where_they_start(config: Config) -> None:
    _, refused, wrong, _ = walk(config, PREFIX)
    assert not wrong, "the refusal table and the model's guards disagree:\n" + "\n".join(wrong)
    assert refused
