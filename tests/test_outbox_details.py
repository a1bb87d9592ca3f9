"""The outbox's sends and the notices it owes, in detail (REC-3, MSG-4, SHD-10; DESIGN rule 8).

Found by the mutation score of ``reference/_outbox.py`` (every 3rd of its mutants, 74 of 80
killed): a second send of an entry already sent could write it again, a refused send could lose
the id it refused or what it means, and the last will of a member that never sent a heartbeat
could claim one at time 1 — with every test passing.
"""

from __future__ import annotations

from typing import Any

import pytest

import reference as r
from reference import Storage
from tests.test_shutdown_details import says
from tests.test_team import Team


@pytest.fixture
def team(storage: Storage) -> Team:
    return Team(storage).setup()


def _lost_notice(team: Team, member: str) -> dict[str, object]:
    notices = [e["message"] for e in team.h.snapshot()["outbox_entry"] if e["message"]["message_type"] == "member_lost"]
    (notice,) = [n for n in notices if n["body"]["member_id"] == member]
    return dict(notice["body"])


@pytest.mark.clause("REC-3", "MSG-4")
def test_a_second_send_of_a_sent_entry_writes_nothing(team: Team) -> None:
    team.h.members.lapse("m0")
    (owed,) = team.h.outbox.owed()
    team.h.outbox.send(owed)
    after_first, row = team.h.snapshot(), team.h.read("outbox_entry", owed)
    assert [e["status"] for e in after_first["outbox_entry"]] == ["sent"] and row is not None
    team.h.outbox.send(owed)  # at least once, never a second write (REC-3)
    again = team.h.read("outbox_entry", owed)
    assert team.h.snapshot() == after_first and again is not None and again.version == row.version


@pytest.mark.clause("REC-3", "MSG-6")
@pytest.mark.parametrize("after", [False, True], ids=["crash-before-message", "crash-after-message"])
def test_a_send_cut_short_leaves_the_entry_owed_until_its_message_is_on_the_bus(team: Team, after: bool) -> None:
    """The message goes on the bus before its entry is marked sent (REC-3: at least once): a crash
    before the post leaves no message and the entry owed; one after it, the message and the entry
    still owed. Either way the restarted team's send puts the message on the bus exactly once,
    under its stable id (MSG-4), and marks the entry sent."""
    team.h.members.lapse("m0")
    (owed,) = team.h.outbox.owed()
    (team.storage.faults.crash_after if after else team.storage.faults.crash_before).add("outbox.send/message")
    with pytest.raises(r.Crash):
        team.h.outbox.send(owed)

    def on_bus(team: Team) -> int:
        return sum(1 for m in team.h.snapshot()["message"] if m["message"]["message_id"] == owed)

    assert on_bus(team) == int(after)
    assert [(e["message_id"], e["status"]) for e in team.h.snapshot()["outbox_entry"]] == [(owed, "owed")]
    team = team.restart()
    team.h.outbox.send_owed()
    assert on_bus(team) == 1
    assert [(e["message_id"], e["status"]) for e in team.h.snapshot()["outbox_entry"]] == [(owed, "sent")]


@pytest.mark.clause("REC-3")
def test_a_send_of_nothing_owed_names_the_id_and_changes_nothing(team: Team) -> None:
    assert says(team, lambda: team.h.outbox.send("msg-nope"), r.UnknownRecord) == (
        "no outbox_entry 'msg-nope'; nothing is owed under this id"
    )


@pytest.mark.clause("SHD-10")
def test_the_last_will_says_when_the_member_was_last_heard_and_zero_if_never(team: Team) -> None:
    """The model's ``member_lost`` says 0 for a member that never sent a heartbeat."""
    team.clock.advance(5.0)
    team.h.members.heartbeat("m1", 1)
    team.clock.advance(20.0)
    team.h.members.lapse("m0")
    team.h.members.lapse("m1")
    assert _lost_notice(team, "m0")["last_heartbeat_at"] == 0
    assert _lost_notice(team, "m1")["last_heartbeat_at"] == 5.0


@pytest.mark.clause("SHD-9")
def test_the_suspension_notice_says_what_the_models_says(team: Team) -> None:
    """The Lead reads the reason; the model's ``task_suspended`` says ``unit deadline``."""
    team.h.claim("m0", "t0")
    team.clock.advance(30.0)
    team.h.tasks.suspend("m0", 10.0)
    (notice,) = [e["message"] for e in team.h.snapshot()["outbox_entry"]]
    assert notice["message_type"] == "task_suspended"
    assert notice["body"] == {"task_id": "t0", "member_id": "m0", "reason_text": "unit deadline"}


@pytest.mark.clause("XPR-3", "REC-3", "SHD-5")
def test_a_finish_whose_ack_cannot_be_owed_fails_and_reconciliation_owes_it(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """XPR-3, REC-3: a store that fails while the shutdown_ack is owed fails the finish — the outbox
    never swallows the error and lets the operation report success with nothing owed — and the
    restart's reconciliation owes it (outside review 51, P12: ``owe`` suppressing ``StorageError``
    with ``AlreadyExists`` passed every test; the injected faults were all ``Crash``)."""
    team = Team(storage).setup()
    h = team.h
    pid = team.drain("m0")
    insert = storage.insert

    def failing(step: str, table: str, key: str, doc: Any, guard: Any = None) -> Any:
        if table == "outbox_entry":
            raise r.StorageUnavailable("disk full")
        return insert(step, table, key, doc, guard)

    monkeypatch.setattr(storage, "insert", failing)
    with pytest.raises(r.StorageUnavailable):
        h.shutdowns.finish("m0")
    monkeypatch.setattr(storage, "insert", insert)
    assert storage.read("shutdown_request", pid).doc["status"] == "completed"
    assert h.outbox.owed() == []  # the ack was never owed: the caller was told so
    team.restart()
    assert len(h.outbox.owed()) == 1  # reconciliation owes it (REC-3)
