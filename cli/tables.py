"""Tables that never cut a value: a rich table when it fits the terminal, else one record per row.

A ``kfx`` table shows offsets, byte counts and partition names, and a value read cut (``123456…``)
is worse than none. :func:`print_table` prints

- to a terminal, a rich table when every column fits at its full width; else the rows as vertical
  records (``column: value`` lines, a long value folded by the terminal, never cut);
- to anything else (a pipe, a file), plain text at full width: the title, a header line and one
  line a row, columns padded with spaces, whatever the width; rich is not imported.
"""
from __future__ import annotations

import sys
import unicodedata

from cli import heavy
from cli.plain import console_width, no_terminal

#: what a rich table adds around its cells (SQUARE/HEAVY_HEAD boxes, padding 1): "│ a │ b │"
_PADDING = 3


class Cell(str):
    """A cell's text with a rich style for a terminal (``Cell("2", "red")``); plain text elsewhere."""

    style: str | None

    def __new__(cls, text, style: str | None = None):
        cell = super().__new__(cls, text)
        cell.style = style
        return cell


#: the Unicode categories that take no terminal column: nonspacing and enclosing marks, format characters
_ZERO_WIDTH = frozenset(("Mn", "Me", "Cf"))


def cell_width(text: str) -> int:
    """The terminal columns ``text`` takes: two for a wide or full-width character (a log dir under
    a CJK path), none for a mark or format character (a combining accent, a zero-width joiner),
    one for the rest."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.category(ch) in _ZERO_WIDTH else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _widths(columns, rows) -> list[int]:
    return [max([cell_width(c)] + [cell_width(str(r[i])) for r in rows]) for i, c in enumerate(columns)]


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - cell_width(text))
    return fill + text if right else text + fill


def fits(columns, rows, width: int) -> bool:
    """Whether a table of these columns and rows shows every value whole within ``width`` columns."""
    return sum(_widths(columns, rows)) + _PADDING * len(columns) + 1 <= width


def plain_lines(title: str | None, columns, rows, right=()) -> list[str]:
    """The table as plain lines at full width (right-justified columns: the indexes in ``right``),
    aligned in terminal columns, wide characters counted twice."""
    widths = _widths(columns, rows)

    def line(cells):
        return "  ".join(_pad(str(v), w, i in right) for i, (v, w) in enumerate(zip(cells, widths))).rstrip()
    return ([title] if title else []) + [line(columns)] + [line(r) for r in rows]


def record_lines(title: str | None, columns, rows) -> list[str]:
    """The table as vertical records: a ``-- row N --`` line, then ``column: value`` a line."""
    name_width = max(cell_width(c) for c in columns)
    out = [title] if title else []
    for n, r in enumerate(rows, 1):
        out.append(f"-- {n} --" if len(rows) > 1 else "--")
        out.extend(f"{_pad(c, name_width, True)}: {v}" for c, v in zip(columns, r))
    return out


def print_table(title: str | None, columns, rows, right=(), file=None) -> None:
    """Print a table whose values are never cut (see the module's docstring). ``right``: the indexes
    of the columns justified right (numbers)."""
    file = file or sys.stdout
    rows = [list(r) for r in rows]
    if no_terminal(file):
        file.write("".join(line + "\n" for line in plain_lines(title, columns, rows, right)))
        return
    width = console_width()
    out = heavy.rich_console.Console(file=file)
    if not fits(columns, rows, out.width or width):
        for line in record_lines(title, columns, rows):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    if title:  # a line of its own: rich would fold or centre a title wider than the table
        out.print(title, markup=False, highlight=False, soft_wrap=True)
    table = heavy.rich_table.Table()
    for i, c in enumerate(columns):
        table.add_column(c, justify="right" if i in right else "left", no_wrap=True, overflow="fold")
    for r in rows:
        table.add_row(*[_rich_cell(v) for v in r])
    out.print(table)


def _rich_cell(value):
    return heavy.rich_text.Text(str(value), style=getattr(value, "style", None) or "")
