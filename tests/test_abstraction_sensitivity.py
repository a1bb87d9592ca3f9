"""The conformance abstraction sees every change it is meant to see, and none it is meant to ignore.

``conformance._abstract.abstract`` is what the conformance suite compares an implementation's
snapshot with the model's by. A blind spot in it is a blind spot of the whole suite: when a
message's count became ``= 1`` ("one message, however often sent"), a message sent twice under
two ids (MSG-4, INV-6) abstracted like one sent once, the vectors were regenerated, and every test
still passed. Here the abstraction is probed directly, on real snapshots: the model's, as the
vector generator takes them (``spec.model.snapshot`` of states the explorer reaches in several
pinned configurations), chosen so that every value of every field occurs.

* Rows (:func:`test_a_row_duplicated_or_removed_changes_its_section`): in every table the
  abstraction reads, one row duplicated, one row duplicated under fresh opaque ids (the same
  message under a fresh ``message_id``, the same approval under a fresh ``protocol_id``), and one
  row removed each change the section that table feeds.
* Fields (:func:`test_each_field_read_changes_the_abstraction`): every leaf field of every row is
  classified in :data:`READ` (with the condition under which it is read), :data:`IDS` (opaque ids:
  renamed everywhere at once, nothing changes) or :data:`IGNORED` (timestamps, free text, bodies,
  versions: the implementation's own). A read field changed to another value it takes in the
  corpus (another valid status, a counter bumped, a flag flipped, a list one longer or shorter)
  changes the abstraction; an ignored one does not. A field the corpus has and the tables do not
  classify fails :func:`test_every_field_and_section_is_classified`, so a new field or section must
  be placed on one side.

Clause: MSG-4, INV-6 (duplicates are visible), MSG-2 (ids are opaque).
"""

from __future__ import annotations

import copy
import functools
import json
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conformance._abstract import abstract, approved_by
from spec.model import Model, load_config, snapshot
from spec.model._state import State

Row = dict[str, Any]
Snapshot = dict[str, Any]

CONFIGS = {
    "tiny": 400,
    "monitor": 300,
    "shutdown": 2600,
    "fencing": 800,
    "plan": 1500,
    "plan_lost": 800,
    "approval_drain": 800,
}
"""Pinned configurations whose reachable states give every table the abstraction reads rows, and
how many states of each to read, breadth first (``shutdown``: enough to reach a task_suspended
message delivered; ``tiny`` and ``monitor``: all of them)."""

TABLE_SECTIONS: dict[str, tuple[str, ...]] = {
    "operation_approval": ("approvals",),
    "tool_execution": ("executions",),
    "message": ("messages", "plan_messages"),
    "outbox_entry": ("outbox",),
    "capability_profile": ("profiles",),
    "task": ("claims",),
    "member": ("members",),
    "job": ("jobs",),
    "shutdown_request": ("shutdowns",),
    "plan_approval": ("plans",),
    "plan_execution": ("runs",),
}
"""Each table the abstraction reads → the sections of ``abstract``'s output its rows make."""
IGNORED_TABLES = frozenset({"audit_entry"})
"""Tables the abstraction does not read (the audit log is the implementation's own)."""
IGNORED_TOP = frozenset({"clock"})


def _kind(row: Row) -> str:
    return str(row["message"]["message_type"])


def _labelled(row: Row) -> bool:
    """A message named by its request's label (``correlation_id``): all but member_lost and
    task_suspended, which are named by their body."""
    return _kind(row) not in ("member_lost", "task_suspended")


def _always(row: Row) -> bool:
    return True


def _kinds(*kinds: str) -> Callable[[Row], bool]:
    return lambda row: _kind(row) in kinds


READ: dict[tuple[str, str], Callable[[Row], bool]] = {
    **{
        ("operation_approval", f): _always
        for f in ("status", "task_id", "profile_version", "reason", "consumed_at", "requester_id", "tool_call_id")
    },
    **{("tool_execution", f): _always for f in ("idempotency_key", "status", "attempts", "arguments_digest")},
    **{(table, f): _always for table in ("message", "outbox_entry") for f in ("message.message_type",)},
    ("message", "message.correlation_id"): _labelled,
    ("outbox_entry", "message.correlation_id"): _labelled,
    ("message", "status"): _kinds("shutdown_request", "approval_request", "plan_request", "plan_decision"),
    ("outbox_entry", "status"): _always,
    ("message", "message.body.sequence"): _kinds("plan_request", "plan_decision"),
    **{
        (table, "message.body.member_id"): _kinds("member_lost", "task_suspended")
        for table in ("message", "outbox_entry")
    },
    **{(table, "message.body.incarnation"): _kinds("member_lost") for table in ("message", "outbox_entry")},
    **{(table, "message.body.task_id"): _kinds("task_suspended") for table in ("message", "outbox_entry")},
    **{("capability_profile", f): _always for f in ("member_id", "version", "tools")},
    **{("task", f): _always for f in ("task_id", "status", "owner_id", "owner_incarnation")},
    **{
        ("member", f): _always
        for f in (
            "member_id",
            "status",
            "incarnation",
            "accepting_new_tasks",
            "shutdown_request_id",
            "current_task_id",
        )
    },
    **{("job", f): _always for f in ("job_id", "status", "owner_id", "task_id", "cancellable")},
    **{
        ("shutdown_request", f): _always
        for f in (
            "status",
            "target_id",
            "target_incarnation",
            "deadline",
            "released_task_id",
            "waited_job_ids",
            "reason",
        )
    },
    **{
        ("plan_approval", f): _always
        for f in (
            "status",
            "requester_id",
            "requester_incarnation",
            "task_id",
            "reason",
            "decision_delivered",
            "events",
            "revision",
        )
    },
    **{("plan_execution", f): _always for f in ("plan_id", "status", "executed_step_ids", "deadline")},
}
"""(table, field) → when a change of it must change the abstraction; for other rows of the table
(a message kind whose status is the implementation's own) a change must not."""

IDS: dict[str, tuple[str, ...]] = {
    "operation_approval": ("protocol_id",),
    "shutdown_request": ("protocol_id",),
    "plan_approval": ("protocol_id",),
    "message": ("message.message_id",),
    "outbox_entry": ("message_id", "message.message_id"),
}
"""Opaque ids an implementation names as it likes (MSG-2): renamed everywhere at once, nothing
changes; a row duplicated under fresh ones is still a duplicate."""

IGNORED: frozenset[tuple[str, str]] = frozenset(
    {
        # approvals: the binding is checked by the executions' digest; deadlines, texts and the
        # history are the implementation's own
        *(
            ("operation_approval", f)
            for f in (
                "arguments_digest",
                "created_at",
                "deadline",
                "events",
                "kind",
                "requester_incarnation",
                "responder_id",
                "review_summary",
                "risk_summary",
                "tool_name",
                "version",
            )
        ),
        *(("tool_execution", f) for f in ("profile_version", "requester_id", "result", "task_id")),
        ("tool_execution", "tool_name"),
        # messages: who sent what when, and bodies, are the implementation's own (ids: IDS)
        *(
            (table, f)
            for table in ("message", "outbox_entry")
            for f in (
                "message.reply_to",
                "message.sender",
                "message.target",
                "message.timestamp",
                "message.ttl_seconds",
            )
        ),
        ("message", "recorded_result"),
        ("task", "checkpoint"),
        ("task", "checkpoint.released"),
        ("task", "claim_token"),
        ("task", "history"),
        ("task", "version"),
        ("member", "last_heartbeat_at"),
        ("member", "version"),
        ("job", "command"),
        ("job", "exit_code"),
        ("job", "version"),
        # created_at only orders one member incarnation's requests (at most one per configuration)
        *(
            ("shutdown_request", f)
            for f in ("created_at", "events", "kind", "reason_text", "requester_id", "responder_id", "version")
        ),
        *(
            ("plan_approval", f)
            for f in ("created_at", "deadline", "comment", "kind", "responder_id", "supersedes", "version")
        ),
        *(("plan_execution", f) for f in ("events", "reason", "started_at", "version")),
    }
)
"""(table, field) whose change must not change the abstraction. Message bodies (but for the
fields of :data:`READ`), plan bodies, a tool's result and a delivery's recorded result are ignored
as a whole: see :func:`_ignored`."""
IGNORED_PREFIXES = (
    ("message", "message.body."),
    ("message", "recorded_result."),
    ("outbox_entry", "message.body."),
    ("plan_approval", "plan."),
    ("tool_execution", "result."),
)


def _ignored(table: str, path: str) -> bool:
    return (table, path) in IGNORED or any(table == t and path.startswith(p) for t, p in IGNORED_PREFIXES)


# ---- the corpus --------------------------------------------------------------------------------


def _leaves(row: Row, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in row.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, prefix + key + ".")
        else:
            yield prefix + key, value


def _features(snap: Snapshot) -> set[str]:
    out = set()
    for table, rows in snap.items():
        if not isinstance(rows, list):
            continue
        out.add(f"{table}#{len(rows)}")
        for row in rows:
            kind = row["message"]["message_type"] if table in ("message", "outbox_entry") else ""
            for path, value in _leaves(row):
                if path.endswith("_id") and path not in ("task_id", "member_id", "job_id", "owner_id", "target_id"):
                    value = value is None  # ids: whether set, not which
                out.add(f"{table}:{kind}:{path}={json.dumps(value, sort_keys=True)}")
    return out


def reference_snapshots() -> Iterator[Snapshot]:
    """The reference harness over memory storage, a snapshot after each operation: members and
    tasks, an approval requested, approved and consumed, a job, a shutdown requested and drained,
    the monitor after the deadline."""
    from reference import CallContext, Harness, InProcessJobRunner, ManualClock, MemoryStorage, RecordingTool
    from spec.ids import message_id

    clock = ManualClock(1000.0)
    harness = Harness(MemoryStorage(), clock, [RecordingTool().tool()], jobs=InProcessJobRunner())
    try:
        for member, task in (("m0", "t0"), ("m1", "t1")):
            harness.add_member(member, ["deploy"])
            harness.add_task(task)
            harness.claim(member, task)
        harness.add_task("t2")
        yield harness.snapshot()
        ctx = CallContext("m0", 1, "call-1", "t0")
        pid = harness.approvals.call(ctx, "deploy", {"path": "srv/app"})["protocol_id"]
        yield harness.snapshot()
        harness.approvals.review("lead", pid, "approved", "ok")
        yield harness.snapshot()
        harness.approvals.call(ctx, "deploy", {"path": "srv/app"}, approval_id=pid)
        yield harness.snapshot()
        harness.jobs.start("m0", "job-1", "make deploy", cancellable=True)
        yield harness.snapshot()
        shutdown = harness.shutdowns.request("lead", "m1", "sd-1", ttl_seconds=10)
        yield harness.snapshot()
        harness.shutdowns.begin_drain("m1", message_id(shutdown, "request"))
        yield harness.snapshot()
        clock.advance(30)
        harness.monitor_pass()
        yield harness.snapshot()
    finally:
        harness.close()


@functools.cache
def corpus() -> tuple[Snapshot, ...]:
    """Snapshots of the reference (:func:`reference_snapshots`), then of states the explorer
    reaches, breadth first; each kept when it shows a value of a field, or a number of rows of a
    table, that no snapshot kept before it shows."""
    kept: list[Snapshot] = []
    seen: set[str] = set()
    for snap in reference_snapshots():
        seen |= _features(snap)
        kept.append(snap)
    for name, states in CONFIGS.items():
        config = load_config(name)
        model = Model(config)
        start = model.initial()
        visited = {start}
        queue = deque([start])
        for _ in range(states):
            if not queue:
                break
            state = queue.popleft()
            snap = snapshot(state, config)
            new = _features(snap) - seen
            if new:
                seen |= new
                kept.append(snap)
            for _, after in model.successors(state):
                if isinstance(after, State) and after not in visited:
                    visited.add(after)
                    queue.append(after)
    return tuple(kept)


def _values() -> dict[tuple[str, str], list[Any]]:
    """(table, field) → every value it takes in the corpus (JSON-distinct, in order)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for snap in corpus():
        for table, rows in snap.items():
            for row in rows if isinstance(rows, list) else []:
                for path, value in _leaves(row):
                    out.setdefault((table, path), {}).setdefault(json.dumps(value, sort_keys=True), value)
    return {key: list(values.values()) for key, values in out.items()}


VALUES = _values()


# ---- mutations ---------------------------------------------------------------------------------


def _get(row: Row, path: str) -> Any:
    for key in path.split("."):
        row = row[key]
    return row


def _set(row: Row, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        row = row[key]
    row[last] = value


def _others(table: str, path: str, value: Any) -> list[Any]:
    """The minimal changes of a field: another value it takes in the corpus (another valid status,
    another member), a number bumped, a flag flipped, a list with one element more or one less,
    ``None`` set or cleared; for ``consumed_at`` whether it is set (what the abstraction keeps)."""
    seen = [v for v in VALUES.get((table, path), []) if v != value]
    if path == "consumed_at":
        return [0 if value is None else None]
    if path == "events" and table == "plan_approval":  # who approved it, of the approval that stands
        event = {"actor": "lead", "event": "retracted" if approved_by({"events": value}) else "approved"}
        return [[*value, {**event, "summary": "", "at": 0}]]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1, *(v for v in seen if v is None)]
    if isinstance(value, list):
        more = [*value, value[0]] if value else [next((v[0] for v in seen if v), "x")]
        return [more, value[:-1]] if value else [more]
    if value is None:
        return [v for v in seen if v is not None][:3] or ["x"]
    if isinstance(value, str):
        return seen[:4] or [value + "~"]
    return [value, "x"] if isinstance(value, dict) else []


def _snapshots_with(table: str) -> Iterator[Snapshot]:
    return (snap for snap in corpus() if snap.get(table))


def _fresh(row: Row, table: str) -> Row:
    """The row under fresh opaque ids (the same message, approval or request, named anew)."""
    out = copy.deepcopy(row)
    for path in IDS.get(table, ()):
        _set(out, path, str(uuid.uuid4()))
    if table == "outbox_entry":
        _set(out, "message_id", _get(out, "message.message_id"))
    return out


def _row_mutations(snap: Snapshot, table: str) -> Iterator[tuple[str, Snapshot]]:
    rows = snap[table]
    for i, row in enumerate(rows):
        for what, changed in (
            ("duplicated", [*rows, copy.deepcopy(row)]),
            ("duplicated under fresh ids", [*rows, _fresh(row, table)]),
            ("removed", rows[:i] + rows[i + 1 :]),
        ):
            yield f"{table}[{i}] {what}", {**snap, table: changed}


@pytest.mark.clause("MSG-4", "INV-6")
@pytest.mark.parametrize("table", sorted(TABLE_SECTIONS))
def test_a_row_duplicated_or_removed_changes_its_section(table: str) -> None:
    """One row of the table more (as it is, or under fresh ids: the same message sent again under
    a new ``message_id``), or one fewer: the section the table feeds differs."""
    tried = 0
    blind = []
    for snap in _snapshots_with(table):
        before = abstract(snap)
        for what, mutated in _row_mutations(snap, table):
            after = abstract(mutated)
            tried += 1
            if all(before[section] == after[section] for section in TABLE_SECTIONS[table]):
                blind.append(f"{what}: {TABLE_SECTIONS[table]} unchanged in {json.dumps(before)[:300]}")
    assert tried, f"no snapshot of the corpus has a {table} row"
    assert not blind, f"{len(blind)} of {tried} changes of {table} unseen:\n" + "\n".join(blind[:5])


def _field_mutations(table: str, path: str) -> Iterator[tuple[Snapshot, Row, str, Snapshot]]:
    for snap in _snapshots_with(table):
        for i, row in enumerate(snap[table]):
            try:
                value = _get(row, path)
            except (KeyError, TypeError):
                continue
            for other in _others(table, path, value):
                changed = copy.deepcopy(row)
                _set(changed, path, other)
                rows = [*snap[table][:i], changed, *snap[table][i + 1 :]]
                yield snap, row, f"{table}[{i}].{path}: {value!r} -> {other!r}", {**snap, table: rows}


def _classified() -> list[tuple[str, str]]:
    return sorted({key for key in VALUES if key[0] in TABLE_SECTIONS})


@pytest.mark.clause("MSG-4", "INV-6")
@pytest.mark.parametrize("field", sorted(READ), ids=[f"{t}.{p}" for t, p in sorted(READ)])
def test_each_field_read_changes_the_abstraction(field: tuple[str, str]) -> None:
    """A field the abstraction reads, changed to another value (another valid status, a counter
    bumped, an owner changed, an incarnation bumped, a list one longer), changes ``abstract``; in a
    row where the field is documented as not read (a message kind whose delivery status is the
    implementation's own), it changes nothing."""
    table, path = field
    when = READ[field]
    read = blind = 0
    problems = []
    for snap, row, what, mutated in _field_mutations(table, path):
        same = abstract(mutated) == abstract(snap)
        if when(row):
            read += 1
            if same:
                problems.append(f"unseen: {what}")
        elif not same:
            blind += 1
            problems.append(f"seen though documented as ignored: {what}")
    assert read, f"the corpus never changes {table}.{path} where it is read"
    assert not problems, "\n".join(problems[:8])


IGNORED_FIELDS = [key for key in _classified() if key not in READ and _ignored(*key)]


@pytest.mark.clause("MSG-2")
@pytest.mark.parametrize("field", IGNORED_FIELDS, ids=[f"{t}.{p}" for t, p in IGNORED_FIELDS])
def test_a_field_the_abstraction_ignores_changes_nothing(field: tuple[str, str]) -> None:
    """Timestamps, deadlines of plans and approvals, free text, bodies, versions, the history: the
    implementation's own, so changed they leave ``abstract`` as it was."""
    table, path = field
    seen = [what for snap, _, what, mutated in _field_mutations(table, path) if abstract(mutated) != abstract(snap)]
    assert not seen, "\n".join(seen[:8])


@pytest.mark.clause("MSG-2")
def test_ids_renamed_everywhere_change_nothing_and_ignored_tables_are_ignored() -> None:
    """Every opaque id renamed everywhere it occurs (as another implementation names its
    protocols and messages), the audit log emptied, the clock moved: ``abstract`` is unchanged."""
    for snap in corpus():
        text = json.dumps(snap, sort_keys=True)
        for table, paths in IDS.items():
            for row in snap.get(table, []):
                for path in paths:
                    text = text.replace(json.dumps(_get(row, path)), json.dumps(f"opaque-{uuid.uuid4()}"))
        renamed = json.loads(text)
        assert abstract(renamed) == abstract(snap)
        quiet = {**snap, **{t: [] for t in IGNORED_TABLES if t in snap}, "clock": snap.get("clock", 0) + 7}
        assert abstract(quiet) == abstract(snap)


@pytest.mark.clause("MSG-4", "INV-6")
def test_every_field_and_section_is_classified() -> None:
    """Every table of the snapshots is read (with the sections it feeds) or ignored; every leaf
    field of a table read is read, an opaque id or ignored, and not two of these; every section of
    ``abstract``'s output is fed by a table; every field read occurs in the corpus."""
    tables = {t for snap in corpus() for t, rows in snap.items() if isinstance(rows, list)}
    tops = {t for snap in corpus() for t, rows in snap.items() if not isinstance(rows, list)}
    assert tables - set(TABLE_SECTIONS) - IGNORED_TABLES == set(), "tables neither read nor ignored"
    assert tops <= IGNORED_TOP
    sections = {s for snap in corpus() for s in abstract(snap)}
    assert sections == {s for fed in TABLE_SECTIONS.values() for s in fed}, "sections no table feeds"
    ids = {(t, p) for t, paths in IDS.items() for p in paths}
    unclassified = [key for key in _classified() if key not in READ and key not in ids and not _ignored(*key)]
    assert unclassified == [], "fields neither read, ids nor ignored"
    assert [key for key in READ if key in ids or key in IGNORED] == []
    assert [key for key in READ if key not in VALUES] == [], "fields read that the corpus never has"
