"""Find records whose key, value or a header value matches a pattern (a Java regular expression
over the bytes read as UTF-8), with where they are (cluster, broker, log dir, topic, partition,
file, byte position), offset, timestamp and ``crcValid``.  Keys and values stay binary, as they
are; ``keyText``/``valueText`` beside them are the same bytes as UTF-8 text (bytes that are not
valid UTF-8 shown as U+FFFD), so every Parquet reader can read the hits back.

    spark-submit spark_jobs/search.py --pattern 'order-42\\b' --out s3a://bucket/hits s3a://bucket/kafka-logs
"""
from __future__ import annotations

from pyspark.sql import functions as F

from kafkaforensics.records.schema import SOURCE_COLUMNS
from spark_jobs.common import check_inputs, job_spark, job_arguments, read, source_options

#: what a hit says: where the record is, what it holds and whether its batch's CRC held
HIT_COLUMNS = tuple(name for name, _ in SOURCE_COLUMNS) + (
    "offset", "timestamp", "timestampUtc", "key", "value", "keyText", "valueText", "headers", "batchPosition",
    "crcValid")


def _text(col):
    return F.make_valid_utf8(F.col(col).cast("string"))


def matches(records, pattern: str):
    """The rows of a records-level DataFrame whose key, value or a header value matches ``pattern``."""
    header_hit = F.exists("headers", lambda h: h["value"].cast("string").rlike(pattern))
    hit = F.col("key").cast("string").rlike(pattern) | F.col("value").cast("string").rlike(pattern) | header_hit
    return (records.where(hit).withColumn("keyText", _text("key")).withColumn("valueText", _text("value"))
            .select(*HIT_COLUMNS).orderBy("topic", "partition", "logDir", "partitionDir", "offset"))


def search(spark, paths, pattern: str, options=None):
    return matches(read(spark, paths, "records", options=options), pattern)


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--pattern", required=True)
    args = ap.parse_args(argv)
    options = source_options(args)
    check_inputs(args.paths, options)
    search(job_spark(args.master), args.paths, args.pattern, options).write.mode("overwrite").parquet(args.out)


if __name__ == "__main__":
    main()
