"""Find records whose key, value or a header value matches a pattern (a Java regular expression
over the bytes read as UTF-8), with where they are (cluster, broker, log dir, topic, partition,
file, byte position), offset, timestamp and ``crcValid``.  Keys and values stay binary, as they
are; ``keyText``/``valueText`` beside them are the same bytes as UTF-8 text (bytes that are not
valid UTF-8 shown as U+FFFD), so every Parquet reader can read the hits back; ``headerTexts`` is the
headers with their values as such text (``key``, ``valueText``) beside the binary ``headers``, and
``matchedIn`` says what matched: ``key``, ``value`` and ``header:<name>`` for each header that did.

    spark-submit spark_jobs/search.py --pattern 'order-42\\b' --out s3a://bucket/hits s3a://bucket/kafka-logs
"""
from __future__ import annotations

from pyspark.sql import functions as F

from kafkaforensics.records.schema import SOURCE_COLUMNS
from spark_jobs.common import check_inputs, check_out, fail, job_spark, job_arguments, read, source_options

#: what a hit says: where the record is, what it holds and whether its batch's CRC held
HIT_COLUMNS = tuple(name for name, _ in SOURCE_COLUMNS) + (
    "offset", "timestamp", "timestampUtc", "key", "value", "keyText", "valueText", "headers", "headerTexts",
    "matchedIn", "batchPosition", "crcValid")


def _text(col):
    return F.make_valid_utf8(F.col(col).cast("string"))


def pattern_problem(spark, pattern: str) -> str | None:
    """None when ``pattern`` is a Java regular expression (what ``rlike`` compiles), else one line
    why not: asked of the session's JVM before anything is written, not after the other outputs
    (``spark`` None: only what needs no JVM, the empty pattern)."""
    if not pattern:
        return "the search pattern is empty (it would match every record)"
    if spark is None:
        return None
    try:
        spark.sparkContext._jvm.java.util.regex.Pattern.compile(pattern)
    except Exception as e:  # noqa: BLE001 -- py4j's error carries Java's PatternSyntaxException
        java = getattr(e, "java_exception", None)
        why = java.getMessage() if java is not None else str(e)
        return f"the search pattern {pattern!r} is no Java regular expression: {why.splitlines()[0]}"
    return None


def _matched_in(pattern: str):
    """What of a record matched ``pattern``: ``key``, ``value``, ``header:<name>`` (an array, in that
    order; empty when nothing did)."""
    none = F.array().cast("array<string>")

    def field(name):
        return F.when(F.col(name).cast("string").rlike(pattern), F.array(F.lit(name))).otherwise(none)
    headers = F.transform(F.filter("headers", lambda h: h["value"].cast("string").rlike(pattern)),
                          lambda h: F.concat(F.lit("header:"), h["key"]))
    return F.concat(field("key"), field("value"), F.coalesce(headers, none))


def matches(records, pattern: str):
    """The rows of a records-level DataFrame whose key, value or a header value matches ``pattern``,
    with what matched (``matchedIn``) and their text beside the bytes."""
    header_texts = F.transform("headers", lambda h: F.struct(h["key"].alias("key"),
                                                            F.make_valid_utf8(h["value"].cast("string")).alias("valueText")))
    return (records.withColumn("matchedIn", _matched_in(pattern)).where(F.size("matchedIn") > 0)
            .withColumn("keyText", _text("key")).withColumn("valueText", _text("value"))
            .withColumn("headerTexts", header_texts)
            .select(*HIT_COLUMNS).orderBy("topic", "partition", "logDir", "partitionDir", "offset"))


def search(spark, paths, pattern: str, options=None):
    return matches(read(spark, paths, "records", options=options), pattern)


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--pattern", required=True)
    args = ap.parse_args(argv)
    options = source_options(args)
    check_inputs(args.paths, options)
    check_out(args.out)
    spark = job_spark(args.master)
    problem = pattern_problem(spark, args.pattern)
    if problem:
        fail(problem)
    search(spark, args.paths, args.pattern, options).write.mode("overwrite").parquet(args.out)


if __name__ == "__main__":
    main()
