"""Export every record (or batch, or anomaly) of a fleet of segments to Parquet.

    spark-submit spark_jobs/export.py --level records --out hdfs:///exports/records hdfs:///backups/kafka-logs
"""
from __future__ import annotations

from spark_jobs.common import get_spark, job_arguments, read, source_options


def export(spark, paths, level: str, out: str, options=None):
    df = read(spark, paths, level, options=options)
    df.write.mode("overwrite").partitionBy("topic").parquet(out)
    return out


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--level", default="records", choices=["batches", "records", "anomalies"])
    args = ap.parse_args(argv)
    export(get_spark(args.master), args.paths, args.level, args.out, source_options(args))


if __name__ == "__main__":
    main()
