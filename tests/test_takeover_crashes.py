"""A takeover's reconciliation killed after any one of its writes — storage-internal rows included —
and finished by a third instance (REC-1, REC-2, REC-4, REC-5).

``tests/test_convergence.py`` cuts a restart's reconciliation after each *named* write step, once
per name, in the instance that crashed (its own work). Three things it cannot see, which an
outside review planted a bug in (a cut monitor pass of a dead instance marked done before this
instance had finished it: a past-deadline shutdown request then stayed ``requested`` for good):

- the storage-internal writes that carry no step name — the instance registry
  (:data:`reference._instances.INSTANCES`) and the monitor pass's roll-forward row
  (:data:`reference._harness.PASSES`);
- the second and later writes of one step name (a reconciliation writes each record's repair
  under the same name);
- a reconciliation that takes over a dead instance's work (REC-4), with marks and pass rows of
  two instances in the store when it is cut.

Here, for every model write step the reference implements (on SQLite): the reference is replayed
to it and crashes after it (``test_convergence.crashed_at``); its instance ``A`` is gone. A second
instance reconciles in a forked OS process, once whole (to count its writes, ``N``, every
backend write counted: :func:`counting`), and once per ``k`` in ``1..N`` killed (``os._exit``) right
after its ``k``-th write, so that its pid is gone as after a ``SIGKILL``; a third instance then
reconciles. Its outcome must be the model's restart (the refinement projection), every state
invariant holding, the team log intact, and reconciling again must change nothing. The monitor
pass cut after each of its own writes (its row still ``begun``) is the same sweep's starting point
too (:func:`test_a_takeover_of_a_cut_pass_killed_after_any_write_converges`).

Each copy of the store is made with SQLite's backup API, so every ``k`` starts from the same bytes.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import reference as r
from model_tests.replay import Replayer, project
from model_tests.test_monitor_pass_crashes import _due_pass
from model_tests.test_stateful import SqlitePlanComparison
from spec import invariants
from tests.test_convergence import STEPS, crashed_at

RAW_WRITES = ("_insert", "_update", "_insert_guarded", "_update_guarded")
"""Every backend write of :class:`reference.Storage`: the records', the marks' (a trigger of the
same statement), the instance registry's and the monitor pass rows' (``tests/test_write_paths.py``
holds that no other method of the SQLite backend writes)."""

KILLED = 77
"""The exit status of a child killed after its ``k``-th write (any other: it failed)."""


@contextmanager
def counting(storage: r.Storage, after: Callable[[int, str, str], None]) -> Iterator[None]:
    """Call ``after(count, table, key)`` right after each backend write of ``storage``."""
    count = 0

    def wrap(name: str) -> Callable[..., int]:
        write = getattr(storage, name)

        def counted(table: str, key: str, *args: Any) -> int:
            nonlocal count
            version = int(write(table, key, *args))
            count += 1
            after(count, table, key)
            return version

        return counted

    for name in RAW_WRITES:
        setattr(storage, name, wrap(name))
    try:
        yield
    finally:
        for name in RAW_WRITES:
            delattr(storage, name)


def copy_store(source: Path, target: Path) -> Path:
    """A byte-for-byte consistent copy of a SQLite store (write-ahead log included)."""
    target.unlink(missing_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    return target


Make = Callable[[r.Storage], r.Harness]
"""A harness over a storage, with the clock, tools and job runner of the program that made the store."""


def of_replayer(replayer: Replayer) -> Make:
    return lambda storage: r.Harness(storage, replayer.clock, [replayer.world.tool(normalize=lambda a: a)])


def in_child(
    make: Make, path: Path, act: Callable[[r.Harness], object], kill_after: int | None
) -> tuple[int, list[str]]:
    """``act`` on a new harness instance over the store at ``path``, in a forked process killed
    right after its ``kill_after``-th backend write (None: never): (the child's exit status, the
    tables it wrote, in order, and a line ``!error`` if it failed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read)
            h = make(r.SQLiteStorage(path))

            def after(count: int, table: str, key: str) -> None:
                os.write(write, f"{table}\n".encode())
                if count == kill_after:
                    os._exit(KILLED)  # as a SIGKILL: no close, no rollback, the pid gone

            with counting(h.storage, after):
                act(h)
            status = 0
        except BaseException as error:  # a failure is the parent's to report
            os.write(write, f"!{type(error).__name__}: {error}\n".encode())
        finally:
            os._exit(status)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, waited = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(waited), b"".join(chunks).decode().splitlines()


CHAIN = ("sequence", "previous_hash", "hash")


def settled(snap: dict[str, Any]) -> dict[str, Any]:
    """A snapshot with its team log as the set of its entries: an entry a cut operation owed is
    appended by the reconciliation that finishes it, after entries the uncut one would have put
    after it (AUD-5 orders each record's entries, not the team's; the chain itself is checked by
    ``verify_audit_log``)."""
    entries = [{k: v for k, v in entry.items() if k not in CHAIN} for entry in snap["audit_entry"]]
    return {**snap, "audit_entry": sorted(entries, key=lambda entry: json.dumps(entry, sort_keys=True))}


def rows(path: Path, known: frozenset[str] = frozenset()) -> list[tuple[Any, ...]]:
    """Every row of the store at ``path``, storage-internal tables included (read-only); the id of
    an instance registered since ``known`` (the one a run made: a fresh id, its own pid) as
    ``<new>``, so two runs of the same writes read alike."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        found = db.execute("SELECT tbl, key, version, doc FROM records ORDER BY tbl, key").fetchall()
    db.close()
    new = {key for tbl, key, _, _ in found if tbl == "~instance"} - known
    out = []
    for tbl, key, version, doc in found:
        if tbl == "~instance" and key in new:
            doc = "<new instance>"
        for instance in new:
            key, doc = key.replace(instance, "<new>"), doc.replace(instance, "<new>")
        out.append((tbl, key, version, doc))
    return sorted(out)


def instances(path: Path) -> frozenset[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        found = db.execute("SELECT key FROM records WHERE tbl = '~instance'").fetchall()
    db.close()
    return frozenset(key for (key,) in found)


def finished_by_a_third(
    make: Make,
    path: Path,
    expect: Callable[[dict[str, Any]], bool],
    where: str,
    start: list[Any] | None = None,
    known: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A third instance reconciles: ``expect`` of its snapshot, every state invariant, the team
    log, and reconciling again changes nothing. Its snapshot. ``start``: the rows the store must
    hold before it (the sweep judges the store it cut, not another)."""
    if start is not None:
        assert rows(path, known) == start, f"{where}: the third instance is not given the store that was cut"
    h = make(r.SQLiteStorage(path))
    try:
        h.reconcile()
        after = h.snapshot()
        problems = [f"{inv.clause} {inv.name}: {text}" for inv, text in invariants.check_state(after)]
        assert problems == [], f"{where}: {problems}"
        assert expect(after), f"{where}: the takeover does not end where one whole reconciliation does"
        assert r.verify_audit_log(h.storage).ok, f"{where}: the team log is broken"
        again = make(r.SQLiteStorage(path))
        try:
            again.reconcile()
            assert invariants.reconcile_is_idempotent(after, again.snapshot()) == [], f"{where}: not idempotent"
        finally:
            again.storage.close()
        return after
    finally:
        h.storage.close()


def sweep(make: Make, base: Path, expect: Callable[[dict[str, Any]], bool], what: str, folder: Path) -> list[str]:
    """From the store at ``base`` (its writer gone): a new instance's whole reconciliation once,
    then killed after each of its writes and finished by a third. The tables the whole one wrote."""
    status, whole = in_child(make, copy_store(base, folder / "whole.db"), r.Harness.reconcile, None)
    assert status == 0 and not any(line.startswith("!") for line in whole), f"{what}: {whole}"
    known = instances(base)
    after_whole = rows(folder / "whole.db", known)
    ended = settled(finished_by_a_third(make, folder / "whole.db", expect, f"{what}, whole", after_whole, known))
    for k in range(1, len(whole) + 1):
        path = copy_store(base, folder / "cut.db")
        status, written = in_child(make, path, r.Harness.reconcile, k)
        assert status == KILLED and len(written) == k, f"{what}: the takeover was not killed after write {k}: {written}"
        cut = rows(path, known)
        assert (cut == after_whole) == (k == len(whole)), f"{what}: write {k} of {len(whole)} left the whole's rows"
        where = f"{what}, killed after write {k} ({written[-1]})"
        finished_by_a_third(make, path, lambda snap: expect(snap) and settled(snap) == ended, where, cut, known)
    return whole


@pytest.mark.clause("REC-1", "REC-2", "REC-4", "STO-1")
@pytest.mark.parametrize("step", STEPS)
def test_a_takeover_killed_after_any_write_converges(step: str, tmp_path: Path) -> None:
    replayer, storage, restarted = crashed_at(step, step, "sqlite", tmp_path)
    storage.close()  # instance A is gone: its work in flight is the next instance's (REC-4)
    model = project(restarted)
    expect = lambda snap: project(snap) == model  # noqa: E731 — the model's restart
    sweep(of_replayer(replayer), tmp_path / "team.db", expect, f"after {step}", tmp_path)


@pytest.mark.clause("REC-5", "REC-4", "REC-1", "SHD-6", "PLN-5", "INV-12")
def test_a_takeover_of_a_cut_pass_killed_after_any_write_converges(tmp_path: Path) -> None:
    """An instance's monitor pass with everything due at once (an approval, two plans, a shutdown
    request, their messages: ``test_monitor_pass_crashes``), killed after each of its writes in
    turn — its pass row still ``begun``, its process gone; then the takeover sweep from there. Each
    must end exactly where the pass run whole ends (the pass is one step of the model, REC-5; that
    state refines the model: ``test_monitor_pass_crashes``)."""
    machine = SqlitePlanComparison()
    try:
        _due_pass(machine)
        machine.storage.close()
        assert machine.folder is not None
        base = copy_store(machine.folder / "team.db", tmp_path / "base.db")
        clock, world = machine.clock, machine.world
    finally:
        machine.teardown()

    def make(storage: r.Storage) -> r.Harness:
        return r.Harness(storage, clock, [world.tool(normalize=lambda a: a)], jobs=r.InProcessJobRunner())

    status, whole = in_child(make, copy_store(base, tmp_path / "pass.db"), r.Harness.monitor_pass, None)
    assert status == 0 and whole.count("~monitor_pass") == 2, whole
    begun, done = (i for i, table in enumerate(whole) if table == "~monitor_pass")
    assert done - begun > 8, f"the pass is worth cutting: {whole}"
    passed = settled(finished_by_a_third(make, tmp_path / "pass.db", lambda snap: True, "the whole pass"))
    before = settled(finished_by_a_third(make, copy_store(base, tmp_path / "none.db"), lambda snap: True, "no pass"))
    assert passed != before
    wrote: set[str] = set()
    for cut in range(1, len(whole)):
        start = copy_store(base, tmp_path / "pass.db")
        status, written = in_child(make, start, r.Harness.monitor_pass, cut)
        assert status == KILLED, written
        target = passed if cut > begun else before  # killed before its row said begun: no pass yet
        what = f"pass cut after write {cut} ({written[-1]})"
        wrote.update(sweep(make, start, lambda snap, target=target: settled(snap) == target, what, tmp_path))
    assert {"~monitor_pass", "~instance"} <= wrote, f"the takeovers are worth cutting: {wrote}"
