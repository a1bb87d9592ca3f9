"""Symmetry reduction: members are interchangeable, and so are tasks (not with liveness).

A state is replaced by the least of its images under every permutation of member indices and of
task indices; two states that differ only by a renaming are then one state. Slots of protocol
records are not permuted: a free record always takes the first free slot, so they carry no
identity of their own.
"""

from __future__ import annotations

from functools import cache
from itertools import permutations, product
from typing import Any

from ._state import NONE, Approval, Execution, Job, Member, Message, Owed, Plan, Shutdown, State, Task, replace


def _map(perm: tuple[int, ...], index: int) -> int:
    return index if index == NONE else perm[index]


def _info(kind: str, info: tuple[tuple[str, Any], ...], pm: tuple[int, ...], pt: tuple[int, ...]) -> Any:
    facts = dict(info)
    if kind == "member_lost":
        facts["flagged"] = tuple(sorted(pt[t] for t in facts["flagged"]))
    elif kind == "task_suspended":
        facts["member"] = _map(pm, facts["member"])
    elif kind == "shutdown_ack":
        facts["released"] = _map(pt, facts["released"])
        facts["waited"] = tuple(sorted(pm[m] for m in facts["waited"]))
    return tuple(sorted(facts.items()))


def _key(key: tuple[str, int, int], pm: tuple[int, ...], pt: tuple[int, ...]) -> tuple[str, int, int]:
    kind, ref, phase = key
    if kind == "member_lost":
        return kind, pm[ref], phase
    if kind == "task_suspended":
        return kind, pt[ref], phase
    return key


PERMUTED = ("members", "tasks", "jobs", "approvals", "executions", "plans", "shutdowns", "bus", "outbox")
"""The fields of a state that name members or tasks (the others are left as they are)."""


def image(name: str, value: tuple[Any, ...], pm: tuple[int, ...], pt: tuple[int, ...]) -> tuple[Any, ...]:
    """The field ``name`` of a state (its tuple of records ``value``) when member i becomes
    pm[i] and task t becomes pt[t]: each field's image depends on that field alone."""
    if name == "members" or name == "jobs":
        out: list[Any] = [None] * len(value)
        for i, record in enumerate(value):
            out[pm[i]] = replace(record, task=_map(pt, record.task))
        return tuple(out)
    if name == "tasks":
        out = [None] * len(value)
        for t, task in enumerate(value):
            out[pt[t]] = replace(task, owner=_map(pm, task.owner))
        return tuple(out)
    if name == "approvals" or name == "executions" or name == "plans":
        return tuple(replace(r, requester=_map(pm, r.requester), task=_map(pt, r.task)) for r in value)
    if name == "shutdowns":
        return tuple(
            replace(
                d,
                target=_map(pm, d.target),
                released=_map(pt, d.released),
                waited=tuple(sorted(pm[m] for m in d.waited)),
            )
            for d in value
        )
    if name == "bus":
        return tuple(
            sorted(Message(_key(m.key, pm, pt), m.status, m.copy, _info(m.key[0], m.info, pm, pt)) for m in value)
        )
    if name == "outbox":
        return tuple(sorted(Owed(_key(o.key, pm, pt), o.status, _info(o.key[0], o.info, pm, pt)) for o in value))
    raise ValueError(f"{name} names no member or task")


def permute(s: State, pm: tuple[int, ...], pt: tuple[int, ...]) -> State:
    """The image of ``s`` when member i becomes pm[i] and task t becomes pt[t]."""
    return replace(s, **{name: image(name, getattr(s, name), pm, pt) for name in PERMUTED})


@cache
def _perms(members: int, tasks: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    identity = (tuple(range(members)), tuple(range(tasks)))
    others = [(pm, pt) for pm in permutations(range(members)) for pt in permutations(range(tasks))]
    return [identity] + [p for p in others if p != identity]


def canonical(s: State) -> State:
    """The least image of ``s`` under all member and task permutations."""
    best = s
    for pm, pt in _perms(len(s.members), len(s.tasks))[1:]:
        image = permute(s, pm, pt)
        if image < best:
            best = image
    return best


# ---- the fast canonical key --------------------------------------------------------------------
#
# ``canonical`` builds a whole State per permutation; the explorer only needs a hashable key that
# is equal for exactly the states of one orbit. ``canonical_key`` is the least of the tuples
# ``encode(s, pm, pt)`` over all permutations, computed stage by stage: the member-local part
# depends on ``pm`` only and the task-local part on ``pt`` only, so their least values are their
# sorted tuples, and only the permutations that tie on both (usually one or two) have their cross
# references and protocol records encoded. ``model_tests/test_symmetry.py`` checks it against the
# brute force and against ``canonical``.


def _fields(cls: Any, refs: set[str]) -> tuple[str, ...]:
    return tuple(f for f in cls.__dataclass_fields__ if f not in refs)


_MEMBER_LOCAL = _fields(Member, {"task"})
_JOB_LOCAL = _fields(Job, {"task"})
_TASK_LOCAL = _fields(Task, {"owner"})


def _member_base(s: State, m: int) -> tuple[Any, ...]:
    member, job = s.members[m], s.jobs[m]
    return (*(getattr(member, f) for f in _MEMBER_LOCAL), *(getattr(job, f) for f in _JOB_LOCAL))


def _task_base(s: State, t: int) -> tuple[Any, ...]:
    if t == NONE:
        return ()
    task = s.tasks[t]
    return tuple(getattr(task, f) for f in _TASK_LOCAL)


def _member_local(s: State, m: int) -> tuple[Any, ...]:
    """What member ``m`` is, in terms no renaming changes: its own fields, the tasks it points at,
    and the protocol records that name it (colour refinement: fewer ties, fewer permutations)."""
    roles = (
        *(("approval", i, a.status) for i, a in enumerate(s.approvals) if a.requester == m),
        *(("plan", i, p.status) for i, p in enumerate(s.plans) if p.requester == m),
        *(("shutdown", i, d.status, m in d.waited) for i, d in enumerate(s.shutdowns) if d.target == m),
    )
    return (_member_base(s, m), _task_base(s, s.members[m].task), _task_base(s, s.jobs[m].task), roles)


def _task_local(s: State, t: int) -> tuple[Any, ...]:
    """What task ``t`` is, in terms no renaming changes (see :func:`_member_local`)."""
    owner = s.tasks[t].owner
    roles = (
        *(("approval", i) for i, a in enumerate(s.approvals) if a.task == t),
        *(("plan", i) for i, p in enumerate(s.plans) if p.task == t),
        *(("shutdown", i) for i, d in enumerate(s.shutdowns) if d.released == t),
    )
    return (_task_base(s, t), () if owner == NONE else _member_base(s, owner), roles)


def _orders(values: list[tuple[Any, ...]]) -> tuple[tuple[Any, ...], list[tuple[int, ...]]]:
    """The sorted tuple of ``values`` and every permutation ``p`` (old index → new) that sorts them."""
    order = sorted(range(len(values)), key=values.__getitem__)
    groups: list[list[int]] = []
    for index in order:
        if groups and values[groups[-1][0]] == values[index]:
            groups[-1].append(index)
        else:
            groups.append([index])
    perms: list[tuple[int, ...]] = []
    for arrangement in product(*(permutations(g) for g in groups)):
        perm = [0] * len(values)
        for new, old in enumerate(old for group in arrangement for old in group):
            perm[old] = new
        perms.append(tuple(perm))
    return tuple(values[i] for i in order), perms


def _encoder(cls: Any, members: set[str], tasks: set[str]) -> tuple[tuple[str, str], ...]:
    return tuple((f, "m" if f in members else "t" if f in tasks else "") for f in cls.__dataclass_fields__)


_APPROVAL = _encoder(Approval, {"requester"}, {"task"})
_EXECUTION = _encoder(Execution, {"requester"}, {"task"})
_PLAN = _encoder(Plan, {"requester"}, {"task"})
_SHUTDOWN = _encoder(Shutdown, {"target", "waited"}, {"released"})
_ENCODED: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _encode(record: Any, fields: tuple[tuple[str, str], ...], pm: tuple[int, ...], pt: tuple[int, ...]) -> Any:
    """``record`` as a tuple of its fields with member and task references renamed (memoised:
    records are shared between states, so the same few are encoded over and over)."""
    memo = (record, pm, pt)
    known = _ENCODED.get(memo)
    if known is not None:
        return known
    if len(_ENCODED) > 1_000_000:
        _ENCODED.clear()
    out = []
    for name, kind in fields:
        value = getattr(record, name)
        if kind == "m":
            value = tuple(sorted(pm[m] for m in value)) if isinstance(value, tuple) else _map(pm, value)
        elif kind == "t":
            value = _map(pt, value)
        out.append(value)
    _ENCODED[memo] = encoded = tuple(out)
    return encoded


def _records(s: State, pm: tuple[int, ...], pt: tuple[int, ...]) -> tuple[Any, ...]:
    """Everything that names a member or a task, under the permutation (the last stage)."""
    inv_m = sorted(range(len(pm)), key=pm.__getitem__)
    inv_t = sorted(range(len(pt)), key=pt.__getitem__)
    return (
        tuple(_map(pt, s.members[i].task) for i in inv_m),
        tuple(_map(pt, s.jobs[i].task) for i in inv_m),
        tuple(_map(pm, s.tasks[i].owner) for i in inv_t),
        tuple(_encode(a, _APPROVAL, pm, pt) for a in s.approvals),
        tuple(_encode(e, _EXECUTION, pm, pt) for e in s.executions),
        tuple(_encode(p, _PLAN, pm, pt) for p in s.plans),
        tuple(_encode(d, _SHUTDOWN, pm, pt) for d in s.shutdowns),
        tuple(sorted((_key(m.key, pm, pt), m.status, m.copy, _info(m.key[0], m.info, pm, pt)) for m in s.bus)),
        tuple(sorted((_key(o.key, pm, pt), o.status, _info(o.key[0], o.info, pm, pt)) for o in s.outbox)),
    )


def _head(s: State) -> tuple[Any, ...]:
    return (s.clock, s.monitor_done, s.crashed, s.profile_changes, s.runs)


def encode(s: State, pm: tuple[int, ...], pt: tuple[int, ...]) -> tuple[Any, ...]:
    """The key of the image of ``s`` under (pm, pt), stage by stage (see above)."""
    inv_m = sorted(range(len(pm)), key=pm.__getitem__)
    inv_t = sorted(range(len(pt)), key=pt.__getitem__)
    return (
        _head(s),
        tuple(_member_local(s, i) for i in inv_m),
        tuple(_task_local(s, i) for i in inv_t),
        _records(s, pm, pt),
    )


def canonical_key(s: State) -> tuple[Any, ...]:
    """The least ``encode(s, pm, pt)`` over all permutations: equal exactly within an orbit."""
    members, member_perms = _orders([_member_local(s, m) for m in range(len(s.members))])
    tasks, task_perms = _orders([_task_local(s, t) for t in range(len(s.tasks))])
    rest = min(_records(s, pm, pt) for pm in member_perms for pt in task_perms)
    return (_head(s), members, tasks, rest)
