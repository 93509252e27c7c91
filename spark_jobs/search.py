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

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from kafkaforensics.records.schema import SOURCE_COLUMNS
from spark_jobs.job_args import fail, job_arguments, source_options
from spark_jobs.output import check_out
from spark_jobs.planned_read import check_inputs, read
from spark_jobs.session import job_spark

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


def _texts(values) -> list:
    """Binary values as Spark's ``make_valid_utf8(cast(... as string))`` gives them (None stays)."""
    return [None if v is None else v.decode("utf-8", "replace") for v in values]


_LITERAL = re.compile(r"(?:[A-Za-z0-9 _\-=:;,'\"#%&@<>/!~`]|\\[.\[\](){}*+?|^$\\/])+")


def _ascii_literal(pattern: str) -> bytes | None:
    """The bytes a Java pattern that is one ASCII literal (escaped punctuation allowed) matches as a
    substring, else None.  Such bytes are found in a value exactly where its text (invalid UTF-8
    shown as U+FFFD) holds the literal: ASCII bytes always decode as themselves."""
    if not _LITERAL.fullmatch(pattern):
        return None
    return re.sub(r"\\(.)", r"\1", pattern).encode("ascii")


def _rows_holding(column, literal: bytes) -> np.ndarray:
    """The rows of a binary column (Arrow, chunked or not) whose bytes hold ``literal``, and maybe a
    few more (a find across two values' boundary): its data buffers searched whole with ``bytes.find``
    (memchr's speed), each find mapped to its row through the offsets -- no pass a value."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out, at = [], 0
    for chunk in chunks:
        n = len(chunk)
        if n and chunk.null_count < n:
            width = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
            offsets = np.frombuffer(chunk.buffers()[1], width, n + 1, chunk.offset * np.dtype(width).itemsize)
            lo, hi = int(offsets[0]), int(offsets[-1])
            data = bytes(memoryview(chunk.buffers()[2])[lo:hi]) if hi > lo else b""
            found, i = [], data.find(literal)
            while i >= 0:
                row = int(np.searchsorted(offsets, lo + i, side="right")) - 1
                found.append(row)
                i = data.find(literal, int(offsets[row + 1]) - lo)  # the next row's bytes on
            out.append(np.asarray(found, np.int64) + at)
        at += n
    return np.unique(np.concatenate(out)) if out else np.empty(0, np.int64)


def _candidates(records: pa.Table, pattern: str):
    """The rows of ``records`` that may match ``pattern``: for an ASCII literal, those whose key, value
    or a header value holds its bytes (:func:`_rows_holding`; the pattern then decides); else every row."""
    literal = _ascii_literal(pattern)
    if literal is None:
        return range(records.num_rows)
    headers = records["headers"].combine_chunks()
    in_header = _rows_holding(pc.struct_field(pc.list_flatten(headers), "value"), literal)
    parents = pc.list_parent_indices(headers).to_numpy(zero_copy_only=False)
    rows = [_rows_holding(records["key"], literal), _rows_holding(records["value"], literal), parents[in_header]]
    return np.unique(np.concatenate(rows)).tolist()


def search_table(records: pa.Table, pattern: str, python: str) -> pa.Table:
    """:func:`matches` over a records read held in this process (an Arrow table), with no Spark:
    ``python`` is ``pattern`` as :func:`~kafkaforensics.spark.java_regex.python_pattern` gives it.  The
    same rows, columns, values and
    order as Spark's (``tests/test_spark_views.py``).  An ASCII literal is looked for in the bytes
    first (:func:`_candidates`); only the rows holding it are read in Python."""
    rx = re.compile(python, re.ASCII)
    rows = _candidates(records, pattern)
    some = records.take(pa.array(rows, pa.int64())) if not isinstance(rows, range) else records
    keys, values = _texts(some["key"].to_pylist()), _texts(some["value"].to_pylist())
    headers = some["headers"].to_pylist()
    hit_rows, matched, header_texts, key_texts, value_texts = [], [], [], [], []
    for i, k, v, hs in zip(rows, keys, values, headers):
        texts = [{"key": h["key"], "valueText": None if h["value"] is None else h["value"].decode("utf-8", "replace")}
                 for h in hs or ()]
        found = (["key"] if k is not None and rx.search(k) else []) + (["value"] if v is not None and rx.search(v) else [])
        found += [f"header:{t['key']}" for t in texts if t["valueText"] is not None and rx.search(t["valueText"])]
        if found:
            hit_rows.append(i)
            matched.append(found)
            header_texts.append(texts)
            key_texts.append(k)
            value_texts.append(v)
    take = pa.array(hit_rows, pa.int64())
    hits = records.take(take)
    cols = {name: hits[name] for name in HIT_COLUMNS if name in hits.column_names}
    cols["keyText"] = pa.array(key_texts, pa.string())
    cols["valueText"] = pa.array(value_texts, pa.string())
    cols["headerTexts"] = pa.array(header_texts, HEADER_TEXTS)
    cols["matchedIn"] = pa.array(matched, MATCHED_IN)
    table = pa.table({name: cols[name] for name in HIT_COLUMNS})
    return sorted_hits(table.cast(pa.schema([f.with_nullable(f.name != "matchedIn") for f in table.schema])))  # as Spark plans it


def sorted_hits(table: pa.Table) -> pa.Table:
    """Search hits (Arrow) in :func:`matches`' order."""
    order = [(k, "ascending", "at_start") for k in ("topic", "partition", "logDir", "partitionDir", "offset")]
    return table.take(pc.sort_indices(table, sort_keys=order))


#: the Arrow types of the columns :func:`matches` adds, as Spark writes them
HEADER_TEXTS = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("valueText", pa.string())]),
                                 nullable=False))
MATCHED_IN = pa.list_(pa.string())


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
