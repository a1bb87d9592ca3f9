"""``python -m reference._member_main``: run one member process (see :mod:`reference._member_process`).

A module of its own, so that ``-m`` does not run a second copy of a module the package imports.
"""

from __future__ import annotations

from ._member_process import main

if __name__ == "__main__":
    raise SystemExit(main())
