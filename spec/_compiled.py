"""The explorer's hot modules, compiled from this very source by mypyc, when a fresh build exists.

``scripts/compile`` compiles :data:`COMPILED` (the model's operations, snapshots, symmetry,
invariants, explorer and simulator) with mypyc into ``.compiled/`` beside the package, and stamps
the build with :func:`source_digest`: a hash of every ``.py`` file of ``spec`` and of the Python
version. On import, ``spec`` and ``spec.model`` put the build's folder in front of their
``__path__`` only when that stamp equals the digest of the source as it is now, so an edited
source is never shadowed by a stale build: it simply runs interpreted until compiled again.
``TEAMPROTO_PURE=1`` runs interpreted whatever is built. Nothing else changes: the same source,
the same semantics (``model_tests/test_compiled.py`` compares the two on whole state spaces).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

COMPILED = (
    "spec/model/_ops.py",
    "spec/model/_model.py",
    "spec/model/_symmetry.py",
    "spec/model/_snapshot.py",
    "spec/model/_reconcile.py",
    "spec/model/_dead.py",
    "spec/model/_flat.py",
    "spec/invariants.py",
    "spec/explore.py",
    "spec/_flat_explore.py",
    "spec/simulate.py",
)
"""The modules compiled, relative to the repository root. ``_state`` stays interpreted: its
records are replaced by a generated function that needs Python classes with slots."""

SOURCE = Path(__file__).resolve().parent
BUILD = SOURCE.parent / ".compiled"
STAMP = BUILD / "SOURCE_DIGEST"
RUNTIME = BUILD / "lib"
"""The folder of mypyc's runtime library that the compiled modules share. It goes on ``sys.path``;
the build's ``spec`` folder must not (it would be found there as a namespace package)."""


def source_digest() -> str:
    """The hash of every ``.py`` file of the package and of the interpreter's version (a build is
    only valid for the very source and interpreter it was made from)."""
    digest = hashlib.sha256(f"{sys.version}\n{sys.implementation.cache_tag}\n".encode())
    for path in sorted(SOURCE.rglob("*.py")):
        digest.update(str(path.relative_to(SOURCE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _complete() -> bool:
    """Every compiled module and the runtime library are in the build (none was deleted)."""
    modules = [BUILD / Path(module).with_suffix("") for module in COMPILED]
    return any(RUNTIME.glob("*__mypyc.*.so")) and all(any(m.parent.glob(f"{m.name}.*.so")) for m in modules)


def _fresh() -> bool:
    if os.environ.get("TEAMPROTO_PURE"):
        return False
    try:
        return STAMP.read_text(encoding="utf-8").strip() == source_digest() and _complete()
    except OSError:
        return False


ACTIVE = _fresh()
"""Whether this process runs the compiled modules."""


def extend(path: list[str], package: str) -> None:
    """Put the build's folder of ``package`` (``"spec"`` or ``"spec/model"``) in front of its
    ``__path__`` if the build is fresh; the runtime library's folder goes on ``sys.path``."""
    if not ACTIVE:
        return
    folder = str(BUILD / package)
    if folder not in path:
        path.insert(0, folder)
    if str(RUNTIME) not in sys.path:
        sys.path.append(str(RUNTIME))
