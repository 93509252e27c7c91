"""Lines the CLI prints without importing rich, where rich would print exactly the same bytes."""
# rich styles nothing when its console is no terminal, so a line of plain ASCII text that needs no
# wrapping comes out as the text and a newline. render() gives the lines' text only where that
# holds (no markup or emoji code in what a command put in, no control or wide characters, short
# enough for rich's width); otherwise None, and the command prints through rich as before.
# tests/test_startup.py proves the text equal to rich's for every line it takes.
from __future__ import annotations

import os
import re
import sys

from cli import heavy

#: rich's emoji codes (``:smile:``): any text that looks like one is left to rich
_EMOJI = re.compile(r":\S*?:")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def no_terminal(stream=None) -> bool:
    """True when a rich Console on ``stream`` (stdout) would not be a terminal: no colours, no styles."""
    stream = stream or sys.stdout
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False  # rich's own switches: rich decides
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False


def console_width() -> int:
    """The width rich's Console gives itself (the first terminal among stdin, stdout, stderr, then
    COLUMNS, else 80)."""
    width = None
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return width or 80


class Line:
    """One ``Console.print``: ``rich_text`` is the string given to rich, ``plain`` the text it shows,
    ``inputs`` the parts of it that came from data (checked for markup), ``options`` the keyword
    arguments of the print."""

    __slots__ = ("rich_text", "plain", "inputs", "options")

    def __init__(self, rich_text: str, plain: str, inputs=(), **options):
        self.rich_text, self.plain, self.inputs, self.options = rich_text, plain, tuple(inputs), options


def render(lines, width: int) -> str | None:
    """What rich prints for ``lines`` on a console of ``width`` that is no terminal, or None when
    this module cannot be sure (rich prints them then)."""
    out = []
    for line in lines:
        text = line.plain
        if not _PRINTABLE.fullmatch(text) or _EMOJI.search(text) or text != text.rstrip():
            return None
        if line.options.get("markup", True) and any("[" in part or "\\" in part for part in line.inputs):
            # markup, or a backslash that escapes the markup after it ("note\\" + "[/dim]"): rich decides
            return None
        if not line.options.get("soft_wrap", False) and len(text) > width:
            return None
        out.append(text + "\n")
    return "".join(out)


def console(stderr: bool = False):
    """A rich Console on stdout (``stderr``: on stderr) that folds no line when its stream is no
    terminal: piped output is full width, a long path whole (a terminal folds at its own width)."""
    return heavy.rich_console.Console(stderr=stderr, soft_wrap=no_terminal(sys.stderr if stderr else sys.stdout))


def print_lines(lines) -> None:
    """Print ``lines`` plainly when that is what rich would print; else through rich."""
    if no_terminal():
        text = render(lines, sys.maxsize)  # piped: console() folds nothing
        if text is not None:
            sys.stdout.write(text)
            return
    out = console()
    for line in lines:
        out.print(line.rich_text, **line.options)
