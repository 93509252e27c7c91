"""`kfx scan`'s entry checks (issue 31): without Java it says so in one line and exits 2 before starting
anything; a non-empty --out is refused (exit 2, nothing touched) unless --overwrite; Spark's start-up
lines are dropped unless --verbose."""
import os
import stat
import subprocess
import sys
import time

from cli.spark_start import NOISE, clear_outputs, java_version, out_problem, quiet_start
from tests.conftest import SAMPLE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env_without_java(**extra):
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not os.path.exists(os.path.join(d, "java"))]
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT")}
    env.update(PATH=os.pathsep.join(path) or "/nonexistent", PYTHONPATH=ROOT, **extra)
    return env


def _scan(env, *argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "cli.main", "scan", *map(str, argv)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _fake_java(tmp_path, version):
    bin_dir = tmp_path / "jdk" / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2020-01-01\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_no_java_is_one_line_and_exit_2_before_anything_starts(tmp_path):
    # what needs Spark, hence Java: a master, a search pattern Python does not read as Java does
    for run_on_spark in (("--master", "local[1]"), ("--search", "(?i)order")):
        out = tmp_path / "out"
        r = _scan(_env_without_java(), SAMPLE, "--out", out, *run_on_spark)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) <= 3, r.stderr
        assert "Traceback" not in r.stderr and "JAVA_GATEWAY_EXITED" not in r.stderr
        assert "Java 17" in r.stderr and "JAVA_HOME" in r.stderr and "PATH" in r.stderr
        assert not out.exists() and "starting Spark" not in r.stderr


def test_a_small_scan_needs_no_spark_and_no_java(tmp_path):
    """Up to DRIVER_READ_BYTES of segments, with no --master and no --search, `kfx scan` reads and
    writes in its own process (spark_jobs.scan.scan_here, proven to write what Spark writes in
    tests/test_spark_views.py): it runs where there is no Java at all, and says why it starts no Spark."""
    for out, given in ((tmp_path / "out", str(tmp_path / "out")), (tmp_path / "url", f"file://{tmp_path}/url")):
        r = _scan(_env_without_java(), SAMPLE, "--out", given, "--level", "records")
        assert r.returncode == 0, r.stderr
        assert "needs no Spark" in r.stderr and "starting Spark" not in r.stderr and "Traceback" not in r.stderr
        assert sorted(os.listdir(out)) == ["anomalies", "inventory", "races", "records", "replicas"]
        assert "668 records rows" in r.stdout, r.stdout
    # a search Python reads as Java does runs here too (issue 57): its hits, no Java
    r = _scan(_env_without_java(), SAMPLE, "--out", tmp_path / "s", "--level", "records", "--search", "txn-4[0-9]")
    assert r.returncode == 0, r.stderr
    assert "needs no Spark" in r.stderr and "starting Spark" not in r.stderr
    assert sorted(os.listdir(tmp_path / "s")) == ["anomalies", "inventory", "races", "records", "replicas", "search"]
    assert " search hits -> " in r.stdout and "; 0 search hits" not in r.stdout, r.stdout


def test_a_scan_too_big_to_run_here_checks_java_before_touching_out(tmp_path, kfx, monkeypatch):
    """Past DRIVER_READ_BYTES a scan needs Spark: no Java is said before --overwrite clears anything."""
    from cli import spark_start
    from kafkaforensics.spark import engine
    monkeypatch.setattr(spark_start, "java_problem", lambda: "kfx scan needs Java (stood in)")
    monkeypatch.setattr(engine, "held_in_driver", lambda master, nbytes, driver_bytes=0: False)
    monkeypatch.setattr(engine, "here_limit", lambda cores: 0)  # more than this machine reads with no Spark
    out = tmp_path / "out"
    (out / "batches").mkdir(parents=True)
    (out / "batches" / "part-0.parquet").write_bytes(b"an earlier run's")
    r = kfx("scan", SAMPLE, "--out", out, "--overwrite")
    assert r.exit_code == 2 and "needs Java (stood in)" in r.output, r.output
    assert (out / "batches" / "part-0.parquet").read_bytes() == b"an earlier run's"


def test_java_home_without_java_and_an_old_java_are_named(tmp_path):
    r = _scan(_env_without_java(JAVA_HOME=str(tmp_path)), SAMPLE, "--out", tmp_path / "out", "--master", "local[1]")
    assert r.returncode == 2 and f"JAVA_HOME={tmp_path} has no bin/java" in r.stderr, r.stderr
    old = _fake_java(tmp_path, "11.0.2")
    r = _scan(_env_without_java(JAVA_HOME=str(old.parent)), SAMPLE, "--out", tmp_path / "out", "--master", "local[1]")
    assert r.returncode == 2 and "is Java 11" in r.stderr and len(r.stderr.strip().splitlines()) <= 3, r.stderr
    assert java_version(str(_fake_java(tmp_path / "eight", "1.8.0_381") / "java")) == 8


def test_a_driver_jvm_that_does_not_start_is_one_line_and_exit_2(tmp_path):
    """A java that says it is 17 but runs nothing (as a JVM that refuses an option or finds too little
    memory): `kfx scan` and the jobs say the JVM did not start, in one line of their own, with no
    traceback (Spark's launcher's own lines pass above it)."""
    env = _env_without_java(JAVA_HOME=str(_fake_java(tmp_path, "17.0.9").parent))
    r = _scan(env, SAMPLE, "--out", tmp_path / "out", "--master", "local[1]")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "╭" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: Spark's driver JVM did not start"), r.stderr
    job = subprocess.run([sys.executable, os.path.join(ROOT, "spark_jobs", "export.py"), str(SAMPLE),
                          "--out", str(tmp_path / "export")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert job.returncode == 2 and "Traceback" not in job.stderr, job.stderr
    assert job.stderr.strip().splitlines()[-1].startswith("error: Spark's driver JVM did not start"), job.stderr


def test_non_empty_out_is_refused_and_left_alone(tmp_path):
    out = tmp_path / "out"
    (out / "batches").mkdir(parents=True)
    (out / "batches" / "part-0.parquet").write_bytes(b"old")
    (out / "notes.txt").write_text("mine")
    before = sorted((p, os.stat(os.path.join(p, f)).st_mtime_ns) for p, _d, fs in os.walk(out) for f in fs)
    r = _scan(dict(os.environ, PYTHONPATH=ROOT), SAMPLE, "--out", out)
    assert r.returncode == 2 and "is not empty" in r.stderr and "--overwrite" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) <= 3 and "starting Spark" not in r.stderr
    assert sorted((p, os.stat(os.path.join(p, f)).st_mtime_ns) for p, _d, fs in os.walk(out) for f in fs) == before
    # --overwrite passes the check and removes only what a scan writes
    assert out_problem(str(out), overwrite=True) is None and out_problem(str(tmp_path / "new"), False) is None
    assert out_problem(str(out / "notes.txt"), True) and out_problem(f"s3a://b/{out}", False) is None
    clear_outputs(str(out))
    assert os.listdir(out) == ["notes.txt"]
    r = _scan(dict(os.environ, PYTHONPATH=ROOT), SAMPLE, "--out", "/proc/kfx-out")  # root cannot make it either
    assert r.returncode == 2 and "--out /proc/kfx-out: cannot be created" in r.stderr, r.stderr
    assert "starting Spark" not in r.stderr and "Traceback" not in r.stderr


def test_start_up_noise_is_dropped_and_the_rest_passes(capfd):
    noisy = ('import sys; sys.stderr.write("WARNING: Using incubator modules: jdk.incubator.vector\\n'
             'Setting default log level to \\"WARN\\".\\nTo adjust logging level use sc.setLogLevel(newLevel).\\n'
             '26/01/01 WARN NativeCodeLoader: Unable to load native-hadoop library\\nERROR something real\\n")')
    with quiet_start(verbose=False):
        subprocess.run([sys.executable, "-c", noisy], check=True)
    deadline = time.monotonic() + 10
    err = ""
    while "something real" not in err and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capfd.readouterr().err
    assert "ERROR something real" in err and not any(NOISE.match(line) for line in err.splitlines()), err
    sys.stderr.write("after\n")
    assert "after" in capfd.readouterr().err  # this process's own stderr is back
    with quiet_start(verbose=True):
        subprocess.run([sys.executable, "-c", noisy], check=True)
    assert "Setting default log level" in capfd.readouterr().err


def test_a_real_scan_prints_no_spark_start_up_lines(tmp_path):
    out = tmp_path / "out"
    r = _scan(dict(os.environ, PYTHONPATH=ROOT), SAMPLE, "--out", out, "--master", "local[1]", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not any(NOISE.match(line) for line in r.stderr.splitlines()), r.stderr
    assert "Setting default log level" not in r.stderr and "incubator" not in r.stderr
    assert sorted(os.listdir(out)) == ["anomalies", "batches", "inventory", "races", "replicas"]
    again = _scan(dict(os.environ, PYTHONPATH=ROOT), SAMPLE, "--out", out)
    assert again.returncode == 2 and "is not empty" in again.stderr


def _holders(pipe_fd: int) -> list:
    """The pids, other than this one, holding an end of the pipe ``pipe_fd`` is one end of."""
    link = f"pipe:[{os.fstat(pipe_fd).st_ino}]"
    held = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == link for fd in fds):
                held.append(int(pid))
        except OSError:  # gone, or not ours to read
            continue
    return held


def test_the_driver_jvm_does_not_hold_the_caller_s_pipe_after_kfx_exits(tmp_path):
    """The JVM outlives kfx by its shutdown; a caller reading kfx's output to its end (``$(kfx scan)``,
    ``capture_output``) must not wait for it: no process but this one holds kfx's stdout pipe once kfx
    has exited."""
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "scan", SAMPLE, "--out", str(tmp_path / "out"),
                             "--master", "local[1]"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.wait(300) == 0
        assert _holders(proc.stdout.fileno()) == []
        assert b"batches rows" in proc.stdout.read()
    finally:
        proc.kill()
        proc.stdout.close()


def test_kfx_scan_lists_its_inputs_once_and_its_reads_share_that_listing(tmp_path, kfx, monkeypatch):
    """The plan `kfx scan` makes before Spark starts lists the inputs; its scan's reads are handed
    that listing, on Spark or in this process, and a scan whose rows outgrow this process goes to
    Spark (Spark's part stood in for: this is the command's wiring, scan() and scan_here() are
    tested themselves in tests/test_spark_views.py)."""
    from kafkaforensics.spark.storage import Storage
    from spark_jobs import planned_read, session
    from spark_jobs import scan as scan_job
    listed, handed, drivers = [], [], []
    list_entries = Storage.list_entries
    monkeypatch.setattr(Storage, "list_entries", lambda self, uri: listed.append(uri) or list_entries(self, uri))
    started = []
    monkeypatch.setattr(session, "get_spark", lambda *a, **k: started.append(k) or object())
    monkeypatch.setattr(session, "end_session", lambda spark: None)

    def scan(spark, request, progress, **k):
        out, level = request.out, request.level
        handed.append(request.listing)
        drivers.append(k.get("driver_bytes"))
        return scan_job.ScanResult(out, level, 0, 0, None, [], scan_job.plan_of([]))
    monkeypatch.setattr(scan_job, "scan", scan)
    r = kfx("scan", SAMPLE, "--out", tmp_path / "out", "--verbose", "--master", "local[2]")
    assert r.exit_code == 0, r.output
    assert listed == [SAMPLE]
    assert len(handed) == 1 and handed[0] is not None and handed[0].partitions
    assert started[0]["engine"].short_run and started[0]["engine"].tiny_run  # the sample is read in the driver
    # no --master: read here, with the same listing; when its rows outgrow this process, on Spark
    here = []
    scan_here = scan_job.scan_here
    monkeypatch.setattr(scan_job, "scan_here", lambda request, **k: here.append(request.listing) or scan_here(request, **k))
    for n, (table_bytes, on_spark) in enumerate(((planned_read.DRIVER_TABLE_BYTES, 0), (1000, 1))):
        monkeypatch.setattr(planned_read, "DRIVER_TABLE_BYTES", table_bytes)
        del listed[:], handed[:], here[:], started[:], drivers[:]
        r = kfx("scan", SAMPLE, "--out", tmp_path / f"here{n}", "--verbose")
        assert r.exit_code == 0, r.output
        assert listed == [SAMPLE] and len(here) == 1 and here[0] is not None and here[0].partitions
        assert (len(started), len(handed)) == (on_spark, on_spark), r.output
        assert ("outgrow" in r.output) == bool(on_spark) and "needs no Spark" in r.output
        assert handed == [] or (handed[0] is here[0] and drivers == [0] and not started[0]["engine"].tiny_run)  # not read here again
        assert sorted(os.listdir(tmp_path / f"here{n}")) == ([] if on_spark else ["anomalies", "batches", "inventory", "races", "replicas"])


def test_pyspark_s_logged_tracebacks_are_dropped_unless_verbose():
    """py4j logs pages of tracebacks through ``logging.exception`` when a scan is interrupted
    (Ctrl-C: `kfx scan` then says one line and exits 130); a quiet scan drops them. In a process of
    its own (pytest's logging handlers would swallow them here), and beside one that does not."""
    probe = ("import logging\n{quiet}\ntry:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt:\n"
             "    logging.exception('KeyboardInterrupt while sending command.')\n")
    quiet = "from cli.spark_start import quiet_python_logs\nquiet_python_logs()"
    for code, logged in ((probe.format(quiet=""), True), (probe.format(quiet=quiet), False)):
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and ("KeyboardInterrupt while sending command" in r.stderr) == logged, r.stderr


def _children(pid: int) -> set[int]:
    """The pids of ``pid``'s child processes (from /proc)."""
    out = set()
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                if d.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.add(int(d))
        except (OSError, ValueError, IndexError):
            continue
    return out


def test_an_interrupted_scan_stops_its_jvm_and_leaves_nothing(tmp_path):
    """SIGINT to the kfx process (as Ctrl-C; pyspark's JVM ignores SIGINT) while the scan is writing:
    one line, exit 130, the driver JVM stopped and the ``--out`` it made gone.
    The scan is held mid-write by a stand-in that writes a partial output, then waits."""
    out, marker = tmp_path / "out", tmp_path / "writing"
    code = ("import os, sys, time\nfrom spark_jobs import scan as s\n"
            "def held(spark, request, *a, **k):\n"
            "    os.makedirs(os.path.join(request.out, 'records', '_temporary'))\n"
            f"    open({str(marker)!r}, 'w').close()\n"
            "    time.sleep(120)\n"
            "s.scan = held\nfrom cli.main import main\nsys.argv = ['kfx'] + sys.argv[1:]\nmain()\n")
    env = {**os.environ, "PYTHONPATH": ROOT, "KFX_CLASS_ARCHIVE_RECORDING": "no"}
    proc = subprocess.Popen([sys.executable, "-c", code, "scan", SAMPLE, "--out", str(out), "--master", "local[1]"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.exists(), proc.communicate(timeout=30)
        jvms = _children(proc.pid)
        assert jvms and out.exists()
        proc.send_signal(2)
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait(30)
    assert proc.returncode == 130 and "interrupted: nothing of the scan was left in" in stderr, stderr
    assert "Traceback" not in stderr and not out.exists()
    assert not any(os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z" for p in jvms)


def test_a_partition_whose_log_is_gone_is_an_anomaly_as_verify_says(tmp_path, kfx):
    """A partition dir whose .log files are gone, with the recovery point checkpointed at 64: `kfx verify`
    says the checkpoint is past the log end (exit 1); `kfx scan` of the log dir or of that partition dir
    alone (no Spark) reports the same anomaly from the same rule, exit 1, and does not call it `empty`."""
    import pyarrow.parquet as pq
    from tests.conftest import private_copy
    logdir = private_copy(tmp_path, SAMPLE, "logdir")
    os.remove(os.path.join(logdir, "legacy-0", "00000000000000000000.log"))
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    assert "legacy-0: recovery-point-offset-checkpoint says 64 but the log ends at 0" in r.stdout
    for n, target in enumerate((logdir, os.path.join(logdir, "legacy-0"))):
        out = tmp_path / f"out{n}"
        r = kfx("scan", target, "--out", out)
        assert r.exit_code == 1, r.output
        rows = pq.read_table(out / "anomalies").to_pylist()
        (a,) = [x for x in rows if x["partitionDir"] == "legacy-0"]
        assert (a["kind"], a["offset"]) == ("checkpoint-beyond-log-end", 64)
        assert a["file"] == os.path.join(logdir, "recovery-point-offset-checkpoint")
        assert "legacy-0: recovery-point-offset-checkpoint says 64 but the log ends at 0" in a["detail"]
        line = next(x for x in r.stdout.splitlines() if x.startswith("legacy-0"))
        assert "no log" in line and "empty" not in line and line.split()[-1] == "1"
    # a partition whose checkpoints it does not pass stays clean
    r = kfx("scan", os.path.join(logdir, "orders-0"), "--out", tmp_path / "clean")
    assert r.exit_code == 0, r.output


def test_a_scan_of_a_relative_path_says_absolute_log_dirs_and_files(tmp_path, monkeypatch):
    """Runs from different directories join: logDir and file are absolute whatever the input's
    spelling (issue 57)."""
    import pyarrow.parquet as pq
    from spark_jobs.scan import ScanRequest, scan_here
    monkeypatch.chdir(os.path.dirname(SAMPLE))
    out = str(tmp_path / "out")
    os.makedirs(out)
    r = scan_here(ScanRequest([os.path.join(".", os.path.basename(SAMPLE), "")], out, "records"))
    assert {x["logDir"] for x in r.inventory} == {os.path.abspath(SAMPLE)}
    rows = pq.read_table(os.path.join(out, "records"), columns=["logDir", "file"]).to_pylist()
    assert rows and all(x["logDir"] == os.path.abspath(SAMPLE) and x["file"].startswith(os.path.abspath(SAMPLE) + "/")
                        for x in rows)


def test_partition_by_is_checked_before_anything_starts(kfx, tmp_path):
    for args, says in ((["--partition-by", "hour", "--level", "records"], "--partition-by hour: one of topic, date"),
                       (["--partition-by", "topic"], "give --level records")):
        r = kfx("scan", SAMPLE, "--out", tmp_path / "o", *args)
        assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output
        assert not (tmp_path / "o").exists()
    r = kfx("scan", SAMPLE, "--out", tmp_path / "p", "--level", "records", "--partition-by", "topic")
    assert r.exit_code == 0, r.output
    assert "topic=orders" in os.listdir(tmp_path / "p" / "records")
