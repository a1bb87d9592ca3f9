"""The status read (AUD-4): a caller sees only the protocol records it takes part in.

``team_protocol_status`` is the one agent-facing read of the protocol records. The case sets up a
team where two members each requested an approval (and, where the driver implements them, the
Lead asked a member to shut down and a member submitted a plan), then asks, as each member, the
Lead and a stranger, for no id, for every id in the snapshot (its own and everyone else's) and for
an unknown id. Each answer must hold exactly the caller's own matching records — who takes part is
read off the snapshot's records, by the protocol's roles — each with the status the snapshot gives
it, and the snapshot must not change. A stranger may instead be refused with a definite typed
error. The world is read with the approvals' deadlines passed and no monitor pass since: a read
that moved them on (ran the monitor, or judged a deadline itself) would show or leave another
status than the stores hold.

The driver implements it as the request ``protocol.status`` (``actor``, optional ``protocol_id``;
the result ``{"records": [...]}``, each with its ``protocol_id`` and ``status``), listed in its
capabilities' ``reads``; a driver that does not list it gets UNIMPLEMENTED.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from spec.ids import canonical_json

from ._badinput import DRAIN_OPS, PLAN_OPS, TEAM, _approved_plan, _shutdown, request, review
from ._cases import Case, Session
from ._client import Crashed

READ = "protocol.status"
PARTIES = {
    "operation_approval": ("requester_id", "responder_id"),
    "plan_approval": ("requester_id", "responder_id"),
    "shutdown_request": ("requester_id", "target_id"),
}
"""Who takes part in a record of each kind (AUD-4's "records the caller takes part in")."""
CALLERS = ("m0", "m1", "lead", "stranger")
CLAUSES = ("AUD-4",)


def _world(session: Session, caps: dict[str, Any]) -> None:
    """m0 and m1 each request an approval, and the Lead approves m0's; the Lead asks m1 to shut
    down; m0 submits a plan, which the Lead approves; then the approvals' deadlines pass (ttl 1),
    with no monitor pass: they are still ``approved`` and ``requested`` in the stores."""
    session.start()
    for member, task in (("m0", "t0"), ("m1", "t1")):
        session.call({"type": "task.claim", "member_id": member, "task_id": task})
    reply = session.call(request())
    session.call(request(member="m1", slot=1, task="t1"))
    pid = reply.get("result", {}).get("protocol_id")
    if pid is not None:
        session.call(review(pid))
    operations = set(caps.get("operations", []))
    if set(DRAIN_OPS) <= operations:
        session.call({"type": "shutdown.request", **_shutdown("m1")})
    if set(PLAN_OPS) <= operations:
        _approved_plan(session, "m0", "t0", deliver=False)
    session.call({"type": "tick", "seconds": 2})


def own_records(snapshot: dict[str, Any], caller: str) -> set[str]:
    return {
        doc["protocol_id"]
        for kind, roles in PARTIES.items()
        for doc in snapshot.get(kind, [])
        if caller in (doc.get(role) for role in roles)
    }


def statuses(snapshot: dict[str, Any]) -> dict[str, str]:
    """Each protocol record's status in the stores, by its protocol id."""
    return {doc["protocol_id"]: doc["status"] for kind in PARTIES for doc in snapshot.get(kind, [])}


def _problem(reply: dict[str, Any], caller: str, expected: list[str], stored: dict[str, str]) -> str | None:
    if reply["type"] == "error":
        if caller == "stranger" and reply["error"]["definite"]:
            return None  # a caller that is no party of the team may be refused outright
        return f"refused with {reply['error']['code']}; expected the caller's records {expected}"
    records = reply.get("result", {}).get("records")
    shaped = all(isinstance(r, dict) and "protocol_id" in r and "status" in r for r in records or [])
    if not isinstance(records, list) or not shaped:
        return (
            f"the result must be {{'records': [...]}}, each with its protocol_id and status; got {reply.get('result')}"
        )
    got = sorted(str(r["protocol_id"]) for r in records)
    if got != expected:
        leaked = sorted(set(got) - set(expected))
        return f"answered {got}, expected {expected}" + (f": {leaked} are not the caller's" if leaked else "")
    for record in records:
        if record["status"] != stored.get(str(record["protocol_id"])):
            return (
                f"answered {record['protocol_id']} as {record['status']!r}; the stores hold "
                f"{stored.get(str(record['protocol_id']))!r} (a read shows the record as it is)"
            )
    return None


def run_status(command: str, caps: dict[str, Any], root: Path) -> Case:
    case = Case("status-scope", "bad input", "messages", "a status read shows each caller only its records", [*CLAUSES])
    if READ not in caps.get("reads", []):
        return case.unimplemented([READ])
    started = time.monotonic()
    session = Session(command, TEAM, root)
    try:
        _world(session, caps)
        before = session.snapshot()
        stored = statuses(before)
        ids = sorted(own_records(before, "m0") | own_records(before, "m1") | own_records(before, "lead"))
        for caller in CALLERS:
            own = own_records(before, caller)
            for wanted in (None, *ids, "no-such-id"):
                ask: dict[str, Any] = {"type": READ, "actor": {"member_id": caller}}
                if wanted is not None:
                    ask["protocol_id"] = wanted
                expected = sorted(own) if wanted is None else [wanted] if wanted in own else []
                problem = _problem(session.call(ask), caller, expected, stored)
                if problem:
                    asked = "everything" if wanted is None else wanted
                    return case.fail(f"{caller} asking for {asked}: {problem}", CLAUSES, session.trace)
        if canonical_json(session.snapshot()) != canonical_json(before):
            case.fail("the snapshot changed: a status read must change nothing", CLAUSES, session.trace)
    except Crashed as error:
        case.fail(f"the process died ({error})", CLAUSES, session.trace)
    finally:
        session.close()
        case.seconds = time.monotonic() - started
    return case


__all__ = ["READ", "run_status"]
