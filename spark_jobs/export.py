"""Export every record (or batch, or anomaly) of a fleet of segments to Parquet.

    spark-submit spark_jobs/export.py --level records --out hdfs:///exports/records hdfs:///backups/kafka-logs
"""
from __future__ import annotations

import argparse

from spark_jobs.common import get_spark, read


def export(spark, paths, level: str, out: str):
    df = read(spark, paths, level)
    df.write.mode("overwrite").partitionBy("topic").parquet(out)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--level", default="records", choices=["batches", "records", "anomalies"])
    ap.add_argument("--master")
    args = ap.parse_args(argv)
    export(get_spark(args.master), args.paths, args.level, args.out)


if __name__ == "__main__":
    main()
