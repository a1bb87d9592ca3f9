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
  named in it to another member or to none, a secret added to a text (a list's last text too), a
  list's last item (an event, a step, a tool) left out or its fields changed, an object (a
  checkpoint) gone, a whole record gone, the clock one up and one down, the audit log's last entry
  gone — kept only if the record still validates against its schema (a predicate is held to
  schema-valid snapshots);
- **verdicts**: every state predicate on each near miss, every step predicate on the step from its
  base to it — and on the step from each near miss of the *before*-state to the after-state (a
  step predicate judges what the step saw: a claimer's status, whether it accepted): each problem
  it reports, in its words without ids and numbers (:func:`template`), so a predicate that checks
  several things is held to each.

``model_tests/verdicts.json`` pins the bases (compressed) and, per predicate and problem, the near
misses it reports that problem on (a compressed bitset). ``model_tests/test_verdicts.py``
recomputes the verdicts from the pinned bases — the model's later changes do not move them; only a
predicate's do — and names every flip: the predicate, the problem, the base, the field changed, and
whether the predicate stopped or started reporting it there. A predicate changed on purpose is
pinned again with ``python -m model_tests.verdicts --write``, which prints each flip it pins and
keeps the pinned steps (``--new-bases`` takes them from the model as it now is); without
``--write`` it prints the flips.

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
import re
import sys
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import spec
from spec.invariants import INVARIANTS, WORLD, Invariant
from spec.model import Action, Model, load_config, snapshot
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


def steps(name: str) -> Iterator[tuple[Action | None, Snap, Snap]]:
    """Every transition of configuration ``name`` (crash variants included), breadth-first, as
    (action, snapshot before, snapshot after); the first, the initial state with no move (None)."""
    model = Model(load_config(name))
    start = model.initial()
    first = snapshot(start, model.config)
    yield None, first, first
    queue, seen, snaps = deque([start]), {start}, {start: first}
    while queue:
        state = queue.popleft()
        before = snaps.pop(state)
        for action, after in model.successors(state):
            if isinstance(after, Exception):
                continue
            later = snapshot(after, model.config)
            yield action, before, later
            if after not in seen:
                seen.add(after)
                snaps[after] = later
                queue.append(after)


def cover() -> list[tuple[str, Snap, Snap]]:
    """The bases: steps of the model (before, after; the first of all, the initial state with no
    move), breadth-first over each configuration, a step kept when its after-state shows a feature
    or a pair of features no base kept before it shows, or its move meets a feature of its
    after-state for the first time."""
    bases: list[tuple[str, Snap, Snap]] = []
    shown: set[tuple[Any, ...]] = set()
    for name in CONFIGS:
        for action, before, after in steps(name):
            if _new(shown, action.name if action else "", after):
                bases.append((name, before, after))
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
        texts = [[*value[:-1], value[-1] + " " + SECRET]] if isinstance(value[-1], str) else []
        return [value[:-1], *texts]  # the last of a history, events, steps, tools left out; a secret in one
    if isinstance(value, dict):
        return [None]  # a checkpoint, a recorded result: gone
    return []


def near_misses(base: Snap) -> Iterator[tuple[str, Snap]]:
    """``base`` changed in one field of one record (two levels into a record's objects, as a
    message's envelope and its body), each still valid against its record's schema; with a
    description."""
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
            yield f"{kind}[{index}] gone", {**base, kind: [*docs[:index], *docs[index + 1 :]]}
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


def _fields(kind: str, doc: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each field of a record, and of the objects in it (a message's envelope and its body, the last
    of a list of objects: an event, a step)."""
    for field, value in doc.items():
        if field in UNCHANGED or (*path, field) == RECORD_KEYS[kind]:  # a record's own key stays
            continue
        yield (*path, field), value
        if isinstance(value, dict) and len(path) < 2:
            yield from _fields(kind, value, (*path, field))
        elif isinstance(value, list) and value and isinstance(value[-1], dict) and len(path) < 2:
            yield from _fields(kind, value[-1], (*path, field, str(len(value) - 1)))  # the last event, step


def _set(doc: Any, path: tuple[str, ...], value: Any) -> Any:
    if isinstance(doc, list):
        at = int(path[0])
        return [*doc[:at], value if len(path) == 1 else _set(doc[at], path[1:], value), *doc[at + 1 :]]
    if len(path) == 1:
        return {**doc, path[0]: value}
    return {**doc, path[0]: _set(doc[path[0]], path[1:], value)}


def world_near_misses(snap: Snap) -> Iterator[tuple[str, list[str]]]:
    """The external system's calls (:data:`spec.invariants.WORLD`'s other argument) one step off the
    world a snapshot's executions tell: each execution recorded ``succeeded`` called once under its
    key, no other call. Each call made twice and three times, or never; each other execution's key
    called once; a key no execution records called. An outside review made "called twice" read
    ``count > 2``, and no near miss of a snapshot reached the world check."""
    keys = [e["idempotency_key"] for e in snap["tool_execution"]]
    calls = [e["idempotency_key"] for e in snap["tool_execution"] if e["status"] == "succeeded"]
    yield "world: as recorded", calls
    for key in calls:
        yield f"world: {key} called twice", [*calls, key]
        yield f"world: {key} called three times", [*calls, key, key]
        yield f"world: {key} never called", [c for c in calls if c != key]
    for key in keys:
        if key not in calls:
            yield f"world: {key} called", [*calls, key]
    yield "world: a key no execution records called", [*calls, "unrecorded-key"]


def judge(inv: Invariant, before: Snap, near: Snap) -> list[str]:
    """What ``inv`` reports: a state predicate on the near miss, a step one on the step to it."""
    return list(inv.check(near) if inv.kind == "state" else inv.check(before, near))


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def template(problem: str) -> str:
    """A problem's words without its ids and numbers: what the pin tells apart. A predicate that
    reports several things (``messages_agree_with_records``: parties, ids, deadlines, numbering) is
    held to each of them, not only to firing at all."""
    problem = _UUID.sub("ID", problem)
    problem = re.sub(r"\b[mt]\d+\b", "X", problem)
    return re.sub(r"-?\d+(\.\d+)?", "N", problem)


Base = tuple[str, Snap, Snap]
Fired = dict[tuple[str, str], set[int]]


class PredicateRaised(AssertionError):
    """A predicate raised on a schema-valid snapshot instead of judging it (an implementation's
    snapshot may hold anything its schemas allow: the conformance suite runs the same predicates)."""


def verdicts(bases: list[Base], only: frozenset[str] | None = None) -> tuple[Fired, list[tuple[int, str]]]:
    """Per predicate (those named in ``only``, or all) and per problem it reports (its
    :func:`template`), the near misses it reports it on; and the near misses, in order (base
    index, description)."""
    judged = [inv for inv in INVARIANTS if only is None or inv.name in only]
    steps_only = [inv for inv in judged if inv.kind == "step"]
    fired: Fired = {}
    order: list[tuple[int, str]] = []
    for index, (_, base, after) in enumerate(bases):
        sides = (
            ((f"after: {d}", base, near, judged) for d, near in near_misses(after)),
            ((f"before: {d}", near, after, steps_only) for d, near in near_misses(base)),
        )
        for description, before, near, predicates in itertools.chain(*sides):
            bit = len(order)
            order.append((index, description))
            for inv in predicates:
                try:
                    problems = judge(inv, before, near)
                except Exception as error:  # a predicate must judge any schema-valid snapshot
                    raise PredicateRaised(
                        f"{inv.clause} {inv.name} raised {error!r} on base {index} with {description}"
                    ) from error
                for problem in problems:
                    fired.setdefault((inv.name, template(problem)), set()).add(bit)
        world = only is None or WORLD.name in only
        for description, calls in world_near_misses(after):
            bit = len(order)
            order.append((index, description))
            for problem in WORLD.check(calls, after["tool_execution"]) if world else ():
                fired.setdefault((WORLD.name, template(problem)), set()).add(bit)
    return fired, order


def _pack(bits: set[int]) -> str:
    data = bytearray((max(bits, default=-1) + 8) // 8)
    for bit in bits:
        data[bit // 8] |= 1 << (bit % 8)
    return base64.b64encode(zlib.compress(bytes(data), 9)).decode("ascii")


def _unpack(text: str) -> set[int]:
    data = zlib.decompress(base64.b64decode(text))
    return {8 * at + k for at, byte in enumerate(data) if byte for k in range(8) if byte >> k & 1}


def digest(order: list[tuple[int, str]]) -> str:
    return hashlib.sha256(json.dumps(order).encode()).hexdigest()[:16]


def build(bases: list[Base] | None = None) -> dict[str, Any]:
    """The pin's document: the predicates' verdicts on ``bases`` (by default the model's cover as
    it now is, judged as the pin will give it back: JSON's lists for the model's tuples)."""
    text = json.dumps(cover() if bases is None else bases)
    bases = [(name, before, after) for name, before, after in json.loads(text)]
    fired, order = verdicts(bases)
    pinned: dict[str, dict[str, Any]] = {inv.name: {} for inv in _predicates()}
    for (name, said), bits in sorted(fired.items()):
        pinned[name][said] = {"near_misses": len(bits), "bits": _pack(bits)}
    return {
        "about": "model_tests/verdicts.py: every predicate's verdicts on near misses of reachable "
        "snapshots; rebuild with `python -m model_tests.verdicts --write`",
        "bases": base64.b64encode(zlib.compress(text.encode(), 9)).decode("ascii"),
        "near_misses": len(order),
        "corpus": digest(order),
        "verdicts": pinned,
    }


def load(path: Path = PIN) -> tuple[list[Base], dict[str, Any]]:
    document = json.loads(path.read_text(encoding="utf-8"))
    text = zlib.decompress(base64.b64decode(document["bases"]))
    bases = [(name, before, after) for name, before, after in json.loads(text)]
    return bases, document


def flips(pinned: dict[str, Any], bases: list[Base], only: frozenset[str] | None = None) -> tuple[list[str], Fired]:
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
    for inv in _predicates():
        if only is not None and inv.name not in only:
            continue
        if inv.name not in pinned["verdicts"]:
            said.append(f"{inv.clause} {inv.name}: a predicate the pin does not know; pin it")
            continue
        was = {problem: _unpack(entry["bits"]) for problem, entry in pinned["verdicts"][inv.name].items()}
        now = {problem: bits for (name, problem), bits in fired.items() if name == inv.name}
        for problem in sorted(was.keys() | now.keys()):
            lost, gained = (
                was.get(problem, set()) - now.get(problem, set()),
                now.get(problem, set()) - was.get(problem, set()),
            )
            for verb, bits in (("no longer reports", lost), ("now reports", gained)):
                for bit in sorted(bits)[:2]:
                    index, description = order[bit]
                    said.append(
                        f"{inv.clause} {inv.name} {verb} {problem!r} on base {index} (a step of "
                        f"{bases[index][0]} to {_summary(bases[index][2])}) with {description}"
                    )
                if len(bits) > 2:
                    said.append(f"{inv.clause} {inv.name} {verb} {problem!r} on {len(bits) - 2} more near misses")
    if only is None:
        gone = [name for name in pinned["verdicts"] if not _known(name)]
        said += [f"{name}: pinned, but no predicate has this name now" for name in gone]
    return said, fired


def _predicates() -> tuple[Invariant, ...]:
    """Every predicate the pin holds: the snapshot invariants, and the world's check."""
    return (*INVARIANTS, WORLD)


def _known(name: str) -> bool:
    return any(inv.name == name for inv in _predicates())


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


def pin_command(
    module: str,
    doc: str,
    write: Callable[[argparse.Namespace], str],
    check: Callable[[], list[str]],
    flags: tuple[tuple[str, str], ...] = (),
) -> int:
    """The command line of a pin (this module's, ``model_tests.effects``'): ``--write`` pins and says
    what; otherwise print each difference from the pin and exit 1 if there is one."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="pin what the model and its predicates do now")
    for flag, help_text in flags:
        parser.add_argument(flag, action="store_true", help=help_text)
    args = parser.parse_args()
    if args.write:
        print(write(args))
        return 0
    said = check()
    for line in said:
        print(line)
    print("as pinned" if not said else f"{len(said)} difference(s) from the pin", file=sys.stderr)
    return 1 if said else 0


def _write(args: argparse.Namespace) -> str:
    """Pin again on the pinned steps, printing first each flip it pins (so a predicate's change is
    seen, never re-pinned unseen); ``--new-bases`` takes the steps from the model as it now is."""
    bases = None
    if PIN.exists() and not args.new_bases:
        bases, pinned = load()
        for line in flips(pinned, bases)[0]:
            print(line)
    document = build(bases)
    PIN.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return f"pinned {len(document['verdicts'])} predicates on {document['near_misses']} near misses -> {PIN}"


def _check() -> list[str]:
    bases, pinned = load()
    return flips(pinned, bases)[0]


if __name__ == "__main__":
    new_bases = ("--new-bases", "with --write: take the steps from the model as it now is, not the pinned ones")
    sys.exit(pin_command("model_tests.verdicts", __doc__ or "", _write, _check, (new_bases,)))
