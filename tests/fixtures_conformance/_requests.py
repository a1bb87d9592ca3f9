"""The request side of the fixture proxies (``_proxy.serve`` hands ``answer`` the reply, not the
request). :func:`serve_requests` serves as ``serve`` does, but each request line goes through
``rewrite`` first, which returns the line to forward (the same or another; :func:`answer_here`
makes one), or None to end the proxy there as if its input had ended (the reference is closed and
the proxy exits without replying: a driver that died)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from _proxy import serve  # the fixtures' folder is on sys.path: the fixtures run as scripts

Answer = Callable[[str | None, dict[str, Any], str], str]
OWN: dict[int, dict[str, Any]] = {}
"""msg_id → the reply the proxy gives itself, in place of the reference's (:func:`answer_here`)."""


def answer_here(line: str, reply: dict[str, Any]) -> str:
    """Answer the request ``line`` in the proxy with ``reply`` (``in_reply_to`` is added): the
    reference never sees it, and gets a ``snapshot`` request (which changes nothing) in its place
    under the same msg_id, whose reply is dropped. Returns that request line."""
    msg_id = json.loads(line)["msg_id"]
    OWN[msg_id] = {"in_reply_to": msg_id, **reply}
    return json.dumps({"type": "snapshot", "msg_id": msg_id}) + "\n"


class _Rewritten:
    def __init__(self, lines: Any, rewrite: Callable[[str], str | None]) -> None:
        self.lines, self.rewrite = lines, rewrite

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            out = self.rewrite(line)
            if out is None:
                return
            yield out


def serve_requests(rewrite: Callable[[str], str | None], answer: Answer) -> int:
    def reply(kind: str | None, doc: dict[str, Any], line: str) -> str:
        own = OWN.pop(doc["in_reply_to"], None) if isinstance(doc.get("in_reply_to"), int) else None
        return json.dumps(own) + "\n" if own is not None else answer(kind, doc, line)

    sys.stdin = _Rewritten(sys.stdin, rewrite)  # type: ignore[assignment]  # serve reads sys.stdin
    return serve(reply)


def request_of(line: str) -> dict[str, Any]:
    """The request a line holds ({} for a line that is not a JSON object)."""
    try:
        doc = json.loads(line)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}
