"""The ``teamproto`` command line: a thin layer over the model checker (:mod:`spec.check`) and the
reference harness (:mod:`reference`). Run it as ``teamproto`` or ``python -m teamproto``; new
subcommands register through :func:`teamproto._cli.extra_command` (see ``_commands.py``)."""

__all__: list[str] = []
