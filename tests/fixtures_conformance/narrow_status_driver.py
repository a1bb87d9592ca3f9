"""A driver whose status read shows too little: the reference behind a proxy that changes only the
replies to ``protocol.status`` (AUD-4). With ``drop`` it leaves out the last record of every answer
that holds one (a caller missing its own request); with ``refuse`` it refuses every read, definite.
Leaking no record, both must still fail the suite's ``status-scope`` case: a scope check that
accepts a subset, or any refusal, passes a status tool that shows nobody anything.
``tests/test_conformance.py`` runs the suite against both.

    teamproto conformance --driver "python tests/fixtures_conformance/narrow_status_driver.py drop"
"""

from __future__ import annotations

import json
import sys
from typing import Any

from _proxy import serve  # the fixtures' folder is on sys.path: this file runs as a script


def main(mode: str) -> int:
    def answer(kind: str | None, reply: dict[str, Any], line: str) -> str:
        if kind != "protocol.status" or reply.get("type") != "ok":
            return line
        if mode == "refuse":
            error = {"code": "refused", "definite": True, "message": "status reads are not served"}
            return json.dumps({"in_reply_to": reply["in_reply_to"], "type": "error", "error": error}) + "\n"
        records = reply["result"]["records"]
        return json.dumps({**reply, "result": {"records": records[:-1]}}) + "\n"

    return serve(answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
