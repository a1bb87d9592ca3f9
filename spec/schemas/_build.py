"""Small builders so that every schema is written once, compactly (JSON Schema 2020-12)."""

from __future__ import annotations

from typing import Any

from .._tables import machine_table

Schema = dict[str, Any]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

REASON_CODES: tuple[str, ...] = (
    "rejected",
    "cancelled",
    "expired",
    "timed_out",
    "force_killed",
    "crashed",
    "member_draining",
    "superseded",
)
"""XPR-5: the one taxonomy of terminal-outcome reasons shared by every protocol."""

SHA256_PATTERN = r"^[0-9a-f]{64}$"

NAME: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
TEXT: Schema = {"type": "string", "maxLength": 4000}
ID: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
"""An identifier, opaque to every reader (MSG-4): this project's name-based UUIDs, the first source
article's ``protocol-`` plus 16 hex digits, the second's ``req_20240815_001``, any other shape."""
DIGEST: Schema = {"type": "string", "pattern": SHA256_PATTERN}
TIME: Schema = {"type": "number", "minimum": 0}
COUNT: Schema = {"type": "integer", "minimum": 0}
POSITIVE: Schema = {"type": "integer", "minimum": 1}
BOOL: Schema = {"type": "boolean"}
REASON: Schema = {"enum": [*REASON_CODES, None]}


def nullable(schema: Schema) -> Schema:
    """``schema`` or JSON null."""
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: Schema, *, unique: bool = False) -> Schema:
    return {"type": "array", "items": items, "uniqueItems": unique}


def status_of(machine: str) -> Schema:
    """The status enum of ``machine``, taken from its derived table — never retyped."""
    return {"enum": list(machine_table(machine).states)}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """A closed object: ``required`` fields must be present; nothing unknown is allowed."""
    properties = {**required, **(optional or {})}
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


AUDIT_EVENT: Schema = obj({"actor": NAME, "event": NAME, "summary": TEXT, "at": TIME})
"""AUD-1: one event of a protocol record, saved atomically with it (summary redacted)."""
