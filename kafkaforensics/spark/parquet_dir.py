"""A Parquet output dir laid out as Spark writes one, written by pyarrow in this process.

``out/<name>/part-00000-<uuid>-c000.snappy.parquet`` and an empty ``_SUCCESS``: Spark, pyarrow,
DuckDB and every other reader of a Spark job's output read it as such (``spark.read.parquet(dir)``).
The columns are the Arrow table's as given -- a Spark schema's own (``to_arrow_schema``): TIMESTAMPs
as INT64 microseconds (what ``SESSION_CONF`` has Spark write), binary as binary, lists in Parquet's
standard three-level form -- so a dir written here and one Spark wrote from the same rows read back
the same (``tests/test_spark_views.py``).

Written as every kfx write is (:mod:`kafkaforensics.fsutil`): into a temp dir beside the target,
each file fsynced, then renamed into place and the parent fsynced; the target must not exist yet.
"""
from __future__ import annotations

import os
import shutil
import uuid

from specs.lazy import lazy

from kafkaforensics import fsutil

pq = lazy("pyarrow.parquet", globals())

#: the file Spark's committer writes when a job's output is complete
SUCCESS = "_SUCCESS"


def part_name() -> str:
    """A part file's name as Spark's Parquet writer gives it (the first task's, Snappy-compressed)."""
    return f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"


def write_parquet_dir(table, path: str) -> str:
    """``table`` (a pyarrow Table) written to the new dir ``path`` as one Spark-style part file and
    ``_SUCCESS``; returns the part file's path.  Nothing is left at ``path`` or beside it when it
    fails (a :class:`~kafkaforensics.fsutil.WriteFailed` line)."""
    parent = os.path.dirname(os.path.abspath(path))
    with fsutil.doing("writing", path):
        if os.path.lexists(path):
            raise FileExistsError(17, "exists already", path)
        tmp = fsutil.temp_dir(parent, os.path.basename(path))
        renamed = False
        try:
            part = os.path.join(tmp, part_name())
            fsutil._step("write")
            pq.write_table(table, part, compression="snappy")
            for name in (part, os.path.join(tmp, SUCCESS)):
                fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fsutil.fit_new(name, fd=fd, like=parent)
                    fsutil._step("fsync")
                    os.fsync(fd)
                finally:
                    os.close(fd)
            fsutil.fit_new(tmp, like=parent)  # mkdtemp's 0700 would keep others from reading it
            fsutil.fsync_dir(tmp)
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
    return os.path.join(path, os.path.basename(part))
