"""``kfx reindex``: a segment's indexes rebuilt as Kafka's recovery writes them."""
from __future__ import annotations

import json
import os
from typing import List, Optional

from cli import plain
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail
from cli.declare import Argument, Exit
from cli.options import (BACKUP_DIR, CONFIG, DRY_RUN, INDEX_INTERVAL_BYTES, JSON, KAFKA_VERSION, NO_BACKUP,
                         rules_version)
from cli.repairs import backup_settings, one_partition, print_actions, refuse_live, sizes, topic_config
from kafkaforensics.repair import reindex as repair_reindex


def reindex(path: str = Argument(..., help="A <offset>.log segment or a partition directory"),
            index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
            dry_run: bool = DRY_RUN,
            backup_dir: Optional[str] = BACKUP_DIR,
            no_backup: bool = NO_BACKUP,
            as_json: bool = JSON,
            kafka_version: Optional[str] = KAFKA_VERSION,
            config: List[str] = CONFIG):
    """Rebuild .index/.timeindex/.txnindex exactly as Kafka's recovery writes them."""
    refuse_live(path)
    one_partition(path, "reindex", segments=True)
    partition_dir = path if os.path.isdir(path) else os.path.dirname(path) or "."
    _seg, index_interval_bytes, from_configs = sizes(partition_dir, None, index_interval_bytes, segments=False,
                                                     config=topic_config(partition_dir, config))
    try:
        rep = repair_reindex.reindex(path, index_interval_bytes=index_interval_bytes, dry_run=dry_run,
                           kafka_version=rules_version(path, kafka_version), **backup_settings(backup_dir, no_backup))
    except (OSError, ValueError) as e:
        fail(str(e))
    rep.notes[:0] = from_configs
    j = rep.to_json()
    if as_json:
        print(json.dumps(j))
    else:
        print_actions(j, "kfx reindex" + (" (dry run)" if dry_run else ""), dry_run)
        if rep.kafka is not None:  # reindex always says which rules applied
            plain.console().print(rep.kafka.line(), highlight=False, markup=False)
        for n in rep.notes:
            plain.console().print(f"[dim]note: {n}[/dim]", highlight=False, soft_wrap=True)
    raise Exit(EXIT_PROBLEMS if rep.actions else EXIT_OK)

