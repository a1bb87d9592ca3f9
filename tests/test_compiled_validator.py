"""The compiled validator (``spec/schemas/_compiled.py``) decides exactly as ``jsonschema``'s
Draft 2020-12 validator, on every schema a document is validated against, and refuses at build time
every keyword it does not know.

Differential: on each schema's canonical document and every document one edge value away from it
at every node (wrong type, missing required field, unknown field, bad enum or const, pattern,
lengths and bounds on both sides, repeated or wrong items); on Hypothesis' documents drawn from
the schema's shape with up to three such mutations; and on every record and message of the
snapshots of the conformance vectors (``conformance/vectors``), each mutated too. Each keyword
left out of the compiler is caught by the sweep (the test's own mutants), and the named reference
mutant ``validator_drops_pattern`` by the checks in use and by the stores.

Clause: MSG-2, STO-1 (a store never persists what could not be loaded again), DESIGN rule 5.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import reference  # first: a reference mutant switches the checks in use: import it first)
import spec
from reference import CorruptRecord
from spec.model import Model, load_config, snapshot
from spec.schemas import KEYWORDS, RECORD_SCHEMAS, VALIDATED_SCHEMAS, SchemaCompileError, check
from spec.schemas._compiled import LazyChecks, compile_schemas
from tests._schema_docs import at, edges, nodes, replace, sweep, valid, valid_strategy

NAMES = sorted(VALIDATED_SCHEMAS)
JSONSCHEMA = {name: Draft202012Validator(schema) for name, schema in VALIDATED_SCHEMAS.items()}
COMPILED = compile_schemas(dict(VALIDATED_SCHEMAS))
VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "vectors"


def _used(schema: Any) -> set[str]:
    if isinstance(schema, list):
        return set().union(*map(_used, schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    out = set(schema)
    for keyword, value in schema.items():
        if keyword == "properties":
            out |= set().union(*map(_used, value.values()))
        elif keyword in ("items", "anyOf"):
            out |= _used(value)
    return out


@functools.cache
def _swept(name: str) -> list[tuple[Any, bool]]:
    """The sweep of schema ``name`` from its canonical document, with jsonschema's verdicts."""
    schema = VALIDATED_SCHEMAS[name]
    return [(doc, JSONSCHEMA[name].is_valid(doc)) for doc in sweep(schema, valid(schema))]


def _disagreements(checks: dict[str, Any], names: list[str]) -> list[tuple[str, Any, bool]]:
    return [(name, doc, expected) for name in names for doc, expected in _swept(name) if checks[name](doc) != expected]


def test_the_compiler_knows_exactly_the_keywords_our_schemas_use() -> None:
    assert set().union(*map(_used, VALIDATED_SCHEMAS.values())) == KEYWORDS


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "string", "format": "date-time"}, "format"),
        ({"oneOf": [{"type": "string"}]}, "oneOf"),
        ({"type": "object", "properties": {"a": {"type": "string", "maxLenght": 3}}}, "s.properties.a"),
        ({"type": "array", "items": {"type": "object", "patternProperties": {}}}, "patternProperties"),
        ({"enum": [1, 2]}, "s.enum"),
        ({"const": True}, "s.const"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "additionalProperties"),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "dialect"),
        ({"type": "float"}, "s.type"),
        ({"type": []}, "s.type"),
        ({"type": "string", "minLength": -1}, "s.minLength"),
        ({"type": "string", "maxLength": True}, "s.maxLength"),
        ({"type": "number", "minimum": "0"}, "s.minimum"),
        ({"anyOf": []}, "s.anyOf"),
        ({"type": "object", "required": "a"}, "s.required"),
        ({"type": "array", "items": True}, "s.items"),
    ],
)
@pytest.mark.clause("MSG-2")
def test_a_keyword_or_value_it_cannot_mirror_is_refused_when_the_checks_are_built(
    schema: dict[str, Any], where: str
) -> None:
    with pytest.raises(SchemaCompileError) as caught:
        LazyChecks({"s": schema})  # when the checks are built (at import), before any is compiled or used
    assert where in str(caught.value), str(caught.value)
    assert "_compiled.py" in str(caught.value)  # what to do


@pytest.mark.clause("MSG-2", "STO-1")
def test_the_compiled_checks_decide_as_jsonschema_on_every_edge_of_every_schema() -> None:
    assert _disagreements(COMPILED, NAMES) == []
    for name in NAMES:  # the sweep is no test if it never reaches both verdicts
        verdicts = {expected for _, expected in _swept(name)}
        assert verdicts == {True, False}, name


@pytest.mark.clause("MSG-2", "STO-1")
def test_the_checks_in_use_are_the_compiled_ones_and_agree() -> None:
    """What ``spec.validate_record`` and the stores use (a mutant may have changed them)."""
    live = {name: functools.partial(check, name) for name in NAMES}
    assert _disagreements(live, NAMES) == []


@pytest.mark.parametrize("keyword", sorted(KEYWORDS - {"$schema"}))
def test_each_keyword_left_out_of_the_compiler_is_caught_by_the_sweep(keyword: str) -> None:
    mutant = compile_schemas(dict(VALIDATED_SCHEMAS), frozenset({keyword}))
    users = [name for name in NAMES if keyword in _used(VALIDATED_SCHEMAS[name])]
    assert _disagreements(mutant, users), f"dropping {keyword!r} goes unnoticed"


@st.composite
def _mutated(draw: st.DrawFn, name: str) -> Any:
    schema = VALIDATED_SCHEMAS[name]
    doc = draw(valid_strategy(schema))
    for _ in range(draw(st.integers(0, 3))):
        path, sub = draw(st.sampled_from(list(nodes(schema, doc))))
        doc = replace(doc, path, draw(st.sampled_from(edges(sub, at(doc, path)))))
    return doc


@given(data=st.data())
@pytest.mark.clause("MSG-2")
def test_generated_documents_get_the_same_verdict(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(NAMES))
    doc = data.draw(_mutated(name))
    verdict = JSONSCHEMA[name].is_valid(doc)
    event(f"{'valid' if verdict else 'invalid'}")
    assert COMPILED[name](doc) == verdict


@functools.cache
def _vector_documents() -> dict[str, list[Any]]:
    """Every distinct record and message of the snapshots the conformance vectors pass through
    (the model replayed action by action), by schema name."""
    found: dict[str, dict[str, Any]] = {name: {} for name in NAMES}
    for path in sorted(VECTORS.glob("*.json")):
        document = json.loads(path.read_text())
        config = load_config(document["config"])
        model = Model(config)
        for vector in document["vectors"]:
            state = model.initial()
            for step in vector["steps"]:
                if "refused" in step:  # a call the model refuses: the state stays as it was
                    continue
                state = next(s for a, s in model.successors(state) if a.to_json() == step["model_action"])
                _collect(snapshot(state, config), found)
    return {name: list(docs.values()) for name, docs in found.items()}


def _collect(snap: dict[str, Any], found: dict[str, dict[str, Any]]) -> None:
    found["snapshot"].setdefault(json.dumps(snap, sort_keys=True), snap)
    for kind in RECORD_SCHEMAS:
        for record in snap[kind]:
            found[f"record:{kind}"].setdefault(json.dumps(record, sort_keys=True), record)
            if "message" in record:
                message = record["message"]
                name = f"message:{message['message_type']}:body"
                found[name].setdefault(json.dumps(message, sort_keys=True), message)


@pytest.mark.clause("MSG-2", "STO-1")
def test_the_conformance_vectors_documents_and_their_edges_get_the_same_verdict() -> None:
    documents = _vector_documents()
    assert sum(map(len, documents.values())) > 100, "the vectors pass through records of every kind"
    for name, docs in documents.items():
        for doc in docs:
            assert COMPILED[name](doc) and JSONSCHEMA[name].is_valid(doc), (name, doc)
        for doc in docs[:3]:
            for mutated in sweep(VALIDATED_SCHEMAS[name], doc):
                assert COMPILED[name](mutated) == JSONSCHEMA[name].is_valid(mutated), (name, mutated)


@pytest.mark.clause("MSG-2")
def test_an_invalid_document_is_named_as_jsonschema_names_it() -> None:
    """The compiled check decides; the message stays jsonschema's (field and what was wrong)."""
    doc = valid(VALIDATED_SCHEMAS["record:operation_approval"])
    doc["arguments_digest"] = "0" * 63 + "g"
    with pytest.raises(spec.SchemaError) as caught:
        spec.validate_record("operation_approval", doc)
    assert caught.value.path == "$.arguments_digest"
    assert "does not match '^[0-9a-f]{64}$'" in caught.value.reason


@pytest.mark.clause("STO-1", "MSG-2")
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_store_refuses_to_write_or_read_a_digest_that_is_not_64_hex_digits(backend: str, tmp_path: Path) -> None:
    storage = reference.SQLiteStorage(tmp_path / "s.db") if backend == "sqlite" else reference.MemoryStorage()
    good = valid(VALIDATED_SCHEMAS["record:operation_approval"])
    bad = {**good, "protocol_id": "p2", "arguments_digest": "0" * 63 + "G"}
    storage.insert("approval.request/approval", "operation_approval", "p1", good)
    with pytest.raises(spec.SchemaError):
        storage.insert("approval.request/approval", "operation_approval", "p2", bad)
    assert storage.read("operation_approval", "p2") is None  # it changed nothing
    storage._insert("operation_approval", "p3", json.dumps({**bad, "protocol_id": "p3"}, sort_keys=True))
    with pytest.raises(CorruptRecord, match="arguments_digest"):
        storage.read("operation_approval", "p3")


@pytest.mark.clause("MSG-2", "STO-1")
def test_a_document_only_the_compiled_check_refuses_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: were the two ever to disagree that way, the write is refused, naming why."""
    import spec.schemas

    doc = valid(VALIDATED_SCHEMAS["record:tool_execution"])
    spec.validate_record("tool_execution", doc)
    monkeypatch.setitem(spec.schemas._CHECKS, "record:tool_execution", lambda _: False)
    with pytest.raises(spec.SchemaError, match="refused by the compiled check of record:tool_execution"):
        spec.validate_record("tool_execution", doc)
