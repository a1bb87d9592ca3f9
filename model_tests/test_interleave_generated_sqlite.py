"""The generated pairs of ``test_interleave_generated.py`` on the SQLite backend (STO-4, STO-2).

A file of its own so that pytest-xdist (``--dist loadfile``) runs it beside the memory backend's:
the same pairs, the same known races, each interleaving over one SQLite file that two connections
share — its guarded inserts and compare-and-set statements raced as the memory backend's dictionary
is (outside review 57: a guarded insert that reported a taken key as a lost guard on SQLite only
was caught by the storage contract alone).

Clause: STO-4, STO-2.
"""

from __future__ import annotations

import pytest

from model_tests.test_interleave_generated import cases, check


@pytest.mark.clause("STO-4", "STO-2")
@pytest.mark.parametrize("pair", cases())
def test_every_interleaving_of_a_generated_pair_is_some_serial_orders_on_sqlite(pair: str) -> None:
    check(pair, "sqlite")
