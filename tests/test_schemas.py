"""Schemas reject every missing field, wrong type and unknown status with a path-naming SchemaError.

Clause: MSG-1, MSG-2, MSG-7, PLN-1, PLN-2, XPR-5.
"""

from __future__ import annotations

from typing import Any

import pytest

import spec
from spec.schemas import MESSAGE_LAYOUTS, MESSAGE_SCHEMAS, RECORD_MACHINES, RECORD_SCHEMAS, REPLY_TYPES
from spec.schemas._examples import example_message, example_record

REQUIRED_TYPES = [
    "approval_request",
    "approval_decision",
    "plan_request",
    "plan_decision",
    "plan_completion",
    "plan_abandoned",
    "shutdown_request",
    "shutdown_ack",
    "shutdown_notice",
    "member_lost",
    "task_suspended",
]


def required_paths(schema: dict[str, Any], doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every required field path reachable through nested closed objects present in ``doc``."""
    paths = []
    for field in schema.get("required", []):
        paths.append((*prefix, field))
        child = schema["properties"][field]
        if child.get("type") == "object" and "required" in child and isinstance(doc.get(field), dict):
            paths.extend(required_paths(child, doc[field], (*prefix, field)))
    return paths


def json_path(path: tuple[Any, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def without(doc: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    import copy

    changed = copy.deepcopy(doc)
    target = changed
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return changed


def replaced(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    import copy

    changed = copy.deepcopy(doc)
    target = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return changed


def wrong_type(value: Any) -> Any:
    """A value whose JSON type no non-array field accepts (and a string for array fields)."""
    return "not-an-array" if isinstance(value, list) else [0]


def get(doc: dict[str, Any], path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@pytest.mark.clause("MSG-7")
def test_every_required_message_type_has_a_schema() -> None:
    """MSG-7 lists the message types every implementation must speak."""
    assert set(REQUIRED_TYPES) <= set(MESSAGE_SCHEMAS)
    for schema in MESSAGE_SCHEMAS.values():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.clause("MSG-1", "MSG-2")
@pytest.mark.parametrize("message_type", REQUIRED_TYPES)
def test_message_examples_validate(message_type: str) -> None:
    """A well-formed message of each type passes validation unchanged."""
    doc = example_message(message_type)
    assert spec.validate_message(doc) is doc


@pytest.mark.clause("MSG-1", "MSG-2", "PLN-1")
@pytest.mark.parametrize("message_type", REQUIRED_TYPES)
def test_message_missing_field_is_named(message_type: str) -> None:
    """Removing any required field (envelope, body, plan) is rejected with that field's path."""
    doc = example_message(message_type)
    paths = required_paths(MESSAGE_LAYOUTS[message_type]["body"], doc)
    assert ("reply_to",) in paths or message_type not in REPLY_TYPES
    for path in paths:
        if path == ("message_type",):
            continue
        with pytest.raises(spec.SchemaError) as caught:
            spec.validate_message(without(doc, path))
        assert caught.value.path == json_path(path), caught.value
        assert caught.value.subject == message_type
        assert caught.value.reason == "required field is missing"


@pytest.mark.clause("MSG-2")
@pytest.mark.parametrize("message_type", REQUIRED_TYPES)
def test_message_wrong_type_is_named(message_type: str) -> None:
    """A value of the wrong JSON type at any required field is rejected with its path."""
    doc = example_message(message_type)
    for path in required_paths(MESSAGE_LAYOUTS[message_type]["body"], doc):
        with pytest.raises(spec.SchemaError) as caught:
            spec.validate_message(replaced(doc, path, wrong_type(get(doc, path))))
        expected = "$.message_type" if path == ("message_type",) else json_path(path)
        assert caught.value.path == expected, caught.value


@pytest.mark.clause("MSG-2", "PLN-2")
def test_message_field_errors_are_specific() -> None:
    """Unknown types, unknown fields and out-of-enum decisions say exactly what was wrong."""
    with pytest.raises(spec.SchemaError, match=r"\$\.message_type: unknown message type 'gossip'"):
        spec.validate_message({**example_message("shutdown_notice"), "message_type": "gossip"})
    with pytest.raises(spec.SchemaError) as caught:
        spec.validate_message({**example_message("shutdown_notice"), "priority": 1})
    assert (caught.value.path, caught.value.reason) == ("$.priority", "unknown field")
    doc = example_message("plan_decision")
    doc["body"]["decision"] = "approved_with_changes"
    with pytest.raises(spec.SchemaError) as caught:
        spec.validate_message(doc)
    assert caught.value.path == "$.body.decision"
    with pytest.raises(spec.SchemaError, match="expected an object"):
        spec.validate_message(["not", "a", "message"])


@pytest.mark.clause("XPR-5")
def test_reason_codes_are_one_taxonomy() -> None:
    """Every record's reason and plan_abandoned use the same XPR-5 codes."""
    assert spec.REASON_CODES == (
        "rejected",
        "cancelled",
        "expired",
        "timed_out",
        "force_killed",
        "crashed",
        "member_draining",
        "superseded",
    )
    record = example_record("operation_approval")
    record["reason"] = "because"
    with pytest.raises(spec.SchemaError) as caught:
        spec.validate_record("operation_approval", record)
    assert caught.value.path == "$.reason"


@pytest.mark.parametrize("kind", sorted(RECORD_SCHEMAS))
def test_record_examples_validate(kind: str) -> None:
    """A well-formed record of each kind passes validation."""
    spec.validate_record(kind, example_record(kind))


@pytest.mark.clause("STO-3")
@pytest.mark.parametrize("kind", sorted(RECORD_SCHEMAS))
def test_record_missing_or_mistyped_field_is_named(kind: str) -> None:
    """A record with a missing or mistyped field is rejected with its path and the record's key."""
    doc = example_record(kind)
    for path in required_paths(RECORD_SCHEMAS[kind], doc):
        with pytest.raises(spec.SchemaError) as caught:
            spec.validate_record(kind, without(doc, path))
        assert caught.value.path == json_path(path)
        with pytest.raises(spec.SchemaError) as caught:
            spec.validate_record(kind, replaced(doc, path, wrong_type(get(doc, path))))
        assert caught.value.path == json_path(path)
        assert caught.value.record and caught.value.record.startswith(f"{kind}/")


@pytest.mark.clause("INV-3", "STO-3")
@pytest.mark.parametrize("kind", sorted(RECORD_MACHINES))
def test_unknown_status_is_rejected_and_enums_come_from_machines(kind: str) -> None:
    """Status enums equal the machine's states; an unknown status names $.status."""
    machine = RECORD_MACHINES[kind]
    assert RECORD_SCHEMAS[kind]["properties"]["status"]["enum"] == list(spec.machine_table(machine).states)
    doc = example_record(kind)
    doc["status"] = "executing"
    with pytest.raises(spec.SchemaError) as caught:
        spec.validate_record(kind, doc)
    assert caught.value.path == "$.status"


@pytest.mark.clause("MSG-2")
def test_nested_message_in_a_record_is_validated() -> None:
    """A bus or outbox record carrying an invalid message is rejected at the nested path."""
    doc = example_record("outbox_entry")
    del doc["message"]["body"]["protocol_id"]
    with pytest.raises(spec.SchemaError) as caught:
        spec.validate_record("outbox_entry", doc)
    assert caught.value.path == "$.message.body.protocol_id"


def test_snapshot_validates_shape_and_each_record() -> None:
    """A snapshot has one array per record kind plus the clock; every record inside is validated."""
    snapshot: dict[str, Any] = {"clock": 0, **{kind: [example_record(kind)] for kind in RECORD_SCHEMAS}}
    spec.validate_snapshot(snapshot)
    snapshot["task"][0]["status"] = "lost"
    with pytest.raises(spec.SchemaError, match=r"\$\.status"):
        spec.validate_snapshot(snapshot)
    with pytest.raises(spec.SchemaError, match=r"\$\.clock"):
        spec.validate_snapshot({kind: [] for kind in RECORD_SCHEMAS})
