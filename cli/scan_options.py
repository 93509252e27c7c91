"""``kfx scan``'s options, declared once (as cli/options.py declares the shared ones), and what they ask
of a scan: :class:`ScanOptions` holds them as typer parsed them, :meth:`ScanOptions.ask` makes the
:class:`~kafkaforensics.spark.engine.ScanAsk` the scan's engine is decided from (``engine.plan_run``)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from cli.declare import Argument, Option
from cli.remote import key_files
from kafkaforensics.defaults import DEFAULT_SPLIT_BYTES
from kafkaforensics.spark.engine import ScanAsk
from spark_jobs import job_args as spark_jobs_job_args


class Level(str, Enum):
    """The rows `kfx scan` exports (`--level`)."""
    batches = "batches"
    records = "records"
    anomalies = "anomalies"


INPUTS = Argument(None, metavar="INPUT", help="Segment files, partition dirs, log dirs or fleets of them (local, file://, hdfs://, s3://, s3a://); none with --remote alone")
OUT = Option(..., "--out", metavar="DIR", help="Directory for the Parquet results (new or empty; a scan that does not finish leaves nothing there)")
MASTER = Option(None, "--master", metavar="URL",
                help="Spark master (default local[*]: Spark embedded here; without --master "
                     "(and a --search Python reads as Java does), a scan is read and written here with no JVM: "
                     "any size on a machine of 2 cores, up to 1 GiB on more)")
LEVEL = Option(Level.batches, "--level", metavar="batches|records|anomalies", help="Rows to export: batches, records or anomalies")
SEARCH = Option(None, "--search", metavar="REGEX", help="Also write records matching this regex")
SPLIT_BYTES = Option(DEFAULT_SPLIT_BYTES, "--split-bytes", min=1 << 16, metavar="BYTES",
                     help="Split segments larger than this at batch boundaries")
INCLUDE_CORRUPT = Option(False, "--include-corrupt", help="Export the records of batches whose CRC fails (crcValid false)")
S3_ENDPOINT = Option(None, "--s3-endpoint", metavar="URL", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000")
S3_ACCESS_KEY = Option(None, "--s3-access-key", metavar="KEY", help="S3 access key (else AWS_ACCESS_KEY_ID)")
S3_SECRET_KEY = Option(None, "--s3-secret-key", metavar="KEY", help="S3 secret key (else AWS_SECRET_ACCESS_KEY)")
S3_REGION = Option(None, "--s3-region", metavar="REGION", help="S3 region (else AWS_REGION)")
OVERWRITE = Option(False, "--overwrite", help="Replace an earlier run's outputs in --out (else a "
                                              "non-empty --out is refused)")
VERBOSE = Option(False, "--verbose", help="Show Spark's own start-up messages, and every partition of the inventory (else a summary past 20)")
TOPIC = Option([], "--topic", metavar="TOPIC", help="Only this topic (repeatable)")
PARTITION = Option([], "--partition", metavar="N", help="Only this partition (repeatable)")
FROM_TIME = Option(None, "--from-time", metavar="TIME", help="Records from this time on (epoch ms or ISO 8601, UTC)")
TO_TIME = Option(None, "--to-time", metavar="TIME", help="Records before this time (exclusive)")
FROM_OFFSET = Option(None, "--from-offset", metavar="OFFSET", help="Records from this offset on")
TO_OFFSET = Option(None, "--to-offset", metavar="OFFSET", help="Records up to this offset (inclusive)")
SOURCE_OPTION = Option([], "--option", metavar="KEY=VALUE",
                       help="Any kafka_segments source option, e.g. timestampDisorderMs=3600000 (repeatable)")
PARTITION_BY = Option([], "--partition-by", metavar="topic|date",
                      help="Partition the records export by topic and/or the UTC date of the "
                           "record timestamp (a date column), as Spark's partitionBy (repeatable)")
DECODE = Option(False, "--decode", help="Records export: Confluent-framed keys and values decoded "
                                        "(keyDecoded/valueDecoded JSON, schema id, subject columns)")


@dataclass
class ScanOptions:
    """``kfx scan``'s parameters as typer parsed them, by the command's own parameter names."""
    inputs: Optional[list]
    out: str
    master: Optional[str]
    level: Level
    search: Optional[str]
    split_bytes: int
    include_corrupt: bool
    s3_endpoint: Optional[str]
    s3_access_key: Optional[str]
    s3_secret_key: Optional[str]
    s3_region: Optional[str]
    overwrite: bool
    verbose: bool
    topic: list
    partition: list
    from_time: Optional[str]
    to_time: Optional[str]
    from_offset: Optional[int]
    to_offset: Optional[int]
    option: list
    partition_by: list
    decode: bool
    schemas: Optional[str]
    schema_registry: Optional[str]
    remote: Optional[str]
    key_file: list

    def source_options(self) -> dict:
        """The ``kafka_segments`` source options they give (ValueError: one that is not)."""
        given = (("includeCorrupt", "true" if self.include_corrupt else None), ("s3.endpoint", self.s3_endpoint),
                 ("s3.accessKey", self.s3_access_key), ("s3.secretKey", self.s3_secret_key),
                 ("s3.region", self.s3_region), ("decode", "true" if self.decode else None),
                 ("schemas", self.schemas), ("schemaRegistry", self.schema_registry), ("remote", self.remote))
        options = {k: v for k, v in given if v}
        keys = key_files(self.key_file) if self.remote else {}
        if keys:
            options["remoteKeyFiles"] = ",".join(f"{k}={v}" for k, v in keys.items())
        options.update(spark_jobs_job_args.window_options(self.topic, self.partition, self.from_time, self.to_time,
                                                          self.from_offset, self.to_offset))
        options.update(spark_jobs_job_args.parse_options(self.option))
        return options

    def ask(self, options: dict | None = None) -> ScanAsk:
        """What they ask of a scan, with ``options`` as its source options (default: none yet)."""
        return ScanAsk(tuple(self.inputs or ()), self.out, self.master, self.level.value, self.search,
                       self.split_bytes, dict(options or {}), tuple(self.partition_by))
