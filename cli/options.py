"""The options several ``kfx`` commands share, declared once so they read the same everywhere.

A command takes one as the default of its parameter (``as_json: bool = JSON``), as sqlite-utils'
commands take its shared option decorators: same name, metavar, default and help in every command.
:func:`rules_version` reads ``--kafka-version``; cli/repairs.py reads the others (``--backup-dir``/``--no-backup``, ``--config``, the sizes) the same way
for every command that writes.
"""
from __future__ import annotations

from typing import Optional

from cli.common import fail
from cli.declare import Option
from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from kafkaforensics.log import kafka_version as log_kafka_version


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


def rules_version(path: str, told: Optional[str]):
    """The Kafka generation whose rules apply (``--kafka-version`` or inferred); a bad value exits 2."""
    try:
        return log_kafka_version.kafka_version(path, told)
    except ValueError as e:
        fail(str(e))


