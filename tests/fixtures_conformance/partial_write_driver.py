"""A driver that refuses with the right typed error after writing part of a record.

It is the reference driver (``python -m reference.driver``, started as a child) behind a proxy
that forwards every request line and every reply line unchanged, except this: each request the
implementation refused (an ``error`` reply) counts as one write that landed before the refusal,
and every later ``snapshot`` reply shows it, the first member record's ``version`` moved on by
one per refusal (as a compare-and-set of the member that went through before a later check
refused the call). ``init`` (a new data directory) starts the count again.

So its refusals carry the right code and say ``definite``, and only the snapshots before and
after tell that something changed: the bad-input judge must fail it (DESIGN rule 8; a definite
refusal changed nothing). ``tests/test_conformance.py`` runs the suite against it.

    teamproto conformance --driver "python tests/fixtures_conformance/partial_write_driver.py"
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
UNCOUNTED = {"init", "capabilities", "snapshot"}  # refusals of these write nothing, even here


def _kind(line: str) -> str | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None  # a line that is not JSON is refused like any request (schema_invalid)
    return doc.get("type") if isinstance(doc, dict) and isinstance(doc.get("type"), str) else None


def _altered(reply: dict[str, Any], writes: int) -> dict[str, Any]:
    snapshot = reply.get("result", {}).get("snapshot")
    if writes and isinstance(snapshot, dict) and snapshot.get("member"):
        first = snapshot["member"][0]
        first["version"] = first.get("version", 0) + writes
    return reply


def main() -> int:
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
    writes = 0
    for line in sys.stdin:
        kind = _kind(line)
        child.stdin.write(line if line.endswith("\n") else line + "\n")
        child.stdin.flush()
        answer = child.stdout.readline()
        if not answer:  # the reference exited (an armed crash): so does this driver
            return child.wait()
        reply = json.loads(answer)
        if kind == "init":
            writes = 0
        elif kind == "snapshot":
            answer = json.dumps(_altered(reply, writes)) + "\n"
        elif reply.get("type") == "error" and kind not in UNCOUNTED:
            writes += 1
        sys.stdout.write(answer)
        sys.stdout.flush()
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
