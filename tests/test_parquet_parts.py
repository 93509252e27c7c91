"""The one Parquet part writer (kafkaforensics/spark/parquet_dir.py) names its files as Spark does."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from kafkaforensics.spark.parquet_dir import part_name, write_parts


def test_a_job_uuid_holding_c000_still_names_one_part(tmp_path):
    """A job's uuid is random hex and holds ``c000`` now and then (about once in 230 scans): the part
    file keeps its name, only Spark's trailing ``c000`` counter is pyarrow's ``{i}`` (it was every
    ``c000``: pyarrow refused the template, and the scan failed)."""
    name = part_name(0, "3fc000d2-0c00-4c00-8c00-0c000c000c00")
    table = pa.table({"offset": pa.array([1, 2, 3], pa.int64())})
    rows, written = write_parts(table.to_batches(), str(tmp_path), name, table.schema)
    assert (rows, written) == (3, [name])
    assert pq.read_table(os.path.join(tmp_path, name)).column("offset").to_pylist() == [1, 2, 3]
