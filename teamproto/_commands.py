"""Subcommands beyond ``diagrams``; each registers itself with :func:`teamproto._cli.extra_command`."""

from __future__ import annotations

from spec import check as _check

from ._cli import extra_command

extra_command("check")(_check.register)
from . import _mutants_cli  # noqa: E402

extra_command("mutants")(_mutants_cli.register)
from conformance._cli import register as _conformance  # noqa: E402

extra_command("conformance")(_conformance)
