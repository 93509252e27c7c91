"""How ``kfx`` help reads: real names in usage lines and metavars that say what a value is.

typer 0.29 writes a required argument as ``{paths}...`` in the usage line and gives every argument
and every option without a metavar its Python type (``<list[str]>``, ``<str>``, ``<int range>``).
:class:`NamedCommand` (the class of every kfx command, given by cli/declare.py) shows an argument by
its metavar, else its name in capitals (``PATH...``, ``LOG_DIR``, ``[PATH]`` when optional), and an
option's value by its metavar, else a name made from the option (``--backup-dir`` -> ``DIR``,
``--retention-ms`` -> ``MS``, an Enum's choices as ``text|json``). Imported only with typer.
"""
from __future__ import annotations

import enum

import typer
from typer.core import TyperArgument, TyperCommand, TyperOption

#: the last word of an option's name -> the metavar it gets when it declares none
_BY_SUFFIX = {"dir": "DIR", "out": "DIR", "bytes": "BYTES", "ms": "MS", "offset": "OFFSET", "point": "OFFSET",
              "file": "FILE", "host": "HOST", "port": "PORT", "id": "ID", "endpoint": "URL", "master": "URL",
              "key": "KEY", "region": "REGION", "now": "MS", "search": "REGEX", "version": "VERSION",
              "partitions": "N", "jobs": "N"}


def option_metavar(option) -> str:
    """The metavar an option that declares none is shown with."""
    choices = getattr(option.type, "choices", None)
    if choices:
        return "|".join(c.value if isinstance(c, enum.Enum) else str(c) for c in choices)
    long_names = [o for o in option.opts if o.startswith("--")] or list(option.opts)
    last = long_names[0].lstrip("-").rsplit("-", 1)[-1] if long_names else ""
    if last in _BY_SUFFIX:
        return _BY_SUFFIX[last]
    return "N" if option.type.name.startswith("int") else "TEXT"


class NamedArgument(TyperArgument):
    """An argument shown by its name: ``PATH...`` in the usage line and the Arguments section."""

    def _name(self) -> str:
        return self.metavar or self.name.upper()

    def _usage_display_name(self) -> str:
        name = self._name() + ("..." if self.nargs != 1 else "")
        return name if self.required else f"[{name}]"

    def _rich_display_name(self) -> str:
        return self._name() + ("..." if self.nargs != 1 else "")

    def display_type(self, ctx) -> str:
        return ""

    def display_type_rich(self, ctx) -> None:
        return None

    def make_metavar(self, ctx=None) -> str:
        return self._rich_display_name()


class NamedCommand(TyperCommand):
    """A typer command whose arguments are :class:`NamedArgument` and whose valued options all have a
    metavar."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.params:
            if isinstance(p, TyperArgument) and type(p) is TyperArgument:
                p.__class__ = NamedArgument
            elif isinstance(p, TyperOption) and p.metavar is None and not p.is_flag:
                p.metavar = option_metavar(p)


def version_callback(version: str):
    """The application's callback: ``--version`` prints ``kfx VERSION`` and exits."""

    def show(value: bool):
        if value:
            print(f"kfx {version}")
            raise typer.Exit()

    def root(show_version: bool = typer.Option(False, "--version", callback=show, is_eager=True,
                                               expose_value=False, help="Print kfx's version and exit")):
        pass

    return root
