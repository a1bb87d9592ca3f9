"""One search spread over several processes (``spec/_parallel.py``; issue 18 item 5).

The spread search must report what the one-process flat search reports: states, transitions,
states by depth, completeness, deadlocks, crash points, edges, the checks broken (with a shortest
trace that replays), the witnesses' keys and lengths, and the bounds no state reaches — on the
pinned configurations the flat engine runs (``pair``, ``wide``; ``standard``'s parts by their first
depths; ``pair_plan`` and ``pair_crashes`` by ``bench/explore.py --spread``), with time (``plan``
and ``tiny`` as ``test_flat`` varies them) and on three processes. And it can fail: a search that
places states by their own hash instead of their class's keeps a class twice, and is caught; a
process that fails or dies is reported, not waited for; the bounds stop it, incomplete.
``teamproto check --config standard`` spreads each part over the worker processes.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import pytest

from spec import invariants
from spec._flat_explore import FlatSearch, erase, search_flat
from spec._parallel import search_parallel
from spec._records import Report
from spec.model import Model, load_config, manifest, unreached_bounds
from spec.model._flat import decode
from spec.model._snapshot import snapshot

from .test_flat import _findings, interpreted, time_config


def _model(name: str) -> Model:
    return Model(time_config(name) if name in ("plan", "monitor", "tiny") else load_config(name))


def _one(model: Model, max_states: int | None = None) -> Report:
    """The one-process search, with the bounds no state reaches (as ``teamproto check`` adds them)."""
    search = search_flat(model, max_states=max_states)
    report = search.report
    if report.complete:
        report.unreached_bounds = unreached_bounds(model.config, search.model_states(), bool(report.crashed_at))
    return report


def _seen(report: Report) -> tuple[Any, ...]:
    """What a search finds (``test_flat``'s findings), but which of several traces of one length
    it shows: of each violation and witness, its length."""
    return (
        *_findings(report)[:9],
        {name: (v.clause, len(v.trace)) for name, v in report.violations.items()},
        {key: len(actions) for key, actions in report.witnesses.items()},
        report.unreached_bounds,
    )


def _replays(model: Model, trace: list[tuple[Any, Any]]) -> bool:
    """Each step of ``trace`` is a move of the model from the state before it."""
    return all(
        any(str(a) == str(action) and s == state for a, s in model.successors(before))
        for (_, before), (action, state) in itertools.pairwise(trace)
    )


@pytest.mark.clause("INV-3", "INV-12")
@pytest.mark.parametrize(("name", "processes"), [("pair", 2), ("pair", 3), ("wide", 2), ("plan", 2)])
def test_a_spread_search_reports_what_one_process_reports(name: str, processes: int) -> None:
    model = _model(name)
    spread = search_parallel(model, processes, bounds_reached=True)
    assert _seen(spread) == _seen(_one(model))
    assert spread.complete
    if name != "plan":  # plan runs without its liveness check here
        assert spread.states == manifest()[name]["states"]


@pytest.mark.parametrize("part", ["standard/approvals", "standard/plans"])
def test_the_parts_of_standard_spread_find_the_first_depths_one_process_finds(part: str) -> None:
    """Bounded, the spread search stops between depths: every depth through the one after the
    last it expanded is whole, as in a one-process search that went further."""
    model = Model(load_config(part))
    spread = search_parallel(model, 2, max_states=2_500)
    whole = spread.expanded_through + 2
    assert not spread.complete and spread.states == sum(spread.states_by_depth[:whole])
    one = _one(model, max_states=3 * spread.states)
    assert one.expanded_through >= spread.expanded_through + 1
    assert spread.states_by_depth[:whole] == one.states_by_depth[:whole]
    assert spread.violations == {} == one.violations


def _statuses(snap: dict[str, Any]) -> tuple[Any, ...]:
    """The records' statuses in a snapshot, but the tasks' and jobs': alike in every state of a
    class (the reductions erase finished tasks and jobs and rebase deadlines)."""
    return tuple(
        (name, tuple(doc.get("status") for doc in docs if isinstance(doc, dict)))
        for name, docs in sorted(snap.items())
        if isinstance(docs, list) and name not in ("task", "job")  # finished ones are erased alike
    )


def _depth(trace: list[tuple[Any, Any]]) -> int:
    """The moves on a trace, a crash's restart not counted: the depth it was found at."""
    return sum(1 for action, _ in trace if action is not None and action.name != "restart")


@interpreted
@pytest.mark.clause("INV-1", "REC-2")
@pytest.mark.parametrize("name", ["plan", "tiny"])
def test_violations_are_reported_with_shortest_traces_that_replay(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two planted state checks, failing where the records' statuses are those of the deepest state
    reached through a crash and its restart, or of the deepest other: the spread search reports
    both, each found at the depth the one-process search finds it, with a trace that replays
    from the initial state and ends in a state the check fails on (the processes inherit the
    plants). A check on one exact state would not do: the spread search may keep another state of
    that state's class."""
    model = _model(name)
    search = search_flat(model)
    targets: dict[int, tuple[Any, ...]] = {}  # the deepest state after a crash, the deepest other
    for number in reversed(range(1, search.count)):
        action, statuses = search.via[number], _statuses(snapshot(decode(search.state(number)), model.config))
        kind = int(action is not None and bool(action.crash_after))
        if kind not in targets and statuses not in targets.values():
            targets[kind] = statuses
    assert sorted(targets) == [0, 1]
    checks = []
    for owner, target in targets.items():

        def planted(snap: Any, target: tuple[Any, ...] = target) -> list[str]:
            """Planted: these statuses together are wrong."""
            return ["the planted statuses"] if _statuses(snap) == target else []

        checks.append(invariants.Invariant("INV-1", f"planted_{owner}", "state", False, planted))
    monkeypatch.setattr(invariants, "STATE_INVARIANTS", (*invariants.STATE_INVARIANTS, *checks))
    one, spread = _one(model), search_parallel(model, 2, bounds_reached=True)
    assert {"planted_0", "planted_1"} <= set(one.violations)
    assert _seen(spread)[:9] == _seen(one)[:9] and sorted(spread.violations) == sorted(one.violations)
    for owner, target in targets.items():
        trace = spread.violations[f"planted_{owner}"].trace
        assert _depth(trace) == _depth(one.violations[f"planted_{owner}"].trace)
        assert trace[0][0] is None and _statuses(snapshot(trace[-1][1], model.config)) == target
        assert _replays(model, trace)


def test_a_state_sent_to_its_owner_keeps_the_checks_its_sender_ran() -> None:
    """What one process sends another: each state it reached that the other keeps, checked by the
    sender from the state it came from; the owner keeps those it has not found, with the checks'
    problems as its own (here, one made up: the comparisons above find such a loss only when the
    hashes place a violation's first state on the other process)."""
    from spec._flat_explore import _check_state, _expand, _View
    from spec._parallel import keep

    model = _model("pair")
    sender = FlatSearch(model, None, None)
    sender.workers, sender.outbox = 2, [[], []]
    initial = sender.flat.initial()
    sender.me = 1 - sender.owner(initial, sender.view(initial).numbers)  # the initial state is the other's
    start, _ = sender.add(initial, -1, None, 0)
    _check_state(sender, start, sender.view(initial), None)
    sent = sender.outbox[1 - sender.me]
    while not sent:  # expand until a state reached is the other's
        number, numbers = sender.take()
        before = _View(sender.memo.state(numbers), sender.memo, numbers)
        before.res, before.clean = sender.results.popleft(), sender.cleans.popleft()
        _expand(sender, number, before.state, before)
    assert sent and all(entry[0] == number * 2 + sender.me for entry in sent)
    owner = FlatSearch(model, None, None)
    owner.lazy = []
    parent, action, state, key, kept, clean, _ = sent[0]
    depth = sender.depth[number] + 1
    keep(owner, [(parent, action, state, key, kept, clean, [("INV-1", "made_up", "a made-up problem")])], depth)
    keep(owner, sent, depth)  # the first again: known, nothing more
    assert owner.count == len(sent) == len({entry[3] for entry in sent})
    assert list(owner.depth) == [depth] * owner.count
    assert list(owner.report.violations) == ["made_up"] and owner.lazy == [("made_up", 0, ())]
    assert list(owner.results) == [entry[4] for entry in sent] and list(owner.cleans) == [entry[5] for entry in sent]


@interpreted
def test_placing_states_by_their_own_hash_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: a state's owner chosen by the state, not by its class (members renamed): two
    processes keep one class, and the counts differ from the one-process search's."""

    def by_state(self: FlatSearch, state: Any, sig: tuple[int, ...]) -> int:
        key = state  # the class's key, as owner() computes it (add() and send_once() use it)
        if self.dead_data:
            key = erase(key, self.regions)
        if self.symmetry:
            key = self.canonical.key(key)
        self.keyed = (sig, key)
        return hash(state) % self.workers

    model = _model("pair")
    one = _seen(_one(model))
    assert _seen(search_parallel(model, 2)) == one
    monkeypatch.setattr(FlatSearch, "owner", by_state)
    spread = search_parallel(model, 2)
    assert spread.states > one[0] and _seen(spread) != one


@interpreted
@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("processes", [3, 4])
def test_a_bound_one_process_reaches_is_not_reported_unreached(monkeypatch: pytest.MonkeyPatch, processes: int) -> None:
    """A bound is unreached only where no process's states reach it. ``tiny`` with one tick that
    lets no deadline pass has one unreached bound (its clock); every class with its approval slot
    in use is placed in the last process, so every other process misses the approval bound as
    well: the spread search must still report the clock alone, as the one-process search does
    (outside review 44 P13: ``any`` for ``all`` over the processes' lists; on hash placement with
    two processes, or on a configuration whose bounds every process reaches, they agree)."""
    model = Model(dataclasses.replace(time_config("tiny"), max_ticks=1, ttl_ticks=1))
    one = _one(model).unreached_bounds
    assert [bound.split(":")[0] for bound in one] == ["max_ticks=1"]
    owner = FlatSearch.owner

    def approvals_last(self: FlatSearch, state: Any, sig: tuple[int, ...]) -> int:
        found = owner(self, state, sig)  # the class's key, as owner() computes it (add() and send_once() use it)
        if any(approval.status for approval in decode(state).approvals):  # a fact of the class, not of the state
            found = self.owners[sig] = self.workers - 1
        return found

    monkeypatch.setattr(FlatSearch, "owner", approvals_last)
    spread = search_parallel(model, processes, bounds_reached=True)
    assert spread.complete and spread.states == _one(model).states
    assert spread.unreached_bounds == one


def test_a_process_that_fails_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from spec import _parallel

    original = _parallel._search

    def failing(part: Any) -> Any:
        if part.me == 1:
            raise MemoryError("planted: process 1 runs out of memory")
        return original(part)

    monkeypatch.setattr(_parallel, "_search", failing)
    with pytest.raises(_parallel.SearchFailed, match="process 1 of the search failed: MemoryError: planted") as failed:
        search_parallel(_model("pair"), 2)
    assert "Traceback" in failed.value.detail and "Traceback" not in str(failed.value)


def test_a_process_that_dies_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed (the kernel's out-of-memory killer): no report comes; the search says so, not waits."""
    import os
    import signal

    from spec import _parallel

    original = _parallel._search

    def dying(part: Any) -> Any:
        if part.me == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(part)

    monkeypatch.setattr(_parallel, "_search", dying)
    with pytest.raises(_parallel.SearchFailed, match="process 0 of the search failed: it ended \\(exit status -9\\)"):
        search_parallel(_model("pair"), 2)


def test_bounds_and_refusals() -> None:
    pair = _model("pair")
    out = search_parallel(pair, 2, out_of_time=lambda: True)
    assert not out.complete and out.states < manifest()["pair"]["states"] and out.frontier
    with pytest.raises(ValueError, match="at least 2"):
        search_parallel(pair, 1)
    with pytest.raises(ValueError, match="only the flat engine"):
        search_parallel(Model(load_config("tiny")), 2)  # the liveness check and profile changes


def test_teamproto_check_spreads_the_parts_of_a_split_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    from teamproto._cli import main

    documents = []
    for jobs in ("2", "1"):
        status = main(["check", "--config", "standard/plans", "--max-states", "400", "--json", "--jobs", jobs])
        documents.append(json.loads(capsys.readouterr().out))
        assert status == 1  # bounded: incomplete
    spread, one = (d["runs"][0] for d in documents)
    assert [d["workers"] for d in documents] == [2, 1]
    assert [d["spread"] for d in documents] == [2, 1]
    whole = min(spread["expanded_through_depth"], one["expanded_through_depth"]) + 2  # depths both found whole
    assert whole >= 5 and spread["states_by_depth"][:whole] == one["states_by_depth"][:whole]


def test_teamproto_check_runs_the_parts_one_after_another_each_spread(capsys: pytest.CaptureFixture[str]) -> None:
    """``--config standard`` on two processes: its two parts one after another, each search
    spread over both (not side by side on one each, which waits on the plan part alone); with
    another configuration beside them, or one process, nothing is spread."""
    from teamproto._cli import main

    def run(*argv: str) -> dict[str, Any]:
        main(["check", *argv, "--max-states", "300", "--json"])
        return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]

    both = run("--config", "standard", "--jobs", "2")
    assert [r["config"] for r in both["runs"]] == ["standard/approvals", "standard/plans"]
    assert (both["workers"], both["spread"]) == (2, 2)
    mixed = run("--config", "standard", "--config", "pair", "--jobs", "2")
    assert (mixed["workers"], mixed["spread"]) == (2, 1)
    alone = run("--config", "standard", "--jobs", "1")
    assert (alone["workers"], alone["spread"]) == (1, 1)


@pytest.mark.clause("INV-3")
def test_explore_states_spreads_only_a_search_it_need_not_save() -> None:
    """``spec.explore.explore_states`` is where the spread is chosen: with ``processes=2`` it
    spreads (its states stay in the processes: ``None``, the unreached bounds in the report), and
    reports what one process reports; a search that is saved as it goes is never spread."""
    from spec.explore import explore_states

    model = _model("pair")
    spread, states = explore_states(model, processes=2)
    assert states is None and _seen(spread) == _seen(_one(model))
    one, states = explore_states(model, processes=1)
    assert states is not None and len(list(states)) == one.states == spread.states
    saved: list[bool] = []
    report, states = explore_states(
        model, processes=2, fingerprints=True, checkpoint=lambda save, final: saved.append(final)
    )
    assert states is not None and saved and report.states == one.states  # saved as it went: one process
