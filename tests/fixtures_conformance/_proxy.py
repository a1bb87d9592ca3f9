"""The reference driver behind a proxy (the fixture drivers' one loop): each request line goes to
a child ``python -m reference.driver`` unchanged, and each reply line comes back as ``answer``
makes it from the request's ``type`` (None for a line that is not a JSON object with one), the
reply and the reply's line (the request's line is :data:`request`, for a fixture that answers
some callers only). The proxy exits with the child (an armed crash ends both)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
request = ""
"""The line of the request being answered."""


def kind_of(line: str) -> str | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None  # a line that is not JSON is refused like any request (schema_invalid)
    return doc.get("type") if isinstance(doc, dict) and isinstance(doc.get("type"), str) else None


def serve(answer: Callable[[str | None, dict[str, Any], str], str]) -> int:
    child = subprocess.Popen(
        [sys.executable, "-m", "reference.driver"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        bufsize=1,
    )
    assert child.stdin is not None and child.stdout is not None
    global request
    for line in sys.stdin:
        kind, request = kind_of(line), line
        child.stdin.write(line if line.endswith("\n") else line + "\n")
        child.stdin.flush()
        reply_line = child.stdout.readline()
        if not reply_line:  # the reference exited (an armed crash): so does this driver
            return child.wait()
        sys.stdout.write(answer(kind, json.loads(reply_line), reply_line))
        sys.stdout.flush()
    child.stdin.close()
    return child.wait()
