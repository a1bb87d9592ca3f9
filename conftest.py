"""Root conftest: Hypothesis profiles (the clause plugin is loaded from pyproject's addopts)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
