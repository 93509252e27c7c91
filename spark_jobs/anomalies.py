"""Fleet-wide anomaly report: every damaged region and bad batch, by kind, with its location.

    spark-submit spark_jobs/anomalies.py --out s3a://bucket/reports/anomalies s3a://bucket/kafka-logs
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.common import get_spark, job_arguments, read, source_options


def anomalies(spark, paths, options=None):
    return read(spark, paths, "anomalies", options=options).orderBy("topic", "partition", "file", "position")


def summary(df):
    return df.groupBy("kind").agg(F.count(F.lit(1)).alias("count"),
                                  F.countDistinct("topic", "partition").alias("partitions")).orderBy("kind")


def main(argv=None):
    ap = job_arguments(__doc__)
    args = ap.parse_args(argv)
    df = anomalies(get_spark(args.master), args.paths, source_options(args))
    df.write.mode("overwrite").parquet(args.out)
    summary(df).show(truncate=False)


if __name__ == "__main__":
    main()
