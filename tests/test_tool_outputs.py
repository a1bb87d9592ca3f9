"""What an external tool does with its inputs and outputs: secrets in its arguments, results and
errors never reach a store (AUD-3, INV-10); the idempotency key is the approval's own id, seen by
a tool that deduplicates by key as real external systems do (APR-5, APR-8, INV-1).

Clause: AUD-3, INV-10, APR-5, APR-6, APR-8, INV-1.
"""

from __future__ import annotations

import pytest

import reference as r
from spec import invariants
from spec.secret_corpus import SECRETS, carrier
from tests.conftest import Team

ALL_SECRETS = " | ".join(carrier(name) for name in sorted(SECRETS))


def team_with(storage: r.Storage, world: r.IdempotentTool) -> Team:
    return Team(storage, world=world)  # type: ignore[arg-type]


def no_secret(team: Team) -> None:
    assert invariants.no_secret_stored(team.harness.snapshot()) == []


@pytest.mark.clause("AUD-3", "INV-10")
@pytest.mark.parametrize("fail", [False, True], ids=["succeeds", "fails"])
def test_secrets_in_arguments_results_and_errors_are_not_stored(storage: r.Storage, fail: bool) -> None:
    """The call's arguments carry every corpus secret, and the tool echoes them all in its result
    (or its error): the stores hold only the digest and the redacted outcome."""
    world = r.IdempotentTool(output=ALL_SECRETS, fail=fail)
    team = team_with(storage, world)
    arguments = {"path": "srv/app", "env": ALL_SECRETS}
    pid = team.approved(args=arguments)
    result = team.harness.approvals.call(team.ctx(), "deploy", arguments, approval_id=pid)
    stored = team.harness.read("tool_execution", pid).doc  # type: ignore[union-attr]
    assert stored["status"] == ("failed" if fail else "succeeded")
    assert "[REDACTED]" in str(stored["result"])
    assert result["result"]["ok"] is not fail
    no_secret(team)


@pytest.mark.clause("AUD-3", "INV-10", "APR-8")
def test_a_looked_up_outcome_is_stored_redacted(storage: r.Storage) -> None:
    """A crash right after the call: recovery asks the tool by key and stores what it says,
    redacted like an outcome written at once."""
    world = r.IdempotentTool(output=ALL_SECRETS)
    team = team_with(storage, world)
    pid = team.approved()
    team.storage.faults.crash_after.add("approval.consume/call")
    with pytest.raises(r.Crash):
        team.harness.approvals.call(team.ctx(), "deploy", {"path": "srv/app"}, approval_id=pid)
    team = team.restart()
    assert team.harness.read("tool_execution", pid).doc["status"] == "succeeded"  # type: ignore[union-attr]
    assert world.effect_keys() == [pid]
    no_secret(team)


@pytest.mark.clause("APR-5", "APR-6", "INV-1")
def test_members_sharing_a_tool_call_id_get_one_effect_each(storage: r.Storage) -> None:
    """Tool call ids are the model's, per member, so two members use the same one: their
    approvals are two records, and the deduplicating tool sees two keys and has two effects."""
    world = r.IdempotentTool()
    team = team_with(storage, world)
    pids = []
    for member in ("m0", "m1"):
        ctx = team.ctx(member, call="call-1")
        pid = team.harness.approvals.request(ctx, "deploy", {"path": "srv/app"})
        team.harness.approvals.review("lead", pid, "approved")
        pids.append(pid)
        outcome = team.harness.approvals.call(ctx, "deploy", {"path": "srv/app"}, approval_id=pid)
        assert outcome["idempotency_key"] == pid
    assert len(set(pids)) == 2
    assert world.effect_keys() == pids and len(world.calls) == 2
    snap = team.harness.snapshot()
    assert [e["idempotency_key"] for e in snap["tool_execution"]] == sorted(pids)
    assert invariants.check_state(snap) == []


@pytest.mark.clause("APR-8", "INV-1")
def test_recovery_asks_under_the_key_the_call_was_made_with(storage: r.Storage) -> None:
    """A crash after the call, then recovery: the key asked is the one called (one effect, found:
    succeeded), and the caller's retry does not call again."""
    world = r.IdempotentTool()
    team = team_with(storage, world)
    pid = team.approved()
    team.storage.faults.crash_after.add("approval.consume/call")
    with pytest.raises(r.Crash):
        team.harness.approvals.call(team.ctx(), "deploy", {"path": "srv/app"}, approval_id=pid)
    team = team.restart()
    with pytest.raises(r.ApprovalNotActive):
        team.harness.approvals.call(team.ctx(), "deploy", {"path": "srv/app"}, approval_id=pid)
    assert world.effect_keys() == [pid] and len(world.calls) == 1
    assert team.harness.read("tool_execution", pid).doc["status"] == "succeeded"  # type: ignore[union-attr]


def test_the_deduplicating_tool_behaves_like_an_external_system() -> None:
    """The test double itself: one effect per key, the first outcome returned again, failures kept."""
    world = r.IdempotentTool(output="x")
    assert world.run("k", {"a": 1}) == {"ok": True, "effect": 1, "output": "x"}
    assert world.run("k", {"a": 2}) == {"ok": True, "effect": 1, "output": "x"}
    assert world.effect_keys() == ["k"] and len(world.calls) == 2
    assert world.lookup("k") == {"ok": True, "effect": 1, "output": "x"} and world.lookup("j") is None
    world.fail = True
    with pytest.raises(RuntimeError, match="under key j: x"):
        world.run("j", {})
    assert world.run("k", {}) == {"ok": True, "effect": 1, "output": "x"}
    assert world.lookup("j") == {"ok": False, "effect": 2, "output": "x"}


def test_the_recording_tool_keeps_every_call() -> None:
    """The other test double: every call kept with its key; a failure raises and is looked up."""
    world = r.RecordingTool()
    assert world.run("k", {"a": 1}) == {"ok": True, "calls": 1}
    assert world.run("k", {"a": 1}) == {"ok": True, "calls": 2}
    assert world.calls == [("k", {"a": 1}), ("k", {"a": 1})]
    assert world.lookup("k") == {"ok": True} and world.lookup("j") is None
    world.fail = True
    with pytest.raises(RuntimeError, match=r"^deploy failed$"):
        world.run("j", {})
    assert world.lookup("j") == {"ok": False}


@pytest.mark.clause("APR-2", "APR-8")
@pytest.mark.parametrize("kind", [r.RecordingTool, r.IdempotentTool], ids=["recording", "idempotent"])
def test_a_test_tool_normalises_its_path_and_answers_lookups(kind: type[r.RecordingTool | r.IdempotentTool]) -> None:
    """A fresh tool per run: a module-level instance would keep its calls from one run of the test
    to the next in one process (as mutmut's workers run it), and fail there for no mutant's sake."""
    world = kind()
    tool = world.tool()
    assert (tool.name, tool.protected) == ("deploy", True)
    assert tool.digest({"path": "srv/./app"}) == tool.digest({"path": "srv/app"})
    assert tool.lookup is not None and tool.lookup("k") is None
    tool.run("k", {})
    assert tool.lookup("k") is not None
    assert world.tool(lambda arguments: {}).digest({"path": "a"}) == world.tool(lambda arguments: {}).digest({})


@pytest.mark.clause("APR-2")
@pytest.mark.parametrize("arguments", [["srv/app"], "srv/app", None, 1])
def test_arguments_that_are_not_an_object_are_refused_typed(arguments: object) -> None:
    """A tool's arguments are a JSON object: anything else is a definite, typed refusal naming the
    tool and what was expected, never a digest and never a TypeError from deeper down."""
    tool = r.RecordingTool().tool()
    with pytest.raises(r.BadArguments) as caught:
        tool.digest(arguments)  # type: ignore[arg-type]
    assert str(caught.value).startswith("the arguments of deploy must be a JSON object (a dict), not ")
    assert caught.value.definite


@pytest.mark.clause("AUD-3", "INV-10")
def test_the_team_log_redacts_what_any_caller_appends(storage: r.Storage) -> None:
    """The team log redacts every summary it stores, not only the protocol's own (those are redacted
    before they reach it): ``Harness.audit``, open to any runtime code, appends a summary holding
    every secret of the corpus, and no secret is stored while the entry and its chain remain (an
    outside review dropped the log's own redaction, and nothing failed)."""
    team = team_with(storage, r.IdempotentTool())
    team.harness.audit("test/audit", "m0", "note", "subject-1", ALL_SECRETS)
    entries = team.harness.snapshot()["audit_entry"]
    assert [e["subject_id"] for e in entries][-1] == "subject-1" and entries[-1]["summary"] != ALL_SECRETS
    no_secret(team)
