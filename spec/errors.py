"""The typed error base of the whole project (DESIGN rule 8).

Every error says whether it is *definite* — nothing happened, the caller may act on that — or
*indefinite* — it may have happened; look the outcome up by its idempotency key before acting.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of every teamproto error. ``definite`` is True when nothing was changed."""

    definite: bool = True

    @property
    def kind(self) -> str:
        return "definite" if self.definite else "indefinite"
