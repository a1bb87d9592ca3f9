"""The storage interface and its two backends: in-memory and SQLite (STO-1 … STO-4).

Contract (every backend passes ``tests/test_storage_contract.py``):

- A store is a set of tables of JSON records, each under a string key with a version number.
- Each write is atomic for one record: it happens whole or not at all. No write spans records,
  so a multi-record operation is a sequence of writes, and a crash can fall between any two.
- ``insert`` creates version 1 and raises :class:`AlreadyExists` (definite) if the key exists.
- ``update`` is a compare-and-set: it succeeds only if the stored version equals
  ``expected_version`` and then stores version + 1; otherwise :class:`VersionConflict`
  (definite: nothing changed). This is what makes the stores safe for several processes.
- Every read validates what it loads (``read``, ``scan``, ``scan_status``, ``last``,
  ``audit_entries``): a row that is not JSON, fails its record schema or has an unknown status
  raises :class:`CorruptRecord` naming table, key and reason. A corrupt row is never skipped,
  repaired or overwritten silently: a read by status or by subject also returns every row whose
  status or subject cannot be read, so that its validation reports it.
- Every write names its *write step* (``approval.request/record``, …). The fault hook is called
  before and after the write and may raise :class:`Crash` there — a crash *after* a step means
  the write is durable. :attr:`Storage.steps_written` lists the steps seen, for coverage.
- I/O failures raise :class:`StorageUnavailable`: definite for reads, indefinite for writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import spec
from spec.schemas import RECORD_MACHINES

from . import _instances
from ._errors import (
    AlreadyExists,
    CorruptRecord,
    Crash,
    FailClosed,
    StorageError,
    StorageUnavailable,
    UnknownWriteStep,
    VersionConflict,
)
from ._mutants import broken

Document = dict[str, Any]

AUDITED_TABLES = ("operation_approval", "shutdown_request", "plan_approval")
"""Protocol records whose decisions the team log holds (``reference._audit.AUDITED``)."""
UNLOGGED = "~unlogged"
"""A storage-internal table (no record kind, in no snapshot): ``<table>/<key>`` of every audited
record written since the last audit entry about it, kept by the backend in the same atomic write
as the record's or the entry's. Reconciliation reads it instead of the whole history: every
operation on an audited record ends with its audit entry, so a record marked here is one whose
operation a crash cut short (:meth:`Storage.unlogged`).

A mark names the harness instance that wrote the record (``{"writer": id}``, REC-4): the instance
whose operation on it is in flight (``reference._instances``)."""


OWED = "~owed"
"""A storage-internal table, like :data:`UNLOGGED`: ``<table>/<key>`` of every record whose last
write owes a message that the outbox does not hold yet — a plan execution that completed or
rolled back, until the outbox entry of its ``plan_completion`` is written (PLN-10, REC-3). The
backend keeps it in the same atomic write as the record's and the entry's, so reconciliation reads
the completions still owed (:meth:`Storage.owed`), not every execution that ever finished."""

OWING = {"plan_execution": (("completed", "rolled_back"), "plan_completion")}
"""table → (the statuses whose write owes a message, that message's type, correlated by the key)."""


def _mark_owed(rows: dict[tuple[str, str], tuple[int, str]], table: str, key: str, text: str) -> None:
    """The memory backend's half of :data:`OWED`, called under its lock with each write."""
    if table in OWING and _status(text) in OWING[table][0] and not broken("owed_mark_never_set"):
        rows.setdefault((OWED, f"{table}/{key}"), (1, "{}"))
    elif table == "outbox_entry":
        message = _message(text)
        for kind, (_, message_type) in OWING.items():
            if message.get("message_type") == message_type:
                rows.pop((OWED, f"{kind}/{message.get('correlation_id')}"), None)


def _status(text: str) -> Any:
    return json.loads(text).get("status") if text.startswith("{") else None


def _message(text: str) -> dict[str, Any]:
    message = json.loads(text).get("message") if text.startswith("{") else None
    return message if isinstance(message, dict) else {}


def _mark(writer: str | None) -> str:
    return "{}" if writer is None else json.dumps({"writer": writer})


def _mark_unlogged(
    rows: dict[tuple[str, str], tuple[int, str]], table: str, key: str, text: str, writer: str | None = None
) -> None:
    """The memory backend's half of :data:`UNLOGGED`, called under its lock with each write. An
    audit entry clears its record's mark only once the log holds every event of the record: an
    entry appended by one instance must not clear the mark of another's later write to the same
    record, whose own entry a crash may yet cut off (AUD-5, REC-4)."""
    if table in AUDITED_TABLES:
        rows[(UNLOGGED, f"{table}/{key}")] = (1, _mark(writer))
    elif table == "audit_entry":
        subject = _subject(text)
        held = sum(1 for (tb, _), (_, doc) in rows.items() if tb == "audit_entry" and _subject(doc) == subject)
        for kind in AUDITED_TABLES:
            record = rows.get((kind, subject)) if isinstance(subject, str) else None
            early = 1 if broken("audit_clears_mark_one_early") else 0
            if broken("audit_clears_later_mark") or record is None or held + early >= _events(record[1]):
                rows.pop((UNLOGGED, f"{kind}/{subject}"), None)


def _subject(text: str) -> Any:
    return json.loads(text).get("subject_id") if text.startswith("{") else None


def _events(text: str) -> int:
    """How many events a stored audited record holds (0 for a row that is not a JSON record)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return 0
    return len(doc.get("events", ())) if isinstance(doc, dict) else 0


@dataclass(frozen=True)
class Stored:
    key: str
    version: int
    doc: Document


@dataclass(frozen=True)
class Guard:
    """Conditions a guarded update checks in the same atomic step as its write (MEM-1).

    ``unchanged``: (table, key, version) rows that must still be at that version.
    ``none_match``: (table, field equalities, statuses): no row of ``table`` whose top-level
    fields equal these values has one of these statuses. A failed guard is a
    :class:`VersionConflict` (definite: nothing changed; re-read and decide again).
    """

    unchanged: tuple[tuple[str, str, int], ...] = ()
    none_match: tuple[tuple[str, tuple[tuple[str, Any], ...], tuple[str, ...]], ...] = ()


@dataclass
class FaultPlan:
    """Where to crash or fail, by write-step name (each fires once).

    ``crash_before`` / ``crash_after``: the process dies there (:class:`Crash`). ``fail_before`` /
    ``fail_after``: the store fails there and the process lives on — :class:`StorageUnavailable`,
    the write not done (before) or done without the writer being told (after: an indefinite write
    failure, as a commit whose answer is lost). A step that writes nothing fails after it too.
    XPR-3: the operation must raise a typed error, never report success or a definite refusal,
    and must write nothing more (``model_tests/test_storage_failures.py``).
    """

    crash_before: set[str] = field(default_factory=set)
    crash_after: set[str] = field(default_factory=set)
    fail_before: set[str] = field(default_factory=set)
    fail_after: set[str] = field(default_factory=set)
    passes: dict[str, int] = field(default_factory=dict)
    """How many writes of a step named in ``crash_after`` or ``fail_after`` go by before its fault
    fires (none: at its first). A step that writes several records under one name (a drain's
    XPR-2 cancellations: each request's record and audit entry) is cut inside it so."""
    fired: list[tuple[str, str]] = field(default_factory=list)
    passed: str | None = None
    """The last step the process got past (a test's cut of the model: where a failure left it)."""

    def before(self, step: str) -> None:
        if step in self.crash_before:
            self.crash_before.discard(step)
            self.fired.append(("before", step))
            raise Crash(step, "before")
        if step in self.fail_before:
            self.fail_before.discard(step)
            self.fired.append(("fail before", step))
            raise StorageUnavailable(f"injected failure before write step {step}: nothing was written")

    def after(self, step: str) -> None:
        self.passed = step
        if self.passes.get(step) and (step in self.crash_after or step in self.fail_after):
            self.passes[step] -= 1
            return
        if step in self.crash_after:
            self.crash_after.discard(step)
            self.fired.append(("after", step))
            raise Crash(step, "after")
        if step in self.fail_after:
            self.fail_after.discard(step)
            self.fired.append(("fail after", step))
            raise StorageUnavailable(f"injected failure after write step {step}: written, the writer not told")


OUTSIDE = "test/"
"""The family of steps a test writes under beside the reference (another writer, a tampered row):
a store accepts them, and the reference never writes one (``tests/test_write_steps.py``)."""

_encode = json.JSONEncoder(sort_keys=True).encode
"""A record's stored text: ``json.dumps(doc, sort_keys=True)``, without building an encoder a write."""

_UNSEEN = object()
_VALIDATED: OrderedDict[tuple[str, str], bytes | None] = OrderedDict()
"""(table, exact JSON text) already validated → the text's document in ``marshal``'s form once a read
has parsed it (None before): unchanged rows are not validated again, and a row read again is
rebuilt from it (some 2.5× faster than parsing the JSON; a fresh document every time all the same)."""


def _remember(table: str, text: str, doc: Document | None = None) -> None:
    _VALIDATED[(table, text)] = None if doc is None else marshal.dumps(doc)
    if len(_VALIDATED) > 8192:
        _VALIDATED.popitem(last=False)


def _validate(table: str, key: str, text: str) -> Document:
    known = _VALIDATED.get((table, text), _UNSEEN)
    if isinstance(known, bytes):
        return marshal.loads(known)  # type: ignore[no-any-return]
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as error:
        raise CorruptRecord(table, key, f"not JSON ({error})") from None
    if known is None:  # validated when written
        _remember(table, text, doc)
        return doc  # type: ignore[no-any-return]
    try:
        spec.validate_record(table, doc)
    except spec.SchemaError as error:
        raise CorruptRecord(table, key, f"{error.path}: {error.reason}") from None
    if table in RECORD_MACHINES:
        try:
            spec.validate_status(RECORD_MACHINES[table], doc.get("status"), record=f"{table}/{key}")
        except spec.UnknownStatus as error:
            raise CorruptRecord(table, key, str(error)) from None
    assert isinstance(doc, dict)
    _remember(table, text, doc)
    return doc


def team_of(path: str | Path) -> str:
    """The name of the team whose store is the SQLite file at ``path``: its real path (one file,
    one team, however the path is spelt)."""
    return os.path.realpath(path)


def _field(text: str, name: str) -> Any:
    """A row's ``name`` as a read by it sees it: None where the row is not a JSON object or has
    none, so that the read returns the row and its validation reports it (never skipped)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc.get(name) if isinstance(doc, dict) else None


class Storage:
    """Base: the write-step bookkeeping and fault hook; backends implement the ``_`` methods."""

    team: str
    """The team this store is the memory of, as its member and job processes carry it in their
    environment (:data:`reference._processes.TEAM_ENV`): another team's processes are never its own."""

    def __init__(self) -> None:
        self.faults = FaultPlan()
        self.steps_written: list[str] = []
        self.writes = 0
        self.on_write: Callable[[str], None] | None = None
        self.instance_id = _instances.fresh_id()
        self.registered = False
        self.released = False  # a closed connection: nothing more to register
        self.steps: frozenset[str] | None = None
        """The write steps this store accepts (a harness sets ``reference.WRITE_STEPS``); None: any."""

    # ---- the harness instance on this storage (REC-4, reference._instances) ------------------
    def open_instance(self, instance_id: str | None = None) -> str:
        """Register this storage's harness instance (before its first write, at the latest):
        ``instance_id`` or a fresh one. Returns the id."""
        if self.registered:
            if instance_id not in (None, self.instance_id):
                raise _instances.InstanceInUse(self.instance_id, os.getpid())
            return self.instance_id
        chosen = _instances.check_id(instance_id) if instance_id is not None else self.instance_id
        _instances.register(self, chosen)
        self.instance_id, self.registered = chosen, True
        return chosen

    def close_instance(self) -> None:
        """This instance will write no more: what it left in flight may be taken over (REC-4)."""
        if self.registered:
            _instances.close(self)
            self.registered = False

    def marks(self) -> dict[str, str | None]:
        """Every :data:`UNLOGGED` mark (``<table>/<key>``) and the instance that wrote it (None:
        a writer that did not say, as an older store's)."""
        return {key: self._writer(key, text) for key, _, text in self._scan(UNLOGGED)}

    def writer(self, table: str, key: str) -> str | None:
        """The instance whose operation on this unlogged record is in flight; None if not marked."""
        row = self._read(UNLOGGED, f"{table}/{key}")
        return None if row is None else self._writer(f"{table}/{key}", row[1])

    @staticmethod
    def _writer(subject: str, text: str) -> str | None:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None
        writer = doc.get("writer") if isinstance(doc, dict) else ""
        if writer is not None and not (isinstance(writer, str) and _instances.ID_PATTERN.fullmatch(writer)):
            raise CorruptRecord(UNLOGGED, subject, f"the mark {text!r} names no instance id")
        return writer

    # ---- the contract ----------------------------------------------------------------------
    def read(self, table: str, key: str) -> Stored | None:
        row = self._read(table, key)
        if row is None:
            return None
        version, text = row
        return Stored(key, version, _validate(table, key, text))

    def scan(self, table: str) -> list[Stored]:
        return [Stored(key, version, _validate(table, key, text)) for key, version, text in self._scan(table)]

    def scan_status(self, table: str, statuses: tuple[str, ...]) -> list[Stored]:
        """The records of ``table`` whose ``status`` is one of ``statuses``, in key order: what
        recovery reads, so that its cost follows the active records, not the history (REC, bench
        ``bench/reconcile.py``). SQLite answers it from an index on the status."""
        rows = self._scan_status(table, statuses)
        return [Stored(key, version, _validate(table, key, text)) for key, version, text in rows]

    def owed(self, table: str) -> list[str]:
        """Keys of ``table``'s records whose last write owes a message the outbox does not hold yet
        (see :data:`OWED`): a crash cut their operation short between the two writes."""
        prefix = f"{table}/"
        return [key[len(prefix) :] for key, _, _ in self._scan(OWED) if key.startswith(prefix)]

    def unlogged(self, table: str) -> list[str]:
        """Keys of ``table``'s records written since the team log's last entry about them (see
        :data:`UNLOGGED`): the records whose operation may have been cut short by a crash."""
        prefix = f"{table}/"
        return [key[len(prefix) :] for key, _, _ in self._scan(UNLOGGED) if key.startswith(prefix)]

    def audit_entries(self, subject_id: str) -> list[Stored]:
        """The team log's entries about ``subject_id``, in log order (SQLite: from an index)."""
        rows = self._audit_entries(subject_id)
        return [Stored(key, version, _validate("audit_entry", key, text)) for key, version, text in rows]

    def last(self, table: str) -> Stored | None:
        """The record with the greatest key (for append-only tables keyed by sequence)."""
        row = self._last(table)
        return None if row is None else Stored(row[0], row[1], _validate(table, row[0], row[2]))

    def insert(self, step: str, table: str, key: str, doc: Document, guard: Guard | None = None) -> Stored:
        """A new record (:class:`AlreadyExists` where ``key`` is taken); with ``guard``, only while
        its conditions hold, atomically with the write (a failed guard: :class:`VersionConflict`,
        nothing written)."""
        text = _encode(doc)
        if guard is None:
            return self._write(step, lambda: self._insert(table, key, text), table, key, doc, text)
        g = guard
        return self._write(step, lambda: self._insert_guarded(table, key, text, g), table, key, doc, text)

    def update(
        self, step: str, table: str, key: str, doc: Document, expected_version: int, guard: Guard | None = None
    ) -> Stored:
        """Compare-and-set; with ``guard``, also its conditions, atomically with the write."""
        text = _encode(doc)
        if guard is None:
            return self._write(step, lambda: self._update(table, key, text, expected_version), table, key, doc, text)
        g = guard
        return self._write(
            step, lambda: self._update_guarded(table, key, text, expected_version, g), table, key, doc, text
        )

    def check_step(self, step: str) -> None:
        """Refuse a write step this store does not accept (:class:`UnknownWriteStep`)."""
        if self.steps is not None and step not in self.steps and not str(step).startswith(OUTSIDE):
            raise UnknownWriteStep(step)

    def _write(self, step: str, action: Callable[[], int], table: str, key: str, doc: Document, text: str) -> Stored:
        self.check_step(step)
        if (table, text) not in _VALIDATED:
            spec.validate_record(table, doc)  # never persist what could not be loaded again
            _remember(table, text)
        if not self.registered and not self.released:
            self.open_instance()
        self.faults.before(step)
        version = action()
        self.writes += 1
        self.steps_written.append(step)
        if self.on_write is not None:  # an observer of every write step (tests: the state between two)
            self.on_write(step)
        self.faults.after(step)
        return Stored(key, version, doc)

    # ---- backend hooks ---------------------------------------------------------------------
    def _read(self, table: str, key: str) -> tuple[int, str] | None:
        raise NotImplementedError

    def _scan(self, table: str) -> list[tuple[str, int, str]]:
        raise NotImplementedError

    def _last(self, table: str) -> tuple[str, int, str] | None:
        rows = self._scan(table)
        return rows[-1] if rows else None

    def _scan_status(self, table: str, statuses: tuple[str, ...]) -> list[tuple[str, int, str]]:
        return [row for row in self._scan(table) if _field(row[2], "status") in (*statuses, None)]

    def _audit_entries(self, subject_id: str) -> list[tuple[str, int, str]]:
        return [row for row in self._scan("audit_entry") if _field(row[2], "subject_id") in (subject_id, None)]

    def _insert(self, table: str, key: str, text: str) -> int:
        raise NotImplementedError

    def _update(self, table: str, key: str, text: str, expected_version: int) -> int:
        raise NotImplementedError

    def _update_guarded(self, table: str, key: str, text: str, expected_version: int, guard: Guard) -> int:
        raise NotImplementedError

    def _insert_guarded(self, table: str, key: str, text: str, guard: Guard) -> int:
        raise NotImplementedError

    def close(self) -> None:
        """Close the instance (REC-4) and release resources; the data stays."""
        with contextlib.suppress(StorageError):  # unreachable: the instance stays open until its process ends
            self.close_instance()


def _check_guard(rows: dict[tuple[str, str], tuple[int, str]], guard: Guard) -> None:
    """Raise :class:`VersionConflict`, naming the row that fails it, unless ``guard`` holds over
    the memory backend's ``rows`` (the caller holds their lock)."""
    for other, other_key, version in guard.unchanged:
        row = rows.get((other, other_key))
        if row is None or row[0] != version:
            raise VersionConflict(other, other_key, version, row and row[0])
    for other, fields, statuses in guard.none_match:
        for (tb, other_key), (version, row_text) in rows.items():
            doc = json.loads(row_text) if tb == other else None
            if doc and doc.get("status") in statuses and all(doc.get(f) == v for f, v in fields):
                raise VersionConflict(other, other_key, version, version)


def _guard_sql(guard: Guard) -> tuple[list[str], list[Any]]:
    """``guard`` as SQL conditions (``AND …``) on the ``records`` table, and their arguments."""
    sql: list[str] = []
    args: list[Any] = []
    for other, other_key, version in guard.unchanged:
        sql.append("AND EXISTS (SELECT 1 FROM records WHERE tbl = ? AND key = ? AND version = ?)")
        args += [other, other_key, version]
    for other, fields, statuses in guard.none_match:
        # By the status index (a row it finds is valid JSON), so the guard reads the records in
        # those statuses, not the table's history; a torn row is reported by the operation's read.
        conditions = "".join(f" AND json_extract(doc, '$.{f}') = ?" for f, _ in fields)
        marks = ", ".join("?" for _ in statuses)
        sql.append(
            f"AND NOT EXISTS (SELECT 1 FROM records INDEXED BY records_status WHERE tbl = ? "
            f"AND {SQLiteStorage.STATUS} IN ({marks}){conditions})"
        )
        args += [other, *statuses, *(v for _, v in fields)]
    return sql, args


T = TypeVar("T")
BUSY_SECONDS = 30.0
"""How long a SQLite connection waits for another's lock (its busy timeout) before it fails."""
CONFLICT_RETRIES = 3


def settle(attempt: Callable[[], T]) -> T:
    """STO-4: a compare-and-set lost to another writer changed nothing, so the operation runs
    again from its read: its own checks then judge the record as the winner left it, and the
    loser gets their typed refusal, never a raw :class:`VersionConflict`. Bounded. The operation
    must lose only at its first write (or be idempotent from there on)."""
    retried = (VersionConflict, StorageUnavailable) if broken("store_failure_retried") else VersionConflict
    for _ in range(CONFLICT_RETRIES - 1):
        try:
            return attempt()
        except retried:
            if broken("version_conflict_escapes"):
                raise
    try:
        return attempt()
    except VersionConflict as error:
        raise FailClosed(f"a write that lost {CONFLICT_RETRIES} compare-and-sets in a row", error) from error


def active(storage: Storage, table: str, statuses: tuple[str, ...]) -> list[Stored]:
    """The records of ``table`` in one of ``statuses``, in key order: what a periodic pass reads
    (the deadline monitor's, INV-12, APR-4, SHD-6, PLN-5; the outbox's, REC-3), so that its cost
    follows the open work, not the history (mutant ``monitor_reads_history``)."""
    if broken("monitor_reads_history"):
        return [row for row in storage.scan(table) if row.doc.get("status") in statuses]
    return storage.scan_status(table, statuses)


class MemoryStorage(Storage):
    """In-process storage (for model tests): a dict under a lock; rows kept as JSON text."""

    def __init__(self) -> None:
        super().__init__()
        self.team = f"memory:{os.getpid()}:{self.instance_id}"  # no other process shares it
        self._rows: dict[tuple[str, str], tuple[int, str]] = {}
        self._lock = threading.Lock()

    def _read(self, table: str, key: str) -> tuple[int, str] | None:
        with self._lock:
            return self._rows.get((table, key))

    def _scan(self, table: str) -> list[tuple[str, int, str]]:
        with self._lock:
            return sorted((k, v, t) for (tb, k), (v, t) in self._rows.items() if tb == table)

    def _insert(self, table: str, key: str, text: str) -> int:
        with self._lock:
            if (table, key) in self._rows:
                raise AlreadyExists(table, key)
            self._rows[(table, key)] = (1, text)
            _mark_unlogged(self._rows, table, key, text, self.instance_id if self.registered else None)
            _mark_owed(self._rows, table, key, text)
            return 1

    def _update(self, table: str, key: str, text: str, expected_version: int) -> int:
        with self._lock:
            current = self._rows.get((table, key))
            if current is None or current[0] != expected_version:
                raise VersionConflict(table, key, expected_version, current and current[0])
            self._rows[(table, key)] = (expected_version + 1, text)
            _mark_unlogged(self._rows, table, key, text, self.instance_id if self.registered else None)
            _mark_owed(self._rows, table, key, text)
            return expected_version + 1

    def _insert_guarded(self, table: str, key: str, text: str, guard: Guard) -> int:
        with self._lock:
            if (table, key) in self._rows:
                raise AlreadyExists(table, key)
            _check_guard(self._rows, guard)
            self._rows[(table, key)] = (1, text)
            _mark_unlogged(self._rows, table, key, text, self.instance_id if self.registered else None)
            _mark_owed(self._rows, table, key, text)
            return 1

    def _update_guarded(self, table: str, key: str, text: str, expected_version: int, guard: Guard) -> int:
        with self._lock:
            _check_guard(self._rows, guard)
            current = self._rows.get((table, key))
            if current is None or current[0] != expected_version:
                raise VersionConflict(table, key, expected_version, current and current[0])
            self._rows[(table, key)] = (expected_version + 1, text)
            _mark_unlogged(self._rows, table, key, text, self.instance_id if self.registered else None)
            _mark_owed(self._rows, table, key, text)
            return expected_version + 1

    def corrupt(self, table: str, key: str, text: str) -> None:
        """Test helper: overwrite a row's raw text, as a torn write or a bad disk would."""
        version = self._rows.get((table, key), (1, ""))[0]
        self._rows[(table, key)] = (version, text)


class SQLiteStorage(Storage):
    """The durable default: one SQLite file, WAL journal, one transaction per record write.

    ``synchronous=FULL``: every commit is on disk before the call returns, so an acknowledged
    protocol decision survives power loss (WAL with NORMAL could lose the last commits). Each
    write is one statement in autocommit mode — its own transaction; the compare-and-set is
    ``UPDATE … WHERE version = ?`` and an insert relies on the primary key, so several processes
    can share the file (STO-4).
    """

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS records (tbl TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, "
        "doc TEXT NOT NULL, PRIMARY KEY (tbl, key)) WITHOUT ROWID"
    )
    STATUS = "(CASE WHEN json_valid(doc) THEN json_extract(doc, '$.status') END)"
    STATUS_INDEX = f"CREATE INDEX IF NOT EXISTS records_status ON records (tbl, {STATUS}, key)"
    SUBJECT = "(CASE WHEN json_valid(doc) THEN json_extract(doc, '$.subject_id') END)"
    SUBJECT_INDEX = f"CREATE INDEX IF NOT EXISTS records_subject ON records ({SUBJECT}, key) WHERE tbl = 'audit_entry'"
    AUDITED = ", ".join(f"'{table}'" for table in AUDITED_TABLES)
    MARK = (
        f"BEGIN INSERT OR IGNORE INTO records (tbl, key, version, doc) "
        f"VALUES ('{UNLOGGED}', new.tbl || '/' || new.key, 1, '{{}}'); END"
    )
    WRITER = (
        "CREATE TEMP TRIGGER unlogged_writer_{event} AFTER {event} ON main.records WHEN new.tbl IN ({audited}) "
        "BEGIN INSERT OR REPLACE INTO records (tbl, key, version, doc) "
        "VALUES ('{unlogged}', new.tbl || '/' || new.key, 1, '{mark}'); END"
    )
    """This connection's instance in every mark it writes (REC-4): a TEMP trigger lives in one
    connection and fires in the same statement as the write; the shared trigger above only marks
    (without a writer) what a connection that did not register writes."""
    TRIGGERS = (
        f"CREATE TRIGGER IF NOT EXISTS unlogged_insert AFTER INSERT ON records WHEN new.tbl IN ({AUDITED}) {MARK}",
        f"CREATE TRIGGER IF NOT EXISTS unlogged_update AFTER UPDATE ON records WHEN new.tbl IN ({AUDITED}) {MARK}",
        # An entry clears a record's mark only once the log holds every event of the record (AUD-5,
        # REC-4): not the mark of another instance's later write, whose entry a crash may cut off.
        "CREATE TRIGGER IF NOT EXISTS unlogged_caught_up_by_subject AFTER INSERT ON records "
        "WHEN new.tbl = 'audit_entry' AND json_valid(new.doc) BEGIN "
        f"DELETE FROM records WHERE tbl = '{UNLOGGED}' AND key IN ("
        "SELECT kind.name || '/' || json_extract(new.doc, '$.subject_id') FROM ("
        + " UNION ALL ".join(f"SELECT '{table}' AS name" for table in AUDITED_TABLES)
        + ") AS kind WHERE NOT EXISTS (SELECT 1 FROM records AS r WHERE r.tbl = kind.name "
        "AND r.key = json_extract(new.doc, '$.subject_id') AND json_valid(r.doc) "
        "AND json_array_length(r.doc, '$.events') > (SELECT count(*) FROM records AS a INDEXED BY records_subject "
        f"WHERE a.tbl = 'audit_entry' AND {SUBJECT.replace('doc', 'a.doc')} = json_extract(new.doc, '$.subject_id')))"
        "); END",
    )
    OWED_TRIGGERS = tuple(
        trigger
        for table, (statuses, message_type) in OWING.items()
        for trigger in (
            *(
                f"CREATE TRIGGER IF NOT EXISTS owed_{table}_{event.lower()} AFTER {event} ON records "
                f"WHEN new.tbl = '{table}' AND json_valid(new.doc) AND json_extract(new.doc, '$.status') IN "
                f"({', '.join(repr(s) for s in statuses)}) BEGIN INSERT OR IGNORE INTO records "
                f"(tbl, key, version, doc) VALUES ('{OWED}', new.tbl || '/' || new.key, 1, '{{}}'); END"
                for event in ("INSERT", "UPDATE")
            ),
            f"CREATE TRIGGER IF NOT EXISTS owed_{table}_written AFTER INSERT ON records "
            "WHEN new.tbl = 'outbox_entry' AND json_valid(new.doc) "
            f"AND json_extract(new.doc, '$.message.message_type') = '{message_type}' BEGIN "
            f"DELETE FROM records WHERE tbl = '{OWED}' AND key = '{table}/' || "
            "json_extract(new.doc, '$.message.correlation_id'); END",
        )
    )
    """:data:`OWED`, kept by triggers in the write's own statement, as :data:`UNLOGGED` is."""
    OWED_SINCE = tuple(
        f"INSERT OR IGNORE INTO records (tbl, key, version, doc) SELECT '{OWED}', '{table}/' || r.key, 1, '{{}}' "
        f"FROM records AS r WHERE r.tbl = '{table}' AND json_valid(r.doc) AND json_extract(r.doc, '$.status') IN "
        f"({', '.join(repr(s) for s in statuses)}) AND NOT EXISTS (SELECT 1 FROM records AS o "
        "WHERE o.tbl = 'outbox_entry' AND json_valid(o.doc) "
        f"AND json_extract(o.doc, '$.message.message_type') = '{message_type}' "
        "AND json_extract(o.doc, '$.message.correlation_id') = r.key)"
        for table, (statuses, message_type) in OWING.items()
    )
    """A file written before :data:`OWED` was kept (no ``owed_*`` trigger yet) gets its marks once,
    when it is first opened with them: nothing a crash left owed there is lost (one read of the
    finished executions, that once)."""
    RETIRED = ("DROP TRIGGER IF EXISTS unlogged_cleared", "DROP TRIGGER IF EXISTS unlogged_caught_up")
    """Triggers of earlier versions, dropped when a file is opened: ``unlogged_cleared`` cleared
    every mark of a record at any audit entry about it; ``unlogged_caught_up`` counted a subject's
    entries by walking the whole log (SQLite's planner took the primary key over the subject index),
    so every audited decision cost more the longer the log."""
    """:data:`UNLOGGED`, kept by triggers: in the statement (the transaction) of the write itself."""
    """Recovery reads the active records by status (:meth:`Storage.scan_status`), not the history.
    A row that is not JSON has no status in the index (it stays writable, and is reported by
    :meth:`Storage.read` and :meth:`Storage.scan`, STO-3)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = str(path)
        self.team = team_of(self.path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_SECONDS, check_same_thread=False)
            self._write_ahead_log()
            self._db.execute("PRAGMA synchronous=FULL")
            statements = self._schema()
            stamp = self._stamp(statements[:3] if broken("schema_stamp_skips_triggers") else statements)
            if self._db.execute("PRAGMA user_version").fetchone()[0] != stamp:
                self._create(statements, stamp)
        except sqlite3.Error as error:
            raise StorageUnavailable(f"cannot open {self.path}: {error}") from None
        self._lock = threading.Lock()
        self._marking = False

    def _write_ahead_log(self) -> None:
        """WAL mode (set once, in the file). Switching a new file to it takes a lock SQLite does not
        wait for — the busy timeout does not cover it — so a second connection opening the same
        new file at that instant is told "database is locked" (about one open in thirteen, two
        threads at a barrier; found by outside review 42 as a flaky test). It tries again, for as
        long as the busy timeout; any other error, or one past it, is the open's failure."""
        deadline = time.monotonic() + BUSY_SECONDS
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)

    @classmethod
    def _schema(cls) -> tuple[str, ...]:
        """Every statement that brings a file to this version's tables, indexes and triggers."""
        owed = [t for t in cls.OWED_TRIGGERS if "_written" in t or not broken("owed_mark_never_set")]
        triggers = [*cls.RETIRED, *cls.TRIGGERS, *owed]
        if broken("sqlite_log_count_walks_log"):
            triggers = [trigger.replace(" INDEXED BY records_subject", "") for trigger in triggers]
        return (cls.SCHEMA, cls.STATUS_INDEX, cls.SUBJECT_INDEX, *triggers)

    @staticmethod
    def _stamp(statements: tuple[str, ...]) -> int:
        """The file's ``user_version`` once ``statements`` have run on it: a file that carries it
        opens without them (a connection's open is then two pragmas and this read, not some twenty
        statements). Any other file, older or newer or written under a mutant, runs them all again
        (each is idempotent) and is stamped. A hash of every statement's text, so that a change to
        any one is a new stamp; never 0, the version of a file no one stamped."""
        digest = hashlib.sha256("\0".join(statements).encode()).digest()
        return int.from_bytes(digest[:4], "big") % (2**31 - 1) + 1

    def _create(self, statements: tuple[str, ...], stamp: int) -> None:
        """Run ``statements`` and stamp the file, all in one transaction: a process that dies, or a
        statement that fails, part way leaves the file as it was and unstamped, so the next open
        runs them all again. A second process opening the same file meanwhile waits for the
        transaction, then finds the stamp (read again inside it) and runs nothing."""
        if broken("schema_stamped_before_statements"):
            self._db.execute(f"PRAGMA user_version = {stamp}")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if self._db.execute("PRAGMA user_version").fetchone()[0] != stamp or broken(
                "schema_stamped_before_statements"
            ):
                marked = self._db.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'owed_%'"
                ).fetchone()[0]
                for statement in statements:
                    self._db.execute(statement)
                if marked < len(self.OWED_TRIGGERS):
                    for statement in self.OWED_SINCE:
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {stamp}")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as error:
            raise StorageUnavailable(f"{self.path}: {error}") from None

    def _read(self, table: str, key: str) -> tuple[int, str] | None:
        rows = self._query("SELECT version, doc FROM records WHERE tbl = ? AND key = ?", (table, key))
        return (rows[0][0], rows[0][1]) if rows else None

    def _scan(self, table: str) -> list[tuple[str, int, str]]:
        rows = self._query("SELECT key, version, doc FROM records WHERE tbl = ? ORDER BY key", (table,))
        return [(str(key), int(version), str(doc)) for key, version, doc in rows]

    def _scan_status(self, table: str, statuses: tuple[str, ...]) -> list[tuple[str, int, str]]:
        # Two index searches, not one OR: SQLite answers `x IN (…) OR x IS NULL` by walking every
        # row of the table in the index, so the read's cost followed the table's history.
        marks = ", ".join("?" for _ in statuses)
        if broken("sqlite_reads_walk_history"):
            sql = f"SELECT key, version, doc FROM records INDEXED BY records_status WHERE tbl = ? AND ({self.STATUS} IN ({marks}) OR {self.STATUS} IS NULL) ORDER BY key"  # noqa: E501
            return [(str(k), int(v), str(d)) for k, v, d in self._query(sql, (table, *statuses))]
        select = "SELECT key, version, doc FROM records INDEXED BY records_status WHERE tbl = ? AND "
        sql = f"{select}{self.STATUS} IN ({marks}) UNION ALL {select}{self.STATUS} IS NULL ORDER BY key"
        rows = self._query(sql, (table, *statuses, table))
        return [(str(key), int(version), str(doc)) for key, version, doc in rows]

    def _audit_entries(self, subject_id: str) -> list[tuple[str, int, str]]:
        # Two index searches, not one OR, which walks the whole log (see _scan_status).
        select = "SELECT key, version, doc FROM records INDEXED BY records_subject WHERE tbl = 'audit_entry' AND "
        sql = f"{select}{self.SUBJECT} = ? UNION ALL {select}{self.SUBJECT} IS NULL ORDER BY key"
        if broken("sqlite_reads_walk_history"):
            sql = f"{select}({self.SUBJECT} = ? OR {self.SUBJECT} IS NULL) ORDER BY key"
        return [(str(k), int(v), str(d)) for k, v, d in self._query(sql, (subject_id,))]

    def _last(self, table: str) -> tuple[str, int, str] | None:
        rows = self._query("SELECT key, version, doc FROM records WHERE tbl = ? ORDER BY key DESC LIMIT 1", (table,))
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    def _execute(self, table: str, key: str, sql: str, args: tuple[Any, ...]) -> sqlite3.Cursor:
        """One statement in autocommit mode: its own transaction, atomic and durable on return."""
        try:
            with self._lock:
                return self._db.execute(sql, args)
        except sqlite3.IntegrityError:
            raise AlreadyExists(table, key) from None
        except sqlite3.Error as error:
            raise StorageUnavailable(f"{self.path}: write of {table}/{key} failed: {error}") from None

    def _insert(self, table: str, key: str, text: str) -> int:
        self._execute(
            table, key, "INSERT INTO records (tbl, key, version, doc) VALUES (?, ?, 1, ?)", (table, key, text)
        )
        return 1

    def _update(self, table: str, key: str, text: str, expected_version: int) -> int:
        if broken("sqlite_cas_check_then_act"):  # mutant: check, then act — two statements
            row = self._read(table, key)
            if row is None or row[0] != expected_version:
                raise VersionConflict(table, key, expected_version, row and row[0])
            sql = "UPDATE records SET version = version + 1, doc = ? WHERE tbl = ? AND key = ?"
            self._execute(table, key, sql, (text, table, key))
            return expected_version + 1
        cursor = self._execute(
            table,
            key,
            "UPDATE records SET version = version + 1, doc = ? WHERE tbl = ? AND key = ? AND version = ?",
            (text, table, key, expected_version),
        )
        if cursor.rowcount != 1:  # compare-and-set lost, or no such row (STO-4)
            row = self._read(table, key)
            raise VersionConflict(table, key, expected_version, row and row[0])
        return expected_version + 1

    def _update_guarded(self, table: str, key: str, text: str, expected_version: int, guard: Guard) -> int:
        """One ``UPDATE … WHERE`` statement: the guard and the write are one transaction, so two
        processes never both pass it (MEM-1 on SQLite)."""
        sql = ["UPDATE records SET version = version + 1, doc = ? WHERE tbl = ? AND key = ? AND version = ?"]
        conditions, args = _guard_sql(guard)
        cursor = self._execute(table, key, " ".join([*sql, *conditions]), (text, table, key, expected_version, *args))
        if cursor.rowcount != 1:
            row = self._read(table, key)
            raise VersionConflict(table, key, expected_version, row and row[0])
        return expected_version + 1

    def _insert_guarded(self, table: str, key: str, text: str, guard: Guard) -> int:
        """One ``INSERT … SELECT … WHERE`` statement: the guard and the write are one transaction.
        A taken key is :class:`AlreadyExists` whether or not the guard holds."""
        conditions, args = _guard_sql(guard)
        sql = " ".join(["INSERT INTO records (tbl, key, version, doc) SELECT ?, ?, 1, ? WHERE 1", *conditions])
        cursor = self._execute(table, key, sql, (table, key, text, *args))
        if cursor.rowcount != 1:  # nothing written: the guard failed, or the key was taken meanwhile
            if self._read(table, key) is not None:
                raise AlreadyExists(table, key)
            raise VersionConflict(table, key, 0, None)
        return 1

    def open_instance(self, instance_id: str | None = None) -> str:
        was = self.registered
        chosen = super().open_instance(instance_id)
        if not was:
            for event in ("INSERT", "UPDATE"):
                if self._marking:  # registered before on this connection, under another id
                    self._query(f"DROP TRIGGER IF EXISTS temp.unlogged_writer_{event}", ())
                mark = _mark(chosen)  # an id of ID_PATTERN: no quote can end the literal
                self._query(self.WRITER.format(event=event, audited=self.AUDITED, unlogged=UNLOGGED, mark=mark), ())
            self._marking = True
        return chosen

    def corrupt(self, table: str, key: str, text: str) -> None:
        """Test helper: overwrite a row's raw text, bypassing validation."""
        self._query("UPDATE records SET doc = ? WHERE tbl = ? AND key = ?", (text, table, key))

    def close(self) -> None:
        super().close()
        self.released = True
        with self._lock:
            self._db.close()
