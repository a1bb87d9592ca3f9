"""Test vectors: for every pinned configuration, explorer traces that together take every machine
edge the configuration reaches by every operation that takes it (every deadline edge on its
boundary too), and crash at every crash point it reaches, as JSON the suite replays step by step
(``conformance/vectors/<config>.json``; rebuilt by ``teamproto conformance --write-vectors``,
checked by ``--check-vectors``)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

from spec.explore import _bfs, _Search
from spec.model import Config, Model, _model, load_config, snapshot
from spec.model._model import ACTIVE_SHUTDOWN, DEADLINE_EDGES, REQUEST_EXPIRY, Action
from spec.model._ops import _request_deadline
from spec.model._reconcile import reconcile
from spec.model._state import NONE, State

from ._abstract import abstract
from ._refusals import CLAUSES, candidates, refusing
from ._translate import init_request, request_for

VECTORS = Path(__file__).parent / "vectors"
REQUEST_KINDS = frozenset({"approval_request", "plan_request", "shutdown_request"})
"""The messages a request's deadline expires (the monitor's pass, MSG-1)."""
TOO_LARGE = frozenset({"pair_crashes", "pair_plan"})
"""Pinned configurations whose full search takes minutes here: their vectors would add nothing
the smaller ones do not already take, edge for edge (``covers`` in each file says what is taken)."""


def pinned() -> list[str]:
    manifest = json.loads((Path(load_config.__code__.co_filename).parent / "configs/manifest.json").read_text())
    return [name for name, pin in manifest.items() if pin.get("states") is not None and name not in TOO_LARGE]


def _edges(before: State, after: State) -> set[str]:
    """Every (record, from, to) the step took, read off the status of each record slot (a bus
    message or an outbox entry by its key): what the explorer's edge coverage counts — and, for a
    message or an outbox entry, of which type and which phase (0, 1, or 2 and later).

    A message's phase tells its record's repeats apart: the decision of a plan retracted once is
    ``plan_decision`` phase 1, the last will of a restarted member phase 2. Its edges are other
    behaviours than phase 0's (PLN-6, PLN-7: the start must acknowledge the decision that stands,
    not the first one): a reference that acknowledged phase 0's after a retraction conformed
    while only the first decision's edges were replayed."""
    out = set()
    for field in dataclasses.fields(State):
        old, new = getattr(before, field.name), getattr(after, field.name)
        if not isinstance(new, tuple) or not new or not hasattr(new[0], "status"):
            continue
        keyed = hasattr(new[0], "key")
        previous = {(r.key if keyed else i): r.status for i, r in enumerate(old)}
        for i, row in enumerate(new):
            was = previous.get(row.key if keyed else i, "")
            if row.status != was:
                which = f"[{row.key[0]}/{min(row.key[2], 2)}]" if keyed else ""
                edge = f"{field.name}{which}:{was or '-'}->{row.status or '-'}"
                out.add(edge)
                if not keyed and i < len(old):
                    out |= {f"{edge}|{c}" for c in _record_contexts(field.name, old[i], before.clock)}
                if _on_boundary(field.name, old, i, row, before.clock, after):
                    out.add(f"{edge} on its deadline's boundary")
    return out


_DEADLINED = {"approvals": "operation_approval", "plans": "plan_approval", "shutdowns": "shutdown_request"}


def _on_boundary(field: str, old: Any, i: int, row: Any, clock: int, after: State) -> bool:
    """Whether a record's move is a deadline edge taken exactly on its boundary (the explorer's
    ``deadline_boundaries_reached``, ``spec.model._model.DEADLINE_EDGES``): decided at the
    deadline, expired just past it — or a request's message expired unread just past its
    request's deadline. Each is a behaviour of its own, so a vector takes it: an implementation
    whose guard is one tick off there conformed while only off-boundary moves were replayed."""
    if field == "bus":
        kind, ref, _ = row.key
        if row.status != "expired" or kind not in REQUEST_KINDS:
            return False
        offset, _ = DEADLINE_EDGES[REQUEST_EXPIRY]
        return bool(_request_deadline(after, kind, ref) - clock == offset)
    machine = _DEADLINED.get(field)
    if machine is None or i >= len(old):
        return False
    boundary = DEADLINE_EDGES.get((machine, old[i].status, row.status))
    return boundary is not None and old[i].deadline - clock == boundary[0]


_OPEN = {"approvals": ("requested", "approved"), "plans": ("draft", "pending", "approved"), "tasks": ("claimed",)}
"""The statuses in which a record bound to an incarnation of its member can still act (a shutdown
request's are ``ACTIVE_SHUTDOWN``)."""


def _fenced(state: State) -> bool:
    """Whether an open record is bound to an earlier incarnation of its member than the one now
    registered (XPR-1): a shutdown request the restarted member's predecessor got, its approval or
    plan not yet ended, a task it claimed. What such a record may and may not do to the new
    incarnation is the fencing the protocol is about, so an edge taken beside one is another
    behaviour than the same edge taken with none (outside review 63's P10: a claim by a restarted
    member refused because of its old incarnation's request conformed while every claim was
    replayed in a fresh team)."""
    current = [member.incarnation for member in state.members]
    bound = [(sd.target, sd.target_incarnation) for sd in state.shutdowns if sd.status in ACTIVE_SHUTDOWN]
    bound += [(ap.requester, ap.incarnation) for ap in state.approvals if ap.status in _OPEN["approvals"]]
    bound += [(plan.requester, plan.incarnation) for plan in state.plans if plan.status in _OPEN["plans"]]
    bound += [(task.owner, task.owner_incarnation) for task in state.tasks if task.status in _OPEN["tasks"]]
    return any(m >= 0 and incarnation < current[m] for m, incarnation in bound)


_LATE_OPEN = {
    "approvals": ("requested", "approved"),
    "plans": ("pending", "approved"),
    "shutdowns": tuple(sorted(ACTIVE_SHUTDOWN)),
}
"""The statuses in which a record with a deadline is still open: past its deadline, the monitor has
yet to end it."""


def _record_contexts(field: str, row: Any, clock: int) -> list[str]:
    """The contexts of one record in which a move of it, or a refusal of a call on it, is a
    behaviour of its own (each a coverage item ``…|<context>``, beside the plain one):

    - ``late``: it is open and past its deadline, and the monitor has not yet ended it (a cancel of
      an approved approval then is still a cancel: outside review 64's P2);
    - ``again``: a task claimed for the second time or later (what is measured from "the claim"
      is measured from this one: review 64's P4, a unit deadline counted from the first claim)."""
    out = []
    if row.status in _LATE_OPEN.get(field, ()) and clock > row.deadline:
        out.append("late")
    if field == "tasks" and row.claims >= 2:
        out.append("again")
    return out


class _Covering(_Search):
    """A search that notes, as it goes, each transition taking an edge by an operation, or a crash
    point, that no earlier transition took (breadth first, so each is reached by a shortest path).

    An edge counts once per operation that takes it (``operation|record:from->to``), not once: a job
    that goes ``cancel_requested -> cancelled`` when it exits and when a forced termination kills
    it is two behaviours, and an implementation that kills only running jobs on the last rung
    (SHD-7) conformed while the first alone was replayed. Likewise an edge taken beside an open
    record of an earlier incarnation (:func:`_fenced`) counts apart (``…|fenced``)."""

    def __init__(self, model: Model) -> None:
        super().__init__(model, None, None, None)
        self.covered: set[str] = set()
        self.picks: list[tuple[int, Action]] = []
        self.refusals: dict[str, int] = {}
        """Each refusal item (:func:`refusals`) → the first state (breadth first) that offers it."""

    def add(self, state: State, parent: int, action: Action | None) -> tuple[int, bool]:
        if parent >= 0 and action is not None:
            fenced = "|fenced" if _fenced(self.states[parent]) else ""
            items = {f"{action.name}|{edge}{fenced}" for edge in _edges(self.states[parent], state)}
            if action.crash_after:  # every crash point, once for each variant of its operation
                items.add(f"crash:{action.crash_after}{_variant(action)}")
            if not items <= self.covered:
                self.covered |= items
                self.picks.append((parent, action))
        number, new = super().add(state, parent, action)
        if new and number >= 0:
            for item in refusals(self.model, state):
                self.refusals.setdefault(item, number)
        return number, new


Refusal = tuple[Action, list[str], list[str]]
"""A call the model refuses, with the codes its refusal may carry and the clauses of its guard."""


def refusals(model: Model, state: State) -> dict[str, Refusal]:
    """Each call of ``state`` that exactly one guard of the model refuses (``_refusals.py``), as
    its item ``refuse:<operation>|<guard>`` (``…|fenced`` beside an open record of an earlier
    incarnation, as for edges), the first call in a fixed order for each item. One guard at a
    time, so that each guard is shown to refuse by itself: a guard an implementation lacks is then
    seen, whatever the other guards say (every condition decides the outcome on its own)."""
    if state.crashed:
        return {}
    fenced = "|fenced" if _fenced(state) else ""
    out: dict[str, Refusal] = {}
    for action in candidates(state):
        found = refusing(model, state, action)
        if len(found) == 1 and request_for(action, state, model.config) is not None:
            ((guard, codes),) = found
            clauses = list(CLAUSES[action.name][guard])
            contexts = [fenced, *(f"|{c}" for c in _target_contexts(model, state, action))]
            for c in contexts:
                out.setdefault(f"refuse:{action.name}|{guard}{c}", (action, sorted(codes), clauses))
    return out


_WHO = frozenset({"slot", "member", "task"})
"""The arguments that say which record an operation acts on, not what it does to it."""


def _variant(action: Action) -> str:
    """What an operation does, apart from which record it does it to: ``|decision=rejected`` for a
    review that rejects. A crash point is crashed once per variant of its operation, for recovery
    must finish each (outside review 64's P10: reconciliation that re-sent only an approval's
    *approved* decision conformed while every crash of a review was after an approval)."""
    what = [f"{key}={value}" for key, value in action.args if key not in _WHO]
    return "|" + ",".join(what) if what else ""


def _trace(search: _Covering, parent: int, action: Action) -> list[tuple[Action | None, State]]:
    state = search.states[parent]
    after = next(s for a, s in search.model.successors(state) if a == action)
    assert isinstance(after, State)
    last: list[tuple[Action, State]] = [(action, after)]
    if action.crash_after:
        restart, restarted = next(iter(search.model.successors(after)))
        assert isinstance(restarted, State)
        last.append((restart, restarted))
    return search.trace(parent, *last)


def _target_contexts(model: Model, state: State, action: Action) -> list[str]:
    """:func:`_record_contexts` of the record a call acts on: its approval or plan (``slot``), its
    task (``task``), or the task its member holds (a suspension)."""
    args = dict(action.args)
    family = action.name.split(".")[0]
    if "slot" in args and family in ("approval", "plan"):
        field = "approvals" if family == "approval" else "plans"
        return _record_contexts(field, getattr(state, field)[args["slot"]], state.clock)
    task = args.get("task", model.holds(state, args["member"]) if action.name == "task.suspend" else NONE)
    return _record_contexts("tasks", state.tasks[task], state.clock) if task != NONE else []


Trace = list[tuple[Action | None, State]]
Placed = dict[int, list[Refusal]]
"""Position in a trace (0: before its first step) → the refused calls sent there."""


def choose(search: _Covering) -> list[tuple[Trace, Placed]]:
    """The traces of the picks, less those that are a prefix of another; then every refusal item
    the search reached, sent where a trace first passes a state that offers it, or else at the
    end of a trace of its own to the first state that does. A refused call changes nothing, so
    it is sent within a trace without changing what the trace goes on to do."""
    traces = [_trace(search, parent, action) for parent, action in search.picks]
    keys = [tuple(a for a, _ in t) for t in traces]
    kept = [t for t, k in zip(traces, keys, strict=True) if not any(o != k and o[: len(k)] == k for o in keys)]
    chosen: list[tuple[Trace, Placed]] = [(trace, {}) for trace in kept]
    placed: set[str] = set()
    for trace, at in chosen:
        for position, (_, state) in enumerate(trace):
            for item, refusal in sorted(refusals(search.model, state).items()):
                if item not in placed:
                    placed.add(item)
                    at.setdefault(position, []).append(refusal)
    for item, number in sorted(search.refusals.items(), key=lambda pair: (pair[1], pair[0])):
        if item in placed:
            continue
        trace = search.trace(number)
        offered = refusals(search.model, trace[-1][1])
        here = sorted(other for other in offered if other not in placed)
        placed.update(here)
        chosen.append((trace, {len(trace) - 1: [offered[other] for other in here]}))
    search.covered |= placed
    return chosen


def vector(config: Config, trace: Trace, name: str, refused: Placed | None = None) -> dict[str, Any]:
    """The requests of ``trace`` and what each must leave. A step after which a restart changes
    nothing in the model (its reconciliation leaves the very state) says so (``restart_holds``):
    the replay restarts the driver there, with nothing crashed, and the snapshot must be as it was
    (REC-1, REC-2: reconciliation is judged in every state a vector passes, not only where a crash
    left the stores — outside review 63's P8, a restart that expired an approved approval the
    monitor had not yet expired, passed every vector)."""
    model = Model(config, reduce=False)
    refused = refused or {}
    steps = _refused_steps(config, trace[0][1], refused.get(0, []))
    for position, ((_, before), (action, after)) in enumerate(itertools.pairwise(trace), start=1):
        assert action is not None
        step: dict[str, Any] = {"operation": action.name, "model_action": action.to_json()}
        step["request"] = request_for(action, before, config)
        if action.crash_after:
            step["crash_after"] = action.crash_after
        else:
            step["expect"] = abstract(snapshot(after, config))
            if not after.crashed and reconcile(model, after) == after:
                step["restart_holds"] = True
        steps.append(step)
        steps += _refused_steps(config, after, refused.get(position, []))
    operations = sorted({s["operation"] for s in steps if "refused" not in s})
    document = {"name": name, "operations": operations, "steps": steps}
    refuses = sorted({s["operation"] for s in steps if "refused" in s})
    return {**document, "refuses": refuses} if refuses else document


def _refused_steps(config: Config, state: State, calls: list[Refusal]) -> list[dict[str, Any]]:
    """The steps that send calls the model refuses in ``state``: each must be refused, definite,
    with one of its codes (``refused``), and leave the snapshot as it was (``expect``)."""
    expect = abstract(snapshot(state, config))
    return [
        {
            "operation": action.name,
            "model_action": action.to_json(),
            "request": request_for(action, state, config),
            "refused": codes,
            "clauses": clauses,
            "expect": expect,
        }
        for action, codes, clauses in calls
    ]


def build(config_name: str) -> dict[str, Any]:
    config = load_config(config_name)
    search = _Covering(Model(config))
    _model.EDGE_LOG.append(set())  # the search notes the edges each move takes, as explore's does
    try:
        _bfs(search)
    finally:
        _model.EDGE_LOG.pop()
    chosen = choose(search)
    vectors = [vector(config, trace, f"{config_name}-{k:03d}", at) for k, (trace, at) in enumerate(chosen)]
    return {
        "format": "teamproto-vectors/1",
        "config": config_name,
        "init": init_request(config),
        "ttl_seconds": config.ttl_ticks,
        "covers": sorted(search.covered),
        "vectors": vectors,
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def source_digest() -> str:
    """sha256 over every input of the vectors: the model, its machines and configurations, the
    explorer and what they import (tables, ids, redaction, the secret corpus), and the suite's own
    translation, abstraction and generator. Other files of ``spec/`` (clauses, diagrams, schemas,
    invariants) do not change a vector, so editing them does not make the vectors stale."""
    root = Path(__file__).resolve().parent.parent
    files = sorted(root.glob("spec/model/**/*.py")) + sorted(root.glob("spec/machines/**/*.py"))
    files += sorted(root.glob("spec/model/configs/*.json"))
    files += [
        root / "spec" / name for name in ("_tables.py", "explore.py", "ids.py", "redaction.py", "secret_corpus.py")
    ]
    files += [
        root / "conformance" / name
        for name in ("_abstract.py", "_translate.py", "_vectors.py", "_schema_src.py", "_refusals.py")
    ]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def write_all(folder: Path = VECTORS) -> dict[Path, str]:
    """Rebuild every vector file and the protocol's schema files; return those that changed, each
    with what changed (:func:`what_changed`)."""
    changed = {}
    for path, text in expected_files(folder).items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if _write(path, text):
            changed[path] = what_changed(old, text)
    return changed


def what_changed(old: str | None, new: str) -> str:
    """What a rebuild changed in one file, in words: a model edit that changes no behaviour moves
    only the source stamp; one that does names the vectors added, removed and changed (and the
    covered items gained and lost), so that a protocol designer sees at once what the edit did."""
    if old is None:
        return "new file"
    try:
        before, after = json.loads(old), json.loads(new)
    except ValueError:
        return "rewritten (the old file was not JSON)"
    if "vectors" not in after:
        return "schema rewritten"
    if {**before, "source": None} == {**after, "source": None}:
        return "only the source stamp (no vector changed)"
    was = {v["name"]: v for v in before.get("vectors", [])}
    now = {v["name"]: v for v in after["vectors"]}
    parts = []
    for word, names in (
        ("added", sorted(now.keys() - was.keys())),
        ("removed", sorted(was.keys() - now.keys())),
        ("changed", sorted(n for n in now.keys() & was.keys() if now[n] != was[n])),
    ):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            parts.append(f"{len(names)} vector(s) {word} ({shown})")
    gained = sorted(set(after.get("covers", [])) - set(before.get("covers", [])))
    lost = sorted(set(before.get("covers", [])) - set(after.get("covers", [])))
    parts += [f"{len(items)} covered item(s) {word}" for word, items in (("gained", gained), ("lost", lost)) if items]
    return "; ".join(parts) or "the file's other fields changed"


def _schema_files(folder: Path) -> dict[Path, str]:
    from ._schema_src import reply_schema, request_schema

    schemas = folder.parent / "schemas"
    return {
        schemas / "request.schema.json": render(request_schema()),
        schemas / "reply.schema.json": render(reply_schema()),
    }


def expected_files(folder: Path = VECTORS, only: list[str] | None = None) -> dict[Path, str]:
    stamp = source_digest()
    names = pinned() if only is None else only
    files = {folder / f"{name}.json": render({**build(name), "source": stamp}) for name in names}
    return {**files, **_schema_files(folder)}


def _write(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def stale(folder: Path = VECTORS, rebuild: list[str] | None = None) -> list[Path]:
    """Vector files whose ``source`` stamp is not the digest of the sources now, missing files,
    strays, stale schema files; and those of ``rebuild`` that differ from a fresh build."""
    stamp = source_digest()
    wanted = {folder / f"{name}.json" for name in pinned()}
    out = [
        p for p in sorted(wanted) if not p.exists() or json.loads(p.read_text(encoding="utf-8")).get("source") != stamp
    ]
    out += [p for p in sorted(folder.glob("*.json")) if p not in wanted]
    fresh = {**_schema_files(folder), **(expected_files(folder, rebuild) if rebuild else {})}
    out += [
        p for p, text in fresh.items() if (not p.exists() or p.read_text(encoding="utf-8") != text) and p not in out
    ]
    return out


def load(folder: Path = VECTORS) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]


__all__ = ["VECTORS", "build", "load", "pinned", "source_digest", "stale", "what_changed", "write_all"]
