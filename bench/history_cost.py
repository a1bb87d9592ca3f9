"""Each protocol operation's cost beside a short and a long history, on SQLite, side by side in one run.

Two stores: one with ``SHORT`` earlier rounds, one with ``--history`` (default 400) earlier rounds
of every operation (``tests/test_history_cost.py``'s round: an approval round trip, a plan from
draft to completion, a shutdown, a lost member, the monitor, a restart's reconciliation, with
their messages, outbox entries and team-log entries). Then ``--rounds`` (default 20) more rounds
on each, taking turns round by round, each operation timed (CPU and wall) and its SQLite
virtual-machine instructions counted. Prints, per operation, the time beside the short and the
long history and their ratio (target ≤ 1.25: an operation finds what it reads by key or index,
never by walking the history; issue 18 item 9), and the approval round trip's rate against raw
SQLite single-row commits of the same count on the long history's file system (the ≥ 0.5 of
``bench/approval_roundtrip.py``, here with a history). ``--json`` for machines.
Run: ``python bench/history_cost.py [--json] [--history N] [--rounds N]``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# bench/conformance.py's name is the package's: this folder must not shadow it; the round is the test's.
ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

from reference import Harness, ManualClock, RecordingTool, SQLiteStorage  # noqa: E402
from tests.test_history_cost import OPERATIONS, one_round  # noqa: E402

SHORT = 1
ROUND_TRIP = ("approval.request", "approval.review", "approval.consume")


class Side:
    """One store and its per-operation totals."""

    def __init__(self, folder: Path, name: str, earlier: int) -> None:
        self.storage = SQLiteStorage(folder / f"{name}.db")
        self.harness = Harness(self.storage, ManualClock(1000.0), [RecordingTool().tool()])
        for n in range(earlier):
            one_round(self.harness, n, lambda _name, operation: operation())
        self.next = earlier
        self.cpu: dict[str, float] = dict.fromkeys(OPERATIONS, 0.0)
        self.wall: dict[str, float] = dict.fromkeys(OPERATIONS, 0.0)
        self.steps: dict[str, int] = dict.fromkeys(OPERATIONS, 0)
        self.writes = 0

    def round(self) -> None:
        ticks = [0]

        def tick() -> int:
            ticks[0] += 1
            return 0

        def count(name: str, operation: Callable[[], Any]) -> Any:
            ticks[0] = 0
            writes = self.storage.writes
            self.storage._db.set_progress_handler(tick, 10)
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return operation()
            finally:
                self.cpu[name] += time.process_time() - cpu
                self.wall[name] += time.perf_counter() - wall
                self.storage._db.set_progress_handler(None, 10)
                self.steps[name] += ticks[0] * 10
                if name in ROUND_TRIP:
                    self.writes += self.storage.writes - writes

        one_round(self.harness, self.next, count)
        self.next += 1


def raw_rate(folder: Path, rows: int) -> float:
    """Raw single-row commits per second (WAL, synchronous=FULL, as the store)."""
    db = sqlite3.connect(folder / "raw.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE records (tbl TEXT, key TEXT, version INTEGER, doc TEXT, PRIMARY KEY (tbl, key))")
    payload = "x" * 600
    started = time.perf_counter()
    for row in range(rows):
        db.execute("INSERT INTO records VALUES (?, ?, 1, ?)", ("t", str(row), payload))
    seconds = time.perf_counter() - started
    db.close()
    return rows / seconds


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    history = int(argv[argv.index("--history") + 1]) if "--history" in argv else 400
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 20
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        print(f"building the histories ({SHORT} and {history} rounds) …", file=sys.stderr)
        short, long = Side(folder, "short", SHORT), Side(folder, "long", history)
        rows = sum(1 for _ in long.storage._query("SELECT 1 FROM records", ()))
        for number in range(rounds):
            for side in (short, long) if number % 2 == 0 else (long, short):
                side.round()
        trip_seconds = sum(long.wall[name] for name in ROUND_TRIP)
        raw = raw_rate(folder, long.writes)
    table = {
        name: {
            "ms_short": round(short.cpu[name] * 1000 / rounds, 3),
            "ms_long": round(long.cpu[name] * 1000 / rounds, 3),
            "cpu_ratio": round(long.cpu[name] / max(short.cpu[name], 1e-9), 2),
            "sqlite_steps_short": short.steps[name] // rounds,
            "sqlite_steps_long": long.steps[name] // rounds,
        }
        for name in OPERATIONS
    }
    protocol_writes_per_second = long.writes / trip_seconds
    result = {
        "history_rounds": history,
        "history_rows": rows,
        "rounds_timed": rounds,
        "operations": table,
        "worst_cpu_ratio": max(row["cpu_ratio"] for row in table.values()),
        "target_cpu_ratio": 1.25,
        "round_trip_vs_raw_with_history": round(protocol_writes_per_second / raw, 2),
        "target_round_trip_vs_raw": 0.5,
    }
    if as_json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"history: {history} rounds ({rows:,} rows) against {SHORT}; {rounds} rounds timed on each, taking turns")
    header = ("ms (short)", 10), ("ms (long)", 10), ("ratio", 6), ("steps (short)", 14), ("steps (long)", 13)
    print(f"{'operation':24} " + " ".join(f"{title:>{width}}" for title, width in header))
    for name, row in table.items():
        print(
            f"{name:24} {row['ms_short']:10.3f} {row['ms_long']:10.3f} {row['cpu_ratio']:6.2f} "
            f"{row['sqlite_steps_short']:14,} {row['sqlite_steps_long']:13,}"
        )
    print(f"worst CPU ratio: {result['worst_cpu_ratio']} (target ≤ 1.25)")
    print(
        f"approval round trip beside the long history: {protocol_writes_per_second:.0f} writes/s against raw "
        f"SQLite {raw:.0f} rows/s: {result['round_trip_vs_raw_with_history']} (target ≥ 0.5)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
