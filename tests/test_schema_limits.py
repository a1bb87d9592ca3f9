"""The schemas' limits, restated from the protocol and held against every message and record.

``tests/test_compiled_validator.py`` shows that the compiled validator decides as ``jsonschema``
does on the schemas as written; nothing there says the schemas are right. A schema that admits
what the protocol refuses — a ttl of 0 for a plan (``minimum`` written for ``exclusiveMinimum``),
an incarnation 0, a digest of 63 digits — was caught only by the generated reference pages going
stale. Here each limit is written down once, by field name, from the protocol (MSG-1, MSG-4, APR-2,
XPR-1, PLN-1, STO-1), and every field of that name in the example of every message type and record
kind must refuse the values past the limit and take those at it.

Clause: MSG-2, STO-1, MSG-1, PLN-1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import spec
from spec.schemas import MESSAGE_TYPES, RECORDS
from spec.schemas._examples import example_message, example_record
from tests._schema_docs import replace

LIMITS: dict[str, tuple[list[Any], list[Any]]] = {
    # field name: (values the protocol refuses, values it takes)
    "ttl_seconds": ([0, -1, -0.5], [1e-6, 1, 60]),  # MSG-1: a message (and a plan) lives a while
    "incarnation": ([0, -1, 1.5], [1, 7]),  # XPR-1: incarnations count from 1
    "requester_incarnation": ([0, -1], [1]),
    "target_incarnation": ([0, -1], [1]),
    "owner_incarnation": ([0], [1]),
    "revision": ([0], [1, 2]),  # PLN-1: a plan's first revision is 1
    "profile_version": ([0], [1]),  # XPR-4: a profile's versions count from 1
    "version": ([-1, 0.5], [0, 3]),  # STO-1: a record's version counts from 0 (a profile's from 1: below)
    "attempts": ([-1], [0, 1]),
    "sequence": ([-1], [0, 1]),  # AUD-1: the log counts from 0
    "timestamp": ([-1e-9, -1], [0, 1.5]),
    "created_at": ([-1], [0]),
    "deadline": ([-1], [0, 1e9]),
    "at": ([-1], [0]),
    "arguments_digest": (["0" * 63, "0" * 65, "A" * 64, "g" * 64], ["0" * 64, "0123456789abcdef" * 4]),  # APR-2
    "hash": (["0" * 63, "F" * 64], ["f" * 64]),  # AUD-1
    "previous_hash": (["0" * 65], ["0" * 64]),
    "message_id": (["", "x" * 201], ["x", "x" * 200]),  # MSG-4: an id, never empty
    "correlation_id": ([""], ["x"]),
    "protocol_id": ([""], ["x"]),
    "sender": ([""], ["m0"]),
    "target": ([""], ["m0"]),
    "steps": ([[]], []),  # PLN-1: a plan has at least one step
    "estimated_cost": ([-1, ""], [0, 2.5, "2.5 quota"]),
}
"""Field name → (refused, taken). Taken values are checked only where the example's value is of
the same kind (a number for a number), refused ones everywhere the field occurs."""

OWN_LIMITS = {("capability_profile", "version"): ([0], [1])}
"""Where a field of a common name has another limit: a profile's version counts from 1 (XPR-4)."""


def _fields(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*path, key), value
            yield from _fields(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _fields(value, (*path, i))


def _documents() -> list[tuple[str, str, dict[str, Any]]]:
    docs = [("message", name, example_message(name)) for name in MESSAGE_TYPES]
    return docs + [("record", kind, example_record(kind)) for kind in RECORDS]


def _valid(where: str, name: str, doc: Any) -> bool:
    try:
        spec.validate_message(doc) if where == "message" else spec.validate_record(name, doc)
    except spec.SchemaError:
        return False
    return True


CASES = [
    (where, name, path)
    for where, name, doc in _documents()
    for path, value in _fields(doc)
    if path[-1] in LIMITS and value is not None and not (where == "message" and path[:2] == ("body", "message"))
]


@pytest.mark.clause("MSG-2", "STO-1", "MSG-1", "PLN-1")
@pytest.mark.parametrize(("where", "name", "path"), CASES, ids=[f"{n}:{'.'.join(map(str, p))}" for _, n, p in CASES])
def test_every_field_refuses_what_the_protocol_refuses_and_takes_what_it_takes(
    where: str, name: str, path: tuple[Any, ...]
) -> None:
    doc = dict(next(d for w, n, d in _documents() if (w, n) == (where, name)))
    assert _valid(where, name, doc), "the example itself"
    refused, taken = OWN_LIMITS.get((name, path[-1]), LIMITS[path[-1]])
    current = dict(_fields(doc))[path]
    for value in refused:
        assert not _valid(where, name, replace(doc, path, value)), f"{name} takes {path[-1]} = {value!r}"
    for value in taken:
        if isinstance(value, str) == isinstance(current, str) and not isinstance(current, list):
            assert _valid(where, name, replace(doc, path, value)), f"{name} refuses {path[-1]} = {value!r}"


def test_every_limit_applies_somewhere() -> None:
    """A limit no example field carries holds nothing to it: the table follows the schemas' fields."""
    seen = {path[-1] for _, _, path in CASES}
    assert set(LIMITS) <= seen, sorted(set(LIMITS) - seen)


UNIQUE = {
    "waited_job_ids": "SHD-3, AUD-2: a drain waits for each job once",
    "flagged_task_ids": "SHD-10: a lost member's claims, each flagged once",
    "tools": "XPR-4: a profile names each tool once",
    "executed_step_ids": "PLN-4, PLN-7: each approved step runs at most once (a repeat is a deviation)",
}
"""Arrays the protocol says hold each item once, by field name (restated here, not read from the
schemas: an outside review dropped ``uniqueItems`` from ``waited_job_ids`` and no test failed)."""

UNIQUE_CASES = [
    (where, name, path)
    for where, name, doc in _documents()
    for path, value in _fields(doc)
    if path[-1] in UNIQUE and isinstance(value, list)
]


@pytest.mark.clause("MSG-2", "STO-1", "SHD-3", "SHD-10", "XPR-4", "PLN-4")
@pytest.mark.parametrize(
    ("where", "name", "path"), UNIQUE_CASES, ids=[f"{n}:{'.'.join(map(str, p))}" for _, n, p in UNIQUE_CASES]
)
def test_every_array_of_distinct_items_refuses_a_repeat(where: str, name: str, path: tuple[Any, ...]) -> None:
    doc = dict(next(d for w, n, d in _documents() if (w, n) == (where, name)))
    assert _valid(where, name, replace(doc, path, ["a1", "b2"])), f"{name} refuses two distinct {path[-1]}"
    assert not _valid(where, name, replace(doc, path, ["a1", "a1"])), f"{name} takes a repeated {path[-1]}"


def test_every_unique_field_applies_somewhere() -> None:
    assert {path[-1] for _, _, path in UNIQUE_CASES} == set(UNIQUE)
