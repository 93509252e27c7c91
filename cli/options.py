"""The options several ``kfx`` commands share, declared once so they read the same everywhere.

A command takes one as the default of its parameter (``as_json: bool = JSON``), as sqlite-utils'
commands take its shared option decorators: same name, metavar, default and help in every command.
:func:`backup_settings` reads ``--backup-dir``/``--no-backup`` the same way for every repair.
"""
from __future__ import annotations

from cli.declare import Exit, Option
from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES

JSON = Option(False, "--json", help="Print the result as one JSON document instead of tables")
DRY_RUN = Option(False, "--dry-run", help="Say what would be done (and what would be dropped); change nothing")
BACKUP_DIR = Option(None, "--backup-dir", metavar="DIR",
                    help="Keep the files changed or removed here (default: <partition>/.kfx-backup/<UTC time>/)")
NO_BACKUP = Option(False, "--no-backup", help="Keep no copy of the files changed or removed")
INDEX_INTERVAL_BYTES = Option(DEFAULT_INDEX_INTERVAL_BYTES, "--index-interval-bytes", min=0, metavar="BYTES",
                              help="Bytes of log between two offset-index entries (the topic's index.interval.bytes)")
SEGMENT_BYTES = Option(DEFAULT_SEGMENT_BYTES, "--segment-bytes", min=14, metavar="BYTES",
                       help="Roll a new segment past this size (the topic's segment.bytes)")
NOW = Option(None, "--now", metavar="MS", help="The clock to judge times by, epoch ms (default: now)")


def backup_settings(backup_dir, no_backup) -> dict:
    """``backup``/``backup_dir`` keyword arguments of a repair from the two options (exit 2 when both given)."""
    if backup_dir and no_backup:
        import sys
        print("error: --backup-dir and --no-backup exclude each other", file=sys.stderr)
        raise Exit(2)
    return {"backup": not no_backup, "backup_dir": backup_dir}
