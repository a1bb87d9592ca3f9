"""Subcommands beyond ``diagrams``; each registers itself with :func:`reference._cli.extra_command`."""

from __future__ import annotations
