"""Harness instances and the work they have in flight (REC-4).

Two instances over one store: one consumes an approval and stops inside it (after its execution
record, before the call); the other reconciles. While the first is live, its consumption is
left as it is; once it has closed, or its process is gone (a recycled pid, a SIGKILLed process),
the survivor takes it over (APR-8). A forged mark, a corrupt instance row or a bad instance id is
refused, typed, and changes nothing.

Clause: REC-4, APR-8, REC-2, STO-3, STO-4.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import reference as r
from reference import _instances
from reference._storage import UNLOGGED
from spec import invariants
from spec.ids import protocol_id

ROOT = Path(__file__).resolve().parent.parent
ARGS = {"path": "srv/app"}
CTX = r.CallContext("m0", 1, "call-1", "t0")
PID = protocol_id("m0", "call-1", "operation_approval")
MARK = f"operation_approval/{PID}"


def deploy(world: r.RecordingTool) -> r.Tool:
    return world.tool(normalize=r.normalize_paths("path"))


def second_view(storage: r.Storage) -> r.Storage:
    """Another instance's own view of the same store: a connection of its own (SQLite), or a
    storage object over the same rows (memory) — as another process has."""
    if isinstance(storage, r.SQLiteStorage):
        return r.SQLiteStorage(storage.path)
    view = r.MemoryStorage()
    view._rows, view._lock = storage._rows, storage._lock  # type: ignore[attr-defined]
    return view


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[r.Storage]:
    storage: r.Storage = r.MemoryStorage() if request.param == "memory" else r.SQLiteStorage(tmp_path / "team.db")
    yield storage
    storage.close()


def approved(storage: r.Storage, world: r.RecordingTool) -> None:
    """m0 holds t0 and its approval ``PID`` is approved; the set-up's instance closes."""
    setup = r.Harness(storage, r.ManualClock(0.0), [deploy(world)])
    setup.add_member("m0", ["deploy"])
    setup.add_task("t0")
    setup.claim("m0", "t0")
    setup.approvals.call(CTX, "deploy", ARGS)
    setup.approvals.review("lead", PID, "approved", "ok")
    setup.close()


def stopped_inside_consume(storage: r.Storage, world: r.RecordingTool) -> r.Harness:
    """Instance A consumes and stops after writing its execution record, before the call."""
    consumer = r.Harness(storage, r.ManualClock(1.0), [deploy(world)])
    storage.faults.crash_after.add("approval.consume/execution")
    with pytest.raises(r.Crash):
        consumer.approvals.call(CTX, "deploy", ARGS, approval_id=PID)
    return consumer


def execution(storage: r.Storage) -> dict[str, object]:
    stored = storage.read("tool_execution", PID)
    assert stored is not None
    return stored.doc


@pytest.mark.clause("REC-4", "APR-8", "REC-2")
def test_a_live_instances_consumption_is_left_and_a_closed_ones_taken_over(store: r.Storage) -> None:
    """B reconciles while A, live, is inside its consumption: A's execution stays ``started``,
    nothing is called, nothing logged for it. A closes: B takes it over (looked up by key: the
    call never happened), and every invariant holds."""
    world = r.RecordingTool()
    approved(store, world)
    consumer = stopped_inside_consume(store, world)
    other = second_view(store)
    survivor = r.Harness(other, r.ManualClock(2.0), [deploy(world)])
    try:
        survivor.reconcile()
        assert execution(store)["status"] == "started"
        assert store.writer("operation_approval", PID) == consumer.storage.instance_id
        assert world.calls == []
        consumer.close()
        survivor.reconcile()
        assert execution(store)["status"] == "failed" and world.calls == []
        assert store.writer("operation_approval", PID) is None  # its log entry ended the operation
        assert invariants.check_state(survivor.snapshot()) == []
    finally:
        if other is not store:
            other.close()


@pytest.mark.clause("REC-4", "APR-8")
def test_an_instance_takes_over_its_own_work_after_a_crash(store: r.Storage) -> None:
    """In-process restart (the model's crash): a new harness over the same storage is the same
    instance, and reconciles what it left, as before REC-4."""
    world = r.RecordingTool()
    approved(store, world)
    stopped_inside_consume(store, world)
    r.Harness(store, r.ManualClock(2.0), [deploy(world)]).reconcile()
    assert execution(store)["status"] == "failed"


@pytest.mark.clause("REC-4")
@pytest.mark.parametrize("registered", [-1, +1], ids=["older", "newer"])
def test_a_recycled_pid_is_not_the_live_process_it_once_was(store: r.Storage, registered: int) -> None:
    """A's row names this very pid, but another start time: the process that had it is gone. A
    real recycled pid is the "older" case — the process that registered started before the one that
    holds the pid now; "newer" is the impossible other direction, judged gone too (an outside
    review's plant that compared the times with >= survived while only "newer" was tested)."""
    world = r.RecordingTool()
    approved(store, world)
    consumer = stopped_inside_consume(store, world)
    row = store._read(_instances.INSTANCES, consumer.storage.instance_id)
    assert row is not None
    doc = json.loads(row[1])
    assert doc["pid"] == os.getpid() and doc["status"] == "open"
    if doc["started"] is None:
        pytest.skip("no /proc here: the pid alone decides")
    doc["started"] += registered
    store._update(_instances.INSTANCES, consumer.storage.instance_id, json.dumps(doc), row[0])
    other = second_view(store)
    try:
        r.Harness(other, r.ManualClock(2.0), [deploy(world)]).reconcile()
        assert execution(store)["status"] == "failed"
    finally:
        if other is not store:
            other.close()


def _rows(storage: r.Storage) -> object:
    if isinstance(storage, r.SQLiteStorage):
        return storage._query("SELECT tbl, key, version, doc FROM records ORDER BY tbl, key", ())
    return sorted(storage._rows.items())  # type: ignore[attr-defined]


@pytest.mark.clause("REC-4", "STO-3")
@pytest.mark.parametrize("bad", ["forged mark", "corrupt instance row", "mark not JSON"])
def test_bad_marks_and_instance_rows_are_refused_typed_and_change_nothing(store: r.Storage, bad: str) -> None:
    """A mark naming an instance that never registered, an instance row that is not one, a mark
    that names no id: reconciliation refuses, definite, naming the row, before writing anything."""
    world = r.RecordingTool()
    approved(store, world)
    consumer = stopped_inside_consume(store, world)
    if bad == "forged mark":
        store.corrupt(UNLOGGED, MARK, json.dumps({"writer": "ghost"}))  # type: ignore[attr-defined]
        expected: type[Exception] = _instances.UnknownInstance
        named = "'ghost'"
    elif bad == "corrupt instance row":
        store.corrupt(_instances.INSTANCES, consumer.storage.instance_id, "{torn")  # type: ignore[attr-defined]
        expected, named = r.CorruptRecord, f"~instance/{consumer.storage.instance_id}"
    else:
        store.corrupt(UNLOGGED, MARK, "[1]")  # type: ignore[attr-defined]
        expected, named = r.CorruptRecord, f"~unlogged/{MARK}"
    other = second_view(store)
    try:
        before = _rows(store)
        with pytest.raises(expected, match=named) as caught:
            r.Harness(other, r.ManualClock(2.0), [deploy(world)]).reconcile()
        assert caught.value.definite  # type: ignore[attr-defined]
        assert _rows(store) == before
    finally:
        if other is not store:
            other.close()


@pytest.mark.clause("REC-4")
def test_bad_and_taken_instance_ids_are_refused_typed(store: r.Storage) -> None:
    """An id that could not be one (it would end up in SQL and in every mark) is refused; so is an
    id a live instance holds — taking it would take that instance's work. A closed one's may be
    opened again: its work is then the opener's own."""
    before = _rows(store)
    with pytest.raises(_instances.BadInstanceId, match="not 1-80 letters"):
        store.open_instance("x'); DROP TABLE records; --")
    assert _rows(store) == before and not store.registered
    store.open_instance("lead-1")
    other = second_view(store)
    try:
        with pytest.raises(_instances.InstanceInUse, match="lead-1 is open in live process"):
            other.open_instance("lead-1")
        store.close_instance()
        assert other.open_instance("lead-1") == "lead-1"
        assert _instances.summary(store)["lead-1"]["status"] == "open"
    finally:
        if other is not store:
            other.close()


CHILD = """
import sys, time
import reference as r
def run(key, arguments):
    time.sleep(120)  # the call hangs: this process is inside its consumption
    return {"ok": True}
tool = r.Tool("deploy", run, r.normalize_paths("path"))
harness = r.Harness(r.SQLiteStorage(sys.argv[1]), r.ManualClock(1.0), [tool])
harness.approvals.call(r.CallContext("m0", 1, "call-1", "t0"), "deploy", {"path": "srv/app"}, approval_id=sys.argv[2])
"""


@pytest.mark.clause("REC-4", "APR-8", "STO-4")
def test_a_sigkilled_processs_consumption_is_taken_over_by_the_survivor(tmp_path: Path) -> None:
    """Two OS processes over one SQLite file: the child consumes and hangs in the call; the
    survivor's reconciliation leaves it while the child lives, and takes it over once the child
    is SIGKILLed — a zombie not yet reaped is gone too."""
    path = tmp_path / "team.db"
    world = r.RecordingTool()
    setup = r.SQLiteStorage(path)
    approved(setup, world)
    setup.close()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), PID], cwd=ROOT)
    storage = r.SQLiteStorage(path)
    try:
        survivor = r.Harness(storage, r.ManualClock(2.0), [deploy(world)])
        deadline = time.monotonic() + 30
        while storage.read("tool_execution", PID) is None:
            assert child.poll() is None and time.monotonic() < deadline, "the child never began its call"
            time.sleep(0.05)
        survivor.reconcile()
        assert execution(storage)["status"] == "started"
        writer = storage.writer("operation_approval", PID)
        instance = _instances.read(storage, writer) if writer is not None else None
        assert instance is not None and instance.pid == child.pid and _instances.alive(instance)
        child.send_signal(signal.SIGKILL)  # not reaped: a zombie, until the finally below
        until = time.monotonic() + 10
        while _instances.alive(instance):
            assert time.monotonic() < until, "a SIGKILLed process still counts as live"
            time.sleep(0.01)
        survivor.reconcile()
        assert execution(storage)["status"] == "failed"
        assert invariants.check_state(survivor.snapshot()) == []
    finally:
        child.kill()
        child.wait(timeout=30)
        storage.close()


@pytest.mark.clause("REC-4")
def test_a_forked_child_registers_its_own_start_time(tmp_path: Path) -> None:
    """The process facts an instance registers are read once a process: a child forked after its
    parent registered one reads its own start time, not its parent's (with the parent's, any
    reconciliation would take the child for a recycled pid and take over its live work)."""
    parent = r.SQLiteStorage(tmp_path / "team.db")
    parent.open_instance()
    parent.close()
    child = os.fork()
    if child == 0:  # the child: register an instance and judge it as a survivor would
        code = 1
        try:
            storage = r.SQLiteStorage(tmp_path / "team.db")
            mine = _instances.read(storage, storage.open_instance())
            stat = _instances._stat(os.getpid())
            same = mine is not None and mine.pid == os.getpid() and (stat is None or mine.started == int(stat[19]))
            code = 0 if same and _instances.alive(mine) else 1  # type: ignore[arg-type]
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child registered its parent's start time"


@pytest.mark.clause("REC-4")
def test_closing_the_store_itself_closes_its_instance(store: r.Storage) -> None:
    """``Storage.close()`` (not only ``Harness.close()``) marks its instance closed, as another
    connection sees it: what it left in flight may be taken over at once, not only once its
    process is gone (an outside review closed the SQLite connection alone, and every test closed
    through the harness)."""
    instance_id = store.open_instance()  # as a harness's first write does
    other = second_view(store)
    try:
        seen = _instances.read(other, instance_id)
        assert seen is not None and seen.status == "open" and _instances.alive(seen)
        store.close()
        seen = _instances.read(other, instance_id)
        assert seen is not None and seen.status == "closed" and not _instances.alive(seen)
    finally:
        other.close()


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # reaped: no process has it now (a new one taking it at once is vanishingly rare)


@pytest.mark.clause("REC-4")
@pytest.mark.parametrize(
    ("host", "boot", "process", "status", "alive"),
    [
        ("other", "other", "gone", "open", True),  # another host's processes cannot be looked at
        ("other", "same", "gone", "open", True),
        ("other", None, "gone", "open", True),
        ("other", "other", "gone", "closed", False),
        ("same", "other", "live", "open", False),  # rebooted since: every process of that boot is gone
        ("same", "same", "live", "open", True),
        ("same", "same", "gone", "open", False),
        ("same", "same", "recycled", "open", False),  # the pid lives, started at another time
        ("same", None, "live", "open", True),  # no boot id: the pid and its start time decide
        ("same", "same", "live", "closed", False),
    ],
)
def test_whether_an_instance_can_still_finish_its_work(
    host: str, boot: str | None, process: str, status: str, alive: bool
) -> None:
    """REC-4's ``alive`` over host × boot × process × status, against the rule: closed is gone;
    an open instance on another host counts as alive whatever its boot (it is never taken over from
    here); on this host another boot is gone, and then the pid must live with its start time (an
    outside review swapped the boot and host checks: another host's live work was taken over)."""
    me = _instances.this_process("h-me")
    pid = {"live": me.pid, "recycled": me.pid, "gone": _gone_pid()}[process]
    started = None if me.started is None else me.started + (1 if process == "recycled" else 0)
    boot_id = {"same": me.boot, "other": "another-boot", None: None}[boot]
    instance = _instances.Instance("h-them", pid, started, boot_id, me.host if host == "same" else "elsewhere", status)
    if process == "recycled" and me.started is None:
        pytest.skip("no /proc here: a recycled pid cannot be told from its first process")
    assert _instances.alive(instance) is alive


@pytest.mark.clause("REC-4", "APR-4", "REC-2")
def test_a_live_instances_request_past_its_deadline_is_left_to_it(store: r.Storage) -> None:
    """A, live, stopped between its approval's record and its audit entry; the deadline passes.
    B's reconciliation leaves A's record exactly as it is — not expired, not logged, still A's —
    though a requested approval past its deadline is what reconciliation expires; once A closes,
    B expires it and logs it (an outside review moved the deadline check before the REC-4 skip)."""
    world = r.RecordingTool()
    setup = r.Harness(store, r.ManualClock(0.0), [deploy(world)])
    setup.add_member("m0", ["deploy"])
    setup.add_task("t0")
    setup.claim("m0", "t0")
    setup.close()
    requester = r.Harness(store, r.ManualClock(0.0), [deploy(world)])
    store.faults.crash_after.add("approval.request/record")
    with pytest.raises(r.Crash):
        requester.approvals.call(CTX, "deploy", ARGS)
    before = store.read("operation_approval", PID)
    assert before is not None and before.doc["status"] == "requested"
    other = second_view(store)
    survivor = r.Harness(other, r.ManualClock(before.doc["deadline"] + 1), [deploy(world)])
    try:
        entries = len(other.audit_entries(PID))
        survivor.reconcile()
        assert store.read("operation_approval", PID) == before, "REC-4: a live instance's record was changed"
        assert len(other.audit_entries(PID)) == entries and store.writer("operation_approval", PID) is not None
        requester.close()
        survivor.reconcile()
        after = store.read("operation_approval", PID)
        assert after is not None and after.doc["status"] == "expired"
        assert invariants.check_state(survivor.snapshot()) == []
    finally:
        if other is not store:
            other.close()


@pytest.mark.clause("REC-4", "STO-3")
@pytest.mark.parametrize(
    "text, reason",
    [
        ("{torn", "not JSON (Expecting property name"),
        (
            '{"instance_id": "h-1"}',
            "expected exactly the fields ['boot', 'host', 'instance_id', 'pid', 'started', 'status']",
        ),
        (
            '{"instance_id": "h-1", "pid": "12", "started": null, "boot": null, "host": "a", "status": "open"}',
            "$.pid: '12' has the wrong type",
        ),
        (
            '{"instance_id": "h-1", "pid": 12, "started": null, "boot": null, "host": "a", "status": "lost"}',
            "its status is not open or closed, or its id is not its key",
        ),
        (
            '{"instance_id": "h-2", "pid": 12, "started": null, "boot": null, "host": "a", "status": "open"}',
            "its status is not open or closed, or its id is not its key",
        ),
    ],
    ids=["not JSON", "fields", "type", "status", "id"],
)
def test_a_bad_instance_row_names_its_table_its_key_and_what_is_wrong(text: str, reason: str) -> None:
    """STO-3: the refusal says which row of which table is bad and how (found by the mutation score
    of ``reference/_instances.py``: a refusal naming no table, no key or no reason passed)."""
    with pytest.raises(r.CorruptRecord) as caught:
        _instances.parse("h-1", text)
    error = caught.value
    assert (error.table, error.key) == (_instances.INSTANCES, "h-1")
    assert error.reason.startswith(reason), error.reason
    assert str(error).startswith(f"corrupt record ~instance/h-1: {reason}")


@pytest.mark.clause("REC-4")
def test_a_bad_instance_id_is_kept_on_its_refusal() -> None:
    with pytest.raises(_instances.BadInstanceId) as caught:
        _instances.check_id("no spaces allowed")
    assert caught.value.instance_id == "no spaces allowed" and caught.value.definite


@pytest.mark.clause("REC-4", "STO-3")
def test_a_mark_forged_after_the_owners_were_read_names_its_record(store: r.Storage) -> None:
    """A mark that names an instance that never registered, met by :meth:`Owners.elsewhere` after
    the owners were read (a writer since), is refused naming the record it marks, not nothing."""
    world = r.RecordingTool()
    approved(store, world)
    stopped_inside_consume(store, world)
    owners = _instances.Owners(store)
    store.corrupt(UNLOGGED, MARK, json.dumps({"writer": "ghost"}))  # type: ignore[attr-defined]
    with pytest.raises(_instances.UnknownInstance) as caught:
        owners.elsewhere("operation_approval", PID)
    assert (caught.value.instance_id, caught.value.subject) == ("ghost", MARK)
    assert str(caught.value).startswith(f"{MARK} is marked in flight by instance 'ghost', which never registered")


@pytest.mark.clause("REC-4")
@pytest.mark.skipif(not Path("/proc/sys/kernel/random/boot_id").exists(), reason="no boot id on this system")
def test_this_process_knows_its_boot(store: r.Storage) -> None:
    """An instance row carries the boot it was opened in (a reboot ends every process of the last
    one, REC-4): the kernel's boot id, read, not left out."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    assert _instances._boot() == boot
    store.open_instance("lead-1")
    assert _instances.summary(store)["lead-1"]["boot"] == boot


@pytest.mark.clause("REC-4")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc on this system")
def test_a_live_process_named_in_other_letters_is_alive(tmp_path: Path) -> None:
    """``/proc/<pid>/stat`` names the command as the process set it, in any bytes: a process whose
    name is not ASCII is still read, and still alive (REC-4 never takes over its work)."""
    named = tmp_path / "žaba"
    named.symlink_to(Path(sys.executable))
    child = subprocess.Popen([str(named), "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while "žaba".encode() not in Path(f"/proc/{child.pid}/stat").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        stat = _instances._stat(child.pid)
        assert stat is not None and stat[0] in "RSD"
        me = _instances.this_process("other")
        instance = _instances.Instance("other", child.pid, int(stat[19]), me.boot, me.host)
        assert _instances.alive(instance)
    finally:
        child.kill()
        child.wait()
