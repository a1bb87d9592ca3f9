"""Validating driver-protocol lines against the schemas (``conformance/schemas``)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from ._schema_src import GENERIC, MAX_LINE_BYTES, REQUESTS, reply_schema

Message = dict[str, Any]


class DriverError(Exception):
    """A typed refusal on the driver protocol: ``code`` from ``ERROR_CODES``, ``definite`` as DESIGN rule 8."""

    def __init__(self, code: str, message: str, definite: bool = True) -> None:
        super().__init__(message)
        self.code, self.definite = code, definite

    def reply(self, msg_id: Any) -> Message:
        return {
            "in_reply_to": msg_id if isinstance(msg_id, int) else None,
            "type": "error",
            "error": {"code": self.code, "definite": self.definite, "message": str(self)},
        }


@cache
def _validator(kind: str | None) -> Draft202012Validator:
    schema = REQUESTS[kind] if kind is not None else GENERIC
    return Draft202012Validator(schema)


@cache
def _reply_validator() -> Draft202012Validator:
    return Draft202012Validator(reply_schema())


def _first_error(validator: Draft202012Validator, doc: Any) -> str | None:
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    error = errors[0]
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{path}: {error.message}"


def parse_request(line: str) -> Message:
    """A request line → the request; raise :class:`DriverError` naming what is wrong."""
    if len(line.encode("utf-8")) > MAX_LINE_BYTES:
        raise DriverError("payload_too_large", f"a request line is at most {MAX_LINE_BYTES} bytes")
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as error:
        raise DriverError("schema_invalid", f"not JSON: {error}") from None
    if not isinstance(doc, dict):
        raise DriverError("schema_invalid", "$: a request is a JSON object")
    kind = doc.get("type")
    problem = _first_error(_validator(kind if kind in REQUESTS else None), doc)
    if problem:
        raise DriverError("schema_invalid", f"{kind!r} request: {problem}; see conformance/schemas/request.schema.json")
    return doc


def reply_problem(doc: Any) -> str | None:
    """What is wrong with a reply line, or None."""
    return _first_error(_reply_validator(), doc)


__all__ = ["DriverError", "Message", "parse_request", "reply_problem"]
