"""The floor under ``bench/stateful.py``: Hypothesis' own cost of a stateful example on this machine.

Runs, in this process and with the settings of the approval test (200 examples of 50 steps, no
database), state machines that do nothing at all: one rule without arguments; one rule whose
argument is drawn as the approval machine draws its operation (``st.runner()`` in a composite,
then an operation, a slot and the other arguments from ``sampled_from``s: three draws); and
thirteen rules, nine behind a precondition that holds half of the time, as the approval machine
had before issue 18 item 9a. Each prints the examples it ran per CPU-second (a machine with few
choices may run out of new examples before the count): no stateful test with those draws can be
faster here, whatever its own work costs.
Run: ``python bench/stateful_floor.py [--json] [EXAMPLES]`` (default 200).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

OPERATION, SLOT, ARGUMENTS = st.integers(0, 109), st.integers(0, 2), st.sampled_from(range(160))
RUNNER = st.runner()


@st.composite
def _operation(draw: Any) -> tuple[int, int, int]:
    draw(RUNNER)
    return draw(OPERATION), draw(SLOT), draw(ARGUMENTS)


RUNS = [0]


class Counted(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        RUNS[0] += 1


class NoArguments(Counted):
    @rule()
    def step(self) -> None:
        pass


class ThreeDraws(Counted):
    @rule(operation=_operation())
    def operate(self, operation: tuple[int, int, int]) -> None:
        pass


class ThirteenRules(Counted):
    """Four rules always enabled, nine behind a precondition that holds every other step."""

    def __init__(self) -> None:
        super().__init__()
        self.steps = 0

    def _step(self) -> None:
        self.steps += 1


for _number in range(13):

    def _body(self: ThirteenRules, member: int, crash: int) -> None:
        self._step()

    _body.__name__ = f"rule_{_number}"
    _rule = rule(member=st.integers(0, 1), crash=st.one_of(st.none(), st.sampled_from(range(4))))(_body)
    if _number >= 4:
        _rule = precondition(lambda self: self.steps % 2 == 0)(_rule)
    setattr(ThirteenRules, _body.__name__, _rule)


def rate(machine: type[RuleBasedStateMachine], examples: int) -> float:
    started, RUNS[0] = time.process_time(), 0
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=50,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    return RUNS[0] / (time.process_time() - started)


def main() -> None:
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()]
    examples = numbers[0] if numbers else 200
    results = {machine.__name__: rate(machine, examples) for machine in (NoArguments, ThreeDraws, ThirteenRules)}
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
        return
    print(f"state machines that do nothing, {examples} examples of 50 steps: examples per CPU-second")
    for name, value in results.items():
        print(f"  {name:<14} {value:6.1f}")


if __name__ == "__main__":
    main()
