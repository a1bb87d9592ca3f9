"""The runner's side of the driver protocol: one implementation process, its lines, its death."""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from ._protocol import Message, reply_problem

TIMEOUT = 20.0
STOP_SECONDS = 5.0
"""How long a driver has to exit after its input ends before :meth:`Implementation.stop` kills it."""


class Crashed(Exception):
    """The process died (an armed crash, a SIGKILL, or a bug) before it replied."""


class Undecided(Exception):
    """The driver broke the protocol itself (no reply in time, a reply that is not JSON or not of
    the reply schema, a reply to another request): the suite cannot decide (exit 2)."""


class Implementation:
    def __init__(self, command: str, init: Message, stderr: Path | None = None) -> None:
        self.command = shlex.split(command)
        self.stderr = stderr
        self.init_request = init
        self.next_id = 0
        self.process: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.sent = 0

    def start(self, clock: float) -> Message:
        """Start a process and send it ``init`` (a restart when the data directory holds a team)."""
        self.start_process()
        return self.call({**self.init_request, "clock": clock})

    def start_process(self) -> None:
        self.stop()
        errors = self.stderr.open("a", encoding="utf-8") if self.stderr is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.lines), daemon=True).start()

    @staticmethod
    def _read(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    def send_raw(self, text: str) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(text + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise Crashed("the process is gone") from None

    def call(self, request: dict[str, Any]) -> Message:
        """Send one request (its ``msg_id`` is set here) and return the reply to it."""
        msg_id = self.next_id
        self.next_id += 1
        self.send_raw(json.dumps({**request, "msg_id": msg_id}))
        self.sent += 1
        return self.reply(msg_id)

    def reply(self, msg_id: int | None) -> Message:
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise Undecided(f"no reply to msg_id {msg_id} within {TIMEOUT:.0f} s") from None
        if line is None:
            assert self.process is not None
            self.process.wait()
            raise Crashed(f"exit status {self.process.returncode}{self.last_words()}")
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            raise Undecided(f"a reply that is not JSON: {line[:200]!r}") from None
        problem = reply_problem(doc)
        if problem:
            raise Undecided(f"a reply outside the reply schema ({problem}): {line[:200]!r}")
        if (
            msg_id is not None
            and doc["in_reply_to"] != msg_id
            and not (doc["type"] == "error" and doc["in_reply_to"] is None)
        ):
            raise Undecided(f"a reply to msg_id {doc['in_reply_to']}, expected {msg_id}")
        return dict(doc)

    def last_words(self) -> str:
        """The last line the process wrote on stderr, if any."""
        if self.stderr is None or not self.stderr.exists():
            return ""
        lines = [
            line for line in self.stderr.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
        ]
        return f"; its stderr ends: {lines[-1][:300]}" if lines else ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """A real crash: SIGKILL to the whole process group, whatever it is doing."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            assert self.process.stdin is not None
            try:
                self.process.stdin.close()
                self.process.wait(timeout=STOP_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self.process = None


__all__ = ["Crashed", "Implementation", "Undecided"]
