"""Structural checks of every machine, and the guards derived from them.

Clause: INV-3 (every status change follows its machine's table). DESIGN rule 1.
"""

from __future__ import annotations

from collections import deque

import pytest
from statemachine.exceptions import TransitionNotAllowed

import spec
from spec import MACHINES, machine_table

NAMES = sorted(MACHINES)


def reachable(name: str, start: str) -> set[str]:
    allowed = spec.transition_table(name)
    seen, queue = {start}, deque([start])
    while queue:
        for target in allowed[queue.popleft()]:
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


@pytest.mark.clause("INV-3")
@pytest.mark.parametrize("name", NAMES)
def test_one_initial_state_and_every_state_reachable(name: str) -> None:
    """A machine has one initial state and no state unreachable from it."""
    table = machine_table(name)
    assert [s.value for s in MACHINES[name].states if s.initial] == [table.initial]
    assert reachable(name, table.initial) == set(table.states)


@pytest.mark.clause("INV-3", "INV-12")
@pytest.mark.parametrize("name", NAMES)
def test_every_state_can_reach_a_final_state(name: str) -> None:
    """No state is a trap: from each one some final state is reachable."""
    table = machine_table(name)
    assert table.finals, f"{name} has no final state"
    for state in table.states:
        assert reachable(name, state) & table.finals, f"{name}: {state} cannot reach a final state"


@pytest.mark.clause("INV-3")
@pytest.mark.parametrize("name", NAMES)
def test_no_edge_leaves_a_final_state(name: str) -> None:
    """Final means final: no resurrection."""
    table = machine_table(name)
    for final in table.finals:
        assert table.allowed[final] == frozenset()


@pytest.mark.clause("INV-3")
@pytest.mark.parametrize("name", NAMES)
def test_table_equals_what_the_machine_class_executes(name: str) -> None:
    """Drive a real machine instance with every (state, event) pair: the table must agree exactly."""
    table = machine_table(name)
    cls = MACHINES[name]
    for state in table.states:
        for event in (e.id for e in cls.events):
            instance = cls(start_value=state)
            expected = table.by_event.get((state, event))
            if expected is None:
                with pytest.raises(TransitionNotAllowed):
                    instance.send(event)
            else:
                instance.send(event)
                assert instance.current_state_value == expected


@pytest.mark.parametrize("name", NAMES)
def test_every_state_and_event_has_a_note_citing_known_clauses(name: str) -> None:
    """Notes are complete and cite real clauses; the module says what the machine abstracts away."""
    cls = MACHINES[name]
    assert set(spec.STATE_NOTES[name]) == {s.value for s in cls.states}
    assert set(spec.EVENT_NOTES[name]) == {e.id for e in cls.events}
    for note in [*spec.STATE_NOTES[name].values(), *spec.EVENT_NOTES[name].values()]:
        assert note.text and note.clauses
        assert all(c in spec.CLAUSES for c in note.clauses)
    assert "Abstracts away" in spec.machines.MODULE_DOCS[name]


@pytest.mark.clause("INV-3")
@pytest.mark.parametrize("name", NAMES)
def test_ensure_transition_accepts_exactly_the_edges(name: str) -> None:
    """The guard allows every declared edge and refuses every other pair with the allowed set."""
    table = machine_table(name)
    for current in table.states:
        for target in table.states:
            if target in table.allowed[current]:
                spec.ensure_transition(name, current, target)
            else:
                with pytest.raises(spec.IllegalTransition) as caught:
                    spec.ensure_transition(name, current, target)
                error = caught.value
                assert (error.machine, error.current, error.target) == (name, current, target)
                assert error.allowed == table.allowed[current]
                assert error.definite


@pytest.mark.clause("INV-3")
def test_guard_errors_name_what_was_wrong() -> None:
    """Unknown statuses and machines are typed errors that name the value and the record."""
    with pytest.raises(spec.UnknownStatus, match="'bogus'"):
        spec.ensure_transition("task", "bogus", "claimed")
    with pytest.raises(spec.UnknownStatus, match="'bogus'"):
        spec.ensure_transition("task", "pending", "bogus")
    with pytest.raises(spec.UnknownMachine, match="'nope'"):
        spec.ensure_transition("nope", "a", "b")
    with pytest.raises(spec.UnknownStatus, match="task/t9") as caught:
        spec.validate_status("task", "executing", record="task/t9")
    assert caught.value.value == "executing"
    assert spec.validate_status("task", "pending") == "pending"
    with pytest.raises(spec.IllegalTransition, match="<approve>"):
        spec.target_of("operation_approval", "consumed", "approve")


@pytest.mark.clause("APR-6", "INV-3")
def test_operation_approval_has_no_outcome_states() -> None:
    """The call's outcome lives in ToolExecution/Job, never in the approval (APR states)."""
    states = set(machine_table("operation_approval").states)
    assert not states & {"executing", "completed", "failed"}
    assert spec.final_states("operation_approval") == {"consumed", "rejected", "cancelled", "expired"}


@pytest.mark.parametrize("name", NAMES)
def test_no_event_or_state_shadows_the_machine_api(name: str) -> None:
    """An event named like a StateMachine method (``send``!) silently replaces it; forbid that."""
    from statemachine import StateMachine

    api = set(dir(StateMachine))
    cls = MACHINES[name]
    assert not {e.id for e in cls.events} & api
    assert not {s.id for s in cls.states} & api
