"""One scan engine (issue 53, item 3): how a scan runs -- here with no Spark, Spark reading in the driver,
or Spark's tasks; pyarrow or Spark's writer -- is chosen once, by kafkaforensics/spark/engine.py, from what
the scan was asked and the bytes its plan reads; the Spark session and the jobs follow that choice."""
import os

from kafkaforensics.spark.engine import (DRIVER, DRIVER_READ_BYTES, HERE, HERE_ANY_SIZE_CORES, HERE_BYTES, LOCAL_MASTER,
                                         SHORT_RUN_BYTES, TASKS, choose, here_limit, machine_cores, may_run_here)
from spark_jobs.output import tasks_write_here


def test_a_small_scan_with_no_master_runs_here_and_pyarrow_writes():
    e = choose(None, 1000, search_here=True, out_local=True)
    assert (e.where, e.spark, e.pyarrow_writes, e.master) == (HERE, False, True, LOCAL_MASTER)
    grown = e.outgrown()  # its rows outgrew this process: Spark's tasks read it, not the driver again
    assert (grown.where, grown.spark, grown.driver_bytes, grown.tiny_run) == (TASKS, True, 0, False)


def test_what_keeps_a_scan_from_running_here():
    assert not may_run_here("local[2]", True, True)
    assert not may_run_here(None, False, True)  # a search only Java reads as asked
    assert not may_run_here(None, True, False)  # an --out on an object store
    for master, search_here, out_local in ((None, False, True), (None, True, False), ("local[2]", True, True)):
        e = choose(master, 1000, search_here, out_local)
        assert e.where == DRIVER and e.spark and e.tiny_run and e.short_run and e.driver_bytes == DRIVER_READ_BYTES
        assert e.pyarrow_writes == out_local
    big = choose(None, HERE_BYTES + 1, True, True, cores=8)
    assert big.where == TASKS and big.driver_bytes == 0 and not big.short_run


def test_with_no_master_a_machine_of_two_cores_scans_any_size_here():
    """Issue 57: on a machine of at most HERE_ANY_SIZE_CORES cores Spark's tasks cannot outrun one
    process with no Spark, so a scan with no --master runs here whatever its size (only a summary too
    large for this process sends it to Spark, as it is read); with more cores, past HERE_BYTES, Spark's
    tasks read it with every core."""
    for cores in range(1, HERE_ANY_SIZE_CORES + 1):
        assert here_limit(cores) is None
        e = choose(None, 100 * HERE_BYTES, True, True, cores=cores)
        assert (e.where, e.spark, e.pyarrow_writes) == (HERE, False, True)
    assert here_limit(HERE_ANY_SIZE_CORES + 1) == HERE_BYTES
    assert choose(None, HERE_BYTES, True, True, cores=16).where == HERE
    assert choose(None, HERE_BYTES + 1, True, True, cores=16).where == TASKS
    assert choose("local[2]", 10, True, True, cores=2).where == DRIVER  # --master: Spark, whatever the machine
    assert 1 <= machine_cores() <= (os.cpu_count() or 1)


def test_spark_s_tasks_read_what_the_driver_would_not_hold_or_a_cluster_runs():
    assert choose("local[*]", DRIVER_READ_BYTES + 1, True, True).where == TASKS
    remote = choose("spark://h:7077", 10, True, True)
    assert (remote.where, remote.pyarrow_writes) == (TASKS, False)  # a cluster's tasks share no --out with the driver
    assert choose("local[*]", SHORT_RUN_BYTES + 1, True, True).short_run is False


def test_the_jobs_write_with_pyarrow_by_the_engine_s_rule(tmp_path):
    for master, out, want in (("local[2]", str(tmp_path), True), ("local[2]", "s3a://b/x", False),
                              ("spark://h:7077", str(tmp_path), False)):
        assert tasks_write_here(master, out) is want
        assert choose(master, 10, True, not out.startswith("s3a:")).pyarrow_writes is want
