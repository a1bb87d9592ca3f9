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
import sys
from typing import Any

from _proxy import serve  # the fixtures' folder is on sys.path: this file runs as a script


def answer(kind: str | None, reply: dict[str, Any], line: str) -> str:
    if reply.get("type") == "error" and isinstance(reply.get("error"), dict):
        reply["error"]["definite"] = False
        return json.dumps(reply) + "\n"
    return line


if __name__ == "__main__":
    sys.exit(serve(answer))
