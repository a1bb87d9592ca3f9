"""The source articles' own example messages validate unchanged, and a receiver fills the fields
they lack with the documented defaults; a field that has no default is still refused.

Clause: MSG-1, MSG-2, PLN-1, PLN-2 (issue 15 item 2: identifiers are opaque, the articles'
messages are fixtures).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import reference as r
import spec
from spec.schemas import DEFAULTS, MESSAGE_LAYOUTS, with_defaults

ROOT = Path(__file__).resolve().parents[1]
ARTICLES = json.loads((ROOT / "conformance/fixtures/articles.json").read_text(encoding="utf-8"))
REQUEST, DECISION = ARTICLES["messages_handshake_article"]


def get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[part]
    return doc


def harness() -> r.Harness:
    """A team named as the article names its agents."""
    h = r.Harness(r.MemoryStorage(), r.ManualClock(7.0), lead_id="team-lead")
    h.add_member("agent-builder-01", [])
    return h


@pytest.mark.clause("MSG-1", "MSG-2", "PLN-1", "PLN-2")
@pytest.mark.parametrize("message", [REQUEST, DECISION], ids=["plan_request", "plan_decision"])
def test_the_articles_messages_validate_unchanged(message: dict[str, Any]) -> None:
    """Integer step ids, an estimated cost with its unit, ids of the article's shape, no body."""
    kept = copy.deepcopy(message)
    assert spec.validate_message(message) is message
    assert message == kept
    assert (
        spec.MESSAGE_SCHEMAS[message["message_type"]]["anyOf"][1] == MESSAGE_LAYOUTS[message["message_type"]]["article"]
    )


@pytest.mark.clause("MSG-1", "PLN-1")
def test_the_defaults_are_filled_as_documented() -> None:
    """Every field of DEFAULTS the articles leave out is filled with its documented value, and the
    result is a message of the project's layout."""
    request = with_defaults(REQUEST, now=7.0, incarnation=3)
    decision = with_defaults(DECISION, now=8.0, request=request)
    expected = {
        "plan_request": {
            "timestamp": 7.0,
            "body.revision": 1,
            "body.supersedes": None,
            "body.requester_incarnation": 3,
            "body.plan.ttl_seconds": REQUEST["ttl_seconds"],
            "body.plan.correlation_id": REQUEST["correlation_id"],
        },
        "plan_decision": {
            "sender": REQUEST["target"],
            "target": REQUEST["sender"],
            "timestamp": 8.0,
            "ttl_seconds": REQUEST["ttl_seconds"],
            "reply_to": REQUEST["message_id"],
            "body.sequence": 0,
        },
    }
    assert {kind: set(fields) for kind, fields in expected.items()} == {k: set(v) for k, v in DEFAULTS.items()}
    for message in (request, decision):
        for path, value in expected[message["message_type"]].items():
            assert get(message, path) == value, path
    assert request["body"]["plan"]["steps"] == REQUEST["plan"]["steps"]  # nothing else changes
    assert decision["body"]["decision"] == "approved" and decision["body"]["comment"] == DECISION["comment"]
    assert with_defaults(request, now=99.0) is request  # the project's layout carries every field


@pytest.mark.clause("MSG-2", "PLN-1")
@pytest.mark.parametrize("message", [REQUEST, DECISION], ids=["plan_request", "plan_decision"])
def test_a_field_without_a_default_is_still_refused(message: dict[str, Any]) -> None:
    """Each field the article's layout requires, removed, is refused naming it (typed, definite)."""
    schema = MESSAGE_LAYOUTS[message["message_type"]]["article"]
    paths = [(field,) for field in schema["required"] if field != "message_type"]
    if "plan" in message:
        paths += [("plan", field) for field in schema["properties"]["plan"]["required"]]
    assert ("message_id",) in paths and ("correlation_id",) in paths
    for path in paths:
        broken = copy.deepcopy(message)
        target = broken
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]
        with pytest.raises(spec.SchemaError) as caught:
            with_defaults(broken, now=0.0)
        assert caught.value.path == "$." + ".".join(path) and caught.value.definite, caught.value


def refused_as_answering_nothing(h: r.Harness, decision: dict[str, Any]) -> None:
    """A decision that answers no request the team knows has no sender to default to: refused,
    naming ``$.sender``, and nothing changed."""
    before = h.snapshot()
    with pytest.raises(spec.SchemaError) as caught:
        h.receive(decision)
    assert caught.value.path == "$.sender" and "no plan_request" in caught.value.reason
    assert h.snapshot() == before


@pytest.mark.clause("MSG-1", "MSG-2", "PLN-2")
def test_the_reference_receives_them_in_its_own_layout() -> None:
    """The reference's receiver fills the defaults (one function, spec.with_defaults): the bus
    holds both messages with every field, the decision answering the request; a decision that
    answers no request it knows has no sender to default to and is refused, changing nothing."""
    h = harness()
    refused_as_answering_nothing(harness(), DECISION)
    h.receive(REQUEST)
    h.receive(DECISION)
    stored = {m["message"]["message_type"]: m["message"] for m in h.snapshot()["message"]}
    assert stored["plan_decision"]["reply_to"] == REQUEST["message_id"]
    assert stored["plan_request"]["body"]["requester_incarnation"] == 1
    assert stored["plan_request"]["timestamp"] == 7.0
    spec.validate_snapshot(h.snapshot())


def test_a_plan_from_outside_the_team_is_refused() -> None:
    """The requester's incarnation defaults from the member record: a stranger has none."""
    h = r.Harness(r.MemoryStorage(), r.ManualClock(0.0), lead_id="team-lead")
    with pytest.raises(r.UnknownMember):
        h.receive(REQUEST)
    assert h.snapshot()["message"] == []


@pytest.mark.clause("MSG-1", "PLN-3")
def test_a_reply_is_matched_to_its_own_request_by_correlation_id() -> None:
    """A decision answers the request of its own correlation id, not whichever request of that
    type is on the bus: with two plans' requests received, each decision's defaults (sender,
    target, ``reply_to``) come from its own; one answering neither is refused, changing nothing
    (an outside review matched by message type only, and nothing failed)."""
    h = harness()
    other = copy.deepcopy(REQUEST)
    other["message_id"], other["correlation_id"] = "other-request", "other-plan"
    h.receive(other)
    refused_as_answering_nothing(h, {**copy.deepcopy(DECISION), "correlation_id": "no-such-plan"})
    h.receive(REQUEST)
    h.receive(DECISION)
    h.receive({**copy.deepcopy(DECISION), "message_id": "other-decision", "correlation_id": "other-plan"})
    decisions = [m["message"] for m in h.snapshot()["message"] if m["message"]["message_type"] == "plan_decision"]
    assert {d["correlation_id"]: d["reply_to"] for d in decisions} == {
        DECISION["correlation_id"]: REQUEST["message_id"],
        "other-plan": "other-request",
    }


@pytest.mark.clause("AUD-3", "INV-10", "MSG-2")
def test_a_plan_received_keeps_no_secret_in_its_free_text() -> None:
    """A plan another implementation sends (the article's layout) is stored with its goal, rollback
    and risks redacted, as a plan drafted here is (``reference._plans.redact_text``); an outside
    review sent one carrying a secret and it was stored as received."""
    from spec import invariants
    from spec.secret_corpus import SECRETS, carrier

    every = " | ".join(carrier(name) for name in sorted(SECRETS))
    request = copy.deepcopy(REQUEST)
    request["plan"] = {**request["plan"], "goal": every, "rollback": every, "risks": [every]}
    h = harness()
    stored = h.receive(request)
    assert invariants.no_secret_stored(h.snapshot()) == []
    assert stored["body"]["plan"]["steps"] == REQUEST["plan"]["steps"]  # the steps as written (PLN-4)
    spec.validate_snapshot(h.snapshot())
