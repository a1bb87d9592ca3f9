"""The flat engine runs only the model it was proven equal to (spec/model/_proof.py; outside review 61).

Clause: INV-3 (one source: the explorer's fast form is the model's, or it is not used).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spec.explore import flat_engine
from spec.model import Model, _proof, load_config


@pytest.fixture
def unproven(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pin as it would be after a change of the model's operations not yet proven again."""
    pin = {**_proof.digests(), "model": "0" * 64}
    monkeypatch.setattr(_proof, "pinned", lambda: pin)
    monkeypatch.setattr(_proof, "proven", lambda: False)
    monkeypatch.delenv("TEAMPROTO_ENGINE", raising=False)


def test_the_flat_proof_is_for_these_sources() -> None:
    assert _proof.stale() == "", _proof.stale()
    assert _proof.proven()
    pinned = _proof.pinned()
    assert pinned is not None and {"pair", "pair_crashes", "wide", "pair_plan"} <= set(pinned["configurations"])
    assert {"time:plan", "time:pair_ticks"} <= set(pinned["configurations"])  # regions; a clock past deadlines


def test_every_source_of_the_model_is_in_its_digest_and_the_flat_form_is_not() -> None:
    names = {path.name for path in _proof.model_sources()}
    assert {"_ops.py", "_reconcile.py", "_model.py", "_snapshot.py", "_state.py", "_tables.py", "explore.py"} <= names
    assert not names & {"_flat.py", "_proof.py", "_flat_explore.py"}


def test_a_changed_source_changes_its_digest(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    first = _proof._digest([source], tmp_path)
    source.write_text("x = 2\n")
    assert _proof._digest([source], tmp_path) != first


@pytest.mark.usefixtures("unproven")
def test_an_unproven_model_is_explored_on_its_own_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(load_config("pair"))
    assert not flat_engine(model)
    assert "the model source changed" in _proof.stale() and _proof.COMMAND in _proof.stale()
    monkeypatch.setenv("TEAMPROTO_ENGINE", "flat")  # asked for by name: used all the same
    assert flat_engine(model)


@pytest.mark.usefixtures("unproven")
def test_teamproto_check_says_which_configurations_ran_on_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    from teamproto._cli import main

    assert main(["check", "--config", "pair", "--config", "tiny", "--jobs", "1"]) == 0
    out, _ = capsys.readouterr()
    line = next(line for line in out.splitlines() if "since the flat engine was proven" in line)
    assert line.startswith("pair: the model source changed")  # tiny never runs on the flat engine
    assert main(["check", "--config", "pair", "--json", "--jobs", "1"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr()[0])
    assert document["flat_engine_unproven"].startswith("pair: the model source changed")
    assert main(["check", "--config", "tiny", "--json", "--jobs", "1"]) == 0  # never on the flat engine
    assert json.loads(capsys.readouterr()[0])["flat_engine_unproven"] is None


def test_a_proven_check_says_nothing_of_it(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from teamproto._cli import main

    monkeypatch.delenv("TEAMPROTO_ENGINE", raising=False)
    assert main(["check", "--config", "pair", "--json", "--jobs", "1"]) == 0
    assert json.loads(capsys.readouterr()[0])["flat_engine_unproven"] is None


def test_the_proof_command_says_whether_it_holds(capsys: pytest.CaptureFixture[str], unproven: None) -> None:
    from model_tests import flat_proof

    assert flat_proof.main([]) == 1
    assert "the model source changed" in capsys.readouterr()[0]
