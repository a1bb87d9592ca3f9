"""Two OS processes race to claim the same tasks over one SQLite file (MEM-1, STO-4).

Each process is a member; for every task both try to claim it, and the winner completes it at
once so that it is free to claim the next. A claim is one guarded compare-and-set, so every task
is claimed exactly once however the two interleave.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reference import Harness, ManualClock, RecordingTool, SQLiteStorage

ROUNDS = 150

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from reference import Harness, RecordingTool, SQLiteStorage, SystemClock, TaskTaken
    path, member, rounds, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    harness = Harness(SQLiteStorage(path), SystemClock(), [RecordingTool().tool()])
    while time.time() < start:
        pass
    won, lost = [], 0
    for number in range(rounds):
        task = f"t{number}"
        try:
            token = harness.claim(member, task)
        except TaskTaken:
            lost += 1
            continue
        won.append(task)
        harness.finish_task(member, task, "completed", token)
    print(json.dumps({"won": won, "lost": lost}))
    """
)


@pytest.mark.clause("MEM-1", "STO-4", "TSK-1")
def test_two_processes_never_claim_one_task(tmp_path: Path) -> None:
    import time

    path = tmp_path / "team.db"
    storage = SQLiteStorage(path)
    setup = Harness(storage, ManualClock(), [RecordingTool().tool()])
    for member in ("m0", "m1"):
        setup.add_member(member, ["deploy"])
    for number in range(ROUNDS):
        setup.add_task(f"t{number}")
    start = str(time.time() + 1.0)
    root = Path(__file__).resolve().parents[1]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), member, str(ROUNDS), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        for member in ("m0", "m1")
    ]
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        results.append(json.loads(out))
    won = [task for result in results for task in result["won"]]
    assert sorted(won) == sorted(f"t{n}" for n in range(ROUNDS)), "a task was claimed twice or never"
    for row in storage.scan("task"):
        claims = [e for e in row.doc["history"] if e["event"] == "claimed"]
        assert len(claims) == 1 and row.doc["status"] == "completed", row.doc
    assert sum(result["lost"] for result in results) == ROUNDS  # every round had a loser
    print("claims won per process:", [len(result["won"]) for result in results])
    storage.close()
