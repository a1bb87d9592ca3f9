"""The explorer's fast paths compute exactly what the plain code computes.

Clause: INV-1 … INV-12 (every check runs on snapshots; a cached section or a generated ``replace``
that differed from the plain one would check some other state than the model's).
"""

from __future__ import annotations

import dataclasses

import pytest

from model_tests.test_symmetry import _sample
from spec.model import _snapshot, load_config
from spec.model._snapshot import snapshot
from spec.model._state import _RECORDS, Member, State, replace


def _records(state: State) -> list[object]:
    out: list[object] = [state]
    for field in dataclasses.fields(State):
        value = getattr(state, field.name)
        if isinstance(value, tuple):
            out += value
    return out


def test_generated_replace_equals_dataclasses_replace() -> None:
    records = [record for state in _sample("standard", 3000)[::10] for record in _records(state)]
    seen: dict[tuple[type, str], set[object]] = {}
    for record in records:
        for field in dataclasses.fields(record):  # type: ignore[arg-type]
            seen.setdefault((type(record), field.name), set()).add(getattr(record, field.name))
    for record in records[::7]:
        for field in dataclasses.fields(record):  # type: ignore[arg-type]
            for value in seen[type(record), field.name]:
                fast = replace(record, **{field.name: value})
                plain = dataclasses.replace(record, **{field.name: value})  # type: ignore[type-var]
                assert fast == plain and type(fast) is type(plain) and hash(fast) == hash(plain)
        assert replace(record) == record
    classes = {type(record) for record in records}
    assert classes == set(_RECORDS), f"the sample should hold every record class; missing {set(_RECORDS) - classes}"


def test_generated_replace_refuses_an_unknown_field() -> None:
    member = Member()
    with pytest.raises(TypeError):
        replace(member, incarnaton=2)  # misspelt
    assert member == Member()


@pytest.mark.parametrize("name", ["standard", "plan_lost", "shutdown"])
def test_cached_snapshot_sections_equal_fresh_ones(name: str) -> None:
    config = load_config(name)
    states = _sample(name, 1500)
    warm = [snapshot(state, config) for state in states]  # sections shared with earlier states
    for state, cached in zip(states, warm, strict=True):
        _snapshot._SECTIONS.clear()
        assert snapshot(state, config) == cached
