"""Export every record (or batch, or anomaly) of a fleet of segments -- or of a window of it:
``--topic``, ``--partition``, ``--from-time``/``--to-time``, ``--from-offset``/``--to-offset`` -- to
Parquet, partitioned by topic.  A scan task reads many segments (the source packs them by bytes)
and the segments of a topic lie together, so the output has about one file per task and topic,
not one per segment.

    spark-submit spark_jobs/export.py --level records --topic orders --from-time 2026-01-05 --to-time 2026-01-12 \\
        --out hdfs:///exports/orders hdfs:///backups/kafka-logs
"""
from __future__ import annotations

from spark_jobs.job_args import job_arguments, source_options
from spark_jobs.output import check_out
from spark_jobs.planned_read import check_inputs, read
from spark_jobs.session import job_spark


def export(spark, paths, level: str, out: str, options=None):
    df = read(spark, paths, level, options=options)
    df.write.mode("overwrite").partitionBy("topic").parquet(out)
    return out


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--level", default="records", choices=["batches", "records", "anomalies"])
    args = ap.parse_args(argv)
    options = source_options(args)
    check_inputs(args.paths, options)
    check_out(args.out)
    export(job_spark(args.master), args.paths, args.level, args.out, options)


if __name__ == "__main__":
    main()
