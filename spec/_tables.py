"""Transition tables and runtime guards derived from the machine classes at import time.

No transition table is written by hand anywhere: ``_derive`` walks each class's declared
transitions once. The guard :func:`ensure_transition` is then a pair of dictionary look-ups
(DESIGN rule 1), not a machine instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from statemachine import StateMachine

from .errors import ProtocolError
from .machines import EVENT_NOTES, MACHINES


@dataclass(frozen=True, order=True)
class Edge:
    """One declared transition: ``source --event--> target`` with the clauses its event cites."""

    machine: str
    source: str
    target: str
    event: str
    clauses: tuple[str, ...]


@dataclass(frozen=True)
class MachineTable:
    """Everything derived from one machine class."""

    name: str
    states: tuple[str, ...]
    initial: str
    finals: frozenset[str]
    edges: tuple[Edge, ...]
    allowed: Mapping[str, frozenset[str]]
    by_event: Mapping[tuple[str, str], str]


class IllegalTransition(ProtocolError):
    """A status change that the machine's table does not allow (definite: nothing changed)."""

    def __init__(self, machine: str, current: str, target: str, allowed: frozenset[str]) -> None:
        self.machine, self.current, self.target, self.allowed = machine, current, target, allowed
        options = ", ".join(sorted(allowed)) or "none: it is final"
        super().__init__(
            f"{machine}: illegal transition {current!r} -> {target!r}; allowed from {current!r}: {options}"
        )


class SlotTaken(IllegalTransition):
    """A record created where its machine already has one (INV-3): the slot's record would go from
    its status back to the initial one without an edge of the table. The model's ``create`` raises
    it, and the explorer reports it with its trace, as any illegal status change."""

    def __init__(self, machine: str, current: str, target: str) -> None:  # no edge is allowed: a create
        self.machine, self.current, self.target, self.allowed = machine, current, target, frozenset()
        ProtocolError.__init__(
            self,
            f"{machine}: a record in {current!r} created again, as {target!r}: its slot is taken "
            "(a create needs a free slot; a record changes status only along an edge of its table)",
        )


class UnknownStatus(ProtocolError):
    """A status value that the machine does not define, e.g. in a record loaded from disk."""

    def __init__(self, machine: str, value: object, record: str | None = None) -> None:
        self.machine, self.value, self.record = machine, value, record
        where = f" in record {record}" if record else ""
        known = ", ".join(_TABLES[machine].states) if machine in _TABLES else "?"
        super().__init__(f"{machine}: unknown status {value!r}{where}; known: {known}")


class UnknownMachine(ProtocolError):
    """A machine name that spec.MACHINES does not define."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown machine {name!r}; known: {', '.join(MACHINES)}")


def _derive(name: str, cls: type[StateMachine]) -> MachineTable:
    states = tuple(state.value for state in cls.states)
    initials = [state.value for state in cls.states if state.initial]
    assert len(initials) == 1, f"{name}: exactly one initial state, found {initials}"
    edges: list[Edge] = []
    by_event: dict[tuple[str, str], str] = {}
    for state in cls.states:
        for transition in state.transitions:
            for event in transition.events:
                key = (transition.source.value, event.id)
                assert key not in by_event, f"{name}: event {event.id!r} from {key[0]!r} is ambiguous"
                by_event[key] = transition.target.value
                clauses = EVENT_NOTES[name][event.id].clauses
                edges.append(Edge(name, key[0], transition.target.value, event.id, clauses))
    allowed = {state: frozenset(e.target for e in edges if e.source == state) for state in states}
    return MachineTable(
        name=name,
        states=states,
        initial=initials[0],
        finals=frozenset(state.value for state in cls.states if state.final),
        edges=tuple(sorted(edges)),
        allowed=MappingProxyType(allowed),
        by_event=MappingProxyType(by_event),
    )


_TABLES: dict[str, MachineTable] = {name: _derive(name, cls) for name, cls in MACHINES.items()}
# The guard's hot path: machine → current → allowed targets, plain dicts of frozensets.
_ALLOWED: dict[str, dict[str, frozenset[str]]] = {name: dict(table.allowed) for name, table in _TABLES.items()}


def machine_table(name: str) -> MachineTable:
    """The derived table of machine ``name``; raises :class:`UnknownMachine`."""
    try:
        return _TABLES[name]
    except KeyError:
        raise UnknownMachine(name) from None


def transition_table(name: str) -> Mapping[str, frozenset[str]]:
    """State → the set of states it may move to (every state is a key; finals map to ∅)."""
    return machine_table(name).allowed


def final_states(name: str) -> frozenset[str]:
    """The states of ``name`` that no edge leaves."""
    return machine_table(name).finals


def open_states(name: str) -> tuple[str, ...]:
    """The states of ``name`` that some edge leaves (its record is not final yet), in the
    machine's order: e.g. a shutdown request still in force (MEM-1, INV-2, REC-2)."""
    table = machine_table(name)
    return tuple(state for state in table.states if state not in table.finals)


def initial_state(name: str) -> str:
    """The one initial state of ``name``."""
    return machine_table(name).initial


def edges(name: str) -> tuple[Edge, ...]:
    """Every declared edge of ``name``, sorted."""
    return machine_table(name).edges


def target_of(name: str, current: str, event: str) -> str:
    """The state ``event`` leads to from ``current``; raises :class:`IllegalTransition`."""
    table = machine_table(name)
    try:
        return table.by_event[(current, event)]
    except KeyError:
        validate_status(name, current)
        raise IllegalTransition(name, current, f"<{event}>", table.allowed[current]) from None


def ensure_transition(name: str, current: str, target: str) -> None:
    """Raise :class:`IllegalTransition` unless ``current -> target`` is an edge of ``name``.

    Clause: INV-3. This is the runtime guard every status change in the model and the reference
    goes through.
    """
    try:
        if target in _ALLOWED[name][current]:
            return
    except KeyError:
        if name not in _ALLOWED:
            raise UnknownMachine(name) from None
        raise UnknownStatus(name, current) from None
    validate_status(name, target)
    raise IllegalTransition(name, current, target, _ALLOWED[name][current])


def validate_status(name: str, value: object, record: str | None = None) -> str:
    """Return ``value`` if it is a state of ``name``; else raise :class:`UnknownStatus`.

    Used on every record loaded from storage (DESIGN rule 1): an unknown status names the record.
    """
    if isinstance(value, str) and value in machine_table(name).allowed:
        return value
    raise UnknownStatus(name, value, record)
