"""Symmetry reduction: the fast canonical key is the least encoding over every permutation.

Clause: INV-12 (the explorer's soundness: two states share a key exactly when one is a renaming of
the other, so the reduced search visits one state of every orbit).
"""

from __future__ import annotations

from collections import deque

import pytest

from spec.model import Model, load_config
from spec.model._state import State
from spec.model._symmetry import _perms, canonical, canonical_key, encode, permute


def _sample(name: str, limit: int) -> list[State]:
    """The first ``limit`` states of a breadth-first walk (crashed prefixes included)."""
    model = Model(load_config(name))
    seen = {model.initial()}
    queue, out = deque(seen), []
    while queue and len(out) < limit:
        state = queue.popleft()
        out.append(state)
        for _, after in model.successors(state):
            if isinstance(after, State) and after not in seen:
                seen.add(after)
                queue.append(after)
    return out


@pytest.fixture(scope="module", params=["pair", "standard"])
def states(request: pytest.FixtureRequest) -> list[State]:
    return _sample(request.param, 1500)


def test_key_is_the_least_encoding_over_all_permutations(states: list[State]) -> None:
    for s in states:
        brute = min(encode(s, pm, pt) for pm, pt in _perms(len(s.members), len(s.tasks)))
        assert canonical_key(s) == brute


def test_key_is_the_same_for_every_renaming(states: list[State]) -> None:
    for s in states[::5]:
        key = canonical_key(s)
        for pm, pt in _perms(len(s.members), len(s.tasks)):
            assert canonical_key(permute(s, pm, pt)) == key


def test_states_share_a_key_only_within_an_orbit(states: list[State]) -> None:
    """Equal keys ⇔ equal least images (the slow, State-building canonical form)."""
    by_key: dict[object, State] = {}
    by_image: dict[State, object] = {}
    for s in states:
        key, image = canonical_key(s), canonical(s)
        assert by_key.setdefault(key, image) == image
        assert by_image.setdefault(image, key) == key
    assert len(by_key) < len(states), "the sample should contain renamings of one another"
