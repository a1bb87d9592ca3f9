"""Harness instances: who wrote the work in flight, and whether it can still finish it (REC-4).

Every harness instance that writes to a store registers itself there, before its first write, in
the storage-internal table :data:`INSTANCES` (no record kind, in no snapshot — the snapshot stays
the contract the model shares): its instance id, and for its OS process the pid, the process's
start time (``/proc/<pid>/stat``, in clock ticks since boot) and the boot id, so that a recycled
pid is never taken for the live process it once was. One storage object (one connection) is one
instance: a harness built again over the same storage after a crash is the same instance, and
reconciles its own work. :meth:`reference.Storage.close` closes the instance.

The owner of work in flight. Every operation on an audited record (approvals, shutdown requests,
plans) starts with the record's write and ends with its log entry (AUD-5); in between the record
is *unlogged* (:data:`reference._storage.UNLOGGED`), and the storage writes that mark, in the same
atomic write as the record's, with the writing instance's id. So the mark names the instance whose
operation is in flight — the consumer of an approval between ``approval.consume/record`` and
``approval.consume/audit``, with the execution record it writes and the call it makes; the
requester before its request message; the reviewer before its decision message.

REC-4: reconciliation takes over the work of an unlogged record only when its writer cannot finish
it: the writer is this instance (restarted in-process), or its instance is closed, or its process
is gone (no such pid, a zombie, another start time, another boot). Work of a live other instance
stays owed to it. A mark naming no registered instance, a malformed instance row or instance id is
bad input: a typed error, before reconciliation writes anything.
"""

from __future__ import annotations

import json
import os
import re
import socket
import uuid
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ._errors import AlreadyExists, CorruptRecord, StorageError
from ._mutants import broken

if TYPE_CHECKING:
    from ._storage import Storage

INSTANCES = "~instance"
"""A storage-internal table: one row per registered harness instance (:class:`Instance`)."""
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,79}")
FIELDS: dict[str, type | tuple[type, ...]] = {
    "instance_id": str,
    "pid": int,
    "started": (int, type(None)),
    "boot": (str, type(None)),
    "host": str,
}
STATUSES = ("open", "closed")


class InstanceError(StorageError):
    """Base of the instance registry's refusals. Definite: nothing was written."""


class BadInstanceId(InstanceError):
    def __init__(self, instance_id: object) -> None:
        self.instance_id = instance_id
        super().__init__(
            f"instance id {instance_id!r} is not 1-80 letters, digits or . _ : - (starting with a letter or "
            "digit); pass such an id, or none for a fresh one"
        )


class InstanceInUse(InstanceError):
    """An id another live instance holds: taking it would claim that instance's work (REC-4)."""

    def __init__(self, instance_id: str, pid: int) -> None:
        self.instance_id = instance_id
        super().__init__(
            f"instance {instance_id} is open in live process {pid}; use another id, or close that instance first"
        )


class UnknownInstance(InstanceError):
    """A mark of work in flight names an instance the registry does not hold: forged or corrupt."""

    def __init__(self, instance_id: str, subject: str) -> None:
        self.instance_id, self.subject = instance_id, subject
        super().__init__(
            f"{subject} is marked in flight by instance {instance_id!r}, which never registered; "
            "inspect the store (the mark was left untouched, nothing was reconciled)"
        )


@dataclass(frozen=True)
class Instance:
    instance_id: str
    pid: int
    started: int | None
    boot: str | None
    host: str
    status: str = "open"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def check_id(instance_id: object) -> str:
    if not isinstance(instance_id, str) or not ID_PATTERN.fullmatch(instance_id):
        raise BadInstanceId(instance_id)
    return instance_id


def fresh_id() -> str:
    return f"h-{uuid.uuid4().hex}"


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or None where there is none."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def _boot() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return None


_SELF: dict[int, tuple[int | None, str | None]] = {}
"""This process's start time and boot id, by pid: read once a process (a forked child has its
own pid, so it reads its own); every reconciliation and registration asks for them."""


def this_process(instance_id: str) -> Instance:
    pid = os.getpid()
    key = 0 if broken("process_facts_outlive_fork") else pid
    if key not in _SELF:
        stat = _stat(pid)
        _SELF[key] = (int(stat[19]) if stat is not None else None, _boot())  # field 22 of stat: starttime
    started, boot = _SELF[key]
    return Instance(instance_id, pid, started, boot, socket.gethostname())


def parse(key: str, text: str) -> Instance:
    """An instance row, validated: a row that is not one is a :class:`CorruptRecord` (STO-3)."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as error:
        raise CorruptRecord(INSTANCES, key, f"not JSON ({error})") from None
    if not isinstance(doc, dict) or set(doc) != {*FIELDS, "status"}:
        raise CorruptRecord(INSTANCES, key, f"expected exactly the fields {sorted({*FIELDS, 'status'})}")
    for name, kind in FIELDS.items():
        if not isinstance(doc[name], kind) or isinstance(doc[name], bool):
            raise CorruptRecord(INSTANCES, key, f"$.{name}: {doc[name]!r} has the wrong type")
    if doc["status"] not in STATUSES or doc["instance_id"] != key or not ID_PATTERN.fullmatch(key):
        raise CorruptRecord(INSTANCES, key, "its status is not open or closed, or its id is not its key")
    return Instance(**doc)


def alive(instance: Instance) -> bool:
    """Whether the instance may still finish what it began (REC-4). Another host's processes
    cannot be looked at from here: an open instance there counts as alive (never taken over)."""
    if instance.status == "closed" or broken("reconcile_takes_live_work"):
        return False
    me = this_process(instance.instance_id)
    if instance.host != me.host:
        return True
    if instance.boot is not None and me.boot is not None and instance.boot != me.boot:
        return False  # rebooted since: every process of that boot is gone
    try:
        os.kill(instance.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    stat = _stat(instance.pid)
    if stat is None or instance.started is None:
        return stat is not None or me.started is None  # no /proc here: the pid alone decides
    return stat[0] != "Z" and int(stat[19]) == instance.started  # a zombie, or a recycled pid, is gone


def read(storage: Storage, instance_id: str) -> Instance | None:
    row = storage._read(INSTANCES, instance_id)
    return None if row is None else parse(instance_id, row[1])


def register(storage: Storage, instance_id: str) -> None:
    """Put ``instance_id`` in the registry as this process's, open; refuse an id a live other
    instance holds (:class:`InstanceInUse`). An id of a closed or dead instance may be opened again:
    what it left in flight is then this instance's own."""
    mine = this_process(check_id(instance_id)).to_json()
    try:
        storage._insert(INSTANCES, instance_id, mine)
        return
    except AlreadyExists:
        row = storage._read(INSTANCES, instance_id)
    assert row is not None, "instance rows are never removed"
    held = parse(instance_id, row[1])
    if alive(held):
        raise InstanceInUse(instance_id, held.pid)
    storage._update(INSTANCES, instance_id, mine, row[0])


def close(storage: Storage) -> None:
    row = storage._read(INSTANCES, storage.instance_id)
    if row is not None:
        closed = replace(parse(storage.instance_id, row[1]), status="closed")
        storage._update(INSTANCES, storage.instance_id, closed.to_json(), row[0])


class Owners:
    """One reconciliation's view of who owns the work in flight (REC-4).

    Built before reconciliation writes anything: it reads every mark and the instances they name,
    and raises a typed error for a mark or instance row that is bad (nothing reconciled). Then
    :meth:`elsewhere` answers, for a record just read, whether a live instance other than this one
    has an operation on it in flight; it reads the mark again, after the record, so a writer that
    wrote the record after it was read is seen."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._alive: dict[str, bool] = {}
        for subject, writer in storage.marks().items():
            if writer is not None:
                self._is_alive(writer, subject)

    def _is_alive(self, writer: str, subject: str) -> bool:
        if writer not in self._alive:
            instance = read(self.storage, writer)
            if instance is None:
                raise UnknownInstance(writer, subject)
            self._alive[writer] = alive(instance)
        return self._alive[writer]

    def can_take_over(self, instance_id: str, subject: str) -> bool:
        """Whether work that ``instance_id`` began on ``subject`` is this instance's to finish: its
        own, or that of an instance that can no longer finish it (REC-4)."""
        return instance_id == self.storage.instance_id or not self._is_alive(instance_id, subject)

    def elsewhere(self, table: str, key: str) -> bool:
        """True when the record's operation in flight belongs to a live other instance: leave it."""
        writer = self.storage.writer(table, key)
        return writer is not None and not self.can_take_over(writer, f"{table}/{key}")


def summary(storage: Storage) -> dict[str, Any]:
    """The registry as plain data (tests and diagnostics): instance id → its row."""
    return {key: json.loads(text) for key, _, text in storage._scan(INSTANCES)}


__all__ = [
    "INSTANCES",
    "BadInstanceId",
    "Instance",
    "InstanceError",
    "InstanceInUse",
    "Owners",
    "UnknownInstance",
    "alive",
    "register",
]
