"""Operations per second through the conformance driver protocol against the same program run
in-process on the reference, in one run, side by side.

The program: claim a task, then ROUNDS rounds of approval.request → approval.review →
approval.consume (three operations each), on SQLite in a fresh folder, with the driver's world
(an append-only file, fsynced) in both. Through the driver every operation is a JSON line to a
``python -m reference.driver`` process and a JSON line back. Prints both rates and their ratio.
Run: ``python bench/conformance.py [--json] [ROUNDS]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# This file's name is the package's: run as a script, its folder must not shadow the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from conformance._client import Implementation  # noqa: E402
from reference import CallContext, Harness, ManualClock, SQLiteStorage, Tool  # noqa: E402
from reference.driver import FileWorld  # noqa: E402

SAME = {"target": "staging"}
TEAM = {
    "type": "init",
    "team": {"lead": "lead", "members": [{"member_id": "m0", "tools": ["deploy"]}], "tasks": ["t0"]},
    "tools": [{"name": "deploy", "protected": True}],
    "config": {},
}


def in_process(folder: Path, rounds: int) -> float:
    storage = SQLiteStorage(folder / "team.db")
    world = FileWorld(folder / "world.jsonl")
    harness = Harness(storage, ManualClock(0.0), [Tool("deploy", world.run, lookup=world.lookup)])
    harness.add_member("m0", ["deploy"])
    harness.add_task("t0")
    harness.claim("m0", "t0")
    started = time.perf_counter()
    for n in range(rounds):
        ctx = CallContext("m0", 1, f"call-{n}", "t0")
        pid = harness.approvals.request(ctx, "deploy", SAME, "deploy", 600)
        harness.approvals.review("lead", pid, "approved")
        harness.approvals.call(ctx, "deploy", SAME, approval_id=pid)
    elapsed = time.perf_counter() - started
    storage.close()
    return 3 * rounds / elapsed


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["type"] == "ok", reply
    result: dict[str, Any] = reply["result"]
    return result


def through_driver(folder: Path, rounds: int) -> float:
    impl = Implementation(f"{sys.executable} -m reference.driver", {**TEAM, "data_dir": str(folder)})
    _ok(impl.start(0.0))
    _ok(impl.call({"type": "task.claim", "member_id": "m0", "task_id": "t0"}))
    actor = {"member_id": "m0", "incarnation": 1}
    started = time.perf_counter()
    for n in range(rounds):
        call = {"actor": actor, "tool_call_id": f"call-{n}", "task_id": "t0"}
        request = {"type": "approval.request", **call, "tool": "deploy", "arguments": SAME}
        pid = _ok(impl.call({**request, "risk_summary": "deploy", "ttl_seconds": 600}))["protocol_id"]
        _ok(
            impl.call(
                {"type": "approval.review", "actor": {"member_id": "lead"}, "protocol_id": pid, "decision": "approved"}
            )
        )
        _ok(impl.call({"type": "approval.consume", **call, "protocol_id": pid, "tool": "deploy", "arguments": SAME}))
    elapsed = time.perf_counter() - started
    impl.stop()
    return 3 * rounds / elapsed


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    numbers = [int(a) for a in argv if a.isdigit()]
    rounds = numbers[0] if numbers else 200
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        direct = in_process(Path(a), rounds)
        driven = through_driver(Path(b), rounds)
    result = {"rounds": rounds, "in_process_ops_per_s": direct, "driver_ops_per_s": driven, "ratio": driven / direct}
    if as_json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"in-process:  {direct:8.1f} operations/s  ({rounds} rounds of request, review, consume on SQLite)")
        print(f"via driver:  {driven:8.1f} operations/s  (JSON lines to python -m reference.driver)")
        print(f"ratio driver/in-process: {driven / direct:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
