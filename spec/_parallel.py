"""One breadth-first search on several processes: the flat engine's (:mod:`spec._flat_explore`),
its states shared out among forked processes by their class's key.

Each process keeps the classes whose key (dead data erased, members and tasks renamed: the
visited set's key) hashes to its number modulo the processes, in a search of its own
(:class:`spec._flat_explore.FlatSearch`): it expands its states of one depth, checks every step it
takes and every new state it keeps, and queues each state it reaches that another process keeps
for that process (once: it remembers what it sent). Then every process hands its queues over,
keeps what it is sent and is new to it (checking it as a new state), and the next depth begins
when every process is done with this one. So the processes expand, depth by depth, exactly the
classes the one-process search expands, each class once, and take exactly its transitions: the
same states, transitions, states by depth, deadlocks, checks broken, edges, crash points and
bounds reached (``model_tests/test_parallel.py`` compares them on pinned configurations, healthy
and with mutants). A class may be represented by another of its states than in the one-process
search (whichever reaches its owner first); the explorer's reductions make that immaterial, as
they do for the one-process search's own choice.

A check broken is reported with a shortest trace, as by the one-process search: the first found at
the least depth, rebuilt at the end by replaying the actions on its path from the initial state
(each process keeps, for each of its states, the action into it and its parent's global number:
its number in its process times the processes plus the process's). Which of several violations
of one check at that depth is shown may differ from the one-process search's.

Bounds: ``max_states`` is read between depths (the search may go past it by one depth's states);
``out_of_time`` is polled by every process every :data:`spec.explore.POLL_EVERY` states; a run
stopped by either is incomplete. ``stop_on`` stops the search at the end of the depth where the
check named was broken. No checkpoint: a search spread over processes cannot be saved.
"""

from __future__ import annotations

import gc
import multiprocessing
import queue
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._flat_explore import TRIM_EVERY, FlatSearch, _check_state, _expand, _View, finish, replay
from ._records import Report, Violation
from .errors import ProtocolError
from .explore import POLL_EVERY, LastInstants, check_boundaries, flat_engine, report_liveness
from .model import _model
from .model._action import Action
from .model._bounds import unreached_bounds
from .model._flat import FlatModel, decode
from .model._model import Model

_Path = list[tuple[Action | None, Any]]


class SearchFailed(ProtocolError):
    """A process of a spread search failed (out of memory, killed, a bug): the search is lost,
    nothing was written. ``detail`` holds the process's traceback, when it could send one."""

    def __init__(self, process: int, summary: str, detail: str = "") -> None:
        self.process, self.summary, self.detail = process, summary, detail
        super().__init__(
            f"process {process} of the search failed: {summary}; "
            "search in one process with --jobs 1, or give it more memory"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (SearchFailed, (self.process, self.summary, self.detail))


def search_parallel(
    model: Model,
    processes: int,
    *,
    stop_on: str | None = None,
    max_states: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    out_of_time: Callable[[], bool] | None = None,
    fingerprints: bool = False,
    bounds_reached: bool = False,
    graph_out: list[Any] | None = None,
) -> Report:
    """:func:`spec.explore.explore` of ``model`` on ``processes`` forked processes (see the module
    docstring); ``bounds_reached`` also fills the report's ``unreached_bounds`` when the search
    completes without fingerprints (as ``teamproto check`` does from the stored states). With the
    liveness check, the joined graph the check read is appended to ``graph_out`` (for the tests):
    (offsets, targets, goal, and the :class:`_Joined` that numbers the states)."""
    if processes < 2:
        raise ValueError(f"a search spread over processes needs at least 2, not {processes}")
    if not flat_engine(model):
        raise ValueError(f"{model.config.name}: only the flat engine's searches can be spread over processes")
    context = multiprocessing.get_context("fork")  # the children hash strings as this process does
    inboxes = [context.Queue() for _ in range(processes)]
    orders = [context.Queue() for _ in range(processes)]
    results = context.Queue()
    children = [
        context.Process(
            target=_work,
            args=(_Part(model, me, processes, inboxes, orders[me], results, stop_on, fingerprints, out_of_time),),
            daemon=True,
        )
        for me in range(processes)
    ]
    for child in children:
        child.start()
    try:
        report = _lead(model, children, orders, results, max_states, progress, fingerprints, bounds_reached, graph_out)
    except BaseException:  # a process failed, or Ctrl-C: the others would wait for it for ever
        for child in children:
            child.kill()
        raise
    finally:
        for child in children:
            child.join()
    return report


def _lead(
    model: Model,
    children: list[Any],
    orders: list[Any],
    results: Any,
    max_states: int | None,
    progress: Callable[[int, int, int], None] | None,
    fingerprints: bool,
    bounds_reached: bool,
    graph_out: list[Any] | None,
) -> Report:
    """The parent's part: tell the processes when to go on, relay their progress, join their reports."""
    processes = len(children)

    def receive(reported: int = 0) -> Any:
        while True:
            try:
                message = results.get(timeout=1.0)
            except queue.Empty:
                dead = [me for me, child in enumerate(children) if not child.is_alive()]
                if len(dead) > reported:
                    code = children[dead[0]].exitcode
                    raise SearchFailed(dead[0], f"it ended (exit status {code}) without its report") from None
                continue
            if message[0] == "failed":
                raise SearchFailed(message[1], message[2], message[3])
            return message

    level = 0
    counts, waits = [0] * processes, [0] * processes
    while True:
        done: dict[int, tuple[int, int, bool]] = {}
        while len(done) < processes:
            message = receive()
            if message[0] == "progress":
                counts[message[1]], waits[message[1]] = message[2], message[3]
                if progress is not None:
                    progress(sum(counts), sum(waits), level)
                continue
            _, me, count, waiting, stop = message
            counts[me], waits[me] = count, waiting
            done[me] = (count, waiting, stop)
        total = sum(count for count, _, _ in done.values())
        waiting = sum(w for _, w, _ in done.values())
        stopped = any(stop for _, _, stop in done.values())
        over = max_states is not None and total >= max_states
        if progress is not None:
            progress(total, waiting, level)
        go = waiting > 0 and not stopped and not over
        for order in orders:
            order.put("go" if go else ("stop" if over else "end"))
        if not go:
            break
        level += 1
    parts: list[Any] = []
    while len(parts) < processes:  # a process that has ended has sent its part
        parts.append(receive(len(parts)))
    parts.sort(key=lambda p: p[1])
    return _join(model, processes, [p[2] for p in parts], over, fingerprints, bounds_reached, graph_out)


@dataclass
class _Part:
    """What one process of the search is given (forked: nothing is pickled)."""

    model: Model
    me: int
    processes: int
    inboxes: list[Any]  # each process's queue of the states it is sent, one list a depth a sender
    orders: Any  # this process's queue of the parent's word after each depth: go, end or stop
    results: Any  # the parent's queue: progress, each depth's end, the report or the failure
    stop_on: str | None
    fingerprints: bool
    out_of_time: Callable[[], bool] | None


def _work(part: _Part) -> None:
    """One process's part (forked): its search, level by level, until the parent says to end."""
    try:
        part.results.put(("part", part.me, _search(part)))
    except BaseException as error:  # reported to the parent, which raises it
        import traceback

        part.results.put(("failed", part.me, f"{type(error).__name__}: {error}", traceback.format_exc()))


def _search(part: _Part) -> dict[str, Any]:
    model, me, processes, inboxes, orders, results = (
        part.model,
        part.me,
        part.processes,
        part.inboxes,
        part.orders,
        part.results,
    )
    stop_on, fingerprints, out_of_time = part.stop_on, part.fingerprints, part.out_of_time
    gc.disable()  # as search_flat: millions of acyclic containers, kept
    search = FlatSearch(model, stop_on, None, fingerprints)
    search.me, search.workers = me, processes
    search.outbox = [[] for _ in range(processes)]
    search.arrived = [array("q") for _ in range(processes)]
    search.lazy = []
    report = search.report
    _model.EDGE_LOG.append(set())
    initial = search.flat.initial()
    view = search.view(initial)
    timed_out = False
    if search.owner(initial, view.numbers) == me:
        start, _ = search.add(initial, -1, None, 0)
        _check_state(search, start, view, None)
    found_at = [-1] * len(search.lazy)  # the depth being expanded when each violation was found
    level = 0
    while True:
        while search.waiting() and search.depth[search.head] == level and not search.stopped():
            number, numbers = search.take()
            state = search.memo.state(numbers)
            report.expanded_through = level - 1
            before = search.last = _View(state, search.memo, numbers)
            kept = search.results.popleft()
            before.res = None if kept is None else list(kept)
            before.clean = search.cleans.popleft()
            _expand(search, number, state, before)
            if number % TRIM_EVERY == 0:
                search.trim()
            if number % POLL_EVERY == 0:  # as the one-process search: at its first state too
                results.put(("progress", me, search.count, search.waiting()))
                if out_of_time is not None and out_of_time():
                    timed_out = True
                    break
        for other in range(processes):
            if other != me:
                inboxes[other].put((me, search.outbox[other]))
                search.outbox[other] = []
        for _ in range(processes - 1):
            sender, sent = inboxes[me].get()
            keep(search, sent, level + 1, search.arrived[sender] if search.keep_graph else None)
        found_at += [level] * (len(search.lazy) - len(found_at))
        stopping = timed_out or search.stopped()
        results.put(("level", me, search.count, search.waiting(), stopping))
        order = orders.get()
        if order != "go":
            break
        level += 1
    complete = not timed_out and order != "stop"
    if complete and not search.waiting():
        report.expanded_through = max(search.depth, default=0)
    elif not timed_out:
        report.expanded_through = level
    edges = _model.EDGE_LOG.pop()
    unreached = None
    if not fingerprints and model.mutant is None and complete:
        unreached = unreached_bounds(model.config, search.model_states(), bool(report.crashed_at))
    return {
        "count": search.count,
        "parent": search.parent.tobytes(),
        "depth": search.depth.tobytes(),
        "via": (search.via.actions, search.via.codes.tobytes()),
        "transitions": report.transitions,
        "deadlocks": report.deadlocks,
        "violations": {name: (v.clause, v.message) for name, v in report.violations.items()},
        "lazy": [
            (name, number * processes + me, last, (at, search.depth[number] + len(last)))
            for (name, number, last), at in zip(search.lazy, found_at, strict=True)
        ],
        "first": {key: (number * processes + me, action) for key, (number, action) in search.first.items()},
        "edges": report.edges_taken | edges,
        "crashed_at": report.crashed_at,
        "complete": complete,
        "timed_out": timed_out,
        "expanded_through": report.expanded_through,
        "unreached": unreached,
        "seen_bits": search.seen.bits if fingerprints else 0,
        "graph": None
        if not (search.keep_graph and complete and not search.waiting())  # every state expanded
        else {
            "offsets": search.offsets.tobytes(),
            "targets": search.targets.tobytes(),
            "remote": search.remote.tobytes(),
            "arrived": [a.tobytes() for a in search.arrived],
            "goal": bytes(search.goal),
            "before": search.instants.before,
            "after": search.instants.after,
        },
    }


def keep(search: FlatSearch, sent: list[Any], depth: int, arrived: array[int] | None = None) -> None:
    """Keep the states another process sent (found at ``depth``) that are new here, with their
    checks' results, as computed by the sender (``_expand``, as ``_check_state`` does); with
    ``arrived``, note there the number here of each (new or known), in the sender's slot order."""
    for parent, action, state, key, kept, clean, found in sent:
        target, new = search.add(state, parent, action, depth, key)
        if arrived is not None:
            arrived.append(target)
        if new:
            for clause, name, message in found:
                search.violate(clause, name, message, target)
            search.results.append(kept)
            search.cleans.append(clean)


class _Joined:
    """The processes' states by global number: each one's parent, action in and depth."""

    def __init__(self, processes: int, parts: list[dict[str, Any]]) -> None:
        self.processes = processes
        self.parents, self.depths, self.actions, self.codes = [], [], [], []
        for part in parts:
            parent, depth, codes = array("q"), array("H"), array("I")
            parent.frombytes(part["parent"])
            depth.frombytes(part["depth"])
            codes.frombytes(part["via"][1])
            self.parents.append(parent)
            self.depths.append(depth)
            self.actions.append(part["via"][0])
            self.codes.append(codes)

    def step(self, number: int) -> tuple[Action | None, int]:
        """The action into state ``number`` and its parent's number (-1: the initial state)."""
        who, local = number % self.processes, number // self.processes
        return self.actions[who][self.codes[who][local]], self.parents[who][local]

    def depth(self, number: int) -> int:
        return self.depths[number % self.processes][number // self.processes]

    def witness(self, number: int, *last: Action) -> list[str]:
        return [str(action) for action in self.actions_to(number)] + [str(action) for action in last]

    def actions_to(self, number: int) -> list[Action]:
        path: list[Action] = []
        while number >= 0:
            action, number = self.step(number)
            if action is not None:
                path.append(action)
        path.reverse()
        return path


def _join(
    model: Model,
    processes: int,
    parts: list[dict[str, Any]],
    over: bool,
    fingerprints: bool,
    bounds_reached: bool,
    graph_out: list[Any] | None = None,
) -> Report:
    """One report from the processes' (the one-process search's fields, see ``search_flat``)."""
    config = model.config
    report = Report(config.name, None, require_coverage=config.require_coverage)
    report.fingerprints = fingerprints
    joined = _Joined(processes, parts)
    report.states = sum(p["count"] for p in parts)
    report.transitions = sum(p["transitions"] for p in parts)
    report.deadlocks = sum(p["deadlocks"] for p in parts)
    report.crashed_at = set().union(*(p["crashed_at"] for p in parts))
    report.edges_taken = set().union(*(p["edges"] for p in parts))
    report.complete = all(p["complete"] for p in parts) and not over
    if not report.complete:
        report.expanded_through = min(p["expanded_through"] for p in parts)
    flat = FlatModel(config)
    found: dict[str, tuple[tuple[int, int, int], tuple[tuple[Action, Any], ...], str, str]] = {}
    for part in parts:
        for name, number, last, (at, length) in part["lazy"]:
            clause, message = part["violations"][name]
            rank = (at, length, number)  # found first by depth, then the shortest trace
            if name not in found or rank < found[name][0]:
                found[name] = (rank, last, clause, message)
    for name, ((_, _, number), last, clause, message) in sorted(found.items(), key=lambda item: item[1][0]):
        trace = replay(flat, joined.actions_to(number)) + [(action, decode(state)) for action, state in last]
        report.violations[name] = Violation(clause, name, message, trace)
    first: dict[str, tuple[int, Action]] = {}
    for part in parts:
        for key, (number, action) in part["first"].items():
            if key not in first or joined.depth(number) < joined.depth(first[key][0]):
                first[key] = (number, action)
    # the frontier's state: the highest-numbered one (its index in its process × processes + the
    # process), as a one-process search's is the last it found
    last = max(((len(depths) - 1) * processes + who for who, depths in enumerate(joined.depths) if depths), default=0)
    finish(report, [d for depth in joined.depths for d in depth], first, joined.witness, last)
    graphs = [p["graph"] for p in parts]
    if report.complete and config.liveness and all(g is not None for g in graphs):
        _liveness(model, report, flat, joined, graphs, graph_out)
    if report.complete:
        check_boundaries(model, report, first, lambda n: replay(flat, joined.actions_to(n)))
    if bounds_reached and report.complete and not fingerprints and model.mutant is None:
        lists = [p["unreached"] for p in parts if p["unreached"] is not None]
        if len(lists) == processes:  # a bound is unreached when no process's states reach it
            report.unreached_bounds = [b for b in lists[0] if all(b in other for other in lists[1:])]
    return report


def _liveness(
    model: Model,
    report: Report,
    flat: FlatModel,
    joined: _Joined,
    graphs: list[dict[str, Any]],
    graph_out: list[Any] | None,
) -> None:
    """The liveness checks (``spec.explore.report_liveness``, ``LastInstants``) on the processes'
    graphs joined: each placeholder resolved to the number its owner gave the class, and the
    states numbered globally (holes, where one process kept fewer states, are goal states without
    moves)."""
    processes = len(graphs)
    offsets, targets, arrived = [], [], []
    for graph in graphs:
        numbers, moves = array("q"), array("q")
        numbers.frombytes(graph["offsets"])
        moves.frombytes(graph["targets"])
        offsets.append(numbers)
        targets.append(moves)
        lists = []
        for raw in graph["arrived"]:
            got = array("q")
            got.frombytes(raw)
            lists.append(got)
        arrived.append(lists)
    for me, graph in enumerate(graphs):
        remote = array("q")
        remote.frombytes(graph["remote"])
        moves = targets[me]
        for k in range(0, len(remote), 3):
            place, owner, slot = remote[k], remote[k + 1], remote[k + 2]
            number = arrived[owner][me][slot] * processes + owner
            moves[place] = -number - 1 if moves[place] < 0 else number
    size = max(len(o) - 1 for o in offsets) * processes
    all_offsets, all_targets, goal = array("q", [0]), array("q"), bytearray(b"\x01") * size
    for number in range(size):
        who, local = number % processes, number // processes
        if local < len(offsets[who]) - 1:
            all_targets.extend(targets[who][offsets[who][local] : offsets[who][local + 1]])
            goal[number] = graphs[who]["goal"][local]
        all_offsets.append(len(all_targets))
    if graph_out is not None:
        graph_out.append((all_offsets, all_targets, goal, joined))

    def violate(clause: str, name: str, message: str, number: int, *last: tuple[Action, Any]) -> None:
        if name not in report.violations:
            trace = replay(flat, joined.actions_to(number))
            report.violations[name] = Violation(
                clause, name, message, trace + [(action, decode(state)) for action, state in last]
            )

    report_liveness(report, violate, all_offsets, all_targets, goal, model.config.part != "")
    instants = LastInstants()
    for graph in graphs:
        other = LastInstants()
        other.before, other.after = graph["before"], graph["after"]
        instants.join(other)

    def successors(number: int) -> Any:
        return flat.successors(flat_state(flat, joined.actions_to(number)))

    instants.report(violate, successors)


def flat_state(flat: FlatModel, actions: list[Action]) -> Any:
    """The flat state the actions reach from the initial state (as :func:`replay` takes them)."""
    from .model._flat import encode

    return encode(replay(flat, actions)[-1][1])


__all__ = ["SearchFailed", "search_parallel"]
