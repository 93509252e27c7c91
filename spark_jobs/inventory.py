"""Fleet inventory: per topic/partition offsets, time span, bytes, codecs, producers and damage.

    spark-submit spark_jobs/inventory.py --out s3a://bucket/reports/inventory s3a://bucket/kafka-logs
"""
from __future__ import annotations

import argparse

from pyspark.sql import functions as F

from spark_jobs.common import get_spark, read


def inventory(spark, paths, split_bytes=None):
    b = read(spark, paths, "batches", split_bytes)
    a = read(spark, paths, "anomalies", split_bytes)
    inv = b.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).alias("batches"),
        F.sum("count").alias("records"),
        F.min("baseOffset").alias("firstOffset"),
        F.max("lastOffset").alias("lastOffset"),
        F.min(F.when(F.col("firstTimestamp") >= 0, F.col("firstTimestamp"))).alias("firstTimestamp"),
        F.max("maxTimestamp").alias("lastTimestamp"),
        F.sum("size").alias("bytes"),
        F.countDistinct("file").alias("segments"),
        F.sort_array(F.collect_set("compression")).alias("codecs"),
        F.countDistinct(F.when(F.col("producerId") >= 0, F.col("producerId"))).alias("producers"),
        F.sum(F.when(F.col("isTransactional") & ~F.col("isControl"), 1).otherwise(0)).alias("transactionalBatches"),
    )
    damage = a.groupBy("topic", "partition").agg(F.count(F.lit(1)).alias("anomalies"))
    return (inv.join(damage, ["topic", "partition"], "left").fillna({"anomalies": 0})
            .orderBy("topic", "partition"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    spark = get_spark(args.master)
    inventory(spark, args.paths).write.mode("overwrite").parquet(args.out)


if __name__ == "__main__":
    main()
