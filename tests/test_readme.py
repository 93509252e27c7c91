"""The README renders as a newcomer reads it (issue 31): its tables are tables, the commands table has a
row for every command, the quick start is the two make commands, and every command has an example.

Rendered with markdown-it-py (rich's own markdown parser, installed with it) with GitHub's tables on.
"""
import os
import re

from markdown_it import MarkdownIt

from cli.main import commands

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
NAMES = [c.name for c in commands.commands]


def _tokens():
    return MarkdownIt("commonmark").enable("table").parse(README)


def _tables():
    """Each rendered table as a list of rows (a row: the inline text of its cells)."""
    tables, rows, cells = [], None, None
    for tok in _tokens():
        if tok.type == "table_open":
            rows = []
        elif tok.type == "tr_open":
            cells = []
        elif tok.type == "inline" and cells is not None:
            cells.append(tok.content)
        elif tok.type == "tr_close":
            rows.append(cells)
            cells = None
        elif tok.type == "table_close":
            tables.append(rows)
    return tables


def test_the_commands_table_is_one_table_with_a_row_a_command():
    tables = [t for t in _tables() if t[0] == ["command", "what it does"]]
    assert len(tables) == 1
    body = tables[0][1:]
    named = [re.search(r"`kfx ([a-z-]+)", row[0]).group(1) for row in body]
    assert sorted(named) == sorted(NAMES), named
    assert all(row[1].strip() for row in body)


def test_no_table_row_is_left_as_text():
    """A blank line inside a table ends it: the rows after it would render as raw text."""
    for tok in _tokens():
        if tok.type == "inline":
            for line in tok.content.splitlines():
                assert not re.match(r"\s*\|.*\|\s*$", line), f"a table row rendered as text: {line[:120]}"


def test_quick_start_is_the_two_make_commands():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", quick, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make demo", "make test"]


def test_every_command_has_an_example_and_the_reference_sections_exist():
    fences = [tok.content for tok in _tokens() if tok.type == "fence"]
    for name in NAMES:
        assert any(re.search(rf"^kfx {name}\b", f, re.M) for f in fences), f"no example of kfx {name}"
    for heading in ("## Prerequisites", "## Install without make", "## Exit codes", "## Troubleshooting"):
        assert heading in README
    assert "pip install ." in README and "JAVA_HOME" in README
    assert "(benchmarks/README.md)" in README and os.path.exists(os.path.join(ROOT, "benchmarks", "README.md"))
