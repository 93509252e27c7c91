"""``kfx salvage``: every valid batch of damaged inputs copied into a new partition."""
from __future__ import annotations

import json
from typing import List, Optional

from cli import plain, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail, require_paths, with_progress
from cli.declare import Argument, Exit, Option
from cli.options import DRY_RUN, INDEX_INTERVAL_BYTES, JSON, SEGMENT_BYTES
from cli.repairs import refuse_live, sizes
from kafkaforensics.repair import salvage as repair_salvage


def salvage(inputs: List[str] = Argument(..., metavar="INPUT", help="Damaged segment files, partition dirs or raw disk images"),
            out: str = Option(..., "--out", metavar="DIR", help="New partition directory to write (must be new or empty)"),
            segment_bytes: Optional[int] = SEGMENT_BYTES,
            index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
            dry_run: bool = DRY_RUN,
            as_json: bool = JSON):
    """Recover every valid batch, including those after corrupted regions, into a new partition."""
    require_paths(inputs)
    segment_bytes, index_interval_bytes, _notes = sizes(out, segment_bytes, index_interval_bytes)
    if not dry_run:
        refuse_live(out)
    try:
        rep = with_progress(inputs, "salvage", lambda advance: repair_salvage.salvage(
            inputs, out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes, progress=advance,
            dry_run=dry_run))
    except (OSError, ValueError) as e:
        fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        c = plain.console()
        tables.print_table("recovered offset ranges", ("first", "last"), [(r["first"], r["last"]) for r in rep.recovered],
                    right=(0, 1))
        for s in rep.skipped:
            c.print(f"skipped {s['bytes']} bytes of {s['file']} [{s['start']}, {s['end']})"
                    + (f": {s['reason']}" if s.get("reason") else ""), highlight=False, soft_wrap=True)
        for x in rep.conflicts:
            c.print(f"[yellow]conflict:[/yellow] offsets {x['baseOffset']}..{x['lastOffset']} at {x['file']}@{x['position']} "
                    f"differ from the batch kept from {x['keptFile']}@{x['keptPosition']}", highlight=False, soft_wrap=True)
        c.print(f"{rep.batches} batches, {rep.records} records, {rep.duplicates} duplicates"
                + (f" -> {rep.out}" if rep.out else " (dry run)"), highlight=False, soft_wrap=True)
    raise Exit(EXIT_PROBLEMS if (rep.skipped or rep.conflicts) else EXIT_OK)

