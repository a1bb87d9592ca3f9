"""The team-wide audit log: append-only and hash-chained (AUD-5), redacted (AUD-3)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from spec.ids import canonical_json
from spec.redaction import redact

from ._errors import AlreadyExists
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


def append(storage: Storage, step: str, actor: str, event: str, subject_id: str, summary: str, at: float) -> None:
    """Append one entry chained to the last; a concurrent append makes us retry on the next slot."""
    while True:
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
