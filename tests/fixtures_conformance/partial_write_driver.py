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
import sys
from typing import Any

from _proxy import serve  # the fixtures' folder is on sys.path: this file runs as a script

UNCOUNTED = {"init", "capabilities", "snapshot"}  # refusals of these write nothing, even here


def _altered(reply: dict[str, Any], writes: int) -> dict[str, Any]:
    snapshot = reply.get("result", {}).get("snapshot")
    if writes and isinstance(snapshot, dict) and snapshot.get("member"):
        first = snapshot["member"][0]
        first["version"] = first.get("version", 0) + writes
    return reply


def main() -> int:
    writes = 0

    def answer(kind: str | None, reply: dict[str, Any], line: str) -> str:
        nonlocal writes
        if kind == "init":
            writes = 0
        elif kind == "snapshot":
            return json.dumps(_altered(reply, writes)) + "\n"
        elif reply.get("type") == "error" and kind not in UNCOUNTED:
            writes += 1
        return line

    return serve(answer)


if __name__ == "__main__":
    sys.exit(main())
