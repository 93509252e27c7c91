"""A Parquet output dir laid out as Spark writes one, written by pyarrow: in this process
(:func:`write_parquet_dir`, one part file) or by a scan's tasks (:func:`write_batches`, a part file
a split: ``spark_source.SplitWrites``), committed by :func:`parquet_dir`.

``out/<name>/part-NNNNN-<uuid>-c000.snappy.parquet`` and an empty ``_SUCCESS``: Spark, pyarrow,
DuckDB and every other reader of a Spark job's output read it as such (``spark.read.parquet(dir)``).
The columns are the Arrow table's as given -- a Spark schema's own (``to_arrow_schema``): TIMESTAMPs
as INT64 microseconds (what ``SESSION_CONF`` has Spark write), binary as binary, lists in Parquet's
standard three-level form -- so a dir written here and one Spark wrote from the same rows read back
the same (``tests/test_spark_views.py``).

Written as every kfx write is (:mod:`kafkaforensics.fsutil`): into a temp dir beside the target,
each file fsynced, then renamed into place and the parent fsynced.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid

from specs.lazy import lazy

from kafkaforensics import fsutil

pa = lazy("pyarrow", globals())
pq = lazy("pyarrow.parquet", globals())
pads = lazy("pyarrow.dataset", globals())

#: the file Spark's committer writes when a job's output is complete
SUCCESS = "_SUCCESS"
#: the Arrow bytes a task gathers into one row group (Spark's Parquet writer closes one at 128 MiB
#: of encoded pages): row groups a reader can skip and split by, memory bounded by the split's task
ROW_GROUP_BYTES = 64 << 20
#: what a task's part file is called while it is being written (removed unless its task reported it)
_WRITING = ".writing"
#: how pyarrow writes a part file: as Spark's Parquet writer does by default
_OPTIONS = {"compression": "snappy"}


def part_name(task: int = 0, job: str | None = None) -> str:
    """A part file's name as Spark's Parquet writer gives it (Snappy-compressed): the task's number
    and the job's uuid (a new one when not given)."""
    return f"part-{task:05d}-{job or uuid.uuid4()}-c000.snappy.parquet"


@contextlib.contextmanager
def parquet_dir(path: str, replace: bool = False):
    """A new Parquet dir at ``path``: yields a temp dir beside it for the part files; when the block
    ends, each file in it is given Kafka's modes and the parent's owner (:func:`fsutil.fit_new`) and
    fsynced, ``_SUCCESS`` is added, and the dir renamed to ``path``.  Nothing is left at ``path`` or
    beside it when the block or the commit fails (a :class:`~kafkaforensics.fsutil.WriteFailed`
    line); missing parents are made first (:func:`fsutil.make_dirs`, fsynced) and, as Spark's writer
    leaves those it makes, are left.
    ``path`` must not exist, unless ``replace``: then what is there is renamed aside (a kfx
    temp name) just before the new dir is renamed in, and removed after: a kill leaves at ``path``
    the old output or the new one (or, between the two renames, neither), and temp dirs the next
    write beside it reclaims (as does ``--overwrite``).  Spark's ``mode("overwrite")`` deletes the old
    output before its job starts."""
    parent = os.path.dirname(os.path.abspath(path))
    purpose = os.path.basename(path)
    with fsutil.doing("writing", path):
        if os.path.lexists(path) and not replace:
            raise FileExistsError(17, "exists already", path)
        fsutil.make_dirs(parent)  # as Spark's writer makes a new output's parents
        tmp = fsutil.temp_dir(parent, purpose)
        renamed, old = False, None
        try:
            fsutil._step("write")
            yield tmp
            _sync_partition_dirs(tmp, parent)
            for name in [*sorted(n for n in os.listdir(tmp) if not os.path.isdir(os.path.join(tmp, n))), SUCCESS]:
                _sync_file(os.path.join(tmp, name), parent)
            fsutil.fit_new(tmp, like=parent)  # mkdtemp's 0700 would keep others from reading it
            fsutil.fsync_dir(tmp)
            if os.path.lexists(path):  # replace: the old output aside, under a name the next run reclaims
                old = fsutil.temp_path(parent, purpose)
                fsutil._step("rename")
                os.rename(path, old)
            fsutil._step("rename")
            os.rename(tmp, path)
            renamed = True
            fsutil.fsync_dir(parent)
        except BaseException:
            if renamed:
                shutil.rmtree(path, ignore_errors=True)
            else:
                _remove_all(tmp)
            if old is not None and os.path.lexists(old) and not os.path.lexists(path):
                os.rename(old, path)  # the old output back where it was
            raise
        if old is not None:
            fsutil.remove_temp(old)


def _sync_file(name: str, parent: str) -> None:
    """A part file (or ``_SUCCESS``, made here) given Kafka's modes and the parent's owner, fsynced."""
    fd = os.open(name, os.O_RDWR | (os.O_CREAT if name.endswith(SUCCESS) else 0), 0o666)
    try:
        fsutil.fit_new(name, fd=fd, like=parent)
        fsutil._step("fsync")
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_partition_dirs(tmp: str, parent: str) -> None:
    """The files of a partitioned output's ``key=value`` dirs under ``tmp`` fsynced, then the dirs."""
    for root, dirs, files in os.walk(tmp, topdown=False):
        if root == tmp:
            continue
        for name in files:
            _sync_file(os.path.join(root, name), parent)
        fsutil.fit_new(root, like=parent)
        fsutil.fsync_dir(root)


def _remove_all(tmp: str) -> None:
    """Remove a temp dir that tasks may still be writing in (a failed job's others, being cancelled):
    a file they add while it is removed would keep it, so it is removed again, a few times."""
    for _ in range(_REMOVE_TRIES):
        fsutil.remove_temp(tmp)
        if not os.path.lexists(tmp):
            return
        time.sleep(0.2)


#: how many times :func:`_remove_all` removes a temp dir tasks may still be writing in
_REMOVE_TRIES = 10


def write_parquet_dir(table, path: str, replace: bool = False) -> str:
    """``table`` (a pyarrow Table) written to the new dir ``path`` (or in place of what is there, when
    ``replace``) as one Spark-style part file and ``_SUCCESS`` (:func:`parquet_dir`); returns the
    part file's path."""
    with parquet_dir(path, replace) as tmp:
        name = write_part(table, tmp)
    return os.path.join(path, name)


def write_partitioned_batches(batches, into: str, name: str, schema, partition_by) -> int:
    """Arrow ``batches`` (of ``schema``) written into the dir ``into`` as they stream by, in
    ``key=value`` dirs of the ``partition_by`` columns as Spark's ``partitionBy`` writes them (a null
    as ``__HIVE_DEFAULT_PARTITION__``), a part file ``name`` (its ``c000`` numbered) in each dir a
    batch reaches: pyarrow's dataset writer, which holds no more than the batches it has not yet
    written, never the whole export.  Returns the rows written."""
    rows = 0

    def counted():
        nonlocal rows
        for b in batches:
            if b.num_rows:
                rows += b.num_rows
                yield b
    partitioning = pads.partitioning(pa.schema([schema.field(c) for c in partition_by]), flavor="hive")
    pads.write_dataset(counted(), into, schema=schema, format="parquet", partitioning=partitioning,
                       basename_template=name.replace("c000", "c{i}"), existing_data_behavior="overwrite_or_ignore",
                       file_options=pads.ParquetFileFormat().make_write_options(**_OPTIONS))
    return rows


def write_part(table, into: str, task: int = 0, job: str | None = None) -> str:
    """``table`` written whole into the dir ``into`` as the part file of ``task`` (:func:`part_name`);
    returns its name."""
    name = part_name(task, job)
    pq.write_table(table, os.path.join(into, name), **_OPTIONS)
    return name


def keep_parts(tmp: str, parts) -> None:
    """Remove from a task-written ``tmp`` dir every file but ``parts`` (the names its tasks reported:
    what a failed or repeated attempt of a task wrote is not among them)."""
    keep = set(parts)
    for name in os.listdir(tmp):
        if name not in keep:
            os.unlink(os.path.join(tmp, name))


def write_batches(batches, into: str, name: str, schema, row_group_bytes: int = ROW_GROUP_BYTES,
                  empty_too: bool = False) -> int | None:
    """Arrow ``batches`` (of ``schema``) written into the dir ``into`` as the part file ``name``, in
    row groups gathered to about ``row_group_bytes``; under a name of its own first, then renamed,
    so that a failed or repeated attempt leaves no half file under ``name``.  Returns its rows, or
    None, having written nothing, when there were none (unless ``empty_too``: a part that holds the
    schema, as Spark's first task writes one)."""
    writing = os.path.join(into, f".{name}.{uuid.uuid4().hex}{_WRITING}")
    rows, held, size, w = 0, [], 0, None
    try:
        for b in batches:
            if not b.num_rows:
                continue
            held.append(b)
            size += b.nbytes
            rows += b.num_rows
            if size >= row_group_bytes:
                w = w or pq.ParquetWriter(writing, schema, **_OPTIONS)
                w.write_table(pa.Table.from_batches(held))
                held, size = [], 0
        if held or (empty_too and w is None):
            w = w or pq.ParquetWriter(writing, schema, **_OPTIONS)
            w.write_table(pa.Table.from_batches(held, schema=schema))
    finally:
        if w is not None:
            w.close()
    if w is None:
        return None
    os.rename(writing, os.path.join(into, name))
    return rows
