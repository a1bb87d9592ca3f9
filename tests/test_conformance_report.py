"""What the conformance runner selects and what its reports say, without a driver: the clause
filter, the shortest failure of each clause, the JUnit counts (an outside review planted a prefix
filter, the longest trace and unimplemented cases counted as failures; no test read them).

Clause: MSG-2 (the suite's outputs are what implementers' CI reads).
"""

from __future__ import annotations

import signal
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance import _client
from conformance._cases import FAILED, OK, UNIMPLEMENTED, Case
from conformance._report import junit, shortest_failures
from conformance._run import Options, jobs
from reference.driver import Driver


def _case(name: str, verdict: str, clauses: list[str], trace: int = 0) -> Case:
    case = Case(name, "bad input", "shutdown", name, clauses)
    if verdict == FAILED:
        case.fail(f"{name} failed", clauses, [f"step {n}" for n in range(trace)])
    elif verdict == UNIMPLEMENTED:
        case.unimplemented(["job.start"])
    return case


@pytest.mark.clause("SHD-1", "SHD-10")
@pytest.mark.parametrize(("asked", "never"), [("SHD-1", ("SHD-10", "SHD-11")), ("SHD", ("APR-", "PLN-"))])
def test_a_clause_filter_selects_that_clause_or_its_family_not_a_longer_id(
    asked: str, never: tuple[str, ...], tmp_path: Path
) -> None:
    """``--clauses SHD-1`` runs the cases of SHD-1 and no case of SHD-10 or SHD-11 alone (there are
    some, in the vectors); a family (``SHD``) runs every SHD case and nothing else."""
    caps = Driver().capabilities({})
    everything = jobs(Options("unused", programs=2), caps, tmp_path)
    chosen = jobs(Options("unused", programs=2, clauses=(asked,)), caps, tmp_path)
    wanted = [clauses for clauses, _ in everything if any(c == asked or c.startswith(asked + "-") for c in clauses)]
    assert [clauses for clauses, _ in chosen] == wanted and 0 < len(chosen) < len(everything)
    lookalikes = [
        clauses for clauses in map(set, (c for c, _ in everything)) if any(c.startswith(never) for c in clauses)
    ]
    assert [c for c in lookalikes if not any(x == asked or x.startswith(asked + "-") for x in c)]  # left out


@pytest.mark.clause("MSG-2")
def test_each_failed_clause_reports_its_shortest_failure() -> None:
    cases = [
        _case("long", FAILED, ["SHD-1", "SHD-2"], trace=5),
        _case("short", FAILED, ["SHD-1"], trace=2),
        _case("middle", FAILED, ["SHD-1", "SHD-2"], trace=3),
        _case("fine", OK, ["SHD-1"]),
    ]
    assert {clause: case.id for clause, case in shortest_failures(cases).items()} == {
        "SHD-1": "short",
        "SHD-2": "middle",
    }


@pytest.mark.clause("MSG-2")
def test_the_junit_counts_are_its_failures_and_skips() -> None:
    """``failures`` counts the failed cases only, ``skipped`` the unimplemented ones: each count
    equals its elements."""
    cases = [_case("a", OK, ["APR-1"]), _case("b", FAILED, ["APR-2"], 1), _case("c", UNIMPLEMENTED, ["JOB-1"])]
    suite = ET.fromstring(junit(cases))
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    assert len(suite.findall("testcase/failure")) == 1 and len(suite.findall("testcase/skipped")) == 1


@pytest.mark.clause("MSG-2")
def test_a_driver_that_ignores_the_end_of_its_input_is_killed_when_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner ends each case's driver: its input closed, then, if it goes on, SIGKILL to its
    process group — no driver outlives its case (an outside review left it running)."""
    monkeypatch.setattr(_client, "STOP_SECONDS", 0.2)
    hung = f'{sys.executable} -c "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"'
    driver = _client.Implementation(hung, {"type": "init"})
    driver.start_process()
    assert driver.process is not None
    process = driver.process
    driver.stop()
    assert process.poll() == -signal.SIGKILL and driver.process is None


def test_a_driver_that_dies_before_it_answers_is_reported_with_its_last_words(tmp_path: Path) -> None:
    """A driver that cannot start (here: a module the interpreter does not find, as when the
    reference's driver is run without its virtual environment) makes the run undecided, naming
    what the driver wrote on stderr, not only that it died (an outside review saw "died before
    answering capabilities" and had to guess the ModuleNotFoundError)."""
    from conformance._client import Undecided
    from conformance._run import capabilities

    with pytest.raises(Undecided) as refused:
        capabilities(f"{sys.executable} -m no_such_driver_module")
    assert "died before answering capabilities" in str(refused.value)
    assert "No module named no_such_driver_module" in str(refused.value)


@pytest.mark.clause("AUD-5", "INV-10")
def test_a_clause_only_the_invariants_check_selects_every_vector_and_program(tmp_path: Path) -> None:
    """AUD-5 and INV-10 are named by no case: the invariants check them after every step of every
    vector and random program. ``--clauses AUD-5`` runs exactly those (an outside review was told
    that no case checks AUD-5, while full runs failed drivers on it); a clause a case names keeps
    selecting by the cases' own clauses."""
    from conformance._random import run_program
    from conformance._replay import run_vector

    caps = Driver().capabilities({})
    everything = jobs(Options("unused", programs=2), caps, tmp_path)
    stepwise = [clauses for clauses, run in everything if run.func in (run_vector, run_program)]  # type: ignore[attr-defined]
    assert all("AUD-5" not in clauses for clauses, _ in everything)
    for asked in ("AUD-5", "INV-10"):
        chosen = jobs(Options("unused", programs=2, clauses=(asked,)), caps, tmp_path)
        assert [clauses for clauses, _ in chosen] == stepwise
    chosen = jobs(Options("unused", programs=2, clauses=("APR-9",)), caps, tmp_path)
    assert 0 < len(chosen) < len(stepwise)
