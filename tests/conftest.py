"""Fixtures shared by the reference tests: a team over each storage backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reference import CallContext, Harness, ManualClock, MemoryStorage, RecordingTool, SQLiteStorage, Storage

BACKENDS = ["memory", "sqlite"]


def make_storage(kind: str, path: Path) -> Storage:
    return MemoryStorage() if kind == "memory" else SQLiteStorage(path / "team.db")


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    store = make_storage(request.param, tmp_path)
    yield store
    store.close()


class Team:
    """Lead + two members (m0, m1) holding tasks t0, t1; the protected tool is ``deploy``."""

    def __init__(
        self, storage: Storage, clock: ManualClock | None = None, world: RecordingTool | None = None, setup: bool = True
    ) -> None:
        self.storage = storage
        self.clock = clock or ManualClock(1000.0)
        self.world = world or RecordingTool()
        self.harness = Harness(storage, self.clock, [self.world.tool()])
        if setup:
            for member, task in (("m0", "t0"), ("m1", "t1")):
                self.harness.add_member(member, ["deploy"])
                self.harness.add_task(task)
                self.harness.claim(member, task)

    def ctx(
        self, member: str = "m0", call: str = "call-1", task: str | None = None, incarnation: int = 1
    ) -> CallContext:
        return CallContext(member, incarnation, call, task or ("t0" if member == "m0" else "t1"))

    def restart(self) -> Team:
        """A new harness over the same storage (what a process restart is), then reconcile."""
        team = Team(self.storage, self.clock, self.world, setup=False)
        team.harness.reconcile()
        return team

    def approved(self, args: dict[str, str] | None = None, call: str = "call-1") -> str:
        result = self.harness.approvals.call(self.ctx(call=call), "deploy", args or {"path": "srv/app"})
        self.harness.approvals.review("lead", result["protocol_id"], "approved", "ok")
        return str(result["protocol_id"])


@pytest.fixture
def team(storage: Storage) -> Team:
    return Team(storage)


@pytest.fixture
def lead(tmp_path: Path) -> Iterator[Any]:
    """A Lead over a team file of its own, its member processes ended after the test
    (``tests/test_member_processes.py``'s ``Lead``)."""
    from tests.test_member_processes import Lead

    team = Lead(tmp_path)
    try:
        yield team
    finally:
        team.close()
