"""What every ``kfx`` command shares: the exit codes, the stderr console, the one-line usage error,
the progress bar and the paths' checks."""
from __future__ import annotations

import os
import sys
from enum import Enum
from functools import lru_cache
from typing import NoReturn

from cli import heavy, plain
from cli.declare import Exit
from kafkaforensics.log import paths as log_paths

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class Fmt(str, Enum):
    text = "text"
    json = "json"


class Encoding(str, Enum):
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


@lru_cache(maxsize=None)
def err():
    """The rich console on stderr (made on first use)."""
    return plain.console(stderr=True)


def fail(msg: str) -> NoReturn:
    """A usage or input error: one line on stderr, exit 2."""
    err().print(f"[red]error:[/red] {msg}", highlight=False, soft_wrap=True)
    raise Exit(EXIT_USAGE)


def total_bytes(paths) -> int:
    """The bytes of the segments (``.log``) among ``paths`` (files, or dirs walked)."""
    total = 0
    for p in paths:
        if os.path.isdir(p):
            for root, _d, files in os.walk(p):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".log"))
        elif os.path.exists(p):
            total += os.path.getsize(p)
    return total


class NoProgress:
    """What :func:`progress_bar` gives when it would be hidden anyway: every call does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def progress_bar(total: int, label: str):
    """A rich progress bar on stderr (hidden when stderr is not a terminal)."""
    if not sys.stderr.isatty() and not any(v in os.environ
                                           for v in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return NoProgress()  # rich would hide it too: no need to import it (a shell loop's start-up)
    rp = heavy.rich_progress
    return rp.Progress(rp.TextColumn(label), rp.BarColumn(), rp.DownloadColumn(), rp.TransferSpeedColumn(),
                       rp.TimeRemainingColumn(), console=err(), transient=True, disable=not err().is_terminal)


def with_progress(paths, label: str, work):
    """``work(advance)`` under a progress bar over the bytes of ``paths``' segments."""
    total = total_bytes(paths)
    with progress_bar(total, label) as bar:
        task = bar.add_task(label, total=total)
        return work(lambda n: bar.advance(task, n))


def require_paths(paths) -> None:
    """Each of ``paths`` exists, else one line and exit 2."""
    for p in paths:
        if not os.path.exists(p):
            fail(f"{p}: no such file or directory")


def print_live_notes(paths) -> None:
    """One note line on stderr per log dir among ``paths`` that a running broker holds."""
    for n in log_paths.live_notes(paths):
        err().print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)
