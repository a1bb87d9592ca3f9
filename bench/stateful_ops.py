"""pytest plugin of ``bench/stateful.py --operations``: how often each operation of the stateful test runs.

Loaded with ``-p stateful_ops`` (``bench/`` on ``PYTHONPATH``). Over each test's call phase it
counts every rule run under its name (the approval test's one rule, ``operate``, under the name of
the operation it drew), and every protocol operation both sides ran, refused or crashed in
(``ApprovalComparison._both``: ``approval.review: ran``; a rule or operation that does nothing, as
a request with no free slot, runs no protocol operation). It writes one JSON line per test to the
file named by ``TEAMPROTO_BENCH_OPERATIONS``: ``{"test", "examples", "steps", "outcomes"}``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

STEPS: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()
EXAMPLES: list[int] = [0]


def _install(machine: type) -> None:
    import model_tests.test_stateful as stateful

    noted = stateful.note

    def note(text: str) -> None:
        if text.endswith((": ran", ": refused", ": crashed")):
            OUTCOMES[text] += 1
        noted(text)

    stateful.note = note
    for holder in machine.setup_state().rules:  # type: ignore[attr-defined]
        function = holder.function

        def counted(self: Any, *args: Any, _function: Any = function, **kwargs: Any) -> Any:
            drawn = getattr(kwargs.get("operation"), "name", None)  # stale_context's is a plain string
            STEPS[drawn or _function.__name__] += 1
            return _function(self, *args, **kwargs)

        object.__setattr__(holder, "function", counted)
    started = machine.__init__

    def init(self: Any) -> None:
        EXAMPLES[0] += 1
        started(self)

    machine.__init__ = init  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    import model_tests.test_stateful as stateful

    name = getattr(getattr(item, "cls", None), "__qualname__", "").split(".")[0]
    machine = getattr(stateful, name, None)
    if isinstance(machine, type) and hasattr(machine, "setup_state"):
        _install(machine)
    STEPS.clear(), OUTCOMES.clear()
    EXAMPLES[0] = 0
    yield
    path = os.environ.get("TEAMPROTO_BENCH_OPERATIONS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            line = {"test": item.nodeid, "examples": EXAMPLES[0], "steps": dict(STEPS), "outcomes": dict(OUTCOMES)}
            out.write(json.dumps(line) + "\n")
