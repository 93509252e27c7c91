"""A quick way into a ``kfx`` command for the plain command lines shell loops run.

Importing typer takes tens of milliseconds, and typer 0.29 then coerces every parameter through
pydantic (a TypeAdapter per parameter, about 0.1-0.2 s) before the command starts. :func:`plan`
reads the command's own declarations (cli/declare.py: what typer's Option/Argument are given -
names, defaults, min/max, Enum choices) and parses a command line that uses only what it
understands: long options with values (``--x v`` or ``--x=v``; a repeatable one collected in order), flags, and positional arguments of
type str/int/Enum, optional or list. Anything else - help, a short option, a typo, a missing or bad
value, a declaration it does not know - gives ``None`` and typer parses the line itself, with its
own messages. So every error and every unusual line is typer's; ``tests/test_startup.py`` proves
that for the lines :func:`plan` accepts typer passes the command exactly the same values. A plain
line never imports typer.
"""
from __future__ import annotations

import enum
import inspect
import os
import re
import sys
import typing

from cli.declare import Param

#: what a declaration may leave at typer's defaults and still be parsed here
_PLAIN = {"callback": None, "expose_value": True, "is_eager": False, "envvar": None,
          "default_factory": None, "parser": None, "case_sensitive": True, "clamp": False,
          "count": False, "prompt": False}


def _leaf(tp):
    """(type, is_list) for str/int/bool/Enum, Optional of these, or List of these; else None."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        rest = [a for a in args if a is not type(None)]
        return _leaf(rest[0]) if len(rest) == 1 and len(args) == 2 else None
    if origin is list:
        inner = _leaf(args[0]) if args else None
        return (inner[0], True) if inner and not inner[1] and inner[0] is not bool else None
    if tp in (str, int, bool) or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        return tp, False
    return None


def _convert(tp, text: str, info: Param):
    """``text`` as typer would pass it, or raise ValueError where typer would refuse it."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if member.value == text:
                return member
        raise ValueError(text)
    if tp is str:
        return text
    if not re.fullmatch(r"-?(0|[1-9][0-9]*)", text):
        raise ValueError(text)  # plain decimal integers only; anything else is typer's to judge
    value = int(text)
    low, high = info.get("min"), info.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(text)
    return value


def _params(callback):
    """(options by name, arguments in order) of a command, or None if a declaration is unusual."""
    try:
        hints = typing.get_type_hints(callback)
    except Exception:
        return None
    options, arguments = {}, []
    for name, p in inspect.signature(callback).parameters.items():
        info = p.default
        if not isinstance(info, Param) or name not in hints:
            return None
        if any(info.get(k, v) != v for k, v in _PLAIN.items()):
            return None
        leaf = _leaf(hints[name])
        if leaf is None:
            return None
        tp, many = leaf
        if info.kind == "argument":
            if not many and info.default is not ... and info.default is not None \
                    and not isinstance(info.default, tp):
                return None
            if info.param_decls or (arguments and arguments[-1][2]):
                return None  # a renamed argument, or one after a list: typer's to place
            arguments.append((name, tp, many, info))
            continue
        if many and info.default != []:
            return None  # a repeatable option with a default of its own: typer's to pass
        if not many and info.default is not ... and info.default is not None and not isinstance(info.default, tp):
            return None  # a default typer would convert: its to pass
        if tp is bool and info.default is not False:
            return None  # a flag that is on by default: typer's
        decls = info.param_decls or ()
        if not decls or any(not d.startswith("--") or "/" in d or " " in d for d in decls):
            return None  # derived or secondary names, short names: typer's
        for d in decls:
            options[d] = (name, tp, info, many)
    return options, arguments


def plan(app, argv: list[str]):
    """``(callback, kwargs)`` for a plain command line of ``app`` (a :class:`cli.declare.App`), or
    None (typer parses it)."""
    if not argv or argv[0].startswith("-"):
        return None
    for cmd in app.commands:
        if cmd.name == argv[0]:
            break
    else:
        return None
    if cmd.settings:
        return None  # a command declared with settings of typer's: typer's to run
    params = _params(cmd.callback)
    if params is None:
        return None
    options, arguments = params
    values, positional, rest = {}, [], argv[1:]
    i, only_positional = 0, False
    while i < len(rest):
        tok = rest[i]
        i += 1
        if only_positional or tok == "-" or not tok.startswith("-"):
            positional.append(tok)
            continue
        if tok == "--":
            only_positional = True
            continue
        key, eq, text = tok.partition("=")
        if key not in options:
            return None  # help, a short option, a typo: typer's
        name, tp, info, many = options[key]
        if tp is bool:
            if eq:
                return None
            values[name] = True
            continue
        if not eq:
            if i >= len(rest) or rest[i].startswith("-"):
                return None
            text = rest[i]
            i += 1
        try:
            value = _convert(tp, text, info)
        except ValueError:
            return None
        if many:  # a repeatable option: its values in order
            values.setdefault(name, []).append(value)
        else:
            values[name] = value
    for name, tp, many, info in arguments:
        if many:
            taken, positional = positional, []
            if not taken:
                return None  # typer says what an empty list argument gets
            try:
                values[name] = [_convert(tp, t, info) for t in taken]
            except ValueError:
                return None
        elif positional:
            try:
                values[name] = _convert(tp, positional.pop(0), info)
            except ValueError:
                return None
        elif info.default is ...:
            return None
        else:
            values[name] = info.default
    if positional:
        return None  # extra arguments: typer's message
    for key, (name, tp, info, many) in options.items():
        if name not in values:
            if info.default is ...:
                return None  # a required option is missing: typer's message
            values[name] = [] if many else info.default
    return cmd.callback, values


def run(app, argv: list[str]) -> bool:
    """Run a plain command line quickly; False (nothing done) when typer should parse it."""

    found = plan(app, argv)
    if found is None:
        return False
    callback, kwargs = found
    try:
        callback(**kwargs)
        code = 0
    except SystemExit as e:  # cli.declare.Exit
        code = e.code
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)
        code = 1
    except BrokenPipeError:  # the reader went away (`| head`): quiet, as typer's standalone mode is
        code = 1
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = code or 1
    if code == 1:
        try:  # after a broken pipe, the flush at exit must not fail a second time
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    raise SystemExit(code)
