"""Incremental snapshots and invariant checks for the stateful model tests (issue 18 item 9).

After every rule the stateful tests check the reference: every state invariant on its snapshot,
every step invariant on that snapshot and the one before, and refinement against the model. Built
from scratch each time, that was half of their cost, for a rule writes one to five records.

- :class:`IncrementalSnapshot` builds what ``Harness.snapshot()`` builds — the clock, then every
  record table in ``RECORD_SCHEMAS`` order, each the documents of ``Storage.scan`` in key order —
  but reads each table's raw rows ``(key, version, text)`` and, when they are the very rows of its
  last call, keeps that section (the same list of the same documents). A changed table is rebuilt;
  a row whose text is unchanged keeps its document, any other is loaded and validated as
  ``Storage.scan`` does (``reference._storage._validate``: not JSON, schema, status). The snapshot
  is therefore a function of the stored rows alone, as the full one is; no write has to be
  reported to it, so a reference that writes a table it should not is seen all the same. On the
  memory backend every row is copied and compared first (in C): when none and not the clock
  changed, the snapshot is the very dict of the last call, and the checks and the refinement
  below return their last verdict for it at once.
- :class:`Checks` runs a check again only when a section it reads (``Invariant.reads``) is not the
  very list it read last time; otherwise its last result stands (the declared reads are tested
  complete in ``model_tests/test_invariant_memo.py``, as :class:`spec.invariants.Memo` needs).
- :class:`Operations` finds the model's operation for an action asking only the operation family
  that yields its name, once known (the full model's operations are its families' in order, and a
  name comes from one family: tested in ``model_tests/test_stateful_incremental.py``).
- :class:`Refinement` projects the reference's snapshot again only when one of its sections is
  new, and the model's state only when it is another state.

Snapshots' documents are shared between calls: nothing may edit them (nothing does; the
differential test, ``model_tests/test_stateful_incremental.py``, compares every snapshot and every
check result with the full ones after every rule of many random runs).

``TEAMPROTO_STATEFUL_FULL=1`` switches the incremental path off (the full snapshot and the plain
checks after every rule), so that ``bench/stateful.py`` can time both in one run.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from typing import Any

import reference as r
from model_tests.replay import project
from reference._storage import _validate
from spec import invariants
from spec.model import Model, _ops, snapshot
from spec.model._model import Operation
from spec.model._state import State
from spec.schemas import RECORD_SCHEMAS

FULL = os.environ.get("TEAMPROTO_STATEFUL_FULL", "") == "1"
"""The incremental path is off: every snapshot built whole, every check run (bench baseline)."""

MUTANTS = {
    "snapshot_forgets_section": "an incremental snapshot keeps the audit_entry section it first "
    "read, whatever is written to that table later",
    "snapshot_keys_on_count": "an incremental snapshot keeps a section while its table holds as many "
    "rows as before (an update goes unseen)",
    "checks_ignore_the_clock": "the incremental checks see only the record sections change: a check "
    "that reads the clock keeps its result while time passes",
    "snapshot_reused_while_clock_stands": "the memory snapshot of the last call is reused whenever the "
    "clock has not moved, whatever rows were written meanwhile",
}
"""Named mutants of the incremental path; the differential test must catch each."""


class IncrementalSnapshot:
    """``Harness.snapshot()`` rebuilt only where the stored rows changed (see the module)."""

    def __init__(self, storage: r.Storage, clock: r.Clock, mutant: str | None = None) -> None:
        assert mutant is None or mutant in MUTANTS, mutant
        self.storage, self.clock, self.mutant = storage, clock, mutant
        self._rows: dict[str, dict[str, tuple[int, str]]] = {}
        self._sections: dict[str, list[dict[str, Any]]] = {}
        self._raw: dict[tuple[str, str], tuple[int, str]] | None = None
        self._last: dict[str, Any] = {}

    def __call__(self) -> dict[str, Any]:
        """The snapshot; the very dict of the last call when its clock and every stored row are
        the same (a refused call, an idle rule, the check right after a rule's own check)."""
        now, raw = self.clock.now(), self._memory_rows()
        reuse = raw == self._raw or self.mutant == "snapshot_reused_while_clock_stands"
        if raw is not None and reuse and self._last.get("clock") == now:
            return self._last
        rows = self._all_rows(raw)
        snap: dict[str, Any] = {"clock": now}
        for table in RECORD_SCHEMAS:
            snap[table] = self._section(table, rows.get(table, {}))
        self._raw = raw
        if _same(tuple(self._last.values()), tuple(snap.values())) and self._last.keys() == snap.keys():
            return self._last
        self._last = snap
        return snap

    def _memory_rows(self) -> dict[tuple[str, str], tuple[int, str]] | None:
        """A copy of the memory backend's every row, (table, key) -> (version, text), else None."""
        if not isinstance(self.storage, r.MemoryStorage):
            return None
        with self.storage._lock:
            return dict(self.storage._rows)

    def _all_rows(self, raw: dict[tuple[str, str], tuple[int, str]] | None) -> dict[str, dict[str, tuple[int, str]]]:
        """Every table's rows, key -> (version, text): the memory backend's from ``raw``, in one
        pass (its ``_scan`` walks every row for each table), any other backend's through ``_scan``."""
        tables: dict[str, dict[str, tuple[int, str]]] = {}
        if raw is not None:
            for (table, key), row in raw.items():
                tables.setdefault(table, {})[key] = row
            return tables
        for table in RECORD_SCHEMAS:
            tables[table] = {key: (version, text) for key, version, text in self.storage._scan(table)}
        return tables

    def _section(self, table: str, rows: dict[str, tuple[int, str]]) -> list[dict[str, Any]]:
        previous = self._rows.get(table)
        if previous is not None and self._unchanged(table, previous, rows):
            return self._sections[table]
        docs = {
            (key, text): doc
            for (key, (_, text)), doc in zip(
                sorted((previous or {}).items()), self._sections.get(table, []), strict=True
            )
        }
        section = [docs.get((key, text)) or _validate(table, key, text) for key, (_, text) in sorted(rows.items())]
        self._rows[table], self._sections[table] = rows, section
        return section

    def _unchanged(self, table: str, previous: dict[str, tuple[int, str]], rows: dict[str, tuple[int, str]]) -> bool:
        if self.mutant == "snapshot_forgets_section" and table == "audit_entry":
            return True
        if self.mutant == "snapshot_keys_on_count":
            return len(previous) == len(rows)
        return previous == rows


def _same(known: tuple[Any, ...], values: tuple[Any, ...]) -> bool:
    """The very same sections: each list the same object (its documents are never edited), each
    other value (the clock) equal."""
    if len(known) != len(values):
        return False
    for old, new in zip(known, values, strict=True):
        if old is not new and (isinstance(new, list) or old != new):
            return False
    return True


def _changed(
    known: invariants.Snapshot | None, snap: invariants.Snapshot, mutant: str | None = None
) -> set[str] | None:
    """The sections of ``snap`` that are not the very ones of ``known`` (None: no ``known``)."""
    if known is None or known.keys() != snap.keys():
        return None
    if mutant == "checks_ignore_the_clock":
        return {section for section, value in snap.items() if isinstance(value, list) and known[section] is not value}
    return {
        section
        for section, value in snap.items()
        if known[section] is not value and (isinstance(value, list) or known[section] != value)
    }


Problems = list[tuple[invariants.Invariant, str]]


class Checks:
    """Every state and step invariant; a check runs again only when a section it reads
    (``Invariant.reads``; every section if it declares none) is not the very one it read at its
    last run, otherwise its last result stands. A check that decomposes by section
    (``Invariant.by_section``) is kept per section, and a step check's share of a section that is
    the very same before and after is empty (the contract of ``by_section``)."""

    def __init__(self, mutant: str | None = None) -> None:
        assert mutant is None or mutant in MUTANTS, mutant
        self.mutant = mutant
        self._state: invariants.Snapshot | None = None
        self._step: tuple[invariants.Snapshot, invariants.Snapshot] | None = None
        self._results: dict[tuple[str, str], list[str]] = {}
        self._shares: dict[tuple[str, str], tuple[tuple[Any, ...], list[str]]] = {}
        self._state_result: Problems = []
        self._step_result: Problems = []

    def state(self, snap: invariants.Snapshot) -> Problems:
        if snap is self._state:  # the very snapshot of the last call (never edited): its result
            return list(self._state_result)
        changed = _changed(self._state, snap, self.mutant)
        self._state = snap
        if changed == set():  # the very sections of the last call: its result
            return list(self._state_result)
        self._state_result = [
            (inv, p) for inv in invariants.STATE_INVARIANTS for p in self._run(inv, (snap,), changed, None)
        ]
        return list(self._state_result)

    def step(self, before: invariants.Snapshot, after: invariants.Snapshot) -> Problems:
        last = self._step
        if last is not None and before is last[0] and after is last[1]:
            return list(self._step_result)
        changed_before = None if last is None else _changed(last[0], before, self.mutant)
        changed_after = None if last is None else _changed(last[1], after, self.mutant)
        changed = None if changed_before is None or changed_after is None else changed_before | changed_after
        self._step = (before, after)
        if changed == set():  # the very sections before and after of the last call: its result
            return list(self._step_result)
        moved = _changed(before, after)
        if moved is None:
            moved = set(after)
        self._step_result = [
            (inv, p) for inv in invariants.STEP_INVARIANTS for p in self._run(inv, (before, after), changed, moved)
        ]
        return list(self._step_result)

    def _run(
        self,
        inv: invariants.Invariant,
        snaps: tuple[invariants.Snapshot, ...],
        changed: set[str] | None,
        moved: set[str] | None,
    ) -> list[str]:
        """``changed``: the sections that are not those of this check's last run (None: all);
        ``moved`` (a step): the sections that differ between before and after."""
        sections = inv.reads or tuple(snaps[0])
        if inv.by_section is None:
            if changed is None or (inv.name, "") not in self._results or not changed.isdisjoint(sections):
                self._results[(inv.name, "")] = inv.check(*snaps)
            return self._results[(inv.name, "")]
        problems: list[str] = []
        for section in sections:
            if moved is None:  # a state check: every section visited at every call
                key = (inv.name, section)
                if changed is None or key not in self._results or section in changed:
                    self._results[key] = inv.by_section(section, snaps[0][section])
                problems += self._results[key]
            elif section in moved:  # a step check (an unmoved section's share is empty)
                problems += self._share(inv, section, tuple(snap[section] for snap in snaps))
        return problems

    def _share(self, inv: invariants.Invariant, section: str, values: tuple[Any, ...]) -> list[str]:
        """A step check's share of a section, again only if before or after is not the very
        section of its last run (a step that leaves the section alone does not run it)."""
        assert inv.by_section is not None
        known = self._shares.get((inv.name, section))
        if known is None or not _same(known[0], values):
            known = self._shares[(inv.name, section)] = (values, inv.by_section(section, *values))
        return known[1]


class FullChecks(Checks):
    """The plain checks (``TEAMPROTO_STATEFUL_FULL=1`` and the differential test's oracle)."""

    def state(self, snap: invariants.Snapshot) -> list[tuple[invariants.Invariant, str]]:
        return invariants.check_state(snap)

    def step(self, before: invariants.Snapshot, after: invariants.Snapshot) -> list[tuple[invariants.Invariant, str]]:
        return invariants.check_step(before, after)


class Refinement:
    """Whether the reference's snapshot projects to the model state's (``model_tests.replay.project``),
    each side projected again only when it changed: the reference's when a section is not the very
    one projected last, the model's when its (immutable) state is another object."""

    def __init__(self, config: Any, full: bool = False) -> None:
        self.config, self.full = config, full
        self._reference: tuple[tuple[Any, ...], Any] = ((), None)
        self._model: tuple[Any, Any] = (None, None)
        self._last: tuple[Any, Any, bool, int] = (None, None, False, 0)

    def holds(self, after: dict[str, Any], state: Any, read: Collection[str] = ()) -> bool:
        """``read``: the messages the test itself delivered to their target, a reader the model
        does not have (it never reads an approval's request): those the model still has are
        ``delivered`` on its side too, so the model's monitor expiring one it left pending (MSG-1)
        is not held against the reference, which must not expire a message once read."""
        if self.full:
            return bool(project(after) == read_by(project(snapshot(state, self.config)), read))
        if after is self._last[0] and state is self._last[1] and len(read) == self._last[3]:  # read only grows
            return self._last[2]
        verdict = self._holds(after, state, read)
        self._last = (after, state, verdict, len(read))
        return verdict

    def _holds(self, after: dict[str, Any], state: Any, read: Collection[str]) -> bool:
        values = tuple(after.values())
        if self._reference[1] is None or not _same(self._reference[0], values):
            self._reference = (values, project(after))
        if self._model[1] is None or self._model[0] is not state:
            self._model = (state, project(snapshot(state, self.config)))
        return bool(self._reference[1] == read_by(self._model[1], read))


def read_by(projected: dict[str, Any], read: Collection[str]) -> dict[str, Any]:
    """``projected`` (``model_tests.replay.project``) with each message in ``read`` delivered."""
    if not read:
        return projected
    messages = sorted((mid, "delivered" if mid in read else status) for mid, status in projected["all_messages"])
    return {**projected, "all_messages": messages}


class Operations:
    """The model's operations that may be an action named ``name``, in the model's order: for the
    full model (``reduce=False``) in a state that has not crashed, ``Model.operations`` is the
    concatenation of ``spec.model._ops.FAMILIES``; once the family that yields ``name`` is known,
    only it is asked (the others' operations have other names)."""

    def __init__(self, model: Model, full: bool = False) -> None:
        self.model, self.full = model, full
        self.family_of: dict[str, Any] = {}

    def candidates(self, state: State, name: str) -> Iterator[Operation]:
        if self.full or state.crashed or self.model.reduce:
            yield from self.model.operations(state)
            return
        family = self.family_of.get(name)
        if family is not None:
            yield from family(self.model, state)
            return
        for family in _ops.FAMILIES:
            for operation in family(self.model, state):
                if operation[0].name == name:
                    self.family_of.setdefault(name, family)
                yield operation
