"""A Parquet output dir laid out as Spark writes one, written by pyarrow: in this process
(:func:`write_parquet_dir`, one part file) or by a scan's tasks (:class:`SplitWrites`, a part file a
split, committed here by :func:`parquet_dir`).

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
import pickle
import shutil
import uuid

from specs.lazy import lazy

from kafkaforensics import fsutil

pa = lazy("pyarrow", globals())
pq = lazy("pyarrow.parquet", globals())

#: the file Spark's committer writes when a job's output is complete
SUCCESS = "_SUCCESS"
#: the Arrow bytes a task gathers into one row group (Spark's Parquet writer closes one at 128 MiB
#: of encoded pages): row groups a reader can skip and split by, memory bounded by the split's task
ROW_GROUP_BYTES = 64 << 20
#: what a task's part file is called while it is being written (removed unless its task reported it)
_WRITING = ".writing"


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
    line).  ``path`` must not exist, unless ``replace``: then what is there is removed just before the
    rename (as Spark's ``mode("overwrite")`` removes it before its job)."""
    parent = os.path.dirname(os.path.abspath(path))
    with fsutil.doing("writing", path):
        if os.path.lexists(path) and not replace:
            raise FileExistsError(17, "exists already", path)
        tmp = fsutil.temp_dir(parent, os.path.basename(path))
        renamed = False
        try:
            fsutil._step("write")
            yield tmp
            for name in [*sorted(os.listdir(tmp)), SUCCESS]:
                name = os.path.join(tmp, name)
                fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fsutil.fit_new(name, fd=fd, like=parent)
                    fsutil._step("fsync")
                    os.fsync(fd)
                finally:
                    os.close(fd)
            fsutil.fit_new(tmp, like=parent)  # mkdtemp's 0700 would keep others from reading it
            fsutil.fsync_dir(tmp)
            if os.path.lexists(path):  # replace
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
            fsutil._step("rename")
            os.rename(tmp, path)
            renamed = True
            fsutil.fsync_dir(parent)
        except BaseException:
            if renamed:
                shutil.rmtree(path, ignore_errors=True)
            else:
                fsutil.remove_temp(tmp)
            raise


def write_parquet_dir(table, path: str) -> str:
    """``table`` (a pyarrow Table) written to the new dir ``path`` as one Spark-style part file and
    ``_SUCCESS`` (:func:`parquet_dir`); returns the part file's path."""
    with parquet_dir(path) as tmp:
        name = write_part(table, tmp)
    return os.path.join(path, name)


def write_part(table, into: str, task: int = 0, job: str | None = None) -> str:
    """``table`` written whole into the dir ``into`` as the part file of ``task`` (:func:`part_name`);
    returns its name."""
    name = part_name(task, job)
    pq.write_table(table, os.path.join(into, name), compression="snappy")
    return name


def keep_parts(tmp: str, parts) -> None:
    """Remove from a task-written ``tmp`` dir every file but ``parts`` (the names its tasks reported:
    what a failed or repeated attempt of a task wrote is not among them)."""
    keep = set(parts)
    for name in os.listdir(tmp):
        if name not in keep:
            os.unlink(os.path.join(tmp, name))


class SplitWrites:
    """What ``mapInArrow`` runs over a scan's split numbers to write a Parquet dir from its tasks,
    rows never handed to the JVM: each number's split read by ``reader`` (as
    :class:`~kafkaforensics.spark.spark_source.SplitReads` reads it) and written by pyarrow into
    ``into`` (the temp dir of a :func:`parquet_dir`, on a file system the tasks and the driver
    share: a local master's) as the part file of that number, in row groups of about
    :data:`ROW_GROUP_BYTES`.  Each task yields a row (``split``, ``part``, ``rows``) for its part:
    the driver keeps the parts reported (:func:`keep_parts`), one a split, whatever attempt wrote
    it."""

    #: the rows each task yields
    SCHEMA = "split long, part string, rows long"

    def __init__(self, reader, shipped, into: str, job: str):
        self.reader, self.shipped, self.into, self.job = reader, shipped, into, job
        self.row_group_bytes = ROW_GROUP_BYTES  # the driver's, shipped with the tasks

    def __call__(self, numbers):
        splits = self.shipped.value
        for batch in numbers:
            for i in batch.column(0).to_pylist():
                part, rows = self.write(i, self.reader.read(pickle.loads(splits[i])))
                yield pa.RecordBatch.from_pydict({"split": [i], "part": [part], "rows": [rows]},
                                                 schema=pa.schema([("split", pa.int64()), ("part", pa.string()),
                                                                   ("rows", pa.int64())]))

    def write(self, i: int, batches) -> tuple[str, int]:
        """Split ``i``'s ``batches`` as its part file (written under a name of its own, then renamed:
        a failed attempt leaves no half file under the part's name); (its name, its rows).  A split
        with no rows writes none (its name is empty), as Spark's tasks write none."""
        part = part_name(i, self.job)
        writing = os.path.join(self.into, f".{part}.{uuid.uuid4().hex}{_WRITING}")
        rows, held, size, w = 0, [], 0, None
        try:
            for b in batches:
                if not b.num_rows:
                    continue
                held.append(b)
                size += b.nbytes
                rows += b.num_rows
                if size >= self.row_group_bytes:
                    w = w or pq.ParquetWriter(writing, self.reader.arrow_schema(), compression="snappy")
                    w.write_table(pa.Table.from_batches(held))
                    held, size = [], 0
            if held:
                w = w or pq.ParquetWriter(writing, self.reader.arrow_schema(), compression="snappy")
                w.write_table(pa.Table.from_batches(held))
        finally:
            if w is not None:
                w.close()
        if w is None:
            return "", 0
        os.rename(writing, os.path.join(self.into, part))
        return part, rows
