"""teamproto's reference harness: stores, bus, outbox, protocols, runtime, CLI."""

from __future__ import annotations

__all__: list[str] = []
