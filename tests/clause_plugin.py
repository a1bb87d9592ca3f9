"""pytest plugin: ``@pytest.mark.clause("APR-5", ...)`` and ``--clause-report PATH`` (DESIGN rule 6).

An unknown clause id is a collection error. The report is JSON
``{clause_id: {"title": ..., "tests": [...], "passed": n, "failed": n, "skipped": n}}`` over every
clause of :data:`spec.CLAUSES`; clauses that no test cites have an empty ``tests`` list and are
also listed under the key ``"_uncovered"``.

Under pytest-xdist (``-n``) the workers collect and run the tests and the controller writes the
report: each test's clause ids travel to it in the test's reports (``user_properties``). A worker
cannot stop the whole run at collection (xdist would end in an INTERNALERROR that hides the
message), so there a test citing an unknown clause id fails at its setup, naming the id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spec import CLAUSES

PROPERTY = "clauses"
"""The name of a test's ``user_properties`` entry that carries its clause ids."""


def clause_ids(item: pytest.Item) -> list[str]:
    """The clause ids an item's ``clause`` markers cite, in order."""
    return [clause for mark in item.iter_markers("clause") for clause in mark.args]


def build_report(by_test: dict[str, list[str]], outcomes: dict[str, str]) -> dict[str, Any]:
    """Clause → tests citing it and their outcome counts; pure, so it is unit-tested."""
    report: dict[str, Any] = {
        clause: {"title": title, "tests": [], "passed": 0, "failed": 0, "skipped": 0}
        for clause, title in CLAUSES.items()
    }
    for nodeid, ids in sorted(by_test.items()):  # the same order however the tests were spread
        outcome = outcomes.get(nodeid)
        for clause in dict.fromkeys(ids):
            entry = report[clause]
            entry["tests"].append(nodeid)
            if outcome in ("passed", "failed", "skipped"):
                entry[outcome] += 1
    report["_uncovered"] = [clause for clause in CLAUSES if not report[clause]["tests"]]
    return report


class ClauseReporter:
    def __init__(self, path: str | None, worker: bool) -> None:
        self.path = None if worker else path  # under xdist the controller writes the report
        self.worker = worker
        self.by_test: dict[str, list[str]] = {}
        self.outcomes: dict[str, str] = {}
        self.unknown: dict[str, str] = {}  # a worker's tests that cite unknown clauses: why they fail

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        errors = []
        for item in items:
            ids = clause_ids(item)
            unknown = [clause for clause in ids if clause not in CLAUSES]
            known = [clause for clause in ids if clause in CLAUSES]
            if unknown:
                errors.append(f"{item.nodeid}: unknown clause id(s) {', '.join(unknown)}")
                self.unknown[item.nodeid] = errors[-1]
            self.by_test[item.nodeid] = known
            item.user_properties.append((PROPERTY, known))
        if errors and not self.worker:
            raise pytest.UsageError("clause markers name unknown clauses:\n" + "\n".join(errors))

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.nodeid in self.unknown:
            pytest.fail(f"clause markers name unknown clauses: {self.unknown[item.nodeid]}", pytrace=False)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, ids in report.user_properties:
            if name == PROPERTY:  # a worker's test, under pytest-xdist
                self.by_test.setdefault(report.nodeid, list(ids))
        failed_setup = report.when == "setup" and report.outcome != "passed"
        if (report.when == "call" or failed_setup) and self.outcomes.get(report.nodeid) != "failed":
            self.outcomes[report.nodeid] = report.outcome

    def pytest_sessionfinish(self) -> None:
        if self.path:
            report = build_report(self.by_test, self.outcomes)
            Path(self.path).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.path:
            uncovered = build_report(self.by_test, self.outcomes)["_uncovered"]
            cited = len(CLAUSES) - len(uncovered)
            terminalreporter.write_line(f"clause report: {cited}/{len(CLAUSES)} clauses cited -> {self.path}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--clause-report", metavar="PATH", default=None, help="write the per-clause JSON report")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clause(*ids): the docs/protocol.md clauses this test checks")
    worker = hasattr(config, "workerinput")  # a pytest-xdist worker
    config.pluginmanager.register(ClauseReporter(config.getoption("--clause-report"), worker), "clause-reporter")
