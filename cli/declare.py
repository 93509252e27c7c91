"""The kfx commands' declarations (typer's Option/Argument, App, Exit) made without importing typer."""
# The quick parse (cli/fastpath.py) reads them as they are; typer is given them, as its own
# Option/Argument, only when it parses a command line itself (help, an unusual line).
from __future__ import annotations

import functools
import inspect
import typing
from typing import Any

from specs.lazy import lazy

#: imported on first use (specs/lazy.py), where start-up must not pay for them
cli_helpformat = lazy("cli.helpformat", globals())
typer = lazy("typer", globals())


class Exit(SystemExit):
    """Leave a command with an exit code (typer and click let a SystemExit through as it is)."""

    @property
    def exit_code(self) -> int | str | None:
        """The code given (``SystemExit.code``: an int, as every command gives)."""
        return self.code


class Param:
    """What ``typer.Option(default, *param_decls, **settings)`` or ``typer.Argument(default, **settings)``
    is given, kept as it was given."""

    __slots__ = ("kind", "default", "param_decls", "settings")

    def __init__(self, kind: str, default, param_decls: tuple, settings: dict):
        self.kind, self.default, self.param_decls, self.settings = kind, default, param_decls, settings

    def get(self, name: str, default=None):
        """A setting as given, else ``default`` (typer's own default for it)."""
        return self.settings.get(name, default)

    def to_typer(self):
        if self.kind == "argument":
            return typer.Argument(self.default, *self.param_decls, **self.settings)
        return typer.Option(self.default, *self.param_decls, **self.settings)


# Both return ``Any`` as typer's own Option/Argument do: a :class:`Param` stands as a parameter's
# default for a value of the parameter's annotated type (``paths: list[str] = Argument(...)``).
def Option(default: Any = ..., *param_decls: str, **settings: Any) -> Any:  # noqa: N802 (typer's name)
    """What ``typer.Option`` is given, kept as a :class:`Param`."""
    return Param("option", default, param_decls, settings)


def Argument(default: Any = ..., *param_decls: str, **settings: Any) -> Any:  # noqa: N802 (typer's name)
    """What ``typer.Argument`` is given, kept as a :class:`Param`."""
    return Param("argument", default, param_decls, settings)


class Command:
    __slots__ = ("name", "callback", "settings")

    def __init__(self, name: str, callback, settings: dict):
        self.name, self.callback, self.settings = name, callback, settings


#: ``-h`` as well as ``--help``, on the application and every command
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class App:
    """A typer application declared without importing typer: :meth:`command` registers a function
    whose parameters default to :func:`Option`/:func:`Argument`; :meth:`typer` builds the typer
    application of the very same declarations (once). ``version`` is what ``--version`` prints."""

    def __init__(self, version: str | None = None, **settings):
        self.version = version
        self.settings = settings
        self.commands: list[Command] = []
        self._typer = None

    def command(self, name: str | None = None, **settings):
        def register(callback):
            self.commands.append(Command(name or callback.__name__.replace("_", "-"), callback, settings))
            return callback
        return register

    def typer(self):
        """The typer application (typer and its coercion imported here, not before)."""
        if self._typer is None:
            app = typer.Typer(**{"context_settings": HELP_OPTIONS, **self.settings})
            if self.version is not None:
                app.callback()(cli_helpformat.version_callback(self.version))
            for cmd in self.commands:
                app.command(cmd.name, **{"cls": cli_helpformat.NamedCommand, **cmd.settings})(_typer_callback(cmd.callback))
            self._typer = app
        return self._typer


def _typer_callback(callback):
    """``callback`` with a signature whose defaults are typer's Option/Argument (annotations resolved)."""
    hints = typing.get_type_hints(callback)
    sig = inspect.signature(callback)
    params = [p.replace(default=p.default.to_typer() if isinstance(p.default, Param) else p.default,
                        annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]

    @functools.wraps(callback)
    def command(*args, **kwargs):
        return callback(*args, **kwargs)

    command.__signature__ = sig.replace(parameters=params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


