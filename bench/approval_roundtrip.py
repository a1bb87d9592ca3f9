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
each side (the rest of a write's time is the commit).

A third side, *before*, runs the same round trips on a harness of its own with the checks of
``jsonschema``'s own validator instead of the compiled ones (``spec.schemas.use_checks``; issue 18
item 9b), taking its turn in the same rotation: the ratio and CPU per write before and after, side
by side in one run (``--no-before``: the two sides alone). Run:
``python bench/approval_roundtrip.py [--json] [--rounds N] [--no-before] [ROUND_TRIPS]`` (default
240 round trips).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reference import CallContext, Harness, ManualClock, RecordingTool, SQLiteStorage
from spec.schemas import use_checks

SIDES = ("protocol", "raw", "before")
"""The protocol with the compiled checks, raw SQLite, the protocol with jsonschema's checks."""


def _harness(folder: Path, name: str = "team") -> tuple[SQLiteStorage, Harness]:
    storage = SQLiteStorage(folder / f"{name}.db")
    harness = Harness(storage, ManualClock(1000.0), [RecordingTool().tool()])
    harness.add_member("m0", ["deploy"])
    harness.add_task("t0")
    harness.claim("m0", "t0")
    return storage, harness


def round_trip(harness: Harness, number: int, tag: str = "a") -> None:
    """request → review → call (consume, execute, record the outcome), with the team audit log.
    ``tag`` and ``number`` make every document new to this process: a store skips validating a
    text it has validated before (``reference._storage._VALIDATED``), which a real round trip,
    with its fresh ids, never meets."""
    ctx = CallContext("m0", 1, f"{tag}-call-{number}", "t0")
    pid = harness.approvals.call(ctx, "deploy", {"path": f"srv/{number}"})["protocol_id"]
    harness.approvals.review("lead", pid, "approved", "ok")
    harness.approvals.call(ctx, "deploy", {"path": f"srv/{number}"}, approval_id=pid)


def sizing(round_trips: int) -> tuple[int, int]:
    """Durable writes per round trip and the mean stored document size (an untimed run)."""
    with tempfile.TemporaryDirectory() as folder:
        storage, harness = _harness(Path(folder))
        before = storage.writes
        for number in range(round_trips):
            round_trip(harness, number, "sizing")
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


def _turn(
    side: str, harnesses: dict[str, Harness], db: sqlite3.Connection, number: int, rows: int, plan: tuple[int, str]
) -> int:
    """One side's turn: a round trip, or as many raw single-row commits. Returns the raw rows."""
    writes_per_trip, payload = plan
    if side == "raw":
        for _ in range(writes_per_trip):  # one autocommit statement per row, as the storage writes
            db.execute("INSERT INTO records VALUES (?, ?, 1, ?)", ("t", str(rows), payload))
            rows += 1
        return rows
    use_checks(compiled=side == "protocol")
    try:
        round_trip(harnesses[side], number, "a" if side == "protocol" else "b")
    finally:
        use_checks()
    return rows


def one_round(
    trips: range, writes_per_trip: int, row_bytes: int, first: int, sides: tuple[str, ...]
) -> dict[str, float]:
    """One round on fresh files: each round trip (numbered ``trips``, new in every round) beside
    as many raw single-row commits (and the round trip before), the sides taking turns at going
    first (``first``: the round's first turn)."""
    with tempfile.TemporaryDirectory() as folder:
        stores = {side: _harness(Path(folder), side) for side in sides if side != "raw"}
        harnesses = {side: harness for side, (_, harness) in stores.items()}
        before = {side: storage.writes for side, (storage, _) in stores.items()}
        db, plan = _raw(Path(folder)), (writes_per_trip, "x" * row_bytes)
        seconds, cpu, rows = dict.fromkeys(sides, 0.0), dict.fromkeys(sides, 0.0), 0
        for number in trips:
            shift = (number + first) % len(sides)
            for side in sides[shift:] + sides[:shift]:
                wall, clock = time.perf_counter(), time.process_time()
                rows = _turn(side, harnesses, db, number, rows, plan)
                seconds[side] += time.perf_counter() - wall
                cpu[side] += time.process_time() - clock
        writes = {side: storage.writes - before[side] for side, (storage, _) in stores.items()}
        for storage, _ in stores.values():
            storage.close()
        db.close()
    assert set(writes.values()) == {rows}, f"the protocol made {writes} writes, the raw side {rows}"
    out = {"writes": rows, **{f"{side}_seconds": seconds[side] for side in sides}}
    out.update({f"{side}_cpu": cpu[side] for side in sides})
    out.update({f"ratio_{side}": seconds["raw"] / seconds[side] for side in sides if side != "raw"})
    return out


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
    sides = SIDES[:2] if "--no-before" in arguments else SIDES
    parts = [round_trips // rounds + (1 if number < round_trips % rounds else 0) for number in range(rounds)]
    writes_per_trip, row_bytes = sizing(max(parts))
    starts = [sum(parts[:number]) for number in range(rounds)]
    done = [
        one_round(range(start, start + part), writes_per_trip, row_bytes, number % len(sides), sides)
        for number, (start, part) in enumerate(zip(starts, parts, strict=True))
    ]
    result = summary(done, round_trips, rounds, sides)
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
        return
    report(result)


def summary(done: list[dict[str, float]], round_trips: int, rounds: int, sides: tuple[str, ...]) -> dict[str, Any]:
    total = {key: sum(r[key] for r in done) for key in done[0]}
    writes = total["writes"]
    result: dict[str, Any] = {
        "round_trips": round_trips,
        "rounds": rounds,
        "durable_writes_per_round_trip": writes / round_trips,
        "raw_rows_per_second": writes / total["raw_seconds"],
        "raw_cpu_ms_per_write": 1000 * total["raw_cpu"] / writes,
        "raw_wall_ms_per_write": 1000 * total["raw_seconds"] / writes,
        "target_ratio_at_least": 0.5,
    }
    for side in sides:
        if side == "raw":
            continue
        prefix = "protocol" if side == "protocol" else "before"
        result[f"{prefix}_round_trips_per_second"] = round_trips / total[f"{side}_seconds"]
        result[f"{prefix}_writes_per_second"] = writes / total[f"{side}_seconds"]
        result[f"ratio_{prefix}_over_raw" if side == "before" else "ratio_protocol_over_raw"] = spread(
            [r[f"ratio_{side}"] for r in done]
        )
        result[f"ratio_of_sums{'_before' if side == 'before' else ''}"] = (
            total["raw_seconds"] / total[f"{side}_seconds"]
        )
        result[f"{prefix}_cpu_ms_per_write"] = 1000 * total[f"{side}_cpu"] / writes
    return result


def report(result: dict[str, Any]) -> None:
    print(f"round trips                 : {result['round_trips']} in {result['rounds']} alternating rounds")
    print(f"durable writes / round trip : {result['durable_writes_per_round_trip']:.1f}")
    raw_cpu, raw_wall = result["raw_cpu_ms_per_write"], result["raw_wall_ms_per_write"]
    print(
        f"raw SQLite, same rows       : {result['raw_rows_per_second']:.0f} rows/s, "
        f"{raw_cpu:.2f} ms CPU and {raw_wall:.2f} ms wall a write (the commit)"
    )
    labels = [("protocol", "compiled checks (after)", ""), ("before", "jsonschema checks (before)", "_before")]
    for prefix, label, suffix in labels:
        if f"{prefix}_cpu_ms_per_write" not in result:
            continue
        ratio = result["ratio_protocol_over_raw" if prefix == "protocol" else "ratio_before_over_raw"]
        trips, writes = result[f"{prefix}_round_trips_per_second"], result[f"{prefix}_writes_per_second"]
        cpu = result[f"{prefix}_cpu_ms_per_write"]
        print(f"{label:<28}: {trips:.1f} round trips/s ({writes:.0f} writes/s), {cpu:.2f} ms CPU a write")
        print(
            f"{'':<28}  ratio per round (≥ 0.5): median {ratio['median']:.2f}, quartiles {ratio['q1']:.2f}–"
            f"{ratio['q3']:.2f}, range {ratio['min']:.2f}–{ratio['max']:.2f}; of the summed times "
            f"{result[f'ratio_of_sums{suffix}']:.2f}"
        )


if __name__ == "__main__":
    main()
