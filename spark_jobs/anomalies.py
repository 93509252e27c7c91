"""Fleet-wide anomaly report: every damaged region and bad batch, by kind, with its location.

    spark-submit spark_jobs/anomalies.py --out s3a://bucket/reports/anomalies s3a://bucket/kafka-logs
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs.job_args import job_arguments, source_options
from spark_jobs.output import check_out
from spark_jobs.planned_read import check_inputs, read
from spark_jobs.session import job_spark


def anomalies(spark, paths, options=None):
    return read(spark, paths, "anomalies", options=options).orderBy("logDir", "topic", "partition", "file", "position")


def summary(df):
    return df.groupBy("kind").agg(F.count(F.lit(1)).alias("count"),
                                  F.countDistinct("logDir", "topic", "partition").alias("partitions"),
                                  F.sum("bytesNotRead").alias("bytesNotRead"),
                                  F.sum("recordsNotRead").alias("recordsNotRead")).orderBy("kind")


def main(argv=None):
    ap = job_arguments(__doc__)
    args = ap.parse_args(argv)
    options = source_options(args)
    check_inputs(args.paths, options)
    check_out(args.out)
    df = anomalies(job_spark(args.master), args.paths, options).persist()
    df.write.mode("overwrite").parquet(args.out)
    summary(df).show(truncate=False)
    raise SystemExit(1 if df.count() else 0)


if __name__ == "__main__":
    main()
