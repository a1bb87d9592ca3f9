"""Hash compaction (``explore(fingerprints=True)``, ``teamproto check --fingerprints``).

A run with fingerprints keeps a 64-bit hash of each state's key instead of the key and rebuilds
traces by replay. It must reach the same states in the same order as the full search, with the
same findings and the very same counterexamples.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from reference._cli import main
from spec.explore import explore
from spec.model import MUTANTS, Model, load_config
from spec.model._config import Config


def _without_liveness(name: str) -> Config:
    return dataclasses.replace(load_config(name), liveness=False)


@pytest.mark.parametrize("name", ["pair", "wide", "shutdown", "plan_lost"])
def test_fingerprints_reach_what_the_full_search_reaches(name: str) -> None:
    config = _without_liveness(name)
    full = explore(Model(config))
    compact = explore(Model(config), fingerprints=True)
    assert compact.fingerprints and not full.fingerprints
    assert (compact.states, compact.transitions, compact.depth) == (full.states, full.transitions, full.depth)
    assert compact.states_by_depth == full.states_by_depth
    assert compact.findings() == full.findings()
    assert compact.deadlocks == full.deadlocks


def _steps(violation: object) -> list[tuple[object, object]]:
    return list(violation.trace)  # type: ignore[attr-defined]


def test_fingerprint_traces_are_the_full_searchs_traces() -> None:
    """Every mutant (each is caught without the liveness check too): the same violations, and each
    trace rebuilt by replay is the trace the full search kept, action by action and state by state
    (crash and restart steps included)."""
    for name, mutant in sorted(MUTANTS.items()):
        config = _without_liveness(mutant.config)
        full = explore(Model(config, name), stop_on=mutant.caught_by)
        assert mutant.caught_by in {v.clause for v in full.violations.values()}, name
        compact = explore(Model(config, name), stop_on=mutant.caught_by, fingerprints=True)
        assert sorted(compact.violations) == sorted(full.violations), name
        for check, violation in full.violations.items():
            assert _steps(compact.violations[check]) == _steps(violation), (name, check)


def test_a_crash_step_is_replayed_with_its_restart() -> None:
    mutant = MUTANTS["recovery_repeats_call"]
    config = _without_liveness(mutant.config)
    report = explore(Model(config, mutant.name), stop_on=mutant.caught_by, fingerprints=True)
    trace = next(iter(report.violations.values())).trace
    crash = [i for i, (action, _) in enumerate(trace) if action is not None and action.crash_after]
    assert crash, "the counterexample crashes"
    after = trace[crash[0] + 1]
    assert after[0] is not None and after[0].name == "restart"
    assert trace[crash[0]][1].crashed and not after[1].crashed


def test_omission_bound() -> None:
    report = explore(Model(load_config("pair")), fingerprints=True)
    assert report.omission_bound == pytest.approx(report.states * (report.states - 1) / 2**65)
    assert 0 < report.omission_bound < 1e-10
    assert explore(Model(load_config("pair"))).omission_bound == 0.0


def test_liveness_needs_the_whole_graph() -> None:
    with pytest.raises(ValueError, match="liveness"):
        explore(Model(load_config("tiny")), fingerprints=True)


def test_cli_fingerprints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", "pair", "--fingerprints", "--json", "--jobs", "1"]) == 0
    document = json.loads(capsys.readouterr().out)
    (run,) = document["runs"]
    assert run["fingerprints"] is True and run["states"] == 6288 and 0 < run["omission_bound"] < 1e-10
    assert document["ok"]


def test_cli_refuses_fingerprints_where_they_cannot_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", "tiny", "--config", "pair", "--fingerprints"]) == 2
    out = capsys.readouterr().out
    assert "--fingerprints" in out and "tiny" in out and "pair" not in out.split("not to:")[1]
    assert main(["check", "--simulate", "--config", "pair", "--fingerprints"]) == 2


def test_waiting_states_are_encoded_and_decoded_unchanged() -> None:
    import dataclasses as dc

    from spec.explore import _Codec, _search
    from spec.model._state import State

    scalars = ("clock", "monitor_done", "crashed", "profile_changes")
    assert set(_Codec._FIELDS) | set(scalars) == {f.name for f in dc.fields(State)}
    search = _search(Model(load_config("everything")), max_states=5000)
    codec = _Codec()
    blobs = [codec.encode(state) for state in search.states]
    assert [codec.decode(blob) for blob in blobs] == search.states
    assert max(map(len, blobs)) <= 56
    assert len(codec.values) < len(search.states)  # tuples of records are kept once, shared


def test_the_fingerprint_table_is_a_set_of_64_bit_values() -> None:
    import random

    from spec.explore import _Fingerprints

    table, reference = _Fingerprints(bits=4), set()
    rng = random.Random(7)
    values = [rng.getrandbits(64) - 2**63 for _ in range(3000)] + [0, 1, -1, 2**64 - 1, 5, 5 + 2**64]
    values += [rng.choice(values) for _ in range(3000)]  # repeats, found again after the table grew
    for value in values:
        low = value & (2**64 - 1) or 1
        assert table.add(value) == (low not in reference), value
        reference.add(low)
    assert len(table) == len(reference)
    assert len(table.table) >= len(reference) * 4 / 3
