"""The kfx commands' declarations (typer's Option/Argument, App, Exit) made without importing typer."""
# The quick parse (cli/fastpath.py) reads them as they are; typer is given them, as its own
# Option/Argument, only when it parses a command line itself (help, an unusual line).
from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import re
import sys
import typing
from typing import Any

from cli import heavy


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
            return heavy.typer.Argument(self.default, *self.param_decls, **self.settings)
        return heavy.typer.Option(self.default, *self.param_decls, **self.settings)


# Both return ``Any`` as typer's own Option/Argument do: a :class:`Param` stands as a parameter's
# default for a value of the parameter's annotated type (``paths: list[str] = Argument(...)``).
def Option(default: Any = ..., *param_decls: str, **settings: Any) -> Any:  # noqa: N802 (typer's name)
    """What ``typer.Option`` is given, kept as a :class:`Param`."""
    return Param("option", default, param_decls, settings)


def Argument(default: Any = ..., *param_decls: str, **settings: Any) -> Any:  # noqa: N802 (typer's name)
    """What ``typer.Argument`` is given, kept as a :class:`Param`."""
    return Param("argument", default, param_decls, settings)


class Command:
    """A command: its name, its typer settings, and its function - given, or the function of the same
    name (``-`` read as ``_``) in ``module``, imported when first asked for (:attr:`callback`)."""

    __slots__ = ("name", "module", "settings", "_callback")

    def __init__(self, name: str, callback=None, settings: dict | None = None, module: str | None = None):
        self.name, self.module, self.settings, self._callback = name, module, settings or {}, callback

    @property
    def callback(self):
        """The command's function (its module imported here, the first time)."""
        if self._callback is None:
            module = self._module()
            __import__(module)  # the import statement's own path: ``-X importtime`` lists it
            self._callback = getattr(sys.modules[module], self.name.replace("-", "_"))
        return self._callback

    def _module(self) -> str:
        """The module that defines the command (a command declared without its function names it)."""
        if self.module is None:
            raise ValueError(f"command {self.name}: declared with neither its function nor its module")
        return self.module

    @property
    def loaded(self) -> bool:
        return self._callback is not None

    def help(self) -> str | None:
        """The command's docstring as typer shows it, read from its module's source without importing
        or parsing it (a command listing imports no command's dependencies): the string literal after
        the function's signature (tests/test_cli_help.py: each one equals the docstring)."""
        if self.loaded:
            return inspect.getdoc(self._callback)
        spec = importlib.util.find_spec(self._module())
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(f"command {self.name}: no source found for {self.module}")
        with open(spec.origin, encoding="utf-8") as f:
            source = f.read()
        fn = re.escape(self.name.replace("-", "_"))
        found = re.search(rf'^def {fn}\(.*?\)(?:\s*->[^:\n]*)?:\n\s+((?:[rRbBuU]?)(?:"""|\'\'\').*?(?:"""|\'\'\'))', source, re.M | re.S)
        return inspect.cleandoc(ast.literal_eval(found.group(1))) if found else None


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

    def add(self, name: str, module: str, **settings) -> None:
        """Register command ``name``: the function of that name in ``module``, imported when the
        command runs or its help is shown (not to list it)."""
        self.commands.append(Command(name, settings=settings, module=module))

    def typer(self, argv: list[str] | None = None):
        """The typer application (typer and its coercion imported here, not before). Given the command
        line ``argv``, only the command it names is imported: the others are listed by name and help
        (their modules' dependencies stay out of ``kfx --help``)."""
        named = argv[0] if argv else None
        if argv is not None and self._typer is None:
            return self._build(lambda cmd: cmd.name == named or cmd.loaded)
        if self._typer is None:
            self._typer = self._build(lambda cmd: True)
        return self._typer

    def _build(self, real):
        """A typer application of the commands; those ``real(cmd)`` is false for are listed only."""
        helpformat = heavy.typer_help
        app = heavy.typer.Typer(**{"context_settings": HELP_OPTIONS, **self.settings})
        if self.version is not None:
            app.callback()(helpformat.version_callback(self.version))
        for cmd in self.commands:
            settings = {"cls": helpformat.NamedCommand, **cmd.settings}
            if real(cmd):
                app.command(cmd.name, **settings)(_typer_callback(cmd.callback))
            else:
                app.command(cmd.name, help=cmd.help(), **settings)(_listed_only)
        return app


def _listed_only():
    """Stands for a command in a listing: never run (the line named no such command)."""
    raise AssertionError("a listed command is run only through its own module")


def _typer_callback(callback):
    """``callback`` with a signature whose defaults are typer's Option/Argument (annotations resolved)."""
    hints = typing.get_type_hints(callback)
    sig = inspect.signature(callback)
    params = [p.replace(default=p.default.to_typer() if isinstance(p.default, Param) else p.default,
                        annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]

    @functools.wraps(callback)
    def command(*args, **kwargs):
        return callback(*args, **kwargs)

    # inspect.signature (typer's) reads __signature__, which no function type declares
    setattr(command, "__signature__", sig.replace(parameters=params))
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


