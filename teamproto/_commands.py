"""Subcommands beyond ``diagrams``; each registers itself with :func:`teamproto._cli.extra_command`."""

from __future__ import annotations

from . import _check_cli
from ._cli import extra_command

extra_command("check")(_check_cli.register)
from . import _mutants_cli  # noqa: E402

extra_command("mutants")(_mutants_cli.register)
from conformance._cli import register as _conformance  # noqa: E402

extra_command("conformance")(_conformance)
from . import _demo_cli  # noqa: E402

extra_command("demo")(_demo_cli.register)
