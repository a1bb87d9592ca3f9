"""The explorer memoises invariant checks on the sections each invariant declares it reads.

Clause: INV-1 … INV-12 (a memoised check is only sound if the declared ``reads`` are complete:
these tests record every section each check touches on many model snapshots, and compare the
memoised results with plain evaluation, mutants included).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from model_tests.test_symmetry import _sample
from spec import invariants
from spec.model import Model, load_config
from spec.model._snapshot import snapshot
from spec.model._state import State


class Recording(Mapping[str, Any]):
    """A snapshot that notes every section read (iteration reads them all)."""

    def __init__(self, snap: Mapping[str, Any]) -> None:
        self.snap, self.read = snap, set[str]()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.snap[key]

    def __iter__(self) -> Iterator[str]:
        self.read.update(self.snap)
        return iter(self.snap)

    def __len__(self) -> int:
        return len(self.snap)


def _steps(name: str, mutant: str | None = None, limit: int = 400) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    model = Model(load_config(name), mutant)
    for state in _sample(name, limit):
        before = snapshot(state, model.config)
        for _, after in model.successors(state):
            if isinstance(after, State):
                yield before, snapshot(after, model.config)


@pytest.mark.parametrize("name", ["tiny", "plan", "shutdown", "fencing", "standard"])
def test_declared_reads_cover_every_section_read(name: str) -> None:
    undeclared: dict[str, set[str]] = {}
    for before, after in _steps(name):
        for inv in invariants.INVARIANTS:
            if not inv.reads:
                continue
            snaps = [Recording(after)] if inv.kind == "state" else [Recording(before), Recording(after)]
            inv.check(*snaps)
            extra = set().union(*(s.read for s in snaps)) - set(inv.reads)
            if extra:
                undeclared.setdefault(inv.name, set()).update(extra)
    assert not undeclared, f"invariants read sections they do not declare: {undeclared}"


@pytest.mark.parametrize(
    ("name", "mutant"),
    [("tiny", None), ("tiny", "consume_without_digest_check"), ("shutdown", "finish_keeps_task")],
)
def test_memoised_checks_equal_plain_checks(name: str, mutant: str | None) -> None:
    memo, found = invariants.Memo(), 0
    for before, after in _steps(name, mutant, limit=600):
        plain = invariants.check_state(after) + invariants.check_step(before, after)
        assert memo.check_state(after) + memo.check_step(before, after) == plain
        found += len(plain)
    if mutant is not None:
        assert found, "the sample should include violations, or this test shows nothing"


def test_a_step_check_by_section_finds_nothing_in_an_unchanged_section() -> None:
    """The memo skips such sections (see ``Invariant.by_section``)."""
    checked = 0
    for before, _ in _steps("standard", limit=200):
        for inv in invariants.STEP_INVARIANTS:
            if inv.by_section is not None:
                for section in inv.reads or before:
                    assert inv.by_section(section, before[section], before[section]) == []
                    checked += 1
    assert checked
