"""A driver whose status read shows too little: the reference behind a proxy that changes only the
replies to ``protocol.status`` (AUD-4). With ``drop`` it leaves out the last record of every answer
that holds one (a caller missing its own request); with ``refuse`` it refuses every read, definite;
with ``indefinite`` it refuses the stranger's reads only (a caller no team record names, which
the suite lets a driver refuse), saying the refusal may have changed something. Leaking no
record, each must still fail the suite's ``status-scope`` case: a scope check that accepts a
subset, any refusal, or a refusal that is not definite (a read refused must be known to have
changed nothing) passes a status tool that shows too little. ``tests/test_conformance.py`` runs
the suite against each.

    teamproto conformance --driver "python tests/fixtures_conformance/narrow_status_driver.py drop"
"""

from __future__ import annotations

import json
import sys
from typing import Any

import _proxy  # the fixtures' folder is on sys.path: this file runs as a script
from _proxy import serve


def main(mode: str) -> int:
    def answer(kind: str | None, reply: dict[str, Any], line: str) -> str:
        if kind != "protocol.status" or reply.get("type") != "ok":
            return line
        if mode == "indefinite":
            if json.loads(_proxy.request).get("actor", {}).get("member_id") != "stranger":
                return line
            error = {"code": "refused", "definite": False, "message": "strangers are not served"}
            return json.dumps({"in_reply_to": reply["in_reply_to"], "type": "error", "error": error}) + "\n"
        if mode == "refuse":
            error = {"code": "refused", "definite": True, "message": "status reads are not served"}
            return json.dumps({"in_reply_to": reply["in_reply_to"], "type": "error", "error": error}) + "\n"
        records = reply["result"]["records"]
        return json.dumps({**reply, "result": {"records": records[:-1]}}) + "\n"

    return serve(answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
