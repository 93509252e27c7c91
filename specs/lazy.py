"""Modules imported on first use: the project's one lazy-import mechanism (specs and library alike).

``np = lazy("numpy", globals())`` at the top of a module declares the import where an editor and a
reader look for it, and costs nothing until ``np`` is first used: the first attribute asked of it
imports the module the ordinary way (import lock, ``-X importtime``, ModuleNotFoundError at that
point if it is not installed) and puts the module itself in the importer's globals in its place,
so every later use is a plain global lookup. Used only where start-up must not pay for a module
(numpy, pyarrow, the codecs' libraries, the parts of the library a small segment's dump or verify
never needs); everything else is imported plainly.
"""
from __future__ import annotations

import sys


class _Lazy:
    __slots__ = ("_name", "_globals")

    def __init__(self, name: str, importer_globals: dict):
        self._name, self._globals = name, importer_globals

    def _load(self):
        __import__(self._name)  # the import statement's own path: ``-X importtime`` lists it
        module = sys.modules[self._name]
        for key, value in list(self._globals.items()):
            if value is self:
                self._globals[key] = module
        return module

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy(name: str, importer_globals: dict):
    """Stands for module ``name`` in ``importer_globals`` until first used (see the module's docstring)."""
    return _Lazy(name, importer_globals)
