"""A Parquet output dir laid out as Spark writes one, written by pyarrow's dataset writer through
the one part writer, :func:`write_parts`: in this process (:func:`write_parquet_dir`, one part
file; a records export streamed a part a split) or by a scan's tasks (a part file a split:
``spark_source.SplitWrites``), committed by :func:`parquet_dir`.

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
pc = lazy("pyarrow.compute", globals())
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
    ``replace``) as one Spark-style part file and ``_SUCCESS`` (:func:`parquet_dir`) by the one part
    writer, :func:`write_parts`; returns the part file's path."""
    with parquet_dir(path, replace) as tmp:
        _, names = write_parts(table.to_batches(), tmp, part_name(), table.schema, empty_too=True)
    return os.path.join(path, names[0])


#: what a records export can be partitioned by: its topic, and the UTC date of its record timestamp
#: (a ``date`` column; null for a timestamp below 0)
PARTITION_COLUMNS = ("topic", "date")
DAY_MS = 86_400_000


def dated_table(records):
    """A records table (Arrow) with its ``date`` column: the UTC day of each timestamp."""
    ts = records["timestamp"]
    days = pc.cast(pc.divide(pc.if_else(pc.greater_equal(ts, 0), ts, pa.scalar(None, ts.type)), DAY_MS), pa.int32())
    return records.append_column("date", pc.cast(days, pa.date32()))


def dated_schema(schema):
    """A records schema with the ``date`` column :func:`dated_table` adds."""
    return schema.append(pa.field("date", pa.date32()))


def _dated_batches(batches):
    """Arrow record batches with their ``date`` column (:func:`dated_table`), one by one."""
    for b in batches:
        yield from dated_table(pa.Table.from_batches([b])).to_batches()


def _gathered(batches, schema, row_group_bytes: int, counted: list):
    """``batches`` gathered into one batch each about ``row_group_bytes`` (a row group each), empty
    ones dropped; ``counted[0]``: the rows that went by."""
    held, size = [], 0
    for b in batches:
        if not b.num_rows:
            continue
        held.append(b)
        size += b.nbytes
        counted[0] += b.num_rows
        if size >= row_group_bytes:
            yield pa.Table.from_batches(held, schema=schema).combine_chunks().to_batches()[0]
            held, size = [], 0
    if held:
        yield pa.Table.from_batches(held, schema=schema).combine_chunks().to_batches()[0]


def _template(name: str) -> str:
    """pyarrow's ``basename_template`` for the part ``name``: its file counter, Spark's ``c000``
    (the last one: the job's uuid before it may hold ``c000`` too), as ``c{i}``."""
    at = name.rindex("c000")
    return f"{name[:at]}c{{i}}{name[at + 4:]}"


def write_parts(batches, into: str, name: str, schema, partition_by=(), empty_too: bool = False,
                row_group_bytes: int = ROW_GROUP_BYTES) -> tuple[int, list[str]]:
    """The one writer of every Parquet part kfx writes (a records export's split, here or by Spark's
    tasks; a whole output held here): Arrow ``batches`` (of ``schema``) written into the dir ``into``
    as they stream by, by pyarrow's dataset writer, as the part file ``name`` (:func:`part_name`) --
    or, with ``partition_by`` (:data:`PARTITION_COLUMNS`; ``date`` derived from the timestamp), a part
    ``name`` in each ``key=value`` dir a batch reaches, as Spark's ``partitionBy`` writes them (a null
    as ``__HIVE_DEFAULT_PARTITION__``).  Row groups gathered to about ``row_group_bytes``; never more
    held than that.  Written into an attempt dir of its own first, then each file renamed into place,
    so that a failed or repeated attempt leaves no half file under ``name``.  Returns (its rows, the
    paths written, relative to ``into``): none when there were no rows, unless ``empty_too`` (a part
    that holds the schema, as Spark's first task writes one)."""
    if "date" in partition_by:
        batches, schema = _dated_batches(batches), dated_schema(schema)
    attempt = os.path.join(into, f".{name}.{uuid.uuid4().hex}{_WRITING}")
    counted, written = [0], []
    partitioning = (pads.partitioning(pa.schema([schema.field(c) for c in partition_by]), flavor="hive")
                    if partition_by else None)
    try:
        pads.write_dataset(_gathered(batches, schema, row_group_bytes, counted), attempt, schema=schema,
                           format="parquet", partitioning=partitioning, basename_template=_template(name),
                           use_threads=False, preserve_order=True, existing_data_behavior="overwrite_or_ignore",
                           file_options=pads.ParquetFileFormat().make_write_options(**_OPTIONS),
                           file_visitor=lambda f: written.append(os.path.relpath(f.path, attempt)))
        if not written and empty_too and not partition_by:
            os.makedirs(attempt, exist_ok=True)
            pq.write_table(schema.empty_table(), os.path.join(attempt, name), **_OPTIONS)
            written.append(name)
        return counted[0], [_placed(attempt, into, w) for w in written]
    finally:
        shutil.rmtree(attempt, ignore_errors=True)


def _placed(attempt: str, into: str, written: str) -> str:
    """A file the dataset writer wrote into ``attempt`` renamed to its place in ``into`` (its ``c{i}``
    counter as Spark's three digits); its path relative to ``into``."""
    head, base = os.path.split(written)
    stem, counter, rest = base.rpartition("-c")[0], *base.rpartition("-c")[2].split(".", 1)
    final = os.path.join(head, f"{stem}-c{int(counter):03d}.{rest}")
    os.makedirs(os.path.join(into, head), exist_ok=True)
    os.rename(os.path.join(attempt, written), os.path.join(into, final))
    return final


def keep_parts(tmp: str, parts) -> None:
    """Remove from a task-written ``tmp`` dir every file but ``parts`` (the paths, relative to it, its
    tasks reported: what a failed or repeated attempt of a task wrote is not among them), and the
    dirs left empty."""
    keep = set(parts)
    for root, dirs, files in os.walk(tmp, topdown=False):
        for f in files:
            if os.path.relpath(os.path.join(root, f), tmp) not in keep:
                os.unlink(os.path.join(root, f))
        for d in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, d))  # an attempt's dir, or a key=value dir none was kept in
