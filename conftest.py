"""Root conftest: Hypothesis profiles (the clause plugin is loaded from pyproject's addopts)."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

# Deterministic by default: the README's test command gives the same result on every machine.
settings.register_profile(
    "default", max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
# CI: deterministic (derandomized) so that crash-point coverage cannot flake, and larger.
settings.register_profile(
    "ci", max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
# For protocol designers: random seeds, ten times the examples, longer programs.
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, stateful_step_count=100, suppress_health_check=[HealthCheck.too_slow]
)
# bench/stateful.py: a fixed number of examples on both backends; each round runs the programs of
# its own seed (TEAMPROTO_BENCH_SEED, applied by the bench with @seed): the profile alone derandomizes.
settings.register_profile(
    "bench",
    max_examples=int(os.environ.get("TEAMPROTO_BENCH_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# scripts/mutation.py: every mutant runs the tests that reach it, so few examples each (derandomized).
settings.register_profile(
    "mutation", max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
# `teamproto mutants --no-shrink` (as in .ci/run): a mutant is caught once a test fails; the
# shrinking that would make its failing program minimal took some 90 % of a slow mutant's run.
if os.environ.get("TEAMPROTO_NO_SHRINK"):
    settings.register_profile(
        "no-shrink", parent=settings.default, phases=[p for p in settings.default.phases if p is not Phase.shrink]
    )
    settings.load_profile("no-shrink")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    """Every refusal the reference makes during a test states the store's facts
    (``tests/_refusal_facts.py``): a misstated one fails the test that made it."""
    from tests._refusal_facts import watching

    with watching() as problems:
        result = yield
    if problems:
        raise AssertionError("a refusal misstates its facts (tests/_refusal_facts.py):\n" + "\n".join(problems[:5]))
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A pytest-xdist worker hands its refusal tally to the controller."""
    from tests._refusal_facts import NO_HARNESS_IN, TALLY

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["refusal_facts"] = json.dumps([[*key, n] for key, n in TALLY.items()])
        workeroutput["refusal_places"] = json.dumps([[*key, n] for key, n in NO_HARNESS_IN.items()])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    from tests._refusal_facts import NO_HARNESS_IN, TALLY

    output = getattr(node, "workeroutput", {})
    for name, how, n in json.loads(output.get("refusal_facts", "[]")):
        TALLY[name, how] += n
    for name, file, n in json.loads(output.get("refusal_places", "[]")):
        NO_HARNESS_IN[name, file] += n


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """How many refusals had their facts checked, and which classes with a rule none did (D6)."""
    from tests._refusal_facts import NO_HARNESS_IN, TALLY, summary

    if not hasattr(config, "workerinput") and TALLY:
        for line in summary(Counter(TALLY), Counter(NO_HARNESS_IN)):
            terminalreporter.write_line(line)
