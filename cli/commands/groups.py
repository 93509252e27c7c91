"""``kfx groups``: committed group offsets and their lag."""
from __future__ import annotations

import json
from typing import List, Optional

from cli import tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, err, fail, print_live_notes
from cli.declare import Argument, Exit, Option
from cli.options import JSON
from cli.remote import KEY_FILE, REMOTE, open_remote
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect import groups as inspect_groups
from kafkaforensics.log import paths as log_paths


def groups(paths: List[str] = Argument(..., metavar="PATH", help="Log dirs, or __consumer_offsets-N partition dirs"),
           as_json: bool = JSON,
           members: bool = Option(False, "--members", help="Also list the members of classic, consumer "
                                        "(KIP-848), share and streams groups"),
           group: Optional[str] = Option(None, "--group", metavar="G", help="Only this group"),
           explain: bool = Option(False, "--explain", help="Split each lag into data to consume, control markers, "
                                                           "aborted records, records held behind the last stable "
                                                           "offset and offsets compaction removed"),
           remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """Latest committed offset of every group/topic/partition, and its lag against the log dir's partitions."""
    tier = open_remote(remote, key_file)
    try:
        rows = (inspect_groups.explain_lag(paths, group, tier) if explain else
                [r for r in inspect_groups.committed_offsets(paths, tier) if group is None or r["group"] == group])
        mrows = [m for m in inspect_groups.group_members(paths, tier) if group is None or m["group"] == group] if members else []
    except (log_paths.PathUsageError, KafkaFormatError) as e:
        fail(str(e))
    print_live_notes(paths)
    if as_json:
        print(json.dumps({"offsets": rows, **({"members": mrows} if members else {})}))
    elif not rows and not mrows:  # a no-op says why
        print(f"no committed offset of group {group} in {' '.join(paths)}" if group else inspect_groups.no_commits_line(paths))
    else:
        tables.print_table(f"kfx groups {' '.join(paths)}", ("group", "topic", "partition", "committed", "log end", "lag", "metadata"),
                    [(r["group"], r["topic"], r["partition"], r["offset"],
                      "" if r["logEndOffset"] is None else f"{r['logEndOffset']} (no log)" if r["noLog"] else r["logEndOffset"],
                      "past log end" if r["pastLogEnd"] else "" if r["lag"] is None else r["lag"],
                      r["metadata"]) for r in rows])
        for r in rows if explain else ():
            if r["explain"] is not None:
                print(f"{r['group']} {r['topic']}-{r['partition']} lag {r['lag']}: {r['explain']['text']}")
        for r in rows:
            if r["pastLogEnd"]:
                err().print(f"problem: group {r['group']} committed offset {r['offset']} of {r['topic']}-{r['partition']}"
                             f", past its log end offset {r['logEndOffset']}"
                             + (" (its partition dir holds no log: its segments are gone)" if r["noLog"] else "")
                             + ": the log lost records the group had consumed (a truncation or an unclean leader "
                             "election)", highlight=False, soft_wrap=True,
                             markup=False)
        if members:
            tables.print_table("members", ("group", "protocol", "member", "client", "host", "subscribed", "assigned"),
                        [(m["group"], m["protocol"], m["memberId"], m["clientId"] or "", m["clientHost"] or "",
                          ",".join(m["subscribedTopics"] or []), " ".join(m["assignment"] or [])) for m in mrows])
    raise Exit(EXIT_PROBLEMS if any(r["pastLogEnd"] for r in rows) else EXIT_OK)

