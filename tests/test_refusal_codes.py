"""The refusal codes of the conformance suite (``conformance/_refusals.py``) against the model's
guards: on every state of the pinned configurations that offer the refused operations (and the first
states of the random programs' own configurations), a call has expected codes exactly when the
model does not offer it, and every code is one of the driver protocol's.

Clause: APR-5, APR-9, MEM-1, TSK-1, SHD-7, SHD-9, PLN-2, PLN-3, PLN-5, XPR-1, XPR-2 (the guards
whose codes the table names).
"""

from __future__ import annotations

from collections import Counter, deque

import pytest

from conformance._random import CONFIGS
from conformance._refusals import CLAUSES, GUARDS, candidates, expected_codes, failing
from conformance._schema_src import ERROR_CODES
from spec.model import Config, Model, load_config

PINNED = (
    "tiny", "pair", "plan", "shutdown", "fencing", "pair_lapses", "restarts", "approval_lost", "approval_fencing",
    "plan_fencing", "approval_plan",
)  # fmt: skip
"""Between them they offer and refuse every operation of ``GUARDS`` (the test below checks it)."""
ALONE: Counter[tuple[str, str]] = Counter()
"""(operation, guard) → how many refused calls that guard alone refused, over the walks (a guard of
the protocol's: the only one of the protocol's that failed, whatever the model's bounds did)."""
NAMES: dict[str, list[str]] = {}
"""Operation → its guards' names, in order."""
PREFIX = 4000
"""How many states of each random-program configuration are walked (breadth first): theirs are too
large to walk whole, and their first states already hold every refusal the programs meet early."""


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
                fails = failing(model, state, action)
                if (action in ops) == bool(fails) or codes != frozenset().union(*(c for _, c in fails)):
                    wrong.append(f"{config.name}: {action} offered={action in ops} codes={sorted(codes)} in {state}")
                every |= codes
                NAMES[action.name] = [name for name, _, _ in GUARDS[action.name](model, state, dict(action.args))]
                protocol = [guard for guard, codes in fails if codes]  # the model's bounds aside
                if len(protocol) == 1 or (not protocol and len(fails) == 1):
                    ALONE[action.name, (protocol or [fails[0][0]])[0]] += 1
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
    assert set(CLAUSES) == set(GUARDS)
    for name in GUARDS:
        assert NAMES[name] == guard_names(name) and set(CLAUSES[name]) == set(NAMES[name]), name
        assert len(set(NAMES[name])) == len(NAMES[name]), f"{name}: two guards of one name"
        lonely = [guard for guard in NAMES[name] if not ALONE[name, guard]]
        assert not lonely, f"{name}: guards {lonely} never refuse a call alone on {PINNED}"
    # and every code it names is one the driver protocol has (the reply schema enumerates them)
    assert codes and codes <= set(ERROR_CODES), sorted(codes - set(ERROR_CODES))


@pytest.mark.clause("APR-5", "MEM-1", "PLN-2")
@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_the_random_programs_configurations_agree_with_the_table_where_they_start(config: Config) -> None:
    _, refused, wrong, _ = walk(config, PREFIX)
    assert not wrong, "the refusal table and the model's guards disagree:\n" + "\n".join(wrong)
    assert refused


@pytest.mark.clause("APR-5", "APR-9", "MEM-1", "TSK-1", "SHD-7", "SHD-9", "PLN-2", "PLN-3", "PLN-5", "XPR-1")
def test_the_vectors_send_every_guards_refusal_alone() -> None:
    """Every guard of the table refuses a call by itself in some vector (``refuse:<op>|<guard>``
    in a file's ``covers``, and a step that sends it with the guard's codes): an implementation
    that lacks one guard is refused by none of the others there, so it fails that step."""
    from conformance._vectors import load

    covered: set[str] = set()
    sent: set[tuple[str, tuple[str, ...]]] = set()
    for document in load():
        covered |= {
            item.split("|")[0] + "|" + item.split("|")[1] for item in document["covers"] if item.startswith("refuse:")
        }
        for vector in document["vectors"]:
            sent |= {(step["operation"], tuple(step["refused"])) for step in vector["steps"] if "refused" in step}
            assert set(vector.get("refuses", [])) == {s["operation"] for s in vector["steps"] if "refused" in s}
    # every guard of the protocol's (a bound of the model's, with no clause, is never sent)
    wanted = {f"refuse:{name}|{guard}" for name in GUARDS for guard in guard_names(name) if CLAUSES[name][guard]}
    assert len(wanted) > 30 and wanted <= covered, sorted(wanted - covered)
    assert {op for op, _ in sent} == set(GUARDS)


def guard_names(operation: str) -> list[str]:
    """The names of ``operation``'s guards, read off the start of ``everything`` (a team with every
    kind of record slot; each guard is yielded whether or not it fails)."""
    model = Model(load_config("everything"), reduce=False)
    args = {"member": 0, "task": 0, "slot": 0, "changed_arguments": False, "outcome": "pending", "decision": "approved"}
    return [name for name, _, _ in GUARDS[operation](model, model.initial(), args)]
