"""Hash compaction (``explore(fingerprints=True)``, ``teamproto check --fingerprints``).

A run with fingerprints keeps a 64-bit hash of each state's key instead of the key and rebuilds
traces by replay. It must reach the same states in the same order as the full search, with the
same findings and the very same counterexamples.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from spec.explore import explore
from spec.model import MUTANTS, Model, load_config, manifest
from spec.model._config import Config
from teamproto._cli import main


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
        if mutant.caught_by in ("every_request_can_finish", "no_cycle_avoids_finish", "deadline_is_the_last_instant"):
            continue  # caught by a whole-graph check alone (liveness, last instants), which fingerprints exclude
        config = _without_liveness(mutant.config)
        full = explore(Model(config, name), stop_on=mutant.caught_by)
        assert mutant.found_in(full.violations), name
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
    assert run["fingerprints"] is True and run["states"] == manifest()["pair"]["states"]
    assert 0 < run["omission_bound"] < 1e-10
    assert document["ok"]


def test_cli_refuses_fingerprints_where_they_cannot_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--simulate", "--config", "pair", "--fingerprints"]) == 2
    out = capsys.readouterr().err  # errors go to stderr
    assert "--fingerprints" in out and "pair" in out.split("not to:")[1]


def test_cli_runs_without_the_liveness_check_under_fingerprints_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The liveness check needs every state and edge: with --fingerprints a configuration that
    checks it runs without it, says so in a line (stderr beside --json), and reports it unchecked."""
    assert main(["check", "--config", "tiny", "--config", "pair", "--fingerprints", "--json", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    assert "the liveness check is off in tiny:" in " ".join(captured.err.split())
    runs = {run["config"]: run for run in json.loads(captured.out)["runs"]}
    assert runs["tiny"]["fingerprints"] and not runs["tiny"]["liveness_checked"]
    assert main(["check", "--config", "tiny", "--json", "--jobs", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["liveness_checked"]


def test_waiting_states_are_encoded_and_decoded_unchanged() -> None:
    import dataclasses as dc

    from spec.explore import CODEC_FIELDS, _Codec, _search
    from spec.model._state import State

    scalars = ("clock", "monitor_done", "crashed", "profile_changes")
    assert set(CODEC_FIELDS) | set(scalars) == {f.name for f in dc.fields(State)}
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


def _in_pieces(model_of: object, pieces: int, step: int, **options: object) -> object:
    """A search with fingerprints stopped every ``step`` states, saved through pickle and resumed."""
    import pickle

    saved: list[bytes] = []

    def checkpoint(save: object, final: bool) -> None:
        if final:
            saved.append(pickle.dumps(save(), protocol=pickle.HIGHEST_PROTOCOL))  # type: ignore[operator]

    report = None
    for piece in range(pieces):
        resume = pickle.loads(saved[-1]) if saved else None
        bound = step * (piece + 1)
        report = explore(
            model_of(),  # type: ignore[operator]
            fingerprints=True,
            max_states=bound,
            resume=resume,
            checkpoint=checkpoint,
            **options,  # type: ignore[arg-type]
        )
        if report.complete:
            break
    return report


@pytest.mark.parametrize("name", ["pair", "plan"])
def test_a_saved_search_goes_on_where_it_stopped(name: str) -> None:
    config = _without_liveness(name)  # pair: symmetry; plan: crashes
    whole = explore(Model(config), fingerprints=True)
    pieces = _in_pieces(lambda: Model(config), 20, whole.states // 4)
    assert pieces.complete  # type: ignore[attr-defined]
    for field in ("states", "transitions", "depth", "states_by_depth", "deadlocks"):
        assert getattr(pieces, field) == getattr(whole, field), field
    assert pieces.findings() == whole.findings()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["resumed_drain_keeps_requests", "release_before_jobs_settle"])
def test_a_resumed_search_finds_the_same_counterexample(name: str) -> None:
    mutant = MUTANTS[name]
    config = _without_liveness(mutant.config)
    whole = explore(Model(config, mutant.name), stop_on=mutant.caught_by, fingerprints=True)
    pieces = _in_pieces(lambda: Model(config, mutant.name), 50, 300, stop_on=mutant.caught_by)
    assert pieces.complete  # type: ignore[attr-defined]
    assert sorted(pieces.violations) == sorted(whole.violations)  # type: ignore[attr-defined]
    for check, violation in whole.violations.items():
        assert _steps(pieces.violations[check]) == _steps(violation)  # type: ignore[attr-defined]


def _saved_pair() -> dict[str, object]:
    """The first 100 states of a search of ``pair``, saved when the bound stops it."""
    saved: list[dict[str, object]] = []
    explore(
        Model(load_config("pair")),
        fingerprints=True,
        max_states=100,
        checkpoint=lambda save, final: saved.append(save()) if final else None,
    )
    return saved[-1]


def test_a_saved_search_resumes_only_its_own_model() -> None:
    saved = [_saved_pair()]
    with pytest.raises(ValueError, match="another"):
        explore(Model(load_config("wide")), fingerprints=True, resume=saved[-1])
    with pytest.raises(ValueError, match="another"):
        explore(Model(load_config("pair"), "consume_without_digest_check"), fingerprints=True, resume=saved[-1])
    with pytest.raises(ValueError, match="fingerprints"):
        explore(Model(load_config("pair")), resume=saved[-1])


def _check_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["check", "--json", "--jobs", "1", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_cli_checkpoint_stops_and_goes_on(
    tmp_path: object, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    monkeypatch.setenv("PYTHONHASHSEED", "0")  # this process's seed is whatever it is: one process
    path = Path(str(tmp_path)) / "pair.checkpoint"
    pinned = manifest()["pair"]
    third, two_thirds = str(pinned["states"] // 3), str(2 * pinned["states"] // 3)
    code, first = _check_json(capsys, "--config", "pair", "--checkpoint", str(path), "--max-states", third)
    (run,) = first["runs"]  # type: ignore[misc]
    assert code == 1 and not run["complete"] and run["fingerprints"] and path.exists()
    code, second = _check_json(capsys, "--config", "pair", "--checkpoint", str(path), "--max-states", two_thirds)
    (run,) = second["runs"]  # type: ignore[misc]
    assert code == 1 and int(two_thirds) <= run["states"] < pinned["states"]
    expanded = run["expanded_through_depth"]
    code, again = _check_json(capsys, "--config", "pair", "--checkpoint", str(path), "--max-states", two_thirds)
    (run,) = again["runs"]  # type: ignore[misc]
    assert code == 1 and run["expanded_through_depth"] == expanded >= 0  # stopped at once: as far as before
    code, last = _check_json(capsys, "--config", "pair", "--checkpoint", str(path))
    (run,) = last["runs"]  # type: ignore[misc]
    assert (
        code == 0
        and run["complete"]
        and (run["states"], run["transitions"]) == (pinned["states"], pinned["transitions"])
    )
    assert last["ok"] and not last["manifest_drift"]


def test_a_search_resumed_in_legs_counts_the_seconds_of_every_leg(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spec.check.run_config`` with a checkpoint, run in three legs (300 states, 300 again: it
    stops at once, then to the end): the seconds saved in the file after each bounded leg, and
    returned by each leg, count every leg so far, never only the last one, so they never go down
    and the last covers the earlier legs (the "resumed (N s spent before)" line and the states/s
    rate read them; outside review 44 P16). The clock is the test's: each leg's search takes
    exactly its seconds."""
    from pathlib import Path
    from types import SimpleNamespace

    from spec import check

    clock = [1000.0]
    monkeypatch.setattr(check, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    search = check.explore_states

    def timed(*args: object, **kwargs: object) -> object:
        clock[0] += legs.pop(0)
        return search(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(check, "explore_states", timed)
    path = Path(str(tmp_path)) / "pair.checkpoint"
    config, legs = load_config("pair"), [10.0, 20.0, 30.0]
    saved, returned = [], []
    for max_states in (300, 300, None):
        report, seconds = check.run_config(config, None, check.Bounds(max_states=max_states, checkpoint=path))
        returned.append(seconds)
        found = check.load_checkpoint(path, config, None, search=False)
        if max_states is not None:  # a bounded leg saves where it stopped
            assert found is not None and not report.complete
            saved.append(found[1])
    assert report.complete and report.states == manifest()["pair"]["states"]
    assert saved == [10.0, 30.0]
    assert returned == [10.0, 30.0, 60.0]


def _said(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())  # errors go to stderr


def test_cli_refuses_a_bad_checkpoint_and_leaves_it(
    tmp_path: object, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    from spec import _compiled

    folder = Path(str(tmp_path))
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    assert main(["check", "--config", "pair", "--checkpoint", str(folder / "unseeded")]) == 2
    assert "PYTHONHASHSEED=0 teamproto check" in _said(capsys) and not (folder / "unseeded").exists()
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    garbage = folder / "garbage"
    garbage.write_bytes(b"not a pickle")
    assert main(["check", "--config", "pair", "--checkpoint", str(garbage)]) == 2
    assert "unreadable" in _said(capsys) and garbage.read_bytes() == b"not a pickle"
    saved = folder / "pair.checkpoint"
    assert main(["check", "--config", "pair", "--checkpoint", str(saved), "--max-states", "500"]) == 1
    kept = saved.read_bytes()
    capsys.readouterr()
    assert main(["check", "--config", "wide", "--checkpoint", str(saved)]) == 2
    assert "a search of pair, not of wide" in _said(capsys)
    assert main(["check", "--config", "pair", "--mutant", "finish_keeps_task", "--checkpoint", str(saved)]) == 2
    assert "not of pair with the mutant finish_keeps_task" in _said(capsys)
    monkeypatch.setattr(_compiled, "source_digest", lambda: "another")
    assert main(["check", "--config", "pair", "--checkpoint", str(saved)]) == 2
    assert "another version of the model" in _said(capsys)
    monkeypatch.undo()
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    assert main(["check", "--config", "pair", "--checkpoint", str(saved)]) == 2
    assert "saved with PYTHONHASHSEED=0" in _said(capsys)
    assert saved.read_bytes() == kept
    assert main(["check", "--config", "pair", "--config", "wide", "--checkpoint", str(saved)]) == 2
    assert main(["check", "--config", "pair", "--checkpoint", str(folder / "no" / "such")]) == 2


def test_a_checkpoint_goes_on_in_another_process(tmp_path: object) -> None:
    """Fingerprints hash strings, and string hashes differ between processes unless their seed is
    fixed: a search resumed in a new process must still recognise every state it saw."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = Path(str(tmp_path)) / "pair.checkpoint"
    config = ["--config", "pair", "--checkpoint", str(path), "--json", "--jobs", "1"]

    def run(seed: str, *more: str) -> tuple[int, dict[str, object]]:
        command = [sys.executable, "-c", "import sys; from teamproto._cli import main; sys.exit(main(sys.argv[1:]))"]
        done = subprocess.run(
            [*command, "check", *config, *more],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}

    code, first = run("0", "--max-states", str(manifest()["pair"]["states"] // 2))
    assert code == 1 and not first["runs"][0]["complete"]  # type: ignore[index]
    assert run("1")[0] == 2  # another seed: refused, the file left as it is
    code, last = run("0")
    (whole,) = last["runs"]  # type: ignore[misc]
    report = explore(Model(load_config("pair")))
    assert code == 0 and whole["complete"]
    assert (whole["states"], whole["transitions"]) == (report.states, report.transitions)
    assert whole["states_by_depth"] == report.states_by_depth


def test_a_saved_search_resumes_only_with_the_same_string_hashes() -> None:
    saved = _saved_pair()
    other = {**saved, "hash_probe": saved["hash_probe"] + 1}  # type: ignore[operator]
    with pytest.raises(ValueError, match="PYTHONHASHSEED"):
        explore(Model(load_config("pair")), fingerprints=True, resume=other)
