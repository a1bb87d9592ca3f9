"""Symmetry reduction: members are interchangeable, and so are tasks (not with liveness).

A state is replaced by the least of its images under every permutation of member indices and of
task indices; two states that differ only by a renaming are then one state. Slots of protocol
records are not permuted: a free record always takes the first free slot, so they carry no
identity of their own.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from itertools import permutations
from typing import Any

from ._state import NONE, Message, Owed, State


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


def permute(s: State, pm: tuple[int, ...], pt: tuple[int, ...]) -> State:
    """The image of ``s`` when member i becomes pm[i] and task t becomes pt[t]."""
    members: list[Any] = [None] * len(s.members)
    jobs: list[Any] = [None] * len(s.jobs)
    for i, member in enumerate(s.members):
        members[pm[i]] = replace(member, task=_map(pt, member.task))
        jobs[pm[i]] = replace(s.jobs[i], task=_map(pt, s.jobs[i].task))
    tasks: list[Any] = [None] * len(s.tasks)
    for t, task in enumerate(s.tasks):
        tasks[pt[t]] = replace(task, owner=_map(pm, task.owner))
    return replace(
        s,
        members=tuple(members),
        jobs=tuple(jobs),
        tasks=tuple(tasks),
        approvals=tuple(replace(a, requester=_map(pm, a.requester), task=_map(pt, a.task)) for a in s.approvals),
        executions=tuple(replace(e, requester=_map(pm, e.requester), task=_map(pt, e.task)) for e in s.executions),
        plans=tuple(replace(p, requester=_map(pm, p.requester), task=_map(pt, p.task)) for p in s.plans),
        shutdowns=tuple(
            replace(
                d,
                target=_map(pm, d.target),
                released=_map(pt, d.released),
                waited=tuple(sorted(pm[m] for m in d.waited)),
            )
            for d in s.shutdowns
        ),
        bus=tuple(
            sorted(Message(_key(m.key, pm, pt), m.status, m.copy, _info(m.key[0], m.info, pm, pt)) for m in s.bus)
        ),
        outbox=tuple(sorted(Owed(_key(o.key, pm, pt), o.status, _info(o.key[0], o.info, pm, pt)) for o in s.outbox)),
    )


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
