"""The conformance suite (issue 15): the reference passes it, the sample implementation fails on
exactly its planted defects, a reference mutant is caught, the vectors are fresh, logs validate.

Clause: APR-2, APR-5, XPR-1, INV-11 (the planted defects), MSG-2, MSG-4, REC-2 (the suite itself).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance._cases import Case
from conformance._protocol import DriverError, parse_request, reply_problem
from conformance._run import Options, run_suite

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = f"{sys.executable} -m reference.driver"
SAMPLE = f"node {ROOT / 'conformance/examples/sample_driver.js'}"
PARTIAL_WRITE = f"{sys.executable} {ROOT / 'tests/fixtures_conformance/partial_write_driver.py'}"
"""The reference behind a proxy whose snapshots show one write more after each refusal."""
INDEFINITE = f"{sys.executable} {ROOT / 'tests/fixtures_conformance/indefinite_driver.py'}"
NARROW_STATUS = f"{sys.executable} {ROOT / 'tests/fixtures_conformance/narrow_status_driver.py'}"
"""The reference behind a proxy whose refusals all say they may have changed something."""
LOSSY_RESTART = f"{sys.executable} {ROOT / 'tests/fixtures_conformance/lossy_restart_driver.py'}"
"""The reference behind a proxy that loses a task record when it is restarted after a SIGKILL."""
ALTERED = f"{sys.executable} {ROOT / 'tests/fixtures_conformance/altered_driver.py'}"
"""The reference behind a proxy that alters one behaviour, named by its argument (its mode)."""
PLANTED = ["APR-2", "APR-5", "AUD-3", "INV-11", "MEM-1", "XPR-1"]
"""The sample's defects: arguments digest not bound (APR-2, APR-5), no fencing (XPR-1, INV-11),
claims while draining (MEM-1), a redactor that knows some shapes of secret only (AUD-3)."""


def suite(driver: str, **options: object) -> tuple[list[Case], dict[str, Any]]:
    return run_suite(Options(driver, **options))  # type: ignore[arg-type]


@pytest.mark.clause("MSG-2")
def test_requests_are_checked_against_the_schema_and_ids_are_opaque() -> None:
    doc = {"type": "approval.review", "msg_id": 1, "actor": {"member_id": "lead"}, "decision": "approved"}
    with pytest.raises(DriverError, match="protocol_id"):
        parse_request(json.dumps(doc))
    for pid in ("protocol-0123456789abcdef", "98c55d49-7fa1-5abb-b19c-da63824a4789", "any opaque id"):
        assert parse_request(json.dumps({**doc, "protocol_id": pid}))["protocol_id"] == pid
    assert reply_problem({"in_reply_to": 1, "type": "ok", "result": {}}) is None
    assert reply_problem(
        {"in_reply_to": 1, "type": "error", "error": {"code": "nope", "definite": True, "message": ""}}
    )


@pytest.mark.clause(
    "APR-1", "APR-4", "APR-5", "APR-6", "APR-9", "MSG-2", "MSG-4", "MSG-5", "REC-2", "XPR-1", "SHD-1", "SHD-2", "MEM-1"
)  # fmt: skip
def test_the_reference_driver_conforms() -> None:
    """Here on the vectors of `tiny` and `fencing` (shutdowns, lapses, restarts of members, the
    outbox), every bad input and three random programs; CI runs the whole suite through
    `teamproto conformance`."""
    cases, result = suite(REFERENCE, programs=3, depth=20, configs=("tiny", "fencing"))
    failed = [(c.id, c.message) for c in cases if c.verdict == "FAILED"]
    assert failed == [] and result["exit"] == 0, failed
    ok = {c.section for c in cases if c.verdict == "OK"}
    assert ok == {"vectors", "bad input", "random programs"}
    assert result["clauses"]["APR-5"] == "OK" and result["clauses"]["SHD-1"] == "OK"
    assert result["clauses"]["MEM-1"] == "OK" and result["clauses"]["REC-3"] == "OK"
    assert [c.id for c in cases if c.verdict == "UNIMPLEMENTED"] == []  # the team operations are wired


@pytest.mark.clause("REC-1", "REC-2")
def test_the_reference_driver_restarts_quietly_where_the_model_reconciles_nothing() -> None:
    """Where a vector's step says a restart changes nothing (``restart_holds``: the model's
    reconciliation leaves its state), the replay restarts the driver with nothing crashed, and the
    reference's snapshot stays as it was — among them an approved approval past its deadline,
    before the monitor's pass (outside review 63's P8: a restart that expired it passed the suite;
    reference mutant ``restart_expires_approved``)."""
    import json
    from pathlib import Path

    vectors = Path(__file__).resolve().parents[1] / "conformance" / "vectors" / "approval_drain.json"
    document = json.loads(vectors.read_text(encoding="utf-8"))
    assert sum(1 for v in document["vectors"] for step in v["steps"] if step.get("restart_holds")) > 50
    cases, _ = suite(REFERENCE, sections=("vectors",), configs=("approval_drain",))
    assert len(cases) > 10 and {c.verdict for c in cases} == {"OK"}, [(c.id, c.message) for c in cases]


@pytest.mark.clause("PLN-1", "PLN-2", "PLN-3", "PLN-4", "PLN-5", "PLN-6", "PLN-7", "PLN-9", "PLN-10", "PLN-11")
def test_the_reference_driver_conforms_on_the_plan_vectors() -> None:
    """The plan operations through the driver: every vector of `plan` (draft, submit, decide,
    retract, deliver, withdraw, start, steps, complete, fail, rollback, crashes between their
    writes) replays, plans named by label from the implementation's own snapshot."""
    cases, result = suite(REFERENCE, sections=("vectors",), configs=("plan",))
    assert len(cases) > 10 and {c.verdict for c in cases} == {"OK"}, [(c.id, c.message) for c in cases]
    assert all(result["clauses"][f"PLN-{n}"] == "OK" for n in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11))


@pytest.mark.clause("SHD-1", "SHD-2", "MEM-1", "SHD-3", "SHD-5", "SHD-9", "MEM-2", "MEM-4")
def test_the_reference_refuses_the_teams_bad_input() -> None:
    """The bad input of the team's operations (a member asking for a shutdown, a drain of an id
    nobody made, a claim while draining, a job, suspension, release, finish or retirement of a
    member the team does not have) is refused with its typed error, changing nothing;
    ``teamproto mutants`` runs this test for ``shutdown_by_anyone``."""
    cases, result = suite(REFERENCE, sections=("bad input",), clauses=("SHD", "MEM"))
    assert {c.id for c in cases} == {
        "bad-forged-shutdown-requester",
        "bad-unknown-id-drain",
        "bad-claim-while-draining",
        "bad-deliver-expired",
        *(f"bad-unknown-member-{name}" for name in ("job", "suspend", "release", "finish", "retire")),
        # outside review 45: a stale request drains nobody, a drain neither signals a job that
        # cannot be cancelled nor releases or finishes beside a running one, a draining member
        # starts no job, and a request that began to drain is not cancelled
        "bad-stale-shutdown-request",
        "bad-drain-signals-non-cancellable",
        "bad-release-while-job-runs",
        "bad-finish-while-job-runs",
        "bad-job-while-draining",
        "bad-cancel-draining-shutdown",
        # outside review 52: every guard of a shutdown operation has its case
        "bad-finish-holding-task",
        "bad-early-force-terminate",
        "bad-shutdown-of-stopped-member",
        # outside review 63: the same request_key with other business content is a conflict (STO-2)
        "bad-conflicting-shutdown-retry-reason",
        "bad-conflicting-shutdown-retry-ttl",
    }
    assert result["exit"] == 0, [(c.id, c.message) for c in cases if c.verdict != "OK"]


@pytest.mark.clause("XPR-2", "APR-5", "MEM-1", "PLN-3", "PLN-6")
def test_a_draining_member_and_an_undelivered_plan_start_nothing() -> None:
    """The bad input of new work by a draining member and of a plan started early, refused by the
    reference with the protocol's codes, changing nothing: a draining member's approved (not yet
    consumed) approval is not consumed and it asks for no new one (XPR-2, APR-5), it claims no
    task (MEM-1), it does not start its delivered plan (XPR-2); a plan approved but whose decision
    was not delivered is not started (PLN-3; the approver may still retract it, PLN-6). Planted by
    hand in the reference, each of these refusals dropped fails its case here."""
    cases, result = suite(REFERENCE, sections=("bad input",), clauses=("XPR-2", "MEM-1", "PLN-3"))
    assert {c.id: c.verdict for c in cases} == {
        "bad-consume-while-draining": "OK",
        "bad-request-while-draining": "OK",
        "bad-claim-while-draining": "OK",
        "bad-start-before-delivery": "OK",
        "bad-start-while-draining": "OK",
        "bad-job-while-draining": "OK",
        "bad-redelivered-plan-decision": "OK",  # PLN-3 too: a decision delivered twice, answered as the first
    }, [(c.id, c.message) for c in cases]
    assert result["exit"] == 0


@pytest.mark.clause("APR-5", "XPR-2", "PLN-3", "PLN-6", "MSG-2")
def test_a_refusal_after_a_partial_write_fails_the_bad_input() -> None:
    """A refusal with the right typed error is not enough: nothing may have changed (DESIGN rule
    8, APR-5's "atomically"). A driver that refuses rightly but after writing part of a record
    (the fixture: the reference behind a proxy whose snapshots show one write more after each
    refusal) fails every bad-input case that expects a refusal, on the snapshot; the duplicates,
    which are answered, not refused, stay OK, as every case does for the plain reference; so do the
    deviations (PLN-4), which change the execution by design and are judged on the model's state
    (which a member record's version is not part of)."""
    from conformance._badinput import CASES
    from conformance._random import DEVIATIONS

    refusals = {f"bad-{bad.name}" for bad in CASES if bad.codes}
    answered = {f"bad-{bad.name}" for bad in CASES if not bad.codes} | {f"bad-deviation-{k}" for k in DEVIATIONS}
    answered.add("status-scope")  # reads, never refused (a stranger's may be): nothing written
    cases, result = suite(PARTIAL_WRITE, sections=("bad input",))
    verdicts = {c.id: c.verdict for c in cases}
    assert {k for k, v in verdicts.items() if v == "FAILED"} == refusals, verdicts
    assert {k for k, v in verdicts.items() if v == "OK"} == answered, verdicts
    changed = "the snapshot changed: bad input must change nothing"
    assert {c.message for c in cases if c.verdict == "FAILED"} == {changed}
    assert result["exit"] == 1 and {"APR-5", "XPR-2", "PLN-3", "MSG-2"} <= set(result["failed_clauses"])
    plain, result = suite(REFERENCE, sections=("bad input",))
    assert {c.id: c.verdict for c in plain} == dict.fromkeys(verdicts, "OK") and result["exit"] == 0


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
@pytest.mark.clause("APR-2", "APR-5", "XPR-1", "INV-11", "MEM-1")
def test_the_sample_fails_on_exactly_its_planted_defects() -> None:
    cases, result = suite(SAMPLE, programs=4, depth=20, configs=("tiny", "monitor"))
    assert result["failed_clauses"] == PLANTED and result["exit"] == 1
    failed = {c.id for c in cases if c.verdict == "FAILED"}
    assert {"bad-changed-arguments", "bad-stale-incarnation", "bad-claim-while-draining"} <= failed
    assert all(set(c.failed_clauses) <= set(PLANTED) and c.trace for c in cases if c.verdict == "FAILED")
    assert sum(1 for c in cases if c.verdict == "OK") > 30  # everything else it implements passes
    drains = [c for c in cases if c.verdict == "OK" and c.group == "shutdown" and c.section == "vectors"]
    assert drains  # the shutdown vectors its operations suffice for replay, and pass


@pytest.mark.clause("MSG-2", "APR-5")
def test_a_refusal_that_does_not_say_it_changed_nothing_fails_the_bad_input() -> None:
    """A refusal that changed nothing must say so (``definite``, DESIGN rule 8): a caller that
    cannot tell whether its call took effect must look before it retries. The fixture is the
    reference with every refusal marked indefinite: every bad-input case that expects a refusal
    fails on that rule and no other; the answered duplicates and the deviations (PLN-4, whose
    answer reports a change) stay OK."""
    from conformance._badinput import CASES
    from conformance._random import DEVIATIONS

    refusals = {f"bad-{bad.name}" for bad in CASES if bad.codes}
    cases, result = suite(INDEFINITE, sections=("bad input",))
    failed = {c.id: c.message for c in cases if c.verdict == "FAILED"}
    assert set(failed) == refusals, failed
    assert set(failed.values()) == {"refused, but not definite: nothing was changed, so the error must say so"}
    assert {c.id for c in cases if c.verdict == "OK"} >= {f"bad-deviation-{k}" for k in DEVIATIONS}
    assert result["exit"] == 1


@pytest.mark.clause("STO-3", "MSG-2")
def test_a_write_the_store_could_not_make_is_replied_indefinite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other half of DESIGN rule 8 through the driver: a refusal the store could not decide
    (``StorageUnavailable``: a disk full, a lock held past its timeout — the write may have landed)
    says ``definite: false``, so the caller looks before it retries; a refusal of the protocol in
    the same session still says ``definite: true``. (An outside review replied definite to every
    error and no test failed: no test made a write fail through the driver.)"""
    from conformance._badinput import TEAM
    from reference import driver
    from reference._errors import StorageUnavailable

    served = driver.Driver()
    started = driver.serve_line(served, json.dumps({**TEAM, "msg_id": 1, "data_dir": str(tmp_path), "clock": 0}))
    assert started["type"] == "ok", started
    claim = {"type": "task.claim", "msg_id": 2, "member_id": "m0", "task_id": "t0"}

    def unavailable(*args: object, **kwargs: object) -> object:
        raise StorageUnavailable("disk full: the write of task/t0 failed")

    with monkeypatch.context() as patch:
        patch.setattr(served.storage, "update", unavailable)
        reply = driver.serve_line(served, json.dumps(claim))
    assert reply["type"] == "error" and reply["error"]["definite"] is False, reply
    refused = driver.serve_line(served, json.dumps({**claim, "msg_id": 3, "member_id": "ghost"}))
    assert refused["type"] == "error" and refused["error"]["definite"] is True, refused


@pytest.mark.clause("APR-5", "MSG-2")
def test_a_call_the_model_refuses_must_be_refused_definite_in_the_random_programs() -> None:
    """The random programs' judge of a call the model refuses (a consume of an approval the
    requester may not use): a refusal that does not say it changed nothing fails, as in the bad
    input (an outside review dropped that half of the judge and every test passed: no fixture
    refused there indefinitely)."""
    cases, result = suite(INDEFINITE, sections=("random programs",), **ONE_PROGRAM)
    failed = {c.id: c.message for c in cases if c.verdict == "FAILED"}
    assert list(failed) == ["random-000"] and "was refused, but not definite" in failed["random-000"], failed
    assert result["exit"] == 1


KILLED = {"sections": ("random programs",), "programs": 1, "seed": 2, "depth": 4}
"""Seed 2's program 0 (the approval configuration) SIGKILLs the driver during its 4th step, the
review of the approval it has just requested (drawn in the SIGKILL band: the model's draws up to
there do not depend on the implementation, which has conformed so far); at depth 4 the program
ends there, so nothing after the kill can fail it instead of the judgement of the restart."""


def counted_kills(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``case id: operation`` of every SIGKILL the random programs send from now on (in order)."""
    from conformance._random import Program

    kills: list[str] = []
    killed = Program.killed

    def counted(self: Program, action: Any, request: dict[str, Any], steps: list[Any]) -> bool:
        kills.append(f"{self.case.id}: {action.name}")
        return killed(self, action, request, steps)

    monkeypatch.setattr(Program, "killed", counted)
    return kills


@pytest.mark.clause("REC-2")
def test_a_restart_after_sigkill_that_no_crash_point_explains_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a SIGKILL mid-operation and a restart on the same data directory, the snapshot must be
    the model's state after some crash point of the operation (a prefix of its write steps), then
    reconciled. The fixture is the reference, except that a process started after a SIGKILL (and
    only then) loses the team's last task record, which no state of the model lacks: the random
    program that kills it fails on that judgement and no other (an outside review made the judge
    carry on from the last crash point instead, and every other test passed); the plain reference
    passes the same program, through the same kill.

    Clause: REC-2"""
    kills = counted_kills(monkeypatch)
    cases, result = suite(LOSSY_RESTART, **KILLED)
    assert kills == ["random-000: approval.review"]  # the program provably SIGKILLs, at that step
    assert [(c.id, c.verdict, c.failed_clauses) for c in cases] == [("random-000", "FAILED", ["REC-2"])]
    explained = "after SIGKILL during approval.review: no crash point of the model explains the snapshot"
    assert cases[0].message == explained and result["exit"] == 1
    assert any("killed with SIGKILL mid-operation" in line for line in cases[0].trace)
    kills.clear()
    plain, result = suite(REFERENCE, **KILLED)
    assert kills == ["random-000: approval.review"]
    assert [(c.id, c.verdict) for c in plain] == [("random-000", "OK")] and result["exit"] == 0


ONE_PROGRAM = {"programs": 1, "seed": 0, "depth": 8}
"""Seed 0's program 0 (the approval configuration), 8 steps: no SIGKILL among them, so what it
sends does not depend on where a kill lands; among them a tick, a claim armed to crash, an
approval's request and its review."""
TRIPPED = [
    ("drift", {"sections": ("random programs",)}, {"random-000": "does not abstract to the model's state"}),
    ("unaudited", {"sections": ("random programs",)}, {"random-000": "AUD-5 decisions_audited: "}),
    (
        "review-refused",
        {"sections": ("random programs",)},
        {"random-000": "approval.review was refused, but the model takes it"},
    ),
    (
        "one-id",
        {"sections": ("bad input", "random programs"), "clauses": ("MSG-4",)},
        {"random-000": "ids must be unique", "bad-duplicate-request": "the retry gave id 'protocol-00000000000000aa'"},
    ),
    ("crash-ignored", {"sections": ("random programs",)}, {"random-000": "did not reach it"}),
    (
        "dies-on-tick",
        {"sections": ("bad input", "random programs"), "clauses": ("REC-1",)},
        {"random-000": "the process died unexpectedly", "bad-restart-in-place": "the process died ("},
    ),
    (
        "deviation-ignored",
        {"sections": ("bad input",), "clauses": ("PLN-4",)},
        {"bad-deviation-unknown_step": "the execution did not end failed (or failed and rolled back)"},
    ),
    (
        "wrong-code",
        {"sections": ("bad input",), "clauses": ("APR-4",)},
        {
            f"bad-{name}": "refused with illegal_transition; expected "
            for name in (
                "forged-reviewer",
                "forged-reviewer-peer",
                "reordered-review",
                "contrary-review",
                "unknown-id-review",
                "late-review",
            )
        },
    ),
    (
        "counted-delivery",
        {"sections": ("bad input",), "clauses": ("MSG-5",)},
        {"bad-redelivered-message": "the second delivery returned another result than the first"},
    ),
    (
        "refusal-drifts",
        {"sections": ("random programs",)},
        {"random-000": "after the refused task.claim: the snapshot does not abstract to the model's state"},
    ),
    (
        "status-writes",
        {"sections": ("bad input",), "clauses": ("AUD-4",)},
        {"status-scope": "the snapshot changed: a status read must change nothing"},
    ),
]
"""Each mode of the altered driver, the options that meet it, and the cases it must fail, by a
part of what they say: one per branch of the random programs' and the bad-input judges that
nothing else trips (the sample, the reference's mutants, the partial-write and indefinite fixtures
trip the others)."""


@pytest.mark.clause("REC-2", "AUD-5", "APR-4", "MSG-4", "INV-6", "STO-2", "PLN-4", "MSG-5", "AUD-4")
@pytest.mark.parametrize(("mode", "options", "failed"), TRIPPED, ids=[t[0] for t in TRIPPED])
def test_each_branch_of_the_judges_fails_the_driver_that_trips_it(
    mode: str, options: dict[str, object], failed: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge's branch that no driver makes fire could be dropped and every test still pass (an
    outside review dropped the random programs' judgement of a restart after SIGKILL). Each mode
    of the fixture (the reference with one behaviour altered: a snapshot that drifts from the
    model, an empty audit log, a review refused, one id for every request, an armed crash that
    does not crash, a deviation that leaves the execution running, a death on the first tick, the
    wrong refusal codes, a redelivery answered anew, a refusal that changed the state — an outside
    review stopped judging the snapshot after a refusal, and the partial-write fixture's change is
    one the abstraction ignores —, a status read that changed the state: outside review 39 stopped
    comparing the snapshots around the status reads) fails exactly the cases named, each with the
    message of the branch it trips; ``test_the_reference_passes_what_the_altered_driver_fails``
    runs the same cases on the reference."""
    kills = counted_kills(monkeypatch)
    cases, result = suite(f"{ALTERED} {mode}", **{**ONE_PROGRAM, **options})
    said = {c.id: c.message for c in cases if c.verdict != "OK"}
    assert set(said) == set(failed) and {c.verdict for c in cases if c.id in failed} == {"FAILED"}, said
    wrong = {k: v for k, v in said.items() if failed[k] not in v}
    assert wrong == {} and "SIGKILL" not in "".join(said.values()), wrong
    assert kills == [] and result["exit"] == 1


def test_the_reference_passes_what_the_altered_driver_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases of ``TRIPPED`` (seed 0's first program; the bad input of the clauses named), on
    the plain reference: every one passes, and no SIGKILL is drawn."""
    kills = counted_kills(monkeypatch)
    clauses = ("MSG-4", "REC-1", "PLN-4", "APR-4", "MSG-5", "AUD-4")
    cases, result = suite(REFERENCE, **ONE_PROGRAM, clauses=clauses, sections=("bad input", "random programs"))
    assert {k for _, _, failed in TRIPPED for k in failed} <= {c.id for c in cases}
    assert {c.verdict for c in cases} == {"OK"} and result["exit"] == 0 and kills == []


def test_a_driver_that_breaks_the_protocol_is_undecided(tmp_path: Path) -> None:
    script = tmp_path / "mute.py"
    script.write_text("import sys\nfor line in sys.stdin:\n    print('not json', flush=True)\n")
    _, result = suite(f"{sys.executable} {script}")
    assert result["exit"] == 2 and "not JSON" in result["undecided"]


UNDECIDED = [
    ("not-started", None, "could not be started"),
    ("dies", "sys.exit(3)", "died before answering capabilities"),
    ("no-operations", "reply({'in_reply_to': doc['msg_id'], 'type': 'ok', 'result': {}})", "must list operations"),
    ("off-schema", "reply({'in_reply_to': doc['msg_id'], 'type': 'maybe'})", "a reply outside the reply schema"),
    ("another-id", "reply({'in_reply_to': doc['msg_id'] + 7, 'type': 'ok', 'result': {}})", "a reply to msg_id 7"),
    # a refusal is an answer too: one to another request is not this one's (only a line the
    # driver could not read, in_reply_to null, answers no request in particular)
    (
        "another-id-refused",
        "reply({'in_reply_to': doc['msg_id'] + 7, 'type': 'error', "
        "'error': {'code': 'refused', 'definite': True, 'message': 'no'}})",
        "a reply to msg_id 7",
    ),
]
"""A driver the runner cannot judge, as its answer to every line (None: a command that does not
exist), and what the undecided run says: one per reason of ``conformance._run.capabilities`` and
of the reply checks (``conformance._client``) that the mute driver above does not give."""


@pytest.mark.parametrize(("name", "answer", "why"), UNDECIDED, ids=[u[0] for u in UNDECIDED])
def test_a_driver_that_cannot_be_judged_is_undecided_and_says_why(
    name: str, answer: str | None, why: str, tmp_path: Path
) -> None:
    """Not a pass and not a failure: exit 2, no case run, the reason named."""
    driver = str(tmp_path / "no-such-driver")
    if answer is not None:
        script = tmp_path / f"{name}.py"
        reply = "def reply(doc):\n    print(json.dumps(doc), flush=True)\n"
        loop = f"for line in sys.stdin:\n    doc = json.loads(line)\n    {answer}\n"
        script.write_text(f"import json, sys\n{reply}{loop}")
        driver = f"{sys.executable} {script}"
    cases, result = suite(driver)
    assert cases == [] and result["exit"] == 2 and why in result["undecided"], result["undecided"]


def test_vectors_and_schemas_are_fresh() -> None:
    from conformance._vectors import stale

    assert stale(rebuild=["tiny"]) == [], "run `teamproto conformance --write-vectors` and commit the result"


def test_the_command_line_writes_every_report(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "teamproto._cli", "conformance", "--driver", REFERENCE, "--clauses", "STO",
         "--programs", "0", "--report", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    clauses = json.loads(out.stdout)["clauses"]
    assert clauses["STO-2"] == "OK" and set(clauses.values()) == {"OK"}
    assert "STO-2" in (tmp_path / "report.md").read_text() and "<testsuite" in (tmp_path / "junit.xml").read_text()


def test_the_articles_identifiers_are_accepted() -> None:
    """Ids of the source articles' shapes (``protocol-`` + 16 hex digits; ``req_20240815_001``)
    pass the driver protocol's schemas unchanged (the fixture copies them from the articles)."""
    articles = json.loads((ROOT / "conformance/fixtures/articles.json").read_text(encoding="utf-8"))
    pid = articles["ids_graceful_exit_article"]["protocol_id('backend', 'call-1', 'operation_approval')"]
    review = {"type": "approval.review", "msg_id": 1, "actor": {"member_id": "team-lead"}, "decision": "approved"}
    assert parse_request(json.dumps({**review, "protocol_id": pid}))["protocol_id"] == pid
    for message in articles["messages_handshake_article"]:
        deliver = {"type": "message.deliver", "msg_id": 2, "message_id": message["message_id"]}
        assert parse_request(json.dumps({**deliver, "correlation_id": message["correlation_id"]}))


@pytest.mark.clause("APR-2", "APR-5")
def test_a_random_programs_approved_call_forges_before_it_calls() -> None:
    """The calls a random program makes on a just-approved approval: the forged ones (changed
    arguments; the other member) come before the right one, so they meet the approval while it
    is approved; each kind is drawn about half the time, the right call about two times in three."""
    from conformance._random import approved_calls

    rng, drawn = random.Random(7), {"changed": 0, "other": 0, "right": 0}
    for requester in (0, 1) * 500:
        calls = approved_calls(rng, requester)
        kinds = {(True, requester): "changed", (False, 1 - requester): "other", (False, requester): "right"}
        assert all(call in kinds for call in calls) and len(set(calls)) == len(calls), calls
        assert (False, requester) not in calls[:-1], f"the right call before a forged one: {calls}"
        for call in calls:
            drawn[kinds[call]] += 1
    assert 400 < drawn["changed"] < 600 and 400 < drawn["other"] < 600 and 580 < drawn["right"] < 750, drawn


def test_a_run_with_no_case_to_run_is_undecided_and_says_why() -> None:
    """A filter (or sections) that leaves no case is not a pass and not a silent "undecided": it
    names the clauses asked."""
    cases, result = suite(REFERENCE, sections=(), clauses=("APR",))
    assert cases == [] and result["exit"] == 2 and not result["conforming"]
    assert result["undecided"] == "no case of the suite checks the clauses asked (APR) with this driver's capabilities"


@pytest.mark.clause("AUD-4")
@pytest.mark.parametrize(
    ("mode", "first"),
    [("drop", "m0"), ("refuse", "m0"), ("indefinite", "stranger")],
    ids=["drop", "refuse", "indefinite"],
)
def test_a_status_read_that_shows_too_little_fails_the_scope_case(mode: str, first: str) -> None:
    """AUD-4 is exact: a status read that leaves out one of the caller's own records, refuses a
    member's read outright, or refuses a stranger without saying it changed nothing, fails
    ``status-scope`` though it leaks nothing (outside reviews weakened the judge to a subset check,
    to any definite refusal, and to any refusal of a stranger, and nothing failed)."""
    cases, result = suite(f"{NARROW_STATUS} {mode}", sections=("bad input",), clauses=("AUD-4",))
    verdicts = {c.id: c.verdict for c in cases}
    assert verdicts["status-scope"] == "FAILED" and "AUD-4" in result["failed_clauses"], verdicts
    case = next(c for c in cases if c.id == "status-scope")
    assert case.message.startswith(f"{first} asking for everything"), case.message
