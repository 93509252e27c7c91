"""Find records whose key, value or a header value matches a pattern (a Java regular expression
over the bytes read as UTF-8), with topic, partition, offset, timestamp, file and byte position.

    spark-submit spark_jobs/search.py --pattern 'order-42\\b' --out s3a://bucket/hits s3a://bucket/kafka-logs
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.common import get_spark, job_arguments, read, source_options

#: what a hit says: where the record is and what it holds
HIT_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers", "file", "batchPosition")


def matches(records, pattern: str):
    """The rows of a records-level DataFrame that match ``pattern``, keys and values as text."""
    key = F.col("key").cast("string")
    value = F.col("value").cast("string")
    header_hit = F.exists("headers", lambda h: h["value"].cast("string").rlike(pattern))
    hit = key.rlike(pattern) | value.rlike(pattern) | header_hit
    return (records.where(hit).withColumn("key", key).withColumn("value", value)
            .select(*HIT_COLUMNS).orderBy("topic", "partition", "offset"))


def search(spark, paths, pattern: str, options=None):
    return matches(read(spark, paths, "records", options=options), pattern)


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--pattern", required=True)
    args = ap.parse_args(argv)
    search(get_spark(args.master), args.paths, args.pattern, source_options(args)).write.mode("overwrite").parquet(args.out)


if __name__ == "__main__":
    main()
