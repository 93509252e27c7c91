"""The options several ``kfx`` commands share, declared once so they read the same everywhere.

A command takes one as the default of its parameter (``as_json: bool = JSON``), as sqlite-utils'
commands take its shared option decorators: same name, metavar, default and help in every command.
:func:`backup_settings` reads ``--backup-dir``/``--no-backup`` the same way for every repair.
"""
from __future__ import annotations

import sys

from cli.declare import Exit, Option
from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from specs.lazy import lazy

#: imported on first use (specs/lazy.py), where start-up must not pay for them
log_log_config = lazy("kafkaforensics.log.log_config", globals())
log_schema_topic = lazy("kafkaforensics.log.schema_topic", globals())
records_schema_decode = lazy("kafkaforensics.records.schema_decode", globals())

JSON = Option(False, "--json", help="Print the result as one JSON document instead of tables")
DRY_RUN = Option(False, "--dry-run", help="Say what would be done (and what would be dropped); change nothing")
BACKUP_DIR = Option(None, "--backup-dir", metavar="DIR",
                    help="Keep the files changed or removed here (default: <partition>/.kfx-backup/<UTC time>/; "
                         "`kfx restore DIR` undoes the repair)")
NO_BACKUP = Option(False, "--no-backup", help="Keep no copy of the files changed or removed")
INDEX_INTERVAL_BYTES = Option(None, "--index-interval-bytes", min=0, metavar="BYTES",
                              help="Bytes of log between two offset-index entries (default: the topic's "
                                   "index.interval.bytes: the log dir's metadata, --config, else "
                                   f"{DEFAULT_INDEX_INTERVAL_BYTES})")
SEGMENT_BYTES = Option(None, "--segment-bytes", min=14, metavar="BYTES",
                       help="Roll a new segment past this size (default: the topic's segment.bytes: the log dir's "
                            f"metadata, --config, an internal topic's, else {DEFAULT_SEGMENT_BYTES})")
#: ``--kafka-version X.Y``, shared by the commands that apply a Kafka generation's rules (verify,
#: reindex, recover, compact): overrides the version inferred from the log dir
KAFKA_VERSION = Option(None, "--kafka-version", metavar="VERSION",
                       help="Apply this Kafka release's rules, X.Y such as 2.8 (default: inferred from the log dir's files)")
NOW = Option(None, "--now", metavar="MS", help="The clock to judge times by, epoch ms (default: now)")
#: the topic configuration the commands that apply Kafka's policy share (kafkaforensics.log.log_config)
CONFIG = Option([], "--config", metavar="KEY=VALUE",
                help="A topic config the log dir does not hold (a ZooKeeper-mode dir keeps them in ZooKeeper), "
                     "e.g. cleanup.policy=compact; the log dir's own ConfigRecords win (repeatable)")
IGNORE_TOPIC_CONFIG = Option(False, "--ignore-topic-config",
                             help="Act even where the topic's cleanup.policy says Kafka would not (never on the "
                                  "KRaft metadata log)")

#: the schemas Confluent-framed keys and values are decoded by (issue 56): the log dir's own
#: ``_schemas`` topic first, then these
SCHEMAS = Option(None, "--schemas", metavar="DIR",
                 help="A directory of exported schemas (registry responses as *.json, or <id>.avsc/.proto/"
                      ".schema.json), used for ids the log dir's _schemas topic does not hold")
SCHEMA_REGISTRY = Option(None, "--schema-registry", metavar="URL",
                         help="A schema registry to ask (GET /schemas/ids/N) for ids no other source holds")


def schema_decoder(paths, schemas=None, registry=None, required: bool = True):
    """The decoder of Confluent-framed values for ``paths``: the log dirs' ``_schemas`` topic, then
    ``--schemas``, then ``--schema-registry``. No source at all is one line and exit 2 when
    ``required`` (else None); a source that cannot be read is one line and exit 2."""
    try:
        store = log_schema_topic.load_schema_store(paths, schema_dir=schemas, registry_url=registry)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise Exit(2) from None
    if store is None:
        if not required:
            return None
        print("error: --decode needs schemas: the log dir holds no _schemas topic; give --schemas DIR or "
              "--schema-registry URL", file=sys.stderr)
        raise Exit(2)
    return records_schema_decode.SchemaDecoder(store)


def topic_config(partition_dir: str, config=(), kafka_version=None):
    """The partition's effective topic configuration (kafkaforensics.log.log_config.LogConfig), with
    ``--config`` items; a bad item is one line and exit 2."""
    try:
        return log_log_config.LogConfig.of(partition_dir, log_log_config.parse_config_flags(config), kafka_version)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        raise Exit(2) from None


def sizes(partition_dir: str, segment_bytes=None, index_interval_bytes=None,
          segments: bool = True, config=None) -> tuple[int, int, list[str]]:
    """``--segment-bytes`` and ``--index-interval-bytes`` as a command uses them: the flag, else the topic's
    effective config (``config``, a LogConfig; default: ``partition_dir``'s), else Kafka's default; and
    notes naming the configs used (``segments=False``: a command that rolls no segment, whose segment
    size is neither read nor noted)."""
    config = topic_config(partition_dir) if config is None else config
    got, notes = config.settle({"index.interval.bytes": index_interval_bytes,
                                **({"segment.bytes": segment_bytes} if segments else {})})
    seg, interval = got.get("segment.bytes"), got["index.interval.bytes"]
    return (DEFAULT_SEGMENT_BYTES if seg is None else seg,
            DEFAULT_INDEX_INTERVAL_BYTES if interval is None else interval, notes)


def backup_settings(backup_dir, no_backup) -> dict:
    """``backup``/``backup_dir`` keyword arguments of a repair from the two options (exit 2 when both given)."""
    if backup_dir and no_backup:
        print("error: --backup-dir and --no-backup exclude each other", file=sys.stderr)
        raise Exit(2)
    return {"backup": not no_backup, "backup_dir": backup_dir}
