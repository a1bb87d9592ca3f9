"""A driver that loses a record when it is restarted after a SIGKILL, and only then.

It is the reference driver (``python -m reference.driver``, started as a child) behind a proxy
that forwards every request line and every reply line unchanged, except this: from its ``init``
on a data directory until it exits by itself (its input ended, or an armed crash ended the
reference: both come back from the proxy's loop) it keeps a marker file beside the directory,
``<data_dir>.held``. A SIGKILL of its process group leaves the marker behind; a process whose
``init`` finds it there (not made by itself) was started after a kill, and its snapshots, and
those of every later process on that directory, omit the team's last task record, as a recovery
that dropped a row it was rewriting when the kill came.

The team's tasks are made at ``init`` and never removed: no state of the model lacks one, so no
crash point of an operation explains such a snapshot. Armed crashes (``arm_crash``) and their
restarts, bad input and vectors find the reference; only the random programs' judgement after a
SIGKILL mid-operation can fail it (REC-2). ``tests/test_conformance.py`` runs the random programs
against it (an outside review made that judgement carry on from the last crash point instead of
failing, and every test passed).

    teamproto conformance --driver "python tests/fixtures_conformance/lossy_restart_driver.py"
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from _requests import request_of, serve_requests  # the fixtures' folder is on sys.path (a script)


def main() -> int:
    held: Path | None = None  # the marker of the data directory this process serves
    lost = False

    def rewrite(line: str) -> str:
        nonlocal held, lost
        request = request_of(line)
        if request.get("type") == "init" and isinstance(request.get("data_dir"), str):
            marker = Path(f"{request['data_dir']}.held")
            if held is not None and held != marker:
                held.unlink(missing_ok=True)  # a live process reused for another case's directory
            killed = marker.exists() and held != marker
            if killed:
                Path(f"{request['data_dir']}.lost").touch()
            lost = Path(f"{request['data_dir']}.lost").exists()
            marker.touch()
            held = marker
        return line

    def answer(kind: str | None, reply: dict[str, Any], line: str) -> str:
        snapshot = reply.get("result", {}).get("snapshot")
        if lost and kind == "snapshot" and isinstance(snapshot, dict) and snapshot.get("task"):
            snapshot["task"] = snapshot["task"][:-1]
            return json.dumps(reply) + "\n"
        return line

    try:
        return serve_requests(rewrite, answer)
    finally:  # not reached after a SIGKILL: that is what the marker tells the next process
        if held is not None:
            held.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
