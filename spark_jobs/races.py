"""The replica view's race classes: per partition held by two log dirs or more, the four outcomes of
the compaction--replication race (Kafka 3.9--4.2), each a row with its evidence, judged by the rule
``kfx diff`` of a fleet judges them by (:mod:`kafkaforensics.log.replica_race`) on per-replica
summaries made from the scan's batch and record rows.

The rule is Python and runs once per partition: in the driver over Arrow tables it holds
(:func:`races_table`), or in Spark's tasks over the rows of one partition each (:func:`races_of`:
any fleet); both call :func:`partition_races`, so there is one implementation.  A scan reads no
checkpoint: a key is judged deleted by its tombstone (``kfx diff`` also reads the cleaner checkpoint,
and judges a key every record of which is gone below it).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from kafkaforensics.log.replica_race import race_outcomes, replica_of_rows
from spark_jobs.output import sorted_small

#: the columns of the races output: where, the class, the replica it is about (its log dir) and the
#: one it was compared with, the offset it is at (the marker's, or the key's value), the key, the
#: text and the evidence (a JSON list: file, byte position, offsets, epoch of each piece)
RACES_SCHEMA = pa.schema([("clusterId", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                          ("class", pa.string()), ("logDir", pa.string()), ("otherLogDir", pa.string()),
                          ("offset", pa.int64()), ("key", pa.string()), ("text", pa.string()),
                          ("evidence", pa.string())])
RACES_DDL = ("clusterId string, topic string, partition int, class string, logDir string, otherLogDir string, "
             "offset bigint, key string, text string, evidence string")
RACES_ORDER = ("topic", "partition", "clusterId", "class", "logDir", "offset")
#: the batch columns a replica's summary is made from
BATCH_INPUTS = ("file", "position", "size", "baseOffset", "lastOffset", "magic", "count", "partitionLeaderEpoch",
                "producerId", "producerEpoch", "lastSequence", "maxTimestamp", "isControl", "isTransactional",
                "crcValid", "deleteHorizonMs")
#: the record columns it is made from (``tombstone``: a null value)
RECORD_INPUTS = ("offset", "timestamp", "batchBaseOffset", "key")
_WHERE = ("clusterId", "topic", "partition", "logDir", "partitionDir")


def replicated(inventory: list) -> bool:
    """Whether a scan's inventory rows hold a partition in two log dirs or more (live copies only)."""
    seen: dict = {}
    for r in inventory:
        if r["topic"] is not None and r["partitionDir"] == f"{r['topic']}-{r['partition']}":
            seen.setdefault((r["clusterId"] or "", r["topic"], r["partition"]), set()).add(r["logDir"])
    return any(len(dirs) > 1 for dirs in seen.values())


def partition_races(rows) -> list[dict]:
    """The race's outcomes among the copies of one partition, from its rows (dicts: :data:`_WHERE`,
    ``rowKind`` batch or record and their inputs): one replica a log dir, the rule of ``kfx diff``."""
    batches: dict = {}
    records: dict = {}
    where = None
    for r in rows:
        where = where or r
        (batches if r["rowKind"] == "batch" else records).setdefault(r["logDir"], []).append(r)
    reps = [replica_of_rows(d, batches[d], records.get(d, [])) for d in sorted(batches)]
    if len(reps) < 2 or where is None:  # two replicas at least: rows, so ``where`` is one
        return []
    return [{"clusterId": where["clusterId"], "topic": where["topic"], "partition": where["partition"],
             "class": e["class"], "logDir": e["replica"], "otherLogDir": e["other"],
             "offset": e.get("markerOffset", e.get("offset")), "key": e.get("key"), "text": e["text"],
             "evidence": json.dumps(e["evidence"], sort_keys=True)} for e in race_outcomes(reps)]


def _live(table: pa.Table) -> pa.Table:
    """The rows of live partition dirs (``topic-N``) of a scan's table."""
    live = pc.equal(table["partitionDir"], pc.binary_join_element_wise(
        table["topic"], pc.cast(table["partition"], pa.string()), "-"))
    return table.filter(pc.and_(pc.is_valid(table["topic"]), pc.fill_null(live, False)))


def slim_records(records: pa.Table) -> pa.Table:
    """What the races read of a records table: where each record is, its :data:`RECORD_INPUTS` and
    whether it is a tombstone (not its value)."""
    return records.select([*_WHERE, *RECORD_INPUTS]).append_column("tombstone", pc.is_null(records["value"]))


def _partition_key(table: pa.Table) -> pa.Array:
    """Each row's partition (cluster id, topic, partition) as one string."""
    return pc.binary_join_element_wise(pc.fill_null(table["clusterId"], ""), table["topic"],
                                       pc.cast(table["partition"], pa.string()), "\x00")


def _may_race(tables: list) -> pa.Array:
    """The partitions (:func:`_partition_key`) among whose copies :func:`partition_races` can find an
    outcome: those with a transactional or control batch (a transaction's outcomes) or a keyed
    tombstone (a key deleted: a scan reads no cleaner checkpoint, so a tombstone is the only way a key
    is deleted, :func:`~kafkaforensics.log.replica_race.resurrected`).  Every other partition's rows
    are left out before they become Python objects: they hold no outcome."""
    found = []
    for kind, table in tables:
        if kind == "batch":
            hit = pc.or_(pc.fill_null(table["isTransactional"], False), pc.fill_null(table["isControl"], False))
        else:
            hit = pc.and_(pc.fill_null(table["tombstone"], False), pc.is_valid(table["key"]))
        found.append(pc.unique(_partition_key(table.filter(hit))))
    return pc.unique(pa.concat_arrays(found)) if found else pa.array([], pa.string())


class RaceRecords:
    """What the replica view's races need of a records export streaming by: the :func:`slim_records`
    rows of the partitions that can race (:func:`_may_race`: known from the summary's batches, or from
    a keyed tombstone met on the way), kept Arrow batch by batch -- memory bounded by those partitions'
    records, not the fleet's.  A partition found able to race only once some of its rows went by is
    ``late``: :meth:`table` reads its records again."""

    def __init__(self, summary: pa.Table):
        batch = _live(summary.filter(pc.equal(summary["rowKind"], "batch")))
        self.racing = set(_may_race([("batch", batch.select([*_WHERE, *BATCH_INPUTS]))]).to_pylist())
        self.passed: set = set()   # partitions some of whose rows were not kept
        self.late: set = set()
        self.kept: list = []

    def add(self, records: pa.Table) -> None:
        """Keep what the races need of an Arrow table of records."""
        slim = _live(slim_records(records))
        for k in _may_race([("record", slim)]).to_pylist():
            if k not in self.racing:
                self.racing.add(k)
                if k in self.passed:
                    self.late.add(k)
        keys = _partition_key(slim)
        keep = pc.is_in(keys, value_set=pa.array(sorted(self.racing), pa.string()))
        self.passed.update(pc.unique(keys.filter(pc.invert(keep))).to_pylist())
        self.kept.append(slim.filter(keep))

    def table(self, again) -> pa.Table | None:
        """The rows kept (None: none), the late partitions' read ``again()`` (every record's
        :func:`slim_records` rows, or None) in place of those kept of them."""
        kept = self.kept
        if self.late:
            late = pa.array(sorted(self.late), pa.string())
            kept = [t.filter(pc.invert(pc.is_in(_partition_key(t), value_set=late))) for t in kept]
            more = again()
            if more is not None:
                more = _live(more)
                kept.append(more.filter(pc.is_in(_partition_key(more), value_set=late)))
        kept = [t for t in kept if t.num_rows]
        return pa.concat_tables(kept) if kept else None


def races_table(summary: pa.Table, records: pa.Table | None) -> pa.Table:
    """The races of a scan held in the driver: its ``summary`` (scan-level rows) and ``records`` (a
    records table, or its :func:`slim_records`; None: no record read)."""
    batch = _live(summary.filter(pc.equal(summary["rowKind"], "batch")))
    tables = [("batch", batch.select([*_WHERE, *BATCH_INPUTS]))]
    if records is not None:
        tables.append(("record", _live(records if "tombstone" in records.column_names else slim_records(records))))
    racing = _may_race(tables)
    tables = [(kind, table.filter(pc.is_in(_partition_key(table), value_set=racing))) for kind, table in tables]
    groups: dict = {}
    for kind, table in tables:
        for r in table.to_pylist():
            r["rowKind"] = kind
            groups.setdefault((r["clusterId"] or "", r["topic"], r["partition"]), []).append(r)
    out = [row for key in sorted(groups) for row in partition_races(groups[key])]
    table = pa.Table.from_pylist(out, schema=RACES_SCHEMA)
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in RACES_ORDER]))


def races_of(summary, records):
    """The races of any fleet, by Spark's tasks: the live copies' batch rows of the ``summary`` and
    the ``records`` rows, grouped by partition, each group judged by :func:`partition_races`."""
    def live(df):
        return df.where(F.col("topic").isNotNull()
                        & (F.col("partitionDir") == F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"))))
    cols = [*_WHERE, "rowKind", *BATCH_INPUTS, *(c for c in RECORD_INPUTS if c not in BATCH_INPUTS), "tombstone"]

    def padded(df):
        return df.select(*(F.col(c) if c in df.columns else F.lit(None).alias(c) for c in cols))
    batch = live(summary.where(F.col("rowKind") == "batch")).select(*_WHERE, "rowKind", *BATCH_INPUTS)
    rec = live(records).select(*_WHERE, F.lit("record").alias("rowKind"), *RECORD_INPUTS,
                               F.col("value").isNull().alias("tombstone"))
    rows = padded(batch).unionByName(padded(rec))
    grouped = rows.rdd.map(lambda r: ((r["clusterId"] or "", r["topic"], r["partition"]), r.asDict())).groupByKey()
    found = grouped.flatMap(lambda kv: [tuple(d[c] for c in RACES_SCHEMA.names) for d in partition_races(kv[1])])
    return sorted_small(summary.sparkSession.createDataFrame(found, RACES_DDL), *RACES_ORDER)
