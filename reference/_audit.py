"""The team-wide audit log: append-only and hash-chained (AUD-5), redacted (AUD-3)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from spec.ids import AUDIT_GENESIS, audit_entry_hash, canonical_json
from spec.redaction import redact

from ._errors import AlreadyExists, StorageUnavailable
from ._mutants import broken
from ._storage import Storage

GENESIS = AUDIT_GENESIS
TABLE = "audit_entry"
Entry = dict[str, Any]


def entry_hash(entry: dict[str, Any]) -> str:
    """The protocol's hash of an entry (:func:`spec.ids.audit_entry_hash`, AUD-5): sha256 of the
    canonical JSON of every field but the hash itself (each field is chained)."""
    if broken("audit_hash_omits_time"):
        body = {k: v for k, v in entry.items() if k not in ("hash", "at")}
        return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
    return audit_entry_hash(entry)


def _key(sequence: int) -> str:
    return f"{sequence:012d}"


APPEND_ATTEMPTS = 100
"""How many concurrent appends one append may lose before it gives up (TigerBeetle: bound every loop)."""


def _entry(last: dict[str, Any] | None, actor: str, event: str, subject_id: str, summary: str, at: float) -> Entry:
    entry: Entry = {
        "sequence": 0 if last is None else last["sequence"] + 1,
        "previous_hash": GENESIS if last is None else last["hash"],
        "actor": actor,
        "event": event,
        "subject_id": subject_id,
        "summary": redact(summary),
        "at": at,
    }
    entry["hash"] = entry_hash(entry)
    return entry


def append(storage: Storage, step: str, actor: str, event: str, subject_id: str, summary: str, at: float) -> None:
    """Append one entry chained to the last; a concurrent append makes us retry on the next slot."""
    for _ in range(APPEND_ATTEMPTS):
        stored = storage.last(TABLE)
        entry = _entry(None if stored is None else stored.doc, actor, event, subject_id, summary, at)
        try:
            storage.insert(step, TABLE, _key(entry["sequence"]), entry)
            return
        except AlreadyExists:
            continue
    raise StorageUnavailable(f"audit log: {APPEND_ATTEMPTS} appends in a row lost to concurrent writers")


def append_events(storage: Storage, step: str, subject_id: str, prefix: str, events: list[dict[str, Any]]) -> int:
    """AUD-5: bring the log up to a record. Append, oldest first, each of the record's ``events``
    (AUD-1; as the caller wrote or read the record) that the log does not hold yet under
    ``subject_id``, each into the next free slot; a slot another appender took means: read the log
    again. The events of a record only grow (each write extends the list it read), so the log's
    entries of a record stay a prefix of its events, in its order, none twice — whoever appends:
    two processes deciding on one record, or a reconciliation beside a live operation.
    Returns how many entries this call appended."""
    appended = 0
    for _ in range(APPEND_ATTEMPTS):
        # The tail first, then the subject's entries (an index, never the whole history): an entry
        # appended after the tail was read takes the slot this append aims at, which then fails.
        tail = storage.last(TABLE)
        held = len(storage.audit_entries(subject_id))
        if held >= len(events):
            return appended
        event = events[held]
        last = None if tail is None else tail.doc
        entry = _entry(last, event["actor"], f"{prefix}.{event['event']}", subject_id, event["summary"], event["at"])
        try:
            storage.insert(step, TABLE, _key(entry["sequence"]), entry)
        except AlreadyExists:
            continue
        appended += 1
        if held + 1 >= len(events):
            # The slot after the tail was free, so nothing was appended since the tail was read:
            # ``held`` was exact, and the log now holds every event (no read to confirm it).
            return appended
    raise StorageUnavailable(f"audit log: {APPEND_ATTEMPTS} appends in a row for {subject_id} did not catch up")


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
    """Bring the team log up to ``event`` of protocol record ``doc`` (of ``kind``): every earlier
    event the log misses first, none twice, whoever else appends (AUD-5, :func:`append_events`)."""
    events = doc["events"]
    upto = max(i for i, e in enumerate(events) if e == event) + 1
    append_events(storage, step, doc["protocol_id"], AUDITED[kind], events[:upto])


def catch_up(storage: Storage, step: str, kind: str, docs: list[dict[str, Any]]) -> None:
    """Reconciliation (REC-2, AUD-5): append the events of ``docs`` the log is missing, in record
    order — a crash may fall between a record's write and its log entry (STO-1). ``docs`` are the
    records :meth:`reference.Storage.unlogged` names: their entries are counted from the log's
    index of subjects, so the cost follows them, not the log's length."""
    for doc in docs:
        append_events(storage, step, doc["protocol_id"], AUDITED[kind], doc["events"])
