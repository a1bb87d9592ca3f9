"""Cases and verdicts (in the manner of h2spec and Autobahn): each case carries clause ids."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._client import Crashed, Implementation

OK, FAILED, UNIMPLEMENTED = "OK", "FAILED", "UNIMPLEMENTED"

GROUPS = {
    "approval": "operation approval",
    "task": "tasks",
    "member": "members",
    "profile": "members",
    "shutdown": "shutdown",
    "plan": "plan approval",
    "job": "jobs",
    "message": "messages",
    "outbox": "messages",
}


def group_of(operations: list[str]) -> str:
    """The protocol a case belongs to: its most specific family."""
    families = {op.split(".")[0] for op in operations}
    for family in ("approval", "plan", "shutdown", "job", "member", "profile", "message", "outbox", "task"):
        if family in families:
            return GROUPS[family]
    return "clock and recovery"


@dataclass
class Case:
    id: str
    section: str  # vectors, bad input, random programs
    group: str
    title: str
    clauses: list[str]
    verdict: str = OK
    failed_clauses: list[str] = field(default_factory=list)
    message: str = ""
    trace: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def fail(self, message: str, clauses: list[str] | tuple[str, ...], trace: list[str]) -> Case:
        """Record the first failure (a later one is a consequence of it)."""
        if self.verdict == FAILED:
            return self
        self.verdict, self.message, self.trace = FAILED, message, list(trace)
        self.failed_clauses = sorted(set(clauses) or set(self.clauses))
        return self

    def unimplemented(self, missing: list[str]) -> Case:
        self.verdict, self.message = UNIMPLEMENTED, f"the driver does not implement {', '.join(missing)}"
        return self

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


IDLE: dict[str, Implementation] = {}
"""A live driver process per command, between cases."""


def stop_idle() -> None:
    while IDLE:
        IDLE.popitem()[1].stop()


class Session:
    """One implementation process over one fresh data directory, with the trace of what was sent."""

    def __init__(self, command: str, init: dict[str, Any], root: Path) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="case-", dir=root))
        data = self.folder / "data"
        self.command = command
        self.impl = Implementation(command, {**init, "data_dir": str(data)}, self.folder / "driver.stderr")
        self.clock = 0.0
        self.trace: list[str] = []
        self.last: dict[str, Any] = {}

    def start(self) -> dict[str, Any]:
        idle = IDLE.pop(self.command, None)
        if not self.trace and idle is not None and idle.alive():
            idle.init_request, idle.stderr = self.impl.init_request, self.impl.stderr  # restarts log here
            self.impl = idle  # a live process of an earlier case serves this one's data directory
            reply = self.impl.call({**self.impl.init_request, "clock": self.clock})
        else:
            if idle is not None:
                idle.stop()
            reply = self.impl.start(self.clock)
        if reply["type"] != "ok":
            raise Crashed(f"init was refused: {reply['error']}")
        self.note("init" if not self.trace else "restart: a new process, init on the same data directory", reply)
        return reply

    def note(self, what: str, reply: dict[str, Any] | None) -> None:
        if reply is None:
            self.trace.append(f"{len(self.trace) + 1:>3}. {what}")
            return
        outcome = reply["result"] if reply["type"] == "ok" else reply["error"]
        text = json.dumps(outcome, sort_keys=True)
        self.trace.append(f"{len(self.trace) + 1:>3}. {what} → {reply['type']} {text[:160]}")

    def call(self, request: dict[str, Any], what: str | None = None) -> dict[str, Any]:
        reply = self.impl.call(request)
        self.note(what or describe(request), reply)
        if request["type"] == "tick" and reply["type"] == "ok":
            self.clock += request["seconds"]
        return reply

    def crash_call(self, request: dict[str, Any], step: str) -> dict[str, Any] | None:
        """Arm a crash after ``step`` and send ``request``: None when the process died."""
        armed = self.impl.call({"type": "arm_crash", "step": step})
        if armed["type"] != "ok":
            self.note(f"arm_crash {step}", armed)
            return armed
        try:
            reply = self.impl.call(request)
        except Crashed:
            self.note(f"{describe(request)} — crashed after {step} (armed)", None)
            return None
        self.note(f"{describe(request)} — armed to crash after {step}, but it replied", reply)
        return reply

    def snapshot(self) -> dict[str, Any]:
        reply = self.impl.call({"type": "snapshot"})
        if reply["type"] != "ok" or not isinstance(reply.get("result", {}).get("snapshot"), dict):
            raise Crashed(f"snapshot refused: {reply}")
        self.last = reply["result"]["snapshot"]
        return self.last

    def close(self) -> None:
        """Keep a live process for the next case (``init`` with another data directory)."""
        if self.impl.alive() and self.command not in IDLE:
            IDLE[self.command] = self.impl
        else:
            self.impl.stop()


def describe(request: dict[str, Any]) -> str:
    """One readable line of a request."""
    rest = {k: v for k, v in request.items() if k not in ("type", "msg_id")}
    parts = []
    for key, value in rest.items():
        if key == "actor":
            value = value["member_id"] + (f"#{value['incarnation']}" if "incarnation" in value else "")
        elif key == "risk_summary":
            value = "…"
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        parts.append(f"{key}={text if len(text) < 60 else text[:57] + '…'}")
    return f"{request['type']} {' '.join(parts)}".strip()


__all__ = ["FAILED", "OK", "UNIMPLEMENTED", "Case", "Session", "describe", "group_of", "stop_idle"]
