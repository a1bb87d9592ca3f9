"""The setuptools build that ``scripts/compile.py`` runs in its staging folder (not run by hand).

What ``python -m mypyc`` does, with two changes that make the build about 2.4 times faster on
two processors and the compiled explorer no slower (measured: 115 s → 48 s; the default
``teamproto check`` 37.0 s → 36.6 s):

- ``multi_file``: mypyc writes one C file per module instead of one file of all of them, which
  the C compiler optimises in far less time than the single large one;
- those C files are compiled at once, one per processor (setuptools compiles an extension's
  sources one after another). Where setuptools' compiler lacks the hooks this uses, the build
  falls back to its own sequential compile.

Usage (from ``scripts/compile.py``): ``python mypyc_build.py build_ext --inplace MODULE.py ...``
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mypyc.build import mypycify
from setuptools import setup
from setuptools._distutils import ccompiler


def _compile_at_once(
    self: Any,
    sources: list[str],
    output_dir: str | None = None,
    macros: Any = None,
    include_dirs: Any = None,
    debug: bool = False,
    extra_preargs: Any = None,
    extra_postargs: Any = None,
    depends: Any = None,
) -> list[str]:
    """``CCompiler.compile``, one source per processor (the same calls, in threads: each runs
    the C compiler as a process)."""
    macros, objects, extra_postargs, pp_opts, build = self._setup_compile(
        output_dir, macros, include_dirs, sources, depends, extra_postargs
    )
    cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)

    def one(obj: str) -> None:
        src, ext = build[obj]
        self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(one, objects))
    return objects


if all(hasattr(ccompiler.CCompiler, hook) for hook in ("_setup_compile", "_get_cc_args", "_compile")):
    ccompiler.CCompiler.compile = _compile_at_once  # type: ignore[method-assign]

modules = [arg for arg in sys.argv[1:] if arg.endswith(".py")]
sys.argv = [sys.argv[0], *(arg for arg in sys.argv[1:] if not arg.endswith(".py"))]
setup(name="teamproto_compiled", ext_modules=mypycify(modules, opt_level="3", multi_file=True))
