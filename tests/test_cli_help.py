"""Every command's help explains every option and argument, with real names (issue 31).

Walks each kfx command's ``--help`` (and ``-h``): the usage line names its arguments as a user would
type them (``PATH...``, ``LOG_DIR``), each option and argument has a help text, and no metavar is a
Python type (``<list[str]>``, ``<str>``, ``<int range>``) or typer's ``{paths}``.
"""
import re
import subprocess
import sys

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from cli.main import app, commands
from kafkaforensics import __version__

ROOT = __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__)))
NAMES = [c.name for c in commands.commands]
#: what typer shows for a value it was told nothing about
TYPE_METAVAR = re.compile(r"<(?:list\[[^\]]*\]|str|int|float|bool|path|[a-z]+ range)>|\{[a-z_]+\}")


def _help(*argv):
    r = CliRunner().invoke(app, list(argv), catch_exceptions=False, prog_name="kfx")
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("name", NAMES)
def test_every_option_and_argument_is_explained(name):
    cmd = get_command(app).commands[name]
    for p in cmd.params:
        assert (p.help or "").strip(), f"kfx {name}: {p.name} has no help text"
    text = _help(name, "--help")
    assert _help(name, "-h") == text
    assert not TYPE_METAVAR.search(text), f"kfx {name}: {TYPE_METAVAR.search(text).group()}\n{text}"
    usage = text.splitlines()[0]
    assert usage.startswith(f"Usage: kfx {name} [OPTIONS]"), usage
    for p in cmd.params:
        if p.param_type_name == "argument":
            shown = (p.metavar or p.name.upper()) + ("..." if p.nargs != 1 else "")
            assert shown in usage and re.fullmatch(r"[A-Z_]+(\.\.\.)?", shown), (name, usage)
        elif not p.is_flag:  # a valued option shows a name for its value
            assert p.metavar and re.fullmatch(r"[A-Z_]+(=[A-Z_]+)?|[a-z0-9]+(\|[a-z0-9]+)+", p.metavar), (name, p.opts, p.metavar)
            assert f"{p.opts[0]} {p.metavar}" in text, (name, p.opts)


def test_top_level_help_and_version():
    text = _help("-h")
    assert text == _help("--help") and "--version" in text
    for name in NAMES:
        assert name in text
    assert _help("--version") == f"kfx {__version__}\n"
    out = subprocess.run([sys.executable, "-m", "cli.main", "--version"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout == f"kfx {__version__}\n"
    probe = ("import sys\nsys.argv = ['kfx', '--version']\nimport cli.main\ntry:\n    cli.main.main()\n"
             "except SystemExit as e:\n    print(e.code, 'typer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines()[-1] == "0 False", out.stdout  # --version answers without typer


def test_shared_options_read_the_same_everywhere():
    """--json, --dry-run, --backup-dir, --no-backup and --index-interval-bytes: one declaration each."""
    seen = {}
    for name in NAMES:
        for p in get_command(app).commands[name].params:
            if p.opts and p.opts[0] in ("--json", "--dry-run", "--backup-dir", "--no-backup", "--index-interval-bytes"):
                seen.setdefault(p.opts[0], set()).add((p.help, p.metavar, repr(p.default)))
    assert set(seen) == {"--json", "--dry-run", "--backup-dir", "--no-backup", "--index-interval-bytes"}
    for opt, variants in seen.items():
        assert len(variants) == 1, (opt, variants)


def test_scan_help_names_every_kind_of_input_it_reads():
    """`kfx scan` reads object storage too: its help says so (s3://, s3a://, hdfs://), in words a
    table never cuts (typer's help wraps, it does not truncate)."""
    text = " ".join(_help("scan", "--help").split())
    for scheme in ("s3://", "s3a://", "hdfs://", "file://"):
        assert scheme in text, scheme


def test_the_listing_shows_each_command_s_own_docstring():
    """`kfx --help` lists the commands without importing them (cli/declare.py reads each docstring from
    its module's source): the text read is the function's docstring, and the listing is the one typer
    makes of the imported commands."""
    import inspect

    from cli.declare import Command
    for cmd in commands.commands:
        unloaded = Command(cmd.name, module=cmd.module)
        assert unloaded.help() == inspect.getdoc(cmd.callback), cmd.name
    probe = ("import sys\nfrom cli.main import commands\nfrom typer.testing import CliRunner\n"
             "r = CliRunner().invoke(commands.typer(['--help']), ['--help'], prog_name='kfx')\n"
             "print(sorted(m for m in sys.modules if m.startswith('cli.commands.')))\nprint(r.output)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    imported, listing = out.stdout.split("\n", 1)
    assert imported == "[]", out.stderr[-2000:]
    assert listing.rstrip("\n") == _help("--help").rstrip("\n")
