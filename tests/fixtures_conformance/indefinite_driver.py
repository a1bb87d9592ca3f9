"""A driver whose refusals never say ``definite``, though they changed nothing.

It is the reference driver (``python -m reference.driver``, started as a child) behind a proxy
that forwards every request line and every reply line unchanged, except that each ``error`` reply
says ``"definite": false``. Its refusals carry the right code and change nothing, so only the
bad-input judge's rule that a refusal which changed nothing must say so (DESIGN rule 8) can fail
it. ``tests/test_conformance.py`` runs the suite against it (an outside review found the rule
exercised by no driver: the judge could drop it and every test passed).

    teamproto conformance --driver "python tests/fixtures_conformance/indefinite_driver.py"
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    for line in sys.stdin:
        child.stdin.write(line if line.endswith("\n") else line + "\n")
        child.stdin.flush()
        answer = child.stdout.readline()
        if not answer:  # the reference exited (an armed crash): so does this driver
            return child.wait()
        reply = json.loads(answer)
        if reply.get("type") == "error" and isinstance(reply.get("error"), dict):
            reply["error"]["definite"] = False
            answer = json.dumps(reply) + "\n"
        sys.stdout.write(answer)
        sys.stdout.flush()
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
