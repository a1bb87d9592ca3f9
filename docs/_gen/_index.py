"""The clause index: for each clause of ``spec.CLAUSES``, where the code cites it, which tests check
it (``@pytest.mark.clause``), and which model and reference mutants break it.

Found by reading the repository's own source, so it follows every change; the page lists files
and test names, not line numbers, so that an edit elsewhere in a file does not make it stale.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import spec
from reference._mutants import MUTANTS as REFERENCE_MUTANTS
from spec.model import MUTANTS

CODE_DIRS = ("spec", "reference", "conformance", "teamproto")
TEST_DIRS = ("tests", "model_tests")
_MARK = re.compile(r"@pytest\.mark\.clause\(([^)]*)\)\s*(?:@[^\n]*\s*)*(?:async\s+)?def\s+(\w+)", re.S)
_ID = re.compile(r"\b[A-Z]{3}-\d+\b")
FAMILIES = {
    "STO": "Records and stores",
    "MSG": "Messages",
    "APR": "Operation approval",
    "PLN": "Plan approval",
    "MEM": "Member lifecycle",
    "SHD": "Graceful shutdown",
    "TSK": "Tasks",
    "JOB": "Jobs",
    "XPR": "Where the protocols meet",
    "REC": "Recovery",
    "AUD": "Audit and security",
    "INV": "Invariants",
}
ANCHORS = {
    "STO": "protocol-sto",
    "MSG": "protocol-msg",
    "APR": "protocol-apr",
    "PLN": "protocol-pln",
    "MEM": "protocol-shd",
    "SHD": "protocol-shd",
    "TSK": "protocol-tsk",
    "JOB": "protocol-tsk",
    "XPR": "protocol-xpr",
    "REC": "protocol-rec",
    "AUD": "protocol-aud",
    "INV": "protocol-inv",
}


def _python_files(root: Path, folders: tuple[str, ...]) -> list[Path]:
    return sorted(p for folder in folders for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts)


def code_citations(root: Path) -> dict[str, list[str]]:
    """Clause id → the source files of spec/reference/conformance that cite it (the registry aside)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in _python_files(root, CODE_DIRS):
        if path == root / "spec" / "clauses.py":  # the registry names every clause; it implements none
            continue
        for clause_id in set(_ID.findall(path.read_text(encoding="utf-8"))):
            found[clause_id].add(str(path.relative_to(root)))
    return {k: sorted(v) for k, v in found.items()}


def test_citations(root: Path) -> dict[str, list[str]]:
    """Clause id → ``file::test`` of every test marked with it."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in _python_files(root, TEST_DIRS):
        for ids, name in _MARK.findall(path.read_text(encoding="utf-8")):
            for clause_id in _ID.findall(ids):
                found[clause_id].add(f"{path.relative_to(root)}::{name}")
    return {k: sorted(v) for k, v in found.items()}


def mutants_breaking(clause_id: str) -> list[str]:
    """The model mutants that remove this clause's check or are caught by it, and the reference mutants."""
    model = [f"`{m.name}` (model)" for m in MUTANTS.values() if clause_id in (m.breaks, m.caught_by)]
    ref = [
        f"`{n}` (reference)"
        for n, text in REFERENCE_MUTANTS.items()
        if clause_id in _ID.findall(text.partition(":")[0])  # every clause its description opens with
    ]
    return model + ref


def clause_index(root: Path) -> str:
    """The page: one table per clause family."""
    code, tests = code_citations(root), test_citations(root)
    out = [
        "# Clause index\n",
        "Every clause of {doc}`the protocol <../protocol>`: the code that cites it, the tests marked "
        "with it (`@pytest.mark.clause`), and the mutants that break it (model mutants: "
        "`spec/model/_mutants.py`, run by `teamproto check --mutant`; reference mutants: "
        "`reference/_mutants.py`, run by `teamproto mutants`).\n",
    ]
    for family, title in FAMILIES.items():
        out.append(f"## {family}: {title}\n\nStatements: {{ref}}`{ANCHORS[family]}`.\n")
        for clause_id, text in spec.CLAUSES.items():
            if clause_id.split("-")[0] != family:
                continue
            files = ", ".join(f"`{f}`" for f in code.get(clause_id, [])) or "none"
            marked = tests.get(clause_id, [])
            named = ", ".join(f"`{t}`" for t in marked) or "**none**"
            broken = ", ".join(mutants_breaking(clause_id)) or "none"
            out.append(f"**{clause_id}** — {text}\n")
            out.append(f"- code: {files}\n- tests ({len(marked)}): {named}\n- mutants: {broken}\n")
    return "\n".join(out) + "\n"
