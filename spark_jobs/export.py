"""Export every record (or batch, or anomaly) of a fleet of segments to Parquet.

    spark-submit spark_jobs/export.py --level records --out hdfs:///exports/records hdfs:///backups/kafka-logs
"""
from __future__ import annotations

import argparse

from spark_jobs.common import add_source_arguments, get_spark, read, source_options


def export(spark, paths, level: str, out: str, options=None):
    df = read(spark, paths, level, options=options)
    df.write.mode("overwrite").partitionBy("topic").parquet(out)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--level", default="records", choices=["batches", "records", "anomalies"])
    add_source_arguments(ap)
    args = ap.parse_args(argv)
    export(get_spark(args.master), args.paths, args.level, args.out, source_options(args))


if __name__ == "__main__":
    main()
