"""Issue 57, the cost items: `kfx scan` of a fleet archive on one machine runs with no Spark by default
(records and search) and answers exactly what the Spark path answers.  The archive is the bench's
(benchmarks/archive.py), small: three brokers' log dirs holding two replicas of every partition, every
codec, planted damage (a CRC failure, a damaged compressed batch, a replica cut short with a torn
tail), empty partitions, stray files, and a search key planted in a key, a value, a header only, and a
key and a header."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.archive import SEARCH, WEEK_FROM, WEEK_TO, build_archive
from spark_jobs import job_args, races
from spark_jobs.scan import ScanRequest, scan, scan_here
from spark_jobs.search import _candidates, _rows_holding
from tests.test_scan_races import PLANTED, _log_dirs
from tests.test_spark import spark  # noqa: F401  (the session fixture)
from tests.test_spark_views import _outputs, _spark_read

SCALE = 0.02


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    return build_archive(str(tmp_path_factory.mktemp("archive") / "archive"), SCALE)


def _log_dirs_of(archive):
    return sorted(os.path.join(archive, b, "kafka-logs") for b in os.listdir(archive))


def test_kfx_scan_of_the_archive_runs_here_and_finds_every_planted_hit_in_both_replicas(archive, tmp_path, kfx):
    out = tmp_path / "out"
    r = kfx("scan", archive, "--out", str(out), "--level", "records", "--search", SEARCH)
    assert r.exit_code == 1, r.output  # the planted damage and the stray files are findings
    assert "needs no Spark" in r.output and "starting Spark" not in r.output
    assert "8 search hits" in r.output
    hits = pq.read_table(str(out / "search")).to_pylist()
    got = sorted((h["topic"], h["partition"], tuple(h["matchedIn"])) for h in hits)
    want = sorted((t, p, m) for t, p, m in (("orders", 3, ("key",)), ("events", 2, ("value",)),
                                            ("payments", 1, ("header:order-id",)),
                                            ("clicks", 0, ("key", "header:order-id"))) for _copy in range(2))
    assert got == want
    assert len({h["logDir"] for h in hits}) == 3  # both replicas of each, over the three brokers


@pytest.mark.parametrize("window", [False, True], ids=["whole", "a-week-of-orders"])
def test_the_default_path_on_the_archive_writes_what_spark_writes(archive, tmp_path, spark, window):  # noqa: F811
    """The scan with no Spark (kfx scan's default on one machine) against Spark's tasks reading and
    Spark SQL computing the views, on the damaged multi-broker archive: every output, schemas and rows,
    read back by pyarrow and by Spark; the result's counts."""
    opts = job_args.window_options(["orders"], [], WEEK_FROM, WEEK_TO, None, None) if window else {}
    here, tasks = str(tmp_path / "here"), str(tmp_path / "tasks")
    os.makedirs(here)
    dirs = _log_dirs_of(archive)
    r = scan_here(ScanRequest(dirs, here, "records", SEARCH, options=opts),
                  min_partitions=spark.sparkContext.defaultParallelism)
    s = scan(spark, ScanRequest(dirs, tasks, "records", SEARCH, options=opts), driver_bytes=0, tasks_write=False,
             summary_rows=0)
    assert (r.rows, r.anomalies, r.notes, r.inventory, r.plan, r.hits, r.races) == \
        (s.rows, s.anomalies, s.notes, s.inventory, s.plan, s.hits, s.races)
    assert r.rows and r.anomalies + r.notes >= (2 if window else 5) and r.hits == (2 if window else 8)
    assert _outputs(here) == _outputs(tasks)
    assert _spark_read(spark, here) == _spark_read(spark, tasks)


def test_the_race_view_turns_only_partitions_that_can_race_into_python_rows(archive, tmp_path, monkeypatch):
    """The replica view judges the race only where it can have an outcome -- a partition with a
    transactional or control batch, or a keyed tombstone (a scan reads no cleaner checkpoint) -- and
    finds there what it found when it judged every partition."""
    judged = []
    real = races.partition_races

    def counting(rows):
        rows = list(rows)
        judged.append({(r["topic"], r["partition"]) for r in rows})
        return real(rows)
    monkeypatch.setattr(races, "partition_races", counting)
    for planted in sorted(PLANTED):
        root = tmp_path / planted
        parts, want = PLANTED[planted](root)
        judged.clear()
        out = root / "out"
        os.makedirs(out)
        both = scan_here(ScanRequest(_log_dirs(parts) + _log_dirs_of(archive), str(out / "both"), "records"))
        assert judged == [{("t", 0)}]  # none of the archive's 30 replicated partitions
        alone = scan_here(ScanRequest(_log_dirs(parts), str(out / "alone"), "records"))
        assert both.races == alone.races >= 1
        assert _outputs(str(out / "both"))["races"] == _outputs(str(out / "alone"))["races"]


def _reference_rows(column, literal: bytes) -> set:
    """Rows whose bytes hold ``literal``, one value at a time."""
    return {i for i, v in enumerate(column.to_pylist()) if v is not None and literal in v}


def test_the_literal_prefilter_misses_no_row_that_holds_the_literal():
    """``_rows_holding`` finds the literal in the column's data buffer at once: every row holding it
    is among the rows it gives (a find across two values' boundary may add one, which the pattern then
    rejects), whatever the chunks, slices, nulls and empty values."""
    rng = np.random.default_rng(57)
    for _ in range(400):
        n = int(rng.integers(0, 15))
        values = [None if rng.random() < 0.2 else bytes(rng.choice(list(b"abAB"), int(rng.integers(0, 6))).tolist())
                  for _ in range(n)]
        column = pa.chunked_array([pa.array(values[:n // 2], pa.binary()), pa.array(values[n // 2:], pa.binary())])
        if n > 3:
            column = column.slice(1, n - 2)
        for literal in (b"ab", b"a", b"ABa", b"bb"):
            got = set(_rows_holding(column, literal).tolist())
            assert _reference_rows(column, literal) <= got
            assert all(0 <= i < len(column) for i in got)
    records = pa.table({"key": pa.array([b"xORD-1", None, b"no"]), "value": pa.array([None, b"ORD-1", b"no"]),
                        "headers": pa.array([[], [{"key": "k", "value": b"no"}], [{"key": "k", "value": b"ORD-1"}]],
                                            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))})
    assert _candidates(records, "ORD-1") == [0, 1, 2]
    assert _candidates(records, "ORD-2") == []


def _slim(log_dir: str, offsets, tombstones=()):
    """Records of t-0 in ``log_dir`` as a records table holds them (key k<offset>, a null value at a
    tombstone)."""
    n = len(offsets)
    return pa.table({"clusterId": pa.array([None] * n, pa.string()), "topic": ["t"] * n, "partition": pa.array([0] * n, pa.int32()),
                     "logDir": [log_dir] * n, "partitionDir": ["t-0"] * n, "offset": pa.array(offsets, pa.int64()),
                     "timestamp": pa.array(offsets, pa.int64()), "batchBaseOffset": pa.array(offsets, pa.int64()),
                     "key": pa.array([b"k%d" % (o % 2) for o in offsets], pa.binary()),
                     "value": pa.array([None if o in tombstones else b"v" for o in offsets], pa.binary())})


def test_what_the_races_keep_of_a_streamed_export_is_every_row_of_a_partition_that_can_race():
    """A streamed records export keeps, for the races, only the rows of partitions that can race; a
    partition that turns out to (a keyed tombstone) after some of its rows went by is read again, so
    the races see all of its rows -- and none of a partition that cannot race."""
    summary = pa.table({"rowKind": ["batch"], "clusterId": pa.array([None], pa.string()), "topic": ["u"],
                        "partition": pa.array([0], pa.int32()), "logDir": ["/a"], "partitionDir": ["u-0"],
                        **{c: pa.array([None], pa.int64()) for c in races.BATCH_INPUTS
                           if c not in ("isControl", "isTransactional", "crcValid", "file")},
                        "file": ["f"], "isControl": [False], "isTransactional": [False], "crcValid": [True]})
    kept = races.RaceRecords(summary)
    first, second, other = _slim("/a", [0, 1, 2]), _slim("/a", [3, 4], tombstones=(4,)), _slim("/b", [0, 1])
    for t in (first, other.set_column(1, "topic", pa.array(["u", "u"])).set_column(4, "partitionDir",
                                                                                  pa.array(["u-0", "u-0"])), second):
        kept.add(t)
    assert kept.late == {"\x00t\x000"}
    again = races.slim_records(pa.concat_tables([first, second]))
    got = kept.table(lambda: again)
    assert sorted(got["offset"].to_pylist()) == [0, 1, 2, 3, 4] and set(got["topic"].to_pylist()) == {"t"}
    assert got["tombstone"].to_pylist().count(True) == 1


def test_a_records_scan_with_a_search_imports_no_pandas(archive, tmp_path):
    """Issue 57 (a scan's cost): the whole one-machine `kfx scan --level records --search` never imports
    pandas (~0.45 s of every run, ~9 %), which pyarrow's first conversion of a list or a numpy array
    would import only to ask whether it is a pandas Series; its answers stay the archive's."""
    import subprocess
    import sys
    code = ("import runpy, sys\n"
            "sys.argv = ['kfx'] + sys.argv[1:]\n"
            "try:\n"
            "    runpy.run_module('cli.main', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    print('exit', e.code)\n"
            "print('pandas imported:', 'pandas' in sys.modules)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code, "scan", archive, "--out", str(tmp_path / "out"), "--level",
                          "records", "--search", SEARCH], cwd=root, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=root))
    assert "needs no Spark" in out.stderr + out.stdout, out.stderr
    assert "8 search hits" in out.stdout and "exit 1" in out.stdout, out.stdout + out.stderr
    assert "pandas imported: False" in out.stdout, out.stdout
