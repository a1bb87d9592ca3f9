"""Approval round trips on SQLite against raw SQLite committing the same number of rows, one run.

A round trip is request → review → call (consume, execute, record the outcome), with the team
audit log. The baseline commits, with the same journal mode and synchronous setting, as many
single-row transactions as the round trip made durable writes, with documents of the same size.
Prints both rates, the ratio (target ≥ 0.5) and the durable writes per round trip.
The two alternate in rounds (``--rounds``, default 5: a part of the round trips, then raw SQLite
with as many rows), each round on fresh files, and the times are summed: on a shared machine the
cost of a commit drifts with the other processes' I/O, and alternating gives both sides the same
share of it. Run: ``python bench/approval_roundtrip.py [--json] [--rounds N] [ROUND_TRIPS]``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from reference import CallContext, Harness, ManualClock, RecordingTool, SQLiteStorage


def protocol_run(folder: Path, round_trips: int) -> tuple[float, int, int]:
    storage = SQLiteStorage(folder / "team.db")
    world = RecordingTool()
    harness = Harness(storage, ManualClock(1000.0), [world.tool()])
    harness.add_member("m0", ["deploy"])
    harness.add_task("t0")
    harness.claim("m0", "t0")
    writes_before, bytes_before = storage.writes, 0
    started = time.perf_counter()
    for number in range(round_trips):
        ctx = CallContext("m0", 1, f"call-{number}", "t0")
        pid = harness.approvals.call(ctx, "deploy", {"path": f"srv/{number}"})["protocol_id"]
        harness.approvals.review("lead", pid, "approved", "ok")
        harness.approvals.call(ctx, "deploy", {"path": f"srv/{number}"}, approval_id=pid)
    seconds = time.perf_counter() - started
    writes = storage.writes - writes_before
    size = sum(len(row[0]) for row in storage._db.execute("SELECT doc FROM records"))
    storage.close()
    return seconds, writes, size // max(writes + 4, 1) + bytes_before


def raw_run(folder: Path, rows: int, row_bytes: int) -> float:
    (folder / "raw.db").unlink(missing_ok=True)
    db = sqlite3.connect(folder / "raw.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE records (tbl TEXT, key TEXT, version INTEGER, doc TEXT, PRIMARY KEY (tbl, key))")
    payload = "x" * row_bytes
    started = time.perf_counter()
    for number in range(rows):  # one autocommit statement per row, as the storage writes
        db.execute("INSERT INTO records VALUES (?, ?, 1, ?)", ("t", str(number), payload))
    seconds = time.perf_counter() - started
    db.close()
    return seconds


def main() -> None:
    arguments = sys.argv[1:]
    rounds = int(arguments[arguments.index("--rounds") + 1]) if "--rounds" in arguments else 5
    numbers = [int(a) for i, a in enumerate(arguments) if a.isdigit() and (i == 0 or arguments[i - 1] != "--rounds")]
    round_trips = numbers[0] if numbers else 200
    protocol_seconds = raw_seconds = 0.0
    writes = 0
    for number in range(rounds):  # alternating: both sides see the same drift in commit cost
        part = round_trips // rounds + (1 if number < round_trips % rounds else 0)
        with tempfile.TemporaryDirectory() as folder:
            seconds, part_writes, row_bytes = protocol_run(Path(folder), part)
            raw_seconds += raw_run(Path(folder), part_writes, row_bytes)
        protocol_seconds += seconds
        writes += part_writes
    result = {
        "round_trips": round_trips,
        "durable_writes_per_round_trip": writes / round_trips,
        "protocol_round_trips_per_second": round_trips / protocol_seconds,
        "raw_rows_per_second": writes / raw_seconds,
        "protocol_writes_per_second": writes / protocol_seconds,
        "ratio_protocol_over_raw": raw_seconds / protocol_seconds,
        "target_ratio_at_least": 0.5,
        "rounds": rounds,
    }
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
        return
    print(f"round trips                 : {round_trips}")
    print(f"durable writes / round trip : {result['durable_writes_per_round_trip']:.1f}")
    print(
        f"protocol                    : {result['protocol_round_trips_per_second']:.1f} round trips/s "
        f"({result['protocol_writes_per_second']:.0f} writes/s)"
    )
    print(f"raw SQLite, same rows       : {result['raw_rows_per_second']:.0f} rows/s")
    print(f"ratio (target ≥ 0.5)        : {result['ratio_protocol_over_raw']:.2f}")


if __name__ == "__main__":
    main()
