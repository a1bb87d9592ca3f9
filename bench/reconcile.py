"""Reconciliation cost follows active work, not history (issue 14 item 7; REC, PROTOCOL §5).

One run, on SQLite: reconcile a team with 100 active records alone, then the same team beside
100,000 final records (consumed approvals with their executions, completed tasks, completed
shutdowns with their acknowledgements sent, and every message and audit entry they left). Prints
both times and their ratio (target ≤ 2×), then the durable writes (commits) per operation of each
protocol. Run: ``python bench/reconcile.py [--json] [FINAL_RECORDS]``.

The history is made once through the protocol (one of each kind, on a scratch store) and copied
under fresh ids straight into the SQLite file in one transaction: writing 100,000 protocol runs
through the harness, a commit per write, would take an hour and measure nothing more.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

# bench/conformance.py's name is the package's: run as a script, this folder must not shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from conformance._translate import plan_document  # noqa: E402
from reference import (  # noqa: E402
    CallContext,
    Harness,
    ManualClock,
    MemoryStorage,
    RecordingTool,
    SQLiteStorage,
    Storage,
)
from reference._recovery import reconcile_team  # noqa: E402
from spec.ids import message_id  # noqa: E402

ACTIVE = 100
ARGS = {"path": "srv/app"}


def team(storage: Storage, members: int = 10) -> Harness:
    harness = Harness(storage, ManualClock(1000.0), [RecordingTool().tool()])
    for m in range(members):
        harness.add_member(f"m{m}", ["deploy"])
        harness.add_task(f"t{m}")
        harness.claim(f"m{m}", f"t{m}")
    return harness


def active_records(harness: Harness) -> int:
    """100 active records: 10 claimed tasks, 60 approvals requested, 20 approved, 10 shutdowns
    requested (one per member)."""
    for n in range(80):
        m = n % 10
        pid = harness.approvals.request(CallContext(f"m{m}", 1, f"active-{n}", f"t{m}"), "deploy", ARGS)
        if n >= 60:
            harness.approvals.review("lead", pid, "approved", "ok")
    for m in range(10):
        harness.shutdowns.request("lead", f"m{m}", f"active-stop-{m}")
    return 10 + 80 + 10


def templates() -> list[tuple[str, str, str]]:
    """The rows one of each final kind leaves, made through the protocol on a scratch store: a
    consumed approval and its execution, a completed task, a completed shutdown with its ack sent."""
    storage = MemoryStorage()
    harness = team(storage, members=1)
    ctx = CallContext("m0", 1, "history", "t0")
    pid = harness.approvals.request(ctx, "deploy", ARGS)
    harness.approvals.review("lead", pid, "approved", "ok")
    harness.approvals.call(ctx, "deploy", ARGS, approval_id=pid)
    token = harness.read("task", "t0").doc["claim_token"]  # type: ignore[union-attr]
    harness.finish_task("m0", "t0", "completed", token)
    stop = harness.shutdowns.request("lead", "m0", "history-stop")
    harness.shutdowns.begin_drain("m0", message_id(stop, "request"))
    harness.shutdowns.drain_pass("m0")
    harness.outbox.send_owed()
    return [(table, key, text) for (table, key), (_, text) in sorted(storage._rows.items()) if table != "member"]


def fresh(copy: int, old: str) -> str:
    """Copy ``copy``'s id for template id ``old`` (a UUID stays a UUID, as the schemas ask)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{copy}/{old}")) if len(old) == 36 else f"h{copy}-{old}"


def add_history(storage: SQLiteStorage, final_records: int) -> int:
    """Copy the templates under fresh ids until ``final_records`` final records exist; returns the
    rows written (records, messages, outbox entries, audit entries)."""
    rows = templates()
    finals = sum(1 for table, _, _ in rows if table in ("operation_approval", "task", "shutdown_request"))
    ids = sorted({key for table, key, _ in rows if table not in ("audit_entry", "capability_profile")})
    sequence = 1 + max(
        int(key) for table, key, _ in storage._query("SELECT tbl, key, 1 FROM records", ()) if table == "audit_entry"
    )
    batch = []
    for copy in range(final_records // finals):
        for table, key, text in rows:
            if table == "capability_profile":
                continue
            for old in ids:
                text = text.replace(old, fresh(copy, old))
            if table == "audit_entry":
                doc = json.loads(text)
                doc["sequence"], key = sequence, f"{sequence:012d}"
                text, sequence = json.dumps(doc, sort_keys=True), sequence + 1
            else:
                key = fresh(copy, key)
            batch.append((table, key, text))
    batch.sort(key=lambda row: row[0] == "audit_entry")  # each record's log entries after it, as written
    with storage._lock:
        storage._db.execute("BEGIN")
        storage._db.executemany("INSERT INTO records (tbl, key, version, doc) VALUES (?, ?, 1, ?)", batch)
        storage._db.execute("COMMIT")
        storage._db.execute("ANALYZE")
    assert storage.unlogged("operation_approval") == [] and storage.unlogged("shutdown_request") == []
    return len(batch)


def timed_reconcile(storage: Storage, repeats: int = 3) -> dict[str, float]:
    """The best of ``repeats`` reconciliations by a freshly started harness (a restart), whole and
    by part: the team's rows (members, tasks, shutdowns, outbox; with the shutdowns' log catch-up)
    and the approvals' rows (with theirs)."""
    best: dict[str, float] = {}
    for _ in range(repeats):
        harness = Harness(storage, ManualClock(1000.0), [RecordingTool().tool()])
        started = time.perf_counter()
        reconcile_team(harness)
        team_done = time.perf_counter()
        harness.approvals.reconcile()
        ended = time.perf_counter()
        times = {"total": ended - started, "team rows": team_done - started, "approval rows": ended - team_done}
        best = times if not best or times["total"] < best["total"] else best
    return best


def writes_per_operation() -> dict[str, int]:
    """Durable writes (one commit each on SQLite) of one operation of each protocol."""
    storage = MemoryStorage()
    harness = team(storage, members=2)
    ctx = CallContext("m0", 1, "count", "t0")
    counts: dict[str, int] = {}

    def count(name: str, operation: Any) -> Any:
        before = storage.writes
        result = operation()
        counts[name] = storage.writes - before
        return result

    pid = count("approval.request", lambda: harness.approvals.request(ctx, "deploy", ARGS))
    count("approval.review", lambda: harness.approvals.review("lead", pid, "approved", "ok"))
    count("approval.consume (call)", lambda: harness.approvals.call(ctx, "deploy", ARGS, approval_id=pid))
    other = harness.approvals.request(CallContext("m0", 1, "count-2", "t0"), "deploy", ARGS)
    count("approval.cancel", lambda: harness.approvals.cancel(ctx, other))
    plan = plan_document(0, 0, 1, 60.0)
    plan_id = count("plan.draft", lambda: harness.plans.draft(ctx, "count-plan", plan))
    count("plan.submit", lambda: harness.plans.submit(ctx, plan_id))
    count("plan.decide", lambda: harness.plans.decide("lead", plan_id, "approved"))
    count("plan.deliver_decision", lambda: harness.plans.deliver_decision("m0", message_id(plan_id, "decision-0")))
    count("plan.start", lambda: harness.plans.start(ctx, plan_id))
    count("plan.step", lambda: harness.plans.step(ctx, plan_id, plan["steps"][0]))
    count("plan.complete", lambda: harness.plans.complete(ctx, plan_id))
    stop = count("shutdown.request", lambda: harness.shutdowns.request("lead", "m0", "count-stop"))
    count("shutdown.begin_drain", lambda: harness.shutdowns.begin_drain("m0", message_id(stop, "request")))
    count("shutdown.release_task", lambda: harness.shutdowns.release_task("m0"))
    count("shutdown.finish", lambda: harness.shutdowns.finish("m0"))
    count("outbox.send", lambda: harness.outbox.send_owed())
    token = harness.read("task", "t1").doc["claim_token"]  # type: ignore[union-attr]
    count("task.finish", lambda: harness.finish_task("m1", "t1", "completed", token))
    count("task.claim", lambda: harness.claim("m1", "t0"))
    count("member.lapse", lambda: harness.members.lapse("m1"))
    count("member.inspect", lambda: harness.members.inspect("m1"))
    count("member.restart", lambda: harness.members.restart("m1"))
    count("restart (reconcile, nothing to repair)", lambda: Harness(storage, harness.clock).reconcile())
    return counts


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    numbers = [int(a) for a in argv if a.isdigit()]
    final_records = numbers[0] if numbers else 100_000
    with tempfile.TemporaryDirectory() as folder:
        storage = SQLiteStorage(Path(folder) / "team.db")
        active = active_records(team(storage))
        timed_reconcile(storage, repeats=1)  # the first restart repairs nothing: all is consistent
        alone = timed_reconcile(storage)
        rows = add_history(storage, final_records)
        with_history = timed_reconcile(storage, repeats=1)
        storage.close()
    result = {
        "active_records": active,
        "final_records": final_records,
        "history_rows": rows,
        "reconcile_seconds_active_alone": {k: round(v, 4) for k, v in alone.items()},
        "reconcile_seconds_with_history": {k: round(v, 4) for k, v in with_history.items()},
        "ratio": round(with_history["total"] / alone["total"], 2),
        "ratio_by_part": {k: round(with_history[k] / alone[k], 2) for k in alone if k != "total"},
        "target_ratio": 2.0,
        "durable_writes_per_operation": writes_per_operation(),
    }
    if as_json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"reconcile, {active} active records alone: {alone['total'] * 1000:10.1f} ms")
    print(f"reconcile, same + {final_records:,} final records ({rows:,} rows): {with_history['total'] * 1000:10.1f} ms")
    print(f"ratio: {result['ratio']}× (target ≤ 2×)")
    for part, ratio in result["ratio_by_part"].items():
        print(f"  {part}: {alone[part] * 1000:.1f} ms → {with_history[part] * 1000:.1f} ms ({ratio}×)")
    print("durable writes (commits) per operation:")
    for name, writes in result["durable_writes_per_operation"].items():
        print(f"  {name:40} {writes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
