"""The reference with one behaviour altered, chosen by name, for each branch of the random
programs' and the bad-input judges that no other fixture, mutant or the sample makes fire.

It is the reference driver (``python -m reference.driver``, started as a child) behind a proxy
that forwards every request line and every reply line unchanged except as its mode (its one
argument) says:

``drift``
    after its first operation that was answered ``ok``, every snapshot omits the team's last task
    record: the snapshot no longer abstracts to the model's state;
``unaudited``
    every snapshot's audit log is empty, which the abstraction does not read: only the invariants
    checked after every step see it (AUD-5);
``review-refused``
    each review answered ``ok`` is reported as a definite refusal (``review_conflict``);
``one-id``
    every ``approval.request`` answered ``ok`` reports one and the same ``protocol_id`` (MSG-4):
    two requests one id, a retry another id than the snapshot's;
``crash-ignored``
    ``arm_crash`` is answered ``ok`` by the proxy and never reaches the reference: the operation
    armed to crash replies;
``deviation-ignored``
    the deviation of a step the plan does not have (``plan.step`` with step id ``s9``) is refused
    ``plan_deviation`` by the proxy and never reaches the reference: the execution runs on;
``dies-on-tick``
    the proxy exits, with no reply, on the first ``tick``: the driver dies;
``wrong-code``
    every refusal but a deviation's (``plan_deviation``) carries the code ``illegal_transition``;
``counted-delivery``
    every ``message.deliver`` answered ``ok`` also reports how many deliveries this process made:
    a redelivery's result is not the first one's;
``refusal-drifts``
    once an operation was refused, definite, every snapshot omits the team's last task record: the
    refusal changed what the model decides, though it said it changed nothing;
``status-writes``
    once a status read (``protocol.status``) was answered, every snapshot omits the team's last
    task record: a read that writes (AUD-4), each answer still exactly the caller's records.

``tests/test_conformance.py`` runs the suite against each mode (an outside review found that a
judge could drop a branch and every test still passed).

    teamproto conformance --driver "python tests/fixtures_conformance/altered_driver.py drift"
"""

from __future__ import annotations

import json
import sys
from typing import Any

from _requests import answer_here, request_of, serve_requests  # the fixtures' folder is on sys.path

CONTROL = {"init", "capabilities", "snapshot", "arm_crash"}  # the driver protocol's own requests
MODES = (
    "drift",
    "unaudited",
    "review-refused",
    "one-id",
    "crash-ignored",
    "deviation-ignored",
    "dies-on-tick",
    "wrong-code",
    "counted-delivery",
    "refusal-drifts",
    "status-writes",
)
ONE_ID = "protocol-00000000000000aa"


def main(mode: str) -> int:
    if mode not in MODES:
        print(f"altered_driver.py: the mode is one of {', '.join(MODES)}", file=sys.stderr)
        return 2
    seen = {"operations": 0, "deliveries": 0, "refusals": 0, "reads": 0}

    def rewrite(line: str) -> str | None:
        request = request_of(line)
        kind = request.get("type")
        if mode == "dies-on-tick" and kind == "tick":
            return None
        if mode == "crash-ignored" and kind == "arm_crash":
            return answer_here(line, {"type": "ok", "result": {}})
        step = request.get("step")
        if mode == "deviation-ignored" and kind == "plan.step" and isinstance(step, dict) and step.get("id") == "s9":
            error = {"code": "plan_deviation", "definite": True, "message": "no step s9 in the plan"}
            return answer_here(line, {"type": "error", "error": error})
        return line

    def answer(kind: str | None, reply: dict[str, Any], line: str) -> str:
        ok, result = reply.get("type") == "ok", reply.get("result")
        if kind == "init":
            seen.update(dict.fromkeys(seen, 0))  # a new process or data directory
        elif ok and kind == "protocol.status":
            seen["reads"] += 1
        elif ok and kind not in CONTROL:
            seen["operations"] += 1
        elif reply.get("type") == "error" and kind not in CONTROL:
            seen["refusals"] += 1
        snapshot = result.get("snapshot") if ok and kind == "snapshot" and isinstance(result, dict) else None
        if isinstance(snapshot, dict):
            counted = {"drift": "operations", "refusal-drifts": "refusals", "status-writes": "reads"}
            drifts = seen[counted[mode]] if mode in counted else 0
            if drifts and snapshot.get("task"):
                snapshot["task"] = snapshot["task"][:-1]
            elif mode == "unaudited":
                snapshot["audit_entry"] = []
            else:
                return line
        elif mode == "review-refused" and ok and kind == "approval.review":
            error = {"code": "review_conflict", "definite": True, "message": "reviewed already"}
            reply = {"in_reply_to": reply["in_reply_to"], "type": "error", "error": error}
        elif mode == "one-id" and ok and kind == "approval.request" and isinstance(result, dict):
            result["protocol_id"] = ONE_ID
        elif mode == "wrong-code" and reply.get("type") == "error" and reply["error"]["code"] != "plan_deviation":
            reply["error"]["code"] = "illegal_transition"
        elif mode == "counted-delivery" and ok and kind == "message.deliver" and isinstance(result, dict):
            seen["deliveries"] += 1
            result["deliveries"] = seen["deliveries"]
        else:
            return line
        return json.dumps(reply) + "\n"

    return serve_requests(rewrite, answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
