"""The explorer on plain-tuple states (:mod:`spec.model._flat`): the same search, faster.

:func:`explore_flat` is :func:`spec.explore.explore`'s breadth-first search step for step — the
same successors in the same order, the same reductions (outbox-first send, ``_por.ample``, dead
data, symmetry), crashed states checked and restarted at once, reconciliation checked for
idempotence (REC-1), deadlocks, edges, crash points, shortest traces and witnesses — on states
that are plain tuples. What changes is the representation:

- a state is known by its *signature* (:meth:`Checks.signature`: the number of each field's
  value, each value interned once); a stored state is kept as its signature alone (an
  ``array`` of small numbers) and rebuilt from the interned fields to be expanded or traced, the
  check results of a state only until it is expanded, and every memo table and cache is bounded
  (:meth:`FlatSearch.trim`: emptied past :data:`MEMO_LIMIT` entries; each holds what a pure
  function gives, so only time is lost). What grows with the states: their signatures, parents,
  actions and depths, and the visited set of classes, keyed by the packed signature of the
  class's key, :class:`Canonical`: the
  least image of the tuple (under deadline regions first keyed by
  :func:`spec.model._flat.relative`, as :func:`spec.model._time.relative`; then dead data
  erased as :func:`spec.model._dead.erase` does) over every
  member and task permutation, compared field by field so that only the permutations that tie
  so far are carried on (the least tuple is the same whatever the order of elimination);
- every check is the snapshot predicate of :mod:`spec.invariants` (the contract), memoised by
  :class:`spec.explore.StateMemo` on the state's own fields — the plain tuple has the layout of
  the codec's numbers, field for field — and the snapshot is built from :func:`decode` only on
  a miss; a step check whose fields a step leaves alone is a function of the state before, so
  it is looked up once per expanded state, not once per transition.

With ``fingerprints`` (hash compaction, as ``spec.explore._Search``; issue 18 item 5) the
visited set is a :class:`spec.explore._Fingerprints` of the 64-bit hash of each class's key, the
signatures are kept only for the states not yet expanded, the states found are remembered only in
a bounded cache, and traces are rebuilt by replaying the actions on their path (parents in an
``array('q')``, depths in ``'H'``, actions as 4-byte indices into the distinct ones). Such a
search can be saved (:meth:`FlatSearch.save`, plain data naming its engine) and resumed, with
``_Search``'s contract: no I/O here; ``spec.check`` stores it; each engine refuses the other's.

``spec.explore.explore`` runs it whenever :func:`spec.model._flat.supports` the configuration and
mutant and no option asks for what it lacks (the dead-data switch). With the liveness check it
keeps the graph the check reads (``FlatSearch.keep_graph``), as the model's search does.
``bench/explore.py --engine-configs pinned mutants``, ``model_tests/test_flat.py`` and
``model_tests/test_flat_fingerprints.py`` check that it reports what the model's search reports,
and the same with fingerprints as without.
"""

from __future__ import annotations

import gc
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter, ne
from typing import Any

from . import invariants
from ._records import Report, Violation
from ._tables import IllegalTransition
from .explore import (
    _WORLD_KEY,
    LAST_INSTANT,
    POLL_EVERY,
    LastInstants,
    _Fingerprints,
    check_boundaries,
    check_saved,
    hash_probe,
    note_first,
    poll,
    report_liveness,
    stop,
    witness,
    world_problems,
)
from .model import _model
from .model._action import Action
from .model._dead import _FINAL_JOBS, _FINAL_TASKS, FINAL_JOB, FINAL_TASK
from .model._flat import (
    A_DEADLINE,
    A_STATUS,
    APPROVALS,
    CLOCK,
    CRASHED,
    JOBS,
    MEMBERS,
    MONITOR_DONE,
    P_DEADLINE,
    P_STATUS,
    PLANS,
    PROFILE_CHANGES,
    R_DEADLINE,
    R_STATUS,
    RUNS,
    S_DEADLINE,
    S_STATUS,
    SHUTDOWNS,
    TASKS,
    Flat,
    FlatModel,
    decode,
    relative,
)
from .model._model import HARNESS_CRASH, Model
from .model._snapshot import snapshot
from .model._state import State
from .model._symmetry import _info, _key, _perms

_FINAL_JOB = tuple(getattr(FINAL_JOB, n) for n in FINAL_JOB.__dataclass_fields__)
_FINAL_TASK = tuple(getattr(FINAL_TASK, n) for n in FINAL_TASK.__dataclass_fields__)


def erase(f: Flat, regions: bool = False) -> Flat:
    """:func:`spec.model._dead.erase` on a plain tuple; with ``regions`` (time unbounded) keyed
    by deadline regions first (:func:`spec.model._flat.relative`), as the model's search keys it."""
    if regions:
        f = relative(f)
    jobs = f[JOBS]
    for job in jobs:
        if job[0] in _FINAL_JOBS and job != _FINAL_JOB:
            jobs = tuple(_FINAL_JOB if j[0] in _FINAL_JOBS else j for j in jobs)
            break
    tasks = f[TASKS]
    for task in tasks:
        if task[0] in _FINAL_TASKS and task != _FINAL_TASK:
            tasks = tuple(_FINAL_TASK if t[0] in _FINAL_TASKS else t for t in tasks)
            break
    if jobs is f[JOBS] and tasks is f[TASKS]:
        return f
    return (*f[:TASKS], tasks, jobs, *f[JOBS + 1 :])


def _m(perm: tuple[int, ...], index: int) -> int:
    return index if index < 0 else perm[index]


def image(position: int, value: tuple[Any, ...], pm: tuple[int, ...], pt: tuple[int, ...]) -> tuple[Any, ...]:
    """Field ``position`` of a plain-tuple state when member i becomes pm[i] and task t becomes
    pt[t] (:func:`spec.model._symmetry.image`, on tuples)."""
    out: list[Any]
    if position in (MEMBERS, JOBS):
        at = 4 if position == MEMBERS else 1  # Member.task, Job.task
        out = [None] * len(value)
        for i, r in enumerate(value):
            out[pm[i]] = (*r[:at], _m(pt, r[at]), *r[at + 1 :])
        return tuple(out)
    if position == TASKS:
        out = [None] * len(value)
        for t, r in enumerate(value):
            out[pt[t]] = (r[0], _m(pm, r[1]), *r[2:])
        return tuple(out)
    if position == 4 or position == 6:  # approvals, plans: requester, task at 1 and 3
        return tuple((r[0], _m(pm, r[1]), r[2], _m(pt, r[3]), *r[4:]) for r in value)
    if position == 5:  # executions: requester, task at 1 and 2
        return tuple((r[0], _m(pm, r[1]), _m(pt, r[2]), *r[3:]) for r in value)
    if position == 8:  # shutdowns: target, released, waited
        return tuple(
            (
                r[0],
                _m(pm, r[1]),
                r[2],
                r[3],
                _m(pt, r[4]),
                tuple(sorted(pm[m] for m in r[5])),
                *r[6:],
            )
            for r in value
        )
    if position == 9:
        return tuple(sorted((_key(m[0], pm, pt), m[1], m[2], _info(m[0][0], m[3], pm, pt)) for m in value))
    if position == 10:
        return tuple(sorted((_key(o[0], pm, pt), o[1], _info(o[0][0], o[2], pm, pt)) for o in value))
    raise ValueError(f"field {position} names no member or task")


_PERMUTED = (
    1,
    2,
    3,
    4,
    5,
    6,
    8,
    9,
    10,
)  # members, tasks, jobs, approvals, executions, plans, shutdowns, bus, outbox


class Canonical:
    """The least image of a plain-tuple state over every member and task permutation: equal for
    two states exactly when one is an image of the other (the partition of
    :func:`spec.model._symmetry.canonical_key`). Images of a field are memoised per permutation."""

    def __init__(self, members: int, tasks: int) -> None:
        self.perms = _perms(members, tasks)
        self.memo: list[dict[Any, Any]] = [{} for _ in range(11 * len(self.perms))]

    def key(self, f: Flat) -> Flat:
        perms = self.perms
        alive = list(range(1, len(perms)))  # the identity's image of a field is the field itself
        out = list(f)
        memo = self.memo
        for position in _PERMUTED:
            if not alive:
                break
            best = f[position]
            ties = [0]
            for p in alive:
                table = memo[position * len(perms) + p]
                value = f[position]
                im = table.get(value)
                if im is None:
                    pm, pt = perms[p]
                    im = table[value] = image(position, value, pm, pt)
                if im < best:
                    best, ties = im, [p]
                elif im == best:
                    ties.append(p)
            out[position] = best
            alive = [p for p in ties if p != 0]
            if 0 in ties:
                # the identity ties: only permutations tying with it stay, and they start from f
                continue
            # the identity lost: the rest of the key is of the permuted state; carry the ties on
            return self._rest(f, out, position, ties)
        return tuple(out)

    def _rest(self, f: Flat, out: list[Any], done: int, ties: list[int]) -> Flat:
        perms, memo = self.perms, self.memo
        for position in _PERMUTED:
            if position <= done:
                continue
            best = None
            keep: list[int] = []
            for p in ties:
                table = memo[position * len(perms) + p]
                value = f[position]
                im = table.get(value)
                if im is None:
                    pm, pt = perms[p]
                    im = table[value] = image(position, value, pm, pt)
                if best is None or im < best:
                    best, keep = im, [p]
                elif im == best:
                    keep.append(p)
            out[position] = best
            ties = keep
        return tuple(out)


MEMO_LIMIT = 1 << 18
"""Entries a cache of the flat search holds at most (:meth:`FlatSearch.trim`)."""
TRIM_EVERY = 2000
"""States expanded between two trims of the caches."""

_FIELDS = 14  # every field: the clock, the ten tuples of records (what sections are built from), the flags


class Checks:
    """The checks of :mod:`spec.invariants` on plain-tuple states, memoised on small numbers.

    Each of a state's first eleven fields (the clock and its ten tuples of records) is numbered
    once per distinct value; the state's *signature* is the tuple of those numbers (successors
    share unchanged fields with their parent, so most are found by identity). A check's result is
    a function of the snapshot sections it ``reads``, and a section of the fields it is built
    from (:data:`spec.model._snapshot.SECTION_INPUTS`), so it is memoised on those fields'
    numbers, as :class:`spec.explore.StateMemo` does. The snapshot itself is assembled from
    sections memoised the same way, built from :func:`decode` only for a section never seen, so
    snapshots share their documents. A step check whose fields a step leaves alone is a function
    of the state before: it is looked up once per state expanded and pattern of changed fields.
    """

    def __init__(self, config: Any) -> None:
        from .explore import SECTION_POSITIONS

        self.config = config
        self.by_id: dict[int, int] = {}  # id of each value in ``values`` -> its number
        self.by_value: dict[Any, int] = {}
        self.values: list[Any] = []  # number -> the one object of that value (interned, kept alive)
        self.sections: list[tuple[str, Callable[[tuple[int, ...]], Any], dict[Any, Any]]] = [
            (name, _getter(SECTION_POSITIONS[name]), {}) for name in SECTION_POSITIONS
        ]
        self.section_of = {name: (get, table) for name, get, table in self.sections}
        self.inputs = SECTION_POSITIONS
        self.state_checks = {
            reconciled: [
                self._plan(inv) for inv in invariants.STATE_INVARIANTS if reconciled or not inv.after_reconcile
            ]
            for reconciled in (False, True)
        }
        self.step_invariants = [self._plan(inv) for inv in invariants.STEP_INVARIANTS]
        self.plans: dict[tuple[bool, ...], tuple[Any, ...]] = {}
        self._state_units()
        self.still: dict[Any, list[str]] = {}  # per (invariant, its numbers before) when the step changes none
        self.world_table: dict[Any, list[str]] = {}  # spec.invariants.WORLD by the numbers it reads
        self.clean_results: dict[tuple[bool, ...], list[Any]] = {}  # a clean state's units, one list per pattern

    def tables(self) -> Iterator[dict[Any, Any]]:
        """Every memo table that grows with the states: each maps numbers to what a pure function
        of the fields they number gives, so any of them may be emptied at any time (:meth:`trim`)."""
        for _, _, table in self.sections:
            yield table
        for unit in self.units:
            yield unit[4]
        for checks in (*self.state_checks.values(), self.step_invariants):
            for plan in checks:
                yield plan[5]
                for part in plan[6]:
                    yield part[3]
        yield self.still
        yield self.world_table

    def trim(self, limit: int) -> None:
        """Empty every memo table holding more than ``limit`` entries (the step checks' look-ups
        of changed units together, a second level over their own tables, more than a quarter of
        it): the memory of the checks stays bounded whatever the states, and what an emptied
        table held is computed again."""
        for table in self.tables():
            if len(table) > limit:
                table.clear()
        for plan in self.plans.values():
            if len(plan[5]) > limit // 4:
                plan[5].clear()

    def kept(self, view: _View) -> list[Any] | None:
        """What a stored state keeps of its view's results until it is expanded: a clean state's
        (all empty, some not computed) as one shared list per pattern, to be copied."""
        res = view.res
        if res is None or not view.clean:
            return res
        pattern = tuple(r is None for r in res)
        shared = self.clean_results.get(pattern)
        if shared is None:
            shared = self.clean_results[pattern] = list(res)
        return shared

    @staticmethod
    def _plan(inv: invariants.Invariant) -> tuple[Any, ...]:
        from .explore import SECTION_POSITIONS

        positions = tuple(sorted({p for section in inv.reads for p in SECTION_POSITIONS[section]}))
        quiet = frozenset(p for section in inv.quiet_unless for p in SECTION_POSITIONS[section])
        kind = "sections" if inv.by_section is not None else "keyed" if inv.reads else "plain"
        if kind == "plain" and inv.suspect is not None and inv.kind == "step":
            # Invariant.suspect: memoised on the fields of its sections before and after
            kind = "guarded"
            positions = tuple(sorted({p for section in inv.suspect_reads for p in SECTION_POSITIONS[section]}))
        parts: list[tuple[str, frozenset[int], Callable[[tuple[int, ...]], Any], dict[Any, Any]]] = [
            (
                name,
                frozenset(SECTION_POSITIONS[name]),
                _getter(SECTION_POSITIONS[name]),
                {},
            )
            for name in inv.reads or SECTION_POSITIONS
        ]
        return inv, kind, _getter(positions), frozenset(positions), quiet, {}, parts

    def signature(self, f: Flat) -> tuple[int, ...]:
        """The numbers of ``f``'s fields. A field is found by identity only if it is the interned
        object of its value (``values``, alive for good, so its id stays its own): the fields a
        state shares with a stored one (:meth:`state` rebuilds stored states from interned
        objects); any other object is found by value and not kept, so an equal copy made by a
        transition to a known state costs no memory."""
        fields = f[:_FIELDS]
        numbers = list(map(self.by_id.get, map(id, fields)))
        if None in numbers:
            for position, number in enumerate(numbers):
                if number is None:
                    value = fields[position]
                    number = self.by_value.get(value)
                    if number is None:
                        number = self.by_value[value] = len(self.values)
                        self.values.append(value)
                        self.by_id[id(value)] = number
                    numbers[position] = number
        return tuple(numbers)  # type: ignore[arg-type]

    def restore(self, values: list[Any]) -> None:
        """Number the fields as ``values`` does (a saved search's): its signatures stay valid."""
        self.values = values
        self.by_value = {value: number for number, value in enumerate(values)}
        self.by_id = {id(value): number for number, value in enumerate(values)}

    def state(self, numbers: tuple[int, ...]) -> Flat:
        """The state of signature ``numbers``, of interned fields. The clock, the flags and the
        count are cast back to their types: ``by_value`` numbers 0 and False alike."""
        values = self.values
        records = tuple([values[n] for n in numbers[1:MONITOR_DONE]])
        return (
            int(values[numbers[0]]),
            *records,
            bool(values[numbers[MONITOR_DONE]]),
            bool(values[numbers[CRASHED]]),
            int(values[numbers[PROFILE_CHANGES]]),
        )

    def snapshot(self, view: _View) -> dict[str, Any]:
        """The view's snapshot from memoised sections (built from the decoded state on a miss)."""
        sig = view.numbers
        out: dict[str, Any] = {}
        for name, get, table in self.sections:
            doc = table.get(get(sig))
            if doc is None:
                full = snapshot(decode(view.state), self.config)
                for name2, get2, table2 in self.sections:
                    out[name2] = table2.setdefault(get2(sig), full[name2])
                return out
            out[name] = doc
        return out

    def _state_units(self) -> None:
        """Each state check as units memoised on their own fields: a keyed check is one unit, a
        check by sections one unit per section (each with the fields it is built from)."""
        from .explore import SECTION_POSITIONS

        self.units: list[
            tuple[
                invariants.Invariant,
                str,
                Callable[[tuple[int, ...]], Any],
                frozenset[int],
                dict[Any, list[str]],
                str,
            ]
        ] = []
        self.unit_groups: dict[bool, list[tuple[invariants.Invariant, list[int]]]] = {
            False: [],
            True: [],
        }
        for inv, kind, get, positions, _, table, parts in self.state_checks[True]:
            indices = []
            if kind == "keyed":
                indices.append(len(self.units))
                self.units.append((inv, kind, get, positions, table, ""))
            elif kind == "sections":
                for name, inputs, getp, tablep in parts:
                    indices.append(len(self.units))
                    self.units.append((inv, kind, getp, inputs, tablep, name))
            else:
                indices.append(len(self.units))
                self.units.append((inv, kind, get, frozenset(range(_FIELDS)), table, ""))
            for reconciled in (False, True):
                if reconciled or not inv.after_reconcile:
                    self.unit_groups[reconciled].append((inv, indices))
        assert set(SECTION_POSITIONS) >= {name for *_, name in self.units if name}
        self.reuse: dict[tuple[bool, ...], list[bool]] = {}
        self.clean_plans: dict[tuple[tuple[bool, ...], bool, bool], tuple[list[int], list[int]]] = {}

    def _unit(self, index: int, view: _View) -> list[str]:
        inv, kind, get, _, table, name = self.units[index]
        if kind == "plain":
            return inv.check(view.snapshot())
        key = get(view.numbers)
        found = table.get(key)
        if found is None:
            if kind == "keyed":
                found = table[key] = inv.check(view.snapshot())
            else:
                assert inv.by_section is not None
                found = table[key] = inv.by_section(name, view.snapshot()[name])
        return found

    def check_state(
        self, view: _View, reconciled: bool, parent: _View | None = None
    ) -> list[tuple[invariants.Invariant, str]]:
        """The state checks (``after_reconcile`` ones only if ``reconciled``), then the world's
        (:data:`spec.invariants.WORLD`, memoised on the numbers of the executions and approvals)."""
        out = self._check_units(view, reconciled, parent)
        part = _WORLD_KEY(view.numbers)
        found = self.world_table.get(part)
        if found is None:
            found = self.world_table[part] = world_problems(decode(view.state))
        for problem in found:
            out.append((invariants.WORLD, problem))
        return out

    def _check_units(
        self, view: _View, reconciled: bool, parent: _View | None = None
    ) -> list[tuple[invariants.Invariant, str]]:
        """The state checks' units. A unit whose fields are the same as in ``parent``'s (a state
        just checked) has ``parent``'s result. Invariant of every view: a unit's entry in ``res`` is
        its result on this state, or None."""
        if parent is not None and parent.res is not None and parent.clean and view.res is None:
            return self._from_clean_parent(view, reconciled, parent)
        res = view.res
        if res is None:
            res = view.res = [None] * len(self.units)
        same: list[bool] | None = None
        theirs: list[Any] | None = None
        if parent is not None and parent.res is not None:
            theirs = parent.res
            same = self._same(tuple(map(ne, parent.numbers, view.numbers)))
        out: list[tuple[invariants.Invariant, str]] = []
        for inv, indices in self.unit_groups[reconciled]:
            for index in indices:
                found = res[index]
                if found is None:
                    if same is not None and theirs is not None and same[index] and theirs[index] is not None:
                        found = theirs[index]
                    else:
                        found = self._unit(index, view)
                    res[index] = found
                for problem in found:
                    out.append((inv, problem))
        view.clean = not any(r for r in res if r)
        view.reconciled = reconciled
        return out

    def _same(self, changed: tuple[bool, ...]) -> list[bool]:
        """Per unit: whether none of its fields is among the ``changed`` ones."""
        same = self.reuse.get(changed)
        if same is None:
            moved = frozenset(p for p, c in enumerate(changed) if c)
            same = self.reuse[changed] = [not (unit[3] & moved) and unit[1] != "plain" for unit in self.units]
        return same

    def _from_clean_parent(
        self, view: _View, reconciled: bool, parent: _View
    ) -> list[tuple[invariants.Invariant, str]]:
        """:meth:`check_state` when every result the parent holds is empty: the units whose fields
        are unchanged keep them (empty: nothing to report), the others are computed."""
        changed = tuple(map(ne, parent.numbers, view.numbers))
        key = (changed, parent.reconciled, reconciled)
        plan = self.clean_plans.get(key)
        if plan is None:
            same = self._same(changed)
            held = {i for _, indices in self.unit_groups[parent.reconciled] for i in indices}
            stale = [i for i, s in enumerate(same) if not s]
            due = [i for _, indices in self.unit_groups[reconciled] for i in indices if not same[i] or i not in held]
            plan = self.clean_plans[key] = (stale, due)
        stale, due = plan
        res = view.res = list(parent.res)  # type: ignore[arg-type]
        for index in stale:
            res[index] = None
        out: list[tuple[invariants.Invariant, str]] = []
        units = self.units
        for index in due:
            found = res[index] = self._unit(index, view)
            for problem in found:
                out.append((units[index][0], problem))
        view.clean = not out
        view.reconciled = reconciled
        return out

    def _step_plan(self, changed: tuple[bool, ...]) -> tuple[Any, ...]:
        moved = frozenset(p for p, c in enumerate(changed) if c)
        paired: list[Any] = []
        still: list[Any] = []
        sections: list[Any] = []
        plain: list[Any] = []
        for inv, kind, get, positions, quiet, table, parts in self.step_invariants:
            if kind == "keyed":
                (paired if positions & moved else still).append((inv, get, table))
            elif kind == "sections":
                sections.extend((inv, name, getp, tablep) for name, inputs, getp, tablep in parts if inputs & moved)
            elif not quiet or quiet & moved:
                plain.append((inv, get, table) if kind == "guarded" else (inv, None, None))
        read = sorted(
            {
                p
                for _, kind, _, positions, _, _, _ in self.step_invariants
                if kind == "keyed" and positions & moved
                for p in positions
            }
            | {
                p
                for _, kind, _, _, _, _, parts in self.step_invariants
                if kind == "sections"
                for _, inputs, _, _ in parts
                if inputs & moved
                for p in inputs
            }
        )
        moved_sections = [section for section in self.sections if moved & set(self.inputs[section[0]])]
        return paired, still, sections, plain, _getter(tuple(read)), {}, moved_sections

    def check_step(self, before: _View, after: _View) -> list[tuple[invariants.Invariant, str]]:
        old, new = before.numbers, after.numbers
        changed = tuple(map(ne, old, new))
        plan = self.plans.get(changed)
        if plan is None:
            plan = self.plans[changed] = self._step_plan(changed)
        paired, still, sections, plain, read, changes, moved_sections = plan
        # The changed units' results together are a function of the fields they read before and
        # after: one look-up for the lot, and each unit's own table only for a new combination.
        both = (read(old), read(new))
        known_changes = changes.get(both)
        if known_changes is None:
            known_changes = changes[both] = self._changed(before, after, paired, sections)
        out = list(known_changes)
        stills = before.still
        if stills is None:
            stills = before.still = {}
        known = stills.get(changed)
        if known is None:
            known = stills[changed] = self._still(before, still)
        out += known
        for inv, get, table in plain:
            if get is not None:  # Invariant.suspect, memoised: most steps are found innocent here
                part = (get(old), get(new))
                suspect = table.get(part)
                if suspect is None:
                    if after.snap is None:
                        self._snapshot_after(before, after, moved_sections)
                    suspect = table[part] = inv.suspect(before.snapshot(), after.snapshot())
                if not suspect:
                    continue
            if after.snap is None:
                self._snapshot_after(before, after, moved_sections)
            for problem in inv.check(before.snapshot(), after.snapshot()):
                out.append((inv, problem))
        return out

    @staticmethod
    def _snapshot_after(before: _View, after: _View, moved_sections: list[Any]) -> None:
        """``after``'s snapshot from ``before``'s: a section whose fields the step left alone is
        the very same memoised section (keyed by the same numbers); the others are looked up."""
        snap = dict(before.snapshot())
        new = after.numbers
        for name, get, table in moved_sections:
            doc = table.get(get(new))
            if doc is None:
                return  # a section never seen: after.snapshot() builds it
            snap[name] = doc
        after.snap = snap

    @staticmethod
    def _changed(
        before: _View, after: _View, paired: list[Any], sections: list[Any]
    ) -> list[tuple[invariants.Invariant, str]]:
        """The problems of the step checks whose fields the step changed, each unit memoised."""
        old, new = before.numbers, after.numbers
        out: list[tuple[invariants.Invariant, str]] = []
        for inv, get, table in paired:
            part = (get(old), get(new))
            found = table.get(part)
            if found is None:
                found = table[part] = inv.check(before.snapshot(), after.snapshot())
            for problem in found:
                out.append((inv, problem))
        for inv, name, get, table in sections:
            part = (get(old), get(new))
            share = table.get(part)
            if share is None:
                share = table[part] = inv.by_section(name, before.snapshot()[name], after.snapshot()[name])
            for problem in share:
                out.append((inv, problem))
        return out

    def _still(self, before: _View, still: list[Any]) -> list[tuple[invariants.Invariant, str]]:
        out: list[tuple[invariants.Invariant, str]] = []
        sig = before.numbers
        for inv, get, _ in still:
            key = (inv.name, get(sig))
            found = self.still.get(key)
            if found is None:
                snap = before.snapshot()
                found = self.still[key] = inv.check(snap, snap)
            for problem in found:
                out.append((inv, problem))
        return out


def _getter(positions: tuple[int, ...]) -> Callable[[tuple[int, ...]], Any]:
    return itemgetter(*positions) if positions else _nothing


def _nothing(numbers: tuple[int, ...]) -> Any:
    return ()


class _View:
    """A plain-tuple state as the checks see it: its signature (:meth:`Checks.signature`), and
    its snapshot, assembled only when a check must run."""

    __slots__ = ("checks", "clean", "numbers", "reconciled", "res", "snap", "state", "still")

    def __init__(self, state: Flat, checks: Checks, numbers: tuple[int, ...] | None = None) -> None:
        self.state = state
        self.checks = checks
        self.numbers = checks.signature(state) if numbers is None else numbers
        self.snap: dict[str, Any] | None = None
        self.res: list[Any] | None = None  # each state-check unit's result (Checks.check_state)
        self.clean = False  # every result in res is empty
        self.reconciled = True  # res holds every unit of the checks of a reconciled state (else of a crashed one)
        self.still: dict[tuple[bool, ...], list[tuple[invariants.Invariant, str]]] | None = None

    def snapshot(self) -> dict[str, Any]:
        snap = self.snap
        if snap is None:
            snap = self.snap = self.checks.snapshot(self)
        return snap


class _Via:
    """The action into each stored state (``_Search.via``): a 4-byte index a state into the list
    of the distinct actions, each kept once, instead of an object a state."""

    __slots__ = ("actions", "codes", "known")

    def __init__(self) -> None:
        self.actions: list[Action | None] = [None]  # the initial state's
        self.codes = array("I")
        self.known: dict[Action, int] = {}

    def append(self, action: Action | None) -> None:
        code = 0
        if action is not None:
            code = self.known.get(action, -1)
            if code < 0:
                code = self.known[action] = len(self.actions)
                self.actions.append(action)
        self.codes.append(code)

    def __getitem__(self, number: int, /) -> Action | None:
        return self.actions[self.codes[number]]

    def __len__(self) -> int:
        return len(self.codes)

    def restore(self, actions: list[Action | None], codes: bytes) -> None:
        self.actions = actions
        self.codes = array("I")
        self.codes.frombytes(codes)
        self.known = {action: code for code, action in enumerate(actions) if action is not None}


FLAT_SAVED_FORMAT = "teamproto-flat-search/1"
"""The format of :meth:`FlatSearch.save`'s data (``spec.explore.SAVED_FORMAT`` is the model's)."""
COMPACT_AFTER = 1 << 16
"""With fingerprints: the expanded states' signatures are dropped once this many wait in front."""


class FlatSearch:
    """The bookkeeping of one search (``spec.explore._Search``), with or without fingerprints.

    With ``fingerprints`` (hash compaction) the visited set is a :class:`spec.explore._Fingerprints`
    of the 64-bit hash of each class's key (the tuple of the key's numbers), only the signatures
    of the states not yet expanded are kept, the states found again are remembered only in a
    bounded cache, and a trace is rebuilt by replaying the actions on its path (:meth:`replay`).
    Such a search can be saved (:meth:`save`) and gone on with (:meth:`restore`)."""

    def __init__(self, model: Model, stop_on: str | None, max_states: int | None, fingerprints: bool = False) -> None:
        self.model, self.stop_on, self.max_states = model, stop_on, max_states
        self.config = model.config
        self.flat = FlatModel(model.config)
        self.report = Report(model.config.name, None, require_coverage=model.config.require_coverage)
        self.report.fingerprints = fingerprints
        self.fingerprints = fingerprints
        self.progress: Callable[[int, int, int], None] | None = None
        self.out_of_time: Callable[[], bool] | None = None
        self.checkpoint: Callable[[Callable[[], dict[str, Any]], bool], None] | None = None
        self.dead_data = model.reduce
        self.symmetry = model.config.symmetry
        self.regions = model.config.regions  # the visited set is keyed by deadline regions (spec.model._time)
        self.count = 0
        self.head = 0  # the next state to expand: states are expanded in the order they were found
        self.base = 0  # with fingerprints: the first state whose signature ``signatures`` still holds
        self.index: dict[bytes, int] = {}  # signature of each class's key, packed -> its number
        self.seen = _Fingerprints(16 if fingerprints else 1)  # with fingerprints: the hashes of the keys
        self.stored: dict[tuple[int, ...], int] = {}  # signature of each state found -> its class's number (-1: known)
        self.signatures = array("I")  # each stored state's signature, _FIELDS numbers a state
        self.results: deque[list[Any] | None] = deque()  # state-check units of the states not yet expanded
        self.cleans: deque[bool] = deque()  # whether their results are all empty
        self.parent = array("q")
        self.via = _Via()
        self.depth = array("H")
        self.crash_prefix: dict[int, tuple[int, ...]] = {}  # a restarted state -> the crashed one's signature
        self.canonical = Canonical(model.config.members, model.config.tasks)
        self.memo = Checks(model.config)
        self.settled: set[tuple[int, ...]] = set()  # signatures of restarted states that reconcile to themselves
        self.first: dict[str, tuple[int, Action]] = {}
        self.edges_known = 0
        self.last: _View | None = None
        # One search on several processes (spec._parallel): this one keeps the classes whose key
        # hashes to ``me`` modulo ``workers``, and queues the others' in ``outbox`` for their owners.
        self.me, self.workers = 0, 1
        self.outbox: list[list[Any]] = []  # per process: (parent, action, state, its checks' results)
        self.owners: dict[tuple[int, ...], int] = {}  # signature -> its owner (+ workers once sent)
        self.sent: dict[bytes, int] = {}  # the keys of the classes sent to their owners, packed -> slot
        self.lazy: list[tuple[str, int, tuple[tuple[Action, Flat], ...]]] | None = None
        self.keyed: tuple[tuple[int, ...], Flat] = ((), ())  # the last key :meth:`owner` computed
        # The graph, for the liveness check (spec.explore.report_liveness): the moves of the states
        # expanded, in order — state n's are targets[offsets[n]:offsets[n + 1]], a crash edge as
        # -target - 1 — and whether each is a goal state. Spread over processes, a target is a
        # global number (spec._parallel), and one kept by another process is a placeholder until
        # the join resolves it: ``remote`` holds (its place in targets, owner, slot, crash edge),
        # its slot being its class's place among those this process sent that owner, ``slots``
        # each remote signature's slot, and ``arrived[p]`` the number here of each class process p
        # sent, in p's slot order.
        self.keep_graph = model.config.liveness and not fingerprints
        self.offsets = array("q", [0])
        self.targets = array("q")
        self.goal = bytearray()
        self.instants = LastInstants()
        self.remote = array("q")
        self.slots: dict[tuple[int, ...], int] = {}
        self.sent_count: dict[int, int] = {}  # per process: how many classes were sent there
        self.arrived: list[array[int]] = []

    def view(self, state: Flat) -> _View:
        last = self.last
        if last is not None and last.state is state:
            return last
        view = self.last = _View(state, self.memo)
        return view

    def trim(self) -> None:
        """Bound the caches (:data:`MEMO_LIMIT` entries a table): the checks' memo tables, the
        images of the canonical key, the restarted states known to be settled, and the signatures
        of the states found (only a cache in front of ``index`` when a state's class has a key, or
        of ``seen`` with fingerprints)."""
        self.memo.trim(MEMO_LIMIT)
        for table in self.canonical.memo:
            if len(table) > MEMO_LIMIT:
                table.clear()
        if len(self.settled) > MEMO_LIMIT:
            self.settled.clear()
        if (self.dead_data or self.symmetry or self.fingerprints) and len(self.stored) > MEMO_LIMIT:
            self.stored.clear()
        if len(self.owners) > MEMO_LIMIT:
            self.owners.clear()

    def note(self, number: int, action: Action) -> None:
        """``_Search.note``: the first move showing an operation, a crash point or an edge."""
        self.edges_known = note_first(self.first, self.edges_known, number, action)

    def witness(self, number: int, *last: Action) -> list[str]:
        return witness(self.via, self.parent, number, last)

    def owner(self, state: Flat, sig: tuple[int, ...]) -> int:
        """Which process keeps ``state``'s class (:mod:`spec._parallel`): its key's hash modulo
        the processes, the same in every process forked from one (strings hash alike); plus
        ``workers`` once it was sent there."""
        found = self.owners.get(sig)
        if found is None:
            key = state
            if self.dead_data:
                key = erase(key, self.regions)
            if self.symmetry:
                key = self.canonical.key(key)
            found = self.owners[sig] = hash(key) % self.workers
            self.keyed = (sig, key)
        return found

    def send_once(self, owner: int) -> tuple[int, bool]:
        """The slot of the class of the state :meth:`owner` has just placed with process ``owner``
        (its place among the classes sent there), and whether it was never sent there before (by
        its key: another state of the class counts as sent)."""
        packed = array("I", self.memo.signature(self.keyed[1])).tobytes()
        slot = self.sent.get(packed)
        if slot is not None:
            return slot, False
        slot = self.sent[packed] = self.sent_count.get(owner, 0)
        self.sent_count[owner] = slot + 1
        return slot, True

    def add(
        self, state: Flat, parent: int, action: Action | None, depth: int = -1, sent_key: Flat | None = None
    ) -> tuple[int, bool]:
        """Number ``state`` unless its class is known; returns (its number, whether it is new; with
        fingerprints a known state's number is not kept: -1). The state is looked up by its
        signature first (two states have equal signatures exactly when they are equal), and its
        class's key is computed only for a state not stored before. ``depth``: the state's, when
        ``parent`` is not a number of this search, and ``sent_key`` its class's key, computed by
        the process that sent it (:mod:`spec._parallel`)."""
        sig = self.view(state).numbers
        known = self.stored.get(sig)
        if known is not None:
            return known, False
        number = self.count
        key = sig
        classed = self.dead_data or self.symmetry
        if classed:
            if sent_key is not None:
                key = self.memo.signature(sent_key)
            elif self.keyed[0] == sig:  # spec._parallel: owner() has just computed it
                key = self.memo.signature(self.keyed[1])
            else:
                alike = erase(state, self.regions) if self.dead_data else state
                key = self.memo.signature(self.canonical.key(alike) if self.symmetry else alike)
        if self.fingerprints:
            self.stored[sig] = -1  # found: its class's hash is in ``seen`` (a bounded cache)
            if not self.seen.add(hash(key)):
                return -1, False
        else:
            if classed:
                packed = array("I", key).tobytes()
                known = self.index.get(packed)
                if known is not None:
                    self.stored[sig] = known
                    return known, False
                self.index[packed] = number
            self.stored[sig] = number
        self.signatures.extend(sig)
        self.count += 1
        self.parent.append(parent)
        self.via.append(action)
        self.depth.append(depth if depth >= 0 else 0 if parent < 0 else self.depth[parent] + 1)
        return number, True

    def waiting(self) -> int:
        """How many states wait to be expanded."""
        return self.count - self.head

    def take(self) -> tuple[int, tuple[int, ...]]:
        """The next state to expand, its number and signature; with fingerprints the signatures of
        the states expanded are dropped now and then (only the waiting ones are kept)."""
        number = self.head
        self.head += 1
        numbers = self.numbers(number)
        done = self.head - self.base
        if self.fingerprints and done >= COMPACT_AFTER and done * 2 >= self.count - self.base:
            del self.signatures[: done * _FIELDS]
            self.base = self.head
        return number, numbers

    def numbers(self, number: int) -> tuple[int, ...]:
        """Stored state ``number``'s signature (with fingerprints: a state not yet expanded)."""
        at = (number - self.base) * _FIELDS
        return tuple(self.signatures[at : at + _FIELDS])

    def state(self, number: int) -> Flat:
        """Stored state ``number``, rebuilt from its signature (its fields the interned ones)."""
        return self.memo.state(self.numbers(number))

    def trace(self, number: int, *last: tuple[Action, Flat]) -> list[tuple[Action | None, Any]]:
        if self.fingerprints:
            return [*self.replay(number), *((action, decode(state)) for action, state in last)]
        path: list[tuple[Action | None, Any]] = []
        while number >= 0:
            state = self.state(number)
            action = self.via[number]
            if action is not None and action.crash_after:
                path.append((Action("restart"), decode(state)))
                path.append((action, decode(self.memo.state(self.crash_prefix[number]))))
            else:
                path.append((action, decode(state)))
            number = self.parent[number]
        path.reverse()
        path.extend((action, decode(state)) for action, state in last)
        return path

    def replay(self, number: int) -> list[tuple[Action | None, Any]]:
        """With fingerprints: the path to state ``number`` (``_Search.replay``), rebuilt by taking
        the actions on it from the initial state; the flat model is deterministic, so it reaches
        the very states the search reached (a crash action its crashed state, then the restart)."""
        actions: list[Action] = []
        while number > 0:
            action = self.via[number]
            assert action is not None
            actions.append(action)
            number = self.parent[number]
        actions.reverse()
        return replay(self.flat, actions)

    def violate(
        self,
        clause: str,
        name: str,
        message: str,
        number: int,
        *last: tuple[Action, Flat],
    ) -> None:
        """The first violation of each check, with its shortest trace (state ``number``, then
        ``last``); on several processes the trace is left to be rebuilt (``lazy``)."""
        if name not in self.report.violations:
            lazy = self.lazy
            if lazy is not None:
                self.report.violations[name] = Violation(clause, name, message, [])
                lazy.append((name, number, last))
                return
            self.report.violations[name] = Violation(clause, name, message, self.trace(number, *last))

    def model_states(self) -> Iterator[State]:
        """The stored states as the model's (``spec.explore._Search.states``: the same, in order;
        none with fingerprints, which keeps no state once expanded)."""
        if self.fingerprints:
            return iter(())
        return self._decoded()

    def _decoded(self) -> Iterator[State]:
        # A generator function, not a generator expression: compiled, the expression was built
        # into a list at once (every stored state decoded, about 50 µs each, wanted or not).
        for number in range(self.count):
            yield decode(self.state(number))

    def stopped(self) -> bool:
        return self.stop_on is not None and (
            self.stop_on in self.report.violations
            or self.stop_on in {v.clause for v in self.report.violations.values()}
        )

    def save(self) -> dict[str, Any]:
        """With fingerprints: everything the search needs to go on later (:meth:`restore`), as
        plain data (``_Search.save``'s contract: the caller stores it at once; no I/O here). It
        names its engine, ``"flat"``: the model's search refuses it, as this one refuses the model's."""
        assert self.fingerprints, "only a search with fingerprints can be saved"
        report, at = self.report, (self.head - self.base) * _FIELDS
        return {
            "format": FLAT_SAVED_FORMAT,
            "engine": "flat",
            "hash_probe": hash_probe(),
            "config": self.config,
            "mutant": self.model.mutant,
            "dead_data": self.dead_data,
            "count": self.count,
            "head": self.head,
            "seen": (self.seen.bits, self.seen.size, self.seen.table.tobytes()),
            "parent": self.parent.tobytes(),
            "depth": self.depth.tobytes(),
            "via": (self.via.actions, self.via.codes.tobytes()),
            "queued": self.signatures[at:].tobytes(),  # the waiting states' signatures
            "results": (list(self.results), list(self.cleans)),
            "values": self.memo.values,  # what the signatures' (and the keys') numbers stand for
            "transitions": report.transitions,
            "expanded_through": report.expanded_through,
            "violations": report.violations,
            "edges": report.edges_taken | _model.EDGE_LOG[-1],
            "crashed_at": report.crashed_at,
            "deadlocks": report.deadlocks,
            "first": self.first,
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from :meth:`save`'s data, of a search of the same configuration and reductions
        (``ValueError`` otherwise, or for the model engine's data; the caller checks the source)."""
        assert self.fingerprints and self.count == 0
        check_saved(saved, (self.config, self.model.mutant, self.dead_data), "flat", FLAT_SAVED_FORMAT)
        self.count, self.head, self.base = saved["count"], saved["head"], saved["head"]
        self.seen.bits, self.seen.size = saved["seen"][0], saved["seen"][1]
        self.seen.table = array("Q")
        self.seen.table.frombytes(saved["seen"][2])
        self.parent.frombytes(saved["parent"])
        self.depth.frombytes(saved["depth"])
        self.via.restore(*saved["via"])
        self.signatures.frombytes(saved["queued"])
        self.results, self.cleans = deque(saved["results"][0]), deque(saved["results"][1])
        self.memo.restore(saved["values"])
        report = self.report
        report.transitions, report.violations = saved["transitions"], saved["violations"]
        report.expanded_through = saved["expanded_through"]
        report.edges_taken, report.crashed_at = saved["edges"], saved["crashed_at"]
        report.deadlocks = saved["deadlocks"]
        self.first, self.edges_known = saved["first"], 0  # the resumed run's edge log starts empty


def replay(flat: FlatModel, actions: list[Action]) -> list[tuple[Action | None, Any]]:
    """The path that takes ``actions`` from the initial state, as the model's states: the flat
    model is deterministic, so it reaches the very states a search reached (a crash action its
    crashed state, then the restart)."""
    state = flat.initial()
    path: list[tuple[Action | None, Any]] = [(None, decode(state))]
    for action in actions:
        state = next(s for a, s in flat.successors(state) if a == action and not isinstance(s, IllegalTransition))
        path.append((action, decode(state)))
        if action.crash_after:
            restart, restarted = next(iter(flat.successors(state)))
            assert not isinstance(restarted, IllegalTransition)
            state = restarted
            path.append((restart, decode(state)))
    return path


def explore_flat(model: Model, **how: Any) -> Report:
    """:func:`spec.explore.explore` on plain tuples, for a model :func:`spec.model._flat.supports`
    (``how``: :func:`search_flat`'s keywords)."""
    return search_flat(model, **how).report


def search_flat(
    model: Model,
    *,
    stop_on: str | None = None,
    max_states: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    out_of_time: Callable[[], bool] | None = None,
    fingerprints: bool = False,
    resume: dict[str, Any] | None = None,
    checkpoint: Callable[[Callable[[], dict[str, Any]], bool], None] | None = None,
) -> FlatSearch:
    """As :func:`explore_flat`, returning the whole search (its report, and its states as
    :meth:`FlatSearch.model_states`): ``spec.explore._search`` on plain tuples."""
    if (resume is not None or checkpoint is not None) and not fingerprints:
        raise ValueError("only a search with fingerprints can be saved and resumed")
    search = FlatSearch(model, stop_on, max_states, fingerprints)
    search.progress, search.out_of_time, search.checkpoint = progress, out_of_time, checkpoint
    if resume is not None:
        search.restore(resume)
    _model.EDGE_LOG.append(set())
    collecting = gc.isenabled()
    gc.disable()
    try:
        _bfs(search)
    finally:
        edges = _model.EDGE_LOG.pop()
        if collecting:
            gc.enable()
    report = search.report
    report.edges_taken |= edges
    report.states = search.count
    finish(report, search.depth, search.first, search.witness, search.count - 1)
    if search.keep_graph and report.complete and not search.stopped():
        every_cycle = model.config.part != ""
        report_liveness(report, search.violate, search.offsets, search.targets, search.goal, every_cycle)
        search.instants.report(search.violate, lambda number: search.flat.successors(search.state(number)))
    if report.complete and not search.stopped():
        check_boundaries(model, report, search.first, search.trace)
    return search


_INSTANT_POSITIONS = {
    "approvals": (APPROVALS, A_STATUS, A_DEADLINE),
    "plans": (PLANS, P_STATUS, P_DEADLINE),
    "runs": (RUNS, R_STATUS, R_DEADLINE),
    "shutdowns": (SHUTDOWNS, S_STATUS, S_DEADLINE),
}
_INSTANTS = tuple((field, live, *_INSTANT_POSITIONS[field]) for field, live, _, _ in LAST_INSTANT)


def at_last_instant(f: Flat) -> tuple[str, ...]:
    """:func:`spec.explore.at_last_instant` on a plain tuple: the kinds of record of which ``f`` has
    one live at its deadline (the clock), in a status the monitor ends it from; none if crashed."""
    if f[CRASHED]:
        return ()
    now = f[CLOCK]
    return tuple(
        field
        for field, live, records, status, deadline in _INSTANTS
        if any(r[status] in live and r[deadline] == now for r in f[records])
    )


def finish(
    report: Report,
    depths: Sequence[int],
    first: dict[str, tuple[int, Action]],
    witness: Callable[..., list[str]],
    last: int,
) -> None:
    """What a search's report takes from its stored states once it ends (the flat search's and the
    spread one's, :mod:`spec._parallel`): each edge's witness, the path to the last state found
    when the search is incomplete, the states by depth, and how deep it expanded if complete.
    ``depths`` are the states' depths, ``first`` each edge's first (state, action), ``witness(n,
    *action)`` the actions to state ``n`` (and then ``action``)."""
    report.witnesses = {key: witness(n, action) for key, (n, action) in sorted(first.items())}
    if not report.complete and report.states:
        report.frontier = witness(last)
    report.depth = max(depths, default=0)
    report.states_by_depth = [0] * (report.depth + 1)
    for depth in depths:
        report.states_by_depth[depth] += 1
    if report.complete:
        report.expanded_through = report.depth


def _bfs(search: FlatSearch) -> None:
    flat, report = search.flat, search.report
    if search.count == 0:
        initial = flat.initial()
        view = search.view(initial)
        start, _ = search.add(initial, -1, None)
        _check_state(search, start, view, None)
    while search.waiting() and not search.stopped():
        if search.max_states is not None and search.count >= search.max_states:
            stop(search)
            return
        number, numbers = search.take()
        state = search.memo.state(numbers)
        report.expanded_through = search.depth[number] - 1
        before = search.last = _View(state, search.memo, numbers)
        kept = search.results.popleft()
        before.res = None if kept is None else list(kept)
        before.clean = search.cleans.popleft()
        _expand(search, number, state, before)
        if number % TRIM_EVERY == 0:
            search.trim()
        if number % POLL_EVERY == 0 and poll(search, search.depth[number]):
            return


def _expand(search: FlatSearch, number: int, state: Flat, before: _View) -> None:
    """Every move from stored state ``number``; a state with none that is not a goal is a deadlock."""
    flat, report = search.flat, search.report
    outgoing = 0
    graph = search.keep_graph
    workers, me = search.workers, search.me
    if graph:
        search.goal.append(flat.is_goal(state))
        fields = at_last_instant(state)
        if fields:
            search.instants.note(number * workers + me, fields, state[MONITOR_DONE])
    for action, after_state in flat.successors(state):
        if isinstance(after_state, IllegalTransition):
            message = str(after_state)
            search.violate("INV-3", "transitions_follow_tables", message, number)
            continue
        outgoing += action.name != HARNESS_CRASH.name  # the harness crash keeps no state from deadlock
        taken, after, crashed, came = _take(search, number, action, after_state, before)
        search.note(number, action)
        if taken is None or after is None:
            continue
        if workers > 1:  # spec._parallel: this process keeps the state, or its owner does
            known = search.stored.get(after.numbers)
            if known is not None:  # kept here and known: as add() finds it
                if graph:
                    _edge(search, known * workers + me, crashed is not None)
                continue
            owner = search.owner(taken, after.numbers)
            if owner != me:
                search.owners[after.numbers] = owner % workers + workers
                if owner < workers:
                    slot, first = search.send_once(owner)
                    if graph:
                        search.slots[after.numbers] = slot
                    if first:  # checked here, as if new
                        problems = search.memo.check_state(after, not taken[12], came)
                        found = [(inv.clause, inv.name, message) for inv, message in problems]
                        kept = search.memo.kept(after)
                        search.outbox[owner].append(
                            (number * workers + me, action, taken, search.keyed[1], kept, after.clean, found)
                        )
                if graph:
                    search.remote.extend((len(search.targets), owner % workers, search.slots[after.numbers]))
                    _edge(search, 0, crashed is not None)  # a placeholder, resolved by the join
                continue
            target, new = search.add(taken, number * workers + me, action, search.depth[number] + 1)
            if graph:
                _edge(search, target * workers + me, crashed is not None)
            if new:
                _check_state(search, target, after, came)
            continue
        target, new = search.add(taken, number, action)
        if graph:
            _edge(search, target, crashed is not None)
        if new and crashed is not None and not search.fingerprints:
            search.crash_prefix[target] = came.numbers
        if new:
            _check_state(search, target, after, came)
    if graph:
        search.offsets.append(len(search.targets))
    if outgoing == 0 and not flat.is_goal(state):
        report.deadlocks += 1
        search.violate(
            "INV-12",
            "no_deadlock",
            "no action is enabled and some request is not final",
            number,
        )


def _edge(search: FlatSearch, target: int, crash: bool) -> None:
    """A move of the state being expanded, into the graph (``FlatSearch.targets``)."""
    search.targets.append(-target - 1 if crash else target)


def _take(
    search: FlatSearch, number: int, action: Action, after_state: Flat, before: _View
) -> tuple[Flat | None, _View | None, Flat | None, _View]:
    """One transition from state ``number`` (``spec.explore._take``): the state reached, its view,
    the crashed state it went through (or None) and the view of the state it came from."""
    search.report.transitions += 1
    after = search.view(after_state)
    _check_step(search, number, [(action, after_state)], before, after)
    if not after_state[12]:
        return after_state, after, None, before
    search.report.crashed_at.add(action.crash_after)
    prefix = [(action, after_state)]
    for inv, message in search.memo.check_state(after, False, before):
        search.violate(inv.clause, inv.name, message, number, *prefix)
    for restart, restarted in search.flat.successors(after_state):
        if isinstance(restarted, IllegalTransition):
            message = str(restarted)
            search.violate("INV-3", "transitions_follow_tables", message, number, *prefix)
            return None, None, after_state, after
        search.report.transitions += 1
        restarted_view = search.view(restarted)
        _check_step(search, number, [*prefix, (restart, restarted)], after, restarted_view)
        return restarted, restarted_view, after_state, after
    raise AssertionError("a crashed state must have its restart")


def _check_state(search: FlatSearch, number: int, view: _View, parent: _View | None) -> None:
    """A new stored state's checks (``parent``: the state it was reached from, checked before)."""
    for inv, message in search.memo.check_state(view, not view.state[12], parent):
        search.violate(inv.clause, inv.name, message, number)
    search.results.append(search.memo.kept(view))
    search.cleans.append(view.clean)


def _check_step(
    search: FlatSearch,
    number: int,
    steps: list[tuple[Action, Flat]],
    before: _View,
    after: _View,
) -> None:
    action, after_state = steps[-1]
    for inv, message in search.memo.check_step(before, after):
        search.violate(inv.clause, inv.name, message, number, *steps)
    if action.name == "restart":
        if after.numbers in search.settled:
            return
        again_state = search.flat.reconcile(after_state)
        if again_state == after_state:
            search.settled.add(after.numbers)
            return
        again = snapshot(decode(again_state), search.config)
        for message in invariants.reconcile_is_idempotent(after.snapshot(), again):
            search.violate("INV-7", "reconcile_is_idempotent", message, number, *steps)


__all__ = ["Canonical", "FlatSearch", "erase", "explore_flat", "image", "search_flat"]
