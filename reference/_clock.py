"""Injected time (DESIGN rule 4): protocol code never reads the system clock itself."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    """Wall-clock seconds since the epoch."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to — the test double shipped with the package."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "time never goes back"
        self._now += seconds
