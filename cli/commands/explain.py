"""``kfx explain``: the fate of an offset, a key's records or a time."""
from __future__ import annotations

import json
from typing import List, Optional

from cli import heavy, plain
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail, print_live_notes, require_paths
from cli.declare import Argument, Exit, Option
from cli.options import CONFIG, JSON, NOW, SCHEMA_REGISTRY, SCHEMAS
from cli.remote import KEY_FILE, REMOTE, open_remote
from cli.repairs import topic_config
from kafkaforensics import errors
from kafkaforensics.inspect import explain as inspect_explain
from kafkaforensics.log import paths as log_paths


def explain(path: str = Argument(..., metavar="PATH", help="A partition dir (topic-N), or a log dir with --topic and --partition"),
            offset: Optional[int] = Option(None, "--offset", metavar="N", help="The offset to explain"),
            key: Optional[str] = Option(None, "--key", metavar="K", help="Every record of this key (UTF-8), in order"),
            at_time: Optional[str] = Option(None, "--time", metavar="T", help="The offset ListOffsets gives for this "
                                                                          "time (epoch ms or ISO-8601 UTC)"),
            topic: Optional[str] = Option(None, "--topic", metavar="TOPIC", help="With a log dir: the topic"),
            partition: Optional[int] = Option(None, "--partition", min=0, metavar="P", help="With a log dir: the partition"),
            now: Optional[int] = NOW,
            config: List[str] = CONFIG,
            as_json: bool = JSON,
            decode: bool = Option(False, "--decode", help="--key K may be a Confluent-framed key's decoded value "
                                                          "(JSON, e.g. '{\"id\": 7}', else a string)"),
            schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY,
            remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """The fate of an offset, a key's records or a time: present (where, which transaction, visible or not) or gone, and by which rule."""
    require_paths([path])
    try:
        pdir = inspect_explain.partition_dir(path, topic, partition)
    except ValueError as e:
        fail(str(e))
    try:
        log_paths.classify_for([pdir], "explain", accept=(log_paths.PARTITION_DIR,),
                               what="a partition dir (<topic>-<partition>), or a log dir with --topic and --partition")
    except log_paths.PathUsageError as e:
        fail(str(e))
    cfg = topic_config(pdir, config)
    tier = open_remote(remote, key_file)
    try:
        got = inspect_explain.explain(pdir, offset=offset, key=key, at=at_time, cfg=cfg, now=now,
                                      key_decoder=heavy.schemas.schema_decoder([pdir], schemas, schema_registry)
                                      if decode else None, remote=tier)
    except (OSError, ValueError, errors.KafkaFormatError) as e:
        fail(str(e))
    print_live_notes([pdir])
    if as_json:
        print(json.dumps(got))
    else:
        _print_explained(got)
    raise Exit(EXIT_OK if got["results"] and all(r["found"] for r in got["results"]) else EXIT_PROBLEMS)


def _print_explained(got: dict) -> None:
    """explain's text: a line per result (offset, fate, reason), its evidence indented."""
    c = plain.console()
    say = lambda line: c.print(line, highlight=False, soft_wrap=True, markup=False)  # noqa: E731
    say(f"{got['partition']}: log start {got['logStartOffset']}, last stable {got['lastStableOffset']}, "
        f"log end {got['logEndOffset']}")
    if not got["results"]:
        say(f"no record of key {got['key']!r} in this partition (compaction or retention may have removed them)")
    for r in got["results"]:
        sure = "" if r["certainty"] == "certain" else f" ({r['certainty']})"
        say(f"offset {r['offset']}: {r['fate']}{sure}: {r['reason']}")
        for e in r["evidence"]:
            say(f"  {e['text']}")

