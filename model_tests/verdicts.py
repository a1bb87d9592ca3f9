"""Every predicate's verdicts on a fixed corpus of near-miss snapshots, pinned (INV-*, DESIGN rule 7).

The model mutants show that each predicate fires *somewhere*; they do not hold each of its
conditions. A predicate weakened in one condition (a completed shutdown whose member is
``unhealthy`` let through, as if ``stopped``) passed every check and test (outside review 59's P7):
no mutant reaches that state, and the healthy model never does. Here the predicates are held to
what they said, condition by condition, on snapshots one step off the reachable ones:

- **bases**: reachable snapshots of small pinned configurations, chosen in breadth-first order so
  that every pair of features — a record kind in a status, a member's status with whether it
  accepts tasks — that some reachable state shows is shown by some base (a pairwise cover);
- **near misses**: each base changed in one field of one record — a status to every other state of
  its machine, a flag flipped, a number (incarnation, deadline, time) one up and one down, a member
  named in it to another member or to none, a secret added to a text, a list's last item (an
  event, a step, a tool) left out, an object (a checkpoint) gone, the clock one up and one down,
  the audit log's last entry gone — kept only if the record still validates against its schema (a
  predicate is held to schema-valid snapshots);
- **verdicts**: every state predicate on each near miss, every step predicate on the step from its
  base to it: fired or silent.

``model_tests/verdicts.json`` pins the bases (compressed) and, per predicate, the near misses it
fires on (a compressed bitset). ``model_tests/test_verdicts.py`` recomputes the verdicts from the
pinned bases — the model's later changes do not move them; only a predicate's do — and names every
flip: the base, the field changed, and whether the predicate stopped or started firing there. A
predicate changed on purpose is pinned again with ``python -m model_tests.verdicts --write`` (the
diff of the report says what changed); ``--check`` prints the flips.

What it cannot see: a condition no single-field change of a cover state reaches (two fields at
once, a record that no base has), and a predicate missing altogether — those are the model
mutants' and the reference tests' to find.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import itertools
import json
import sys
import zlib
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import spec
from spec.invariants import INVARIANTS, Invariant
from spec.model import Model, load_config, snapshot
from spec.schemas import RECORD_KEYS, RECORD_MACHINES, record_id
from spec.secret_corpus import SECRETS

PIN = Path(__file__).with_name("verdicts.json")
CONFIGS = (
    "tiny",
    "plan",
    "monitor",
    "pair",
    "approval_plan",
    "fencing",
    "restarts",
    "pair_lapses",
    "approval_lost",
    "plan_drain",
    "shutdown",
    "approval_drain",
    "plan_lost",
)
"""The configurations the bases come from: every pinned one small enough to search whole in seconds
(every protocol, lapses, crashes, restarts, plans beside drains)."""
UNCHANGED = frozenset({"version"})
"""Fields not changed (the store's own bookkeeping)."""
SECRET = SECRETS["openai_key"]
"""What a near miss adds to a free text: a secret (INV-10)."""
STATUSES = {
    kind: sorted({e.source for e in spec.edges(machine)} | {e.target for e in spec.edges(machine)})
    for kind, machine in RECORD_MACHINES.items()
}

Snap = dict[str, Any]


def _features(snap: Snap) -> list[tuple[str, str]]:
    found = {(kind, str(doc.get("status"))) for kind, docs in snap.items() if kind != "clock" for doc in docs}
    found |= {("accepting", f"{m['status']}/{m['accepting_new_tasks']}") for m in snap["member"]}
    found |= {  # where the clock is against each deadline: the boundaries a deadline's checks turn on
        (kind, f"{doc.get('status')} {_against(snap['clock'], doc['deadline'])} deadline")
        for kind, docs in snap.items()
        if kind != "clock"
        for doc in docs
        if isinstance(doc.get("deadline"), int | float)
    }
    return sorted(found)


def _against(clock: float, deadline: float) -> str:
    return "before" if clock < deadline else "at" if clock == deadline else "past"


def cover() -> list[tuple[str, Snap, Snap]]:
    """The bases: steps of the model (before, after; the first of all, the initial state with no
    move), breadth-first over each configuration, a step kept when its after-state shows a feature
    or a pair of features no base kept before it shows, or its move meets a feature of its
    after-state for the first time."""
    bases: list[tuple[str, Snap, Snap]] = []
    shown: set[tuple[Any, ...]] = set()
    for name in CONFIGS:
        model = Model(load_config(name))
        start = model.initial()
        first = snapshot(start, model.config)
        queue, seen, snaps = deque([start]), {start}, {start: first}
        if _new(shown, "", first):
            bases.append((name, first, first))
        while queue:
            state = queue.popleft()
            before = snaps.pop(state)
            for action, after in model.successors(state):
                if isinstance(after, Exception):
                    continue
                later = snapshot(after, model.config)
                if _new(shown, action.name, later):
                    bases.append((name, before, later))
                if after not in seen:
                    seen.add(after)
                    snaps[after] = later
                    queue.append(after)
    return bases


def _new(shown: set[tuple[Any, ...]], move: str, after: Snap) -> bool:
    features = _features(after)
    new = {(f,) for f in features} | set(itertools.combinations(features, 2)) | {(move, f) for f in features}
    if new <= shown:
        return False
    shown |= new
    return True


def _options(kind: str, field: str, value: Any, members: list[str], ids: set[str]) -> list[Any]:
    if field == "status" and kind in STATUSES:
        return [status for status in STATUSES[kind] if status != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value - 1, value + 1]
    if isinstance(value, str) and value in members:
        return [*(m for m in members if m != value), None]
    if isinstance(value, str) and value not in ids:  # a text, not a record's id
        return [value + " " + SECRET]
    if isinstance(value, list) and value:
        return [value[:-1]]  # the last of a history, of events, of steps, of tools left out
    if isinstance(value, dict):
        return [None]  # a checkpoint, a recorded result: gone
    return []


def near_misses(base: Snap) -> Iterator[tuple[str, Snap]]:
    """``base`` changed in one field of one record (one level into a record's objects, as a
    message's envelope), each still valid against its record's schema; with a description."""
    members = [m["member_id"] for m in base["member"]]
    ids = {str(record_id(kind, doc)) for kind, docs in base.items() if kind != "clock" for doc in docs}
    for change in (-1, 1):
        yield f"clock {base['clock']} -> {base['clock'] + change}", {**base, "clock": base["clock"] + change}
    if base["audit_entry"]:
        yield "audit_entry: the last entry gone", {**base, "audit_entry": base["audit_entry"][:-1]}
    for kind, docs in base.items():
        if kind in ("clock", "audit_entry"):
            continue
        for index, doc in enumerate(docs):
            for path, value in _fields(kind, doc):
                for new in _options(kind, path[-1], value, members, ids):
                    changed = _set(doc, path, new)
                    try:
                        spec.validate_record(kind, changed)
                    except spec.SchemaError:
                        continue
                    rows = list(docs)
                    rows[index] = changed
                    yield f"{kind}[{index}].{'.'.join(path)} {value!r} -> {new!r}", {**base, kind: rows}


def _fields(kind: str, doc: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for field, value in doc.items():
        if field in UNCHANGED or field == RECORD_KEYS[kind][0]:
            continue
        yield (field,), value
        if isinstance(value, dict):
            for inner, nested in value.items():
                if inner not in UNCHANGED:
                    yield (field, inner), nested


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    if len(path) == 1:
        return {**doc, path[0]: value}
    return {**doc, path[0]: _set(doc[path[0]], path[1:], value)}


def judge(inv: Invariant, before: Snap, near: Snap) -> bool:
    """Whether ``inv`` fires: a state predicate on the near miss, a step one on the step to it."""
    return bool(inv.check(near) if inv.kind == "state" else inv.check(before, near))


Base = tuple[str, Snap, Snap]


class PredicateRaised(AssertionError):
    """A predicate raised on a schema-valid snapshot instead of judging it (an implementation's
    snapshot may hold anything its schemas allow: the conformance suite runs the same predicates)."""


def verdicts(
    bases: list[Base], only: frozenset[str] | None = None
) -> tuple[dict[str, bytearray], list[tuple[int, str]]]:
    """Per predicate (those named in ``only``, or all), the bitset of the near misses it fires on;
    and the near misses, in order (base index, description)."""
    judged = [inv for inv in INVARIANTS if only is None or inv.name in only]
    fired = {inv.name: bytearray() for inv in judged}
    order: list[tuple[int, str]] = []
    for index, (_, base, after) in enumerate(bases):
        for description, near in near_misses(after):
            bit = len(order)
            order.append((index, description))
            for inv in judged:
                bits = fired[inv.name]
                if bit // 8 >= len(bits):
                    bits.append(0)
                try:
                    fires = judge(inv, base, near)
                except Exception as error:  # a predicate must judge any schema-valid snapshot
                    raise PredicateRaised(
                        f"{inv.clause} {inv.name} raised {error!r} on base {index} with {description}"
                    ) from error
                if fires:
                    bits[bit // 8] |= 1 << (bit % 8)
    return fired, order


def _pack(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 9)).decode("ascii")


def _unpack(text: str) -> bytes:
    return zlib.decompress(base64.b64decode(text))


def digest(order: list[tuple[int, str]]) -> str:
    return hashlib.sha256(json.dumps(order).encode()).hexdigest()[:16]


def build() -> dict[str, Any]:
    """The pin's document, from the current model and predicates (the verdicts judged on the bases
    as the pin gives them back, JSON's lists for the model's tuples)."""
    text = json.dumps(cover())
    bases = [(name, before, after) for name, before, after in json.loads(text)]
    fired, order = verdicts(bases)
    return {
        "about": "model_tests/verdicts.py: every predicate's verdicts on near misses of reachable "
        "snapshots; rebuild with `python -m model_tests.verdicts --write`",
        "bases": _pack(text.encode()),
        "near_misses": len(order),
        "corpus": digest(order),
        "verdicts": {
            name: {"fires": sum(bin(byte).count("1") for byte in bits), "bits": _pack(bytes(bits))}
            for name, bits in sorted(fired.items())
        },
    }


def load(path: Path = PIN) -> tuple[list[Base], dict[str, Any]]:
    document = json.loads(path.read_text(encoding="utf-8"))
    bases = [(name, before, after) for name, before, after in json.loads(_unpack(document["bases"]))]
    return bases, document


def flips(
    pinned: dict[str, Any], bases: list[Base], only: frozenset[str] | None = None
) -> tuple[list[str], dict[str, bytearray]]:
    """Every verdict of the predicates (named in ``only``, or all) that differs from the pin,
    described; and the verdicts now."""
    fired, order = verdicts(bases, only)
    if digest(order) != pinned["corpus"]:
        return [
            f"the near misses are not the pinned ones ({len(order)} now, {pinned['near_misses']} pinned): "
            "the perturbations or the schemas changed; check the predicates' other tests, then pin again "
            "with `python -m model_tests.verdicts --write`"
        ], fired
    said: list[str] = []
    for inv in INVARIANTS:
        if inv.name not in fired:
            continue
        entry = pinned["verdicts"].get(inv.name)
        if entry is None:
            said.append(f"{inv.clause} {inv.name}: a predicate the pin does not know; pin it")
            continue
        before, now = _unpack(entry["bits"]), bytes(fired[inv.name])
        changed = [
            bit for bit in range(len(order)) if (before[bit // 8] >> (bit % 8) & 1) != (now[bit // 8] >> (bit % 8) & 1)
        ]
        for bit in changed[:4]:
            index, description = order[bit]
            verb = "no longer fires" if before[bit // 8] >> (bit % 8) & 1 else "now fires"
            said.append(
                f"{inv.clause} {inv.name} {verb} on base {index} (a step of {bases[index][0]} to "
                f"{_summary(bases[index][2])}) with {description}"
            )
        if len(changed) > 4:
            said.append(f"{inv.clause} {inv.name}: {len(changed) - 4} more near misses changed verdict")
    if only is None:
        gone = [name for name in pinned["verdicts"] if not _known(name)]
        said += [f"{name}: pinned, but no predicate has this name now" for name in gone]
    return said, fired


def _known(name: str) -> bool:
    return any(inv.name == name for inv in INVARIANTS)


def _summary(snap: Snap) -> str:
    """A base in a line: each record's kind, key and status."""
    parts = []
    for kind, docs in snap.items():
        if kind in ("clock", "audit_entry", "capability_profile"):
            continue
        for doc in docs:
            key = doc
            for part in RECORD_KEYS[kind]:
                key = key[part]
            parts.append(f"{kind}/{key} {doc.get('status')}")
    return f"clock {snap['clock']}; " + ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model_tests.verdicts", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="pin the verdicts of the current predicates")
    args = parser.parse_args(argv)
    if args.write:
        document = build()
        PIN.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"pinned {len(document['verdicts'])} predicates on {document['near_misses']} near misses -> {PIN}")
        return 0
    bases, pinned = load()
    said, _ = flips(pinned, bases)
    for line in said:
        print(line)
    print("verdicts as pinned" if not said else f"{len(said)} difference(s) from the pin", file=sys.stderr)
    return 1 if said else 0


if __name__ == "__main__":
    sys.exit(main())
