"""pytest plugin of ``bench/stateful.py``: the CPU and wall seconds of each test's call phase.

Loaded with ``-p stateful_timer`` (``bench/`` on ``PYTHONPATH``); writes one JSON line per test to
the file named by ``TEAMPROTO_BENCH_TIMES``. CPU time is this process's (``time.process_time``):
on a machine shared with other jobs it is steadier than the wall clock, which is reported beside it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    cpu, wall = time.process_time(), time.perf_counter()
    yield
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    path = os.environ.get("TEAMPROTO_BENCH_TIMES")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": item.nodeid, "cpu": cpu, "wall": wall}) + "\n")
