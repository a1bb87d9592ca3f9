"""The README's example runs as written, twice in a row, and leaves nothing in the caller's folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("```python\nimport tempfile") + len("```python\n")
    return text[start : text.index("```", start)]


@pytest.mark.clause("SHD-5", "MEM-1")
def test_the_readme_example_runs_twice(tmp_path: Path) -> None:
    code = example()
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == []
