"""A real race: several OS processes, each with its own connection to one SQLite file (STO-4).

It cross-checks the interleaving explorer (``model_tests/interleave.py``) with what the operating
system's scheduler does: each round the parent prepares a fresh approved approval; then every
worker process, released at once by a barrier, consumes it — or, every other round, worker 0
cancels it while the others consume. The parent collects what each caller got and how often the
external tool ran. Run it alone with ``python -m model_tests.race [ROUNDS] [WORKERS]``.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reference as r
from spec.ids import protocol_id

from .interleave import plain_tool
from .interleave_pairs import ARGS

KINDS = ("consume||consume", "consume||cancel")


def context(round_: int) -> r.CallContext:
    return r.CallContext("m0", 1, f"call-{round_}", "t0")


def approval(round_: int) -> str:
    return protocol_id("m0", f"call-{round_}", "operation_approval")


def operation(round_: int, worker: int) -> str:
    return "cancel" if KINDS[round_ % len(KINDS)] == "consume||cancel" and worker == 0 else "consume"


@dataclass(frozen=True)
class Call:
    round: int
    worker: int
    operation: str
    outcome: str
    """``"ok"`` or the error's type name."""
    tool_runs: int


def _worker(path: str, worker: int, rounds: int, barrier: Any, results: Any) -> None:
    world = r.RecordingTool()
    harness = r.Harness(r.SQLiteStorage(path), r.ManualClock(0.0), [plain_tool(world)])
    for round_ in range(rounds):
        barrier.wait(timeout=60)  # the parent has prepared the round
        name, pid = operation(round_, worker), approval(round_)
        try:
            if name == "cancel":
                harness.approvals.cancel(context(round_), pid)
            else:
                harness.approvals.call(context(round_), "deploy", ARGS, approval_id=pid)
            outcome = "ok"
        except Exception as error:  # every outcome is reported; the parent judges it
            outcome = type(error).__name__
        runs = sum(1 for key, _ in world.calls if key == pid)
        results.put(Call(round_, worker, name, outcome, runs))
        barrier.wait(timeout=60)  # everyone is done with the round
    harness.storage.close()


def race(path: Path, rounds: int, workers: int) -> tuple[list[Call], dict[str, Any], float]:
    """Run the rounds; return every call, the final snapshot and the seconds taken."""
    started = time.perf_counter()
    harness = r.Harness(r.SQLiteStorage(path), r.ManualClock(0.0), [plain_tool(r.RecordingTool())])
    harness.add_member("m0", ["deploy"])
    harness.add_task("t0")
    harness.claim("m0", "t0")
    spawn = multiprocessing.get_context("spawn")
    barrier, results = spawn.Barrier(workers + 1), spawn.Queue()
    processes = [
        spawn.Process(target=_worker, args=(str(path), worker, rounds, barrier, results)) for worker in range(workers)
    ]
    for process in processes:
        process.start()
    calls: list[Call] = []
    try:
        for round_ in range(rounds):
            harness.approvals.call(context(round_), "deploy", ARGS)
            harness.approvals.review("lead", approval(round_), "approved", "ok")
            barrier.wait(timeout=60)  # go
            barrier.wait(timeout=60)  # done
            calls += [results.get(timeout=60) for _ in range(workers)]
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
    snapshot = harness.snapshot()
    harness.storage.close()
    return calls, snapshot, time.perf_counter() - started


if __name__ == "__main__":
    import tempfile

    rounds, workers = (int(arg) for arg in [*sys.argv[1:], "40", "3"][:2])
    with tempfile.TemporaryDirectory() as folder:
        calls, _, seconds = race(Path(folder) / "team.db", rounds, workers)
    counts: dict[tuple[str, str], int] = {}
    for call in calls:
        counts[(call.operation, call.outcome)] = counts.get((call.operation, call.outcome), 0) + 1
    print(f"{rounds} rounds x {workers} processes in {seconds:.1f} s: {counts}")
