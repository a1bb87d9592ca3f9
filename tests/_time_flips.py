"""The reference's comparisons against time, found in its syntax tree, and each one's boundary flip.

A *time comparison* is an ordering (``<``, ``<=``, ``>``, ``>=``) whose operands read the clock or a
record's time: a name or attribute among :data:`TIME_NAMES`, or a subscript by a key among them
(``doc["deadline"]``, ``row.doc["last_heartbeat_at"]``). Each is known by its module, the function
it lies in and its own source text, so that it keeps its name when lines move.

:func:`run_flipped` runs pytest in a fresh process with one comparison's boundary flipped
(``>`` and ``>=`` swapped, ``<`` and ``<=`` swapped): an import hook serves the module compiled from
its syntax tree with that one operator replaced; nothing on disk changes. Used by
``tests/test_time_comparisons.py``; ``python -m tests._time_flips [KEY …]`` prints every comparison
(or runs the named flips against ``tests/test_deadline_boundaries.py``) when looking for the test
that a flip should fail.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "reference"
TIME_NAMES = frozenset(
    {"now", "deadline", "unit_deadline", "monotonic", "last_beat", "last_heartbeat_at", "claimed_at", "max_age"}
)
"""Names whose comparison is a comparison against time (the clock, a deadline, a beat's age)."""
FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt}
ENV = "TEAMPROTO_TIME_FLIP"


def _reads_time(node: ast.expr) -> bool:
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and part.id in TIME_NAMES:
            return True
        if isinstance(part, ast.Attribute) and part.attr in TIME_NAMES:
            return True
        if isinstance(part, ast.Constant) and isinstance(part.value, str) and part.value in TIME_NAMES:
            return True
    return False


def _walk(tree: ast.Module, source: str) -> Iterator[tuple[str, ast.Compare, str]]:
    """(the enclosing function's qualified name, the comparison, its text), in source order."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, where = stack.pop()
        for child in reversed(list(ast.iter_child_nodes(node))):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{where}.{child.name}" if where else child.name
            if (
                isinstance(child, ast.Compare)
                and len(child.ops) == 1
                and type(child.ops[0]) in FLIPPED
                and (_reads_time(child.left) or _reads_time(child.comparators[0]))
            ):
                yield where, child, ast.get_source_segment(source, child) or ""
            stack.append((child, inner))


def comparisons() -> dict[str, tuple[str, int]]:
    """Every time comparison of ``reference/``: its key ``module:function:text`` -> (file, line).
    Two alike in one function are told apart by ``#2``, ``#3`` after the text."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        module = f"reference.{path.stem}"
        for where, node, text in sorted(_walk(ast.parse(source), source), key=lambda f: (f[1].lineno, f[1].col_offset)):
            key = f"{module}:{where}:{text}"
            n = 1
            while (key if n == 1 else f"{key}#{n}") in found:
                n += 1
            found[key if n == 1 else f"{key}#{n}"] = (str(path.relative_to(ROOT)), node.lineno)
    return found


def flipped_module(key: str) -> tuple[str, Any]:
    """The module named in ``key`` and its code with that comparison's operator flipped."""
    module, where, text = key.split(":", 2)
    text, _, nth = text.partition("#")
    path = PACKAGE / f"{module.rsplit('.', 1)[1]}.py"
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    matches = [node for w, node, t in _walk(tree, source) if w == where and t == text]
    matches.sort(key=lambda node: (node.lineno, node.col_offset))
    index = int(nth) - 1 if nth else 0
    if index >= len(matches):
        raise LookupError(f"no time comparison {key!r} in {path}")
    node = matches[index]
    node.ops = [FLIPPED[type(node.ops[0])]()]
    return module, compile(tree, str(path), "exec")


class _Flip(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, module: str, code: Any) -> None:
        self.module, self.code = module, code

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != self.module:
            return None
        origin = str(PACKAGE / f"{fullname.rsplit('.', 1)[1]}.py")
        return importlib.util.spec_from_file_location(fullname, origin, loader=self)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self.code, module.__dict__)


def install(key: str) -> None:
    """Serve the flipped module to every later import of it in this process."""
    module, code = flipped_module(key)
    assert module not in sys.modules, f"{module} was imported before its flip"
    sys.meta_path.insert(0, _Flip(module, code))


def run_flipped(key: str, tests: Sequence[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """pytest on ``tests`` in a fresh process with ``key``'s comparison flipped (stops at the first
    failure; plugins that reorder or spread tests off)."""
    env = {**os.environ, ENV: key}
    env.pop("TEAMPROTO_MUTANT", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "tests._time_flips", "--pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--pytest"]:
        import pytest

        install(os.environ[ENV])
        return int(pytest.main(argv[1:]))
    if not argv:
        print(json.dumps(comparisons(), indent=1))
        return 0
    for key in argv:
        result = run_flipped(key, ["tests/test_deadline_boundaries.py"])
        print(f"{'caught' if result.returncode == 1 else f'exit {result.returncode}'}: {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
