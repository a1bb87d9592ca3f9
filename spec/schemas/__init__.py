"""JSON Schemas of every message and record, defined once, validated on send and on receive.

Clause: MSG-1, MSG-2, MSG-7, PLN-1, PLN-2, XPR-5, DESIGN rule 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from ..errors import ProtocolError
from ._build import DIALECT, REASON_CODES, Schema
from ._compiled import KEYWORDS, Check, LazyChecks, SchemaCompileError
from ._messages import ARTICLE_TYPES, BODIES, DEFAULTS, MESSAGE_TYPES, REPLY_TYPES, article_schema, message_schema
from ._records import RECORD_KEYS, RECORD_MACHINES, RECORDS, snapshot_schema


class SchemaError(ProtocolError):
    """A document that does not match its schema (definite: it changed nothing).

    ``subject`` is the message type or record kind, ``path`` a JSON path such as
    ``$.body.decision``, ``reason`` what was wrong there.
    """

    def __init__(self, subject: str, path: str, reason: str, record: str | None = None) -> None:
        self.subject, self.path, self.reason, self.record = subject, path, reason, record
        where = f" (record {record})" if record else ""
        super().__init__(f"{subject}{where}: invalid at {path}: {reason}")


def _with_dialect(schema: Schema) -> Schema:
    return {"$schema": DIALECT, **schema}


MESSAGE_LAYOUTS: Mapping[str, Mapping[str, Schema]] = {
    t: {"body": message_schema(t), **({"article": article_schema(t)} if t in ARTICLE_TYPES else {})}
    for t in MESSAGE_TYPES
}
"""Message type → its layouts: ``body`` (the project's: every field, MSG-1) and, for the types of
the handshake source article, ``article`` (the body's fields at the top level, ``DEFAULTS`` optional)."""


def _message_schema(message_type: str) -> Schema:
    layouts = MESSAGE_LAYOUTS[message_type]
    if len(layouts) == 1:
        return _with_dialect(layouts["body"])
    return _with_dialect({"anyOf": list(layouts.values())})


MESSAGE_SCHEMAS: Mapping[str, Schema] = {t: _message_schema(t) for t in MESSAGE_TYPES}
RECORD_SCHEMAS: Mapping[str, Schema] = {k: _with_dialect(s) for k, s in RECORDS.items()}
SNAPSHOT_SCHEMA: Schema = _with_dialect(snapshot_schema())

VALIDATED_SCHEMAS: Mapping[str, Schema] = {
    **{f"message:{t}:{lay}": _with_dialect(s) for t, layouts in MESSAGE_LAYOUTS.items() for lay, s in layouts.items()},
    **{f"record:{k}": s for k, s in RECORD_SCHEMAS.items()},
    "snapshot": SNAPSHOT_SCHEMA,
}
"""Every schema a document is validated against, by name (``message:<type>:<layout>``,
``record:<kind>``, ``snapshot``): the compiled checks' (:mod:`spec.schemas._compiled`) and
``jsonschema``'s, which words the error of a document the check refuses."""

_VALIDATORS = {name: Draft202012Validator(s) for name, s in VALIDATED_SCHEMAS.items()}
_COMPILED: dict[frozenset[str], LazyChecks] = {frozenset(): LazyChecks(VALIDATED_SCHEMAS)}
_CHECKS: dict[str, Check] = _COMPILED[frozenset()]
"""The checks in use: compiled (each on its first use) unless :func:`use_checks` said otherwise."""


def use_checks(*, drop: frozenset[str] = frozenset(), compiled: bool = True) -> None:
    """Switch the checks every validation uses: compiled (the default), leaving out the keywords
    in ``drop`` (the reference mutant ``validator_drops_pattern``), or ``jsonschema``'s own
    ``is_valid`` (``compiled=False``: the figure before, in ``bench/approval_roundtrip.py``).
    Each set of compiled checks is built once."""
    global _CHECKS
    if not compiled:
        _CHECKS = {name: validator.is_valid for name, validator in _VALIDATORS.items()}
        return
    if drop not in _COMPILED:
        _COMPILED[drop] = LazyChecks(VALIDATED_SCHEMAS, drop)
    _CHECKS = _COMPILED[drop]


def check(name: str, doc: object) -> bool:
    """Whether ``doc`` is valid against the schema ``name`` of :data:`VALIDATED_SCHEMAS` (the
    check in use: compiled unless :func:`use_checks` said otherwise)."""
    return _CHECKS[name](doc)


def _json_path(parts: Iterable[Any]) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _first_error(name: str, doc: object) -> tuple[str, str] | None:
    """None if ``doc`` passes the check of schema ``name``; else ``jsonschema``'s deepest, then
    first, error as (path, reason); a missing field is named in the path."""
    if _CHECKS[name](doc):
        return None
    errors = sorted(_VALIDATORS[name].iter_errors(doc), key=lambda e: (-len(e.absolute_path), str(e.absolute_path)))
    if not errors:  # the two disagree (tests/test_compiled_validator.py says they never do): refuse
        return "$", f"refused by the compiled check of {name} but not by jsonschema (report this)"
    error: ValidationError = errors[0]
    parts = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [f for f in error.validator_value if f not in error.instance]
        return _json_path([*parts, missing[0]]), "required field is missing"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(f for f in error.instance if f not in allowed)
        return _json_path([*parts, extra[0]]), "unknown field"
    return _json_path(parts), error.message


def _article_layout(message_type: str, doc: Mapping[str, Any]) -> bool:
    """Without ``body``: the article's layout if a body field is at the top level or a field of
    the project's envelope (MSG-1) is left out; else the project's, missing its ``body``."""
    lifted = any(f in doc for f in BODIES[message_type]["properties"])
    return lifted or any(f not in doc for f in MESSAGE_LAYOUTS[message_type]["body"]["required"] if f != "body")


def validate_message(doc: object) -> Mapping[str, Any]:
    """Validate a message (MSG-2) and return it; raise :class:`SchemaError` naming the field.

    A message of a type the source article writes, without ``body``, is checked in the article's
    layout (``MESSAGE_LAYOUTS``: the body's fields at the top level, the fields of ``DEFAULTS``
    optional) unless it has every other field of the project's layout."""
    if not isinstance(doc, Mapping):
        raise SchemaError("message", "$", f"expected an object, got {type(doc).__name__}")
    message_type = doc.get("message_type")
    if not isinstance(message_type, str) or message_type not in MESSAGE_LAYOUTS:
        known = ", ".join(MESSAGE_TYPES)
        raise SchemaError("message", "$.message_type", f"unknown message type {message_type!r}; known: {known}")
    article = "body" not in doc and "article" in MESSAGE_LAYOUTS[message_type] and _article_layout(message_type, doc)
    found = _first_error(f"message:{message_type}:{'article' if article else 'body'}", doc)
    if found:
        raise SchemaError(str(message_type), *found)
    return doc


def record_id(kind: str, doc: Mapping[str, Any]) -> Any:
    """The primary key value of a record (None where a bad document lacks it)."""
    value: Any = doc
    for part in RECORD_KEYS[kind]:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def record_key(kind: str, doc: Mapping[str, Any]) -> str:
    """``kind/key`` of a record, for error messages."""
    return f"{kind}/{record_id(kind, doc)}"


def validate_record(kind: str, doc: object) -> Mapping[str, Any]:
    """Validate a persisted record of ``kind`` and return it; raise :class:`SchemaError`."""
    if kind not in RECORD_SCHEMAS:
        raise SchemaError("record", "$", f"unknown record kind {kind!r}; known: {', '.join(RECORDS)}")
    if not isinstance(doc, Mapping):
        raise SchemaError(kind, "$", f"expected an object, got {type(doc).__name__}")
    found = _first_error(f"record:{kind}", doc)
    if found:
        raise SchemaError(kind, *found, record=record_key(kind, doc))
    if kind in ("message", "outbox_entry"):
        try:
            validate_message(doc["message"])
        except SchemaError as error:
            path = "$.message" + error.path[1:]
            raise SchemaError(kind, path, error.reason, record=record_key(kind, doc)) from None
    return doc


def validate_snapshot(doc: object) -> Mapping[str, Any]:
    """Validate a whole snapshot: its shape, then every record in it."""
    found = _first_error("snapshot", doc)
    if found:
        raise SchemaError("snapshot", *found)
    assert isinstance(doc, Mapping)
    for kind in RECORDS:
        for record in doc[kind]:
            validate_record(kind, record)
    return doc


from ._defaults import with_defaults  # noqa: E402  (it validates with validate_message)

__all__ = [
    "DEFAULTS",
    "KEYWORDS",
    "MESSAGE_LAYOUTS",
    "MESSAGE_SCHEMAS",
    "MESSAGE_TYPES",
    "REASON_CODES",
    "RECORD_KEYS",
    "RECORD_MACHINES",
    "RECORD_SCHEMAS",
    "REPLY_TYPES",
    "SNAPSHOT_SCHEMA",
    "VALIDATED_SCHEMAS",
    "Check",
    "SchemaCompileError",
    "SchemaError",
    "check",
    "record_id",
    "record_key",
    "use_checks",
    "validate_message",
    "validate_record",
    "validate_snapshot",
    "with_defaults",
]
