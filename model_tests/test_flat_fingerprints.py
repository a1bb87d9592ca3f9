"""Fingerprints (hash compaction) and saved searches in the flat engine (issue 18 item 5).

``spec._flat_explore.FlatSearch`` with ``fingerprints`` keeps a 64-bit hash of each class's key,
only the states not yet expanded, and rebuilds traces by replaying actions; such a search can be
saved and resumed. Shown here, on configurations the flat engine supports (``pair``, ``wide``,
the time variants of ``test_flat`` and the first states of ``standard``):

- the search with fingerprints reports what the search without reports: states, transitions,
  depths, completeness, violations (clause, name, message and the whole trace), edges, crash
  points, deadlocks, witnesses and frontier — a planted violation's trace, through a crash and
  its restart, rebuilt by replay equal to the stored one;
- a search stopped by ``max_states`` at several points (or saved at a poll), each time resumed
  from its saved data round-tripped through ``pickle``, ends with the uninterrupted report;
- a saved search resumes only on the engine that made it (``ValueError``; ``teamproto check``:
  ``BadCheckpoint``, exit 2, the file left as it is);
- ``teamproto check --checkpoint`` run twice (a bounded run, then its resumption) ends with the
  pinned count;
- the comparisons can fail: a replay that skips the restart, and a save that forgets the
  visited set, are caught.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from spec import invariants
from spec._flat_explore import FlatSearch, explore_flat, search_flat
from spec._records import Report
from spec.explore import _search, explore, flat_engine
from spec.model import Model, load_config, manifest
from spec.model._flat import decode
from spec.model._snapshot import snapshot

from .test_flat import _findings, interpreted, time_config

STANDARD_STATES = 3_000
ROOT = Path(__file__).resolve().parents[1]


def _model(name: str) -> Model:
    """The configuration, without the liveness check (``standard`` has it): fingerprints keep no graph."""
    config = time_config(name) if name in ("plan", "monitor", "tiny") else load_config(name)
    return Model(dataclasses.replace(config, liveness=False))


def _bounded(name: str) -> int | None:
    return STANDARD_STATES if name == "standard" else None


@cache
def _whole(name: str) -> Report:
    """The flat search without fingerprints (``standard``: its first states), nothing patched."""
    return explore_flat(_model(name), max_states=_bounded(name))


@pytest.mark.clause("INV-3", "INV-12")
@pytest.mark.parametrize("name", ["pair", "wide", "plan", "monitor", "tiny", "standard"])
def test_fingerprints_report_what_the_full_flat_search_reports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same findings with and without fingerprints; ``explore`` runs the flat engine with them
    (the model's search is not called), and the report bounds the chance of an omission."""
    from spec import explore as explore_module

    model = _model(name)
    assert flat_engine(model)
    full = _whole(name)

    def no_model_search(*_: Any, **__: Any) -> Any:
        raise AssertionError("explore ran the model's search where the flat engine supports fingerprints")

    monkeypatch.setattr(explore_module, "_search", no_model_search)
    compact = explore(model, max_states=_bounded(name), fingerprints=True)
    assert _findings(compact) == _findings(full)
    assert compact.fingerprints and not full.fingerprints
    assert 0 < compact.omission_bound < 1e-9 and full.omission_bound == 0
    assert compact.edges_taken and bool(compact.crashed_at) == (name in ("plan", "tiny", "standard"))
    if name == "standard":
        assert not compact.complete and compact.states >= STANDARD_STATES and compact.depth >= 6
    else:  # tiny runs here without its profile change: fewer states than pinned
        assert compact.complete and (compact.states == manifest()[name]["states"]) == (name != "tiny")


def _plant(monkeypatch: pytest.MonkeyPatch, name: str) -> dict[str, Any]:
    """A state check that fails on exactly one state's snapshot: a state the full search reached
    through a crash and its restart, the deepest such. Returns that snapshot."""
    model = _model(name)
    search = search_flat(model)
    number = max(n for n in range(1, search.count) if (a := search.via[n]) is not None and a.crash_after)
    target = snapshot(decode(search.state(number)), model.config)

    def planted(snap: Any) -> list[str]:
        """Planted: this one state is wrong."""
        return ["the planted state"] if snap == target else []

    check = invariants.Invariant("INV-1", "planted", "state", False, planted)
    monkeypatch.setattr(invariants, "STATE_INVARIANTS", (*invariants.STATE_INVARIANTS, check))
    return target


@interpreted
@pytest.mark.clause("INV-1", "REC-2")
@pytest.mark.parametrize("name", ["plan", "tiny"])
def test_a_violations_trace_is_rebuilt_by_replay(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted violation: the search with fingerprints reports it with the trace the full search
    stores, rebuilt by replaying the actions (the crash reaches its crashed state, then the restart)."""
    target = _plant(monkeypatch, name)
    model = _model(name)
    full, compact = explore_flat(model), explore_flat(model, fingerprints=True)
    assert "planted" in full.violations and _findings(compact) == _findings(full)
    trace = compact.violations["planted"].trace
    assert snapshot(trace[-1][1], model.config) == target
    # replayed crashes, each then restarted (the last step may be a crash: found on the crashed state)
    crashes = [i for i, (action, _) in enumerate(trace[:-1]) if action is not None and action.crash_after]
    assert crashes and all(str(trace[i + 1][0]) == "restart()" for i in crashes)
    assert [(str(a), s) for a, s in trace] == [(str(a), s) for a, s in full.violations["planted"].trace]


@interpreted
def test_a_replay_that_skips_the_restart_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = FlatSearch.replay

    def skipping(self: FlatSearch, number: int) -> list[tuple[Any, Any]]:
        return [step for step in original(self, number) if step[0] is None or step[0].name != "restart"]

    _plant(monkeypatch, "tiny")
    monkeypatch.setattr(FlatSearch, "replay", skipping)
    model = _model("tiny")
    assert _findings(explore_flat(model, fingerprints=True)) != _findings(explore_flat(model))


def _resumed(model: Model, bounds: list[int | None], final: bool = True) -> tuple[Report, int]:
    """The search stopped at each bound in turn (``final``: by it; else saved at the last poll
    before it), each time resumed from its data round-tripped through ``pickle``; and how many
    times the checkpoint was called."""
    saved: list[dict[str, Any]] = []
    calls = [0]

    def checkpoint(save: Any, last: bool) -> None:
        calls[0] += 1
        if last or not final:
            saved.append(pickle.loads(pickle.dumps(save(), protocol=pickle.HIGHEST_PROTOCOL)))

    report = Report("none", None)
    for bound in bounds:
        resume = saved[-1] if saved else None
        saved.clear()
        report = explore_flat(model, max_states=bound, fingerprints=True, resume=resume, checkpoint=checkpoint)
    return report, calls[0]


@pytest.mark.parametrize(
    ("name", "bounds"),
    [
        ("wide", [300, 301, 1200, 2500, None]),
        ("plan", [100, 700, None]),
        ("standard", [700, 1800, STANDARD_STATES]),
    ],
)
def test_a_search_stopped_and_resumed_ends_as_an_uninterrupted_one(name: str, bounds: list[int | None]) -> None:
    report, calls = _resumed(_model(name), bounds)
    assert calls >= len(bounds) - 1
    assert _findings(report) == _findings(_whole(name))  # = the uninterrupted search with fingerprints
    assert report.fingerprints and report.complete == (name != "standard")


def test_a_search_saved_at_a_poll_resumes_as_an_uninterrupted_one() -> None:
    """``checkpoint(save, False)`` is called where ``out_of_time`` is polled (every 2,000 states
    expanded): resumed from the save at state 2,000, ``wide`` ends with the whole report."""
    model = _model("wide")
    report, calls = _resumed(model, [2_700, None], final=False)
    assert calls == 3  # polls at states 0 and 2,000, then the bound
    assert _findings(report) == _findings(_whole("wide"))


@interpreted
def test_a_save_that_forgets_the_visited_set_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = FlatSearch.save

    def forgetful(self: FlatSearch) -> dict[str, Any]:
        data = original(self)
        bits = data["seen"][0]
        data["seen"] = (bits, 0, bytes(8 << bits))
        return data

    monkeypatch.setattr(FlatSearch, "save", forgetful)
    model = _model("wide")
    report, _ = _resumed(model, [1200, None])
    assert report.states > manifest()["wide"]["states"]


def _saved_by(model: Model, engine: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    saved: list[dict[str, Any]] = []

    def checkpoint(save: Any, final: bool) -> None:
        if final:
            saved.append(pickle.loads(pickle.dumps(save())))

    with monkeypatch.context() as patched:
        patched.setenv("TEAMPROTO_ENGINE", engine)
        explore(model, max_states=400, fingerprints=True, checkpoint=checkpoint)
    assert saved and saved[0]["engine"] == engine
    return saved[0]


def test_each_engine_refuses_the_others_saved_search(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model("pair")
    mine, theirs = _saved_by(model, "flat", monkeypatch), _saved_by(model, "model", monkeypatch)
    with pytest.raises(ValueError, match="made by the model engine, not the flat engine"):
        explore(model, fingerprints=True, resume=theirs)
    with pytest.raises(ValueError, match="made by the flat engine, not the model engine"):
        _search(model, fingerprints=True, resume=mine)
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    assert explore(model, fingerprints=True, resume=theirs).states == manifest()["pair"]["states"]


def _cli(path: Path, *arguments: str, engine: str = "flat") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": "0", "TEAMPROTO_ENGINE": engine}
    command = [sys.executable, "-m", "teamproto", "check", "--config", "pair", "--jobs", "1", "--json"]
    return subprocess.run(
        [*command, "--checkpoint", str(path), *arguments], env=env, capture_output=True, text=True, cwd=ROOT
    )


def test_teamproto_check_resumes_a_checkpoint_to_the_pinned_count(tmp_path: Path) -> None:
    """A bounded run saves the flat search; the second run goes on from it to the pinned count.
    The other engine refuses the file: one line, exit 2, the file left as it is."""
    path = tmp_path / "pair.checkpoint"
    first = _cli(path, "--max-states", "400")
    assert first.returncode == 1, first.stderr
    bounded = json.loads(first.stdout)["runs"][0]
    assert not bounded["complete"] and bounded["fingerprints"] and 400 <= bounded["states"] < 1056
    kept = path.read_bytes()
    refused = _cli(path, engine="model")
    assert refused.returncode == 2 and path.read_bytes() == kept
    error = json.loads(refused.stdout)["error"]
    assert error["type"] == "BadCheckpoint" and "saved by the flat engine, not the model engine" in error["message"]
    assert len(refused.stderr.strip().splitlines()) == 1
    second = _cli(path)
    assert second.returncode == 0, second.stderr
    run = json.loads(second.stdout)["runs"][0]
    assert run["complete"] and run["states"] == manifest()["pair"]["states"] == run["pinned_states"]
    assert run["transitions"] == manifest()["pair"]["transitions"] and run["ok"]


@interpreted
def test_dropping_the_expanded_states_signatures_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """With fingerprints the signatures of expanded states are dropped (``COMPACT_AFTER``, here 16
    instead of 65,536, so that ``wide`` drops them often): the same report, resumed or not, and
    the search holds only a part of the signatures at the end."""
    import spec._flat_explore as flat_explore

    model, full = _model("wide"), _whole("wide")
    monkeypatch.setattr(flat_explore, "COMPACT_AFTER", 16)
    search = search_flat(model, fingerprints=True)
    assert search.base > 0 and len(search.signatures) < search.count * 14 // 2
    assert _findings(search.report) == _findings(full)
    assert _findings(_resumed(model, [300, 1200, None])[0]) == _findings(full)


def test_teamproto_check_refuses_a_checkpoint_of_the_model_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spec.check.run_config``: a checkpoint saved by the model's search (``TEAMPROTO_ENGINE=model``)
    is refused where the flat engine would resume it, and the file is left as it is."""
    from spec import check

    path = tmp_path / "pair.checkpoint"
    bounds = check.Bounds(max_states=300, checkpoint=path)
    with monkeypatch.context() as patched:
        patched.setenv("TEAMPROTO_ENGINE", "model")
        report, _ = check.run_config(load_config("pair"), None, bounds)
    assert not report.complete and path.exists()
    kept = path.read_bytes()
    with pytest.raises(check.BadCheckpoint, match="saved by the model engine, not the flat engine"):
        check.run_config(load_config("pair"), None, bounds)
    assert path.read_bytes() == kept
    monkeypatch.setenv("TEAMPROTO_ENGINE", "model")
    assert check.run_config(load_config("pair"), None, check.Bounds(checkpoint=path))[0].complete
