"""Subcommands beyond ``diagrams``; each registers itself with :func:`reference._cli.extra_command`."""

from __future__ import annotations

from . import _check
from ._cli import extra_command

extra_command("check")(_check.register)
from . import _mutants_cli  # noqa: E402

extra_command("mutants")(_mutants_cli.register)
from . import _demo  # noqa: E402

extra_command("demo")(_demo.register)
