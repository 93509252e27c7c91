"""The Spark path where fleets really live: segments in an S3-compatible bucket (moto's server on
127.0.0.1) and a Spark standalone cluster (a master and a worker started from pyspark's own
``bin/spark-class`` on 127.0.0.1), each checked against the same scan of local files."""
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import SAMPLE
from tests.remote_fixtures import _free_port, moto_s3
from tests.test_spark import spark  # noqa: F401  (the session fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET = "kafka-archive"
S3 = {"s3.endpoint": None, "s3.accessKey": "testing", "s3.secretKey": "testing", "s3.region": "us-east-1"}


def _stop(proc: subprocess.Popen) -> None:
    """End a process started in its own session, and its children, by its pid."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _rows(spark, df_or_path, columns):  # noqa: F811
    df = spark.read.parquet(df_or_path) if isinstance(df_or_path, str) else df_or_path
    return sorted(tuple(r[c] for c in columns) for r in df.select(*columns).collect())


# ------------------------------------------------------------------------------ object storage
@pytest.fixture(scope="module")
def s3_fleet():
    """The sample fleet uploaded to a bucket of an S3-compatible server on 127.0.0.1
    (:func:`tests.remote_fixtures.moto_s3`, which starts and stops it)."""
    from pyarrow.fs import S3FileSystem
    with moto_s3(buckets=(BUCKET,)) as endpoint:
        options = dict(S3, **{"s3.endpoint": endpoint})
        fs = S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                          endpoint_override=endpoint.removeprefix("http://"))
        for root, _d, files in os.walk(SAMPLE):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), SAMPLE)
                with open(os.path.join(root, f), "rb") as src, fs.open_output_stream(f"{BUCKET}/logs/{rel}") as dst:
                    dst.write(src.read())
        yield options


@pytest.mark.parametrize("scheme", ["s3", "s3a"])
def test_s3_fleet_reads_like_local_files(spark, s3_fleet, scheme):  # noqa: F811
    from spark_jobs.planned_read import read
    remote = f"{scheme}://{BUCKET}/logs"
    for level, cols in (("batches", ["topic", "partition", "position", "baseOffset", "crc", "crcValid"]),
                        ("records", ["topic", "partition", "offset", "timestamp", "key", "value", "crcValid"])):
        want = _rows(spark, read(spark, SAMPLE, level), cols)
        got = _rows(spark, read(spark, remote, level, options=s3_fleet), cols)
        assert got == want and want
    files = {r["file"] for r in read(spark, remote, "batches", options=s3_fleet).select("file").distinct().collect()}
    assert files and all(f.startswith(f"{scheme}://{BUCKET}/logs/") for f in files)


def test_s3_segments_split_through_their_remote_index(s3_fleet):
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    remote = KafkaSegmentsReader({"path": f"s3://{BUCKET}/logs/orders-0", "splitBytes": "4000", **s3_fleet},
                                 "batches").partitions()
    local = KafkaSegmentsReader({"path": os.path.join(SAMPLE, "orders-0"), "splitBytes": "4000"}, "batches").partitions()
    def cuts(splits):
        return [(p.kind, p.start, p.end) for s in splits for p in s.pieces]
    assert cuts(remote) == cuts(local) and len(remote) > 3


@pytest.mark.parametrize("uri, says", [("s3://no-such-bucket/2026", "no such bucket: no-such-bucket"),
                                       (f"s3a://{BUCKET}/lgos", f"bucket {BUCKET} has no prefix or object lgos")])
def test_kfx_scan_of_a_missing_bucket_or_prefix_is_a_usage_error(kfx, s3_fleet, tmp_path, uri, says):
    r = kfx("scan", uri, "--out", tmp_path / "scan", "--master", "local[2]",
            "--s3-endpoint", s3_fleet["s3.endpoint"], "--s3-access-key", "testing", "--s3-secret-key", "testing",
            "--s3-region", "us-east-1")
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and uri in lines[0] and "error" in lines[0]
    assert lines[0].count(says) == 1 and "bucket, prefix" not in lines[0], lines[0]  # which one, once (issue 57)
    assert not (tmp_path / "scan").exists()


def test_kfx_scan_of_a_bucket(spark, kfx, s3_fleet, tmp_path):  # noqa: F811
    out = tmp_path / "scan"
    r = kfx("scan", f"s3a://{BUCKET}/logs", "--out", out, "--master", "local[2]", "--level", "records",
            "--s3-endpoint", s3_fleet["s3.endpoint"], "--s3-access-key", "testing", "--s3-secret-key", "testing",
            "--s3-region", "us-east-1")
    assert r.exit_code == 0, r.output
    assert spark.read.parquet(str(out / "records")).count() == 668


# ------------------------------------------------------------------------------ a real cluster
def _spark_home() -> str:
    import pyspark
    return os.path.dirname(pyspark.__file__)


def _wait_for_worker(ui_port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
                if json.load(resp).get("aliveworkers", 0) >= 1:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("no Spark worker registered with the master in time")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (2 cores, 2 GiB) on 127.0.0.1; yields the master URL."""
    home = _spark_home()
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
               SPARK_WORKER_DIR=str(tmp_path_factory.mktemp("spark-worker")))
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    spark_class = os.path.join(home, "bin", "spark-class")
    logs = tmp_path_factory.mktemp("spark-logs")
    procs = []
    try:
        procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", str(port), "--webui-port", str(ui)], env=env, start_new_session=True,
                                      stdout=open(logs / "master.log", "w"), stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker",
                                       f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "2",
                                       "--memory", "2g", "--webui-port", str(worker_ui)], env=env,
                                      start_new_session=True, stdout=open(logs / "worker.log", "w"),
                                      stderr=subprocess.STDOUT))
        _wait_for_worker(ui, time.monotonic() + 90)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            _stop(p)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The package as the README ships it to executors: ``pip wheel --no-deps -w dist .``."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), ROOT],
                   check=True, timeout=300, capture_output=True)
    (whl,) = [os.path.join(dist, f) for f in os.listdir(dist) if f.endswith(".whl")]
    return whl


def _wait_for_pid(pid: int, deadline: float) -> None:
    """Wait for a process this test did not start as its child to end; kill it at the deadline."""
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"the class archive's recording (pid {pid}) did not end in time")


def test_kfx_scan_on_a_standalone_cluster_equals_local(spark, cluster, tmp_path):  # noqa: F811
    """Also the driver JVM's class archive: the first process leaves its recording to a process of
    its own, which records it in the background and leaves nothing else; the second maps it."""
    cache = tmp_path / "cache"
    env = {**os.environ, "KFX_CACHE_DIR": str(cache), "KFX_CLASS_ARCHIVE_RECORDING": "background"}
    outs = {}
    for name, master in (("cluster", cluster), ("local", "local[2]")):
        out = tmp_path / name
        r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "kfx"), "scan", SAMPLE, "--out", str(out),
                            "--master", master, "--level", "records", "--search", "txn-40"],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        recording = re.search(r"recording the driver JVM's classes .* in the background\s+\(pid (\d+)", r.stderr)
        assert bool(recording) == (name == "cluster"), r.stderr
        if recording:
            _wait_for_pid(int(recording.group(1)), time.monotonic() + 300)
        assert "[warning]" not in r.stdout + r.stderr and "NativeCodeLoader" not in r.stderr
        archives = sorted(os.listdir(cache))
        assert [a for a in archives if a.endswith(".jsa")], archives
        assert not [a for a in archives if a.endswith((".tmp", ".recording"))], archives
        outs[name] = out
    cols = ["topic", "partition", "offset", "timestamp", "key", "value", "batchPosition", "crcValid"]
    assert _rows(spark, str(outs["cluster"] / "records"), cols) == _rows(spark, str(outs["local"] / "records"), cols)
    inv = ["topic", "partition", "batches", "records", "firstOffset", "lastOffset", "bytes", "anomalies"]
    assert _rows(spark, str(outs["cluster"] / "inventory"), inv) == _rows(spark, str(outs["local"] / "inventory"), inv)
    hits = ["topic", "partition", "offset"]
    assert _rows(spark, str(outs["cluster"] / "search"), hits) == _rows(spark, str(outs["local"] / "search"), hits)


def _local(spark, job, fleet, tmp_path):  # noqa: F811
    """What each job's library function gives in the tests' local session."""
    from spark_jobs import anomalies, export, inventory, scan, search
    if job == "export":
        return spark.read.parquet(export.export(spark, [fleet], "records", str(tmp_path / "local-export")))
    if job == "inventory":
        return inventory.inventory(spark, [fleet])
    if job == "anomalies":
        return anomalies.anomalies(spark, [fleet])
    if job == "search":
        return search.search(spark, [fleet], "txn-40")
    scan.scan(spark, scan.ScanRequest([fleet], str(tmp_path / "local-scan"), "records"))
    return str(tmp_path / "local-scan")


JOBS = {
    "export": (["--level", "records"], ["topic", "partition", "offset", "key", "value", "crcValid"]),
    "inventory": ([], ["topic", "partition", "batches", "records", "firstOffset", "lastOffset", "anomalies"]),
    "anomalies": ([], ["topic", "partition", "file", "position", "kind"]),
    "search": (["--pattern", "txn-40"], ["topic", "partition", "offset", "key"]),
    "scan": (["--level", "records"], None),
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_spark_submit_of_each_job_with_the_package_shipped_equals_local(spark, cluster, wheel, tmp_path, job):  # noqa: F811
    args, cols = JOBS[job]
    fleet = tmp_path / "logs"
    shutil.copytree(SAMPLE, fleet)
    with open(fleet / "orders-0" / "00000000000000000000.log", "ab") as f:
        f.write(b"\x01" * 40)  # some damage for the anomaly job to find
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    out = tmp_path / "cluster"
    r = subprocess.run([os.path.join(_spark_home(), "bin", "spark-submit"), "--master", cluster,
                        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                        "--py-files", wheel, os.path.join(ROOT, "spark_jobs", f"{job}.py"),
                        "--out", str(out), *args, str(fleet)],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    # the jobs that report damage exit 1 when they found some (the appended garbage)
    assert r.returncode == (1 if job in ("inventory", "anomalies", "scan") else 0), r.stderr[-3000:]
    local = _local(spark, job, str(fleet), tmp_path)
    if cols is None:  # the scan job writes every output
        for sub, c in (("records", JOBS["export"][1]), ("inventory", JOBS["inventory"][1]),
                       ("anomalies", JOBS["anomalies"][1])):
            assert _rows(spark, str(out / sub), c) == _rows(spark, os.path.join(local, sub), c)
        return
    got, want = _rows(spark, str(out), cols), _rows(spark, local, cols)
    assert got == want and want
