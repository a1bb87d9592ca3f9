"""Stable ids are a one-to-one function of their names (MSG-4).

``protocol_id`` and ``message_id`` are name-based UUIDs of their parts; two different requests (or
phases) must never share an id, whatever characters their names hold — a separator inside a name
included. An outside review built the ids from the parts joined with ``/``, so that
``("m0", "a/b")`` and ``("m0/a", "b")`` named one request, and only pinned uuids noticed.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spec import ids

NAMES = st.text(alphabet=st.sampled_from('ab/:-_ ."\\,[]'), max_size=6)


@pytest.mark.clause("MSG-4")
@given(st.tuples(NAMES, NAMES, NAMES), st.tuples(NAMES, NAMES, NAMES))
def test_two_requests_share_a_protocol_id_exactly_when_their_names_are_equal(
    one: tuple[str, str, str], other: tuple[str, str, str]
) -> None:
    assert (ids.protocol_id(*one) == ids.protocol_id(*other)) == (one == other)
    assert (ids.message_id(one[0], one[1]) == ids.message_id(other[0], other[1])) == (one[:2] == other[:2])


@pytest.mark.clause("MSG-4")
@pytest.mark.parametrize(
    ("one", "other"),
    [
        (("m0", "a/b", "k"), ("m0/a", "b", "k")),
        (("m0", "a", "b,c"), ("m0", "a,b", "c")),
        (("", "ab", "k"), ("a", "b", "k")),
    ],
)
def test_a_separator_inside_a_name_never_merges_two_requests(
    one: tuple[str, str, str], other: tuple[str, str, str]
) -> None:
    assert ids.protocol_id(*one) != ids.protocol_id(*other)
    assert ids.message_id(*one[:2]) != ids.message_id(*other[:2])


@pytest.mark.clause("MSG-4")
def test_an_id_is_a_name_based_uuid_and_the_same_on_every_call() -> None:
    first = ids.protocol_id("m0", "call-1", "operation_approval")
    assert uuid.UUID(first).version == 5
    assert ids.protocol_id("m0", "call-1", "operation_approval") == first
    assert ids.message_id(first, "request") == ids.message_id(first, "request") != ids.message_id(first, "decision")


@pytest.mark.clause("APR-2", "MSG-4")
def test_the_canonical_form_is_sorted_compact_utf8_text() -> None:
    """What a digest is taken over, byte for byte: keys sorted, no spaces, text as UTF-8 — not
    escaped to ASCII (outside review 42 switched to ASCII escapes; only the frozen conformance
    vectors noticed)."""
    text = ids.canonical_json({"b": [1, 2.5, None], "a": "héllo ✓", "c": {"z": True, "y": "\n"}})
    assert text == '{"a":"héllo ✓","b":[1,2.5,null],"c":{"y":"\\n","z":true}}'
    expected = '{"arguments":{"path":"/srv/café"},"tool_name":"deploy"}'.encode()
    assert ids.arguments_digest("deploy", {"path": "/srv/café"}) == hashlib.sha256(expected).hexdigest()
