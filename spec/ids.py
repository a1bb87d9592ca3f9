"""Stable ids and argument digests (MSG-4, APR-2).

``protocol_id = uuid5(requester_id, tool_call_id, kind)`` and ``message_id = uuid5(protocol_id,
phase)``: a retry computes the same ids, so it cannot create a second request or message (INV-6).
``arguments_digest = sha256(canonical_json({tool_name, arguments}))`` over *normalised* arguments.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

NAMESPACE = uuid.UUID("3b8c0d4e-5f61-4a72-9c83-9d4e5f607182")
"""The teamproto namespace for name-based (version 5) UUIDs. Part of the spec: never change it."""


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text (APR-2)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def protocol_id(requester_id: str, tool_call_id: str, kind: str) -> str:
    """The stable id of one request (MSG-4)."""
    return str(uuid.uuid5(NAMESPACE, canonical_json([requester_id, tool_call_id, kind])))


def message_id(protocol_id_: str, phase: str) -> str:
    """The stable id of the message of ``phase`` (e.g. ``"request"``, ``"decision"``) of a request."""
    return str(uuid.uuid5(NAMESPACE, canonical_json([protocol_id_, phase])))


def arguments_digest(tool_name: str, normalized_arguments: Any) -> str:
    """sha256 hex of the canonical JSON of the tool name and its normalised arguments (APR-2)."""
    document = {"tool_name": tool_name, "arguments": normalized_arguments}
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
