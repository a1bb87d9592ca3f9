"""MSG-1, PLN-1: a message in the source article's layout, with its defaults filled, in the
project's layout — the one function a receiver applies (``reference.Harness.receive``).

Pure: what a default depends on (the receiver's clock, the request a reply answers, the sender's
incarnation) is passed in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._messages import BODIES, REPLY_TYPES, REQUEST_OF


def with_defaults(
    doc: object, *, now: float, request: Mapping[str, Any] | None = None, incarnation: int = 1
) -> Mapping[str, Any]:
    """``doc`` validated (MSG-2) and, when it is in the article's layout, rewritten into the
    project's: the body's fields moved under ``body`` and every field of
    :data:`spec.schemas.DEFAULTS` it leaves out filled. A message already in the project's
    layout is returned as it is. ``request`` is the request a reply answers (the one with its
    ``correlation_id``); a reply that needs a default from it and has none is refused.

    Raises :class:`spec.SchemaError` naming the field, for a field that has no default."""
    from . import SchemaError, validate_message

    message = validate_message(doc)
    if "body" in message:
        return message
    kind = str(message["message_type"])
    fields = set(BODIES[kind]["properties"])
    envelope = {k: v for k, v in message.items() if k not in fields}
    body = {k: v for k, v in message.items() if k in fields}
    envelope.setdefault("timestamp", now)
    if kind in REPLY_TYPES:
        if request is None or request.get("message_type") != REQUEST_OF[kind]:
            missing = next((f for f in ("sender", "target", "ttl_seconds", "reply_to") if f not in envelope), None)
            if missing is not None:
                reason = (
                    f"no default: no {REQUEST_OF[kind]} with correlation_id {envelope['correlation_id']!r} to answer"
                )
                raise SchemaError(kind, f"$.{missing}", reason)
        else:
            envelope.setdefault("sender", request["target"])
            envelope.setdefault("target", request["sender"])
            envelope.setdefault("ttl_seconds", request["ttl_seconds"])
            envelope.setdefault("reply_to", request["message_id"])
    if kind == "plan_request":
        body.setdefault("revision", 1)
        body.setdefault("supersedes", None)
        body.setdefault("requester_incarnation", incarnation)
        plan = {"ttl_seconds": envelope["ttl_seconds"], "correlation_id": envelope["correlation_id"]}
        body["plan"] = {**plan, **body["plan"]}
    if kind == "plan_decision":
        body.setdefault("sequence", 0)
    return validate_message({**envelope, "body": body})


__all__ = ["with_defaults"]
