"""``teamproto check`` audits its own search where counts drift (``spec.audit``; INV-12).

Clause: INV-12 (the explorer's soundness). A drift of a configuration's counts is either a change
of the protocol or a reduction or engine that lost states. The audit searches the configuration
again on the other engine (exactly the same search) and without any reduction (the same findings,
the same classes of states, and the partial-order reductions' independence on the full space).
Each named plant below is a realistic bug of a reduction or an engine — written in both engines
where both have the rule, so that only behaviour can catch it — that moves the counts of the
configuration it is tried on while every check of the protocol still holds; the audit must name
it. The healthy search must pass every audit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from model_tests.test_flat import interpreted
from spec import _flat_explore, audit
from spec.explore import explore
from spec.model import Model, _dead, _flat, _model, _ops, load_config, manifest
from spec.model._flat import supports
from spec.model._state import replace

Plant = Callable[[pytest.MonkeyPatch], None]


def _monitor_pass_always_alone(patch: pytest.MonkeyPatch) -> None:
    """The idle-monitor reduction takes every monitor pass alone, due or not."""
    patch.setattr(_ops, "monitor_is_idle", lambda model, s: True)
    patch.setattr(_flat.FlatModel, "monitor_is_idle", lambda self, f: True)


def _send_alone_beside_a_lapse(patch: pytest.MonkeyPatch) -> None:
    """The outbox-first reduction as it was before its audit: a send taken alone even where a member
    could lapse and a crash cut the send off (``Model._lapse_beside_crash``)."""
    patch.setattr(_model.Model, "_lapse_beside_crash", lambda self, s: False)


def _send_alone_beside_an_expiry(patch: pytest.MonkeyPatch) -> None:
    """The outbox-first reduction as it was before ``approval_lost`` was explored: a send taken alone
    while a requested approval is past its deadline, which the restart after the send's crash
    expires (``Model._expiry_beside_crash``)."""
    patch.setattr(_model.Model, "_expiry_beside_crash", lambda self, s: False)
    patch.setattr(_flat.FlatModel, "expiry_beside_crash", lambda self, f: False)


def _idle_test_ignores_the_bus(patch: pytest.MonkeyPatch) -> None:
    """The idle-monitor test compares the pass's state but its bus: a pass that would expire an
    unread request message counts as idle and is taken alone (outside review 53's P3)."""

    def idle(model: Any, s: Any) -> bool:
        with _model.probing():
            return replace(_ops.monitor_pass(model, s), bus=s.bus) == replace(s, monitor_done=True)

    def plain_idle(self: Any, f: Any) -> bool:
        with _model.probing():
            passed = _flat.monitor_pass(f)
            return (*passed[: _flat.BUS], f[_flat.BUS], *passed[_flat.BUS + 1 :]) == _flat._with(
                f, _flat.MONITOR_DONE, True
            )

    patch.setattr(_ops, "monitor_is_idle", idle)
    patch.setattr(_flat.FlatModel, "monitor_is_idle", plain_idle)


def _running_jobs_erased(patch: pytest.MonkeyPatch) -> None:
    """Dead-data reduction erases a running job as if it had ended."""
    erase, flat_erase = _dead.erase, _flat_explore.erase

    def model_erase(s: Any, regions: bool = False) -> Any:
        s = erase(s, regions)
        return replace(s, jobs=tuple(_dead.FINAL_JOB if j.status == "running" else j for j in s.jobs))

    def plain_erase(f: Any, regions: bool = False) -> Any:
        f = flat_erase(f, regions)
        jobs = tuple(_flat_explore._FINAL_JOB if j[0] == "running" else j for j in f[_flat.JOBS])
        return (*f[: _flat.JOBS], jobs, *f[_flat.JOBS + 1 :])

    import spec.explore

    patch.setattr(_dead, "erase", model_erase)
    patch.setattr(spec.explore, "erase", model_erase)
    patch.setattr(_flat_explore, "erase", plain_erase)


def _flagged_owner_erased(patch: pytest.MonkeyPatch) -> None:
    """Dead-data reduction erases a flagged task's owner as if no guard read it (outside review 65's
    P11): the inspection reads whether that owner still runs. Under deadline regions the classes
    the searches reach still agree; only two states of one class with different futures show it."""
    from spec.model._state import NONE, Task

    erase = _dead.erase

    def model_erase(s: Any, regions: bool = False) -> Any:
        s = erase(s, regions)
        if not any(t.status == "needs_inspection" and t.owner != NONE for t in s.tasks):
            return s
        flagged = tuple(
            Task(status=t.status, checkpoint=t.checkpoint) if t.status == "needs_inspection" else t for t in s.tasks
        )
        return replace(s, tasks=flagged)

    import spec.explore

    patch.setattr(_dead, "erase", model_erase)
    patch.setattr(spec.explore, "erase", model_erase)
    patch.setattr(audit, "erase", model_erase)


def _flat_isolation_unchecked(patch: pytest.MonkeyPatch) -> None:
    """The plain-tuple engine alone takes a record's operations alone whether or not it is
    isolated (its copy of ``_por.isolated`` slipped; the model's search is right)."""
    patch.setattr(_flat.FlatModel, "_isolated", lambda self, f, kind, slot: True)


def _free_shutdown_slot_ignored(patch: pytest.MonkeyPatch) -> None:
    """An approval counts as isolated although a shutdown slot is free: a shutdown request, then the
    drain that cancels the approval (XPR-2), breaks its isolation two steps ahead (outside review
    53's P1, in both engines: one step ahead, every operation commutes)."""
    from spec.model import _por

    def settled(model: Any, s: Any, r: int) -> bool:
        member = s.members[r]
        if member.status == "retired":
            return True
        if member.status != "running" or model.config.lapses:
            return False
        return all(sd.target != r or sd.status not in _por._ACTIVE for sd in s.shutdowns if sd.status != "")

    def plain_settled(self: Any, f: Any, r: int) -> bool:
        status = f[_flat.MEMBERS][r][_flat.M_STATUS]
        if status != "running":
            return status == "retired"
        shutdowns = (sd for sd in f[_flat.SHUTDOWNS] if sd[_flat.S_STATUS] != "")
        return all(sd[_flat.S_TARGET] != r or sd[_flat.S_STATUS] not in _flat._POR_ACTIVE for sd in shutdowns)

    patch.setattr(_por, "requester_settled", settled)
    patch.setattr(_flat.FlatModel, "requester_settled", plain_settled)


def _no_crash_after_the_first_write(patch: pytest.MonkeyPatch) -> None:
    """The search crashes an operation after its second write step on, never after its first
    (outside review 53's P12: ``Model.outcomes``, which every search of the audit shares)."""
    outcomes = _model.Model.outcomes

    def later_only(self: Any, s: Any) -> Any:
        for action, whole, crashes in outcomes(self, s):
            yield action, whole, crashes[1:]

    patch.setattr(_model.Model, "outcomes", later_only)


PLANTS: dict[str, tuple[Plant, str, str]] = {
    "free_shutdown_slot_ignored": (_free_shutdown_slot_ignored, "pair", "(two steps ahead)"),
    "no_crash_after_the_first_write": (_no_crash_after_the_first_write, "tiny", "never crashed"),
    "monitor_pass_always_alone": (_monitor_pass_always_alone, "monitor", "changes more than monitor_done"),
    "send_alone_beside_a_lapse": (_send_alone_beside_a_lapse, "plan_lost", "do not commute"),
    "send_alone_beside_an_expiry": (_send_alone_beside_an_expiry, "approval_lost", "do not commute"),
    "idle_test_ignores_the_bus": (_idle_test_ignores_the_bus, "plan", "changes more than monitor_done"),
    "running_jobs_erased": (_running_jobs_erased, "monitor", "classes of states the full search reaches"),
    "flat_isolation_unchecked": (_flat_isolation_unchecked, "pair", "the two engines differ"),
    "flagged_owner_erased": (_flagged_owner_erased, "fencing", "two states of one class differ"),
}
"""Plant → (how, the configuration whose counts it moves, what the audit must say)."""
LOUD = {"running_jobs_erased": {"no_cycle_avoids_finish"}}
"""Plants the search itself reports too: erasing a running job merges a state with the one its job's
start leads to, a step of a class to itself, which the liveness check counts as a cycle."""


@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("name", ["tiny", "monitor", "pair", "pair_lapses", "plan_lost", "approval_lost"])
def test_the_healthy_search_passes_its_audit(name: str) -> None:
    config = load_config(name)
    reduced = explore(Model(config))
    found = audit.audit(config, reduced)
    assert found.sound, found.problems
    assert found.reductions == "agree" and found.full_states is not None and found.full_states > reduced.states
    assert found.engines == ("agree" if supports(config) else "one engine")  # the flat engine's too


@pytest.mark.clause("INV-12")
@pytest.mark.parametrize("plant", sorted(PLANTS))
@interpreted
def test_each_planted_checker_bug_moves_the_counts_and_the_audit_names_it(
    plant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    how, name, says = PLANTS[plant]
    config = load_config(name)
    how(monkeypatch)
    reduced = explore(Model(config))
    assert reduced.states != manifest()[name]["states"]
    assert set(reduced.violations) == LOUD.get(plant, set())  # else drift alone, before the audit
    found = audit.audit(config, reduced)
    assert not found.sound and any(says in p for p in found.problems), found.problems


def test_a_report_that_lost_an_edge_is_named() -> None:
    config = load_config("tiny")
    reduced = explore(Model(config))
    edge = sorted(reduced.edges_taken)[0]
    reduced.edges_taken.discard(edge)
    found = audit.audit(config, reduced)
    assert f"edge {' '.join(edge)} found only without them" in " ".join(found.problems)


def test_an_unreduced_search_too_large_is_not_audited_never_called_sound() -> None:
    config = load_config("pair")
    found = audit.audit(config, explore(Model(config)), full_states=1_000)
    assert found.sound and found.reductions.startswith("not audited") and found.full_states is None
    assert "reductions not audited" in audit.describe(found)[0]


@pytest.fixture
def drifted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """monitor's pinned transitions moved: its run drifts (``model_tests/test_drift.py``'s way)."""
    from spec import check
    from spec.model import _config
    from teamproto import _check_cli

    pinned = {**manifest(), "monitor": dict(manifest()["monitor"], transitions=1)}
    for module in (check, _check_cli, _config):
        monkeypatch.setattr(module, "manifest", lambda: pinned)
    yield


@pytest.mark.clause("INV-12")
def test_check_audits_a_drift_and_says_the_checker_agrees(drifted: None, capsys: Any) -> None:
    from teamproto._cli import main

    assert main(["check", "--config", "monitor", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "monitor drifted from the manifest" in out
    assert "no state lost; so the drift is the protocol's behaviour, not a reduction" in out


@pytest.mark.clause("INV-12")
@interpreted
def test_check_names_an_unsound_reduction_under_its_drift(
    drifted: None, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from teamproto._cli import main

    _monitor_pass_always_alone(monkeypatch)
    assert main(["check", "--config", "monitor", "--jobs", "1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["manifest_drift"] == ["monitor"] and not out["ok"]
    (found,) = out["audits"]
    assert found["config"] == "monitor" and not found["sound"] and "more than monitor_done" in found["problems"][0]


def test_audit_on_request_and_not_on_request(capsys: Any) -> None:
    from teamproto._cli import main

    assert main(["check", "--config", "tiny", "--jobs", "1", "--json", "--audit"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["audits"]
    assert (found["config"], found["sound"], found["reductions"]) == ("tiny", True, "agree")
    assert main(["check", "--config", "tiny", "--jobs", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["audits"] == []


def test_no_audit_leaves_a_drift_unaudited(drifted: None, capsys: Any) -> None:
    from teamproto._cli import main

    assert main(["check", "--config", "monitor", "--jobs", "1", "--json", "--no-audit"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["manifest_drift"] == ["monitor"] and out["audits"] == []


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--audit", "--no-audit"], "--audit and --no-audit ask for opposite things"),
        (["--audit", "--mutant", "consume_after_deadline"], "not with --mutant"),
        (["--audit", "--simulate"], "not with --simulate"),
    ],
)
def test_audit_flags_that_cannot_go_together_are_refused_before_anything_runs(
    flags: list[str], says: str, capsys: Any
) -> None:
    from teamproto._cli import main

    assert main(["check", "--config", "tiny", *flags]) == 2
    captured = capsys.readouterr()
    assert says in captured.err and captured.out == ""
