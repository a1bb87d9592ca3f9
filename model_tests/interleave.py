"""Deterministic exploration of concurrent harness instances (DESIGN rule 9; STO-4, APR-5, APR-6).

Several harness instances — as separate processes would be — share one storage: on memory one
row dictionary, each instance with its own :class:`~reference.MemoryStorage` view of it; on SQLite
one file, each instance with its own connection. Each instance runs its operations on a thread of
its own, but the scheduler lets exactly one thread run at a time and decides, at every *yield
point*, which one goes next — as FoundationDB's simulation, Loom and shuttle do. A failing
schedule is a list of instance numbers and replays exactly (:func:`run`).

Yield points. A thread stops before every access to what instances share: every statement on
the storage (on memory, every backend call: read, scan, last, insert, update; on SQLite, every SQL
statement) and every call to the external tool (its run and its lookup). So every named write
step is a yield point, and so is every **read**. Reads must be: the protocol's compare-and-set
window is a read (the check) followed by a write (the CAS); a bug lives in what another instance
commits *between* the two. A consume that re-reads the approval just before its CAS passes if
the re-read and the check run in one uninterrupted segment, and an SQLite CAS built as
"SELECT the version, then UPDATE without ``WHERE version = ?``" is two statements inside one write
step. Only read yield points — at statement granularity, inside the write step — expose either
(the mutants ``consume_rereads_before_cas`` and ``sqlite_cas_check_then_act`` are caught here and
nowhere else). Code between two accesses touches nothing another instance can see, so no other
yield point is needed: any interleaving of the threads is equivalent to one of these.

Exhaustive and small. The explorer is a depth-first search over schedules that replays each from
a fresh copy of the prepared world (threads cannot be copied). A *node* is what determines the
rest of the run: the shared storage's rows, the external world's calls, and, per thread, the
results it has observed so far (the harness is deterministic given them: injected clocks, name
based ids). Two schedules that reach the same node have the same futures, so each node is expanded
once; the explored nodes form a DAG whose root-to-end paths are *every* interleaving, and which
counts them exactly (:attr:`Exploration.interleavings`) without running each one.

Checks (see ``model_tests/test_interleave.py``): every ``spec.invariants`` state predicate on
each final snapshot, before and after a reconciliation, and the step predicates from the initial
to the final snapshot; and linearizability: each final outcome — what each caller got back
(result or typed error) and the final snapshot with the external world's calls — equals the
outcome of some serial order of the same operations (each instance's own operations in order).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import reference as r
from spec import invariants

Access = tuple[str, ...]
"""What a thread is about to do at a yield point, e.g. ``("update", "operation_approval", pid)``."""


class Abandon(BaseException):
    """Raised in a parked thread to end a run early (its node was explored already)."""


CRASHABLE = ("insert", "update", "call", "INSERT", "UPDATE", "DELETE")
"""The accesses before which an instance may crash (``explore(..., crashes=True)``): its writes (a
backend call on memory, an SQL statement on SQLite: each write step is one, so a crash before it
is a crash between two write steps) and its calls to the external tool. A crash before a read
leaves what a crash before the next write leaves (a read changes nothing another instance sees),
so those add no state."""


def _crashable(access: Access | None) -> bool:
    return access is not None and (access[0] if access[0] != "sql" else access[1].upper()) in CRASHABLE


def crash_choice(index: int) -> int:
    """The schedule's entry for "instance ``index`` crashes now": ``-1 - index`` (``~index``)."""
    return -1 - index


class Scheduler:
    """Owns every yield point: one instance thread runs at a time, the controller picks the next."""

    def __init__(self, threads: int) -> None:
        self._go = [threading.Semaphore(0) for _ in range(threads)]
        self._back = threading.Semaphore(0)
        self._local = threading.local()
        self.pending: list[Access | None] = [None] * threads
        self.history: list[list[Any]] = [[] for _ in range(threads)]
        self.abandoned = False
        self.crashing: int | None = None
        self.atomic: int | None = None  # a thread that runs on without yielding (a restart)
        self.attempted: set[str] = set()  # the write steps of the instances' compare-and-sets
        self.lost: set[str] = set()  # those of them that lost one (VersionConflict)

    def attach(self, index: int) -> None:
        self._local.index = index

    def point(self, access: Access) -> None:
        """Called by an instance thread just before a shared access: park until chosen."""
        index = getattr(self._local, "index", None)
        if index is None or index == self.atomic:  # the controller (set-up, snapshots), or a restart
            return
        self.pending[index] = access
        self._back.release()
        self._go[index].acquire()
        if self.abandoned:
            raise Abandon
        if self.crashing == index:  # the process dies here, before this access (REC-1)
            self.crashing = None
            self.history[index].append((access, "crashed"))
            raise r.Crash(f"{access[0]} {access[1]}", "before")

    def observe(self, result: Any) -> None:
        index = getattr(self._local, "index", None)
        if index is not None:
            self.history[index].append((self.pending[index], result))

    def finished(self, index: int) -> None:
        self.pending[index] = None
        self._back.release()

    def step(self, index: int) -> None:
        """Let thread ``index`` run up to its next yield point or its end."""
        assert self.pending[index] is not None, index
        self._go[index].release()
        self._back.acquire()

    def crash(self, index: int) -> None:
        """Let thread ``index`` die at its pending access and run its restart (see
        :meth:`Execution._restart`) up to its first yield point or its end."""
        assert self.pending[index] is not None, index
        self.crashing = index
        self._go[index].release()
        self._back.acquire()

    def wait_parked(self) -> None:
        self._back.acquire()

    def release_all(self) -> None:
        self.abandoned = True
        for index, access in enumerate(self.pending):
            if access is not None:
                self._go[index].release()


def _observed(scheduler: Scheduler, access: Access, action: Callable[[], Any]) -> Any:
    scheduler.point(access)
    try:
        result = action()
    except Exception as error:
        scheduler.observe(("raised", type(error).__name__))
        raise
    scheduler.observe(result)
    return result


class _CompareAndSets:
    """Both scheduled views: every compare-and-set an instance makes (an update, a guarded insert)
    is noted under its write step, and whether it lost (STO-4): what :attr:`Exploration.unlost`
    is made of."""

    scheduler: Scheduler

    def update(
        self, step: str, table: str, key: str, doc: dict[str, Any], expected_version: int, guard: Any = None
    ) -> r.Stored:
        return self._noted(
            step, lambda: super(_CompareAndSets, self).update(step, table, key, doc, expected_version, guard)
        )  # type: ignore[misc]

    def insert(self, step: str, table: str, key: str, doc: dict[str, Any], guard: Any = None) -> r.Stored:
        write = lambda: super(_CompareAndSets, self).insert(step, table, key, doc, guard)  # type: ignore[misc]  # noqa: E731
        return write() if guard is None else self._noted(step, write)  # type: ignore[no-any-return]

    def _noted(self, step: str, write: Callable[[], r.Stored]) -> r.Stored:
        self.scheduler.attempted.add(step)
        try:
            return write()
        except r.VersionConflict:
            self.scheduler.lost.add(step)
            raise


class ScheduledMemory(_CompareAndSets, r.MemoryStorage):
    """One instance's view of a shared in-memory store; every backend call is a yield point."""

    def __init__(self, shared: r.MemoryStorage, scheduler: Scheduler) -> None:
        super().__init__()
        self._rows, self._lock, self.scheduler = shared._rows, shared._lock, scheduler

    def _read(self, table: str, key: str) -> tuple[int, str] | None:
        return _observed(self.scheduler, ("read", table, key), lambda: super(ScheduledMemory, self)._read(table, key))

    def _scan(self, table: str) -> list[tuple[str, int, str]]:
        return _observed(self.scheduler, ("scan", table), lambda: super(ScheduledMemory, self)._scan(table))

    def _insert(self, table: str, key: str, text: str) -> int:
        call = lambda: super(ScheduledMemory, self)._insert(table, key, text)  # noqa: E731
        return _observed(self.scheduler, ("insert", table, key), call)

    def _update(self, table: str, key: str, text: str, expected_version: int) -> int:
        call = lambda: super(ScheduledMemory, self)._update(table, key, text, expected_version)  # noqa: E731
        return _observed(self.scheduler, ("update", table, key), call)

    def _insert_guarded(self, table: str, key: str, *rest: Any) -> int:
        """A guarded insert: one atomic step, one yield point."""
        call = lambda: super(ScheduledMemory, self)._insert_guarded(table, key, *rest)  # type: ignore[misc]  # noqa: E731
        return _observed(self.scheduler, ("insert", table, key), call)  # type: ignore[no-any-return]

    def _update_guarded(self, table: str, key: str, *rest: Any) -> int:
        """A guarded compare-and-set (where the storage has one): one atomic step, one yield point."""
        call = lambda: super(ScheduledMemory, self)._update_guarded(table, key, *rest)  # type: ignore[misc]  # noqa: E731
        return _observed(self.scheduler, ("update", table, key), call)  # type: ignore[no-any-return]


class ScheduledSQLite(_CompareAndSets, r.SQLiteStorage):
    """One instance's own connection to the shared file; every SQL statement is a yield point."""

    def __init__(self, path: str | Path, scheduler: Scheduler) -> None:
        super().__init__(path)
        self.scheduler = scheduler

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        access = ("sql", sql.split()[0], *map(str, args[:2]))
        return _observed(self.scheduler, access, lambda: super(ScheduledSQLite, self)._query(sql, args))

    def _execute(self, table: str, key: str, sql: str, args: tuple[Any, ...]) -> sqlite3.Cursor:
        def run() -> sqlite3.Cursor:
            return super(ScheduledSQLite, self)._execute(table, key, sql, args)

        self.scheduler.point(("sql", sql.split()[0], table, key))
        try:
            cursor = run()
        except Exception as error:
            self.scheduler.observe(("raised", type(error).__name__))
            raise
        self.scheduler.observe(cursor.rowcount)
        return cursor


def _fast_folder() -> Path:
    """Files on tmpfs when there is one: SQLite's fsync (``synchronous=FULL``) costs nothing there."""
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="teamproto-interleave-", dir=shm if shm.is_dir() else None))


class MemoryBackend:
    """One shared row dictionary; a fresh copy of the prepared world for every run."""

    name = "memory"

    def __init__(self) -> None:
        self._template: dict[tuple[str, str], tuple[int, str]] = {}
        self.shared = r.MemoryStorage()

    def prepare(self, setup: Callable[[r.Storage], None]) -> None:
        store = r.MemoryStorage()
        setup(store)
        store.close()  # the set-up's instance is done (REC-4)
        self._template = dict(store._rows)

    def fresh(self) -> None:
        self.shared = r.MemoryStorage()
        self.shared._rows.update(self._template)

    def instance(self, scheduler: Scheduler) -> r.Storage:
        return ScheduledMemory(self.shared, scheduler)

    def plain(self) -> r.Storage:
        return self.shared

    def rows(self) -> str:
        return repr(sorted(self.shared._rows.items()))

    def end_run(self) -> None:
        """Nothing to release."""

    def close(self) -> None:
        """Nothing to release."""


class SQLiteBackend:
    """One file; every instance opens its own connection to a fresh copy of the prepared file."""

    name = "sqlite"

    def __init__(self) -> None:
        self.folder = _fast_folder()
        self._template = self.folder / "template.db"
        self.path = self.folder / "team.db"
        self._open: list[r.SQLiteStorage] = []
        self._plain: r.SQLiteStorage | None = None

    def prepare(self, setup: Callable[[r.Storage], None]) -> None:
        self._template.unlink(missing_ok=True)
        store = r.SQLiteStorage(self._template)
        setup(store)
        store.close()  # the last connection checkpoints the WAL into the file

    def fresh(self) -> None:
        self.end_run()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self._template, self.path)

    def instance(self, scheduler: Scheduler) -> r.Storage:
        store = ScheduledSQLite(self.path, scheduler)
        self._open.append(store)
        return store

    def plain(self) -> r.Storage:
        if self._plain is None:
            self._plain = r.SQLiteStorage(self.path)
            self._open.append(self._plain)
        return self._plain

    def rows(self) -> str:
        store = self.plain()
        assert isinstance(store, r.SQLiteStorage)
        return repr(store._query("SELECT tbl, key, version, doc FROM records ORDER BY tbl, key", ()))

    def end_run(self) -> None:
        for store in self._open:
            store.registered = False  # the run's world is thrown away: no instance to close in it
            store.close()
        self._open, self._plain = [], None

    def close(self) -> None:
        self.end_run()
        shutil.rmtree(self.folder, ignore_errors=True)


Backend = MemoryBackend | SQLiteBackend


def backend(name: str) -> Backend:
    return MemoryBackend() if name == "memory" else SQLiteBackend()


@dataclass(frozen=True)
class Operation:
    """One call a harness instance makes; ``run`` gets that instance's harness."""

    name: str
    run: Callable[[r.Harness], Any]

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Scenario:
    """A prepared world and, per instance, its clock and the operations it runs in order."""

    name: str
    setup: Callable[[r.Harness], None]
    programs: tuple[tuple[Operation, ...], ...]
    clocks: tuple[float, ...] = ()

    def clock(self, instance: int) -> float:
        return self.clocks[instance] if self.clocks else 0.0

    @property
    def now(self) -> float:
        """The time of the final snapshot: the latest instance clock."""
        return max(self.clocks, default=0.0)


Result = tuple[str, str]
"""``("ok", canonical JSON of the value)``, ``("error", "TypeName: message")``, or
``("crashed", "crash before <access>")`` (then the restart's own result follows)."""

RESTART = Operation("restart: reconcile", lambda h: h.reconcile())
"""What a crashed instance's process does when it starts again (:meth:`Execution._restart`)."""


@dataclass(frozen=True)
class Outcome:
    """What every caller got back, and the final state (snapshot and the external world's calls)."""

    results: tuple[tuple[Result, ...], ...]
    state: str
    schedule: tuple[int, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[tuple[tuple[Result, ...], ...], str]:
        return self.results, self.state


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _scheduled_tool(world: r.RecordingTool, scheduler: Scheduler) -> r.Tool:
    """The external system is shared too: calling it and looking a call up are yield points."""

    def run(key: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return _observed(scheduler, ("call", key), lambda: world.run(key, arguments))  # type: ignore[no-any-return]

    def lookup(key: str) -> dict[str, Any] | None:
        return _observed(scheduler, ("lookup", key), lambda: world.lookup(key))  # type: ignore[no-any-return]

    return r.Tool(world.name, run, lambda arguments: arguments, lookup=lookup)


class Execution:
    """One run of a scenario: a fresh world, one harness and one parked thread per instance."""

    def __init__(self, scenario: Scenario, store: Backend, *, threaded: bool = True, crashes: bool = False) -> None:
        store.fresh()
        self.scenario, self.store, self.crashes = scenario, store, crashes
        self.crashed: int | None = None
        self.world = r.RecordingTool()
        self.scheduler = Scheduler(len(scenario.programs))
        self.schedule: list[int] = []
        self.harnesses = [
            r.Harness(self._registered(i), r.ManualClock(scenario.clock(i)), [self._tool()])
            for i in range(len(scenario.programs))
        ]
        self.results: list[list[Result]] = [[] for _ in scenario.programs]
        self.threads: list[threading.Thread] = []
        if threaded:
            for index in range(len(scenario.programs)):
                thread = threading.Thread(target=self._body, args=(index,), daemon=True)
                self.threads.append(thread)
                thread.start()
                self.scheduler.wait_parked()  # started one by one: deterministic

    def _tool(self) -> r.Tool:
        return _scheduled_tool(self.world, self.scheduler)

    def _registered(self, index: int) -> r.Storage:
        """Instance ``index``'s view, registered as harness instance ``i<index>`` (REC-4) before
        any thread runs: one live instance per program, with names that replay."""
        storage = self.store.instance(self.scheduler)
        storage.open_instance(f"i{index}")
        return storage

    def run_op(self, index: int, operation: Operation) -> None:
        try:
            self.results[index].append(("ok", _canonical(operation.run(self.harnesses[index]))))
        except Exception as error:  # a refusal is an outcome like any other; judged later
            self.results[index].append(("error", f"{type(error).__name__}: {error}"))

    def _body(self, index: int) -> None:
        self.scheduler.attach(index)
        try:
            try:
                for operation in self.scenario.programs[index]:
                    self.run_op(index, operation)
            except r.Crash as crash:
                self.results[index].append(("crashed", str(crash)))
                self._restart(index)
        except Abandon:
            pass
        finally:
            self.scheduler.finished(index)

    def _restart(self, index: int) -> None:
        """The crashed instance's process starts again over its store (the same instance, REC-4:
        its own work in flight is its to finish) and reconciles (REC-1); its program's rest is not
        run. The restart is one move: it waits to be scheduled (the others may act first), then
        reconciles without yielding — the pairs ``X||reconcile`` interleave a reconciliation with
        an operation at every access already, and doing so after every crash too would multiply
        the runs by the reconciliation's accesses."""
        self.scheduler.point(("restart", f"i{index}"))
        self.scheduler.atomic = index
        try:
            dead = self.harnesses[index]
            clock = r.ManualClock(self.scenario.clock(index))
            self.harnesses[index] = r.Harness(dead.storage, clock, [self._tool()])
            self.run_op(index, RESTART)
        finally:
            self.scheduler.atomic = None

    def enabled(self) -> list[int]:
        return [index for index, access in enumerate(self.scheduler.pending) if access is not None]

    def crashable(self) -> list[int]:
        """The crash moves (:func:`crash_choice`) open now: none unless crashes are explored, and
        none once one instance crashed (one crash a run); else one for each instance about to
        write or call the tool (:data:`CRASHABLE`)."""
        if not self.crashes or self.crashed is not None:
            return []
        return [crash_choice(i) for i, access in enumerate(self.scheduler.pending) if _crashable(access)]

    def step(self, index: int) -> None:
        """Let instance ``index`` run to its next yield point; a crash move (negative) crashes it."""
        self.schedule.append(index)
        if index < 0:
            self.crashed = -1 - index
            self.scheduler.crash(self.crashed)
        else:
            self.scheduler.step(index)

    def node(self) -> str:
        """Everything that decides the rest of the run (see the module docstring)."""
        digest = hashlib.sha256(self.store.rows().encode())
        digest.update(repr(self.world.calls).encode())
        for history in self.scheduler.history:
            digest.update(b"\x00" + repr(history).encode())
        return digest.hexdigest()

    def abandon(self) -> None:
        self.scheduler.release_all()
        self._join()

    def _join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=30)
            assert not thread.is_alive(), "an instance thread did not stop"
        self.store.end_run()

    def outcome(self) -> Outcome:
        """The final outcome, checked: every state invariant before and after a reconciliation,
        and the step invariants from the prepared world to the final state."""
        for thread in self.threads:
            thread.join(timeout=30)
        for harness in self.harnesses:  # the instances' processes end: what they left is anyone's (REC-4)
            harness.close()
        outcome, problems = judge(self.scenario, self.store, self.world)
        self._join()
        return Outcome(tuple(map(tuple, self.results)), outcome, tuple(self.schedule), tuple(problems))


def plain_tool(world: r.RecordingTool) -> r.Tool:
    """The unscheduled tool (set-up, snapshots, reconciliation at the end), normalising as the
    scheduled one does."""
    return r.Tool(world.name, world.run, lambda arguments: arguments, lookup=world.lookup)


def _snapshot(scenario: Scenario, store: Backend, world: r.RecordingTool, now: float | None = None) -> dict[str, Any]:
    clock = r.ManualClock(scenario.now if now is None else now)
    return r.Harness(store.plain(), clock, [plain_tool(world)]).snapshot()


ACROSS = "across the run, "
"""The prefix of a step predicate's problem judged from the prepared world to the final state.
Several operations lie between the two, so a step predicate may see what no one step did: two
edges as one (``requested`` → ``draining`` → ``timed_out`` read as ``requested`` → ``timed_out``),
or a start at its instance's clock read at the latest one. Such a problem counts only where no
serial order of the same operations shows it too (:func:`excused`); a serial order's own steps are
judged one operation at a time, each at its instance's clock."""


def excused(serials: Sequence[Outcome]) -> frozenset[str]:
    """The across-the-run problems some serial order shows: what the span of a whole run makes a
    step predicate see when every operation's own step is sound."""
    return frozenset(p for serial in serials for p in serial.problems if p.startswith(ACROSS))


def unexcused(outcome: Outcome, serials: Sequence[Outcome]) -> tuple[str, ...]:
    """``outcome``'s problems but those :func:`excused` by the serial orders (state predicates,
    the audit chain and reconciliation's problems are never excused)."""
    allowed = excused(serials)
    return tuple(p for p in outcome.problems if p not in allowed)


AUDIT_CONTENT = ("actor", "event", "subject_id", "summary", "at")


def comparable(snapshot: dict[str, Any], calls: list[Any]) -> str:
    """The final state as linearizability compares it: the snapshot and the external calls, with
    the audit log taken as the multiset of its entries' contents. An entry is appended in a write
    of its own after its record's (STO-1), so the entries of *different* records may sit in the
    chain in another order than a serial run puts them; AUD-5 fixes the order of one record's
    entries (its events' order, checked by ``decisions_audited`` on every final state) and asks
    for one unbroken chain (verified on every final state), not for one order across records."""
    audit = sorted(tuple(entry[field] for field in AUDIT_CONTENT) for entry in snapshot["audit_entry"])
    return _canonical({"snapshot": {**snapshot, "audit_entry": audit}, "calls": calls})


def judge(scenario: Scenario, store: Backend, world: r.RecordingTool) -> tuple[str, list[str]]:
    final = _snapshot(scenario, store, world)
    problems = [f"{inv.name}: {text}" for inv, text in invariants.check_state(final, reconciled=False)]
    initial = scenario_initial(scenario, store)
    problems += [f"{ACROSS}{inv.name}: {text}" for inv, text in invariants.check_step(initial, final)]
    chain = r.verify_audit_log(store.plain())
    problems += [] if chain.ok else [f"AUD-5: the audit chain is broken at entry {chain.first_bad}: {chain.reason}"]
    harness = r.Harness(store.plain(), r.ManualClock(scenario.now), [plain_tool(world)])
    harness.reconcile()
    reconciled = harness.snapshot()
    problems += [f"after reconcile, {inv.name}: {text}" for inv, text in invariants.check_state(reconciled)]
    return comparable(final, world.calls), problems


_INITIAL: dict[tuple[str, str], dict[str, Any]] = {}


def scenario_initial(scenario: Scenario, store: Backend) -> dict[str, Any]:
    """The snapshot of the prepared world (taken once per scenario and backend)."""
    return _INITIAL[(scenario.name, store.name)]


def prepare(scenario: Scenario, store: Backend) -> None:
    def setup(storage: r.Storage) -> None:
        scenario.setup(r.Harness(storage, r.ManualClock(0.0), [plain_tool(r.RecordingTool())]))

    store.prepare(setup)
    store.fresh()
    _INITIAL[(scenario.name, store.name)] = _snapshot(scenario, store, r.RecordingTool())
    store.end_run()


def run(scenario: Scenario, store: Backend, schedule: Sequence[int]) -> Outcome:
    """Replay one schedule (instance numbers, as printed by a failure; a negative entry is a
    crash move, :func:`crash_choice`, taken where it is open); a choice that is not
    enabled picks ``enabled[choice % len(enabled)]``; after the schedule, the lowest enabled."""
    execution = Execution(scenario, store, crashes=any(choice < 0 for choice in schedule))
    choices = iter(schedule)
    while enabled := execution.enabled():
        choice = next(choices, enabled[0])
        execution.step(
            choice if choice in enabled or choice in execution.crashable() else enabled[choice % len(enabled)]
        )
    return execution.outcome()


def serial_orders(scenario: Scenario) -> Iterator[tuple[int, ...]]:
    """Every order of the operations that keeps each instance's own operations in order."""
    slots = [index for index, program in enumerate(scenario.programs) for _ in program]
    yield from sorted(set(itertools.permutations(slots)))


def serial(scenario: Scenario, store: Backend, order: Sequence[int]) -> Outcome:
    """Run whole operations one after another, in ``order`` (instance numbers), unscheduled."""
    execution = Execution(scenario, store, threaded=False)
    position = [0] * len(scenario.programs)
    problems: list[str] = []
    for index in order:
        before = _snapshot(scenario, store, execution.world, scenario.clock(index))
        execution.run_op(index, scenario.programs[index][position[index]])
        after = _snapshot(scenario, store, execution.world, scenario.clock(index))
        problems += [f"{inv.name}: {text}" for inv, text in invariants.check_step(before, after)]
        position[index] += 1
    outcome = execution.outcome()
    return Outcome(outcome.results, outcome.state, tuple(order), outcome.problems + tuple(problems))


@dataclass
class Exploration:
    """Every interleaving of a scenario on one backend, as a DAG of nodes (see the docstring)."""

    scenario: str
    backend: str
    runs: int = 0
    edges: dict[str, dict[int, str]] = field(default_factory=dict)
    ends: dict[str, Outcome] = field(default_factory=dict)
    attempted: set[str] = field(default_factory=set)
    """The write steps of every compare-and-set an instance made in some run (a restart's too)."""
    lost: set[str] = field(default_factory=set)
    """Those of them that lost one to the other instance in some run (each edge of the DAG is run
    at least once, so a write that can lose here lost in some run)."""

    @property
    def unlost(self) -> set[str]:
        """The compare-and-set steps that never lost here: either no interleaving of the pair can
        make them lose, or the pair does not race them (STO-4's settling left unexercised)."""
        return self.attempted - self.lost

    @property
    def nodes(self) -> int:
        return len(self.edges) + len(self.ends)

    @property
    def interleavings(self) -> int:
        """The number of distinct schedules from start to end: root-to-end paths of the DAG."""
        paths: dict[str, int] = {key: 1 for key in self.ends}

        def count(key: str) -> int:
            if key not in paths:
                paths[key] = sum(count(child) for child in self.edges[key].values())
            return paths[key]

        return count(self.root)

    root: str = ""

    @property
    def outcomes(self) -> list[Outcome]:
        return list(self.ends.values())


def explore(scenario: Scenario, store: Backend, max_runs: int = 20_000, *, crashes: bool = False) -> Exploration:
    """Explore every interleaving of ``scenario`` on ``store`` (depth first, each node once).

    ``crashes``: besides, at every node, one instance may crash before its pending write or tool
    call (:data:`CRASHABLE`; one crash a run); its process starts again and reconciles, as one
    move, at any later point of the others' operations (:meth:`Execution._restart`) — so another
    instance acts between the crash and the reconciliation, and after it (REC-1, REC-2, REC-4)."""
    prepare(scenario, store)
    found = Exploration(scenario.name, store.name)
    frontier: list[tuple[str, tuple[int, ...]]] = [("", ())]
    while frontier:
        assert found.runs < max_runs, f"{scenario.name}: more than {max_runs} runs; is the scenario bounded?"
        parent, prefix = frontier.pop()
        _extend(scenario, store, found, parent, prefix, frontier, crashes)
    return found


def _extend(
    scenario: Scenario,
    store: Backend,
    found: Exploration,
    parent: str,
    prefix: tuple[int, ...],
    frontier: list[tuple[str, tuple[int, ...]]],
    crashes: bool = False,
) -> None:
    """Replay ``prefix``, then follow the lowest enabled instance until a node seen before or the
    end, leaving every other enabled choice (and every open crash move) on the frontier."""
    found.runs += 1
    execution = Execution(scenario, store, crashes=crashes)
    try:
        _follow(found, execution, parent, prefix, frontier)
    finally:
        found.attempted |= execution.scheduler.attempted
        found.lost |= execution.scheduler.lost


def _follow(
    found: Exploration,
    execution: Execution,
    parent: str,
    prefix: tuple[int, ...],
    frontier: list[tuple[str, tuple[int, ...]]],
) -> None:
    for choice in prefix:
        execution.step(choice)
    key = execution.node()
    if parent:
        found.edges[parent][prefix[-1]] = key
    else:
        found.root = key
    while key not in found.edges and key not in found.ends:
        enabled = execution.enabled()
        if not enabled:
            found.ends[key] = execution.outcome()
            return
        found.edges[key] = {}
        others = enabled[1:] + execution.crashable()
        frontier.extend((key, (*execution.schedule, choice)) for choice in reversed(others))
        execution.step(enabled[0])
        child = execution.node()
        found.edges[key][enabled[0]] = child
        key = child
    execution.abandon()


class RawConflict(AssertionError):
    """Known defect 1 (issue 17 item 6): the loser of a compare-and-set race gets the storage's raw
    ``VersionConflict`` instead of re-reading and giving the typed refusal a serial order gives."""


def raw_conflict(outcome: Outcome) -> bool:
    return any(
        kind == "error" and text.startswith("VersionConflict") for program in outcome.results for kind, text in program
    )


def classify(scenario: Scenario, outcome: Outcome, serials: Sequence[Outcome]) -> type[AssertionError]:
    """Which known defect explains an outcome that no serial order gives, or ``AssertionError``:
    :class:`RawConflict` when a caller got a raw ``VersionConflict`` (a monitor pass that stopped
    at it may leave the state behind), else a real failure. (Known defect 2, a reconciliation
    that took another instance's live consumption for a crash prefix, is fixed by REC-4: no
    outcome is excused for it any more.)"""
    return RawConflict if raw_conflict(outcome) else AssertionError


def not_serialisable(outcomes: Sequence[Outcome], serials: Sequence[Outcome], *, results: bool) -> list[Outcome]:
    """The outcomes no serial order gives: compared with what every caller got back
    (``results=True``) or by the final state alone."""
    allowed = {serial.key if results else serial.state for serial in serials}
    return [outcome for outcome in outcomes if (outcome.key if results else outcome.state) not in allowed]


def describe(scenario: Scenario, store: str, outcome: Outcome) -> str:
    lines = [f"{scenario.name} on {store}: schedule {list(outcome.schedule)}"]
    for index, program in enumerate(outcome.results):
        names = [operation.name for operation in scenario.programs[index]]
        if any(kind == "crashed" for kind, _ in program):  # the operations up to the crash, then the restart
            names = [*names[: len(program) - 1], RESTART.name]
        for name, (kind, text) in zip(names, program, strict=False):
            lines.append(f"  instance {index} {name}: {kind} {text[:160]}")
    lines.append(f"  replay: interleave.run(scenario, interleave.backend({store!r}), {list(outcome.schedule)})")
    return "\n".join(lines)


def require_serialisable(
    scenario: Scenario, store: str, outcomes: Sequence[Outcome], serials: Sequence[Outcome], *, results: bool
) -> None:
    """Fail on an outcome that no serial order gives. When a known defect explains every such
    outcome (:func:`classify`), raise its class instead (:class:`RawConflict`) — so a test can
    expect exactly that defect."""
    bad = not_serialisable(outcomes, serials, results=results)
    kinds = [classify(scenario, outcome, serials) for outcome in bad]
    real = [outcome for outcome, kind in zip(bad, kinds, strict=True) if kind is AssertionError]
    what = "what the callers got and the final state" if results else "the final state"
    if real:
        shown = "\n".join(describe(scenario, store, outcome) for outcome in real[:3])
        raise AssertionError(f"linearizability: {what} of {len(real)} outcome(s) is no serial order's:\n{shown}")
    if bad:
        defect = RawConflict
        shown = "\n".join(describe(scenario, store, outcome) for outcome in bad[:2])
        raise defect(f"{defect.__doc__}\n{what} of {len(bad)} outcome(s) is no serial order's:\n{shown}")
