"""``bench/count_states.py`` counts what the explorer explores: it measures sizes beyond the
explorer's reach (``standard``), so its counts per depth must be the explorer's where both end."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from spec.explore import explore
from spec.model import Model, load_config


def _bench() -> Any:
    path = Path(__file__).parent.parent / "bench" / "count_states.py"
    spec = importlib.util.spec_from_file_location("count_states", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["plan", "pair", "fencing"])  # crashes; symmetry; neither
def test_counts_are_the_explorers(name: str) -> None:
    counted = _bench().count(name, 600.0, False)
    report = explore(Model(load_config(name)))
    assert counted["complete"] and report.complete
    assert (counted["states"], counted["transitions"]) == (report.states, report.transitions)
    assert counted["states_by_depth"] == report.states_by_depth


def test_a_bounded_count_says_it_is_incomplete() -> None:
    counted = _bench().count("pair_crashes", 0.0, False)
    assert not counted["complete"] and counted["states"] < 45_242


def test_a_variant_is_counted_as_the_explorer_explores_it() -> None:
    """``--set FIELD=VALUE`` counts a variant (how the multipliers of ``standard`` are measured);
    an unknown field is refused."""
    import dataclasses

    counted = _bench().count("plan", 600.0, False, ["max_ticks=0", "crashes=false"])
    report = explore(Model(dataclasses.replace(load_config("plan"), max_ticks=0, crashes=False)))
    assert counted["config"] == "plan[max_ticks=0,crashes=False]"
    assert (counted["states"], counted["states_by_depth"]) == (report.states, report.states_by_depth)
    assert counted["states"] != _bench().count("plan", 600.0, False)["states"]
    with pytest.raises(SystemExit, match="no configuration field"):
        _bench().count("plan", 600.0, False, ["colour=1"])
