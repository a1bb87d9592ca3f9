"""A compiled validator for the project's own JSON Schemas (2020-12): each schema becomes one
generated Python function that answers valid or not, for the hot paths (every write of the
reference validates its record, STO-1, MSG-2; DESIGN rule 5).

The schemas stay the one source: the functions are generated from them at import. The compiler
knows exactly the keywords our schemas use (:data:`KEYWORDS`) and refuses any other, and any value
of a known keyword it cannot mirror (an ``enum`` of numbers, a schema-valued
``additionalProperties``, another dialect), with :class:`SchemaCompileError` naming where — so a
schema change can never silently weaken validation: it fails at import until the compiler learns
the keyword. ``format`` is not among them (no schema of ours uses it).

Every check mirrors ``jsonschema``'s :class:`~jsonschema.Draft202012Validator` exactly: types by
its type checker (``1.0`` is an integer, ``True`` is not; ``object`` is a ``dict``), ``minimum``
and ``exclusiveMinimum`` by its comparisons (so ``nan`` passes both, as there), ``pattern`` by
``re.search``, lengths by ``len``, ``enum``/``const`` by its equality (only strings and null
allowed as members), ``uniqueItems`` by a set of strings, else by ``jsonschema`` itself. The
verdict only: the message of an invalid document is still ``jsonschema``'s (see
:func:`spec.schemas._first_error`). ``model_tests/test_compiled_validator.py`` proves both agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator

from ._build import DIALECT, Schema

Check = Callable[[object], bool]

KEYWORDS: frozenset[str] = frozenset(
    {
        "$schema",
        "type",
        "enum",
        "const",
        "anyOf",
        "properties",
        "required",
        "additionalProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "exclusiveMinimum",
        "items",
        "minItems",
        "uniqueItems",
    }
)
"""Every keyword the compiler knows: exactly those of ``spec/schemas`` today."""

_STRING, _NUMBER, _ARRAY, _OBJECT = (
    ("minLength", "maxLength", "pattern"),
    ("minimum", "exclusiveMinimum"),
    ("items", "minItems", "uniqueItems"),
    ("required", "properties", "additionalProperties"),
)
_TYPE_TESTS = {
    "string": "isinstance({v}, str)",
    "integer": "(type({v}) is int or _is_integer({v}))",
    "number": "(type({v}) is float or type({v}) is int or _is_number({v}))",
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "boolean": "isinstance({v}, bool)",
    "null": "{v} is None",
}
_GUARDS = {  # the keyword family → (the types that need no guard, the guard's test)
    _STRING: ({"string"}, "isinstance({v}, str)"),
    _NUMBER: ({"integer", "number"}, _TYPE_TESTS["number"]),
    _ARRAY: ({"array"}, "isinstance({v}, list)"),
    _OBJECT: ({"object"}, "isinstance({v}, dict)"),
}
_CHECKER = Draft202012Validator.TYPE_CHECKER
_UNIQUE = Draft202012Validator({"uniqueItems": True})


class SchemaCompileError(ValueError):
    """A schema the compiled validator cannot mirror exactly (raised at import, never at run time)."""

    def __init__(self, where: str, reason: str) -> None:
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason} — teach spec/schemas/_compiled.py this keyword, and its test")


def _unique(items: list[Any]) -> bool:
    if all(type(item) is str for item in items):
        return len(set(items)) == len(items)
    return bool(_UNIQUE.is_valid(items))


def _is_integer(value: object) -> bool:
    return bool(_CHECKER.is_type(value, "integer"))


def _is_number(value: object) -> bool:
    return bool(_CHECKER.is_type(value, "number"))


class _Compiler:
    """Generates the source of one function per schema (and per ``anyOf`` branch)."""

    def __init__(self, drop: frozenset[str]) -> None:
        self.drop = drop
        self.functions: list[str] = []
        self.names: dict[str, object] = {"_is_integer": _is_integer, "_is_number": _is_number, "_unique": _unique}
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def constant(self, value: object) -> str:
        name = self.fresh("_c")
        self.names[name] = value
        return name

    def function(self, schema: object, where: str) -> str:
        name, body = self.fresh("_check"), ["    v = value"]
        self.emit(schema, "v", body, 1, where)
        self.functions.append(f"def {name}(value):\n" + "\n".join([*body, "    return True"]))
        return name

    def emit(self, schema: object, v: str, out: list[str], depth: int, where: str) -> None:
        """Append to ``out`` the statements that ``return False`` unless ``v`` matches ``schema``."""
        if not isinstance(schema, dict):
            raise SchemaCompileError(where, f"a schema must be an object, not {schema!r}")
        unknown = sorted(set(schema) - KEYWORDS)
        if unknown:
            known = ", ".join(sorted(KEYWORDS))
            raise SchemaCompileError(where, f"keyword {unknown[0]!r} is not known (known: {known})")
        if schema.get("$schema", DIALECT) != DIALECT:
            raise SchemaCompileError(where, f"dialect {schema['$schema']!r}; only {DIALECT}")
        live = {k: value for k, value in schema.items() if k not in self.drop and k != "$schema"}
        types = self.types(live.get("type"), where)
        pad = "    " * depth
        if "type" in live:
            test = " or ".join(_TYPE_TESTS[t].format(v=v) for t in types)
            out.append(f"{pad}if not ({test}):\n{pad}    return False")
        for keyword in ("const", "enum"):
            if keyword in live:
                members = [live[keyword]] if keyword == "const" else live[keyword]
                out.append(f"{pad}if not ({self.membership(members, v, f'{where}.{keyword}')}):\n{pad}    return False")
        if "anyOf" in live:
            out.append(f"{pad}if not ({self.any_of(live['anyOf'], v, where)}):\n{pad}    return False")
        for family, (unguarded, guard) in _GUARDS.items():
            lines: list[str] = []
            inner = depth if types and set(types) <= unguarded else depth + 1
            self.family(family, live, v, lines, inner, where)
            if lines and inner > depth:
                out.append(f"{pad}if {guard.format(v=v)}:")
            out.extend(lines)

    @staticmethod
    def types(value: object, where: str) -> list[str]:
        if value is None:
            return []
        types = value if isinstance(value, list) else [value]
        if not types:
            raise SchemaCompileError(f"{where}.type", "an empty list of types")
        for t in types:
            if t not in _TYPE_TESTS:
                raise SchemaCompileError(f"{where}.type", f"type {t!r} is not known")
        return types  # type: ignore[return-value]

    def membership(self, members: object, v: str, where: str) -> str:
        """``enum``/``const`` as jsonschema's equality decides it, for strings and null only."""
        if not isinstance(members, list) or not all(m is None or isinstance(m, str) for m in members):
            raise SchemaCompileError(where, f"only strings and null can be compared exactly, not {members!r}")
        strings = self.constant(frozenset(m for m in members if m is not None))
        test = f"(isinstance({v}, str) and {v} in {strings})"
        return f"{v} is None or {test}" if None in members else test

    def any_of(self, branches: object, v: str, where: str) -> str:
        if not isinstance(branches, list) or not branches:
            raise SchemaCompileError(f"{where}.anyOf", "must be a non-empty list of schemas")
        tests = []
        for k, branch in enumerate(branches):
            if branch == {"type": "null"} and "type" not in self.drop:
                tests.append(f"{v} is None")
            else:
                tests.append(f"{self.function(branch, f'{where}.anyOf[{k}]')}({v})")
        return " or ".join(tests)

    def family(
        self, family: tuple[str, ...], live: dict[str, Any], v: str, out: list[str], depth: int, where: str
    ) -> None:
        pad = "    " * depth
        for keyword in family:
            if keyword in live:
                self.keyword(keyword, live[keyword], live, v, out, pad, f"{where}.{keyword}")

    def keyword(
        self, keyword: str, value: Any, live: dict[str, Any], v: str, out: list[str], pad: str, where: str
    ) -> None:
        fail = f"\n{pad}    return False"
        if keyword in ("minLength", "maxLength", "minItems"):
            _count(value, where)
            out.append(f"{pad}if len({v}) {'<' if keyword.startswith('min') else '>'} {value}:{fail}")
        elif keyword == "pattern":
            if not isinstance(value, str):
                raise SchemaCompileError(where, f"a pattern must be a string, not {value!r}")
            out.append(f"{pad}if {self.constant(re.compile(value))}.search({v}) is None:{fail}")
        elif keyword in ("minimum", "exclusiveMinimum"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise SchemaCompileError(where, f"a bound must be a number, not {value!r}")
            out.append(f"{pad}if {v} {'<' if keyword == 'minimum' else '<='} {self.constant(value)}:{fail}")
        elif keyword == "uniqueItems":
            if not isinstance(value, bool):
                raise SchemaCompileError(where, f"must be true or false, not {value!r}")
            if value:
                out.append(f"{pad}if not _unique({v}):{fail}")
        elif keyword == "items":
            item = self.fresh("i")
            lines: list[str] = []
            self.emit(value, item, lines, len(pad) // 4 + 1, where)
            if lines:
                out.extend([f"{pad}for {item} in {v}:", *lines])
        else:
            self.object_keyword(keyword, value, live, v, out, pad, where)

    def object_keyword(
        self, keyword: str, value: Any, live: dict[str, Any], v: str, out: list[str], pad: str, where: str
    ) -> None:
        fail = f"\n{pad}    return False"
        if keyword == "required":
            if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                raise SchemaCompileError(where, f"must be a list of field names, not {value!r}")
            if value:
                out.append(f"{pad}if not {v}.keys() >= {self.constant(frozenset(value))}:{fail}")
        elif keyword == "additionalProperties":
            if value is not False and value is not True:
                raise SchemaCompileError(where, f"only true or false, not a schema ({value!r})")
            if value is False:
                known = self.constant(frozenset(live.get("properties", {})))
                out.append(f"{pad}if not {v}.keys() <= {known}:{fail}")
        else:  # properties
            if not isinstance(value, dict):
                raise SchemaCompileError(where, f"must map field names to schemas, not {value!r}")
            required = set(live.get("required", ())) if "required" in live else set()
            depth = len(pad) // 4
            for name, subschema in value.items():
                field = self.fresh("f")
                lines: list[str] = []
                self.emit(subschema, field, lines, depth + (0 if name in required else 1), f"{where}.{name}")
                if not lines:
                    continue
                key = self.constant(name)
                if name not in required:
                    out.append(f"{pad}if {key} in {v}:")
                out.extend([f"{pad}{'    ' if name not in required else ''}{field} = {v}[{key}]", *lines])


def _count(value: object, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaCompileError(where, f"must be a whole number of at least 0, not {value!r}")


class LazyChecks(dict[str, Check]):
    """The checks of ``schemas`` (name → function answering whether a document is valid): every
    schema's source is generated here, so a schema the compiler cannot mirror raises
    :class:`SchemaCompileError` at once, but each is compiled by Python on its first use (about
    40 ms for all of them, kept off every process's start). ``drop`` leaves keywords out (the
    differential test's own mutants and the reference mutant ``validator_drops_pattern``)."""

    def __init__(self, schemas: Mapping[str, Schema], drop: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.sources: dict[str, tuple[str, str, dict[str, object]]] = {}
        for name, schema in schemas.items():
            compiler = _Compiler(drop)
            entry = compiler.function(schema, name)
            self.sources[name] = (entry, "\n\n".join(compiler.functions), compiler.names)

    def __missing__(self, name: str) -> Check:
        entry, text, names = self.sources[name]
        namespace = dict(names)
        exec(compile(text, f"<spec.schemas._compiled: {name}>", "exec"), namespace)
        check: Check = namespace[entry]  # type: ignore[assignment]
        self[name] = check
        return check


def compile_schemas(schemas: Mapping[str, Schema], drop: frozenset[str] = frozenset()) -> dict[str, Check]:
    """Every check of ``schemas``, compiled now (see :class:`LazyChecks`). Raises
    :class:`SchemaCompileError` for a schema it cannot mirror."""
    checks = LazyChecks(schemas, drop)
    return {name: checks[name] for name in schemas}


def source(schema: Schema) -> str:
    """The generated source of ``schema``'s check (for reading and debugging)."""
    compiler = _Compiler(frozenset())
    compiler.function(schema, "schema")
    return "\n\n".join(compiler.functions)


__all__ = ["KEYWORDS", "Check", "LazyChecks", "SchemaCompileError", "compile_schemas", "source"]
