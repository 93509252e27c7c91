"""Fleet inventory: per topic/partition offsets, time span, bytes, codecs, producers and damage.

    spark-submit spark_jobs/inventory.py --out s3a://bucket/reports/inventory s3a://bucket/kafka-logs
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.common import get_spark, job_arguments, read, source_options


def inventory_of(rows, *extra):
    """The inventory of ``scan``-level rows (from batches and anomalies; records only count in the
    ``extra`` aggregates asked for), in one aggregation: a partition with only damage still has
    its row."""
    batch = F.col("rowKind") == "batch"

    def of_batches(col):
        return F.when(batch, col)
    return rows.groupBy("topic", "partition").agg(
        F.count(of_batches(F.lit(1))).alias("batches"),
        F.coalesce(F.sum(of_batches(F.col("count"))), F.lit(0)).cast("bigint").alias("records"),
        F.min(of_batches(F.col("baseOffset"))).alias("firstOffset"),
        F.max(of_batches(F.col("lastOffset"))).alias("lastOffset"),
        F.min(F.when(batch & (F.col("firstTimestamp") >= 0), F.col("firstTimestamp"))).alias("firstTimestamp"),
        F.max(of_batches(F.col("maxTimestamp"))).alias("lastTimestamp"),
        F.coalesce(F.sum(of_batches(F.col("size"))), F.lit(0)).cast("bigint").alias("bytes"),
        F.countDistinct("file").alias("segments"),
        F.sort_array(F.collect_set(of_batches(F.col("compression")))).alias("codecs"),
        F.countDistinct(F.when(batch & (F.col("producerId") >= 0), F.col("producerId"))).alias("producers"),
        F.count(F.when(batch & F.col("isTransactional") & ~F.col("isControl"), 1)).alias("transactionalBatches"),
        F.count(F.when(F.col("rowKind") == "anomaly", 1)).alias("anomalies"),
        *extra,
    ).orderBy("topic", "partition")


def inventory(spark, paths, split_bytes=None, options=None):
    """The inventory of a fleet, from one read of its batches and anomalies."""
    return inventory_of(read(spark, paths, "scan", split_bytes, options))


def main(argv=None):
    ap = job_arguments(__doc__)
    args = ap.parse_args(argv)
    spark = get_spark(args.master)
    inventory(spark, args.paths, options=source_options(args)).write.mode("overwrite").parquet(args.out)


if __name__ == "__main__":
    main()
