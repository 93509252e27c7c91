"""Fleet-wide anomaly report: every damaged region and bad batch, by kind, with its location.

    spark-submit spark_jobs/anomalies.py --out s3a://bucket/reports/anomalies s3a://bucket/kafka-logs
"""
from __future__ import annotations

import argparse

from pyspark.sql import functions as F

from spark_jobs.common import get_spark, read


def anomalies(spark, paths):
    return read(spark, paths, "anomalies").orderBy("topic", "partition", "file", "position")


def summary(df):
    return df.groupBy("kind").agg(F.count(F.lit(1)).alias("count"),
                                  F.countDistinct("topic", "partition").alias("partitions")).orderBy("kind")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    df = anomalies(get_spark(args.master), args.paths)
    df.write.mode("overwrite").parquet(args.out)
    summary(df).show(truncate=False)


if __name__ == "__main__":
    main()
