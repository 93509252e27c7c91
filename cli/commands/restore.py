"""``kfx restore``: a repair undone from its backup."""
from __future__ import annotations

import json
import os

from cli.common import EXIT_OK, err, fail
from cli.declare import Argument, Exit
from cli.options import DRY_RUN, JSON
from kafkaforensics import fsutil
from kafkaforensics.log import paths as log_paths
from kafkaforensics.repair import restore as repair_restore


def _backup_to_restore(path: str) -> str:
    """The backup dir ``kfx restore PATH`` undoes: PATH itself, or for a log dir (no manifest.json or
    run.json in it) the newest whole-log-dir recover run kept beside it (said on stderr)."""
    if any(os.path.isfile(os.path.join(path, n)) for n in (fsutil.MANIFEST, repair_restore.RUN_FILE)) \
            or not _is_log_dir(path):
        return path
    run = repair_restore.latest_run(path)
    if run is None:
        fail(f"{path}: a log dir with no run of `kfx recover` backed up beside it "
              f"({os.path.abspath(path)}{fsutil.BACKUP_DIR_NAME}/); give the backup dir the repair printed")
    err().print(f"undoing the newest recover run of {path}: {run}", highlight=False, soft_wrap=True, markup=False)
    return run


def _is_log_dir(path: str) -> bool:
    """Whether ``path`` is a log dir by :mod:`kafkaforensics.log.paths`' rules."""
    try:
        return log_paths.classify(path).kind == log_paths.LOG_DIR
    except log_paths.PathUsageError:
        return False


def restore(backup_dir: str = Argument(..., metavar="BACKUP_DIR", help="A backup dir a repair wrote (it holds manifest.json, "
                                       "or run.json: a whole-log-dir recover's), or a log dir: its newest recover run"),
            dry_run: bool = DRY_RUN,
            as_json: bool = JSON):
    """Undo a repair (recover, reindex, compact, retention) from its backup: the files byte-identical again."""
    if not os.path.isdir(backup_dir):
        fail(f"{backup_dir}: not a directory")
    backup_dir = _backup_to_restore(backup_dir)
    try:
        rep = repair_restore.restore(backup_dir, dry_run=dry_run)
    except (OSError, ValueError) as e:
        fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        for r in rep.restored:
            print(f"{'would restore' if dry_run else 'restored'} {r['file']}: {r['detail']}")
        print(f"{len(rep.restored)} change(s) " + ("would be undone (dry run)" if dry_run else "undone")
              + (f", {len(rep.skipped)} not made or already undone" if rep.skipped else ""))
    raise Exit(EXIT_OK)

