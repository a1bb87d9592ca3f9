"""Reports: a terminal table grouped by protocol, Markdown, JUnit XML and JSON; the shortest
failing trace of each failed clause, rendered readably."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from rich.console import Console
from rich.table import Table

from ._cases import FAILED, OK, UNIMPLEMENTED, Case

COLOURS = {OK: "green", FAILED: "red", UNIMPLEMENTED: "yellow"}


def clause_verdicts(cases: list[Case]) -> dict[str, str]:
    """A clause FAILED if a case failed on it; OK if some case checked it and none failed on it;
    UNIMPLEMENTED if every case that would check it is unimplemented."""
    out: dict[str, str] = {}
    for case in cases:
        for clause in case.clauses:
            if case.verdict == OK:
                out.setdefault(clause, OK)
                if out[clause] == UNIMPLEMENTED:
                    out[clause] = OK
            elif case.verdict == UNIMPLEMENTED:
                out.setdefault(clause, UNIMPLEMENTED)
    for case in cases:
        for clause in case.failed_clauses:
            out[clause] = FAILED
    return dict(sorted(out.items()))


def shortest_failures(cases: list[Case]) -> dict[str, Case]:
    """For each failed clause, the failed case with the shortest trace."""
    out: dict[str, Case] = {}
    for case in cases:
        for clause in case.failed_clauses:
            if clause not in out or len(case.trace) < len(out[clause].trace):
                out[clause] = case
    return dict(sorted(out.items()))


def summary(cases: list[Case], undecided: str | None) -> dict[str, Any]:
    counts = {v: sum(1 for c in cases if c.verdict == v) for v in (OK, FAILED, UNIMPLEMENTED)}
    verdicts = clause_verdicts(cases)
    failed = sorted(c for c, v in verdicts.items() if v == FAILED)
    conforming = not failed and undecided is None and counts[OK] > 0
    return {
        "conforming": conforming,
        "undecided": undecided,
        "cases": counts,
        "clauses": verdicts,
        "failed_clauses": failed,
        "exit": 2 if undecided is not None or (counts[OK] == 0 and not failed) else (1 if failed else 0),
    }


def print_table(console: Console, cases: list[Case], result: dict[str, Any]) -> None:
    groups = sorted({c.group for c in cases})
    for group in groups:
        table = Table(title=group, title_justify="left", show_lines=False, expand=False)
        for column in ("case", "section", "clauses", "verdict"):
            table.add_column(column)
        for case in (c for c in cases if c.group == group and c.verdict != UNIMPLEMENTED):
            verdict = f"[{COLOURS[case.verdict]}]{case.verdict}[/]"
            shown = case.failed_clauses or case.clauses
            clauses = " ".join(shown[:6]) + (f" +{len(shown) - 6}" if len(shown) > 6 else "")
            table.add_row(case.id, case.section, clauses, verdict)
        missing = [c for c in cases if c.group == group and c.verdict == UNIMPLEMENTED]
        if missing:
            ops = sorted({op for c in missing for op in c.message.split("implement ", 1)[-1].split(", ")})
            what = f"{len(missing)} cases need {', '.join(ops)}"
            table.add_row(
                what if len(what) < 60 else what[:57] + "…", "", "", f"[{COLOURS[UNIMPLEMENTED]}]{UNIMPLEMENTED}[/]"
            )
        console.print(table)
    verdicts = result["clauses"]
    if verdicts:
        console.print(
            "clauses: " + "  ".join(f"[{COLOURS[v]}]{c} {v}[/]" for c, v in verdicts.items()),
            highlight=False,
            soft_wrap=True,
        )
    by_case: dict[str, list[str]] = {}
    failures = shortest_failures(cases)
    for clause, case in failures.items():
        by_case.setdefault(case.id, []).append(clause)
    for case in (c for c in cases if c.id in by_case):
        console.print(f"\n[red]{', '.join(by_case[case.id])} FAILED[/] in {case.id} — {case.message}", highlight=False)
        console.print("\n".join(case.trace), highlight=False, markup=False)
    counts = result["cases"]
    line = f"{counts[OK]} OK, {counts[FAILED]} FAILED, {counts[UNIMPLEMENTED]} UNIMPLEMENTED"
    if result["undecided"]:
        console.print(f"[yellow]could not decide[/]: {result['undecided']}")
    verdict = "conforming" if result["conforming"] else "NOT conforming" if result["failed_clauses"] else "undecided"
    console.print(f"{line} — {verdict}", highlight=False)


def markdown(cases: list[Case], result: dict[str, Any]) -> str:
    out = ["# teamproto conformance report", ""]
    out.append(
        f"**{'Conforming' if result['conforming'] else 'Not conforming'}** — "
        + ", ".join(f"{n} {v}" for v, n in result["cases"].items())
    )
    out += ["", "## Clauses", "", "| clause | verdict |", "|---|---|"]
    out += [f"| {c} | {v} |" for c, v in result["clauses"].items()]
    for group in sorted({c.group for c in cases}):
        out += ["", f"## {group}", "", "| case | section | what | clauses | verdict |", "|---|---|---|---|---|"]
        for c in (c for c in cases if c.group == group):
            out.append(f"| {c.id} | {c.section} | {c.title.replace('|', '/')} | {' '.join(c.clauses)} | {c.verdict} |")
    failures = shortest_failures(cases)
    if failures:
        out += ["", "## Failures (the shortest trace of each failed clause)"]
    for clause, case in failures.items():
        out += ["", f"### {clause}: {case.id}", "", case.message, "", "```", *case.trace, "```"]
    return "\n".join(out) + "\n"


def junit(cases: list[Case]) -> str:
    failures = sum(1 for c in cases if c.verdict == FAILED)
    skipped = sum(1 for c in cases if c.verdict == UNIMPLEMENTED)
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    out.append(
        f'<testsuite name="teamproto-conformance" tests="{len(cases)}" failures="{failures}" skipped="{skipped}">'
    )
    for c in cases:
        name = quoteattr(f"{c.id} [{' '.join(c.clauses)}]")
        out.append(f'  <testcase classname={quoteattr(c.group)} name={name} time="{c.seconds:.3f}">')
        if c.verdict == FAILED:
            text = escape("\n".join([c.message, *c.trace]))
            out.append(f"    <failure message={quoteattr(c.message)}>{text}</failure>")
        elif c.verdict == UNIMPLEMENTED:
            out.append(f"    <skipped message={quoteattr(c.message)}/>")
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"


def write_reports(folder: Path, cases: list[Case], result: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(markdown(cases, result), encoding="utf-8")
    (folder / "junit.xml").write_text(junit(cases), encoding="utf-8")
    document = {**result, "results": [c.to_json() for c in cases]}
    (folder / "report.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")


__all__ = ["clause_verdicts", "markdown", "print_table", "summary", "write_reports"]
