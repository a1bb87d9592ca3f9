"""``teamproto mutants`` runs each mutant's declared tests first, then the whole selection; a mutant
is caught only when a test fails under it that passes without it (DESIGN rule 7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reference._mutant_tests import CAUGHT_BY
from reference._mutants import MUTANTS
from teamproto import _mutants_cli

ROOT = Path(__file__).resolve().parents[1]


def test_every_declared_test_names_a_mutant_and_is_collected() -> None:
    """Each entry is a reference mutant with tests, and pytest's default run collects every one of
    them (a stale node id would cost a fallback run, so it fails here first)."""
    assert set(CAUGHT_BY) <= set(MUTANTS) and all(CAUGHT_BY.values())
    tests = sorted({test for tests in CAUGHT_BY.values() for test in tests})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *tests],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    for test in tests:
        assert any(line == test or line.startswith((f"{test}::", f"{test}[")) for line in collected), test


def test_a_mutant_without_an_entry_runs_the_whole_selection() -> None:
    assert "not_a_declared_mutant" not in CAUGHT_BY
    assert _mutants_cli.selections("not_a_declared_mutant") == [
        ("all", [*_mutants_cli.TESTS, *_mutants_cli.EXAMPLE_TESTS])
    ]
    declared = _mutants_cli.selections("signal_exits_at_once")
    assert declared[0] == ("declared", CAUGHT_BY["signal_exits_at_once"])
    assert "tests/test_member_processes.py" in declared[1][1]  # the fallback reaches the declared file too


def fake_runs(monkeypatch: pytest.MonkeyPatch, outcomes: dict[str, tuple[int | None, str]]) -> list[Any]:
    """Replace the pytest subprocess: the first selection whose first test is in ``outcomes``."""
    calls: list[Any] = []

    def run(
        mutant: str | None, tests: list[str], root: Path, stop_at_first: bool = True, shrink: bool = True
    ) -> tuple[int | None, str]:
        calls.append((mutant, tests, stop_at_first) if shrink else (mutant, tests, stop_at_first, "no shrink"))
        return outcomes.get(tests[0], (0, "1 passed"))

    monkeypatch.setattr(_mutants_cli, "_pytest", run)
    return calls


def test_a_declared_test_that_fails_catches_without_the_whole_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    test = CAUGHT_BY["consume_twice"][0]
    calls = fake_runs(monkeypatch, {test: (1, f"FAILED {test}::runTest - AssertionError: INV-1 x")})
    row = _mutants_cli.run_mutant("consume_twice", ROOT)
    assert (row["caught"], row["selection"], row["test"]) == (True, "declared", f"{test}::runTest")
    assert [call[1] for call in calls] == [[test]]


def test_declared_tests_that_pass_fall_back_to_the_whole_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong entry costs a second run, never the verdict: the whole selection still decides."""
    wide = _mutants_cli.selections("audit_link_unchecked")[1][1]
    calls = fake_runs(monkeypatch, {wide[0]: (1, "FAILED tests/test_races.py::test_x - AssertionError")})
    row = _mutants_cli.run_mutant("audit_link_unchecked", ROOT)
    assert (row["caught"], row["selection"], row["test"]) == (True, "declared, then all", "tests/test_races.py::test_x")
    assert len(calls) == 2 and all(call[0] == "audit_link_unchecked" for call in calls)
    fake_runs(monkeypatch, {})
    row = _mutants_cli.run_mutant("audit_link_unchecked", ROOT)
    assert (row["caught"], row["selection"]) == (False, "declared, then all")


def test_an_error_that_is_no_failing_test_catches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest exit 4 (a node id not found) or 2 (a collection error) is not a test failing."""
    test = CAUGHT_BY["consume_twice"][0]
    for code in (2, 4, 5):
        fake_runs(monkeypatch, {test: (code, "ERROR: not found")})
        row = _mutants_cli.run_mutant("consume_twice", ROOT)
        assert not row["caught"] and row["by"] == f"pytest exited with {code}: no test failed"


def test_a_test_that_fails_without_the_mutant_catches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline: every test that caught a mutant runs once, unmutated and without ``-x``."""
    rows = [
        {"mutant": "a", "caught": True, "test": "tests/t.py::test_flaky", "by": "x"},
        {"mutant": "b", "caught": True, "test": "tests/t.py::test_good", "by": "y"},
        {"mutant": "c", "caught": False, "test": "", "by": ""},
    ]
    calls = fake_runs(monkeypatch, {"tests/t.py::test_flaky": (1, "FAILED tests/t.py::test_flaky - boom")})
    assert _mutants_cli.check_baseline(rows, ROOT) == ["tests/t.py::test_flaky"]
    assert calls == [(None, ["tests/t.py::test_flaky", "tests/t.py::test_good"], False)]
    assert [row["caught"] for row in rows] == [False, True, False]
    assert rows[0]["by"] == "tests/t.py::test_flaky fails without the mutant too"
    fake_runs(monkeypatch, {"tests/t.py::test_good": (None, "")})  # the baseline timed out
    assert _mutants_cli.check_baseline(rows, ROOT) == ["tests/t.py::test_good"] and not rows[1]["caught"]


def test_a_baseline_that_fails_naming_no_test_trusts_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unmutated run exits 2 (a collection error, an internal error) and names no failed test:
    every caught row becomes a survivor, since none of its tests is known to pass without a mutant
    (an outside review let such rows stay caught)."""
    rows = [
        {"mutant": "a", "caught": True, "test": "tests/t.py::test_one", "by": "x"},
        {"mutant": "b", "caught": True, "test": "tests/t.py::test_two", "by": "y"},
        {"mutant": "c", "caught": False, "test": "", "by": ""},
    ]
    error = "ERROR tests/t.py - ImportError: cannot import name 'gone'\nInterrupted: 1 error during collection"
    fake_runs(monkeypatch, {"tests/t.py::test_one": (2, error)})
    assert _mutants_cli.check_baseline(rows, ROOT) == ["tests/t.py::test_one", "tests/t.py::test_two"]
    assert [row["caught"] for row in rows] == [False, False, False]


def subprocess_environments(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """Replace the subprocess itself: the environment of each run, in order."""
    seen: list[dict[str, str]] = []

    def run(command: list[str], **options: Any) -> Any:
        seen.append(options["env"])
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(_mutants_cli.subprocess, "run", run)
    return seen


def test_the_subprocess_gets_the_mutant_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline runs without TEAMPROTO_MUTANT even when the caller's environment has one."""
    seen = subprocess_environments(monkeypatch)
    monkeypatch.setenv("TEAMPROTO_MUTANT", "consume_twice")
    _mutants_cli._pytest(None, ["tests/x.py"], ROOT)
    _mutants_cli._pytest("skip_digest_check", ["tests/x.py"], ROOT)
    assert "TEAMPROTO_MUTANT" not in seen[0] and seen[1]["TEAMPROTO_MUTANT"] == "skip_digest_check"


def test_no_shrink_reaches_the_subprocess_and_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--no-shrink`` sets TEAMPROTO_NO_SHRINK for the mutant's run; a caller's own setting never
    leaks into a run that shrinks (the baseline, or ``teamproto mutants`` without the flag)."""
    seen = subprocess_environments(monkeypatch)
    monkeypatch.setenv("TEAMPROTO_NO_SHRINK", "1")
    _mutants_cli._pytest("skip_digest_check", ["tests/x.py"], ROOT)
    _mutants_cli._pytest("skip_digest_check", ["tests/x.py"], ROOT, shrink=False)
    assert "TEAMPROTO_NO_SHRINK" not in seen[0] and seen[1]["TEAMPROTO_NO_SHRINK"] == "1"
    calls = fake_runs(monkeypatch, {})
    _mutants_cli.run_mutant("consume_twice", ROOT, shrink=False)
    assert calls and all(call[-1] == "no shrink" for call in calls)


@pytest.mark.parametrize(("no_shrink", "shrinks"), [("", True), ("1", False)])
def test_the_root_conftest_drops_the_shrink_phase_only_under_no_shrink(no_shrink: str, shrinks: bool) -> None:
    """The profile the tests run under keeps every other setting of the chosen profile."""
    probe = (
        "import conftest; from hypothesis import Phase, settings; "
        "print(Phase.shrink in settings.default.phases, Phase.generate in settings.default.phases, "
        "settings.default.max_examples, settings.default.derandomize)"
    )
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "TEAMPROTO_NO_SHRINK": no_shrink}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split() == [str(shrinks), "True", "200", "True"]


def test_a_mutant_run_without_shrinking_is_caught_and_gives_no_program_length() -> None:
    """The real subprocess: the stateful test fails under the mutant at once, and the row does
    not present the unshrunk program's length as a minimal one."""
    row = _mutants_cli.run_mutant("anyone_may_reject", ROOT, shrink=False)
    assert row["caught"] and row["selection"] == "declared"
    assert row["test"].startswith("model_tests/test_stateful.py::TestApprovalProtocol")
    assert row["shrunk_program_steps"] is None
