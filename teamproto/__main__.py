"""``python -m teamproto``: the same as the ``teamproto`` console script."""

from teamproto import _cli

raise SystemExit(_cli.main())
