"""The storage contract, run against both backends (STYLE rule 6).

Clause: STO-1, STO-3, STO-4.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reference import AlreadyExists, CorruptRecord, Crash, SQLiteStorage, Storage, VersionConflict
from spec.schemas._examples import example_record

TASK = example_record("task")


@pytest.mark.clause("STO-1")
def test_insert_read_update_with_versions(storage: Storage) -> None:
    """Insert makes version 1; each compare-and-set update adds one; reads return what was written."""
    assert storage.read("task", "t1") is None
    stored = storage.insert("test/insert", "task", "t1", TASK)
    assert (stored.version, storage.read("task", "t1").doc) == (1, TASK)
    changed = {**TASK, "status": "completed"}
    assert storage.update("test/update", "task", "t1", changed, 1).version == 2
    assert storage.read("task", "t1").doc["status"] == "completed"
    assert [s.key for s in storage.scan("task")] == ["t1"]
    assert storage.steps_written == ["test/insert", "test/update"]


@pytest.mark.clause("STO-2", "STO-4")
def test_insert_twice_and_stale_update_are_refused_and_change_nothing(storage: Storage) -> None:
    storage.insert("test/insert", "task", "t1", TASK)
    with pytest.raises(AlreadyExists):
        storage.insert("test/insert", "task", "t1", {**TASK, "status": "failed"})
    storage.update("test/update", "task", "t1", {**TASK, "status": "completed"}, 1)
    with pytest.raises(VersionConflict) as caught:
        storage.update("test/update", "task", "t1", {**TASK, "status": "failed"}, 1)
    assert (caught.value.expected, caught.value.actual, caught.value.definite) == (1, 2, True)
    assert storage.read("task", "t1").doc["status"] == "completed"


@pytest.mark.clause("STO-3")
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"task_id": "t1", "sta', "not JSON"),
        ('{"task_id": "t1"}', "$.status"),
        ('{"task_id": "t1", "status": "lost"}', "$.status"),
    ],
)
def test_corrupt_rows_are_reported_by_table_and_key_never_skipped(storage: Storage, text: str, reason: str) -> None:
    """A torn, schema-invalid or unknown-status row is an error naming the row; it stays as it was."""
    storage.insert("test/insert", "task", "t1", TASK)
    storage.corrupt("task", "t1", text)  # type: ignore[attr-defined]
    for load in (lambda: storage.read("task", "t1"), lambda: storage.scan("task")):
        with pytest.raises(CorruptRecord) as caught:
            load()
        assert (caught.value.table, caught.value.key) == ("task", "t1")
        assert reason in str(caught.value)
    with pytest.raises(CorruptRecord):
        storage.read("task", "t1")  # still there, still reported


@pytest.mark.clause("STO-3")
def test_invalid_documents_are_never_written(storage: Storage) -> None:
    import spec

    with pytest.raises(spec.SchemaError):
        storage.insert("test/insert", "task", "t1", {**TASK, "status": "executing"})
    assert storage.read("task", "t1") is None and storage.writes == 0


@pytest.mark.clause("STO-1")
def test_fault_plan_crashes_before_or_after_a_named_step(storage: Storage) -> None:
    """Crash before a step: nothing written. Crash after: the write is durable."""
    storage.faults.crash_before.add("test/insert")
    with pytest.raises(Crash):
        storage.insert("test/insert", "task", "t1", TASK)
    assert storage.read("task", "t1") is None
    storage.faults.crash_after.add("test/insert")
    with pytest.raises(Crash):
        storage.insert("test/insert", "task", "t1", TASK)
    assert storage.read("task", "t1") is not None
    assert storage.faults.fired == [("before", "test/insert"), ("after", "test/insert")]


@pytest.mark.clause("STO-4")
def test_two_sqlite_connections_race_on_one_version(tmp_path: Path) -> None:
    """Two processes' handles on one file: exactly one compare-and-set wins."""
    first, second = SQLiteStorage(tmp_path / "db"), SQLiteStorage(tmp_path / "db")
    first.insert("test/insert", "task", "t1", TASK)
    second.update("test/update", "task", "t1", {**TASK, "status": "completed"}, 1)
    with pytest.raises(VersionConflict):
        first.update("test/update", "task", "t1", {**TASK, "status": "failed"}, 1)
    assert first.read("task", "t1").doc["status"] == "completed"
    first.close()
    second.close()


def test_sqlite_uses_wal_and_full_sync(tmp_path: Path) -> None:
    storage = SQLiteStorage(tmp_path / "db")
    assert storage._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert storage._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    storage.close()
