"""The abstract system model of the whole team (see ``_model`` for what it abstracts away)."""

from __future__ import annotations

from .. import _compiled

_compiled.extend(__path__, "spec/model")  # the compiled model, if a fresh build exists

from ._bounds import unreached_bounds, witness_search
from ._config import BadConfig, BadEngine, Config, UnknownConfig, config_names, load_config, manifest, parse_config
from ._model import Action, Model
from ._mutants import MUTANTS, Mutant
from ._ops import CRASH_POINTS, OPERATIONS, WRITE_STEPS
from ._snapshot import snapshot
from ._state import State

__all__ = [
    "CRASH_POINTS",
    "MUTANTS",
    "OPERATIONS",
    "WRITE_STEPS",
    "Action",
    "BadConfig",
    "BadEngine",
    "Config",
    "Model",
    "Mutant",
    "State",
    "UnknownConfig",
    "config_names",
    "load_config",
    "manifest",
    "parse_config",
    "snapshot",
    "unreached_bounds",
    "witness_search",
]
