"""Fleet inventory: one row per log dir and partition (empty partitions included) -- where it is
(cluster, broker, log dir), its offsets, time span, bytes, codecs, producers and damage -- and a
replica view comparing the copies of each partition across log dirs (never summing them).
Each view is here twice: in Spark SQL (``inventory_of``, ``replicas_of``: any fleet, any cluster)
and in pyarrow (``inventory_table``, ``replicas_table``: a short scan's rows held in the driver, with
no Spark job at all); ``tests/test_spark_views.py`` proves the two equal, row for row.

    spark-submit spark_jobs/inventory.py --out s3a://bucket/reports/inventory s3a://bucket/kafka-logs

Writes ``OUT`` (the inventory) and ``OUT/../<name>-replicas``; exits 1 when it found anomalies.
"""
from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from kafkaforensics.spark.scan_plan import log_end_of_pieces
from spark_jobs.job_args import job_arguments, source_options
from spark_jobs.output import check_out, sorted_small
from spark_jobs.planned_read import check_inputs, read
from spark_jobs.session import job_spark

#: where a row of the inventory is: one row per these
WHERE = ("clusterId", "brokerId", "logDir", "topic", "partition", "partitionDir")
#: anomalies with no record behind them in a batch row (records the batches count never held)
_BATCH_ANOMALIES = ("crc-mismatch", "undecodable-records")
#: the order of the inventory's and the replica view's rows (ascending, nulls first, as Spark sorts)
INVENTORY_ORDER = ("topic", "partition", "clusterId", "brokerId", "logDir", "partitionDir")
REPLICAS_ORDER = ("topic", "partition", "clusterId")
#: the replica view's columns
REPLICAS_COLUMNS = ("clusterId", "topic", "partition", "replicas", "logDirs", "brokerIds", "commonFrom", "equalUpTo",
                    "divergesAt", "minLastOffset", "maxLastOffset", "state", "summary")
#: the replica view's ``state``s: no batches in any copy, one copy, every copy the same batches,
#: some copies a prefix of the longest (``behind``: only shorter), or different batches at the same
#: offset (``diverged``: a batch one copy lacks or holds differently where every copy holds offsets)
REPLICA_STATES = ("no batches", "single", "identical", "behind", "diverged")
#: what a ``piece`` row (a piece of a segment walked) gives the inventory's ``logEndOffset``
PIECE_FACTS = ("baseOffset", "position", "nextOffset", "kind")


def log_end_offset(pieces, empty) -> int | None:
    """An inventory row's ``logEndOffset``: :func:`~kafkaforensics.spark.scan_plan.log_end_of_pieces` over
    its ``piece`` rows' :data:`PIECE_FACTS` (mappings: dicts, or Spark's Rows), ``empty`` its partition
    row's ``nextOffset`` (the log end of a partition dir without segments).  One Python function, which
    :func:`inventory_table` calls in the driver and :func:`inventory_of` on Spark's executors."""
    return log_end_of_pieces([tuple(p[k] for k in PIECE_FACTS) for p in pieces or ()], empty)


def inventory_of(rows, *extra):
    """The inventory of ``scan``-level rows (from partition, segment, batch and anomaly rows), in one
    aggregation: one row per log dir and partition, an empty or wholly damaged one included.
    ``records`` counts what the records level exports: the batches' records less those an anomaly
    says were not exported (a bad CRC; with includeCorrupt, a payload that does not decompress).
    Stray files and unreadable meta.properties of a log dir itself are in the anomalies only.
    ``logEndOffset`` is Kafka's load's (:func:`log_end_offset`, a Python function run by the executors
    over each row's pieces walked)."""
    batch = F.col("rowKind") == "batch"
    anomaly = F.col("rowKind") == "anomaly"
    rows = rows.where(~(F.col("topic").isNull() & anomaly))

    def of_batches(col):
        return F.when(batch, col)
    agg = rows.groupBy(*WHERE).agg(
        F.countDistinct(F.when(F.col("rowKind") == "segment", F.col("file"))).alias("segments"),
        F.count(of_batches(F.lit(1))).alias("batches"),
        (F.coalesce(F.sum(of_batches(F.col("count"))), F.lit(0))
         - F.coalesce(F.sum(F.when(anomaly & F.col("kind").isin(*_BATCH_ANOMALIES), F.col("recordsNotRead"))), F.lit(0))
         ).cast("bigint").alias("records"),
        F.min(of_batches(F.col("baseOffset"))).alias("firstOffset"),
        F.max(of_batches(F.col("lastOffset"))).alias("lastOffset"),
        F.collect_list(F.when(F.col("rowKind") == "piece", F.struct(*PIECE_FACTS))).alias("_pieces"),
        F.max(F.when(F.col("rowKind") == "partition", F.col("nextOffset"))).alias("_empty"),
        F.min(F.when(batch & (F.col("firstTimestamp") >= 0), F.col("firstTimestamp"))).alias("firstTimestamp"),
        F.max(of_batches(F.col("maxTimestamp"))).alias("lastTimestamp"),
        F.coalesce(F.sum(of_batches(F.col("size"))), F.lit(0)).cast("bigint").alias("bytes"),
        F.sort_array(F.collect_set(of_batches(F.col("compression")))).alias("codecs"),
        F.countDistinct(F.when(batch & (F.col("producerId") >= 0), F.col("producerId"))).alias("producers"),
        F.count(F.when(batch & F.col("isTransactional") & ~F.col("isControl"), 1)).alias("transactionalBatches"),
        F.count(F.when(anomaly, 1)).alias("anomalies"),
        F.coalesce(F.sum(F.when(anomaly, F.col("bytesNotRead"))), F.lit(0)).cast("bigint").alias("bytesNotRead"),
        F.count(F.when(anomaly & (F.col("kind") == "stray-file"), 1)).alias("strayFiles"),
        *extra,
    )
    names = [c for c in agg.columns if not c.startswith("_")]
    names.insert(names.index("lastOffset") + 1, "logEndOffset")
    # (a lambda: Spark infers an Arrow UDF from type hints, and warns of those it cannot read)
    ends = F.udf(lambda pieces, empty: log_end_offset(pieces, empty), "bigint")
    agg = agg.withColumn("logEndOffset", ends(F.col("_pieces"), F.col("_empty")))
    return sorted_small(agg.select(*names), *INVENTORY_ORDER)


def replicas_of(rows):
    """The replica view of ``scan``-level rows: per cluster, topic and partition, how many log dirs
    hold it and how far their copies agree -- batch by batch (base and last offset and CRC, good
    CRCs only) from the first offset all of them still hold: ``equalUpTo`` is the last offset up to
    which every copy holds the same batches, ``divergesAt`` the first batch one copy lacks or holds
    differently up to the last offset every copy holds (``minLastOffset``; null: none), ``state``
    tells a copy that is only shorter (``behind``: a prefix of the longest) from one that holds
    different batches (``diverged``), ``summary`` says it in words.  Only live partition dirs (``topic-N``)
    are replicas: a ``-delete``, ``-future`` or ``-stray`` copy is none (the inventory has its row)."""
    keys = ["_cluster", "topic", "partition"]
    live = F.col("partitionDir") == F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"))
    rows = rows.where(F.col("topic").isNotNull() & live).withColumn("_cluster", F.coalesce("clusterId", F.lit("")))
    copies = (rows.where(F.col("rowKind") == "partition").groupBy(*keys)
              .agg(F.first("clusterId", ignorenulls=True).alias("clusterId"),
                   F.countDistinct("logDir").alias("replicas"),
                   F.sort_array(F.collect_set("logDir")).alias("logDirs"),
                   F.sort_array(F.collect_set("brokerId")).alias("brokerIds")))
    good = rows.where((F.col("rowKind") == "batch") & F.col("crcValid")).select(
        *keys, "logDir", "baseOffset", "lastOffset", "crc")
    span = (good.groupBy(*keys, "logDir").agg(F.min("baseOffset").alias("first"), F.max("lastOffset").alias("last"))
            .groupBy(*keys).agg(F.max("first").alias("commonFrom"), F.min("last").alias("minLastOffset"),
                                F.max("last").alias("maxLastOffset")))
    agree = (good.groupBy(*keys, "baseOffset", "lastOffset", "crc").agg(F.countDistinct("logDir").alias("holders"))
             .join(copies.select(*keys, "replicas"), keys).join(span.select(*keys, "commonFrom", "minLastOffset"), keys)
             .where(F.col("baseOffset") >= F.col("commonFrom")))
    diverge = agree.where((F.col("holders") < F.col("replicas")) & (F.col("baseOffset") <= F.col("minLastOffset"))).groupBy(*keys).agg(
        F.min("baseOffset").alias("divergesAt"))
    equal = (agree.where(F.col("holders") == F.col("replicas")).join(diverge, keys, "left")
             .where(F.col("divergesAt").isNull() | (F.col("baseOffset") < F.col("divergesAt")))
             .groupBy(*keys).agg(F.max("lastOffset").alias("equalUpTo")))
    out = copies.join(span, keys, "left").join(diverge, keys, "left").join(equal, keys, "left")
    n = F.col("replicas").cast("string")
    no_batches, single, identical, behind, diverged = REPLICA_STATES
    state = (F.when(F.col("commonFrom").isNull(), F.lit(no_batches)).when(F.col("replicas") == 1, F.lit(single))
             .when(F.col("divergesAt").isNotNull(), F.lit(diverged))
             .when(F.col("minLastOffset") < F.col("maxLastOffset"), F.lit(behind)).otherwise(F.lit(identical)))
    out = out.withColumn("state", state)
    summary = (F.when(F.col("state") == no_batches, F.concat(n, F.lit(" replica(s), no batches")))
               .when(F.col("state") == single, F.lit("1 replica"))
               .when(F.col("state") == identical, F.concat(n, F.lit(" replicas, identical")))
               .when(F.col("state") == behind, F.concat(n, F.lit(" replicas, behind: equal up to offset "),
                                                         F.col("minLastOffset").cast("string"),
                                                         F.lit(", the longest goes on to "),
                                                         F.col("maxLastOffset").cast("string")))
               .when(F.col("equalUpTo").isNull(), F.concat(n, F.lit(" replicas, diverged: differ from offset "),
                                                          F.col("divergesAt").cast("string")))
               .otherwise(F.concat(n, F.lit(" replicas, diverged at offset "), F.col("divergesAt").cast("string"),
                                   F.lit(": equal up to offset "), F.col("equalUpTo").cast("string"))))
    return sorted_small(out.withColumn("summary", summary).select(*REPLICAS_COLUMNS), *REPLICAS_ORDER)


def _when(cond, values):
    """``values`` where ``cond`` is true, else null: Spark's ``F.when`` without ``otherwise``."""
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.scalar(values, pa.int64())
    return pc.if_else(cond, values, pa.scalar(None, values.type))


def _sorted_lists(lists):
    """Each list of ``lists`` sorted ascending (Spark's ``sort_array``), vectorised."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    values, parents = pc.list_flatten(lists), pc.list_parent_indices(lists)
    order = pc.sort_indices(pa.table({"p": parents, "v": values}), sort_keys=[("p", "ascending"), ("v", "ascending")])
    ends = pc.cast(pc.cumulative_sum(pc.list_value_length(lists)), pa.int32())
    return pa.ListArray.from_arrays(pa.concat_arrays([pa.array([0], pa.int32()), ends]), values.take(order))


def _in_order(table: pa.Table, order) -> pa.Table:
    """``table`` sorted as :func:`~spark_jobs.output.sorted_small` sorts (ascending, nulls first)."""
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in order]))


def _as_spark_plans_it(table: pa.Table, required) -> pa.Table:
    """``table`` with the nullability Spark's plan of the same view gives it (so that both write one
    Parquet schema): the ``required`` columns and every list's items are never null."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_list(t):
            t = pa.list_(pa.field(t.value_field.name, t.value_type, nullable=False))
        fields.append(pa.field(f.name, t, nullable=f.name not in required))
    return table.cast(pa.schema(fields))


def _renamed(table: pa.Table, names: dict) -> pa.Table:
    return table.rename_columns([names.get(n, n) for n in table.column_names])


#: the scan-level columns :func:`inventory_table` and :func:`replicas_table` read
_INVENTORY_INPUTS = list(dict.fromkeys(WHERE + (
    "rowKind", "file", "count", "kind", "recordsNotRead", "baseOffset", "lastOffset", "firstTimestamp", "maxTimestamp",
    "size", "compression", "producerId", "isTransactional", "isControl", "bytesNotRead", "position", "nextOffset")))
_REPLICAS_INPUTS = list(dict.fromkeys(WHERE + ("rowKind", "crcValid", "baseOffset", "lastOffset", "crc")))


def inventory_table(rows: pa.Table) -> pa.Table:
    """:func:`inventory_of` over ``scan``-level rows held in the driver (a short scan's summary),
    in pyarrow: the same rows, values and order; no Spark job."""
    rows = rows.select(_INVENTORY_INPUTS)  # what is filtered is copied: only the columns read
    rows = rows.filter(pc.invert(pc.and_(pc.is_null(rows["topic"]), pc.equal(rows["rowKind"], "anomaly"))))
    col = rows.column
    batch, anomaly = pc.equal(col("rowKind"), "batch"), pc.equal(col("rowKind"), "anomaly")
    parts = {k: col(k) for k in WHERE}
    parts.update({
        "segments": _when(pc.equal(col("rowKind"), "segment"), col("file")),
        "batches": _when(batch, 1),
        "records": _when(batch, col("count")),
        "notExported": _when(pc.and_(anomaly, pc.is_in(col("kind"), pa.array(_BATCH_ANOMALIES))), col("recordsNotRead")),
        "firstOffset": _when(batch, col("baseOffset")),
        "lastOffset": _when(batch, col("lastOffset")),
        "firstTimestamp": _when(pc.and_(batch, pc.greater_equal(col("firstTimestamp"), 0)), col("firstTimestamp")),
        "lastTimestamp": _when(batch, col("maxTimestamp")),
        "bytes": _when(batch, col("size")),
        "codecs": _when(batch, col("compression")),
        "producers": _when(pc.and_(batch, pc.greater_equal(col("producerId"), 0)), col("producerId")),
        "transactionalBatches": _when(pc.and_(pc.and_(batch, col("isTransactional")), pc.invert(col("isControl"))), 1),
        "anomalies": _when(anomaly, 1),
        "bytesNotRead": _when(anomaly, col("bytesNotRead")),
        "strayFiles": _when(pc.and_(anomaly, pc.equal(col("kind"), "stray-file")), 1),
    })
    how = {"segments": "count_distinct", "batches": "count", "records": "sum", "notExported": "sum",
           "firstOffset": "min", "lastOffset": "max", "firstTimestamp": "min", "lastTimestamp": "max",
           "bytes": "sum", "codecs": "distinct", "producers": "count_distinct", "transactionalBatches": "count",
           "anomalies": "count", "bytesNotRead": "sum", "strayFiles": "count"}
    g = pa.table(parts).group_by(list(WHERE), use_threads=False).aggregate(list(how.items()))
    g = _renamed(g, {f"{n}_{f}": n for n, f in how.items()})

    def total(name):
        return pc.cast(pc.coalesce(g[name], 0), pa.int64())
    out = {k: g[k] for k in WHERE}
    for name in how:
        out[name] = g[name]
    out["records"] = pc.subtract(total("records"), total("notExported"))
    out["bytes"], out["bytesNotRead"] = total("bytes"), total("bytesNotRead")
    out["codecs"] = _sorted_lists(g["codecs"])
    del out["notExported"]
    out = dict(_with_log_end(list(out.items()), rows))
    return _as_spark_plans_it(_in_order(pa.table(out), INVENTORY_ORDER),
                              ("segments", "batches", "records", "bytes", "codecs", "producers",
                               "transactionalBatches", "anomalies", "bytesNotRead", "strayFiles"))


def _with_log_end(columns: list, rows: pa.Table) -> list:
    """The inventory's ``columns`` ((name, column) in order, a row a :data:`WHERE` group) with
    ``logEndOffset`` after ``lastOffset``: :func:`log_end_offset` of each group's ``piece`` and
    ``partition`` rows of the scan-level ``rows``."""
    def key(r):
        return tuple(r[k] for k in WHERE)
    kind = rows["rowKind"]
    pieces: dict = {}
    for r in rows.filter(pc.equal(kind, "piece")).select([*WHERE, *PIECE_FACTS]).to_pylist():
        pieces.setdefault(key(r), []).append(r)
    empty: dict = {}   # the largest of a group's partition rows' (Spark's max): there is one
    for r in rows.filter(pc.and_(pc.equal(kind, "partition"), pc.is_valid(rows["nextOffset"]))).select(
            [*WHERE, "nextOffset"]).to_pylist():
        empty[key(r)] = max(empty.get(key(r), r["nextOffset"]), r["nextOffset"])
    groups = pa.table(dict(columns)).select(list(WHERE)).to_pylist()
    ends = pa.array([log_end_offset(pieces.get(key(g)), empty.get(key(g))) for g in groups], pa.int64())
    at = [n for n, _c in columns].index("lastOffset") + 1
    return columns[:at] + [("logEndOffset", ends)] + columns[at:]


def replicas_table(rows: pa.Table) -> pa.Table:
    """:func:`replicas_of` over ``scan``-level rows held in the driver, in pyarrow: the same rows,
    values and order; no Spark job."""
    keys = ["_cluster", "topic", "partition"]
    rows = rows.select(_REPLICAS_INPUTS)  # what is filtered is copied: only the columns read
    live = pc.equal(rows["partitionDir"], pc.binary_join_element_wise(
        rows["topic"], pc.cast(rows["partition"], pa.string()), "-"))
    rows = rows.filter(pc.and_(pc.is_valid(rows["topic"]), pc.fill_null(live, False)))
    rows = rows.append_column("_cluster", pc.coalesce(rows["clusterId"], ""))
    kind = rows["rowKind"]
    copies = rows.filter(pc.equal(kind, "partition")).group_by(keys, use_threads=False).aggregate(
        [("clusterId", "count"), ("logDir", "count_distinct"), ("logDir", "distinct"), ("brokerId", "distinct")])
    lists = {"logDirs": _sorted_lists(copies["logDir_distinct"]), "brokerIds": _sorted_lists(copies["brokerId_distinct"])}
    copies = pa.table({**{k: copies[k] for k in keys},   # lists are no join's payload: taken by "_copy" after
                       "clusterId": _when(pc.greater(copies["clusterId_count"], 0), copies["_cluster"]),
                       "replicas": copies["logDir_count_distinct"], "_copy": pa.array(range(copies.num_rows), pa.int64())})
    good = rows.filter(pc.and_kleene(pc.equal(kind, "batch"), rows["crcValid"])).select(
        keys + ["logDir", "baseOffset", "lastOffset", "crc"])
    per_copy = good.group_by(keys + ["logDir"], use_threads=False).aggregate(
        [("baseOffset", "min"), ("lastOffset", "max")])
    span = _renamed(per_copy.group_by(keys, use_threads=False).aggregate(
        [("baseOffset_min", "max"), ("lastOffset_max", "min"), ("lastOffset_max", "max")]),
        {"baseOffset_min_max": "commonFrom", "lastOffset_max_min": "minLastOffset",
         "lastOffset_max_max": "maxLastOffset"})
    agree = _renamed(good.group_by(keys + ["baseOffset", "lastOffset", "crc"], use_threads=False).aggregate(
        [("logDir", "count_distinct")]), {"logDir_count_distinct": "holders"})
    agree = agree.join(copies.select(keys + ["replicas"]), keys).join(span.select(keys + ["commonFrom", "minLastOffset"]), keys)
    agree = agree.filter(pc.greater_equal(agree["baseOffset"], agree["commonFrom"]))
    lacking = agree.filter(pc.and_(pc.less(agree["holders"], agree["replicas"]),
                                   pc.less_equal(agree["baseOffset"], agree["minLastOffset"])))
    diverge = _renamed(lacking.group_by(keys, use_threads=False).aggregate([("baseOffset", "min")]),
                       {"baseOffset_min": "divergesAt"})
    held = agree.filter(pc.equal(agree["holders"], agree["replicas"])).join(diverge, keys, join_type="left outer")
    held = held.filter(pc.or_kleene(pc.is_null(held["divergesAt"]), pc.less(held["baseOffset"], held["divergesAt"])))
    equal = _renamed(held.group_by(keys, use_threads=False).aggregate([("lastOffset", "max")]),
                     {"lastOffset_max": "equalUpTo"})
    out = (copies.join(span, keys, join_type="left outer").join(diverge, keys, join_type="left outer")
           .join(equal, keys, join_type="left outer"))
    for name, values in lists.items():
        out = out.append_column(name, values.take(out["_copy"]))
    n = pc.cast(out["replicas"], pa.string())

    def said(*parts):
        return pc.binary_join_element_wise(*parts, "")

    def text(name):
        return pc.cast(out[name], pa.string())
    no_batches, single, identical, behind, diverged = REPLICA_STATES
    state = pc.case_when(
        pc.make_struct(pc.is_null(out["commonFrom"]), pc.equal(out["replicas"], 1), pc.is_valid(out["divergesAt"]),
                       pc.less(out["minLastOffset"], out["maxLastOffset"])),
        no_batches, single, diverged, behind, identical)
    summary = pc.case_when(
        pc.make_struct(*(pc.equal(state, s) for s in (no_batches, single, identical, behind)),
                       pc.is_null(out["equalUpTo"])),
        said(n, " replica(s), no batches"), "1 replica", said(n, " replicas, identical"),
        said(n, " replicas, behind: equal up to offset ", text("minLastOffset"), ", the longest goes on to ",
             text("maxLastOffset")),
        said(n, " replicas, diverged: differ from offset ", text("divergesAt")),
        said(n, " replicas, diverged at offset ", text("divergesAt"), ": equal up to offset ", text("equalUpTo")))
    out = out.append_column("state", state).append_column("summary", summary)
    return _as_spark_plans_it(_in_order(out.select(list(REPLICAS_COLUMNS)), REPLICAS_ORDER),
                              ("replicas", "logDirs", "brokerIds", "state"))


def inventory(spark, paths, split_bytes=None, options=None):
    """The inventory of a fleet, from one read of its batches and anomalies."""
    return inventory_of(read(spark, paths, "scan", split_bytes, options))


def main(argv=None):
    ap = job_arguments(__doc__)
    args = ap.parse_args(argv)
    options = source_options(args)
    check_inputs(args.paths, options)
    check_out(args.out)
    check_out(args.out.rstrip("/") + "-replicas")
    spark = job_spark(args.master)
    rows = read(spark, args.paths, "scan", options=options).persist()
    inv = inventory_of(rows).persist()
    inv.write.mode("overwrite").parquet(args.out)
    replicas_of(rows).write.mode("overwrite").parquet(args.out.rstrip("/") + "-replicas")
    anomalies = inv.agg(F.sum("anomalies")).first()[0] or 0
    anomalies += rows.where((F.col("rowKind") == "anomaly") & F.col("topic").isNull()).count()
    print(f"{inv.count()} partition copies, {anomalies} anomalies")
    sys.exit(1 if anomalies else 0)


if __name__ == "__main__":
    main()
