"""Log validation (trace validation): is a recorded log of a running implementation a behaviour of
the model? The log says what happened to each approval and when; it does not say which claims,
ticks, monitor passes, outbox sends, crashes and restarts came between. The validator searches
over all of those: it keeps every model state the log so far could have led to, and an event is
explained when some transition from one of them (silent steps first) shows exactly that event.

Format ``teamproto-events/1``, JSON lines (``teamproto conformance --export-log`` writes it from
the reference's audit log, a real clock's times put on whole ticks):

- line 1, the header: ``{"format": "teamproto-events/1", "members": ["m0", …], "tasks": ["t0", …],
  "lead": "lead"}``;
- then one event a line, in the order they happened:
  ``{"event": "approval.requested", "subject": <any id>, "actor": "m0", "at": 0.0, "ttl_seconds": 1}``;
  ``event`` is ``approval.`` + ``requested | approved | rejected | consumed | cancelled | expired``;
  ``subject`` is the approval's id, opaque (approvals are told apart by order of first appearance);
  ``at`` is the virtual time in seconds (whole ticks); ``ttl_seconds`` is on ``requested`` only;
  ``actor`` is who acted: the requester for ``requested``, ``consumed`` and ``cancelled`` (APR-3,
  APR-5, APR-9), the header's ``lead`` for ``approved`` and ``rejected`` (APR-4), ``monitor`` for
  ``expired`` (INV-12); a requester is one of the header's ``members``. An event by anyone else is
  no behaviour of the model: a member approving its own request, a request by a name the header
  does not list, or a member consuming or cancelling another's approval, is refused naming the event.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spec.model import Model, parse_config
from spec.model._state import State

from ._actors import ACTORS, MONITOR

EVENTS = ("requested", "approved", "rejected", "consumed", "cancelled", "expired")
MAX_STATES = 200_000


class Undecidable(Exception):
    pass


def read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines or lines[0].get("format") != "teamproto-events/1":
        raise Undecidable('the first line must be the header {"format": "teamproto-events/1", …}')
    return lines[0], lines[1:]


def _config(header: dict[str, Any], events: list[dict[str, Any]]) -> Any:
    ttls = {e["ttl_seconds"] for e in events if e["event"] == "approval.requested"}
    if len(ttls) > 1 or any(float(t) != int(t) or t < 1 for t in ttls):
        raise Undecidable(f"one whole-second ttl for every request is needed; the log has {sorted(ttls)}")
    if any(float(e["at"]) != int(e["at"]) for e in events):
        raise Undecidable("event times must be whole ticks (seconds of the virtual clock)")
    subjects = list(dict.fromkeys(e["subject"] for e in events))
    ttl = int(next(iter(ttls), 1))
    last = int(max((e["at"] for e in events), default=0))
    raw = {
        "description": "the model side of a log under validation",
        "members": len(header["members"]), "tasks": len(header["tasks"]), "approvals": max(1, len(subjects)),
        "plans": 0, "shutdowns": 0, "max_ticks": last + ttl + 1, "ttl_ticks": ttl, "unit_ticks": 10**9,
        "plan_steps": 1, "crashes": True, "jobs": False, "lapses": False, "max_incarnation": 1,
        "profile_changes": 0, "max_retractions": 0, "symmetry": False, "liveness": False, "require_coverage": False,
    }  # fmt: skip
    return parse_config("log", raw)


def _observe(before: State, after: State) -> list[tuple[str, int, int]]:
    """What a step shows in the log: (event, approval slot, requester) per approval whose status changed."""
    return sorted(
        (f"approval.{b.status}", a, b.requester)
        for a, (x, b) in enumerate(zip(before.approvals, after.approvals, strict=True))
        if x.status != b.status
    )


def _moves(model: Model, state: State) -> list[tuple[State, list[tuple[str, int, int]]]]:
    """Every transition (a crash with its restart as one) with what it shows."""
    out = []
    for action, after in model.successors(state):
        if not isinstance(after, State):
            continue
        if action.crash_after:
            _, after = next(iter(model.successors(after)))  # the restart
            assert isinstance(after, State)
        out.append((after, _observe(state, after)))
    return out


def _expected(event: dict[str, Any], slots: dict[str, int], members: dict[str, int]) -> tuple[str, int, int] | None:
    if event["event"] not in {f"approval.{e}" for e in EVENTS}:
        return None
    slot = slots.setdefault(event["subject"], len(slots))
    # A request's requester is its actor (a name outside the header is refused before this is
    # matched); -1, for the other events, matches any requester.
    requester = members.get(str(event.get("actor")), -2) if event["event"] == "approval.requested" else -1
    return (event["event"], slot, requester)


Shown = tuple[tuple[str, int, int], ...]


def _rest(shown: Shown, want: tuple[str, int, int]) -> Shown | None:
    """What ``shown`` leaves to explain once one of its events is the event ``want``, or None.

    One transition may show several events (the monitor expires every overdue approval in one
    pass); a log writes them one by one, in the order its implementation wrote them, at one time.
    """
    for index, (name, slot, requester) in enumerate(shown):
        if (name, slot) == want[:2] and (want[2] == -1 or requester == want[2]):
            return shown[:index] + shown[index + 1 :]
    return None


def _closure(model: Model, states: set[State], until: int) -> set[State]:
    """Every state reached by steps that show nothing, with the clock not past ``until``."""
    seen, todo = set(states), list(states)
    while todo:
        state = todo.pop()
        for after, shown in _moves(model, state):
            if not shown and after.clock <= until and after not in seen:
                seen.add(after)
                todo.append(after)
                if len(seen) > MAX_STATES:
                    raise Undecidable(f"more than {MAX_STATES} states between two events")
    return seen


def _actor(event: dict[str, Any], header: dict[str, Any], requesters: dict[str, str]) -> str | None:
    """Who must have done ``event`` (see the module docstring); None for a request, whose actor
    is the requester by definition (it must be one of the header's members)."""
    kind = event["event"].removeprefix("approval.")
    rule = ACTORS.get(("operation_approval", kind))
    role = rule[0][0] if rule and kind != "requested" else None  # AUD-1's rule (one party each)
    if role == "responder":  # an approval's responder is the Lead
        return str(header.get("lead", "lead"))
    if role == "monitor":
        return MONITOR
    if role == "requester":
        return requesters.get(event["subject"])
    return None


def validate(header: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    config = _config(header, events)
    model = Model(config, reduce=False)
    members = {name: m for m, name in enumerate(header["members"])}
    slots: dict[str, int] = {}
    requesters: dict[str, str] = {}
    # each state the log so far could have led to, with the events of its last transition the log
    # has yet to show (none: the next transition may be taken)
    states: set[tuple[State, Shown]] = {(model.initial(), ())}
    for number, event in enumerate(events, start=1):
        want = _expected(event, slots, members)
        at = int(event["at"])
        before = _closure(model, {state for state, owed in states if not owed}, at)
        if want is None:
            return _unexplained(number, event, before, f"unknown event {event['event']!r}", config)
        if event["event"] == "approval.requested":
            if event.get("actor") not in members:  # no wildcard: a name the header does not know requests nothing
                known = ", ".join(map(repr, header["members"]))
                why = f"event {number} is by {event.get('actor')!r}; only a member of the header ({known}) requests"
                return _unexplained(number, event, before, why, config)
            requesters.setdefault(event["subject"], event["actor"])
        actor = _actor(event, header, requesters)
        if actor is not None and event.get("actor") != actor:
            why = f"event {number} is by {event.get('actor')!r}; only {actor!r} does {event['event']}"
            return _unexplained(number, event, before, why, config)
        assert want is not None
        states = {
            (state, rest)
            for state, owed in states
            if owed and state.clock == at and (rest := _rest(owed, want)) is not None
        } | {
            (after, rest)
            for state in before
            if state.clock == at
            for after, shown in _moves(model, state)
            if (rest := _rest(tuple(shown), want)) is not None
        }
        if not states:
            return _unexplained(number, event, before, f"no model behaviour explains event {number}", config)
    return {"ok": True, "events": len(events)}


def _unexplained(number: int, event: dict[str, Any], before: set[State], message: str, config: Any) -> dict[str, Any]:
    possible = sorted({_describe(s) for s in before if s.clock <= int(event["at"])})
    return {
        "ok": False,
        "events": number - 1,
        "index": number,
        "event": event,
        "message": message,
        "possible": possible[:8],
    }


def _describe(state: State) -> str:
    approvals = ", ".join(
        f"approval {a}: " + (f"{ap.status} (m{ap.requester}, deadline {ap.deadline})" if ap.status else "not requested")
        for a, ap in enumerate(state.approvals)
    )
    return f"clock {state.clock}; {approvals}"


def validate_file(path: Path) -> dict[str, Any]:
    try:
        header, events = read_log(path)
        return validate(header, events)
    except (Undecidable, KeyError, ValueError, TypeError, OSError) as error:
        return {"ok": False, "undecided": True, "message": f"cannot validate: {error}", "events": 0}


def export_reference_log(path: Path) -> list[dict[str, Any]]:
    """The reference's audit log (SQLite store ``path``, or a data directory holding ``team.db``)
    as ``teamproto-events/1`` lines: its approval events (the events the format has), in order.

    A log of a virtual clock (every time a whole second) keeps its times. A log of a real clock
    (``teamproto demo``'s processes) is put on the format's whole ticks: ``at`` is the whole
    seconds since its first event, rounded down, which keeps the order of events and every
    "not past its deadline" of a whole-second ttl; an expiry recorded less than a second after
    its deadline would read as at the deadline, and be refused."""
    from reference import SQLiteStorage

    storage = SQLiteStorage(path / "team.db" if path.is_dir() else path)
    try:
        approvals = {row.doc["protocol_id"]: row.doc for row in storage.scan("operation_approval")}
        header = {
            "format": "teamproto-events/1",
            "members": [row.doc["member_id"] for row in storage.scan("member")],
            "tasks": [row.doc["task_id"] for row in storage.scan("task")],
        }
        entries = [row.doc for row in storage.scan("audit_entry") if row.doc["event"].startswith("approval.")]
    finally:
        storage.close()
    times = [float(entry["at"]) for entry in entries]
    origin = 0.0 if all(t == int(t) for t in times) else min(times)
    out: list[dict[str, Any]] = [header]
    for entry in entries:
        at = float(entry["at"]) - origin
        event = {"event": entry["event"], "subject": entry["subject_id"], "actor": entry["actor"], "at": at}
        if origin:
            event["at"] = float(int(at))
        approval = approvals.get(entry["subject_id"])
        if entry["event"] == "approval.requested" and approval is not None:
            event["ttl_seconds"] = round(approval["deadline"] - approval["created_at"], 6)
        out.append(event)
    return out


__all__ = ["export_reference_log", "validate", "validate_file"]
