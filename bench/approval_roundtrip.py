"""Approval round trips on SQLite against raw SQLite committing the same number of rows, one run.

A round trip is request → review → call (consume, execute, record the outcome), with the team
audit log. The baseline commits, with the same journal mode and synchronous setting, as many
single-row transactions as the round trip made durable writes, with documents of the same size.
Prints both rates, the ratio (target ≥ 0.5) and the durable writes per round trip.
The two take turns, round trip by round trip (a round trip, then as many raw single-row commits,
then the other way round), in rounds (``--rounds``, default 12) each on fresh files: on a shared
machine the cost of a commit drifts with the other processes' I/O, and taking turns this finely
gives both sides the same share of it. The ratio is each round's (raw seconds over
the protocol's for the same rows); its median over the rounds is the figure, printed with its
quartiles and range, beside the ratio of the summed times and the CPU milliseconds per write of
each side (the rest of a write's time is the commit). Run:
``python bench/approval_roundtrip.py [--json] [--rounds N] [ROUND_TRIPS]`` (default 240 round trips).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from reference import CallContext, Harness, ManualClock, RecordingTool, SQLiteStorage


def _harness(folder: Path) -> tuple[SQLiteStorage, Harness]:
    storage = SQLiteStorage(folder / "team.db")
    harness = Harness(storage, ManualClock(1000.0), [RecordingTool().tool()])
    harness.add_member("m0", ["deploy"])
    harness.add_task("t0")
    harness.claim("m0", "t0")
    return storage, harness


def round_trip(harness: Harness, number: int) -> None:
    """request → review → call (consume, execute, record the outcome), with the team audit log."""
    ctx = CallContext("m0", 1, f"call-{number}", "t0")
    pid = harness.approvals.call(ctx, "deploy", {"path": f"srv/{number}"})["protocol_id"]
    harness.approvals.review("lead", pid, "approved", "ok")
    harness.approvals.call(ctx, "deploy", {"path": f"srv/{number}"}, approval_id=pid)


def sizing(round_trips: int) -> tuple[int, int]:
    """Durable writes per round trip and the mean stored document size (an untimed run)."""
    with tempfile.TemporaryDirectory() as folder:
        storage, harness = _harness(Path(folder))
        before = storage.writes
        for number in range(round_trips):
            round_trip(harness, number)
        writes = storage.writes - before
        size = sum(len(row[0]) for row in storage._db.execute("SELECT doc FROM records"))
        storage.close()
    assert writes % round_trips == 0, "every round trip makes the same writes"
    return writes // round_trips, size // max(writes + 4, 1)


def _raw(folder: Path) -> sqlite3.Connection:
    db = sqlite3.connect(folder / "raw.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE records (tbl TEXT, key TEXT, version INTEGER, doc TEXT, PRIMARY KEY (tbl, key))")
    return db


def one_round(round_trips: int, writes_per_trip: int, row_bytes: int, first: int) -> dict[str, float]:
    """One round on fresh files: each round trip beside as many raw single-row commits, the two
    taking turns at going first (``first``: the round's first turn, 0 protocol, 1 raw)."""
    with tempfile.TemporaryDirectory() as folder:
        storage, harness = _harness(Path(folder))
        db, payload, before = _raw(Path(folder)), "x" * row_bytes, storage.writes
        seconds, cpu, rows = [0.0, 0.0], [0.0, 0.0], 0
        for number in range(round_trips):
            for side in (0, 1) if (number + first) % 2 == 0 else (1, 0):
                wall, clock = time.perf_counter(), time.process_time()
                if side == 0:
                    round_trip(harness, number)
                else:
                    for _ in range(writes_per_trip):  # one autocommit statement per row, as the storage writes
                        db.execute("INSERT INTO records VALUES (?, ?, 1, ?)", ("t", str(rows), payload))
                        rows += 1
                seconds[side] += time.perf_counter() - wall
                cpu[side] += time.process_time() - clock
        writes = storage.writes - before
        storage.close()
        db.close()
    assert writes == rows, f"the protocol made {writes} writes, the raw side {rows}"
    return {
        "protocol_seconds": seconds[0],
        "raw_seconds": seconds[1],
        "protocol_cpu": cpu[0],
        "raw_cpu": cpu[1],
        "writes": writes,
        "ratio": seconds[1] / seconds[0],
    }


def spread(values: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "q1": quartiles[0],
        "q3": quartiles[2],
    }


def main() -> None:
    arguments = sys.argv[1:]
    rounds = int(arguments[arguments.index("--rounds") + 1]) if "--rounds" in arguments else 12
    numbers = [int(a) for i, a in enumerate(arguments) if a.isdigit() and (i == 0 or arguments[i - 1] != "--rounds")]
    round_trips = numbers[0] if numbers else 240
    parts = [round_trips // rounds + (1 if number < round_trips % rounds else 0) for number in range(rounds)]
    writes_per_trip, row_bytes = sizing(max(parts))
    done = [one_round(part, writes_per_trip, row_bytes, number % 2) for number, part in enumerate(parts)]
    protocol_seconds = sum(r["protocol_seconds"] for r in done)
    raw_seconds = sum(r["raw_seconds"] for r in done)
    writes = sum(r["writes"] for r in done)
    result = {
        "round_trips": round_trips,
        "rounds": rounds,
        "durable_writes_per_round_trip": writes / round_trips,
        "protocol_round_trips_per_second": round_trips / protocol_seconds,
        "raw_rows_per_second": writes / raw_seconds,
        "protocol_writes_per_second": writes / protocol_seconds,
        "ratio_protocol_over_raw": spread([r["ratio"] for r in done]),
        "ratio_of_sums": raw_seconds / protocol_seconds,
        "protocol_cpu_ms_per_write": 1000 * sum(r["protocol_cpu"] for r in done) / writes,
        "raw_cpu_ms_per_write": 1000 * sum(r["raw_cpu"] for r in done) / writes,
        "raw_wall_ms_per_write": 1000 * raw_seconds / writes,
        "target_ratio_at_least": 0.5,
    }
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
        return
    report(result)


def report(result: dict[str, object]) -> None:
    ratio = result["ratio_protocol_over_raw"]
    assert isinstance(ratio, dict)
    print(f"round trips                 : {result['round_trips']} in {result['rounds']} alternating rounds")
    print(f"durable writes / round trip : {result['durable_writes_per_round_trip']:.1f}")
    print(
        f"protocol                    : {result['protocol_round_trips_per_second']:.1f} round trips/s "
        f"({result['protocol_writes_per_second']:.0f} writes/s)"
    )
    print(f"raw SQLite, same rows       : {result['raw_rows_per_second']:.0f} rows/s")
    print(
        f"ratio per round (≥ 0.5)     : median {ratio['median']:.2f}, quartiles {ratio['q1']:.2f}–{ratio['q3']:.2f}, "
        f"range {ratio['min']:.2f}–{ratio['max']:.2f}; of the summed times {result['ratio_of_sums']:.2f}"
    )
    print(
        f"per write                   : protocol {result['protocol_cpu_ms_per_write']:.2f} ms CPU, raw "
        f"{result['raw_cpu_ms_per_write']:.2f} ms CPU, raw {result['raw_wall_ms_per_write']:.2f} ms wall (the commit)"
    )


if __name__ == "__main__":
    main()
