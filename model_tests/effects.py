"""What each operation of the model does to the records, pinned and named (DESIGN rule 1, INV-*).

A state count that moves says *that* the model changed; the drift explanation (``spec/drift.py``)
says which operations, edges and crash points became reachable or not. Neither says what an
operation now does differently when the same operations, edges and crash points stay reachable:
outside review 59 planted a restart that no longer lets its member accept tasks, a force-termination
that leaves a job asked to cancel running, a claim that reuses its task's old claim token, a
recovery that no longer owes a suspended task's notice — each moved counts (or none) and was
explained as "only how they interleave changed".

Here every transition of thirteen small configurations (crash variants included) is reduced to
its **effects**: for each record the move created, removed or changed, which field changed and
how, in words that do not depend on slots or ids — a status or a reason by its value, a number
up or down by how much (by up to three), a flag to its value, a reference to a member or a record
kept, moved to another, set or cleared, a text or an object changed, a list grew or shrank — and
each field a created record starts with (a deadline or a time against its step's clock). An effect is
``action: kind.field old → new``. ``model_tests/effects.json`` pins, per configuration, every
effect its transitions show; ``model_tests/test_effects_pin.py`` names each effect gained or lost ("in
fencing, member.restart no longer makes member.accepting_new_tasks False → True"). A change of the
model made on purpose is pinned again with ``python -m model_tests.effects --write`` — its diff is
the change's behaviour, in one line per effect.

What it cannot see: a value that changes the same way in other states (an effect present anywhere
in a configuration counts as present), and anything a configuration here does not reach.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from model_tests.verdicts import CONFIGS, pin_command, steps
from spec.schemas import RECORD_KEYS, record_id

PIN = Path(__file__).with_name("effects.json")
WORDS = frozenset({"status", "reason", "message_type", "kind", "event", "decision", "outcome", "phase", "tool"})
"""Fields whose values are words of the protocol (statuses, reasons, types): kept as they are."""

Snap = dict[str, Any]


def _relation(field: str, old: Any, new: Any, ids: set[str]) -> tuple[str, str]:
    """``old`` and ``new`` in words that do not depend on slots or ids."""
    if field in WORDS or isinstance(old, bool) or isinstance(new, bool):
        return repr(old), repr(new)
    if old is None or new is None:
        return ("none" if old is None else _kind(old, ids)), ("none" if new is None else _kind(new, ids))
    if isinstance(old, int | float) and isinstance(new, int | float):
        return "n", f"n{new - old:+g}" if abs(new - old) <= 3 else "n+" if new > old else "n-"
    if isinstance(old, list) and isinstance(new, list):
        return "list", "longer" if len(new) > len(old) else "shorter" if len(new) < len(old) else "other items"
    if isinstance(old, str) and isinstance(new, str) and old in ids and new in ids:
        return "a reference", "another reference"
    return _kind(old, ids), f"another {_kind(new, ids).removeprefix('a ')}"


def _value(field: str, value: Any, clock: float, ids: set[str]) -> str:
    """A created record's field in words: a deadline or a time against the clock of its step."""
    if field in WORDS or isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return f"clock{value - clock:+g}" if field.endswith(("deadline", "_at", "timestamp")) else repr(value)
    if isinstance(value, list):
        return f"{len(value)} item(s)"
    return "an object" if isinstance(value, dict) else _kind(value, ids)


def _kind(value: Any, ids: set[str]) -> str:
    if isinstance(value, str):
        return "a reference" if value in ids else "a text"
    return type(value).__name__


def effects(action: str, before: Snap, after: Snap) -> Iterator[str]:
    """The effects of one move, as ``action: kind.field old → new`` lines."""
    ids = {
        str(record_id(kind, doc))
        for snap in (before, after)
        for kind, docs in snap.items()
        if kind != "clock"
        for doc in docs
    }
    if before["clock"] != after["clock"]:
        yield f"{action}: clock {' → '.join(_relation('clock', before['clock'], after['clock'], ids))}"
    for kind in after:
        if kind == "clock":
            continue
        old = {str(record_id(kind, doc)): doc for doc in before[kind]}
        new = {str(record_id(kind, doc)): doc for doc in after[kind]}
        for key in new.keys() - old.keys():
            typed = new[key].get("message", {}).get("message_type") if kind in ("message", "outbox_entry") else None
            created = f"{action}: {kind} created {new[key].get('status', '')!r}" + (f" ({typed})" if typed else "")
            yield created
            for field, value in new[key].items():
                if field not in ("status", "version", "history", "events") and field != RECORD_KEYS[kind][0]:
                    yield f"{created} with {field} {_value(field, value, after['clock'], ids)}"
            if typed:
                yield from _message(created, kind, new[key], after, ids)
        for key in old.keys() - new.keys():
            yield f"{action}: {kind} removed {old[key].get('status', '')!r}"
        for key in new.keys() & old.keys():
            yield from _changes(action, kind, "", old[key], new[key], ids)


_SOURCES = ("operation_approval", "plan_approval", "shutdown_request")
"""The records a message may be about: the one whose ``protocol_id`` its ``correlation_id`` names."""


def _message(created: str, kind: str, doc: Snap, after: Snap, ids: set[str]) -> Iterator[str]:
    """A created message's (or owed entry's) envelope and body, field by field, the status of the
    record it is about, and — a message put on the bus from the outbox — whether it is the very
    message its entry holds (outside review 61: a decision re-delivered only for approved
    approvals, a send that rebuilt its body from the records, each hid behind "message created")."""
    message = doc["message"]
    for field, value in sorted(message.items()):
        if field == "body" and isinstance(value, dict):
            for part, inner in sorted(value.items()):
                yield f"{created} with body.{part} {_value(part, inner, after['clock'], ids)}"
        elif field not in ("message_id", "correlation_id", "message_type"):
            yield f"{created} with message.{field} {_value(field, value, after['clock'], ids)}"
    for source in _SOURCES:
        for record in after.get(source, []):
            if record["protocol_id"] == message.get("correlation_id"):
                yield f"{created} about a {record['status']!r} {source}"
    if kind == "message":
        owed = [e["message"] for e in after.get("outbox_entry", []) if e["message_id"] == message.get("message_id")]
        if owed:
            yield f"{created} {'as its outbox entry holds it' if owed[0] == message else 'unlike its outbox entry'}"


def _changes(
    action: str, kind: str, prefix: str, old: dict[str, Any], new: dict[str, Any], ids: set[str]
) -> Iterator[str]:
    for field in sorted(old.keys() | new.keys()):
        if field == "version" or old.get(field) == new.get(field):
            continue
        if isinstance(old.get(field), dict) and isinstance(new.get(field), dict) and not prefix:
            yield from _changes(action, kind, f"{field}.", old[field], new[field], ids)
            continue
        was, now = _relation(field, old.get(field), new.get(field), ids)
        status = f" ({old.get('status')!r})" if "status" in old and field != "status" else ""
        yield f"{action}: {kind}{status}.{prefix}{field} {was} → {now}"


def observe(name: str) -> set[str]:
    """Every effect of every transition of configuration ``name`` (crash variants included)."""
    found: set[str] = set()
    for action, before, after in steps(name):
        if action is not None:
            label = f"{action.name} ⚡{action.crash_after}" if action.crash_after else action.name
            found.update(effects(label, before, after))
    return found


def build() -> dict[str, list[str]]:
    return {name: sorted(observe(name)) for name in CONFIGS}


def differences(pinned: dict[str, list[str]], now: dict[str, list[str]]) -> list[str]:
    """Each effect gained or lost, per configuration, in words."""
    said = []
    for name in sorted(pinned.keys() | now.keys()):
        before, after = set(pinned.get(name, ())), set(now.get(name, ()))
        said += [f"in {name}, no move does this any more: {effect}" for effect in sorted(before - after)]
        said += [f"in {name}, a move now does this: {effect}" for effect in sorted(after - before)]
    return said


def _write(args: argparse.Namespace) -> str:
    now = build()
    PIN.write_text(json.dumps(now, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return f"pinned {sum(map(len, now.values()))} effects of {len(now)} configurations -> {PIN}"


def _check() -> list[str]:
    return differences(json.loads(PIN.read_text(encoding="utf-8")), build())


if __name__ == "__main__":
    sys.exit(pin_command("model_tests.effects", __doc__ or "", _write, _check))
