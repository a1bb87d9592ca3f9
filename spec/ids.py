"""Stable ids and argument digests (MSG-4, APR-2).

``protocol_id = uuid5(requester_id, tool_call_id, kind)`` and ``message_id = uuid5(protocol_id,
phase)``: a retry computes the same ids, so it cannot create a second request or message (INV-6).
``arguments_digest = sha256(canonical_json({tool_name, arguments}))`` over *normalised* arguments.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from functools import lru_cache
from typing import Any

NAMESPACE = uuid.UUID("3b8c0d4e-5f61-4a72-9c83-9d4e5f607182")
"""The teamproto namespace for name-based (version 5) UUIDs. Part of the spec: never change it."""


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text (APR-2)."""
    return _CANONICAL.encode(value)


AUDIT_GENESIS = "0" * 64
"""What the first entry of the team's audit log links to (AUD-5): there is no entry before it."""


def audit_entry_hash(entry: Any) -> str:
    """The hash an audit log entry carries (AUD-5): SHA-256, in hex, of the canonical JSON of
    every field of the entry but ``hash`` itself — its position and link included, so that an
    entry moved, altered or relinked no longer matches."""
    body = {key: value for key, value in entry.items() if key != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def protocol_id(requester_id: str, tool_call_id: str, kind: str) -> str:
    """The stable id of one request (MSG-4)."""
    return _name_id(requester_id, tool_call_id, kind)


def message_id(protocol_id_: str, phase: str) -> str:
    """The stable id of the message of ``phase`` (e.g. ``"request"``, ``"decision"``) of a request."""
    return _name_id(protocol_id_, phase)


def _name_id(*parts: Any) -> str:
    """uuid5 of the canonical JSON list of ``parts``. Asked for again at every retry, delivery and
    reconciliation, so an id of strings is computed once (a bounded cache of a pure function)."""
    if all(type(part) is str for part in parts):
        return _cached_name_id(parts)
    return _uuid_of(parts)


def _uuid_of(parts: tuple[Any, ...]) -> str:
    return str(uuid.uuid5(NAMESPACE, canonical_json(list(parts))))


_cached_name_id = lru_cache(maxsize=1 << 14)(_uuid_of)


def arguments_digest(tool_name: str, normalized_arguments: Any) -> str:
    """sha256 hex of the canonical JSON of the tool name and its normalised arguments (APR-2)."""
    document = {"tool_name": tool_name, "arguments": normalized_arguments}
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
