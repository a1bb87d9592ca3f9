"""Root conftest: Hypothesis profiles (the clause plugin is loaded from pyproject's addopts)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=2000, deadline=None, stateful_step_count=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
