"""Every operation of the model does to the records what the pin says (``model_tests/effects.py``;
the effects no snapshot shows are ``test_effects.py``'s).

Outside review 59 planted model bugs that kept every operation, edge and crash point reachable —
a restart that no longer lets its member accept tasks, a force-termination that leaves a job asked
to cancel alive, a claim that reuses its task's old token — and moved the pinned counts (or none):
"only how they interleave changed". The effects pin says what changed instead: "in fencing, no
move does this any more: member.restart: member ('stopped').accepting_new_tasks False → True".

Clause: XPR-1, SHD-7, TSK-1, REC-2, REC-3.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from model_tests import effects

MEMBER = {"member_id": "m0", "status": "stopped", "incarnation": 1, "accepting_new_tasks": False, "version": 3}


def _snap(**sections: Any) -> dict[str, Any]:
    empty = {"clock": 0, "member": [], "task": [], "outbox_entry": [], "message": [], "shutdown_request": []}
    return {**empty, **sections}


@pytest.mark.clause("XPR-1", "SHD-7", "TSK-1", "REC-2", "REC-3")
def test_every_move_of_the_model_does_what_the_pin_says() -> None:
    """A change of the model made on purpose is pinned again with ``python -m model_tests.effects --write``."""
    pinned = json.loads(effects.PIN.read_text(encoding="utf-8"))
    said = effects.differences(pinned, effects.build())
    assert not said, "\n".join(said)


def test_an_effect_says_what_changed_in_words_without_ids() -> None:
    restarted = {**MEMBER, "status": "running", "incarnation": 2, "accepting_new_tasks": True, "version": 4}
    lines = set(effects.effects("member.restart", _snap(member=[MEMBER]), _snap(member=[restarted])))
    assert lines == {
        "member.restart: member.status 'stopped' → 'running'",
        "member.restart: member ('stopped').incarnation n → n+1",
        "member.restart: member ('stopped').accepting_new_tasks False → True",
    }
    forgetful = {**restarted, "accepting_new_tasks": False}
    lost = lines - set(effects.effects("member.restart", _snap(member=[MEMBER]), _snap(member=[forgetful])))
    assert lost == {"member.restart: member ('stopped').accepting_new_tasks False → True"}


def test_records_created_and_references_moved_are_effects_too() -> None:
    task = {"task_id": "t0", "status": "claimed", "owner_id": "m0", "claim_token": "t0:1", "version": 1}
    moved = {**task, "owner_id": "m1", "claim_token": "t0:2"}
    owed = {"message_id": "x", "status": "owed", "message": {"message_type": "task_suspended"}}
    m1 = {**MEMBER, "member_id": "m1"}
    before = _snap(member=[MEMBER, m1], task=[task])
    after = _snap(clock=1, member=[MEMBER, m1], task=[moved], outbox_entry=[owed])
    assert set(effects.effects("a move", before, after)) == {
        "a move: clock n → n+1",
        "a move: task ('claimed').owner_id a reference → another reference",
        "a move: task ('claimed').claim_token a text → another text",
        "a move: outbox_entry created 'owed' (task_suspended)",
        "a move: outbox_entry created 'owed' (task_suspended) with message an object",
    }


def test_a_message_s_envelope_body_record_and_outbox_entry_are_effects() -> None:
    """Outside review 61: reconciliation that re-delivered only an approved approval's decision (not
    a rejected one's), and an outbox send that rebuilt the body from the records, both read as
    "message created" alone."""
    decision = {"message_id": "d", "message_type": "approval_decision", "correlation_id": "p", "sender": "lead"}
    decision |= {"target": "m0", "timestamp": 4, "body": {"decision": "rejected", "protocol_id": "p"}}
    approval = {"protocol_id": "p", "status": "rejected"}
    notice = {"message_id": "n", "message_type": "task_suspended", "correlation_id": "s", "body": {"task_id": "t0"}}
    entry = {"message_id": "n", "status": "sent", "message": notice}
    before = _snap(clock=5, member=[MEMBER], operation_approval=[approval], outbox_entry=[entry])
    bus = [{"message": decision, "status": "pending"}, {"message": {**notice, "body": {}}, "status": "pending"}]
    lines = set(effects.effects("restart", before, {**before, "message": bus}))
    said = "restart: message created 'pending' (approval_decision)"
    assert {
        f"{said} about a 'rejected' operation_approval",
        f"{said} with body.decision 'rejected'",
        f"{said} with message.sender a text",
        f"{said} with message.target a reference",
        f"{said} with message.timestamp clock-1",
        "restart: message created 'pending' (task_suspended) unlike its outbox entry",
    } <= lines
    bus[1] = {"message": notice, "status": "pending"}
    lines = set(effects.effects("restart", before, {**before, "message": bus}))
    assert "restart: message created 'pending' (task_suspended) as its outbox entry holds it" in lines


def test_a_created_record_s_fields_are_effects_in_words_against_the_clock() -> None:
    """Outside review 60: a request created with its deadline one tick later than the protocol's
    read as the same effect ("created 'requested'"); a created record's fields are effects too."""
    request = {"protocol_id": "p", "status": "requested", "target_id": "m0", "deadline": 7, "reason": None}
    lines = set(
        effects.effects(
            "shutdown.request",
            _snap(clock=5, member=[MEMBER]),
            _snap(clock=5, member=[MEMBER], shutdown_request=[request]),
        )
    )
    assert {
        "shutdown.request: shutdown_request created 'requested' with deadline clock+2",
        "shutdown.request: shutdown_request created 'requested' with target_id a reference",
        "shutdown.request: shutdown_request created 'requested' with reason None",
    } <= lines, lines
    later = {**request, "deadline": 8}
    assert "shutdown.request: shutdown_request created 'requested' with deadline clock+3" in set(
        effects.effects(
            "shutdown.request",
            _snap(clock=5, member=[MEMBER]),
            _snap(clock=5, member=[MEMBER], shutdown_request=[later]),
        )
    )


def test_differences_name_each_effect_gained_or_lost_by_configuration() -> None:
    pinned = {"fencing": ["a: x", "b: y"], "gone": ["c: z"]}
    now = {"fencing": ["b: y", "d: w"]}
    assert effects.differences(pinned, now) == [
        "in fencing, no move does this any more: a: x",
        "in fencing, a move now does this: d: w",
        "in gone, no move does this any more: c: z",
    ]
