"""The clause registry matches docs/protocol.md, and the clause plugin refuses unknown ids.

Clause: DESIGN rule 6 (clause ids everywhere).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import spec
from tests.clause_plugin import build_report

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "protocol.md"
CLAUSE_ITEM = re.compile(r"^- \*\*([A-Z]{3}-\d+)\*\* (.+?)(?=^- \*\*|^\(|^#|\Z)", re.M | re.S)


def test_registry_holds_exactly_the_clauses_of_protocol_md() -> None:
    """Every clause id that docs/protocol.md defines is registered, in order, and nothing else is."""
    ids = [match[0] for match in CLAUSE_ITEM.findall(PROTOCOL.read_text(encoding="utf-8"))]
    assert list(spec.CLAUSES) == ids


def test_protocol_md_states_each_clause_in_full() -> None:
    """Each clause of docs/protocol.md is a statement, not its registry title copied: it is longer."""
    statements = dict(CLAUSE_ITEM.findall(PROTOCOL.read_text(encoding="utf-8")))
    for clause_id, title in spec.CLAUSES.items():
        statement = " ".join(statements[clause_id].split())
        assert len(statement) > len(title), f"{clause_id}: the statement is no longer than its title"


def test_require_clauses_names_the_unknown_id() -> None:
    with pytest.raises(spec.UnknownClause, match="'APR-99'"):
        spec.require_clauses("APR-1", "APR-99")


def test_report_counts_outcomes_and_lists_uncovered() -> None:
    report = build_report(
        {"t::a": ["APR-5", "APR-5"], "t::b": ["APR-5", "INV-1"]}, {"t::a": "passed", "t::b": "failed"}
    )
    assert report["APR-5"]["tests"] == ["t::a", "t::b"]
    assert (report["APR-5"]["passed"], report["APR-5"]["failed"]) == (1, 1)
    assert "APR-5" not in report["_uncovered"] and "STO-1" in report["_uncovered"]


def _run_pytest(tmp_path: Path, body: str, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text("import pytest\n" + body, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.clause_plugin",
            "--rootdir",
            str(tmp_path),
            "-c",
            "/dev/null",
            "--clause-report",
            str(tmp_path / "report.json"),
            *options,
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize("processes", [(), ("-n", "2")], ids=["one process", "xdist workers"])
def test_plugin_refuses_unknown_clause_at_collection(tmp_path: Path, processes: tuple[str, ...]) -> None:
    """One process stops at collection; under xdist the test citing the unknown id fails at its
    setup. Either way the run fails, names the id, and ends without an internal error."""
    body = "@pytest.mark.clause('APR-99')\ndef test_x():\n    pass\n"
    body += "@pytest.mark.clause('APR-5')\ndef test_y():\n    pass\n"
    result = _run_pytest(tmp_path, body, *processes)
    assert result.returncode in (1, 4), result.stdout + result.stderr
    assert "unknown clause id(s) APR-99" in result.stdout + result.stderr
    assert "INTERNALERROR" not in result.stdout + result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("processes", [(), ("-n", "2")], ids=["one process", "xdist workers"])
def test_plugin_writes_the_report(tmp_path: Path, processes: tuple[str, ...]) -> None:
    """The same report from one process and from pytest-xdist's workers (the README's command)."""
    body = (
        "@pytest.mark.clause('APR-5')\ndef test_ok():\n    pass\n"
        "@pytest.mark.clause('APR-5', 'INV-1')\ndef test_bad():\n    assert False\n"
        "@pytest.mark.clause('STO-1')\n@pytest.mark.skip\ndef test_skipped():\n    pass\n"
        "def test_uncited():\n    pass\n"
    )
    result = _run_pytest(tmp_path, body, *processes)
    assert result.returncode == 1, result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["APR-5"]["passed"], report["APR-5"]["failed"]) == (1, 1)
    assert report["APR-5"]["tests"] == [f"test_sample.py::test_{name}" for name in ("bad", "ok")]
    assert report["INV-1"]["failed"] == 1 and report["STO-1"]["skipped"] == 1
    assert len(report["_uncovered"]) == len(spec.CLAUSES) - 3
