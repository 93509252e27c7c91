"""``kfx``: the application, its commands, and the way into them.

Exit codes, the same for every command (README, *Exit codes*): 0 clean or done, 1 problems found in
the input (damage, findings, differences; the repairs exit 1 when there was something to repair), 2 usage
or I/O error.

Each command is a module of cli/commands/ (one function a command, a few lines over a public library
function, its imports plain at the module's top); the options several share are cli/options.py's,
the helpers they share cli/common.py's. Start-up is part of the interface (operators run ``kfx
dump``/``verify`` in shell loops over thousands of files): this module imports only the standard
library and the commands' declarations (cli/declare.py: typer's Option/Argument, kept until typer is
needed); a command line imports the one command module it names, and a plain one runs through
cli/fastpath.py without importing typer at all; anything else (help, an unusual line) goes through
the typer application built from the same declarations (``app``), which lists the other commands
without importing them.
"""
from __future__ import annotations

import sys

from cli import fastpath
from cli.declare import App
from kafkaforensics import __version__

# plain help text: typer's rich help panels import rich and markdown-it (~0.1 s) before a line is printed
commands = App(version=__version__, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
               help="Forensics for Apache Kafka's storage: dump, verify, write, repair.")

#: the commands, in the order help lists them: each is the function of its name in cli/commands/<name>.py
COMMANDS = ("dump", "verify", "write", "recover", "reindex", "restore", "salvage", "compact", "retention", "scan",
            "analyze", "diff", "explain", "groups", "serve")
#: the package of the command modules
COMMAND_PACKAGE = "cli.commands"
for _name in COMMANDS:
    commands.add(_name, f"{COMMAND_PACKAGE}.{_name}")


def __getattr__(name: str):
    if name == "app":  # the typer application of every command (typer imported here: help, tests)
        return commands.typer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """``kfx``: ``--version``, a plain line through the quick parse, anything else through typer."""
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print(f"kfx {__version__}")
        raise SystemExit(0)
    fastpath.run(commands, argv)  # a plain command line runs without typer
    commands.typer(argv)(prog_name="kfx")


if __name__ == "__main__":
    main()
