"""Conformance suite for foreign implementations (ROADMAP 4). Not built yet."""

__all__: list[str] = []
