"""Which problem of which check some model mutant makes the explorer report.

A *problem line* is a line of a check of :mod:`spec.invariants` or :mod:`spec.safety` that reports
a problem: a call ``problems.append(…)`` / ``out.append(…)`` (or ``extend``) of a message, or a
``return [message, …]``. Each is known by its file, its function and its first line of source, so
that it keeps its name when lines move. A problem line no mutant reaches is one that could be
weakened or deleted (an outside review weakened two checks this way) with only a review to see it.

``python -m model_tests._check_lines`` explores every model mutant until its named check catches
it (as ``model_tests/test_model_mutants.py`` does), traces which problem lines run, and prints
the unreached ones as JSON. It must run interpreted (``TEAMPROTO_PURE=1``): compiled code has no
line events. ``model_tests/test_check_lines.py`` runs it.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from spec.explore import explore
from spec.model import MUTANTS, Model, load_config

ROOT = Path(__file__).resolve().parents[1]
FILES = (ROOT / "spec" / "invariants.py", ROOT / "spec" / "safety.py")
"""The sources (not ``module.__file__``: where the compiled build runs, that is the extension module)."""


def problem_lines() -> dict[str, tuple[str, int]]:
    """Every problem line: ``file:function:first line of source`` -> (file, line number)."""
    found: dict[str, tuple[str, int]] = {}
    for path in FILES:
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for function in ast.walk(ast.parse(source)):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                reports = (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "extend")
                    and bool(node.args)
                    and isinstance(node.args[0], (ast.JoinedStr, ast.Constant))
                ) or (isinstance(node, ast.Return) and isinstance(node.value, ast.List) and bool(node.value.elts))
                if reports:
                    key = f"{path.name}:{function.name}:{lines[node.lineno - 1].strip()}"
                    found.setdefault(key, (str(path), node.lineno))
    return found


def reached_by_mutants() -> set[tuple[str, int]]:
    """(file, line) of every line of the two modules that ran while the mutants were explored."""
    files = {str(path) for path in FILES}
    hits: set[tuple[str, int]] = set()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            hits.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in files else None

    sys.settrace(calls)
    try:
        for name in sorted(MUTANTS):
            mutant = MUTANTS[name]
            explore(Model(load_config(mutant.config), name), stop_on=mutant.caught_by)
    finally:
        sys.settrace(None)
    return hits


def unreached() -> list[str]:
    hits = reached_by_mutants()
    if not hits:
        raise SystemExit("no line of spec.invariants or spec.safety ran: run interpreted (TEAMPROTO_PURE=1)")
    return sorted(key for key, where in problem_lines().items() if where not in hits)


if __name__ == "__main__":
    print(json.dumps({"lines": len(problem_lines()), "unreached": unreached()}, indent=1))
