"""Where a job writes: its ``--out`` checked before Spark starts, and the one Parquet writer of a
read planned in the driver."""
from __future__ import annotations

import os
import re
import uuid

from kafkaforensics import fsutil
from kafkaforensics.spark import engine as spark_engine
from kafkaforensics.spark import parquet_dir as spark_parquet_dir
from kafkaforensics.spark import spark_source
from kafkaforensics.spark.storage import local_path
from spark_jobs.job_args import fail
from spark_jobs.planned_read import PlannedRead


def tasks_write_here(master: str, out: str) -> bool:
    """Whether the tasks of a session on ``master`` can write into ``out`` for the driver to commit
    (:func:`write_planned`): a local master's tasks share this machine's file system with it."""
    return spark_engine.on_session(master, out).pyarrow_writes


def write_planned(spark, r: PlannedRead, path: str, writes=None, partition_by: tuple = ()) -> int:
    """The rows of a read planned in the driver (:func:`read_planned`) written to the Parquet dir
    ``path`` with pyarrow, not by Spark's Parquet writer, by the one part writer a scan with no Spark
    writes with (:func:`~kafkaforensics.spark.parquet_dir.write_parts`): by the tasks that read them,
    a part file a split (:class:`~kafkaforensics.spark.spark_source.SplitWrites`), so that they are
    never handed to the JVM; or, for a read held in the driver, here, the same part a split.  ``partition_by``:
    the ``key=value`` dirs of a partitioned export (``parquet_dir.PARTITION_COLUMNS``).  The driver
    commits what the tasks report, as Spark's committer would
    (:func:`~kafkaforensics.spark.parquet_dir.parquet_dir`, replacing what is at ``path``); the same
    rows and schema as ``r.frame.write.partitionBy(...).parquet(path)`` gives
    (``tests/test_spark_views.py``).  Only where the tasks share ``path`` with the driver
    (:func:`tasks_write_here`).  ``writes``: the tasks' writer, a ``SplitWrites`` (or its subclass).
    Returns the rows written."""
    local = written_here(path)
    job, schema = str(uuid.uuid4()), r.reader.arrow_schema()
    with spark_parquet_dir.parquet_dir(local, replace=True) as tmp:
        if r.table is not None:  # each split's rows as the task that read it would write them
            for i, batches in r.held_splits():
                spark_parquet_dir.write_parts(batches, tmp, spark_parquet_dir.part_name(i, job), schema, partition_by,
                                              empty_too=i == 0)
            rows, parts = r.table.num_rows, r.splits
        else:
            n = len(r.splits)
            writes = (writes or spark_source.SplitWrites)(r.reader, r.shipped, tmp, job, partition_by)
            done = spark.range(0, n, 1, max(1, n)).mapInArrow(writes, writes.SCHEMA).collect()
            rows, parts = sum(d.rows for d in done), [p for d in done if d.part for p in d.part.split("\n")]
            spark_parquet_dir.keep_parts(tmp, parts)
        if not parts and not partition_by:  # no split at all: a part that holds the schema, as Spark writes then
            spark_parquet_dir.write_parts(iter(()), tmp, spark_parquet_dir.part_name(0, job), schema, empty_too=True)
    return rows


def sorted_small(df, *cols):
    """``df`` sorted by ``cols`` in one task: for a result of a row or so per partition dir (the
    inventory, the replica view), one output file and no range-partitioning sample job, which
    ``orderBy`` runs first (a second job, seconds in a short run's cold JVM)."""
    return df.coalesce(1).sortWithinPartitions(*cols)


def written_here(uri: str) -> str:
    """:func:`local_path` of an output pyarrow writes (here or in the tasks): a ValueError for one only
    Spark's writer reaches (s3a://, hdfs://, another host's file URI)."""
    local = local_path(uri)
    if local is None:
        raise ValueError(f"{uri}: the tasks write only to a local path; Spark's writer writes elsewhere")
    return local


#: what Spark writes in a directory it writes a DataFrame to, a partitionBy's ``key=value`` dirs among them
_SPARK_OUTPUT = re.compile(r"^(_SUCCESS|\._SUCCESS\.crc|_temporary|_committed_.*|_started_.*|\.?part-.*)$")
_SPARK_PARTITION_DIR = re.compile(r"^[^=]+=.*$")


def check_out(out: str, outputs: tuple = ()) -> None:
    """Exit 2 with one line unless a job may write ``out`` (Spark's ``overwrite`` replaces it whole):
    new (made here, so that one that cannot be made is said before Spark starts), empty, or holding
    only what Spark writes -- an earlier run's output, which a job replaces as Spark jobs do; never a
    regular file or a directory with files of someone else's.  ``outputs``: the names a job writes
    inside ``out`` (the scan job's levels), each of which may hold such an output.  The temp dirs of
    killed kfx runs there are removed.  Remote outputs (s3a://, hdfs://) are Spark's to judge."""
    local = local_path(out)
    if local is None:
        return
    if not os.path.exists(local):
        try:
            os.makedirs(local)
        except OSError as e:
            fail(f"--out {out}: cannot be created: {e.strerror or e}")
        return
    if not os.path.isdir(local):
        fail(f"--out {out}: not a directory (a job replaces its --out whole)")
    fsutil.clear_dead_temps(local)
    def spark_wrote(folder, name):
        return _SPARK_OUTPUT.match(name) or (_SPARK_PARTITION_DIR.match(name) and os.path.isdir(os.path.join(folder, name)))
    foreign = []
    for name in sorted(os.listdir(local)):
        path = os.path.join(local, name)
        if name in outputs and os.path.isdir(path):
            foreign += [f"{name}/{n}" for n in sorted(os.listdir(path)) if not spark_wrote(path, n)]
        elif not spark_wrote(local, name):
            foreign.append(name)
    if foreign:
        fail(f"--out {out} holds files no Spark job wrote ({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}), "
             "which writing there would delete: give a new or empty directory")
