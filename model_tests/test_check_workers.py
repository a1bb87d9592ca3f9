"""`teamproto check --jobs N`: configurations run on worker processes, with the same results.

Clause: INV-1 (the mutant run below), REC-1 (DESIGN "explorer"; the main job on every processor).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from spec import check as _check
from spec.model import load_config
from spec.simulate import Plan
from teamproto._cli import main


def _figures(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a run found, without what depends on the machine (seconds, rates)."""
    return [
        (run["config"], run["mode"], run["states"], run["transitions"], run["depth"], run["checks"], run["ok"])
        for run in document["runs"]
    ]


def _check_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.clause("REC-1")
def test_workers_find_what_one_process_finds(capsys: pytest.CaptureFixture[str]) -> None:
    """Two workers report the same runs, in the order asked, as one process does."""
    argv = ("--simulate", "--walks", "40", "--config", "plan", "--config", "tiny", "--config", "fencing")
    one_code, one = _check_json(capsys, *argv, "--jobs", "1")
    two_code, two = _check_json(capsys, *argv, "--jobs", "2")
    assert (one_code, two_code) == (0, 0)
    assert (one["workers"], two["workers"]) == (1, 2)
    assert [run["config"] for run in two["runs"]] == ["plan", "tiny", "fencing"]
    assert _figures(two) == _figures(one)
    assert two["peak_memory_mib"] > 0


@pytest.mark.clause("INV-1")
def test_a_mutant_is_caught_on_a_worker(capsys: pytest.CaptureFixture[str]) -> None:
    """A violation found on a worker comes back whole: its invariant and its shortest trace."""
    code, document = _check_json(
        capsys, "--config", "monitor", "--config", "tiny", "--mutant", "consume_without_digest_check", "--jobs", "2"
    )
    assert code == 0
    tiny = document["runs"][1]
    assert tiny["config"] == "tiny" and tiny["checks"]["approval_consumed_at_most_once"] == "violated"
    assert tiny["violations"][0]["steps"], "the trace crossed the process boundary"


def test_runs_are_reported_in_the_order_asked() -> None:
    """The longest run starts first, yet every run is reported in order, each once."""
    jobs: list[_check.Job] = [(load_config("tiny"), None), (load_config("plan"), None), (load_config("tiny"), Plan(10))]
    reported: list[tuple[int, str]] = []
    results, peak = _check.run_jobs(
        jobs, None, _check.Bounds(), 2, None, lambda i, r, s: reported.append((i, r.config))
    )
    assert reported == [(0, "tiny"), (1, "plan"), (2, "tiny")]
    assert [r.simulation for r, _ in results] == [False, False, True]
    assert all(r.ok for r, _ in results) and peak > 0


def test_progress_lines_reach_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run says how far it got (in this process; a worker relays the same lines)."""
    monkeypatch.setattr(_check, "PROGRESS_SECONDS", 0.0)
    lines: list[str] = []
    _check.run_jobs([(load_config("tiny"), None)], None, _check.Bounds(), 1, lines.append, lambda *_: None)
    assert lines and all("tiny:" in line and "states/s" in line for line in lines)


def test_json_keeps_progress_on_stderr(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A long ``--json`` run still says how far it got, on stderr; stdout is the JSON alone."""
    monkeypatch.setattr(_check, "PROGRESS_SECONDS", 0.0)
    assert main(["check", "--config", "tiny", "--jobs", "1", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["ok"] is True
    assert "tiny:" in err and "states/s" in err


def test_bad_worker_counts_are_refused() -> None:
    assert main(["check", "--config", "tiny", "--jobs", "0"]) == 2
