"""The team-wide audit log: append-only and hash-chained (AUD-5), redacted (AUD-3)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from spec.ids import canonical_json
from spec.redaction import redact

from ._errors import AlreadyExists, StorageUnavailable
from ._mutants import broken
from ._storage import Storage

GENESIS = "0" * 64
TABLE = "audit_entry"


def entry_hash(entry: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of every field but the hash itself (each field is chained)."""
    unhashed = ("hash", "at") if broken("audit_hash_omits_time") else ("hash",)
    body = {k: v for k, v in entry.items() if k not in unhashed}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def _key(sequence: int) -> str:
    return f"{sequence:012d}"


APPEND_ATTEMPTS = 100
"""How many concurrent appends one append may lose before it gives up (TigerBeetle: bound every loop)."""


def append(storage: Storage, step: str, actor: str, event: str, subject_id: str, summary: str, at: float) -> None:
    """Append one entry chained to the last; a concurrent append makes us retry on the next slot."""
    for _ in range(APPEND_ATTEMPTS):
        stored = storage.last(TABLE)
        last = None if stored is None else stored.doc
        sequence = 0 if last is None else last["sequence"] + 1
        entry = {
            "sequence": sequence,
            "previous_hash": GENESIS if last is None else last["hash"],
            "actor": actor,
            "event": event,
            "subject_id": subject_id,
            "summary": redact(summary),
            "at": at,
        }
        entry["hash"] = entry_hash(entry)
        try:
            storage.insert(step, TABLE, _key(sequence), entry)
            return
        except AlreadyExists:
            continue
    raise StorageUnavailable(f"audit log: {APPEND_ATTEMPTS} appends in a row lost to concurrent writers")


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    entries: int
    first_bad: int | None
    reason: str


def verify(storage: Storage) -> ChainReport:
    """Walk the chain; report the first missing, reordered or altered link (AUD-5)."""
    previous = GENESIS
    rows = storage.scan(TABLE)
    for index, row in enumerate(rows):
        entry = row.doc
        if entry["sequence"] != index or row.key != _key(index):
            return ChainReport(
                False, len(rows), index, f"entry {index} is missing (found sequence {entry['sequence']})"
            )
        if entry["previous_hash"] != previous and not broken("audit_link_unchecked"):
            return ChainReport(False, len(rows), index, f"entry {index} does not link to entry {index - 1}")
        if entry_hash(entry) != entry["hash"]:
            return ChainReport(False, len(rows), index, f"entry {index} was altered after it was written")
        previous = entry["hash"]
    return ChainReport(True, len(rows), None, "intact")


AUDITED: dict[str, str] = {"operation_approval": "approval", "shutdown_request": "shutdown", "plan_approval": "plan"}
"""Protocol record kinds whose events are decisions in the team log (AUD-1, AUD-5), with the
prefix of the log's event names; ``spec.invariants._AUDITED`` is the same map. A plan's execution
(``plan_execution``) is not among them: it is the requester carrying out a decision already
logged (the plan's ``consumed``), and keeps its own events (AUD-1)."""


def log_event(storage: Storage, step: str, kind: str, doc: dict[str, Any], event: dict[str, Any]) -> None:
    """Append one event of protocol record ``doc`` (of ``kind``) to the team log (AUD-5)."""
    subject = doc["protocol_id"]
    append(storage, step, event["actor"], f"{AUDITED[kind]}.{event['event']}", subject, event["summary"], event["at"])


def catch_up(storage: Storage, step: str, kind: str, docs: list[dict[str, Any]]) -> None:
    """Reconciliation (REC-2, AUD-5): append the events of ``docs`` the log is missing, in record
    order — a crash may fall between a record's write and its log entry (STO-1). ``docs`` are the
    records :meth:`reference.Storage.unlogged` names: their entries are counted from the log's
    index of subjects, so the cost follows them, not the log's length."""
    for doc in docs:
        done = len(storage.audit_entries(doc["protocol_id"]))
        for event in doc["events"][done:]:
            log_event(storage, step, kind, doc, event)
