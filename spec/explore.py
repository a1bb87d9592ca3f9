"""The exhaustive explorer: breadth-first over a bounded configuration (DESIGN "explorer").

It checks every INV-* predicate of :mod:`spec.invariants` on the snapshot of every reachable
state (state invariants) and of every transition (step invariants), that reconciliation is
idempotent after every restart (REC-1), that every edge of every machine table is taken, that
every crash point is crashed, that no state is a deadlock, and — where the configuration asks for
it — liveness: from every state a state where every request is final is reachable, and no cycle
avoids such states (under symmetry too: the goal names no member, so a class reaches the goal
exactly when each of its states does, and a cycle of states is a cycle of classes, or a step from
a class to itself, which :func:`liveness_problems` counts as one). Counterexamples are shortest
(BFS order).

Reductions: crashed states are transient (checked, then restarted at once), an owed outbox send
is taken alone (partial-order reduction, ``Model.operations``), the visited set is keyed by the
state with its dead data erased (:mod:`spec.model._dead`), and under symmetry by the canonical
key of that (:mod:`spec.model._symmetry`). The stored states are concrete states: every check
and every trace is of a state the model really reaches. For runs too large to keep every state,
``fingerprints`` keeps a 64-bit hash of each key instead (hash compaction, as TLC and SPIN offer)
and rebuilds traces by replay; the report bounds the chance that a hash collision hid a state.

Pure: no clock and no I/O. The caller times the run and passes a ``progress`` callback.
"""

from __future__ import annotations

import copy
import gc
import os
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any, Protocol

from mypy_extensions import mypyc_attr

from . import invariants
from ._records import Report, Violation
from ._tables import IllegalTransition
from .model import _model
from .model._config import Config, engine_choice
from .model._dead import erase
from .model._model import HARNESS_CRASH, Action, Model
from .model._ops import CRASH_POINTS, WRITE_STEPS
from .model._reconcile import reconcile
from .model._snapshot import SECTION_INPUTS, snapshot, world_of
from .model._state import State
from .model._symmetry import PERMUTED, _perms, image

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / the golden ratio: multiplying by it spreads the slots (Fibonacci hashing)


class _Fingerprints:
    """A set of 64-bit fingerprints in one flat array of 8-byte slots, at most three quarters full
    (a Python set of such ints costs about 80 bytes an entry). Open addressing with linear
    probing; a zero slot is free, so the fingerprint 0 is stored as 1."""

    def __init__(self, bits: int = 16) -> None:
        self.bits = bits
        self.table = array("Q", bytes(8 << bits))
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, fingerprint: int) -> bool:
        """Add the low 64 bits of ``fingerprint``; False when they were there already."""
        value = fingerprint & _MASK64 or 1
        table = self.table
        mask = len(table) - 1
        slot = (value * _GOLDEN & _MASK64) >> (64 - self.bits)
        held = table[slot]
        while held != 0:
            if held == value:
                return False
            slot = (slot + 1) & mask
            held = table[slot]
        table[slot] = value
        self.size += 1
        if self.size * 4 > len(table) * 3:
            self._grow()
        return True

    def _grow(self) -> None:
        old = self.table
        self.bits += 1
        self.table = array("Q", bytes(8 << self.bits))
        self.size = 0
        for value in old:
            if value != 0:
                self.add(value)


CODEC_FIELDS = ("members", "tasks", "jobs", "approvals", "executions", "plans", "runs", "shutdowns", "bus", "outbox")
"""The fields of a state that :class:`_Codec` numbers (the others are numbers already)."""


class _Codec:
    """A state as a short byte string of numbers, for the states waiting in a search with
    fingerprints: each of its tuples of records is numbered once and kept once (states share
    them), so a waiting state costs about 100 bytes instead of several hundred."""

    def __init__(self) -> None:
        self.numbers: dict[Any, int] = {}  # a tuple of records -> its number
        self.by_id: dict[int, int] = {}  # id of a kept tuple -> its number (kept tuples never die)
        self.values: list[Any] = []

    def number(self, value: Any) -> int:
        known = self.by_id.get(id(value))
        if known is not None:
            return known
        known = self.numbers.get(value)
        if known is None:
            known = self.numbers[value] = len(self.values)
            self.values.append(value)
            self.by_id[id(value)] = known
        return known

    def signature(self, s: State) -> tuple[int, ...]:
        """The state as a tuple of numbers: the clock, the number of each of its tuples of records
        (:data:`CODEC_FIELDS`), then its flags. Two states have equal tuples exactly when they are
        equal; the tuple hashes and compares far faster than the state."""
        number = self.number
        return (
            s.clock,
            number(s.members),
            number(s.tasks),
            number(s.jobs),
            number(s.approvals),
            number(s.executions),
            number(s.plans),
            number(s.runs),
            number(s.shutdowns),
            number(s.bus),
            number(s.outbox),
            int(s.monitor_done),
            int(s.crashed),
            s.profile_changes,
        )

    def interned(self, s: State, numbers: tuple[int, ...]) -> State:
        """``s`` built from the kept tuples (its ``numbers``): states that share a tuple share it
        by identity, so numbering their successors mostly finds their tuples by identity."""
        v = self.values
        return State(
            s.clock,
            v[numbers[1]],
            v[numbers[2]],
            v[numbers[3]],
            v[numbers[4]],
            v[numbers[5]],
            v[numbers[6]],
            v[numbers[7]],
            v[numbers[8]],
            v[numbers[9]],
            v[numbers[10]],
            s.monitor_done,
            s.crashed,
            s.profile_changes,
        )

    def encode(self, s: State) -> bytes:
        numbers = [s.clock, int(s.monitor_done), int(s.crashed), s.profile_changes]
        numbers += [self.number(getattr(s, name)) for name in CODEC_FIELDS]
        return array("I", numbers).tobytes()

    def decode(self, data: bytes) -> State:
        numbers = array("I")
        numbers.frombytes(data)
        values = self.values
        return State(
            numbers[0],
            values[numbers[4]],
            values[numbers[5]],
            values[numbers[6]],
            values[numbers[7]],
            values[numbers[8]],
            values[numbers[9]],
            values[numbers[10]],
            values[numbers[11]],
            values[numbers[12]],
            values[numbers[13]],
            bool(numbers[1]),
            bool(numbers[2]),
            numbers[3],
        )


class _Canonical:
    """The canonical key of a state under symmetry, in the codec's numbers: the least, over every
    member and task permutation, of the signature (:meth:`_Codec.signature`) of the state's
    image. A field's image depends on that field and the permutation alone
    (:func:`spec.model._symmetry.image`), so it is computed once per tuple of records and
    permutation, and numbered: a key then costs a few look-ups per permutation. The codec numbers
    equal tuples alike and different tuples apart, so two states have the same key exactly when
    one is an image of the other: the partition of :func:`spec.model._symmetry.canonical_key`
    (``model_tests/test_state_memo.py`` compares the two on whole state spaces)."""

    def __init__(self, codec: _Codec, members: int, tasks: int) -> None:
        self.codec = codec
        self.perms = _perms(members, tasks)[1:]  # the identity's image is the state itself
        self.images: dict[int, int] = {}  # number of a tuple * len(perms) + the permutation -> image's number

    def key(self, numbers: tuple[int, ...]) -> tuple[int, ...]:
        best = numbers
        count = len(self.perms)
        images = self.images
        for p, (pm, pt) in enumerate(self.perms):
            out = list(numbers)
            for position, name in _PERMUTED_POSITIONS:
                number = numbers[position]
                memo = number * count + p
                known = images.get(memo)
                if known is None:
                    known = images[memo] = self.codec.number(image(name, self.codec.values[number], pm, pt))
                out[position] = known
            candidate = tuple(out)
            if candidate < best:
                best = candidate
        return best


_POSITION = {"clock": 0, **{name: i + 1 for i, name in enumerate(CODEC_FIELDS)}}
_PERMUTED_POSITIONS = tuple((_POSITION[name], name) for name in PERMUTED)
SECTION_POSITIONS: dict[str, tuple[int, ...]] = {
    section: tuple(_POSITION[name] for name in inputs) for section, inputs in SECTION_INPUTS.items()
}
"""Each snapshot section → the positions in :meth:`_Codec.signature` of the fields it is built from."""


class _View:
    """A state as the checks see it: its numbers (:meth:`_Codec.signature`), and its snapshot,
    built only when a check must run on it."""

    def __init__(self, state: State, numbers: tuple[int, ...], config: Config) -> None:
        self.state = state
        self.numbers = numbers
        self.config = config
        self.snap: dict[str, Any] | None = None

    def snapshot(self) -> dict[str, Any]:
        snap = self.snap
        if snap is None:
            snap = self.snap = snapshot(self.state, self.config)
        return snap


def _getter(positions: tuple[int, ...]) -> Callable[[tuple[int, ...]], Any]:
    """The numbers at ``positions`` (one number, or a tuple of them): a memo key's part."""
    return itemgetter(*positions) if positions else _nothing


def _nothing(numbers: tuple[int, ...]) -> Any:
    return ()


_WORLD_KEY = _getter(SECTION_POSITIONS["tool_execution"])
"""The numbers :data:`spec.invariants.WORLD` is a function of: those of the executions (their
ghost ``world_calls`` is a field of each) and of the approvals (their keys)."""


def _mask(positions: tuple[int, ...]) -> int:
    mask = 0
    for position in positions:
        mask |= 1 << position
    return mask


def changed_mask(old: tuple[int, ...], new: tuple[int, ...]) -> int:
    """The positions (as bits) of the numbers that differ between two states' signatures."""
    mask = 0
    for position in range(11):
        if old[position] != new[position]:
            mask |= 1 << position
    return mask


MEMO_LIMIT = 1_000_000
"""The memo forgets its results beyond this many (a simulation also its numbers)."""


class StateMemo:
    """The invariant checks of one search, memoised on the state's numbers instead of its snapshot.

    Every check stays the snapshot predicate of :mod:`spec.invariants` (the contract): a check's
    result is a function of the sections it ``reads``, and a section of the fields of the state
    it is built from (:data:`SECTION_INPUTS`), so a result is keyed by the numbers of those fields
    (:meth:`_Codec.signature`; the configuration is fixed within a search). Only a key not seen
    before builds the snapshot and runs the predicate. Each check has its own table, keyed by
    its numbers alone (a step check in a step that changes none of them by its numbers before:
    the same documents before and after). ``model_tests/test_state_memo.py`` shows that
    searches checked this way and checked on every snapshot find the same.
    """

    def __init__(self) -> None:
        self.size = 0  # results held, in every table
        self.tables: list[dict[Any, list[str]]] = []
        state_checks = [self._plan(inv) for inv in invariants.STATE_INVARIANTS]
        self.state_checks = {
            reconciled: [c for c in state_checks if reconciled or not c[0].after_reconcile]
            for reconciled in (False, True)
        }
        self.step_checks = [self._plan(inv) for inv in invariants.STEP_INVARIANTS]
        self.world_table = self._table()
        self.sections: dict[str, list[tuple[str, Callable[[tuple[int, ...]], Any], int, dict[Any, list[str]]]]] = {
            inv.name: [
                (name, _getter(SECTION_POSITIONS[name]), _mask(SECTION_POSITIONS[name]), self._table())
                for name in inv.reads or SECTION_INPUTS
            ]
            for inv in invariants.INVARIANTS
        }

    def _table(self) -> dict[Any, list[str]]:
        table: dict[Any, list[str]] = {}
        self.tables.append(table)
        return table

    def _plan(self, inv: invariants.Invariant) -> tuple[Any, ...]:
        positions = tuple(sorted({p for section in inv.reads for p in SECTION_POSITIONS[section]}))
        quiet = tuple(sorted({p for section in inv.quiet_unless for p in SECTION_POSITIONS[section]}))
        kind = "sections" if inv.by_section is not None else "keyed" if inv.reads else "plain"
        return inv, kind, _getter(positions), _mask(quiet), _mask(positions), self._table(), self._table()

    def _forget_if_large(self) -> None:
        if self.size > MEMO_LIMIT:
            for table in self.tables:
                table.clear()
            self.size = 0

    def check_state(self, view: _View, reconciled: bool) -> list[tuple[invariants.Invariant, str]]:
        """As :func:`spec.invariants.check_state` on the view's snapshot."""
        out: list[tuple[invariants.Invariant, str]] = []
        numbers = view.numbers
        for inv, kind, get, _, _, table, _ in self.state_checks[reconciled]:
            if kind == "keyed":
                part = get(numbers)
                found = table.get(part)
                if found is None:
                    found = table[part] = inv.check(view.snapshot())
                    self.size += 1
            elif kind == "sections":
                found = self._state_sections(view, inv)
            else:
                found = inv.check(view.snapshot())
            for problem in found:
                out.append((inv, problem))
        part = _WORLD_KEY(numbers)  # spec.invariants.WORLD, keyed on the executions' and approvals' numbers
        found = self.world_table.get(part)
        if found is None:
            found = self.world_table[part] = world_problems(view.state)
            self.size += 1
        for problem in found:
            out.append((invariants.WORLD, problem))
        self._forget_if_large()
        return out

    def _state_sections(self, view: _View, inv: invariants.Invariant) -> list[str]:
        """A state check that decomposes by section: each section's share memoised."""
        assert inv.by_section is not None
        problems: list[str] = []
        numbers = view.numbers
        for name, get, _, table in self.sections[inv.name]:
            part = get(numbers)
            share = table.get(part)
            if share is None:
                share = table[part] = inv.by_section(name, view.snapshot()[name])
                self.size += 1
            if share:
                problems += share
        return problems

    def check_step(self, before: _View, after: _View) -> list[tuple[invariants.Invariant, str]]:
        """As :func:`spec.invariants.check_step` on the views' snapshots."""
        out: list[tuple[invariants.Invariant, str]] = []
        old, new = before.numbers, after.numbers
        changed = changed_mask(old, new)
        for inv, kind, get, quiet, mask, table, still in self.step_checks:
            if kind == "keyed":
                if mask & changed:
                    part = (get(old), get(new))
                    found = table.get(part)
                    if found is None:
                        found = table[part] = inv.check(before.snapshot(), after.snapshot())
                        self.size += 1
                else:  # a step that changes none of its sections: a function of before
                    alone = get(old)
                    found = still.get(alone)
                    if found is None:
                        snap = before.snapshot()
                        found = still[alone] = inv.check(snap, snap)
                        self.size += 1
            elif kind == "sections":
                found = self._step_sections(inv, before, after, changed)
            elif quiet and not quiet & changed:
                continue  # Invariant.quiet_unless: none of its sections changed
            else:
                found = inv.check(before.snapshot(), after.snapshot())
            for problem in found:
                out.append((inv, problem))
        self._forget_if_large()
        return out

    def _step_sections(self, inv: invariants.Invariant, before: _View, after: _View, changed: int) -> list[str]:
        """A step check that decomposes by section (``Invariant.by_section``), each share
        memoised; only the sections whose inputs changed (the others hold the same documents)."""
        assert inv.by_section is not None
        problems: list[str] = []
        old, new = before.numbers, after.numbers
        for name, get, mask, table in self.sections[inv.name]:
            if not mask & changed:
                continue  # the very same documents before and after: nothing to find
            part = (get(old), get(new))
            share = table.get(part)
            if share is None:
                share = table[part] = inv.by_section(name, before.snapshot()[name], after.snapshot()[name])
                self.size += 1
            if share:
                problems += share
        return problems


SAVED_FORMAT = "teamproto-search/2"  # /2: the witnesses of the behaviour reached (spec.drift)
"""The format of :meth:`_Search.save`'s data."""


def check_engine(saved: dict[str, Any], engine: str) -> None:
    """Refuse saved search data made by the other engine (``"model"``: :class:`_Search`,
    ``"flat"``: :class:`spec._flat_explore.FlatSearch`; data saved before engines were named is
    the model's): each resumes only its own (issue 18 item 5)."""
    made = saved.get("engine", "model")
    if made != engine:
        raise ValueError(
            f"the saved search was made by the {made} engine, not the {engine} engine: resume it with "
            f"TEAMPROTO_ENGINE={made}"
        )


def check_saved(saved: dict[str, Any], mine: tuple[Any, ...], engine: str, form: str) -> None:
    """Refuse (``ValueError``) saved search data that is not of this search: another engine
    (:func:`check_engine`), format, (configuration, mutant, reduction) ``mine``, or string hashes."""
    if (saved.get("config"), saved.get("mutant"), saved.get("dead_data")) == mine:
        check_engine(saved, engine)  # of this very search, but saved by the other engine
    if saved.get("format") != form or (saved["config"], saved["mutant"], saved["dead_data"]) != mine:
        raise ValueError("the saved search is of another format, configuration, mutant or reduction")
    if saved["hash_probe"] != hash_probe():
        raise ValueError(
            "the saved search's fingerprints were made with other string hashes: resume it in a process "
            "started with the same PYTHONHASHSEED"
        )


def hash_probe() -> int:
    """Python's hash of a few strings, as a fingerprint hashes them: it differs between processes
    unless they were started with the same ``PYTHONHASHSEED``. A saved search's fingerprints are
    only valid in a process whose probe is the one saved with them."""
    return hash(("teamproto", "running", "claimed", "requested", 1))


def note_first(first: dict[str, tuple[int, Action]], edges_known: int, number: int, action: Action) -> int:
    """Record in ``first`` the first move (from state ``number``) that took an operation, a crash
    point or a machine edge; returns how many edges the edge log now holds (both searches' ``note``)."""
    for key in (f"op {action.name}", f"crash {action.crash_after}" if action.crash_after else ""):
        if key and key not in first:
            first[key] = (number, action)
    if not _model.EDGE_LOG:  # a caller's own _bfs without explore's edge log: no edge witnesses
        return edges_known
    edges = _model.EDGE_LOG[-1]
    if len(edges) != edges_known:
        for machine, source, target in edges:
            first.setdefault(f"edge {machine} {source} -> {target}", (number, action))
    return len(edges)


class ActionsByState(Protocol):
    """The action into each stored state, by its number (a list, or the flat search's table)."""

    def __getitem__(self, number: int, /) -> Action | None: ...


def witness(via: ActionsByState, parent: array[int], number: int, last: tuple[Action, ...]) -> list[str]:
    """The actions from the initial state to state ``number`` (a crash's restart implied), then
    ``last``, following ``parent`` and ``via`` (both searches' ``witness``)."""
    actions: list[str] = [str(action) for action in last]
    while number > 0:
        action = via[number]
        assert action is not None
        actions.append(str(action))
        number = parent[number]
    actions.reverse()
    return actions


@mypyc_attr(allow_interpreted_subclasses=True)  # conformance._vectors._Covering extends it
class _Search:
    def __init__(
        self,
        model: Model,
        stop_on: str | None,
        max_states: int | None,
        progress: Callable[[int, int, int], None] | None,
        fingerprints: bool = False,
    ) -> None:
        self.model, self.stop_on, self.max_states, self.progress = model, stop_on, max_states, progress
        self.out_of_time: Callable[[], bool] | None = None
        self.checkpoint: Callable[[Callable[[], dict[str, Any]], bool], None] | None = None
        self.dead_data = model.reduce
        self.symmetry = model.config.symmetry
        self.config = model.config
        self.report = Report(model.config.name, model.mutant, require_coverage=model.config.require_coverage)
        self.report.fingerprints = fingerprints
        self.fingerprints = fingerprints  # hash compaction: keep 64-bit hashes of keys, not states
        self.count = 0
        self.index: dict[Any, int] = {}  # the numbers of the dead-data class, or its canonical key under symmetry
        self.seen = _Fingerprints(16 if fingerprints else 1)  # with fingerprints: the hashes of the keys
        self.states: list[State] = []  # without fingerprints: every state reached
        self.queue: deque[int] = deque()  # without fingerprints: the numbers of the states not yet expanded
        self.queued: deque[bytes] = deque()  # with fingerprints: the states not yet expanded, encoded
        self.codec = _Codec()
        self.parent = array("q")
        self.via: list[Action | None] = []
        self.depth = array("H")  # a depth beyond 65,535 raises OverflowError
        self.successors: list[list[int]] = []  # crash edges (crash + restart) are stored as -target - 1
        self.keep_graph = model.config.liveness  # the edges are kept only for the liveness check
        initial = model.initial()
        self.canonical = _Canonical(self.codec, len(initial.members), len(initial.tasks))
        self.stored: dict[tuple[int, ...], int] = {}  # the numbers of each stored state -> its number
        self.actions: dict[Action, Action] = {}
        self.crash_prefix: dict[State, State] = {}  # restarted state -> the crashed prefix it came from
        self.memo = StateMemo()  # checks memoised on the states' numbers
        self.plain = False  # run every check on every snapshot, unmemoised (the contract, for tests)
        self.last: _View | None = None  # the view of the state last taken, for add()
        self.settled: set[tuple[int, ...]] = set()  # the numbers of restarted states that reconcile to themselves
        self.first: dict[str, tuple[int, Action]] = {}  # behaviour key -> the first move that showed it
        self.edges_known = 0  # how many edges the edge log held after the last move

    def note(self, number: int, action: Action) -> None:
        """Remember the first move from state ``number`` that took an operation, a crash point or a
        machine edge (:func:`spec.drift.behaviour`'s keys): breadth-first, so a shortest witness."""
        self.edges_known = note_first(self.first, self.edges_known, number, action)

    def witness(self, number: int, *last: Action) -> list[str]:
        """The actions from the initial state to state ``number`` (a crash's restart implied), then ``last``."""
        return witness(self.via, self.parent, number, last)

    def view(self, state: State) -> _View:
        """The state's view (its numbers, its snapshot on demand)."""
        last = self.last
        if last is not None and last.state is state:
            return last
        view = self.last = _View(state, self.codec.signature(state), self.config)
        return view

    def forget_if_large(self) -> None:
        """For a search that keeps no states (a simulation): drop the numbers and the memo when
        they grow large (the numbers key the memo, so both go together)."""
        if len(self.codec.values) + self.memo.size > MEMO_LIMIT:
            self.codec, self.memo, self.last, self.settled = _Codec(), StateMemo(), None, set()

    def add(self, state: State, parent: int, action: Action | None) -> tuple[int, bool]:
        """Number ``state`` unless its key is known; returns (its number, whether it is new). With
        fingerprints a known state's number is not kept: it is -1."""
        numbers = self.view(state).numbers
        if not self.fingerprints:
            # Most duplicates are the very state stored, not another of its class: look that up
            # first and compute the class's key (under symmetry the costly part) only for the rest.
            known = self.stored.get(numbers)
            if known is not None:
                return known, False
        key: Any = numbers
        classed = self.dead_data or self.symmetry  # the key is of a class of states, not of one
        if classed:
            alike = erase(state, self.config.regions) if self.dead_data else state  # one state per dead-data class
            if self.symmetry:  # numbers of the codec: a saved search keeps them (its codec's values)
                key = self.canonical.key(numbers if alike is state else self.codec.signature(alike))
            elif alike is not state:
                key = self.codec.signature(alike)
        number = self.count
        if self.fingerprints:
            if not self.seen.add(hash(key)):
                return -1, False
            self.queued.append(self.codec.encode(state))
        else:
            if classed:
                known = self.index.get(key)
                if known is not None:
                    self.stored[numbers] = known  # found again: no class key to compute then
                    return known, False
                self.index[key] = number
            self.stored[numbers] = number
            self.states.append(self.codec.interned(state, numbers))
            self.queue.append(number)
        self.count += 1
        self.parent.append(parent)
        self.via.append(action if action is None else self.actions.setdefault(action, action))
        self.depth.append(0 if parent < 0 else self.depth[parent] + 1)
        if self.keep_graph:
            self.successors.append([])
        return number, True

    def waiting(self) -> int:
        """How many states wait to be expanded."""
        return len(self.queued) if self.fingerprints else len(self.queue)

    def take(self) -> tuple[int, State]:
        """The next state to expand and its number, in the order they were found (with
        fingerprints it is then no longer kept)."""
        if not self.fingerprints:
            number = self.queue.popleft()
            return number, self.states[number]
        number = self.count - len(self.queued)
        return number, self.codec.decode(self.queued.popleft())

    def save(self) -> dict[str, Any]:
        """With fingerprints: everything the search needs to go on later (:meth:`restore`), as
        plain data (arrays as bytes). The caller stores it at once, before the search goes on: the
        data shares the search's lists and sets. The explorer does no I/O."""
        assert self.fingerprints, "only a search with fingerprints can be saved"
        report = self.report
        return {
            "format": SAVED_FORMAT,
            "engine": "model",
            "hash_probe": hash_probe(),
            "config": self.config,
            "mutant": self.model.mutant,
            "dead_data": self.dead_data,
            "count": self.count,
            "seen": (self.seen.bits, self.seen.size, self.seen.table.tobytes()),
            "parent": self.parent.tobytes(),
            "depth": self.depth.tobytes(),
            "via": self.via,
            "queued": list(self.queued),
            "codec": self.codec.values,
            "transitions": report.transitions,
            "expanded_through": report.expanded_through,
            "violations": report.violations,
            "edges": report.edges_taken | _model.EDGE_LOG[-1],
            "crashed_at": report.crashed_at,
            "deadlocks": report.deadlocks,
            "first": self.first,  # the witnesses of spec.drift, so a resumed search keeps them
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from :meth:`save`'s data, of a search of the same configuration, mutant and
        reductions (the caller checks that the model's source is the same too)."""
        assert self.fingerprints and self.count == 0
        check_saved(saved, (self.config, self.model.mutant, self.dead_data), "model", SAVED_FORMAT)
        self.count = saved["count"]
        self.seen.bits, self.seen.size = saved["seen"][0], saved["seen"][1]
        self.seen.table = array("Q")
        self.seen.table.frombytes(saved["seen"][2])
        self.parent.frombytes(saved["parent"])
        self.depth.frombytes(saved["depth"])
        self.via = saved["via"]
        self.actions = {action: action for action in self.via if action is not None}
        self.queued = deque(saved["queued"])
        self.codec.values = saved["codec"]
        self.codec.numbers = {value: number for number, value in enumerate(self.codec.values)}
        self.codec.by_id = {id(value): number for number, value in enumerate(self.codec.values)}
        report = self.report
        report.transitions, report.violations = saved["transitions"], saved["violations"]
        report.expanded_through = saved["expanded_through"]
        report.edges_taken, report.crashed_at = saved["edges"], saved["crashed_at"]
        report.deadlocks = saved["deadlocks"]
        self.first, self.edges_known = saved["first"], 0  # the resumed run's edge log starts empty

    def trace(self, number: int, *last: tuple[Action, State]) -> list[tuple[Action | None, State]]:
        """The path from the initial state to state ``number``, then the ``last`` steps."""
        if self.fingerprints:
            return [*self.replay(number), *last]
        path: list[tuple[Action | None, State]] = []
        while number >= 0:
            state = self.states[number]
            action = self.via[number]
            if action is not None and action.crash_after:
                path.append((Action("restart"), state))
                path.append((action, self.crash_prefix[state]))
            else:
                path.append((action, state))
            number = self.parent[number]
        path.reverse()
        path.extend(last)
        return path

    def replay(self, number: int) -> list[tuple[Action | None, State]]:
        """With fingerprints: the path to state ``number``, rebuilt from the actions on it. The
        model is deterministic, so replaying them from the initial state reaches the very states
        the search reached (a crash action reaches its crashed state, then the restart)."""
        actions: list[Action] = []
        while number > 0:
            action = self.via[number]
            assert action is not None
            actions.append(action)
            number = self.parent[number]
        state = self.model.initial()
        path: list[tuple[Action | None, State]] = [(None, state)]
        for action in reversed(actions):
            state = next(s for a, s in self.model.successors(state) if a == action and isinstance(s, State))
            path.append((action, state))
            if action.crash_after:
                restart, restarted = next(iter(self.model.successors(state)))
                assert isinstance(restarted, State)
                state = restarted
                path.append((restart, state))
        return path

    def violate(self, clause: str, name: str, message: str, trace: list[tuple[Action | None, State]]) -> None:
        if name not in self.report.violations:
            self.report.violations[name] = Violation(clause, name, message, trace)

    def stopped(self) -> bool:
        """``stop_on`` names a clause (INV-*) or an invariant, and a violation of it was found."""
        return self.stop_on is not None and (
            self.stop_on in self.report.violations
            or self.stop_on in {v.clause for v in self.report.violations.values()}
        )


def explore(
    model: Model,
    *,
    stop_on: str | None = None,
    max_states: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    out_of_time: Callable[[], bool] | None = None,
    dead_data: bool | None = None,
    fingerprints: bool = False,
    resume: dict[str, Any] | None = None,
    checkpoint: Callable[[Callable[[], dict[str, Any]], bool], None] | None = None,
) -> Report:
    """Explore every state of ``model`` breadth-first; see the module docstring.

    ``max_states`` and ``out_of_time`` (polled every 2,000 states) bound the run; a bounded run
    that stops early is reported incomplete. ``dead_data`` (default: on when the model's
    reductions are) expands one state per class of :func:`spec.model._dead.erase`.

    ``fingerprints`` turns on hash compaction, for runs too large to keep every state: the visited
    set holds a 64-bit hash of each key instead of the key, only the states not yet expanded are
    kept, and a trace is rebuilt by replaying the actions on its path. A hash shared by two keys
    would hide the second state; the report's :attr:`Report.omission_bound` bounds the chance of
    that. The liveness check needs the whole graph: it excludes fingerprints.

    A search with fingerprints can be stopped and gone on with later: ``checkpoint(save, final)``
    is called whenever ``out_of_time`` is polled (``final`` false) and when a bound stops the
    search (``final`` true); calling ``save()`` returns the search as plain data, and
    ``resume=`` that data goes on from there. The explorer does no I/O: the caller stores it.

    Where :func:`spec.model._flat.supports` the configuration and the mutant and no option asks
    for what it lacks (the dead-data switch, a model without its reductions), the search runs on
    plain tuples (:mod:`spec._flat_explore`), with fingerprints and saved searches too: the same
    search, proven equal by ``model_tests/test_flat.py``, ``model_tests/test_flat_fingerprints.py``
    and ``bench/explore.py --engine-configs pinned mutants``. A saved search resumes only on the
    engine that made it (``ValueError``). ``TEAMPROTO_ENGINE=model`` keeps it on the model's
    states; any other value but ``flat`` is refused (:class:`spec.model._config.BadEngine`).
    """
    report, _ = explore_states(
        model,
        stop_on=stop_on,
        max_states=max_states,
        progress=progress,
        out_of_time=out_of_time,
        dead_data=dead_data,
        fingerprints=fingerprints,
        resume=resume,
        checkpoint=checkpoint,
    )
    return report


def explore_states(
    model: Model, *, dead_data: bool | None = None, processes: int = 1, **how: Any
) -> tuple[Report, Iterable[State] | None]:
    """:func:`explore` (``how``: its other keywords), returning its report and the states it
    stored, as the model's and in the order found (none with fingerprints), read lazily: the one
    place that picks the engine. With ``processes`` ≥ 2 a flat search that is not saved is spread
    over that many processes (:func:`spec._parallel.search_parallel`); its states stay there, so
    the states returned are ``None`` and the report's ``unreached_bounds`` are filled by the
    processes when the search completes without fingerprints."""
    refuse_fingerprinted_liveness(model, bool(how.get("fingerprints")))
    if flat_engine(model) and dead_data is None:
        if processes > 1 and how.get("checkpoint") is None and how.get("resume") is None:
            from ._parallel import search_parallel

            unsaved = {name: value for name, value in how.items() if name not in ("checkpoint", "resume")}
            return search_parallel(model, processes, bounds_reached=True, **unsaved), None
        from ._flat_explore import search_flat

        flat = search_flat(model, **how)
        return flat.report, flat.model_states()
    search = _search(model, dead_data=dead_data, **how)
    return search.report, search.states


def refuse_fingerprinted_liveness(model: Model, fingerprints: bool) -> None:
    """ValueError: the liveness check needs every state and edge, which fingerprints do not keep."""
    if fingerprints and model.config.liveness:
        raise ValueError(
            f"{model.config.name}: the liveness check needs every state and edge; it cannot run with fingerprints"
        )


def engine_name(model: Model) -> str:
    """The engine :func:`explore` runs ``model`` on: ``"flat"`` or ``"model"`` (what saved data names)."""
    return "flat" if flat_engine(model) else "model"


def flat_engine(model: Model) -> bool:
    """Whether :func:`explore` runs ``model`` on plain tuples (see there): where the flat form supports
    it, and — unless ``TEAMPROTO_ENGINE=flat`` asks for it — was proven equal to the model as its
    sources now stand (:mod:`spec.model._proof`)."""
    from .model._flat import supports
    from .model._proof import proven

    chosen = os.environ.get("TEAMPROTO_ENGINE")
    if engine_choice(chosen) == "model":  # a misspelt name: BadEngine
        return False
    supported = model.reduce and model.independence and supports(model.config, model.mutant)
    return supported and (chosen == "flat" or proven())


def _search(
    model: Model,
    *,
    stop_on: str | None = None,
    max_states: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    out_of_time: Callable[[], bool] | None = None,
    dead_data: bool | None = None,
    fingerprints: bool = False,
    resume: dict[str, Any] | None = None,
    checkpoint: Callable[[Callable[[], dict[str, Any]], bool], None] | None = None,
    plain: bool = False,
) -> _Search:
    """As :func:`explore`, returning the whole search (its states too, without fingerprints).
    ``plain`` runs every check on every snapshot, unmemoised: the contract the tests compare with."""
    refuse_fingerprinted_liveness(model, fingerprints)
    if (resume is not None or checkpoint is not None) and not fingerprints:
        raise ValueError("only a search with fingerprints can be saved and resumed")
    search = _Search(model, stop_on, max_states, progress, fingerprints)
    search.out_of_time = out_of_time
    search.checkpoint = checkpoint
    search.plain = plain
    if dead_data is not None:
        search.dead_data = dead_data
    if resume is not None:
        search.restore(resume)
    _model.EDGE_LOG.append(set())
    # The search builds millions of acyclic containers and keeps most of them: the cyclic garbage
    # collector's passes over them cost more (6 % on pair, more on larger runs) than the few
    # cycles it would free (about 1,500 objects after pair), so it is off while searching.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _bfs(search)
    finally:
        edges = _model.EDGE_LOG.pop()
        if collecting:
            gc.enable()
    search.report.edges_taken |= edges
    search.report.witnesses = {key: search.witness(n, action) for key, (n, action) in sorted(search.first.items())}
    if not search.report.complete and search.count:
        search.report.frontier = search.witness(search.count - 1)  # the last state found: the deepest
    if model.config.liveness and search.report.complete and not search.stopped():
        _liveness(search)
        _last_instants(search)
    if search.report.complete and not search.stopped():
        check_boundaries(model, search.report, search.first, search.trace)
    search.report.states = search.count
    search.report.depth = max(search.depth, default=0)
    search.report.states_by_depth = [0] * (search.report.depth + 1)
    for depth in search.depth:
        search.report.states_by_depth[depth] += 1
    if search.report.complete:
        search.report.expanded_through = search.report.depth
    return search


def _bfs(search: _Search) -> None:
    model, report = search.model, search.report
    if search.count == 0:
        initial = model.initial()
        view = search.view(initial)
        start, _ = search.add(initial, -1, None)
        _check_state(search, start, initial, view)
    while search.waiting() and not search.stopped():
        if search.max_states is not None and search.count >= search.max_states:
            stop(search)
            return
        number, state = search.take()
        report.expanded_through = search.depth[number] - 1
        before = search.view(state)
        outgoing = 0
        for action, after_state in model.successors(state):
            if isinstance(after_state, IllegalTransition):
                search.violate("INV-3", "transitions_follow_tables", str(after_state), search.trace(number))
                continue
            outgoing += action.name != HARNESS_CRASH.name  # the harness crash keeps no state from deadlock
            taken, after, crashed = _take(search, number, action, after_state, before)
            search.note(number, action)
            if taken is None or after is None:
                continue
            after_state = taken
            target, new = search.add(after_state, number, action)
            if search.keep_graph:
                search.successors[number].append(-target - 1 if crashed is not None else target)
            if new and crashed is not None and not search.fingerprints:
                search.crash_prefix[after_state] = crashed
            if new:
                _check_state(search, target, after_state, after)
        if outgoing == 0 and not model.is_goal(state):
            report.deadlocks += 1
            search.violate(
                "INV-12", "no_deadlock", "no action is enabled and some request is not final", search.trace(number)
            )
        if number % POLL_EVERY == 0 and poll(search, search.depth[number]):
            return


POLL_EVERY = 2000
"""A search's bounds are polled, and its progress told, every this many states expanded."""


class Bounded(Protocol):
    """What :func:`poll` and :func:`stop` need of a search, of either engine."""

    report: Report
    count: int
    progress: Callable[[int, int, int], None] | None
    out_of_time: Callable[[], bool] | None
    checkpoint: Callable[[Callable[[], dict[str, Any]], bool], None] | None

    def waiting(self) -> int: ...

    def save(self) -> dict[str, Any]: ...


def poll(search: Bounded, depth: int) -> bool:
    """Tell the search's progress (at ``depth``), then stop it if it is out of time (True), else
    save it if a checkpoint is asked for."""
    if search.progress is not None:
        search.progress(search.count, search.waiting(), depth)
    if search.out_of_time is not None and search.out_of_time():
        stop(search)
        return True
    if search.checkpoint is not None:
        search.checkpoint(search.save, False)
    return False


def stop(search: Bounded) -> None:
    """A bound stopped the search: it is incomplete, and it can be saved to go on later."""
    search.report.complete = False
    if search.checkpoint is not None:
        search.checkpoint(search.save, True)


def _take(
    search: _Search, number: int, action: Action, after_state: State, before: _View
) -> tuple[State | None, _View | None, State | None]:
    """Take one transition from state ``number`` and check the step; a crashed state is checked
    and restarted at once. Returns the state reached, its view and the crashed state it went
    through (or ``None``); the state is ``None`` when the restart broke its table."""
    search.report.transitions += 1
    after = search.view(after_state)
    _check_step(search, number, [(action, after_state)], before, after)
    if not after_state.crashed:
        return after_state, after, None
    restarted, restarted_view = _restart(search, number, action, after_state, after)
    return restarted, restarted_view, after_state


def _restart(
    search: _Search, number: int, action: Action, crashed: State, crashed_view: _View
) -> tuple[State | None, _View | None]:
    """A crashed state is transient: check it, then take its only move, the restart (REC-2).

    Crashed states are not stored; the state after the restart is, and its trace shows both.
    """
    search.report.crashed_at.add(action.crash_after)
    prefix = [(action, crashed)]
    for inv, message in _state_problems(search, crashed_view, False):
        search.violate(inv.clause, inv.name, message, search.trace(number, *prefix))
    for restart, restarted in search.model.successors(crashed):
        if isinstance(restarted, IllegalTransition):
            search.violate("INV-3", "transitions_follow_tables", str(restarted), search.trace(number, *prefix))
            return None, None
        search.report.transitions += 1
        restarted_view = search.view(restarted)
        steps = [*prefix, (restart, restarted)]
        _check_step(search, number, steps, crashed_view, restarted_view)
        return restarted, restarted_view
    raise AssertionError("a crashed state must have its restart")


def _state_problems(search: _Search, view: _View, reconciled: bool) -> list[tuple[invariants.Invariant, str]]:
    if search.plain:
        problems = invariants.check_state(view.snapshot(), reconciled=reconciled)
        return problems + [(invariants.WORLD, problem) for problem in world_problems(view.state)]
    return search.memo.check_state(view, reconciled)


def world_problems(state: State) -> list[str]:
    """The external system against the stores (:data:`spec.invariants.WORLD`, APR-8) on a state."""
    return invariants.world_agrees(*world_of(state))


def _check_state(search: _Search, number: int, state: State, view: _View) -> None:
    for inv, message in _state_problems(search, view, not state.crashed):
        search.violate(inv.clause, inv.name, message, search.trace(number))


def _check_step(search: _Search, number: int, steps: list[tuple[Action, State]], before: _View, after: _View) -> None:
    action, after_state = steps[-1]
    if search.plain:
        problems = invariants.check_step(before.snapshot(), after.snapshot())
    else:
        problems = search.memo.check_step(before, after)
    for inv, message in problems:
        search.violate(inv.clause, inv.name, message, search.trace(number, *steps))
    if action.name == "restart":
        if after.numbers in search.settled:
            return  # reconciling this very state again was found to change nothing before
        again_state = reconcile(search.model, after_state)
        if again_state == after_state:
            search.settled.add(after.numbers)
            return  # the same state, so the same snapshot: reconciling again changed nothing
        again = snapshot(again_state, search.config)
        for message in invariants.reconcile_is_idempotent(after.snapshot(), again):
            search.violate("INV-7", "reconcile_is_idempotent", message, search.trace(number, *steps))


def _liveness(search: _Search) -> None:
    """From every state a goal state is reachable, and no cycle avoids goal states (REC-2, INV-12)."""
    goal = [search.model.is_goal(s) for s in search.states]
    offsets, targets = array("q", [0]), array("q")
    for successors in search.successors:
        targets.extend(successors)
        offsets.append(len(targets))

    def violate(clause: str, name: str, message: str, number: int, *last: tuple[Action, Any]) -> None:
        search.violate(clause, name, message, search.trace(number, *last))

    report_liveness(search.report, violate, offsets, targets, goal, search.model.config.part != "")


Violate = Callable[..., None]
"""How a search takes a violation: ``violate(clause, name, message, number, *last)``, with the
trace to stored state ``number`` and then ``last``'s (action, state) pairs."""


def report_liveness(
    report: Report,
    violate: Violate,
    offsets: Sequence[int],
    targets: Sequence[int],
    goal: Sequence[int],
    every_cycle: bool,
) -> None:
    """The liveness check on a search's graph, as every engine stores it (REC-2, INV-12): state
    ``n``'s moves are ``targets[offsets[n]:offsets[n + 1]]``, a crash edge (crash + restart) as
    ``-target - 1``; ``goal[n]``: every request of state ``n`` is final (``Model.is_goal``). A part
    of a split configuration (``every_cycle``) is held to have no cycle at all, through goal states
    or not (:mod:`spec.split` says why)."""
    report.liveness_checked = True
    stuck, cycle = liveness_problems(offsets, targets, goal, every_cycle)
    if stuck:
        violate(
            "INV-12",
            "every_request_can_finish",
            f"{len(stuck)} state(s) cannot reach a state where every request is final",
            stuck[0],
        )
    if cycle is not None:
        avoids = all(not goal[n] for n in cycle)
        violate(
            "INV-12",
            "no_cycle_avoids_finish",
            f"a cycle of {len(cycle)} state(s) never reaches a state where every request is final"
            if avoids
            else f"a cycle of {len(cycle)} state(s) in a part of a split configuration, through a state where "
            "every request is final: the parts cannot show that no cycle of the whole avoids one (spec/split.py); "
            "explore the whole",
            cycle[0],
        )


def liveness_problems(
    offsets: Sequence[int], targets: Sequence[int], goal: Sequence[int], every_cycle: bool = False
) -> tuple[list[int], list[int] | None]:
    """The states that cannot reach a goal state (in number order), and a cycle of non-goal states
    (of any states, with ``every_cycle``) that takes no crash edge — crashes are finitely many in any
    fair run, so a cycle through one is not a livelock — or None; the graph as :func:`report_liveness`
    reads it. A cycle is also one state with a step back to itself: the stored graph is a quotient
    (dead data erased, and under symmetry the least image), where a concrete cycle may become a step
    from a state to its own class (``s`` to ``s`` with its members swapped) — a run that never
    reaches the goal all the same. The cycle is found as what Kahn's elimination of the states
    without a predecessor leaves (every state left has a predecessor left), walked backwards from
    the least state left; it starts at its least state."""
    count = len(goal)
    skip = [False] * count if every_cycle else list(goal)
    starts = array("q", [0]) * (count + 1)  # the predecessors, by counting: a crash edge as -source - 1
    for source in range(count):
        for k in range(offsets[source], offsets[source + 1]):
            target = targets[k]
            starts[(target if target >= 0 else -target - 1) + 1] += 1
    for n in range(count):
        starts[n + 1] += starts[n]
    fill = starts[:-1]
    before = array("q", [0]) * len(targets)
    waiting = array("q", [0]) * count  # each state's fair predecessors not yet eliminated
    for source in range(count):
        for k in range(offsets[source], offsets[source + 1]):
            target = targets[k]
            node = target if target >= 0 else -target - 1
            before[fill[node]] = source if target >= 0 else -source - 1
            fill[node] += 1
            if target >= 0 and not skip[source] and not skip[target]:
                waiting[target] += 1
    can_finish = [bool(g) for g in goal]
    queue = deque(n for n in range(count) if can_finish[n])
    while queue:
        node = queue.popleft()
        for k in range(starts[node], starts[node + 1]):
            source = before[k]
            source = source if source >= 0 else -source - 1
            if not can_finish[source]:
                can_finish[source] = True
                queue.append(source)
    stuck = [n for n in range(count) if not can_finish[n]]
    free = [n for n in range(count) if not skip[n] and waiting[n] == 0]
    while free:
        node = free.pop()
        for k in range(offsets[node], offsets[node + 1]):
            target = targets[k]
            if target >= 0 and not skip[target]:
                waiting[target] -= 1
                if waiting[target] == 0:
                    free.append(target)
    left = next((n for n in range(count) if not skip[n] and waiting[n] > 0), None)
    if left is None:
        return stuck, None
    walk: list[int] = []
    place: dict[int, int] = {}
    node = left
    while node not in place:
        place[node] = len(walk)
        walk.append(node)
        node = next(
            source
            for source in before[starts[node] : starts[node + 1]]
            if source >= 0 and not skip[source] and waiting[source] > 0
        )
    cycle = walk[place[node] :][::-1]  # walked backwards: reversed, each state's successor follows it
    least = cycle.index(min(cycle))
    return stuck, cycle[least:] + cycle[:least]


LAST_INSTANT = (
    ("approvals", ("requested", "approved"), "APR-5", "an approval"),
    ("plans", ("pending", "approved"), "PLN-5", "a plan"),
    ("runs", ("running",), "PLN-9", "a plan's execution"),
    ("shutdowns", ("requested", "draining"), "SHD-6", "a shutdown request"),
)
"""The records the deadline monitor ends, the statuses it ends them from, and the clause of each."""


BOUNDARY_CHECK = "deadline_boundaries_reached"


def unreached_boundaries(edges_taken: set[tuple[str, str, str]], config: Config) -> list[tuple[str, str, str]]:
    """The deadline edges (:data:`spec.model._model.DEADLINE_EDGES`) a search took, but never at
    their boundary — in a configuration where time passes (``max_ticks`` not 0: a frozen clock
    reaches no deadline, so no boundary)."""
    if config.max_ticks == 0:
        return []
    return sorted(e for e in _model.DEADLINE_EDGES if e in edges_taken and _model.deadline_edge(*e) not in edges_taken)


def check_boundaries(
    model: Model,
    report: Report,
    first: dict[str, tuple[int, Action]],
    path_to: Callable[[int], list[tuple[Action | None, Any]]],
) -> None:
    """APR-4, APR-5, PLN-5, SHD-2, SHD-6: every deadline guard is seen open on its boundary. A
    request is decided, consumed, started or drained *at* its deadline, and expired or timed out
    *just past* it; the safety checks bound each guard from the other side (nothing decided after
    the deadline, nothing expired before it), so a guard one tick too strict breaks no predicate
    and only removes states. Existential over a complete search, as edge coverage is, but a
    verdict of every run where time passes: each deadline edge the run takes, it takes at its
    boundary too (``first`` holds each edge's first move, from the search's ``note_first``;
    ``path_to(n)`` is the path to state ``n`` as the model's states). The trace ends with the
    edge's first move, taken off its boundary."""
    missing = unreached_boundaries(report.edges_taken, model.config)
    if not missing or BOUNDARY_CHECK in report.violations:
        return
    machine, source, target = missing[0]
    offset, clause = _model.DEADLINE_EDGES[missing[0]]
    witness = first.get(f"edge {machine} {source} -> {target}")  # a caller's own search may note none
    path = path_to(witness[0] if witness else 0)
    taken: list[tuple[Action | None, Any]] = [
        (a, s) for a, s in model.successors(path[-1][1]) if witness and a == witness[1] and isinstance(s, State)
    ]
    others = f" (likewise: {', '.join(f'{m} {s} -> {t}' for m, s, t in missing[1:])})" if missing[1:] else ""
    if offset == 0:
        how = "before its deadline (below), but never at it: its guard refuses the last instant"
    else:
        how = "after its deadline (below), but never just past it: its guard acts late, past the first instant"
    report.violations[BOUNDARY_CHECK] = Violation(
        clause,
        BOUNDARY_CHECK,
        f"{machine} {source} -> {target} is taken {how} {clause} allows{others}",
        path + taken[:1],
    )


def _last_instants(search: _Search) -> None:
    """A deadline is its record's last instant (APR-5, PLN-5, PLN-9, SHD-6): the monitor ends a
    record only after it. Where some state has such a record live at its deadline before the
    monitor's pass of that instant, some state has one live at its deadline after the pass — the
    pass itself leads there, as it touches nothing not yet past. A monitor that ends records *at*
    their deadline removes behaviour (a run's last step at its deadline) and breaks no safety
    predicate: a plan's execution may fail at any time (``plan.fail``), so the snapshots alone
    cannot tell the monitor's failure from its own. Existential, over the whole graph: run with the
    liveness check, on the states the search kept."""
    instants = LastInstants()
    for number, state in enumerate(search.states):
        instants.note(number, at_last_instant(state), state.monitor_done)

    def violate(clause: str, name: str, message: str, number: int, *last: tuple[Action, Any]) -> None:
        search.violate(clause, name, message, search.trace(number, *last))

    instants.report(violate, lambda number: search.model.successors(search.states[number]))


def at_last_instant(state: State) -> tuple[str, ...]:
    """The kinds of record (:data:`LAST_INSTANT`'s fields) of which ``state`` has one live at its
    deadline — ``state.clock`` — in a status the monitor ends it from; none in a crashed state."""
    if state.crashed:
        return ()
    return tuple(
        field
        for field, live, _, _ in LAST_INSTANT
        if any(r.status in live and r.deadline == state.clock for r in getattr(state, field))
    )


class LastInstants:
    """What :func:`_last_instants` gathers over the stored states, from either engine: for each kind
    of record, the first state with one live at its deadline before the monitor's pass of that
    instant, and whether any state has one after it."""

    def __init__(self) -> None:
        self.before: dict[str, int] = {}
        self.after: set[str] = set()

    def note(self, number: int, fields: Iterable[str], monitor_done: bool) -> None:
        for field in fields:
            if monitor_done:
                self.after.add(field)
            else:
                self.before.setdefault(field, number)

    def join(self, other: LastInstants) -> None:
        """Another process's states too (:mod:`spec._parallel`; ``other``'s numbers global)."""
        self.after |= other.after
        for field, number in other.before.items():
            if field not in self.before or number < self.before[field]:
                self.before[field] = number

    def report(self, violate: Violate, successors: Callable[[int], Iterable[tuple[Action, Any]]]) -> None:
        """Each kind seen before the pass and never after it is a violation, its trace the state
        before, then its monitor's pass (``successors(n)``: stored state ``n``'s moves)."""
        for field, _, clause, what in LAST_INSTANT:
            if field in self.before and field not in self.after:
                number = self.before[field]
                passes = [(a, s) for a, s in successors(number) if a.name == "monitor.pass"]
                violate(
                    clause,
                    "deadline_is_the_last_instant",
                    f"{what} live at its deadline is ended by the monitor's pass of that very instant, never after it",
                    number,
                    *[(a, s) for a, s in passes[:1] if not isinstance(s, IllegalTransition)],
                )


# ---- traces ----------------------------------------------------------------------------------


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    from .schemas import RECORD_KEYS, record_id

    lines = []
    if before["clock"] != after["clock"]:
        lines.append(f"clock {before['clock']} → {after['clock']}")
    for kind in RECORD_KEYS:

        def key(record: dict[str, Any], kind: str = kind) -> Any:
            return record_id(kind, record)

        old = {key(r): r for r in before[kind]}
        for record in after[kind]:
            previous = old.get(key(record))
            name = f"{kind}/{str(key(record))[:8]}"
            if previous is None:
                lines.append(f"+ {name} {record.get('status', '')}".rstrip())
                continue
            for fieldname, value in record.items():
                if previous.get(fieldname) != value and fieldname != "message":
                    lines.append(f"  {name}.{fieldname}: {previous.get(fieldname)!r} → {value!r}")
    return lines


def format_trace(violation: Violation, config: Config) -> str:
    """The counterexample as a numbered list of actions with the state changes after each."""
    heading = (
        "Shortest trace:"
        if violation.shortest
        else f"Trace (a random walk of {violation.walk_length} steps, shrunk; not necessarily the shortest):"
    )
    out = [f"{violation.clause} {violation.invariant}: {violation.message}", heading]
    previous = None
    for number, (action, state) in enumerate(violation.trace):
        snap = snapshot(state, config)
        out.append(f"{number:>3}. {action if action is not None else 'initial state'}")
        if previous is not None:
            out.extend(f"       {line}" for line in _changes(previous, snap))
        previous = snap
    if violation.offending is not None:
        out.append(f"{len(violation.trace):>3}. {violation.offending}: refused, it breaks its machine's table")
    return "\n".join(out)


def trace_json(violation: Violation, config: Config) -> dict[str, Any]:
    """The counterexample as JSON: each step's action and the full snapshot after it."""
    return {
        "format": "teamproto-trace/1",
        "config": config.name,
        "violation": {"clause": violation.clause, "invariant": violation.invariant, "message": violation.message},
        "shortest": violation.shortest,
        **({} if violation.shortest else {"walk_length": violation.walk_length}),
        **({} if violation.offending is None else {"refused_action": violation.offending.to_json()}),
        "steps": [
            {"action": None if action is None else action.to_json(), "snapshot": copy.deepcopy(snapshot(state, config))}
            for action, state in violation.trace
        ],
    }


__all__ = ["CRASH_POINTS", "WRITE_STEPS", "Report", "Violation", "explore", "format_trace", "trace_json"]
