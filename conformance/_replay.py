"""Replaying test vectors through a driver: after every step the implementation's snapshot must
abstract to the model's state (``conformance._abstract.abstract``)."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

from spec import invariants

from ._abstract import (
    abstract,
    approval_labels,
    canonical_ids,
    differences,
    message_label,
    plan_labels,
    shutdown_labels,
)
from ._actors import decision_actors, event_actor_problems
from ._cases import Case, Session, group_of
from ._client import Crashed
from ._refusals import refusal_problem
from ._translate import clauses_of, restart_clauses


def references(snap: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Label → the implementation's own id, per kind of reference a request may hold: approvals,
    shutdown requests, plans, and owed messages (``<message type>:<label>``, an owed entry first)."""
    labels = {**approval_labels(snap), **shutdown_labels(snap), **plan_labels(snap)}
    owed: dict[str, str] = {}
    for entry in sorted(snap.get("outbox_entry", []), key=lambda o: o["status"] != "owed"):
        message = entry["message"]
        owed.setdefault(f"{message['message_type']}:{message_label(message, labels)}", entry["message_id"])
    return {
        "$approval": {label: pid for pid, label in approval_labels(snap).items()},
        "$shutdown": {label: pid for pid, label in shutdown_labels(snap).items()},
        "$plan": {label: pid for pid, label in plan_labels(snap).items()},
        "$outbox": owed,
    }


def resolve(request: dict[str, Any], snap: dict[str, Any]) -> dict[str, Any]:
    """Replace ``{"$approval": label}`` (and ``$shutdown``, ``$plan``, ``$outbox``) by the implementation's
    own id for that label, read from its snapshot."""
    found = references(snap)
    out = copy.deepcopy(request)
    for key, value in request.items():
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in found:
            kind, label = next(iter(value.items()))
            out[key] = found[kind].get(label, f"unknown:{label}")
    return out


def vector_clauses(vector: dict[str, Any]) -> list[str]:
    clauses = {c for op in vector["operations"] for c in clauses_of(op)}
    clauses |= {c for step in vector["steps"] if "refused" in step for c in step["clauses"]}
    if any("crash_after" in step for step in vector["steps"]):
        clauses |= {"REC-1", "REC-2"}
    return sorted(clauses)


def missing_capabilities(operations: list[str], crash_steps: list[str], caps: dict[str, Any]) -> list[str]:
    have = set(caps.get("operations", []))
    missing = [op for op in operations if op not in have]
    steps = set(caps.get("write_steps", []))
    missing += [f"arm_crash {step}" for step in crash_steps if step not in steps]
    return sorted(set(missing))


def run_vector(
    command: str, document: dict[str, Any], vector: dict[str, Any], caps: dict[str, Any], root: Path
) -> Case:
    case = Case(
        vector["name"],
        "vectors",
        group_of(vector["operations"]),
        f"{document['config']}: {' → '.join(s['operation'] for s in vector['steps'])}",
        vector_clauses(vector),
    )
    crash_steps = [s["crash_after"] for s in vector["steps"] if "crash_after" in s]
    missing = missing_capabilities(vector["operations"], crash_steps, caps)
    if missing:
        return case.unimplemented(missing)
    started = time.monotonic()
    session = Session(command, document["init"], root)
    try:
        session.start()
        session.snapshot()
        _steps(case, session, vector, caps)
    except Crashed as error:
        case.fail(f"the process died unexpectedly ({error})", ["REC-2"], session.trace)
    finally:
        session.close()
        case.seconds = time.monotonic() - started
    return case


def _steps(case: Case, session: Session, vector: dict[str, Any], caps: dict[str, Any]) -> None:
    """Each step, then its checks: the snapshot abstracts to the model's state, and every state and
    step invariant holds on the implementation's own snapshot (what the abstraction leaves out —
    the audit log, ids, message bodies — is still read by the invariants, AUD-5, INV-1 …)."""
    ids: dict[str, str] = {}
    before = canonical_ids(session.last)
    crashed = ""  # the operation the last crash cut short: its restart is judged on its clauses
    cut = ""  # the same, until that restart: only it may append that operation's events (AUD-1)
    for step in vector["steps"]:
        op = step["operation"]
        clauses = restart_clauses(crashed) if op == "restart" else clauses_of(op)
        ran: tuple[str, ...] = (cut, op) if op == "restart" else (op,)  # the operations it took (AUD-1)
        cut = "" if op == "restart" else cut
        if "refused" in step:
            ran = ()
            if op not in caps["operations"]:  # a call the driver lacks is not sent (the vector still runs)
                continue
            clauses = tuple(step["clauses"])  # the refusing guard's, not every clause of the operation
            if not _refused(case, session, step, clauses):
                return
        elif op == "restart":
            session.start()
        else:
            request = resolve(step["request"], session.last)
            if "crash_after" in step:
                crashed = cut = op
                reply = session.crash_call(request, step["crash_after"])
                if reply is not None:
                    case.fail(
                        f"armed to crash after {step['crash_after']}, {op} did not reach it", clauses, session.trace
                    )
                    return
                continue
            reply = session.call(request)
            if reply["type"] != "ok":
                case.fail(f"{op} was refused, but the model takes it", clauses, session.trace)
                return
            problem = _id_problem(op, request, reply, ids)
            if problem:
                case.fail(problem, ("MSG-4", "INV-6"), session.trace)
                return
        snap = session.snapshot()
        actual = abstract(snap)
        if actual != step["expect"]:
            lines = differences(step["expect"], actual)
            what = f"the restart after a crash in {crashed}" if op == "restart" else op
            case.fail(
                f"after {what}: the snapshot does not abstract to the model's state", clauses, session.trace + lines
            )
            return
        after = canonical_ids(snap)
        problems = invariant_problems(before, after, snap) + actor_problems(before, after, ran, session)
        if problems:
            case.fail(f"after {op}: {problems[0][1]}", [c for c, _ in problems], session.trace)
            return
        world = world_problems(session, caps, snap)
        if world:
            case.fail(f"after {op}: {world[0]}", WORLD_CLAUSES, session.trace)
            return
        before = after
        if (
            step.get("restart_holds")
            and "restart" in caps["operations"]
            and not _quietly_restarted(case, session, step)
        ):
            return


def _refused(case: Case, session: Session, step: dict[str, Any], clauses: tuple[str, ...]) -> bool:
    """A call the model refuses here, by one guard alone, answered as :func:`refusal_problem`
    says; the snapshot is then checked as after any step, against the state before the call."""
    reply = session.call(resolve(step["request"], session.last))
    problem = refusal_problem(step["operation"], reply, step["refused"])
    if problem:
        case.fail(problem, clauses, session.trace)
        return False
    return True


def _quietly_restarted(case: Case, session: Session, step: dict[str, Any]) -> bool:
    """REC-1, REC-2: the driver restarts with nothing crashed where the model's reconciliation
    changes nothing (the vector's ``restart_holds``): the snapshot must abstract as before."""
    reply = session.call({"type": "restart"})
    if reply["type"] != "ok":
        case.fail("a restart with nothing crashed was refused", ("REC-1", "REC-2"), session.trace)
        return False
    actual = abstract(session.snapshot())
    if actual != step["expect"]:
        lines = differences(step["expect"], actual)
        case.fail(
            f"after a restart with nothing crashed, following {step['operation']}: the snapshot no longer "
            "abstracts to the model's state (its reconciliation changes nothing here)",
            ("REC-1", "REC-2"),
            session.trace + lines,
        )
        return False
    return True


CHAIN = next(inv for inv in invariants.STATE_INVARIANTS if inv.name == "audit_log_is_a_chain")
"""AUD-5's chain, judged on the implementation's own snapshot: :func:`canonical_ids` renames its
ids for the other predicates, and a renamed entry no longer has the hash its fields had."""


def actor_problems(
    before: dict[str, Any], after: dict[str, Any], operations: tuple[str, ...], session: Session
) -> list[tuple[str, str]]:
    """:func:`conformance._actors.event_actor_problems` as (clause, message), the session's team's
    Lead the Lead."""
    lead = session.impl.init_request["team"]["lead"]
    return [("AUD-1", f"AUD-1 event actors: {m}") for m in event_actor_problems(before, after, operations, lead)]


def invariant_problems(before: dict[str, Any], after: dict[str, Any], own: dict[str, Any]) -> list[tuple[str, str]]:
    """Every violated state and step invariant, as (clause, message), on ``after`` (the
    implementation's snapshot ``own`` with canonical ids) and ``before``; the audit chain on
    ``own``. A snapshot the invariants cannot read (a record missing a field they read) is reported
    as such."""
    try:
        found = invariants.check_state(after) + (invariants.check_step(before, after) if before else [])
        found = [(inv, message) for inv, message in found if inv is not CHAIN]
        found += [(CHAIN, message) for message in CHAIN.check(own)]
    except (KeyError, TypeError) as error:
        return [("DRV-2", f"the snapshot lacks what the invariants read ({error!r})")]
    out = [(inv.clause, f"{inv.clause} {inv.name}: {message}") for inv, message in found]
    return out + [("AUD-2", f"AUD-2 decision_actors: {message}") for message in decision_actors(own)]


WORLD = "world.calls"
"""The read of the external system's calls (``capabilities.reads``): ``{"calls": [key, …]}``, the
idempotency key of every call the implementation made to a protected tool, in order."""
WORLD_CLAUSES = ("INV-1", "APR-6", "APR-8")


def world_problems(session: Session, caps: dict[str, Any], own: dict[str, Any]) -> list[str]:
    """The external system against the stores (INV-1, APR-6, APR-8), when the driver can read it:
    :func:`spec.invariants.world_agrees`, the check the explorer runs on the model's world. Only
    this sees a recovery that calls again and records what the model records: the stores alone
    look right."""
    if WORLD not in caps.get("reads", []):
        return []
    reply = session.impl.call({"type": WORLD})
    calls = reply.get("result", {}).get("calls") if reply["type"] == "ok" else None
    if not isinstance(calls, list) or not all(isinstance(key, str) for key in calls):
        session.note(WORLD, reply)
        return [f"{WORLD} must answer {{'calls': [idempotency key, …]}}; got {reply.get('result', reply)}"]
    return invariants.world_agrees(calls, own.get("tool_execution", []))


def _id_problem(op: str, request: dict[str, Any], reply: dict[str, Any], ids: dict[str, str]) -> str | None:
    """Ids are opaque: a retry must give the same id, two requests two ids (MSG-4)."""
    if op not in ("approval.request", "approval.retry"):
        return None
    pid = reply.get("result", {}).get("protocol_id")
    if not isinstance(pid, str) or not pid:
        return f"{op} replied without a protocol_id"
    label = f"{request['actor']['member_id']}/{request['tool_call_id']}"
    if ids.setdefault(label, pid) != pid:
        return f"{op} for {label} gave id {pid!r}, an earlier call gave {ids[label]!r}: ids must be stable"
    if sum(1 for other in ids.values() if other == pid) > 1:
        return f"{op} for {label} gave id {pid!r}, already the id of another request: ids must be unique"
    return None


__all__ = ["WORLD", "invariant_problems", "missing_capabilities", "resolve", "run_vector", "world_problems"]
