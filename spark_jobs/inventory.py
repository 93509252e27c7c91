"""Fleet inventory: one row per log dir and partition (empty partitions included) -- where it is
(cluster, broker, log dir), its offsets, time span, bytes, codecs, producers and damage -- and a
replica view comparing the copies of each partition across log dirs (never summing them).

    spark-submit spark_jobs/inventory.py --out s3a://bucket/reports/inventory s3a://bucket/kafka-logs

Writes ``OUT`` (the inventory) and ``OUT/../<name>-replicas``; exits 1 when it found anomalies.
"""
from __future__ import annotations

import sys

from pyspark.sql import functions as F

from spark_jobs.common import check_inputs, get_spark, job_arguments, read, sorted_small, source_options

#: where a row of the inventory is: one row per these
WHERE = ("clusterId", "brokerId", "logDir", "topic", "partition")
#: anomalies with no record behind them in a batch row (records the batches count never held)
_BATCH_ANOMALIES = ("crc-mismatch", "undecodable-records")


def inventory_of(rows, *extra):
    """The inventory of ``scan``-level rows (from partition, batch and anomaly rows), in one
    aggregation: one row per log dir and partition, an empty or wholly damaged one included.
    ``records`` counts what the records level exports: the batches' records less those an anomaly
    says were not exported (a bad CRC; with includeCorrupt, a payload that does not decompress).
    Stray files and unreadable meta.properties of a log dir itself are in the anomalies only."""
    batch = F.col("rowKind") == "batch"
    anomaly = F.col("rowKind") == "anomaly"
    rows = rows.where(~(F.col("topic").isNull() & anomaly))

    def of_batches(col):
        return F.when(batch, col)
    return sorted_small(rows.groupBy(*WHERE).agg(
        F.countDistinct(F.when(batch | (anomaly & F.col("position").isNotNull()), F.col("file"))).alias("segments"),
        F.count(of_batches(F.lit(1))).alias("batches"),
        (F.coalesce(F.sum(of_batches(F.col("count"))), F.lit(0))
         - F.coalesce(F.sum(F.when(anomaly & F.col("kind").isin(*_BATCH_ANOMALIES), F.col("recordsNotRead"))), F.lit(0))
         ).cast("bigint").alias("records"),
        F.min(of_batches(F.col("baseOffset"))).alias("firstOffset"),
        F.max(of_batches(F.col("lastOffset"))).alias("lastOffset"),
        F.min(F.when(batch & (F.col("firstTimestamp") >= 0), F.col("firstTimestamp"))).alias("firstTimestamp"),
        F.max(of_batches(F.col("maxTimestamp"))).alias("lastTimestamp"),
        F.coalesce(F.sum(of_batches(F.col("size"))), F.lit(0)).cast("bigint").alias("bytes"),
        F.sort_array(F.collect_set(of_batches(F.col("compression")))).alias("codecs"),
        F.countDistinct(F.when(batch & (F.col("producerId") >= 0), F.col("producerId"))).alias("producers"),
        F.count(F.when(batch & F.col("isTransactional") & ~F.col("isControl"), 1)).alias("transactionalBatches"),
        F.count(F.when(anomaly, 1)).alias("anomalies"),
        F.coalesce(F.sum(F.when(anomaly, F.col("bytesNotRead"))), F.lit(0)).cast("bigint").alias("bytesNotRead"),
        F.count(F.when(anomaly & (F.col("kind") == "stray-file"), 1)).alias("strayFiles"),
        *extra,
    ), "topic", "partition", "clusterId", "brokerId", "logDir")


def replicas_of(rows):
    """The replica view of ``scan``-level rows: per cluster, topic and partition, how many log dirs
    hold it and how far their copies agree -- batch by batch (base and last offset and CRC, good
    CRCs only) from the first offset all of them still hold: ``equalUpTo`` is the last offset up to
    which every copy holds the same batches, ``divergesAt`` the first batch one copy lacks or holds
    differently (null: none), ``summary`` says it in words."""
    keys = ["_cluster", "topic", "partition"]
    rows = rows.where(F.col("topic").isNotNull()).withColumn("_cluster", F.coalesce("clusterId", F.lit("")))
    copies = (rows.where(F.col("rowKind") == "partition").groupBy(*keys)
              .agg(F.first("clusterId", ignorenulls=True).alias("clusterId"),
                   F.countDistinct("logDir").alias("replicas"),
                   F.sort_array(F.collect_set("logDir")).alias("logDirs"),
                   F.sort_array(F.collect_set("brokerId")).alias("brokerIds")))
    good = rows.where((F.col("rowKind") == "batch") & F.col("crcValid")).select(
        *keys, "logDir", "baseOffset", "lastOffset", "crc")
    span = (good.groupBy(*keys, "logDir").agg(F.min("baseOffset").alias("first"), F.max("lastOffset").alias("last"))
            .groupBy(*keys).agg(F.max("first").alias("commonFrom"), F.min("last").alias("minLastOffset"),
                                F.max("last").alias("maxLastOffset")))
    agree = (good.groupBy(*keys, "baseOffset", "lastOffset", "crc").agg(F.countDistinct("logDir").alias("holders"))
             .join(copies.select(*keys, "replicas"), keys).join(span.select(*keys, "commonFrom"), keys)
             .where(F.col("baseOffset") >= F.col("commonFrom")))
    diverge = agree.where(F.col("holders") < F.col("replicas")).groupBy(*keys).agg(
        F.min("baseOffset").alias("divergesAt"))
    equal = (agree.where(F.col("holders") == F.col("replicas")).join(diverge, keys, "left")
             .where(F.col("divergesAt").isNull() | (F.col("baseOffset") < F.col("divergesAt")))
             .groupBy(*keys).agg(F.max("lastOffset").alias("equalUpTo")))
    out = copies.join(span, keys, "left").join(diverge, keys, "left").join(equal, keys, "left")
    n = F.col("replicas").cast("string")
    summary = (F.when(F.col("commonFrom").isNull(), F.concat(n, F.lit(" replica(s), no batches")))
               .when(F.col("replicas") == 1, F.lit("1 replica"))
               .when(F.col("divergesAt").isNull(), F.concat(n, F.lit(" replicas, identical")))
               .when(F.col("equalUpTo").isNull(), F.concat(n, F.lit(" replicas, differ from offset "),
                                                          F.col("divergesAt").cast("string")))
               .otherwise(F.concat(n, F.lit(" replicas, equal up to offset "), F.col("equalUpTo").cast("string"))))
    return sorted_small(out.withColumn("summary", summary)
                        .select("clusterId", "topic", "partition", "replicas", "logDirs", "brokerIds", "commonFrom",
                                "equalUpTo", "divergesAt", "minLastOffset", "maxLastOffset", "summary"),
                        "topic", "partition", "clusterId")


def inventory(spark, paths, split_bytes=None, options=None):
    """The inventory of a fleet, from one read of its batches and anomalies."""
    return inventory_of(read(spark, paths, "scan", split_bytes, options))


def main(argv=None):
    ap = job_arguments(__doc__)
    args = ap.parse_args(argv)
    options = source_options(args)
    check_inputs(args.paths, options)
    spark = get_spark(args.master)
    rows = read(spark, args.paths, "scan", options=options).persist()
    inv = inventory_of(rows).persist()
    inv.write.mode("overwrite").parquet(args.out)
    replicas_of(rows).write.mode("overwrite").parquet(args.out.rstrip("/") + "-replicas")
    anomalies = inv.agg(F.sum("anomalies")).first()[0] or 0
    anomalies += rows.where((F.col("rowKind") == "anomaly") & F.col("topic").isNull()).count()
    print(f"{inv.count()} partition copies, {anomalies} anomalies")
    sys.exit(1 if anomalies else 0)


if __name__ == "__main__":
    main()
