"""Argument binding as properties over arbitrary JSON arguments (APR-2, APR-5).

Clause: APR-2, APR-5.
The tools are the reference's own, with their real normalisers (``normalize_paths`` with and
without defaults). The oracle is not the normaliser: it is the list of equivalences the tool's
normalisation documents, written out here on its own —
- a named path argument may be written any way ``posixpath.normpath`` maps to the same path;
- an argument the tool has a default for may be left out when the caller would give the default.
Everything else must change the digest: any value, any key, any list order, any type (``1``,
``1.0``, ``true``, ``"1"`` are four arguments), at any depth. And a default never overrides a value
the caller gave.
"""

from __future__ import annotations

import math
import posixpath
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import reference as r
from tests.conftest import Team

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
PATHS = st.lists(st.sampled_from(["srv", "app", ".", "..", "", "a b"]), min_size=1, max_size=5).map("/".join)


@dataclass(frozen=True)
class Binding:
    """A tool and the equivalences its normalisation documents."""

    name: str
    tool: r.Tool
    path_fields: tuple[str, ...]
    defaults: dict[str, Any]


BINDINGS = [
    Binding("deploy", r.RecordingTool().tool(), ("path",), {}),
    Binding(
        "copy",
        r.Tool(
            "copy", lambda key, args: {}, r.normalize_paths("src", "dest", defaults={"mode": "safe", "force": False})
        ),
        ("src", "dest"),
        {"mode": "safe", "force": False},
    ),
]


def arguments(binding: Binding) -> st.SearchStrategy[dict[str, Any]]:
    """Arbitrary JSON arguments, with the tool's path fields present as paths most of the time."""
    fields = {name: PATHS for name in binding.path_fields}
    rest = st.dictionaries(st.text(max_size=4), JSON, max_size=5)
    return st.builds(lambda more, paths: {**more, **paths}, rest, st.fixed_dictionaries({}, optional=fields))


def same(a: Any, b: Any) -> bool:
    """Equal as JSON texts are: types kept apart (``1`` is not ``1.0`` nor ``true``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def documented(binding: Binding, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments under the documented equivalences alone (the test's oracle)."""
    result = {k: v for k, v in arguments.items() if not (k in binding.defaults and same(v, binding.defaults[k]))}
    for name in binding.path_fields:
        if isinstance(result.get(name), str):
            result[name] = posixpath.normpath(result[name])
    return result


@pytest.mark.clause("APR-2")
@pytest.mark.parametrize("binding", BINDINGS, ids=lambda b: b.name)
@given(data=st.data())
def test_equal_after_normalisation_iff_equal_digest(binding: Binding, data: st.DataObject) -> None:
    """Two argument sets have one digest exactly when the documented equivalences make them
    equal: drawn independently, and drawn as a rewriting of the first by those equivalences."""
    a = data.draw(arguments(binding))
    b = data.draw(arguments(binding)) if data.draw(st.booleans()) else data.draw(rewritten(binding, a))
    assert (binding.tool.digest(a) == binding.tool.digest(b)) == same(documented(binding, a), documented(binding, b))


def rewritten(binding: Binding, a: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``a`` written another way the tool documents as the same: keys in another order, paths
    spelled differently, defaults given explicitly."""

    def build(order: list[str], spell: list[bool], give: list[bool]) -> dict[str, Any]:
        result = {k: a[k] for k in order}
        for name, twist in zip(binding.path_fields, spell, strict=False):
            if twist and isinstance(result.get(name), str):
                result[name] = "./" + result[name] + "/x/.."
        for (name, value), add in zip(binding.defaults.items(), give, strict=False):
            if add and name not in result:
                result[name] = value
        return result

    flags = st.lists(st.booleans(), min_size=2, max_size=2)
    return st.builds(build, st.permutations(list(a)), flags, flags)


# ---- every change that is not documented changes the digest ----------------------------------

QUARTET = (1, 1.0, True, "1")


def changes(value: Any) -> list[Any]:
    """Values that differ from ``value`` in value or type, and that no normalisation documents."""
    options: list[Any] = [[value], {"v": value}]
    if isinstance(value, str):
        options += [value + "x", "./" + value, value.upper() if value.upper() != value else value + "X"]
    elif isinstance(value, bool):
        options += [not value, int(value), float(value), str(value).lower()]
    elif isinstance(value, int | float):
        options += [value + 1, str(value), float(value) if isinstance(value, int) else value + 0.5]
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            options.append(int(value))
    elif value is None:
        options += [0, "", False, "null"]
    elif isinstance(value, list):
        options += [value[::-1], [*value, None], value[:-1]] if value else [[None]]
    elif isinstance(value, dict):
        options += [{**value, "k2": 0}] + ([{k + "x": v for k, v in value.items()}] if value else [])
    return [option for option in options if not same(option, value)]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a JSON value (dict keys and list indices), the root's children first."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += [(*prefix, key), *paths(item, (*prefix, key))]
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += [(*prefix, index), *paths(item, (*prefix, index))]
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    return [replaced(item, rest, new) if index == head else item for index, item in enumerate(value)]


def renamed(value: dict[str, Any], key: str, new_key: str) -> dict[str, Any]:
    return {new_key if k == key else k: v for k, v in value.items()}


def is_documented(binding: Binding, before: dict[str, Any], after: dict[str, Any]) -> bool:
    return same(documented(binding, before), documented(binding, after))


@pytest.mark.clause("APR-2", "APR-5")
@pytest.mark.parametrize("binding", BINDINGS, ids=lambda b: b.name)
@given(data=st.data())
def test_any_undocumented_change_changes_the_digest(binding: Binding, data: st.DataObject) -> None:
    """One change anywhere — a value, a type, a key, a list's order — at any depth changes the
    digest, unless it is one the tool documents (a path spelled another way, a default given)."""
    a = data.draw(arguments(binding))
    positions = paths(a)
    assume(positions)
    path = data.draw(st.sampled_from(positions))
    old = a
    for step in path:
        old = old[step]
    new = data.draw(st.sampled_from(changes(old)))
    b = replaced(a, path, new)
    if len(path) == 1 and data.draw(st.booleans()):
        b = renamed(a, path[0], path[0] + "_") if path[0] + "_" not in a else b
    if is_documented(binding, a, b):
        assert binding.tool.digest(a) == binding.tool.digest(b)
    else:
        assert binding.tool.digest(a) != binding.tool.digest(b), (path, old, new)


@pytest.mark.clause("APR-2")
@pytest.mark.parametrize("binding", BINDINGS, ids=lambda b: b.name)
def test_one_one_point_oh_true_and_the_string_one_are_four_arguments(binding: Binding) -> None:
    """At the top, in a list and in a nested object: four types, four digests."""
    for wrap in (lambda v: v, lambda v: [0, v], lambda v: {"deep": {"er": v}}):
        digests = {binding.tool.digest({"n": wrap(value)}) for value in QUARTET}
        assert len(digests) == len(QUARTET)
    assert binding.tool.digest({"xs": [1, 2]}) != binding.tool.digest({"xs": [2, 1]})


@pytest.mark.clause("APR-2")
@given(data=st.data())
def test_defaults_never_override_what_the_caller_gave(data: st.DataObject) -> None:
    """A default fills only what is missing: the caller's value stays, and it binds."""
    binding = BINDINGS[1]
    a = data.draw(arguments(binding))
    name = data.draw(st.sampled_from(sorted(binding.defaults)))
    given_value = data.draw(JSON.filter(lambda v, n=name: not same(v, binding.defaults[n])))
    caller = {**a, name: given_value}
    assert same(binding.tool.normalize(caller)[name], given_value)
    without = {k: v for k, v in caller.items() if k != name}
    assert binding.tool.digest(caller) != binding.tool.digest(without)
    assert binding.tool.digest({**without, name: binding.defaults[name]}) == binding.tool.digest(without)


@pytest.mark.clause("APR-2", "APR-5")
def test_the_harness_binds_the_call_to_the_normalised_arguments(team: Team) -> None:
    """Through the protocol: a documented rewriting consumes the approval; a type change of one
    nested value is refused as changed arguments."""
    args = {"path": "srv/app", "replicas": {"min": 1, "max": 3}}
    pid = team.approved(args=args)
    refused = {"path": "srv/app", "replicas": {"min": 1.0, "max": 3}}
    with pytest.raises(r.ArgumentsChanged):
        team.harness.approvals.call(team.ctx(), "deploy", refused, approval_id=pid)
    same_call = {"replicas": {"max": 3, "min": 1}, "path": "./srv/x/../app"}
    assert team.harness.approvals.call(team.ctx(), "deploy", same_call, approval_id=pid)["status"] == "done"


@pytest.mark.clause("APR-2")
@pytest.mark.parametrize("binding", BINDINGS, ids=lambda b: b.name)
@given(name=st.text(max_size=6), value=PATHS, depth=st.integers(0, 2))
def test_only_the_documented_fields_are_paths(binding: Binding, name: str, value: str, depth: int) -> None:
    """A string that is not a named path argument is bound as written, even when it looks like
    a path: ``./srv/app`` and ``srv/app`` are two arguments there, at any depth."""
    assume(name not in binding.path_fields)
    spelled = "./" + value + "/x/.."
    assume(posixpath.normpath(spelled) == posixpath.normpath(value) and spelled != value)

    def nest(text: str) -> Any:
        return {"in": text} if depth == 1 else [text] if depth == 2 else text

    assert binding.tool.digest({name: nest(value)}) != binding.tool.digest({name: nest(spelled)})
