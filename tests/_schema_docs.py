"""Documents for the compiled validator's differential test: valid ones built from a schema's
shape (one canonical, and a Hypothesis strategy), every node of a document with its schema, and
each node's edge values — the values just inside and just outside every keyword's bound, wrong
types, bad enum members and patterns, a missing required field, an unknown one, a repeated item.

Only the keywords of ``spec.schemas._compiled.KEYWORDS`` are understood; a schema with another
fails loudly here too (``KeyError``/``AssertionError``), never quietly."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]

JUNK: tuple[Any, ...] = (None, True, False, 0, -1, 1, 1.0, 2.5, math.nan, math.inf, "", "x", [], ["x"], {}, {"x": 1})
"""Values of every JSON type (and the ones a Python checker may confuse: bools and 1.0, nan)."""
EXTRA = "zz_unknown_field"
_PATTERN_EXAMPLES = ("0" * 63 + "a",)
"""A string matching each pattern our schemas use (a test fails naming a pattern with none here)."""


def types(schema: dict[str, Any]) -> list[str]:
    value = schema.get("type", [])
    return value if isinstance(value, list) else [value]


def _pattern_example(pattern: str) -> str:
    found = [s for s in _PATTERN_EXAMPLES if re.search(pattern, s)]
    assert found, f"no example string for pattern {pattern!r}: add one to _PATTERN_EXAMPLES"
    return found[0]


def valid(schema: dict[str, Any]) -> Any:
    """One valid document of ``schema``, every optional field present."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return valid(schema["anyOf"][0])
    kind = types(schema)[0]
    if kind == "string":
        text = _pattern_example(schema["pattern"]) if "pattern" in schema else "x" * max(schema.get("minLength", 0), 1)
        return text
    if kind in ("integer", "number"):
        return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
    if kind == "array":
        return [valid(schema["items"])] * max(schema.get("minItems", 0), 1) if "items" in schema else []
    if kind == "object":
        return {name: valid(sub) for name, sub in schema.get("properties", {}).items()}
    return {"boolean": True, "null": None}[kind]


def valid_strategy(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid documents of ``schema``, drawn by Hypothesis (lengths and numbers near their bounds)."""
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([valid_strategy(branch) for branch in schema["anyOf"]])
    return st.one_of([_typed(schema, kind) for kind in types(schema)])


def _typed(schema: dict[str, Any], kind: str) -> st.SearchStrategy[Any]:
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength", 10_000)
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: low <= len(s) <= high)
        return st.one_of(st.text(min_size=low, max_size=min(high, low + 12)), st.just("é" * high))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        exclusive = "exclusiveMinimum" in schema
        ints = st.integers(min_value=None if low is None else math.floor(low) + (1 if exclusive else 0))
        if kind == "integer":
            return st.one_of(ints, ints.map(float))
        return st.one_of(ints, st.floats(min_value=low, exclude_min=exclusive and low is not None, allow_nan=False))
    if kind == "array":
        items = valid_strategy(schema["items"]) if "items" in schema else st.nothing()
        unique = schema.get("uniqueItems", False)
        assert not unique or types(schema["items"]) == ["string"], "uniqueItems is generated for strings only"
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=low + 3, unique=unique)
    if kind == "object":
        if "properties" not in schema:
            return st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.text(max_size=4)), max_size=3)
        required = set(schema.get("required", ()))
        fields = {name: valid_strategy(sub) for name, sub in schema["properties"].items()}
        return st.fixed_dictionaries(
            {k: v for k, v in fields.items() if k in required},
            optional={k: v for k, v in fields.items() if k not in required},
        )
    return st.booleans() if kind == "boolean" else st.none()


def nodes(schema: dict[str, Any], value: Any, path: Path = ()) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every node of ``value`` with the schema that governs it (into the first ``anyOf`` branch
    whose shape it has)."""
    yield path, schema
    branches = schema.get("anyOf", [schema])
    for branch in branches:
        if isinstance(value, dict) and "properties" in branch:
            for name, sub in branch["properties"].items():
                if name in value:
                    yield from nodes(sub, value[name], (*path, name))
            return
        if isinstance(value, list) and "items" in branch:
            for index, item in enumerate(value):
                yield from nodes(branch["items"], item, (*path, index))
            return


def edges(schema: dict[str, Any], value: Any) -> list[Any]:
    """Replacements for a node of ``schema`` whose value is ``value``: each keyword's edges."""
    out: list[Any] = list(JUNK)
    for branch in schema.get("anyOf", []):
        out += edges(branch, value)
    for member in [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]:
        out += [member, f"{member}_not", str(member).upper()]
    if "minLength" in schema or "maxLength" in schema or "pattern" in schema:
        out += _string_edges(schema)
    for bound in ("minimum", "exclusiveMinimum"):
        if bound in schema:
            b = schema[bound]
            out += [b, b - 1, b - 0.5, b + 0.5, b + 1, float(b), float(b + 1), b + 1e-9, True, False]
    if "items" in schema or "minItems" in schema or "uniqueItems" in schema:
        item = valid(schema["items"]) if "items" in schema else 1
        low = schema.get("minItems", 0)
        out += [[], [item] * low, [item] * (low + 1), [item, item], [item, *JUNK[:5]], [[item]]]
        out += [[copy.deepcopy(item), other] for other in edges(schema["items"], item)[: len(JUNK)]]
    if isinstance(value, dict):
        out += [{k: v for k, v in value.items() if k != name} for name in value]
        out += [{**value, EXTRA: 1}, {**value, 1: 1}, dict(value)]
    return out


def _string_edges(schema: dict[str, Any]) -> list[Any]:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    out: list[Any] = ["x" * low, "x" * max(low - 1, 0), "é" * low]
    if high is not None:
        out += ["x" * high, "x" * (high + 1), "é" * high, "é" * (high + 1)]
    if "pattern" in schema:
        good = _pattern_example(schema["pattern"])
        out += [good, good[:-1], good + "0", good[:-1] + "g", good.upper(), good + "\n", "\n" + good, " " + good]
    return out


def replace(doc: Any, path: Path, value: Any) -> Any:
    """A copy of ``doc`` with the node at ``path`` replaced by ``value``."""
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def at(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def sweep(schema: dict[str, Any], doc: Any) -> Iterator[Any]:
    """``doc`` and every document one edge value away from it, at every node."""
    yield doc
    for path, sub in list(nodes(schema, doc)):
        for value in edges(sub, at(doc, path)):
            yield replace(doc, path, value)
